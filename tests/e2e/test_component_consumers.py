"""The component added to another team's stack, under the real engine: a Python program that installs the package
with pip and makes one ``GpuObservability`` deploys onto the e2e cluster and the simulated Azure, a re-run changes
nothing, its outputs are the stack's own (deployed from this project on the same cluster, destroyed first), and its
destroy leaves nothing. The program runs the steps from the installed package (steps/command.py ``scripts_dir``)."""

from __future__ import annotations

import json

import pytest
import yaml

from components.gpu_observability import TYPE
from stack_config.schema import PROJECT, declared, snake
from steps.command import is_step
from tests.support import ROOT
from tests.support.component_package import build_wheel, consumer_venv

STACK = "dev"
NAMESPACE = "/api/v1/namespaces/gadget"


def dev_arguments(chart_reference: str) -> dict:
    """The dev stack's settings (Pulumi.dev.yaml, the e2e chart) as the component's arguments, typed as declared."""
    settings = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    values = {k.split(":", 1)[1]: v for k, v in settings.items() if k.startswith(f"{PROJECT}:")}
    values["pyroscopeChart"] = chart_reference
    return {snake(k): (v if declared()[k].get("type", "string") == "string" else json.loads(str(v).lower()))
            for k, v in values.items()}


def python_consumer(folder, wheel, arguments: dict):
    """A platform team's Python project: its own name, its virtualenv with the package installed by pip."""
    folder.mkdir(parents=True)
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump({
        "name": "platform-cluster", "runtime": {"name": "python", "options": {"virtualenv": "venv"}}}))
    (folder / "__main__.py").write_text(
        '"""The platform team\'s cluster stack, which adds GPU profiling as one resource."""\n\n'
        "import pulumi\n\nfrom aks_gpu_observability import GpuObservability\n\n"
        f"gpu = GpuObservability(\"gpu-observability\", {arguments!r})\n\n"
        "for name, value in gpu.stack_outputs.items():\n    pulumi.export(name, value)\n")
    return consumer_venv(folder / "venv", wheel)


def consumer_workspace(aks, engine_tools, chart, folder):
    """The consumer's workspace. The 3.68 language host here reads ``virtualenv`` only from a flag today's CLI no
    longer passes (it sends runtime options in the request), so ``PULUMI_PYTHON_CMD`` names the program's virtualenv
    as the official host would activate it. Tests only."""
    ws = aks.workspace(folder, engine_tools, chart, project=folder / "project")
    ws.env["PULUMI_PYTHON_CMD"] = str(folder / "project" / "venv" / "bin" / "python")
    return ws


def emptied(aks) -> list[str]:
    """What a destroy left of the stack in the cluster and the simulated Azure."""
    world, left = aks.world(), []
    if aks.cp.get(NAMESPACE) is not None:
        left.append("namespace gadget")
    if aks.cp.get("/api/v1/persistentvolumes")["items"]:
        left.append("persistent volumes")
    left += [f"{kind}: {sorted(world[kind])}" for kind in ("pls", "mpes", "arm", "disks") if world.get(kind)]
    left += [f"grafana {name}" for name, g in world["grafana"].items() if g["datasources"] or g["dashboards"]]
    return left


def test_a_python_program_that_installs_the_package_deploys_it_as_the_stack_does(aks, engine_tools, chart, tmp_path):
    stack = aks.workspace(tmp_path / "stack", engine_tools, chart)
    stack.init(STACK, {"pyroscopeChart": chart.reference})
    stack.up(STACK)
    wanted = stack.outputs(STACK, show_secrets=True)
    stack.destroy(STACK)
    assert emptied(aks) == []

    site = python_consumer(tmp_path / "platform" / "project", build_wheel(tmp_path / "wheel"),
                           dev_arguments(chart.reference))
    ws = consumer_workspace(aks, engine_tools, chart, tmp_path / "platform")
    ws.init(STACK, {"azure-native:location": "eastus2"})
    ws.up(STACK)
    state = ws.state(STACK)
    assert [r["urn"].rsplit("::", 1)[-1] for r in state["resources"] if r["type"] == TYPE] == ["gpu-observability"]
    steps = [r for r in state["resources"] if r["type"] == "command:local:Command" and is_step(r["inputs"])]
    assert len(steps) >= 5 and {r["inputs"].get("dir") for r in steps} == {str(site.relative_to(ws.project))}
    assert ws.outputs(STACK, show_secrets=True) == wanted
    changes = {op: n for op, n in ws.preview(STACK)["changeSummary"].items() if op != "same"}
    assert changes == {}, changes
    ws.destroy(STACK)
    assert [r["type"] for r in ws.state(STACK).get("resources") or []
            if not r["type"].startswith(("pulumi:pulumi:Stack", "pulumi:providers:"))] == []
    assert emptied(aks) == []


@pytest.mark.parametrize("bad", [{"extension_timeout_seconds": "900"}, {"cluster": "aks-gpu-dev"}])
def test_a_bad_argument_fails_the_consumers_preview_in_one_line_before_anything_registers(aks, engine_tools, chart,
                                                                                         tmp_path, bad):
    arguments = {**dev_arguments(chart.reference), **bad}
    python_consumer(tmp_path / "platform" / "project", build_wheel(tmp_path / "wheel"), arguments)
    ws = consumer_workspace(aks, engine_tools, chart, tmp_path / "platform")
    ws.init(STACK, {"azure-native:location": "eastus2"})
    done = ws.pulumi("preview", stack=STACK, check=False)
    assert done.returncode != 0
    text = done.stdout + done.stderr
    line = ("extension_timeout_seconds (extensionTimeoutSeconds): expected an integer (got '900')"
            if "extension_timeout_seconds" in bad else "GpuObservability: no argument 'cluster'")
    assert line in text, text[-3000:]
    assert "create" not in json.dumps(ws.state(STACK).get("resources") or [])
