""".github/workflows/deploy.yml: on main, one rollout per Grafana through deploy-stacks.yml, one run at a time."""

from __future__ import annotations

from tests.support.workflows import (
    load,
    run_step,
)


def test_main_branch_deploy_workflow():
    """On main: one job per Grafana (from the stacks file), each running its stacks through deploy-stacks.yml."""
    deploy = load("deploy.yml")
    assert deploy["on"]["push"] == {"branches": ["main"]}
    rollout = deploy["jobs"]["rollout"]
    assert rollout["uses"] == "./.github/workflows/deploy-stacks.yml"
    assert deploy["concurrency"] == {"group": "deploy-production", "cancel-in-progress": False}
    called = load("deploy-stacks.yml")
    up = called["jobs"]["cluster"]
    assert run_step(up, "-m ops.binaries --install"), "the CLI installed; ops.fleet cluster runs it"
    phase1 = run_step(up, "-m ops.fleet cluster")
    assert phase1["run"] == ('python3 -m ops.fleet cluster --stacks "$STACKS" --grafana "$GRAFANA" '
                             '--out "$RUNNER_TEMP/fleet"')
    assert phase1["env"]["STACKS"] == "${{ toJSON(matrix.group) }}"
    assert up["environment"] == "production"
