""".github/workflows/pr.yml: the offline job (tests with real Helm and the reference artefacts, the offline plan,
its diff against the base), the credentialed preview, which a fork's pull request does not get, and the two comment
jobs that post what those hand over."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support import ROOT
from tests.support.workflows import (
    index,
    load,
    run_step,
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
    assert (".ci/fetch-reference" in commands and ".venv/bin/python -m pytest -q -n 3" in commands
            and "REQUIRE_AZURE_CLI=1" in commands)
    assert "-m offline.plan --stack \"$STACK\" --policy" in commands
    diff = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    assert diff["run"] == 'bash .ci/plan_diff.sh "$BASE_SHA" plan-diff'
    assert diff["env"] == {"BASE_SHA": "${{ github.event.pull_request.base.sha }}"}  # not spliced into the script
    assert uses(offline, "actions/checkout")["with"]["fetch-depth"] == 0, "the base commit must be in the clone"
    # The offline job runs the pull request's code: it writes nothing; it hands the plan to the comment job.
    assert offline["permissions"] == {"contents": "read"}, "no write scope, no cloud credentials"
    handed = uses(offline, "actions/upload-artifact")
    assert handed["with"]["name"] == "plan-comment" and handed["with"]["path"].split() == ["plan.txt",
                                                                                          "plan-diff/comment.md"]
    assert offline["outputs"]["plan-comment"] == "${{ steps.%s.outputs.artifact-id }}" % handed["id"]
    comment = pr["jobs"]["comment"]
    assert comment["needs"] == "offline" and uses(comment, "actions/download-artifact")["with"] == {
        "name": "plan-comment"}
    assert "plan-diff/comment.md" in uses(comment, "actions/github-script")["with"]["script"]
    assert preview["needs"] == "offline"
    assert "vars.AZURE_PREVIEW_CLIENT_ID != ''" in preview["if"]
    # The preview: the CLI installed before the sign-in, `pulumi preview --diff` with the policy pack after it, its
    # output handed to the preview comment job, and the job failing on a failed preview after handing it over.
    run = next(s for s in steps(preview) if "pulumi preview" in s.get("run", ""))
    assert ('pulumi preview --stack "$STACK" --diff --policy-pack policy --non-interactive --color never '
            '> preview.txt 2>&1') in run["run"]
    assert run["env"] == {"PULUMI_ACCESS_TOKEN": "${{ steps.pulumi-cloud.outputs.pulumi-access-token }}"}
    handed = uses(preview, "actions/upload-artifact")
    assert handed["with"]["name"] == "preview-comment" and handed["with"]["path"] == "preview.txt"
    assert preview["outputs"]["preview-comment"] == "${{ steps.%s.outputs.artifact-id }}" % handed["id"]
    last = steps(preview)[-1]
    assert last["run"] == 'test "$PREVIEW_EXIT" = 0'
    login = index(preview, uses(preview, "azure/login"))
    install = run_step(preview, "-m ops.binaries --install")
    assert index(preview, install) < login < index(preview, run) < index(preview, handed)
    assert index(preview, handed) < index(preview, last)
    preview_comment = pr["jobs"]["preview-comment"]
    assert preview_comment["needs"] == "preview" and uses(preview_comment, "actions/download-artifact")["with"] == {
        "name": "preview-comment"}
    assert "preview.txt" in uses(preview_comment, "actions/github-script")["with"]["script"]


def evaluate(expression: str, context: dict) -> bool:
    """A GitHub Actions `if:` made of `a == b` / `a != b` terms joined by `&&`, optionally inside ``${{ }}``; operands
    are context paths or quoted strings; the status function ``!cancelled()`` is true (a run nobody cancelled).
    Enough to run the workflows' fork and hand-over conditions against a fork's and a branch's event."""
    expression = expression.strip()
    if expression.startswith("${{") and expression.endswith("}}"):
        expression = expression[3:-2]

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
        if term.strip() == "!cancelled()":
            continue
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
    """A fork's pull request runs with a read-only GITHUB_TOKEN: the comment job is skipped there (posting would
    fail and turn the run red), the plan always goes to the job summary, and the credentialed preview job does not
    run. The comment job runs once the plan was handed over, also when the offline job then failed on a mandatory
    policy violation (its results are what the comment is for), and not when nothing was handed over."""
    pr = load("pr.yml")
    offline, comment = pr["jobs"]["offline"], pr["jobs"]["comment"]
    names = [s.get("name") for s in steps(offline) if s.get("name")]
    kept = ["Set up (the README's first command)",
            "Tests (the README's second command, with the real azure-cli parser check)",
            "Offline plan with the policy pack", "Hand the plan to the comment job",
            "Fail on a mandatory policy violation"]
    assert [n for n in names if n in kept] == kept, "the offline job keeps its steps and their names"
    summary = next(s for s in steps(offline) if s.get("name") == "Plan in the job summary")
    handed = uses(offline, "actions/upload-artifact")
    plan = next(s for s in steps(offline) if s.get("name") == "Offline plan with the policy pack")
    assert "if" not in summary and "$GITHUB_STEP_SUMMARY" in summary["run"]
    assert "plan.txt" in summary["run"] and "plan-diff/comment.md" in summary["run"]
    diff = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    assert index(offline, plan) < index(offline, diff) < index(offline, summary) < index(offline, handed)
    assert "if" not in handed, "handed over whether or not the policy pack passed"
    uploaded = {"needs": {"offline": {"outputs": {"plan-comment": "2954781234"}}}}
    assert evaluate(comment["if"], {**FORK, **uploaded}) is False
    assert evaluate(comment["if"], {**BRANCH, **uploaded}) is True
    assert evaluate(comment["if"], BRANCH) is False, "nothing handed over, nothing to post"
    assert comment["if"].strip().startswith("${{ !cancelled() &&"), "posted after a policy failure too"
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
    script = uses(load("pr.yml")["jobs"]["comment"], "actions/github-script")["with"]["script"]
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


@pytest.mark.parametrize("size", [200, 90_000])
def test_the_preview_comment_keeps_the_end_of_the_output_and_says_what_was_cut(tmp_path, size):
    """The preview comment (pulumi/actions cut a long comment from its end, where the summary and the policy
    results are, pulumi/actions#1399): the output's end always stays, its head is cut in whole lines when it does not
    fit, the comment says so, and a fence in the output cannot close the comment's code block early."""
    import shutil

    node = shutil.which("node")
    assert node, "node (Debian's nodejs, which .ci/install-helm's npm needs too) is not installed"
    script = uses(load("pr.yml")["jobs"]["preview-comment"], "actions/github-script")["with"]["script"]
    (tmp_path / "script.js").write_text(script)
    (tmp_path / "harness.js").write_text(HARNESS)
    tail = "Policies:\n    ✅ aks-gpu-observability@v1 (local: policy)\n\nResources:\n    ~ 1 to update\n"
    lines = "\n".join(f"    ~ resource {i:06d} " + "x" * 70 for i in range(size // 90))
    (tmp_path / "preview.txt").write_text(f"Previewing update (dev):\n```\n{lines}\n{tail}")
    done = subprocess.run([node, "harness.js", "script.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "STACK": "preview-eastus2"})
    assert done.returncode == 0, done.stderr
    body = done.stdout
    assert body.startswith("<!-- aks-gpu-observability-preview -->\n#### `pulumi preview --diff` of preview-eastus2")
    assert len(body) <= 65536 and body.endswith(tail.rstrip("\n") + "\n```") and body.count("```") == 2
    assert ("Previewing update" in body) == (size < 60_000)
    assert ("head of the output was cut" in body) == (size >= 60_000)
    if size >= 60_000:
        kept = body.split("```\n", 1)[1]
        assert kept.startswith("    ~ resource "), "cut at a line's start"


def run_step_script(step: dict, workdir, env: dict) -> subprocess.CompletedProcess:
    """A run step's script as the runner runs it without `shell:` (bash -e), in ``workdir``."""
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workdir, capture_output=True, text=True, timeout=60,
                          env={"PATH": env.pop("PATH"), **env})


@pytest.mark.parametrize("exit_code", [0, 1])
def test_the_preview_step_hands_over_its_output_and_the_last_step_fails_a_failed_preview(tmp_path, exit_code):
    """The preview step itself never fails: it writes the whole output to preview.txt (the log and the comment job
    get it) and records the exit code; after the hand-over the last step fails the job on a failed preview, so a
    mandatory policy violation is both commented and red. Run with a stand-in pulumi that prints and exits."""
    preview = load("pr.yml")["jobs"]["preview"]
    step = next(s for s in steps(preview) if "pulumi preview" in s.get("run", ""))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pulumi").write_text(f'#!/bin/sh\necho "args: $*"\necho "policy: mandatory" >&2\nexit {exit_code}\n')
    (fake / "pulumi").chmod(0o755)
    github_env = tmp_path / "github_env"
    done = run_step_script(step, tmp_path, {"PATH": f"{fake}:/usr/bin:/bin", "STACK": "preview-eastus2",
                                            "GITHUB_ENV": str(github_env)})
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "preview.txt").read_text()
    assert "args: preview --stack preview-eastus2 --diff --policy-pack policy" in written
    assert "policy: mandatory" in written and written in done.stdout
    assert github_env.read_text() == f"PREVIEW_EXIT={exit_code}\n"
    last = run_step_script(steps(preview)[-1], tmp_path, {"PATH": "/usr/bin:/bin", "PREVIEW_EXIT": str(exit_code)})
    assert (last.returncode == 0) is (exit_code == 0)
