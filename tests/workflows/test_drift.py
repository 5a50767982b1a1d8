""".github/workflows/drift.yml: the daily drift check per stack of deploy/stacks.json, as the read-only drift
identity on environment drift, never production's; only the issue job writes issues."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.support import ROOT
from tests.support.workflows import (
    WORKFLOWS,
    index,
    load,
    run_step,
    steps,
    uses,
)


def test_drift_workflow_runs_daily_per_stack_and_only_the_issue_job_writes_issues():
    drift = load("drift.yml")
    assert drift["on"]["schedule"] and all(re.fullmatch(r"[\d*/,-]+( [\d*/,-]+){4}",
                                                        c["cron"]) for c in drift["on"]["schedule"])
    assert "workflow_dispatch" in drift["on"] and drift["permissions"] == {"contents": "read"}
    stacks, check, issues = drift["jobs"]["stacks"], drift["jobs"]["check"], drift["jobs"]["issues"]
    listing = run_step(stacks, "-m ops.stack_matrix")
    assert listing["run"] == "python3 -m ops.stack_matrix --list deploy/stacks.json", "the deploy workflow's list"
    assert "env" not in listing
    assert stacks["outputs"]["stacks"] == "${{ steps.%s.outputs.stacks }}" % listing["id"]
    assert "permissions" not in stacks  # the workflow's contents: read
    # check: a matrix over the stack list, OIDC only, never issues
    assert check["needs"] == "stacks" and check["strategy"]["fail-fast"] is False
    assert check["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert check["env"]["STACK"] == "${{ matrix.stack }}"
    assert check["permissions"] == {"contents": "read", "id-token": "write"}
    backend = run_step(check, ".ci/pulumi_backend.sh")
    assert backend["id"] == "backend" and backend["env"]["PULUMI_TOKEN_SCOPE_VARIABLE"] == "PULUMI_DRIFT_SCOPE"
    cloud = uses(check, "pulumi/auth-actions")
    assert cloud["if"] == "steps.backend.outputs.kind == 'cloud-oidc'"
    installer = run_step(check, "-m ops.binaries --install")  # the CLI for `pulumi stack output`
    verify = run_step(check, "-m ops.verify")
    assert '.venv/bin/python -m ops.verify --stack "$STACK" --drift --json > drift-result/report.json' in verify["run"]
    assert verify["env"] == {"PULUMI_ACCESS_TOKEN": "${{ steps.pulumi-cloud.outputs.pulumi-access-token }}"}
    assert 'test "$code" -le 1' in verify["run"], "exit 2 (not checked) fails the job; drift (1) is for the issue job"
    upload = uses(check, "actions/upload-artifact")
    assert upload["if"] == "always()" and upload["with"]["path"] == "drift-result/"
    assert index(check, backend) < index(check, installer) < index(check, cloud) < index(check, verify) < index(
        check, upload)
    # issues: the only job with issues: write, and no cloud credential
    assert issues["permissions"] == {"contents": "read", "issues": "write"}
    assert issues["needs"] == ["stacks", "check"] and issues["if"].startswith("always()")
    assert not any(s.get("uses", "").startswith(("azure/login@", "pulumi/")) for s in steps(issues))
    download = uses(issues, "actions/download-artifact")
    assert download["with"] == {"pattern": "drift-*", "path": "drift"}
    script = uses(issues, "actions/github-script")
    assert "require('./.ci/drift_issues.js')" in script["with"]["script"]
    assert script["env"] == {"STACKS": "${{ needs.stacks.outputs.stacks }}"}
    for name, job in drift["jobs"].items():
        assert ("issues" in job.get("permissions", {})) == (name == "issues"), name


def test_the_drift_check_signs_in_as_the_drift_identity_never_the_deployer():
    """The check job runs on environment drift, whose federated credentials are the read-only drift identity's
    (docs/platform.md, Identities), switched on by AZURE_DRIFT_CLIENT_ID; the deployer's client id is nowhere in the
    workflow, in any spelling, nor a computed vars index that could reach it. The identity holds no ARM role (its
    roles are Grafana's and the state's data actions): it signs in to the tenant, with no subscription to select."""
    check = load("drift.yml")["jobs"]["check"]
    assert check["environment"] == "drift"
    assert check["if"].strip() == "vars.AZURE_DRIFT_CLIENT_ID != ''"
    login = uses(check, "azure/login")["with"]
    assert login == {"client-id": "${{ vars.AZURE_DRIFT_CLIENT_ID }}", "tenant-id": "${{ vars.AZURE_TENANT_ID }}",
                     "allow-no-subscriptions": True}
    text = (WORKFLOWS / "drift.yml").read_text(encoding="utf-8")
    assert re.findall(r"(?<![\w])AZURE_CLIENT_ID|ARM_CLIENT_ID|vars\s*\[", text, re.I) == []


def test_drift_checks_the_stacks_the_deploy_workflow_deploys(tmp_path):
    """One list of stacks (drift has no list of its own): --list flattens deploy/stacks.json's groups (one
    Grafana's stacks together), with the same checks."""
    (tmp_path / "stacks.json").write_text(json.dumps({"stacks": [
        {"stack": "aks-a", "grafana": "rg-o/amg-one"}, {"stack": "aks-b", "grafana": "rg-o/amg-two"},
        {"stack": "aks-c", "grafana": "rg-o/amg-one"}]}))
    out = tmp_path / "github_output"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_OUTPUT": str(out)}
    done = subprocess.run([sys.executable, str(ROOT / "ops" / "stack_matrix.py"), "--list",
                           str(tmp_path / "stacks.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == 'stacks=["aks-a","aks-c","aks-b"]\n'
    (tmp_path / "stacks.json").write_text(json.dumps({"stacks": [{"stack": "aks-a", "grafana": "rg-o/amg-one"}] * 2}))
    done = subprocess.run([sys.executable, str(ROOT / "ops" / "stack_matrix.py"), "--list",
                           str(tmp_path / "stacks.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "listed twice" in done.stderr and len(done.stderr.splitlines()) == 1
