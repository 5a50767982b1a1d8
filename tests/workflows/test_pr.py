""".github/workflows/pr.yml: the offline job (tests with real Helm and the reference artefacts, the offline plan,
its diff against the base, the comment) and the credentialed preview, which a fork's pull request does not get."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support import ROOT
from tests.support.workflows import (
    index,
    load,
    runs,
    steps,
    uses,
)


def test_pull_request_workflow():
    pr = load("pr.yml")
    assert pr["on"] == {"pull_request": {"branches": ["main"]}}
    offline, preview = pr["jobs"]["offline"], pr["jobs"]["preview"]
    commands = runs(offline)
    assert ".venv/bin/pip install --require-hashes -r requirements-dev.lock" in commands
    assert (".ci/fetch-reference" in commands and ".venv/bin/python -m pytest -q" in commands
            and "REQUIRE_AZURE_CLI=1" in commands)
    assert "-m offline.plan --stack \"$STACK\" --policy" in commands
    diff = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    assert diff["run"] == 'bash .ci/plan_diff.sh "$BASE_SHA" plan-diff'
    assert diff["env"] == {"BASE_SHA": "${{ github.event.pull_request.base.sha }}"}  # not spliced into the script
    assert uses(offline, "actions/checkout")["with"]["fetch-depth"] == 0, "the base commit must be in the clone"
    comment = uses(offline, "actions/github-script")
    assert "plan-diff/comment.md" in comment["with"]["script"] and offline["permissions"]["pull-requests"] == "write"
    assert "id-token" not in offline["permissions"], "the offline job needs no cloud credentials"
    assert preview["needs"] == "offline"
    assert "vars.AZURE_PREVIEW_CLIENT_ID != ''" in preview["if"]
    pulumi = uses(preview, "pulumi/actions")["with"]
    assert pulumi["command"] == "preview" and pulumi["diff"] is True and pulumi["policyPacks"] == "policy"
    assert pulumi["comment-on-pr"] is True
    # pulumi/actions cuts a long comment from its end, where the summary and policy results are (pulumi/actions#1399),
    # unless told to cut from the front (v7.0.0 src/libs/pr.ts trimOutputByCharacters).
    assert pulumi["always-include-summary"] is True
    login = steps(preview).index(uses(preview, "azure/login"))
    assert login < steps(preview).index(uses(preview, "pulumi/actions"))


def evaluate(expression: str, context: dict) -> bool:
    """A GitHub Actions `if:` made of `a == b` / `a != b` terms joined by `&&`; operands are context paths or
    quoted strings. Enough to run the workflows' fork conditions against a fork's and a branch's event."""
    def value(operand: str):
        operand = operand.strip()
        if operand.startswith("'"):
            return operand.strip("'")
        found = context
        for part in operand.split("."):
            found = found.get(part, "") if isinstance(found, dict) else ""
        return found

    results = []
    for term in expression.split("&&"):
        left, operator, right = re.fullmatch(r"\s*(\S+)\s*(==|!=)\s*(\S+)\s*", term).groups()
        results.append((value(left) == value(right)) == (operator == "=="))
    return all(results)


def event(head_repository: str) -> dict:
    return {"github": {"repository": "acme/aks-gpu-observability",
                       "event": {"pull_request": {"head": {"repo": {"full_name": head_repository}}}}},
            "vars": {"AZURE_PREVIEW_CLIENT_ID": "0b9f5c3e-8d1a-4a57-9c1e-2f6a7d4b3c21",
                     "PULUMI_STACK": "preview-eastus2"}}


def test_the_preview_runs_only_for_a_named_stack():
    """No default stack: the example's dev is deployed by production, so previewing it would hand its approval nonce
    and secrets to every pull request; without PULUMI_STACK the preview job does not run."""
    preview = load("pr.yml")["jobs"]["preview"]
    unnamed = {**BRANCH, "vars": {"AZURE_PREVIEW_CLIENT_ID": BRANCH["vars"]["AZURE_PREVIEW_CLIENT_ID"]}}
    assert evaluate(preview["if"], BRANCH) is True and evaluate(preview["if"], unnamed) is False
    assert preview["env"]["STACK"] == "${{ vars.PULUMI_STACK }}"


FORK, BRANCH = event("someone/aks-gpu-observability"), event("acme/aks-gpu-observability")


def test_a_fork_pull_request_gets_the_plan_in_the_summary_and_no_comment():
    """A fork's pull request runs with a read-only GITHUB_TOKEN: the comment step is skipped there (it would
    fail and turn the job red), the plan always goes to the job summary, and the credentialed preview job
    does not run."""
    pr = load("pr.yml")
    offline = pr["jobs"]["offline"]
    names = [s.get("name") for s in steps(offline) if s.get("name")]
    kept = ["Set up (the README's first command)",
            "Tests (the README's second command, with the real azure-cli parser check)",
            "Offline plan with the policy pack", "Comment the plan on the pull request",
            "Fail on a mandatory policy violation"]
    assert [n for n in names if n in kept] == kept, "the offline job keeps its steps and their names"
    summary = next(s for s in steps(offline) if s.get("name") == "Plan in the job summary")
    comment = uses(offline, "actions/github-script")
    plan = next(s for s in steps(offline) if s.get("name") == "Offline plan with the policy pack")
    assert "if" not in summary and "$GITHUB_STEP_SUMMARY" in summary["run"]
    assert "plan.txt" in summary["run"] and "plan-diff/comment.md" in summary["run"]
    diff = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    assert index(offline, plan) < index(offline, diff) < index(offline, summary) < index(offline, comment)
    assert evaluate(comment["if"], FORK) is False and evaluate(comment["if"], BRANCH) is True
    assert evaluate(pr["jobs"]["preview"]["if"], FORK) is False and evaluate(pr["jobs"]["preview"]["if"],
                                                                             BRANCH) is True


def test_the_condition_evaluator_reads_what_it_is_given():
    assert evaluate("vars.AZURE_PREVIEW_CLIENT_ID != ''", BRANCH) is True
    assert evaluate("vars.AZURE_PREVIEW_CLIENT_ID != ''", {"vars": {}}) is False
    assert evaluate("github.repository == 'acme/aks-gpu-observability'", FORK) is True


def test_the_pull_request_tests_run_with_real_helm_and_every_reference_artefact():
    """pr.yml installs Helm as .ci/run does (.ci/install-helm, both versions) and requires it, and restores the fetched
    artefacts' cache (the directory .ci/fetch-reference uses, keyed by the manifest) before the tests' set-up fetches
    them (a step of its own after the README's set-up, which needs none of them)."""
    offline = load("pr.yml")["jobs"]["offline"]
    helm = next(s for s in steps(offline) if s.get("name") == "Helm")
    assert ".ci/install-helm .tools)" in helm["run"] and ".ci/install-helm .tools 3.18.0)" in helm["run"]
    assert "HELM_BIN=" in helm["run"] and "HELM_318_BIN=" in helm["run"] and "GITHUB_ENV" in helm["run"]
    tests = next(s for s in steps(offline) if ".venv/bin/python -m pytest -q" in s.get("run", ""))
    assert "REQUIRE_HELM=1" in tests["run"] and index(offline, helm) < index(offline, tests)
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".ci/install-helm .tools)" in ci and ".ci/install-helm .tools 3.18.0)" in ci and "REQUIRE_HELM=1" in ci
    cache = uses(offline, "actions/cache")
    assert cache["with"]["path"] == "~/.cache/aks-gpu-observability/reference"
    assert cache["with"]["key"] == "reference-${{ hashFiles('tests/reference/fetch.json') }}"
    setup = next(s for s in steps(offline) if s.get("name", "").startswith("Set up"))
    fetch = next(s for s in steps(offline) if s.get("name", "").startswith("Reference artefacts"))
    assert fetch["run"] == ".ci/fetch-reference" and ".ci/fetch-reference" not in setup["run"]
    assert index(offline, cache) < index(offline, setup) < index(offline, fetch) < index(offline, tests)
    script = (ROOT / ".ci" / "fetch-reference").read_text()
    assert '"aks-gpu-observability" / "reference"' in script and '".cache"' in script


#: github-script's frame (actions/github-script v7.0.1 src/async-function.ts: the script is the body of an async
#: function of require, github, context, ...), with a GitHub client that records the comment's body.
HARNESS = """
const fs = require('fs');
const script = fs.readFileSync(process.argv[2], 'utf8');
let posted = null;
const github = {paginate: async () => [], rest: {issues: {listComments: null,
  createComment: async (args) => { posted = args.body; }, updateComment: async (args) => { posted = args.body; }}}};
const context = {repo: {owner: 'o', repo: 'r'}, issue: {number: 7}};
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction('require', 'github', 'context', script)(require, github, context)
  .then(() => process.stdout.write(posted), (error) => { console.error(error); process.exit(1); });
"""


@pytest.mark.parametrize("diff_size, plan_size", [(200, 200), (90_000, 200), (200, 90_000), (90_000, 90_000)])
def test_the_plan_comment_keeps_the_diffs_summary_and_the_policy_results_when_cut(tmp_path, diff_size, plan_size):
    """A long diff or plan made the comment too long for GitHub (65536 characters), or cut the policy results: now
    the diff's head (its summary) and the whole "Policies:" section stay, and what is cut is said."""
    import shutil

    node = shutil.which("node")
    assert node, "node (Debian's nodejs, which .ci/install-helm's npm needs too) is not installed"
    script = uses(load("pr.yml")["jobs"]["offline"], "actions/github-script")["with"]["script"]
    (tmp_path / "script.js").write_text(script)
    (tmp_path / "harness.js").write_text(HARNESS)
    (tmp_path / "plan-diff").mkdir()
    summary = "### Offline preview diff: 1 to replace\n"
    # As .ci/plan_diff.sh writes it: the diff text in a code block, then the graph in a mermaid block.
    lines = "\n".join("d" * 99 for _ in range(diff_size // 100))
    (tmp_path / "plan-diff" / "comment.md").write_text(
        f"{summary}```\n{lines}\n```\n\n```mermaid\ngraph TD\n{lines}\n```\nDIFF-END\n")
    policies = "Policies:\n    ❌ aks-gpu-observability@v1 (local: policy)\n        - [mandatory]  pins\n"
    (tmp_path / "plan.txt").write_text("PLAN-HEAD\n" + "p" * plan_size + "\n" + policies)
    done = subprocess.run([node, "harness.js", "script.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    body = done.stdout
    assert body.startswith("<!-- aks-gpu-observability-plan -->\n" + summary) and len(body) <= 65536
    assert policies in body
    assert body.count("```") % 2 == 0, "a code block left open"
    kept = body.split("<details><summary>Plan</summary>")[0]
    assert kept.count("```") % 2 == 0 and ("Cut here" not in kept or "```\n\n\n:warning: Cut here" in kept)
    assert ("DIFF-END" in body) == (diff_size < 60_000)
    assert ("Cut here to fit a comment" in body) == (diff_size >= 60_000)
    assert ("PLAN-HEAD" in body) == (diff_size + plan_size < 60_000)
