"""Set-up step 1 as a user runs it, ``python3 -m ops.repository --repo ORG/REPO | bash``, against a stand-in GitHub
(tests/ops/fake_gh.py on PATH as ``gh``): the repository's end state, and where the script stops in one line.
SIMULATED: GitHub's REST API over one repository's settings, rulesets and CODEOWNERS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops import repository
from tests.support import ROOT

FAKE_GH = Path(__file__).with_name("fake_gh.py")
TEAM = "@acme/platform-admins"


def permissive(visibility: str = "private") -> dict:
    """A repository as an organization's defaults may leave it: workflows write and approve pull requests, a fork's
    pull request gets a write token and the secrets, no ruleset, the team's CODEOWNERS on main."""
    return {"repo": "acme/app", "visibility": visibility,
            "workflow": {"default_workflow_permissions": "write", "can_approve_pull_request_reviews": True},
            "fork_pr_workflows_private_repos": {"run_workflows_from_fork_pull_requests": True,
                                                "send_write_tokens_to_workflows": True,
                                                "send_secrets_and_variables": True,
                                                "require_approval_for_fork_pr_workflows": False},
            "fork_pr_contributor_approval": {"approval_policy": "first_time_contributors_new_to_github"},
            "rulesets": [], "organization_rules": [],
            "codeowners": f"* {TEAM}\n/.github/ {TEAM}\n/deploy/ {TEAM}\n", "codeowners_errors": []}


def set_up(tmp_path: Path, state: dict) -> tuple[subprocess.CompletedProcess, dict, list[dict]]:
    """Print the script for acme/app and run it with bash from the repository's root; (process, GitHub's state after,
    the calls made)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_GH}" "$@"\n')
    gh.chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)   # the script's python3: this interpreter
    state_file, log_file = tmp_path / "github.json", tmp_path / "calls.jsonl"
    state_file.write_text(json.dumps(state))
    log_file.touch()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_GH_STATE": str(state_file),
           "FAKE_GH_LOG": str(log_file)}
    script = subprocess.run([sys.executable, "-m", "ops.repository", "--repo", "acme/app"], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=True).stdout
    run = subprocess.run(["bash"], input=script, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    calls = [json.loads(line) for line in log_file.read_text().splitlines()]
    return run, json.loads(state_file.read_text()), calls


def called(calls: list[dict], method: str, suffix: str) -> bool:
    return any(c["method"] == method and c["path"].endswith(suffix) for c in calls)


def pull_request_parameters(ruleset: dict) -> dict:
    return next(rule["parameters"] for rule in ruleset["rules"] if rule["type"] == "pull_request")


@pytest.mark.parametrize("visibility", ["private", "internal"])
def test_set_up_leaves_no_workflow_able_to_approve_and_no_fork_with_a_write_token(tmp_path, visibility):
    """The fix for a writer's branch whose job approves its own pull request as github-actions[bot]: after set-up the
    workflow token reads by default and cannot approve, a fork's pull request runs only once a writer approves it,
    with a read-only token (so no `id-token: write`, no preview identity) and no secrets or variables, and main's
    ruleset requires a code owner's approval besides one from someone other than the last pusher.
    barrettruth/canola.nvim#61 does exactly this on purpose: the bot's approval satisfies require_last_push_approval
    for the pusher's pull request; cpp-linter/cpp-linter#51 shows GitHub's 422 ("GitHub Actions is not permitted to
    approve pull requests") once the setting is off."""
    run, github, calls = set_up(tmp_path, permissive(visibility))
    assert run.returncode == 0, run.stderr
    assert github["workflow"] == {"default_workflow_permissions": "read", "can_approve_pull_request_reviews": False}
    assert github["fork_pr_workflows_private_repos"] == {
        "run_workflows_from_fork_pull_requests": True, "send_write_tokens_to_workflows": False,
        "send_secrets_and_variables": False, "require_approval_for_fork_pr_workflows": True}
    [ruleset] = github["rulesets"]
    assert ruleset["name"] == repository.RULESET_NAME and ruleset["bypass_actors"] == []
    review = pull_request_parameters(ruleset)
    assert review["require_code_owner_review"] is True and review["require_last_push_approval"] is True
    assert not called(calls, "PUT", "/fork-pr-contributor-approval")
    assert run.stdout.strip().splitlines()[-1] == "acme/app: repository settings set and read back"


def test_set_up_of_a_public_repository_requires_approval_for_every_outside_contributor(tmp_path):
    """A public repository's fork pull requests always get a read-only token and no secrets (GitHub's own rule); the
    setting left is who needs a writer's approval before their run: every outside contributor. The private-fork
    settings do not apply there (GitHub answers 422) and are not sent."""
    run, github, calls = set_up(tmp_path, permissive("public"))
    assert run.returncode == 0, run.stderr
    assert github["fork_pr_contributor_approval"] == {"approval_policy": "all_external_contributors"}
    assert not called(calls, "PUT", "/fork-pr-workflows-private-repos")
    assert github["workflow"]["can_approve_pull_request_reviews"] is False


def test_set_up_stops_in_one_line_when_workflows_can_still_approve(tmp_path):
    """An organization or enterprise policy can keep the repository's setting: GitHub accepts the PUT and the read-back
    still says true. Set-up stops there, naming the setting and the value, before it goes on."""
    state = {**permissive(), "ignored": ["workflow"]}
    run, github, calls = set_up(tmp_path, state)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "error: actions/permissions/workflow: can_approve_pull_request_reviews is true, expected false "
        "(a workflow could approve its own pull request)"]
    assert github["workflow"]["can_approve_pull_request_reviews"] is True and github["rulesets"] == []


def test_set_up_leaves_alone_a_stricter_setting_a_policy_above_holds(tmp_path):
    """An organization that switched fork pull request workflows off, and refuses to let a repository switch them
    on, already gives forks less than set-up asks: set-up reads it, sends nothing and goes on."""
    state = permissive()
    state["fork_pr_workflows_private_repos"] = {"run_workflows_from_fork_pull_requests": False,
                                                "send_write_tokens_to_workflows": False,
                                                "send_secrets_and_variables": False,
                                                "require_approval_for_fork_pr_workflows": False}
    run, github, calls = set_up(tmp_path, {**state, "refused": ["fork_pr_workflows_private_repos"]})
    assert run.returncode == 0, run.stderr
    assert not called(calls, "PUT", "/fork-pr-workflows-private-repos")
    assert github["fork_pr_workflows_private_repos"]["run_workflows_from_fork_pull_requests"] is False


def test_set_up_run_again_updates_its_ruleset_in_place(tmp_path):
    """A repository set up before code owners were required has the ruleset already: set-up updates that ruleset
    (by id) to require them, instead of failing on a second ruleset of the same name."""
    old = {**repository.main_ruleset(), "id": 42}
    old["rules"] = [rule if rule["type"] != "pull_request" else
                    {"type": "pull_request", "parameters": {**rule["parameters"], "require_code_owner_review": False}}
                    for rule in old["rules"]]
    run, github, calls = set_up(tmp_path, {**permissive(), "rulesets": [old]})
    assert run.returncode == 0, run.stderr
    [ruleset] = github["rulesets"]
    assert ruleset["id"] == 42 and pull_request_parameters(ruleset)["require_code_owner_review"] is True
    assert called(calls, "PUT", "/rulesets/42") and not called(calls, "POST", "/rulesets")


@pytest.mark.parametrize("codeowners, message", [
    (None, "error: .github/CODEOWNERS on main: GitHub answered 'Not Found'"),
    (f"* {TEAM}\n/.github/ @renovate[bot]\n/deploy/ {TEAM}\n",
     "error: .github/CODEOWNERS on main: line 2: @renovate[bot] is a bot or an app"),
    (f"* {TEAM}\n", None),
])
def test_set_up_requires_human_code_owners_on_main(tmp_path, codeowners, message):
    """Requiring code owners protects nothing without them: set-up ends by reading .github/CODEOWNERS from main, and
    stops when there is none or a bot or app owns a path."""
    run, _, _ = set_up(tmp_path, {**permissive(), "codeowners": codeowners})
    if message is None:
        assert run.returncode == 0, run.stderr
    else:
        assert run.returncode == 1 and run.stderr.strip().splitlines()[-1].startswith(message)


def test_set_up_stops_on_the_codeowners_errors_github_reports(tmp_path):
    error = {"line": 1, "column": 3, "kind": "Unknown owner", "source": f"* {TEAM}", "suggestion": None,
             "message": "Unknown owner on line 1", "path": ".github/CODEOWNERS"}
    run, _, _ = set_up(tmp_path, {**permissive(), "codeowners_errors": [error]})
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "error: codeowners/errors: .github/CODEOWNERS line 1: Unknown owner (Unknown owner on line 1)"]
