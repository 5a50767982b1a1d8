"""The GitHub Actions workflows: parsed, their job structure checked, every action pinned by commit SHA."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as True
    return document


def steps(job: dict) -> list[dict]:
    return job["steps"]


def uses(job: dict, action: str) -> dict:
    found = [s for s in steps(job) if s.get("uses", "").startswith(action + "@")]
    assert len(found) == 1, (action, [s.get("uses") for s in steps(job)])
    return found[0]


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


@pytest.mark.parametrize("name", ["pr.yml", "deploy.yml"])
def test_every_action_is_pinned_by_commit_sha(name):
    text = (WORKFLOWS / name).read_text()
    pins = re.findall(r"uses:\s*(\S+)(.*)", text)
    assert pins
    for ref, comment in pins:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref
        assert re.search(r"#\s*v\d", comment), f"{ref}: say which version the SHA is"


@pytest.mark.parametrize("name", ["pr.yml", "deploy.yml"])
def test_no_stored_secrets_and_least_privilege(name):
    text = (WORKFLOWS / name).read_text()
    assert "secrets." not in text, "Azure sign-in is OIDC; no stored secret"
    document = load(name)
    assert document["permissions"] == {"contents": "read"}
    for job in document["jobs"].values():
        if any(s.get("uses", "").startswith("azure/login@") for s in steps(job)):
            assert job["permissions"]["id-token"] == "write"
            assert not {"client-secret", "creds"} & set(uses(job, "azure/login")["with"])


def test_pull_request_workflow():
    pr = load("pr.yml")
    assert pr["on"] == {"pull_request": {"branches": ["main"]}}
    offline, preview = pr["jobs"]["offline"], pr["jobs"]["preview"]
    commands = runs(offline)
    assert ".venv/bin/pip install -r requirements.txt" in commands
    assert ".venv/bin/python -m pytest -q" in commands and "REQUIRE_AZURE_CLI=1" in commands
    assert "-m tools.plan --stack \"$STACK\" --policy" in commands
    assert "--graph mermaid" in commands
    comment = uses(offline, "actions/github-script")
    assert "```mermaid" in comment["with"]["script"] and offline["permissions"]["pull-requests"] == "write"
    assert "id-token" not in offline["permissions"], "the offline job needs no cloud credentials"
    assert preview["needs"] == "offline"
    assert "vars.AZURE_CLIENT_ID != ''" in preview["if"]
    pulumi = uses(preview, "pulumi/actions")["with"]
    assert pulumi["command"] == "preview" and pulumi["diff"] is True and pulumi["policyPacks"] == "policy"
    assert pulumi["comment-on-pr"] is True
    login = steps(preview).index(uses(preview, "azure/login"))
    assert login < steps(preview).index(uses(preview, "pulumi/actions"))


def test_main_branch_deploy_workflow():
    deploy = load("deploy.yml")
    assert deploy["on"]["push"] == {"branches": ["main"]}
    up = deploy["jobs"]["up"]
    pulumi = uses(up, "pulumi/actions")["with"]
    assert pulumi["command"] == "up" and pulumi["policyPacks"] == "policy"
    assert up["environment"] == "production"
    assert deploy["concurrency"]["cancel-in-progress"] is False
    assert "-m tools.verify --stack" in runs(up)
