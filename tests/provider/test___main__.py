"""provider/: the component as a Pulumi package. The schema Pulumi's component provider host infers from
GpuObservability (what ``pulumi package get-schema provider`` prints; the real CLI's: tests/e2e/
test_component_consumers.py): one resource, one input per argument named as the config key, one output per stack
output (docs/outputs.md), each typed and described, the six required inputs required."""

from __future__ import annotations

import json
import re
import runpy
import shutil
import subprocess
import sys
import typing

import pytest
from pulumi.provider.experimental.component import ComponentProvider

from aks_gpu_observability import PARTS, GpuObservability, __version__
from components.gpu_observability import TYPE
from stack_config.component_args import STACK_ONLY, to_config
from stack_config.schema import declared
from tests.support import ROOT

TYPES = {"string": "string", "integer": "integer", "boolean": "boolean", "array": "array"}


@pytest.fixture(scope="module")
def schema() -> dict:
    name = runpy.run_path(str(ROOT / "provider" / "__main__.py"), run_name="provider")["NAME"]
    return json.loads(ComponentProvider([GpuObservability], name, None, __version__).schema)


def test_one_resource_the_components_type_at_the_packages_version(schema):
    assert (schema["name"], schema["version"], list(schema["resources"])) == ("aks-gpu-observability", __version__,
                                                                              [TYPE])


def test_every_config_key_but_the_stack_references_is_an_input_typed_and_described(schema):
    resource = schema["resources"][TYPE]
    inputs = resource["inputProperties"]
    keys = {k: d for k, d in declared().items() if k not in STACK_ONLY}
    assert set(inputs) == set(keys)
    assert {k: inputs[k]["type"] for k in keys} == {k: TYPES[d.get("type", "string")] for k, d in keys.items()}
    assert [k for k, v in inputs.items() if not v.get("description") or "Stack supplies" in v["description"]] == []
    assert sorted(resource["requiredInputs"]) == sorted(
        ["clusterName", "clusterResourceGroup", "grafanaName", "grafanaResourceGroup", "monitorWorkspaceName",
         "monitorWorkspaceResourceGroup"])


def test_every_documented_stack_output_is_an_output_typed_and_described(schema):
    outputs = schema["resources"][TYPE]["properties"]
    documented = dict(re.findall(r"^\| `(\w+)` \| (\w+) \|", (ROOT / "docs" / "outputs.md").read_text(), re.M))
    assert documented and {k: v["type"] for k, v in outputs.items()} == documented
    assert [k for k, v in outputs.items() if not v.get("description")] == []


def test_the_arguments_are_a_typeddict_so_the_dict_the_provider_passes_is_what_the_component_takes():
    """pulumi/pulumi#18526: the component provider host passes a component its arguments as a dict; class-style
    arguments fail there ("'dict' object has no attribute ..."). GpuObservability's are a TypedDict, read as a dict."""
    args = typing.get_type_hints(GpuObservability.__init__)["args"]
    assert typing.is_typeddict(args)
    given = {"cluster_name": "aks-gpu", "cluster_resource_group": "rg-aks", "grafana_name": "amg-gpu",
             "grafana_resource_group": "rg-obs", "monitor_workspace_name": "amw-gpu",
             "monitor_workspace_resource_group": "rg-obs", "extension_timeout_seconds": 600}
    config = to_config(given)  # the schema's names mapped to the Python ones, as ComponentProvider.map_inputs does
    assert (config.cluster_name, config.extension_timeout_seconds) == ("aks-gpu", 600)


def test_its_requirements_install_the_component_package_from_the_repository(tmp_path):
    """pulumi/pulumi#19233: for a plugin folder named by a local path, its virtualenv is the user's to make
    (docs/component.md gives the command); provider/requirements.txt, run from the folder, installs the component's
    Python package from the repository around it."""
    (tmp_path / "repo").mkdir()
    for name in ("pyproject.toml", "README.md", "provider", "aks_gpu_observability", *PARTS):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, tmp_path / "repo" / name)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                    "--target", str(tmp_path / "venv"), "-r", "requirements.txt"],
                   cwd=tmp_path / "repo" / "provider", check=True, capture_output=True)
    assert (tmp_path / "venv" / "aks_gpu_observability" / "__init__.py").is_file()
    assert (tmp_path / "venv" / "steps" / "wait_private_link_service.sh").is_file()
