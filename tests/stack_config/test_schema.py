"""stack_config/schema.py: StackConfig mirrors Pulumi.yaml's keys, and Pulumi.yaml itself is a valid project file."""

from __future__ import annotations

import json
from dataclasses import fields

import jsonschema
import pytest
import yaml

from stack_config import schema
from tests.support import ROOT, reference
from tests.support.config_values import parse

ROLE = "azure-native:authorization:RoleAssignment"


def test_config_is_frozen():
    cfg = parse()
    with pytest.raises(Exception):
        cfg.cluster_name = "other"  # type: ignore[misc]


def test_every_declared_key_is_typed_described_and_mapped():
    declared = schema.declared()
    # Every field mirrors a key, but secret_keys (which keys came in secret: not itself config).
    assert set(schema.snake(k) for k in declared) == {f.name for f in fields(schema.StackConfig)} - {"secret_keys"}
    for key, decl in declared.items():
        assert decl.get("type") in ("string", "integer", "boolean", "array"), key
        assert len(decl.get("description", "")) > 20, key
        assert key[0].islower() and "_" not in key and "-" not in key, f"{key} is not flat camelCase"


def test_pulumi_yaml_matches_pulumis_project_schema():
    schema = json.loads(reference("pulumi/project.json").read_text())
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    jsonschema.Draft202012Validator(schema).validate(project)
    assert project["name"] == "aks-gpu-observability"
    assert project["runtime"]["name"] == "python"
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    assert "backend" not in project, "Pulumi.yaml must not pin a backend"


def test_schema_check_catches_a_malformed_declaration():
    schema = json.loads(reference("pulumi/project.json").read_text())
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    project["config"]["clusterName"]["typo"] = True
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(project)


def test_assign_monitoring_data_reader_is_auto_true_or_false(plan):
    assert plan().one(ROLE)  # auto, single cluster: assigned
    assert not plan(multiCluster="true", assignMonitoringDataReader="auto").by_type(ROLE)
    shared = plan(multiCluster="true", assignMonitoringDataReader="true")  # ensured by a step, kept on destroy
    assert not shared.by_type(ROLE) and any(r.name == "grafana-datasources-shared-monitoring-data-reader"
                                            for r in shared.resources)
    assert not plan(assignMonitoringDataReader="false").by_type(ROLE)
