"""ops/repository.py: the repository settings production's trust rests on. The `main` ruleset: every change by a pull
request approved by someone other than its last pusher and by a code owner, no bypass, no force push, no deletion,
on the branch the deploy workflow and production's credentials trust. The read-backs set-up runs on GitHub's answers:
no workflow may approve a pull request, the GITHUB_TOKEN reads by default, a fork's pull request gets no write token
and no secrets, and CODEOWNERS on main names people or teams for every file, the workflows and the stacks list.
SIMULATED: GitHub (settings are not files; the answers are the REST API's shapes)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from ops import federation, repository
from tests.support import ROOT
from tests.support.workflows import load

PLATFORM = ROOT / "docs" / "platform.md"
SECURITY = ROOT / "docs" / "security.md"
TEAM = "@acme/platform-admins"


def read_back(monkeypatch, capsys, name: str, answer) -> tuple[int, str, list[str]]:
    """``python -m ops.repository --check NAME`` on a ``gh api`` answer: (status, stdout, stderr lines)."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code = repository.main(["--check", name])
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


def pull_request_rule(**changes) -> dict:
    parameters = {"required_approving_review_count": 1, "dismiss_stale_reviews_on_push": True,
                  "require_code_owner_review": True, "require_last_push_approval": True,
                  "required_review_thread_resolution": False}
    return {"type": "pull_request", "parameters": {**parameters, **changes}}


# --- the ruleset --------------------------------------------------------------------------------------------------


def test_the_ruleset_closes_main_to_a_writer_alone():
    ruleset = repository.main_ruleset()
    assert ruleset["target"] == "branch" and ruleset["enforcement"] == "active" and ruleset["bypass_actors"] == []
    rules = {rule["type"]: rule.get("parameters") for rule in ruleset["rules"]}
    assert set(rules) == {"deletion", "non_fast_forward", "pull_request"}
    review = rules["pull_request"]
    assert review["required_approving_review_count"] >= 1
    assert review["require_last_push_approval"] is True and review["dismiss_stale_reviews_on_push"] is True


def test_the_ruleset_requires_a_code_owners_approval():
    """An approval by github-actions[bot], or by any writer outside CODEOWNERS, does not merge a change to a path a
    code owner holds: the pull request rule requires a code owner's review."""
    rules = {rule["type"]: rule.get("parameters") for rule in repository.main_ruleset()["rules"]}
    assert rules["pull_request"]["require_code_owner_review"] is True


def test_the_ruleset_covers_the_branch_production_trusts_and_deploys():
    """The ref production's credentials name (ops/federation.py MAIN) and the branch deploy.yml deploys on push."""
    assert repository.main_ruleset()["conditions"]["ref_name"] == {"include": [federation.MAIN], "exclude": []}
    push = load("deploy.yml")["on"]["push"]
    assert [f"refs/heads/{branch}" for branch in push["branches"]] == [federation.MAIN]


def test_the_rules_on_main_read_back_are_the_rulesets(monkeypatch, capsys):
    """What GitHub answers for main (GET rules/branches/main, every active rule from the repository and the
    organization) must hold each of the ruleset's rules; a main where a writer's approved-by-a-bot change merges
    without a code owner, or that can be deleted, stops set-up in one line."""
    good = [{"type": "deletion"}, {"type": "non_fast_forward"}, pull_request_rule()]
    assert read_back(monkeypatch, capsys, "branch-rules", good) == (0, "", [])
    code, _, err = read_back(monkeypatch, capsys, "branch-rules",
                             [{"type": "deletion"}, {"type": "non_fast_forward"},
                              pull_request_rule(require_code_owner_review=False)])
    assert code == 1 and len(err) == 1
    assert "require_code_owner_review is false, expected true" in err[0]
    code, _, err = read_back(monkeypatch, capsys, "branch-rules", [{"type": "non_fast_forward"}, pull_request_rule()])
    assert code == 1 and len(err) == 1 and "deletion" in err[0]


def test_an_organization_rule_can_supply_what_the_repository_rule_lacks(monkeypatch, capsys):
    """Rules on one branch add up, the strictest applies (GitHub, "About rulesets"): an organization pull request rule
    that requires code owners counts."""
    rules = [{"type": "deletion"}, {"type": "non_fast_forward"}, pull_request_rule(require_code_owner_review=False),
             {**pull_request_rule(require_last_push_approval=False), "ruleset_source_type": "Organization"}]
    assert read_back(monkeypatch, capsys, "branch-rules", rules) == (0, "", [])


def test_the_ruleset_of_a_former_set_up_is_found_to_be_updated(monkeypatch, capsys):
    """Set-up run again updates the ruleset it created (by id) instead of failing on a second one of that name."""
    rulesets = [{"id": 7, "name": "org-wide", "source_type": "Organization"},
                {"id": 42, "name": repository.RULESET_NAME, "source_type": "Repository"}]
    assert read_back(monkeypatch, capsys, "ruleset-id", rulesets) == (0, "42\n", [])
    assert read_back(monkeypatch, capsys, "ruleset-id", rulesets[:1]) == (0, "", [])
    code, _, err = read_back(monkeypatch, capsys, "ruleset-id", rulesets + [{**rulesets[1], "id": 43}])
    assert code == 1 and len(err) == 1 and "42, 43" in err[0]


# --- GitHub Actions: the workflow token -----------------------------------------------------------------------------


def test_a_workflow_token_that_can_approve_pull_requests_fails_the_read_back(monkeypatch, capsys):
    """A writer's branch that adds `gh pr review --approve` to a job with `pull-requests: write` gets a review by
    github-actions[bot], who is not the last pusher: the read-back of actions/permissions/workflow stops set-up, in
    one line naming the setting and the value GitHub keeps."""
    answer = {"default_workflow_permissions": "read", "can_approve_pull_request_reviews": True}
    code, out, err = read_back(monkeypatch, capsys, "workflow-permissions", answer)
    assert (code, out, len(err)) == (1, "", 1)
    assert err[0].startswith("error: actions/permissions/workflow: can_approve_pull_request_reviews is true, "
                             "expected false")


def test_a_write_default_token_fails_the_read_back(monkeypatch, capsys):
    answer = {"default_workflow_permissions": "write", "can_approve_pull_request_reviews": False}
    code, _, err = read_back(monkeypatch, capsys, "workflow-permissions", answer)
    assert code == 1 and len(err) == 1
    assert 'default_workflow_permissions is "write", expected "read"' in err[0]


def test_the_settings_set_up_asks_for_pass_the_read_back(monkeypatch, capsys):
    answer = {"default_workflow_permissions": "read", "can_approve_pull_request_reviews": False}
    assert read_back(monkeypatch, capsys, "workflow-permissions", answer) == (0, "", [])


def test_an_error_answer_is_one_line_with_githubs_message(monkeypatch, capsys):
    """A refusal (a token without admin rights, a setting that does not apply) is named, not read as a value."""
    code, _, err = read_back(monkeypatch, capsys, "workflow-permissions",
                             {"message": "Must have admin rights to Repository.", "documentation_url": "x"})
    assert code == 1 and err == ["error: actions/permissions/workflow: GitHub answered "
                                 "'Must have admin rights to Repository.'"]
    code, _, err = read_back(monkeypatch, capsys, "workflow-permissions", "")
    assert code == 1 and len(err) == 1 and "no JSON answer" in err[0]


# --- pull requests from forks ---------------------------------------------------------------------------------------

PRIVATE_FORKS = {"run_workflows_from_fork_pull_requests": True, "send_write_tokens_to_workflows": False,
                 "send_secrets_and_variables": False, "require_approval_for_fork_pr_workflows": True}


@pytest.mark.parametrize("field, value, message", [
    ("send_write_tokens_to_workflows", True, "send_write_tokens_to_workflows is true, expected false"),
    ("send_secrets_and_variables", True, "send_secrets_and_variables is true, expected false"),
    ("require_approval_for_fork_pr_workflows", False, "require_approval_for_fork_pr_workflows is false, expected true"),
])
def test_a_private_repositorys_fork_pull_requests_get_no_write_token_and_no_secrets(monkeypatch, capsys, field, value,
                                                                                    message):
    """A fork's pull request in a private or internal repository with a write token could ask for `id-token: write`
    and sign in as the preview identity (its subject is any pull request's merge ref); with secrets and variables it
    would get the repository's. Either, or runs without a writer's approval, stops set-up."""
    assert read_back(monkeypatch, capsys, "fork-pr-workflows-private-repos", PRIVATE_FORKS) == (0, "", [])
    code, _, err = read_back(monkeypatch, capsys, "fork-pr-workflows-private-repos", {**PRIVATE_FORKS, field: value})
    assert code == 1 and len(err) == 1
    assert err[0] == f"error: actions/permissions/fork-pr-workflows-private-repos: {message}"


def test_fork_pull_requests_that_do_not_run_at_all_pass(monkeypatch, capsys):
    """An organization may switch fork pull request workflows off altogether: stricter, so the read-back accepts it."""
    answer = {"run_workflows_from_fork_pull_requests": False, "send_write_tokens_to_workflows": False,
              "send_secrets_and_variables": False, "require_approval_for_fork_pr_workflows": False}
    assert read_back(monkeypatch, capsys, "fork-pr-workflows-private-repos", answer) == (0, "", [])


def test_a_public_repository_approves_every_outside_contributors_run(monkeypatch, capsys):
    assert read_back(monkeypatch, capsys, "fork-pr-contributor-approval",
                     {"approval_policy": "all_external_contributors"}) == (0, "", [])
    code, _, err = read_back(monkeypatch, capsys, "fork-pr-contributor-approval",
                             {"approval_policy": "first_time_contributors"})
    assert code == 1 and err == ['error: actions/permissions/fork-pr-contributor-approval: approval_policy is '
                                 '"first_time_contributors", expected "all_external_contributors"']


def test_the_visibility_read_decides_which_fork_settings_apply(monkeypatch, capsys):
    for visibility in ("public", "private", "internal"):
        assert read_back(monkeypatch, capsys, "visibility",
                         {"visibility": visibility, "private": visibility != "public"}) == (0, visibility + "\n", [])
    code, _, err = read_back(monkeypatch, capsys, "visibility", {"private": True})
    assert code == 1 and len(err) == 1 and "visibility" in err[0]


# --- code owners ----------------------------------------------------------------------------------------------------


def codeowners_problem(monkeypatch, capsys, text: str) -> list[str]:
    code, out, err = read_back(monkeypatch, capsys, "codeowners", text)
    assert out == "" and code == (1 if err else 0)
    return err


def test_the_generated_codeowners_gives_every_file_the_workflows_and_the_stacks_to_the_owners(monkeypatch, capsys):
    """`--code-owners` prints the file set-up accepts: read back from main, it passes."""
    assert repository.main(["--code-owners", TEAM, "@octocat"]) == 0
    text = capsys.readouterr().out
    assert codeowners_problem(monkeypatch, capsys, text) == []
    rules = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert rules and all(rule[1:] == [TEAM, "@octocat"] for rule in rules)


@pytest.mark.parametrize("owner", ["@github-actions", "@dependabot", "@renovate[bot]", "@Copilot", "@apps/acme-ci"])
def test_a_bot_or_app_is_refused_as_a_code_owner(monkeypatch, capsys, owner):
    """A bot's or an app's approval is a workflow's or an integration's, not a person's: neither at generation nor in
    the file read back from main."""
    assert repository.main(["--code-owners", owner]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --code-owners: {owner} is a bot or an app")
    err = codeowners_problem(monkeypatch, capsys, f"* {TEAM}\n/.github/ {TEAM}\n/deploy/ {TEAM}\n*.md {owner}\n")
    assert len(err) == 1 and f"line 4: {owner} is a bot or an app" in err[0]


@pytest.mark.parametrize("text, uncovered", [
    (f"/.github/ {TEAM}\n/deploy/ {TEAM}\n", "README.md"),                 # no '*'
    (f"* {TEAM}\n/deploy/ {TEAM}\n/.github/\n", ".github/CODEOWNERS"),     # .github/ un-owned by a later line
    (f"* {TEAM}\n/.github/ {TEAM}\ndeploy/*.json\n", "deploy/stacks.json"),
    (f"* {TEAM}\n/.github/workflows/ {TEAM}\n/.github/CODEOWNERS\n", ".github/CODEOWNERS"),
    ("# only comments\n", "README.md"),
])
def test_a_codeowners_that_leaves_a_path_without_an_owner_is_refused(monkeypatch, capsys, text, uncovered):
    """The last matching line decides a file's owners: a file must leave every file, the workflows, CODEOWNERS itself
    and deploy/ with an owner, or a writer's change there merges on any other approval."""
    err = codeowners_problem(monkeypatch, capsys, text)
    assert len(err) == 1 and err[0].startswith(f"error: .github/CODEOWNERS on main: {uncovered} has no code owner")


def test_other_shapes_of_a_covering_codeowners_pass(monkeypatch, capsys):
    assert codeowners_problem(monkeypatch, capsys, f"* {TEAM}\n") == []
    assert codeowners_problem(monkeypatch, capsys, f"**  @octocat\ndocs/*.md {TEAM}\n") == []


@pytest.mark.parametrize("owner, expected", [
    ("octocat", "expected @user or @org/team"),
    ("docs@example.com", "expected @user or @org/team"),
    ("@-bad", "expected @user or @org/team"),
    (repository.PLACEHOLDER_CODE_OWNER, "the placeholder"),
])
def test_a_malformed_owner_is_one_line(capsys, owner, expected):
    assert repository.main(["--code-owners", owner]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --code-owners: ") and expected in err[0]


def test_the_committed_codeowners_is_the_generators_and_set_up_refuses_its_placeholder(monkeypatch, capsys):
    """The repository cannot know the organization's team: the committed file has the generator's lines with the
    placeholder owner, and set-up's read-back refuses it until the file generated for the real owners is on main."""
    committed = (ROOT / ".github" / "CODEOWNERS").read_text(encoding="utf-8")
    assert committed == repository.codeowners_file([repository.PLACEHOLDER_CODE_OWNER])
    err = codeowners_problem(monkeypatch, capsys, committed)
    assert len(err) == 1 and "the placeholder" in err[0] and "--code-owners" in err[0]
    owned = committed.replace(repository.PLACEHOLDER_CODE_OWNER, TEAM)
    assert codeowners_problem(monkeypatch, capsys, owned) == []


def test_codeowners_errors_github_reports_stop_set_up(monkeypatch, capsys):
    """GitHub knows what the file cannot: an owner that does not exist or has no write access."""
    assert read_back(monkeypatch, capsys, "codeowners-errors", {"errors": []}) == (0, "", [])
    error = {"line": 2, "column": 3, "kind": "Unknown owner", "source": f"/.github/ {TEAM}",
             "suggestion": None, "message": "Unknown owner on line 2", "path": ".github/CODEOWNERS"}
    code, _, err = read_back(monkeypatch, capsys, "codeowners-errors", {"errors": [error]})
    assert code == 1 and len(err) == 1 and ".github/CODEOWNERS line 2: Unknown owner" in err[0]


# --- the command line and the docs ----------------------------------------------------------------------------------


def test_the_docs_give_the_commands_as_set_up_step_one(capsys):
    """Step 1 generates CODEOWNERS and runs the printed set-up; both commands, as written there, work."""
    steps = PLATFORM.read_text(encoding="utf-8").split("**Set-up, in order**", 1)[1]
    step = steps[steps.index("1. Protect `main`"):steps.index("2. Create the three apps")]
    assert f"python3 -m ops.repository --code-owners {repository.PLACEHOLDER_CODE_OWNER} > .github/CODEOWNERS" in step
    assert "python3 -m ops.repository --repo <org>/<repo> | bash" in step
    assert repository.main(["--repo", "acme/app"]) == 0 and capsys.readouterr().out.startswith("set -euo pipefail\n")
    security = SECURITY.read_text(encoding="utf-8")
    assert "## What someone with write access can and cannot do" in security and "python -m ops.repository" in security


def test_bad_repo_is_one_line(capsys):
    assert repository.main(["--repo", "not a repo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --repo: expected ORG/REPO")
    assert repository.main(["--repo", "acme/app"]) == 0 and "repo='acme/app'" in capsys.readouterr().out


def test_an_unknown_check_is_one_line(capsys):
    assert repository.main(["--check", "branch-protection"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: argument --check: invalid choice: 'branch-protection'")
