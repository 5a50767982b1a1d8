"""``command:local:Command`` under the real engine, as pulumi-command v1.2.1 behaves: the stand-in plugin is held to
these (and, with ``AKS_GPU_OBS_COMMAND_PLUGIN`` naming a real ``pulumi-resource-command``, the real one is, by the
same tests). Upstream: pulumi/pulumi-command v1.2.1 ``provider/pkg/provider/local/commandController.go``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import real_engine

PROGRAM = '''
import pulumi
from pulumi_command import local

config = pulumi.Config()
log = config.require("log")
step = local.Command(
    "step",
    create=f"echo create $A $PULUMI_COMMAND_STDOUT >> {log}; echo out-$A",
    update=config.get("update") and f"echo update $A $PULUMI_COMMAND_STDOUT >> {log}; echo updated-$A",
    delete=f"echo delete $A $PULUMI_COMMAND_STDOUT >> {log}",
    environment={"A": config.get("a") or "1", **({"S": config.require_secret("s")} if config.get("s") else {})},
    triggers=[config.get("t") or "x"],
)
pulumi.export("stdout", step.stdout)
'''


@pytest.fixture
def workspace(tmp_path, engine_tools):
    world = tmp_path / "world.json"
    world.write_text("{}")
    project = tmp_path / "program"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: command-check\nruntime:\n  name: python\n")
    (project / "__main__.py").write_text(PROGRAM)
    ws = real_engine.Workspace(tmp_path / "ws", engine_tools, world, project=project)
    ws.pulumi("stack", "init", "check")
    ws.pulumi("config", "set", "log", str(tmp_path / "log.txt"), stack="check")
    return ws, tmp_path / "log.txt"


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_preview_runs_nothing_and_reports_stdout_unknown(workspace):
    ws, log = workspace
    preview = ws.pulumi("preview", stack="check").stdout
    assert lines(log) == []
    assert "+ 2 to create" in preview and "stdout: [unknown]" in preview


def test_an_environment_change_runs_create_again_and_a_trigger_replaces_create_first(workspace):
    ws, log = workspace
    ws.up("check")
    assert lines(log) == ["create 1"]
    assert ws.outputs("check")["stdout"] == "out-1"
    ws.pulumi("config", "set", "a", "2", stack="check")
    preview = ws.preview("check")
    assert [s["op"] for s in preview["steps"] if s["urn"].endswith("::step")] == ["update"]
    ws.up("check")
    assert lines(log)[1:] == ["create 2 out-1"]  # no update command: create runs, with the last stdout
    ws.pulumi("config", "set", "t", "y", stack="check")
    ws.up("check")
    assert lines(log)[2:] == ["create 2", "delete 2 out-2"]  # the replacement first, then the old one's delete
    ws.pulumi("config", "set", "update", "yes", stack="check")
    ws.pulumi("config", "set", "a", "3", stack="check")
    ws.up("check")
    assert lines(log)[4:] == ["update 3 out-2"]
    ws.destroy("check")
    assert lines(log)[5:] == ["delete 3 updated-3"]


def test_a_secret_input_stays_secret_and_leaves_stdout_plain(workspace):
    """As the real v1.2.1 plugin does under the real engine (measured): the secret environment value is secret in the
    state, and stdout, which does not print it, is not made secret by it."""
    ws, _ = workspace
    ws.pulumi("config", "set", "--secret", "s", "hush", stack="check")
    ws.up("check")
    step = next(r for r in ws.state("check")["resources"] if r["urn"].endswith("::step"))
    assert real_engine.SECRET_SIG in json.dumps(step["outputs"]["environment"])
    assert "hush" not in json.dumps(step)
    assert ws.outputs("check")["stdout"] == "out-1"
