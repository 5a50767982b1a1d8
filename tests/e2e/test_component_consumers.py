"""The component added to another team's stack, under the real engine: a Python program that installs the package
with pip and makes one ``GpuObservability``, and a Pulumi YAML program (the real YAML host) that adds the Pulumi
package (provider/), each deploy onto the e2e cluster and the simulated Azure, a re-run changes nothing, their
outputs are the stack's own (deployed from this project on the same cluster, destroyed first), and their destroy
leaves nothing. The CLI's ``pulumi package get-schema`` prints the schema the component provider host infers."""

from __future__ import annotations

import importlib.metadata
import json
import shutil

import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider

from aks_gpu_observability import GpuObservability, __version__
from components.gpu_observability import TYPE
from stack_config.schema import PROJECT, declared, snake
from steps.command import is_step
from tests.support import ROOT
from tests.support.component_package import build_wheel, consumer_venv

STACK = "dev"
PACKAGE = "aks-gpu-observability"
NAMESPACE = "/api/v1/namespaces/gadget"


def dev_arguments(chart_reference: str) -> dict:
    """The dev stack's settings (Pulumi.dev.yaml, the e2e chart) as the component's arguments, typed as declared."""
    settings = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    values = {k.split(":", 1)[1]: v for k, v in settings.items() if k.startswith(f"{PROJECT}:")}
    values["pyroscopeChart"] = chart_reference
    return {snake(k): (v if declared()[k].get("type", "string") == "string" else json.loads(str(v).lower()))
            for k, v in values.items()}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


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


def the_stacks_outputs(aks, engine_tools, chart, folder) -> dict:
    """The outputs of this project's dev stack deployed on the cluster, which is then destroyed, leaving nothing."""
    stack = aks.workspace(folder, engine_tools, chart)
    stack.init(STACK, {"pyroscopeChart": chart.reference})
    stack.up(STACK)
    wanted = stack.outputs(STACK, show_secrets=True)
    stack.destroy(STACK)
    assert emptied(aks) == []
    return wanted


def deploys_as_the_stack(aks, ws, name: str, wanted: dict) -> dict:
    """A consumer's stack: `up` makes the one component ``name`` with the stack's outputs, a re-run changes nothing,
    `destroy` leaves nothing; returns the state after `up`."""
    ws.init(STACK, {"azure-native:location": "eastus2"})
    ws.up(STACK)
    state = ws.state(STACK)
    assert [r["urn"].rsplit("::", 1)[-1] for r in state["resources"] if r["type"] == TYPE] == [name]
    assert ws.outputs(STACK, show_secrets=True) == wanted
    changes = {op: n for op, n in ws.preview(STACK)["changeSummary"].items() if op != "same"}
    assert changes == {}, changes
    ws.destroy(STACK)
    assert [r["type"] for r in ws.state(STACK).get("resources") or []
            if not r["type"].startswith(("pulumi:pulumi:Stack", "pulumi:providers:"))] == []
    assert emptied(aks) == []
    return state


def test_a_python_program_that_installs_the_package_deploys_it_as_the_stack_does(aks, engine_tools, chart, tmp_path):
    wanted = the_stacks_outputs(aks, engine_tools, chart, tmp_path / "stack")

    site = python_consumer(tmp_path / "platform" / "project", build_wheel(tmp_path / "wheel"),
                           dev_arguments(chart.reference))
    ws = consumer_workspace(aks, engine_tools, chart, tmp_path / "platform")
    state = deploys_as_the_stack(aks, ws, "gpu-observability", wanted)
    steps = [r for r in state["resources"] if r["type"] == "command:local:Command" and is_step(r["inputs"])]
    assert len(steps) >= 5 and {r["inputs"].get("dir") for r in steps} == {str(site.relative_to(ws.project))}


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


def yaml_consumer(folder, provider, arguments: dict, outputs) -> None:
    """A platform team's Pulumi YAML project that adds the component as a Pulumi package (the provider folder)."""
    folder.mkdir(parents=True)
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump({
        "name": "platform-cluster-yaml", "runtime": "yaml", "packages": {PACKAGE: str(provider)},
        "resources": {"gpu": {"type": TYPE, "properties": arguments}},
        "outputs": {name: f"${{gpu.{name}}}" for name in outputs}}, sort_keys=False))


def provider_workspace(aks, engine_tools, chart, folder, provider):
    """The YAML consumer's workspace. The 3.68 Python host here starts a Python plugin with an empty program path (it
    reads the request's old ``program`` field, which neither the CLI nor the YAML host fills), so a
    ``PULUMI_PYTHON_CMD`` shim runs the plugin's own virtualenv on its folder for that call, as the official host
    does. Tests only."""
    ws = aks.workspace(folder, engine_tools, chart, project=folder / "project")
    python = provider / "venv" / "bin" / "python"
    shim = folder / "bin" / "python-shim"
    shim.write_text("#!/bin/sh\n"
                    f'if [ "$#" -gt 0 ] && [ -z "$1" ]; then shift; exec \'{python}\' -u \'{provider}\' "$@"; fi\n'
                    f"exec '{python}' \"$@\"\n")
    shim.chmod(0o755)
    ws.env["PULUMI_PYTHON_CMD"] = str(shim)
    # `get-schema` looks the plugin folder's own plugins (its virtualenv's pulumi-* SDKs) up in PULUMI_HOME, not on
    # PATH: the stand-ins and the real kubernetes provider are installed there under the versions the SDKs name (the
    # provider still reports its own, which the engine warns about, as for the stack).
    for name in ("azure-native", "command", "kubernetes"):
        binary = shutil.which(f"pulumi-resource-{name}", path=ws.env["PATH"])
        ws.pulumi("plugin", "install", "resource", name, importlib.metadata.version(f"pulumi-{name}"), "--file", binary)
    return ws


def test_a_yaml_program_adds_the_pulumi_package_and_deploys_it_as_the_stack_does(aks, engine_tools, chart, tmp_path):
    wanted = the_stacks_outputs(aks, engine_tools, chart, tmp_path / "stack")

    provider = tmp_path / "provider"
    shutil.copytree(ROOT / "provider", provider, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    consumer_venv(provider / "venv", build_wheel(tmp_path / "wheel"))
    # `get-schema` installs the folder's requirements first; the 3.68 host, told no virtualenv, makes one at the
    # folder's root and updates pip, setuptools and wheel in it FROM PyPI (the one step of this test that leaves
    # loopback, as for a user), which the shim then leaves unused: the package is in the plugin's virtualenv already.
    (provider / "requirements.txt").write_text("# installed in venv/ by the test\n")
    arguments = {camel(k): v for k, v in dev_arguments(chart.reference).items()}
    yaml_consumer(tmp_path / "platform" / "project", provider, arguments, wanted)
    ws = provider_workspace(aks, engine_tools, chart, tmp_path / "platform", provider)

    printed = json.loads(ws.pulumi("package", "get-schema", str(provider)).stdout)
    inferred = json.loads(ComponentProvider([GpuObservability], PACKAGE, None, __version__).schema)
    assert (printed["name"], printed["version"], list(printed["resources"])) == (PACKAGE, __version__, [TYPE])
    for part in ("inputProperties", "properties"):  # the CLI keeps no description on an element's type
        for spec in inferred["resources"][TYPE][part].values():
            for inner in ("items", "additionalProperties"):
                spec.get(inner, {}).pop("description", None)
    for part in ("inputProperties", "properties", "requiredInputs", "description"):
        assert printed["resources"][TYPE][part] == inferred["resources"][TYPE][part], part

    deploys_as_the_stack(aks, ws, "gpu", wanted)
