"""stack_config/load.py: raw config to a StackConfig: defaults, types, required keys, secrets, parsed lists and maps."""

from __future__ import annotations

import pytest
import yaml

from stack_config import load, rules, schema
from tests.support import ROOT
from tests.support.config_values import SUB_A, SUB_B, VALID, parse


def test_valid_minimal_config_takes_pulumi_yaml_defaults():
    cfg = parse()
    assert cfg.pyroscope_chart_version == "1.15.0"
    assert cfg.private_link_service_name == ""  # derived once the cluster is known (references.for_cluster)
    assert cfg.private_link_visibility == ("*",)
    assert cfg.managed_private_endpoint_name == ""  # derived once the cluster is known (references.for_cluster)
    assert cfg.assign_monitoring_data_reader == "auto" and cfg.assigns_monitoring_data_reader is True
    assert cfg.extension_release_train == "preview"
    assert cfg.extension_gpu_observability is True and cfg.extension_azure_monitor is True
    assert cfg.extension_timeout_seconds == 1800 and cfg.pyroscope_release_timeout_seconds == 600
    assert cfg.private_link_ip_address_count == 1


@pytest.mark.parametrize("key", sorted(VALID))
@pytest.mark.parametrize("value", [None, "", "   "])
def test_required_keys_missing_or_empty(key, value):
    raw = dict(VALID)
    if value is None:
        del raw[key]
    else:
        raw[key] = value
    with pytest.raises(schema.ConfigError) as caught:
        load.parse(raw)
    assert str(caught.value).startswith(f"{key}: required")
    assert f"pulumi config set {key}" in str(caught.value)
    assert f"or set {rules.REQUIRED_UNLESS[key]} to a stack that exports it" in str(caught.value)


def test_required_keys_may_come_from_a_stack_reference_later():
    cfg = load.parse({"clusterStack": "acme/infra/prod", "grafanaName": "amg", "grafanaResourceGroup": "rg",
                        "monitorWorkspaceName": "amw1", "monitorWorkspaceResourceGroup": "rg"})
    assert cfg.cluster_name == "" and cfg.cluster_stack == "acme/infra/prod"
    filled = load.with_values(cfg, {"clusterName": "aks-a", "clusterResourceGroup": "rg-a"}, "stack acme/infra/prod")
    assert rules.check_required(filled).cluster_name == "aks-a"
    with pytest.raises(schema.ConfigError,
                       match=r"^clusterName: expected an AKS cluster name.*\(from stack acme/infra/prod\)$"):
        load.with_values(cfg, {"clusterName": "-bad", "clusterResourceGroup": "rg-a"}, "stack acme/infra/prod")
    set_here = load.parse({**VALID, "clusterStack": "acme/infra/prod"})
    assert load.with_values(set_here, {"clusterName": "other"}, "x").cluster_name == "aks-gpu-dev"  # a set key wins


def test_secret_keys_come_from_secret_config_and_secret_referenced_outputs():
    cfg = load.parse({**VALID, "clusterName": "", "clusterStack": "acme/infra/prod"}, secret_keys=["grafanaName"])
    assert cfg.secret_keys == {"grafanaName"}
    filled = load.with_values(cfg, {"clusterName": "aks-secret", "clusterResourceGroup": "rg-a"}, "stack x",
                                secret={"clusterName"})
    assert filled.secret_keys == {"grafanaName", "clusterName"}
    assert filled.secret_values == ("amg-gpu-dev", "aks-secret")  # longest first
    # A secret output that this stack's own (plain) setting overrides brings no secret in.
    kept = load.with_values(load.parse(VALID), {"clusterName": "other"}, "stack x", secret={"clusterName"})
    assert kept.secret_keys == frozenset() and kept.secret_values == ()


def test_a_secret_value_its_rule_refuses_is_not_printed():
    """`pulumi up` prints a ConfigError's line; the engine would not mask a value it knows only as config, so the
    line says [secret] where the rule would quote the value, from the stack's config or a referenced stack."""
    with pytest.raises(schema.SecretValueError) as caught:
        load.parse({**VALID, "grafanaName": "amg_top_secret"}, secret_keys=["grafanaName"])
    assert "amg_top_secret" not in str(caught.value) and "(got [secret])" in str(caught.value)
    assert str(caught.value).startswith("grafanaName: expected an Azure Managed Grafana name")
    cfg = load.parse({**VALID, "clusterName": "", "clusterStack": "acme/infra/prod"})
    with pytest.raises(schema.SecretValueError) as caught:
        load.with_values(cfg, {"clusterName": "-aks-top-secret"}, "stack acme/infra/prod", secret={"clusterName"})
    assert "aks-top-secret" not in str(caught.value) and "(got [secret])" in str(caught.value)
    with pytest.raises(schema.ConfigError, match="'amg_plain'"):  # a plain value is quoted as before
        load.parse({**VALID, "grafanaName": "amg_plain"})


def test_visibility_list_splits_subscriptions():
    cfg = parse(privateLinkVisibility=f"{SUB_A}  {SUB_B}")
    assert cfg.private_link_visibility == (SUB_A, SUB_B)


def test_dev_stack_file_is_valid_and_holds_no_secrets():
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    values = document["config"]
    raw = {k.split(":", 1)[1]: str(v) for k, v in values.items() if k.startswith("aks-gpu-observability:")}
    load.parse(raw)
    assert not any(isinstance(v, dict) and "secure" in v for v in values.values())


def test_booleans_accept_what_pulumi_get_bool_accepts():
    assert parse(extensionAzureMonitor="True").extension_azure_monitor is True
    assert parse(extensionAzureMonitor="False").extension_azure_monitor is False


def test_tags_parse_into_a_map_with_managed_by():
    cfg = parse(tags='["costCenter=1234", "note=a=b"]')
    assert cfg.tags == {"costCenter": "1234", "managed-by": "aks-gpu-observability", "note": "a=b"}
    assert list(cfg.tags) == sorted(cfg.tags)
    assert parse().tags == {"managed-by": "aks-gpu-observability"}


def test_list_and_map_keys_arrive_parsed():
    """The program reads maps and lists: node selector as a dict, tolerations as Kubernetes tolerations, resources as
    the defaults with the items applied, visibility as a tuple; nothing splits strings after load."""
    cfg = parse(pyroscopeNodeSelector='["agentpool=system", "zone=a"]',
                pyroscopeTolerations='["sku=gpu:NoSchedule", "dedicated", "spot:NoExecute"]',
                pyroscopeResources='["requests.memory=2Gi", "limits.memory=", "limits.cpu=2"]')
    assert cfg.pyroscope_node_selector == {"agentpool": "system", "zone": "a"}
    assert cfg.pyroscope_tolerations == (
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists"},
        {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
    )
    assert cfg.pyroscope_resources == {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"cpu": "2"}}
    assert parse().pyroscope_resources == rules.DEFAULT_RESOURCES
    assert parse().pyroscope_node_selector == {} and parse().pyroscope_tolerations == ()
