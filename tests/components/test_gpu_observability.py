"""components/gpu_observability.py: the whole graph as one component, its arguments (one per config key, checked
before any child registers), its outputs (the stack's), and the move into it: a stack of the old layout (every child
at the stack's root, tests/data/main_before_component.py) previews one create, the component itself, and nothing else.
pulumi/pulumi#9844 and pulumi/pulumi#8589: a resource given a parent without an alias is a new URN, deleted and
created (a Kubernetes object then "already exists"); pulumi/pulumi#17278: a NoParent alias on a remote (multi-language)
component is ignored, which is why every child here is a local component or a custom resource. SIMULATED: Azure, the
engine (the offline engine's alias rules follow step_generator.go; the real engine plays it in tests/e2e)."""

from __future__ import annotations

import ast

import pytest

from components.gpu_observability import TYPE, GpuObservability
from components.gpu_observability_args import GpuObservabilityArgs
from offline import diff
from offline.program import run
from stack_config.component_args import STACK_ONLY, TARGET, render, to_config
from stack_config.schema import ConfigError, declared, snake
from tests.support import ROOT

OLD_LAYOUT = ROOT / "tests" / "data" / "main_before_component.py"
REQUIRED = dict(cluster_name="aks-gpu-dev", cluster_resource_group="rg-aks-gpu-dev", grafana_name="amg-gpu-dev",
                grafana_resource_group="rg-observability-dev", monitor_workspace_name="amw-gpu-dev",
                monitor_workspace_resource_group="rg-observability-dev")


def test_the_arguments_file_is_generated_from_pulumi_yaml():
    assert TARGET.read_text() == render(), "run `python -m stack_config.component_args` after changing Pulumi.yaml"


def test_every_config_key_but_the_stack_references_is_an_argument_typed_and_described():
    fields = GpuObservabilityArgs.__annotations__
    assert set(fields) == {snake(k) for k in declared() if k not in STACK_ONLY}
    assert set(GpuObservabilityArgs.__required_keys__) == set(REQUIRED)
    tree = ast.parse(TARGET.read_text())
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef)).body
    described = {body[i].target.id for i in range(len(body) - 1) if isinstance(body[i], ast.AnnAssign)
                 and isinstance(body[i + 1], ast.Expr) and str(body[i + 1].value.value).strip()}
    assert described == set(fields)


def test_arguments_become_the_config_the_stack_would_load():
    cfg = to_config(dict(REQUIRED, pyroscope_storage_size="128Gi", extension_timeout_seconds=900,
                         production=False, tags=["costCenter=1234"]))
    assert (cfg.cluster_name, cfg.pyroscope_storage_size, cfg.extension_timeout_seconds) == \
        ("aks-gpu-dev", "128Gi", 900)
    assert dict(cfg.tags)["costCenter"] == "1234"
    # Unset arguments take the key's default.
    assert cfg.pyroscope_chart_version == declared()["pyroscopeChartVersion"]["default"]


@pytest.mark.parametrize("args, message", [
    ({}, "cluster_name (clusterName): required"),
    (dict(REQUIRED, pyroscope_storage_size="lots"), "pyroscope_storage_size (pyroscopeStorageSize): "),
    (dict(REQUIRED, extension_timeout_seconds="900"),
     "extension_timeout_seconds (extensionTimeoutSeconds): expected an integer"),
    (dict(REQUIRED, tags="a=b"), "tags (tags): expected a list of strings"),
    (dict(REQUIRED, production="yes"), "production (production): expected a boolean"),
])
def test_a_bad_argument_is_one_line_naming_it(args, message):
    with pytest.raises(ConfigError) as error:
        to_config(args)
    assert str(error.value).startswith(message) and "\n" not in str(error.value), str(error.value)


def test_an_unknown_argument_is_refused_by_name():
    with pytest.raises(TypeError, match="no argument 'cluster'"):
        to_config(dict(REQUIRED, cluster="x"))


def test_the_component_owns_every_resource_and_exports_the_documented_outputs():
    plan = run("dev")
    component = plan.one(TYPE)
    stack = plan.one("pulumi:pulumi:Stack")
    top = [r for r in plan.resources if r.parent == stack.urn and not r.type.startswith("pulumi:providers:")
           and r.type != "pulumi:pulumi:StackReference"]
    assert top == [component]
    outputs = {n for n in GpuObservability.__annotations__ if not n.startswith("_")}
    assert {snake(name) for name in plan.outputs} == outputs


def test_a_stack_of_the_old_layout_previews_only_the_component_created():
    base = run("dev", program=OLD_LAYOUT).to_json()
    head = run("dev").to_json()
    result = diff.compute(base, head)
    changed = {(s.op, s.name) for s in result.steps if s.op != "same"}
    assert changed == {("create", "gpu-observability")}, changed
    assert [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in result.order] == [("create", "gpu-observability")]
    # Every resource of the old layout is the same one: under its own URN (the stack, the default providers), or
    # under the new URN that took the old one through an alias.
    same = {s.urn for s in result.steps if s.op == "same"}
    assert {r["urn"] for r in base["resources"]} <= set(result.aliases.values()) | same
    assert len(result.aliases) >= 25


def test_a_config_change_after_the_move_diffs_as_before_it():
    """Aliases do not hide a real change: a new storage size is the claim's update, under the new layout too."""
    base = run("dev", program=OLD_LAYOUT).to_json()
    head = run("dev", overrides={"pyroscopeStorageSize": "128Gi"}).to_json()
    changed = {(s.op, s.name) for s in diff.compute(base, head).steps if s.op != "same"}
    assert changed == {("create", "gpu-observability"), ("update", "pyroscope-data-0")}, changed
