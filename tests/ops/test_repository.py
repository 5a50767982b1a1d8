"""ops/repository.py: the `main` ruleset production's trust rests on: every change by a pull request approved by
someone other than its last pusher, no bypass, no force push, no deletion; the docs show it, and it covers the branch
the deploy workflow and production's credentials trust. SIMULATED: GitHub (the ruleset is a setting, not a file)."""

from __future__ import annotations

import json

from ops import federation, repository
from tests.support import ROOT
from tests.support.workflows import load

PLATFORM = ROOT / "docs" / "platform.md"
SECURITY = ROOT / "docs" / "security.md"


def test_the_ruleset_closes_main_to_a_writer_alone():
    ruleset = repository.main_ruleset()
    assert ruleset["target"] == "branch" and ruleset["enforcement"] == "active" and ruleset["bypass_actors"] == []
    rules = {rule["type"]: rule.get("parameters") for rule in ruleset["rules"]}
    assert set(rules) == {"deletion", "non_fast_forward", "pull_request"}
    review = rules["pull_request"]
    assert review["required_approving_review_count"] >= 1
    assert review["require_last_push_approval"] is True and review["dismiss_stale_reviews_on_push"] is True


def test_the_ruleset_covers_the_branch_production_trusts_and_deploys():
    """The ref production's credentials name (ops/federation.py MAIN) and the branch deploy.yml deploys on push."""
    assert repository.main_ruleset()["conditions"]["ref_name"] == {"include": [federation.MAIN], "exclude": []}
    push = load("deploy.yml")["on"]["push"]
    assert [f"refs/heads/{branch}" for branch in push["branches"]] == [federation.MAIN]


def test_the_docs_show_the_generators_commands_as_set_up_step_one():
    text = PLATFORM.read_text(encoding="utf-8")
    block = "".join(f"   {line}\n" for line in repository.setup_commands().splitlines())
    steps = text.split("**Set-up, in order**", 1)[1]
    assert steps.index("1. Protect `main`") < steps.index("2. Create the three apps")
    assert f"   ```sh\n{block}   ```" in steps
    body = json.loads(repository.setup_commands().split("echo '", 1)[1].split("' |", 1)[0])
    assert body == repository.main_ruleset()
    security = SECURITY.read_text(encoding="utf-8")
    assert "## What someone with write access can and cannot do" in security and "python -m ops.repository" in security


def test_bad_repo_is_one_line(capsys):
    assert repository.main(["--repo", "not a repo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --repo: expected ORG/REPO")
    assert repository.main(["--repo", "acme/app"]) == 0 and "repos/acme/app/rulesets" in capsys.readouterr().out
