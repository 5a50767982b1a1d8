""".github/workflows/deploy.yml: on main, one rollout per Grafana through deploy-stacks.yml, one run at a time."""

from __future__ import annotations

from tests.support.workflows import (
    load,
    runs,
    uses,
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
    pulumi = uses(up, "pulumi/actions")["with"]
    assert (pulumi["command"] == "up" and pulumi["policyPacks"] == "policy"
            and pulumi["stack-name"] == "${{ env.STACK }}")
    assert up["environment"] == "production"
    assert "-m ops.verify --stack" in runs(up)
