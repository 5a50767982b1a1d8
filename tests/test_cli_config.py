"""Config as the real Pulumi CLI hands it to the program: every Pulumi.yaml default written into the stack's
config before the program runs (pulumi v3.230.0 ``sdk/go/common/workspace/config.go``, ``mergeConfig`` and
``createConfigValue``), so the program cannot tell a default from a value the user wrote.

Issue 15, fault 1: with ``multiCluster: true`` and the defaults written out, the stack kept ``pyroscope-mpe``,
``local-pyroscope``, ``azure-monitor-prometheus`` and created the workspace's Monitoring Data Reader
assignment, so a second cluster stack collided with the first in the shared Grafana.
"""

from __future__ import annotations

import json

import pytest
import yaml

from components import config
from tests.conftest import ROOT
from tests.test_stack_inputs import CLUSTERS, grafana_names
from tools.offline import mock_engine

ROLE = "azure-native:authorization:RoleAssignment"


def every_default_written_out() -> dict[str, str]:
    """--set KEY=<default> for every key the dev stack file leaves out, each default as the CLI writes it."""
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    return {
        key: config.cli_value(decl["default"])
        for key, decl in config.declared().items()
        if f"{config.PROJECT}:{key}" not in stack and "default" in decl
    }


def test_cli_value_formats_defaults_like_create_config_value():
    # Go's %v for primitives; json.Marshal (compact) for arrays and maps, as an object value.
    assert config.cli_value(True) == "true" and config.cli_value(False) == "false"
    assert config.cli_value(1800) == "1800"
    assert config.cli_value("") == "" and config.cli_value("pyroscope-pls") == "pyroscope-pls"
    assert config.cli_value([]) == "[]" and config.cli_value(["a=b", "c=d"]) == '["a=b","c=d"]'


def test_the_offline_plan_writes_every_default_into_the_config_as_the_cli_does():
    plan = mock_engine.run("dev", {})
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    for key, decl in config.declared().items():
        full = f"{config.PROJECT}:{key}"
        assert plan.config[full] == (str(stack[full]) if full in stack else config.cli_value(decl["default"])), key


def test_a_default_means_the_same_whether_or_not_it_is_written_out():
    for overrides in ({}, {"multiCluster": "true"}, {"createGrafana": "true"}):
        left_out = mock_engine.run("dev", overrides).to_json()
        written = mock_engine.run("dev", {**every_default_written_out(), **overrides}).to_json()
        assert left_out["resources"] == written["resources"], overrides
        assert left_out["outputs"] == written["outputs"], overrides


def test_three_clusters_with_every_default_written_out_never_collide():
    """The failing input of fault 1: each cluster stack as the CLI runs it."""
    defaults = every_default_written_out()
    plans = [
        mock_engine.run("dev", {**defaults, "multiCluster": "true", "clusterName": name, "clusterResourceGroup": rg})
        for name, rg in CLUSTERS
    ]
    claimed = [grafana_names(p) for p in plans]
    assert len({c["mpe"] for c in claimed}) == 3 and "pyroscope-mpe" not in {c["mpe"] for c in claimed}
    uids = [u for c in claimed for u in c["uids"]]
    assert len(set(uids)) == 6 and not {"local-pyroscope", "azure-monitor-prometheus"} & set(uids)
    assert not any(p.by_type(ROLE) for p in plans), "one Monitoring Data Reader assignment per workspace, not per cluster"


def test_assign_monitoring_data_reader_is_auto_true_or_false(plan):
    assert plan().one(ROLE)  # auto, single cluster: assigned
    assert not plan(multiCluster="true", assignMonitoringDataReader="auto").by_type(ROLE)
    shared = plan(multiCluster="true", assignMonitoringDataReader="true")  # ensured by a step, kept on destroy
    assert not shared.by_type(ROLE) and any(r.name == "grafana-datasources-shared-monitoring-data-reader" for r in shared.resources)
    assert not plan(assignMonitoringDataReader="false").by_type(ROLE)


# --- types: what the CLI refuses before the program runs (project.go ValidateConfigValue) ----------------
@pytest.mark.parametrize("key,value,kind", [
    ("multiCluster", "True", "boolean"),      # pulumi.Config.get_bool would take it; the CLI does not
    ("multiCluster", "yes", "boolean"),
    ("extensionTimeoutSeconds", "1.5", "integer"),
    ("extensionTimeoutSeconds", "ten", "integer"),
    ("tags", "a=b", "array<string>"),
])
def test_set_values_of_the_wrong_type_are_refused_as_the_cli_refuses_them(key, value, kind):
    with pytest.raises(config.ConfigError) as caught:
        mock_engine.run("dev", {key: value})
    assert str(caught.value).startswith(f"{key}: must be of type '{kind}'")


def stack_file_with(tmp_path, monkeypatch, lines: str) -> None:
    base = (ROOT / "Pulumi.dev.yaml").read_text()
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(base + lines)
    monkeypatch.setattr(mock_engine, "stack_file", lambda stack: path)


@pytest.mark.parametrize("line,kind", [
    ("  aks-gpu-observability:multiCluster: yes\n", "boolean"),   # yaml.v3: a string, not a bool
    ("  aks-gpu-observability:multiCluster: 1\n", "boolean"),
    ("  aks-gpu-observability:extensionTimeoutSeconds: 90.5\n", "integer"),
    ("  aks-gpu-observability:clusterStack: [a]\n", "string"),
    ("  aks-gpu-observability:tags: costCenter=1\n", "array<string>"),
])
def test_stack_file_values_of_the_wrong_type_are_refused(tmp_path, monkeypatch, line, kind):
    stack_file_with(tmp_path, monkeypatch, line)
    with pytest.raises(config.ConfigError, match=f"must be of type '{kind}'"):
        mock_engine.run("t", {})


def test_stack_file_scalars_reach_the_program_as_the_cli_hands_them(tmp_path, monkeypatch):
    stack_file_with(tmp_path, monkeypatch, "  aks-gpu-observability:multiCluster: TRUE\n"
                                           "  aks-gpu-observability:extensionTimeoutSeconds: 900\n"
                                           "  aks-gpu-observability:tags: [team=ml]\n")
    plan = mock_engine.run("t", {})
    assert plan.config["aks-gpu-observability:multiCluster"] == "true"
    assert plan.config["aks-gpu-observability:extensionTimeoutSeconds"] == "900"
    assert json.loads(plan.config["aks-gpu-observability:tags"]) == ["team=ml"]


# --- stack files as the CLI reads them (tools/offline/stack_file.py; issue 12 item 7) --------------------------------
def test_bare_and_old_style_keys_are_put_in_their_namespace_as_the_cli_does(tmp_path, monkeypatch):
    """loaders.go stackConfigNamespacedWithProject: a bare key is the project's; key.go ParseKey: ns:config:name."""
    base = (ROOT / "Pulumi.dev.yaml").read_text().replace("  aks-gpu-observability:clusterName: aks-gpu-dev\n", "")
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(base + "  clusterName: aks-gpu-bare\n  aks-gpu-observability:config:extensionVersion: 0.46.0\n")
    monkeypatch.setattr(mock_engine, "stack_file", lambda stack: path)
    plan = mock_engine.run("t", {})
    assert plan.config["aks-gpu-observability:clusterName"] == "aks-gpu-bare"
    assert plan.config["aks-gpu-observability:extensionVersion"] == "0.46.0"
    assert not [key for key in plan.config if key.count(":") != 1]


def test_a_key_without_value_is_an_empty_string_as_the_cli_passes_it(tmp_path, monkeypatch):
    """loaders.go checkForEmptyConfig: the CLI warns and passes "" (the program accepts it where "" is valid and
    refuses it where a value is required: tests/test_bad_input.py)."""
    stack_file_with(tmp_path, monkeypatch, "  aks-gpu-observability:extensionVersion:\n  aks-gpu-observability:privateLinkSubnet: ~\n")
    plan = mock_engine.run("t", {})
    assert plan.config["aks-gpu-observability:extensionVersion"] == ""
    assert plan.config["aks-gpu-observability:privateLinkSubnet"] == ""
