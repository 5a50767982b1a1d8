""".github/workflows/deploy-stacks.yml, as deploy.yml calls it: the stacks in parallel, only the Grafana providers'
writes serialized."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support import ROOT
from tests.support.workflows import (
    index,
    load,
    run_step,
    steps,
    uses,
)


def test_only_the_grafana_providers_writes_are_serialized_and_everything_else_runs_in_parallel():
    """docs/fleet.md: the setup job groups the stacks file by Grafana; the rollout is a matrix over Grafanas (parallel,
    fail-fast off), each calling deploy-stacks.yml. There, job `cluster` is a matrix over that Grafana's stacks with no
    max-parallel and fail-fast off: each stack previews, classifies (ops/fleet.py classify) and runs `pulumi up`
    at once, excluding the conflicting resources and their dependents only when it has such a change. Job `plan` needs
    it (and runs when some stacks failed), job `grafana` (a matrix over the plan's chunks, one at a time: no
    concurrency group, whose single pending slot would drop stacks) runs the serialized phase for the stacks listed. One
    run at a time: a workflow-level group that never cancels a running rollout."""
    deploy = load("deploy.yml")
    setup, rollout = deploy["jobs"]["setup"], deploy["jobs"]["rollout"]
    assert run_step(setup, "-m ops.stack_matrix")["run"] == "python3 -m ops.stack_matrix deploy/stacks.json"
    assert setup["outputs"]["grafanas"] == "${{ steps.matrix.outputs.grafanas }}"
    assert rollout["needs"] == "setup" and rollout["strategy"]["fail-fast"] is False
    assert rollout["strategy"]["matrix"] == {"include": "${{ fromJSON(needs.setup.outputs.grafanas) }}"}
    assert "concurrency" not in rollout and deploy["concurrency"]["cancel-in-progress"] is False
    assert rollout["with"] == {"grafana": "${{ matrix.grafana }}", "stacks": "${{ toJSON(matrix.stacks) }}",
                               "groups": "${{ toJSON(matrix.groups) }}"}
    assert run_step(setup, "-m ops.stack_matrix")["env"] == {"FLEET_RUNNERS": "${{ vars.FLEET_RUNNERS }}"}
    assert "secrets" not in rollout, "no stored Pulumi token is passed on"
    # actions: read for the called plan job's download-artifact (a called workflow's jobs get at most the caller's)
    assert rollout["permissions"] == {"contents": "read", "id-token": "write", "actions": "read"}
    called = load("deploy-stacks.yml")
    assert {called["on"]["workflow_call"]["inputs"][k]["type"] for k in ("stacks", "groups")} == {"string"}
    assert list(called["jobs"]) == ["cluster", "plan", "grafana"]
    cluster, plan, grafana = (called["jobs"][n] for n in ("cluster", "plan", "grafana"))
    assert "max-parallel" not in cluster["strategy"] and cluster["strategy"]["fail-fast"] is False
    assert cluster["strategy"]["matrix"] == {"group": "${{ fromJSON(inputs.groups) }}"}
    assert cluster["env"]["STACK"] == "${{ matrix.group[0] }}" and "concurrency" not in cluster
    phase1 = run_step(cluster, "-m ops.fleet cluster")
    assert phase1["id"] == "phase1" and "continue-on-error" not in phase1
    upload = uses(cluster, "actions/upload-artifact")
    assert upload["if"] == "${{ !cancelled() && steps.phase1.outputs.artifact != '' }}", "a failed stack's record too"
    assert upload["with"]["name"] == "${{ steps.phase1.outputs.artifact }}"
    assert upload["with"]["path"] == "${{ runner.temp }}/fleet/"
    assert index(cluster, phase1) < index(cluster, upload) == len(steps(cluster)) - 1
    assert plan["needs"] == "cluster" and plan["if"] == "${{ !cancelled() }}" and "environment" not in plan
    assert uses(plan, "actions/download-artifact")["with"]["pattern"] == "fleet-*"
    assert plan["permissions"] == {"contents": "read", "actions": "read"}, "no id-token, no environment: no credential"
    assert run_step(plan, "-m ops.fleet plan")["env"] == {"STACKS": "${{ inputs.stacks }}"}
    assert plan["outputs"]["chunks"] == "${{ steps.plan.outputs.chunks }}"
    # The serialized phase: one job per chunk, one chunk at a time (max-parallel: 1), a failed chunk not cancelling
    # the next; no concurrency group (its single pending slot would drop chunks).
    assert grafana["needs"] == "plan" and "concurrency" not in grafana
    assert grafana["strategy"] == {"fail-fast": False, "max-parallel": 1,
                                   "matrix": {"chunk": "${{ fromJSON(needs.plan.outputs.chunks) }}"}}
    assert grafana["env"]["STACK"] == "${{ matrix.chunk.stacks[0] }}"
    assert "needs.plan.outputs.endpoints != '[]'" in grafana["if"]
    endpoints = run_step(grafana, "-m ops.fleet endpoints")
    assert endpoints["run"] == 'python3 -m ops.fleet endpoints --stacks "$STACKS" --whole "$WHOLE"'
    assert endpoints["env"]["STACKS"] == "${{ toJSON(matrix.chunk.stacks) }}"
    assert endpoints["env"]["WHOLE"] == "${{ toJSON(matrix.chunk.whole) }}"
    assert endpoints["env"]["FLEET_RELOGIN"] == "bash .ci/azure_relogin.sh"
    install = run_step(grafana, "-m ops.binaries --install")
    assert index(grafana, install) < index(grafana, endpoints)
    # The repository's stacks file yields one entry per Grafana, so one run puts at most one job in each group.
    done = subprocess.run([sys.executable, "ops/stack_matrix.py", "deploy/stacks.json"], cwd=ROOT,
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    grafanas = json.loads(done.stdout.split("=", 1)[1])
    assert len({g["grafana"] for g in grafanas}) == len(grafanas)
    assert {s for g in grafanas for s in g["stacks"]} == {e["stack"]
                                                          for e in json.loads((
                                                              ROOT / "deploy" / "stacks.json").read_text())["stacks"]}
