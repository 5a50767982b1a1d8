""".ci/drift_issues.js, run by drift.yml's github-script step in Node.js against stand-ins for the GitHub API and
real `ops.verify --drift --json` reports: one issue per drifted stack, closed when the drift is gone."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from tests.support import ROOT
from tests.support.workflows import (
    load,
    uses,
)


@pytest.fixture(scope="module")
def drift_reports(tmp_path_factory):
    """Real `ops.verify --drift --json` answers (against the stand-in az): one with a drifted datasource URL and
    a deleted dashboard, one clean."""
    from tests.support.scenarios import grafana_error
    from tests.support.verify_runs import check_drift, edit

    reports = {}
    for name, changes in (("drifted", {"pyro": edit("url", "http://10.0.9.9:4040"),
                                       "dash": lambda _: grafana_error("Not Found", "Dashboard not found")}),
                          ("clean", {})):
        done, _ = check_drift(tmp_path_factory.mktemp(name), None, "--json", **changes)
        assert done.returncode == (1 if name == "drifted" else 0), done.stderr
        reports[name] = (done.returncode, done.stdout)
    return reports


def file_issues(tmp_path, results: dict, open_issues: list, stacks: list):
    """drift.yml's github-script step (its script, as written there) in Node.js with stand-ins for the GitHub API and
    the downloaded artifacts; returns (API calls, setFailed messages). Skips without Node.js."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node (Node.js) to run the github-script step")
    artifacts = tmp_path / "drift"
    for i, (stack, (code, report, error)) in enumerate(results.items()):
        folder = artifacts / f"drift-{i}"
        folder.mkdir(parents=True)
        (folder / "stack.txt").write_text(stack + "\n")
        (folder / "exit.txt").write_text(f"{code}\n")
        (folder / "report.json").write_text(report)
        (folder / "error.txt").write_text(error)
    script = uses(load("drift.yml")["jobs"]["issues"], "actions/github-script")["with"]["script"]
    harness = (
        "const path = require('path');\n"
        "const calls = [], failed = [];\n"
        f"const open = {json.dumps(open_issues)};\n"
        "const github = { paginate: async (fn, args) => { calls.push(['list', args]); return open; },\n"
        "  rest: { issues: { listForRepo: 'listForRepo',\n"
        "    create: async (a) => { calls.push(['create', a]); return { data: { number: 99 } }; },\n"
        "    update: async (a) => { calls.push(['update', a]); return { data: {} }; },\n"
        "    createComment: async (a) => { calls.push(['comment', a]); return { data: {} }; } } } };\n"
        "const core = { info: () => {}, warning: () => {}, setFailed: (m) => failed.push(m) };\n"
        "const context = { repo: { owner: 'acme', repo: 'aks-gpu-observability' }, serverUrl: 'https://github.com', "
        "runId: 7 };\n"
        "const realRequire = require;\n"
        "(async () => {\n"
        # github-script resolves a relative require against the workspace (the checkout)
        f"  const require = (p) => realRequire(p.startsWith('.') ? path.join({json.dumps(str(ROOT))}, p) : p);\n"
        f"{script}\n"
        "})().then(() => process.stdout.write(JSON.stringify({ calls, failed })));\n")
    (tmp_path / "harness.js").write_text(harness)
    done = subprocess.run([node, "harness.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "STACKS": json.dumps(stacks)})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    return answer["calls"], answer["failed"]


TITLE = "Drift: Grafana differs from what stack {} set"


def test_drift_opens_an_issue_and_closes_the_one_of_a_stack_that_no_longer_drifts(tmp_path, drift_reports):
    prod_issue = {"number": 12, "title": TITLE.format("acme/x/prod"), "body": "old"}
    calls, failed = file_issues(tmp_path, {"dev": (*drift_reports["drifted"], ""),
                                           "acme/x/prod": (*drift_reports["clean"], "")},
                                [prod_issue, {"number": 13, "title": TITLE.format("dev"), "pull_request": {}}],
                                ["dev", "acme/x/prod"])
    assert failed == []
    assert calls[0] == ["list", {"owner": "acme", "repo": "aks-gpu-observability", "state": "open", "per_page": 100}]
    created = [c[1] for c in calls if c[0] == "create"]
    assert len(created) == 1 and created[0]["title"] == TITLE.format("dev"), (
        "a pull request with that title is not the issue")
    body = created[0]["body"]
    assert "### datasource `local-pyroscope`: drifted" in body
    assert '| `url` | `"http://10.0.9.9:4040"` | `"http://10.0.4.36:4040"` |' in body
    assert "### dashboard `AdvancedGPUObservability`: missing" in body and "azure-monitor-prometheus" not in body
    assert "pulumi up --replace" in body and "https://github.com/acme/aks-gpu-observability/actions/runs/7" in body
    comment = next(c[1] for c in calls if c[0] == "comment")
    assert comment["issue_number"] == 12 and "No drift any more" in comment["body"]
    assert ["update", {"owner": "acme", "repo": "aks-gpu-observability", "issue_number": 12, "state": "closed",
                       "state_reason": "completed"}] in calls


def test_drift_updates_the_open_issue_of_its_stack(tmp_path, drift_reports):
    calls, failed = file_issues(tmp_path, {"dev": (*drift_reports["drifted"], "")},
                                [{"number": 5, "title": TITLE.format("dev"), "body": "earlier"}], ["dev"])
    assert failed == [] and not [c for c in calls if c[0] in ("create", "comment")]
    (update,) = [c[1] for c in calls if c[0] == "update"]
    assert update["issue_number"] == 5 and "local-pyroscope" in update["body"] and "state" not in update


def test_no_drift_and_no_issue_writes_nothing(tmp_path, drift_reports):
    calls, failed = file_issues(tmp_path, {"dev": (*drift_reports["clean"], "")}, [], ["dev"])
    assert failed == [] and [c[0] for c in calls] == ["list"]


def test_text_from_grafana_cannot_mention_link_or_restyle_in_the_issue(tmp_path):
    """Datasource names, uids and field values come from Grafana, which its admins edit: in the issue body an @ cannot
    mention (a zero-width joiner follows it), and backticks, brackets, pipes and emphasis stay literal text."""
    evil = "@org/team **x** `y` [z](http://e) | cell"
    report = {"stack": "dev", "drifted": True, "objects": [
        {"kind": "datasource", "uid": evil, "state": "drifted", "next_step": f"rename {evil}",
         "fields": [{"field": evil, "grafana": {"name": evil}, "stack": "Pyroscope"}]}]}
    calls, failed = file_issues(tmp_path, {"dev": (1, json.dumps(report), "")}, [], ["dev"])
    assert failed == []
    (body,) = [c[1]["body"] for c in calls if c[0] == "create"]
    assert "@org" not in body and body.count("@\u200dorg/team") == 4, body
    assert "`y`" not in body, body  # a backtick would end a code span early
    (next_line,) = [line for line in body.splitlines() if line.startswith("Next: ")]
    for raw in ("**x**", "[z](http", "[z]"):  # outside a code span, escaped
        assert raw not in next_line, (raw, next_line)
    (row,) = [line for line in body.splitlines() if line.startswith("| `@")]
    assert len(re.findall(r"(?<!\\)\|", row)) == 4, row  # the cell's pipes are escaped: still three cells
    assert [line for line in body.splitlines() if line.startswith("### ")] == [
        "### datasource `@\u200dorg/team **x** 'y' [z](http://e) \\| cell`: drifted"]


def test_a_stack_that_could_not_be_checked_keeps_its_issue_and_fails_the_step(tmp_path):
    error = "error: reading datasource local-pyroscope from Grafana failed: ERROR: Forbidden(...)"
    calls, failed = file_issues(tmp_path, {"dev": (2, "", error)}, [{"number": 5, "title": TITLE.format("dev")}],
                                ["dev", "prod"])
    assert [c[0] for c in calls] == ["list"]
    assert failed == [f"drift could not be checked for: dev ({error}); prod (no result)"]
