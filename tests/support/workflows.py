"""The GitHub Actions workflows as data, for the tests of the workflows and of the .ci/ scripts they run:
a workflow file parsed, a job's steps, the one step using an action or running a command, and the backend values
the scripts are run with."""

from __future__ import annotations

import yaml

from tests.support import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as True
    return document


def steps(job: dict) -> list[dict]:
    """A job's steps; none for a job that calls a reusable workflow (``uses:``)."""
    return job.get("steps", [])


def uses(job: dict, action: str) -> dict:
    """The job's one step using ``action``; for pulumi/actions, the one that runs a command when the job also has an
    install-only one (no command: pulumi/actions v7.0.0 src/main.ts)."""
    found = [s for s in steps(job) if s.get("uses", "").startswith(action + "@")]
    if action == "pulumi/actions" and len(found) > 1:
        found = [s for s in found if "command" in (s.get("with") or {})]
    assert len(found) == 1, (action, [s.get("uses") for s in steps(job)])
    return found[0]


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


WORKFLOW_FILES = ["pr.yml", "deploy.yml", "deploy-stacks.yml", "drift.yml"]
# The run steps that may get the Pulumi token: they run pulumi (or ops.verify, which reads stack outputs).
PULUMI_RUNS = ("-m ops.verify", "pulumi preview --json", "-m ops.fleet endpoints", "-m ops.fleet cluster")


def index(job: dict, found: dict) -> int:
    return next(i for i, step in enumerate(steps(job)) if step is found)


def run_step(job: dict, command: str) -> dict:
    found = [s for s in steps(job) if command in s.get("run", "")]
    assert len(found) == 1, (command, [s.get("run") for s in steps(job)])
    return found[0]


KEY_VAULT = "azurekeyvault://kv-platform.vault.azure.net/keys/pulumi"
AZBLOB = "azblob://pulumi-state?storage_account=stplatformstate"
