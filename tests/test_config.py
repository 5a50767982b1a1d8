"""Config rules: each key's good and bad values, types, required keys, and Pulumi.yaml itself."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import jsonschema
import pytest
import yaml

from components import config
from tests.support import ROOT, reference
from tests.support.plans import LOCAL_DASHBOARD, LOCAL_SHA256

VALID = {
    "clusterName": "aks-gpu-dev",
    "clusterResourceGroup": "rg-aks-gpu-dev",
    "grafanaName": "amg-gpu-dev",
    "grafanaResourceGroup": "rg-observability-dev",
    "monitorWorkspaceName": "amw-gpu-dev",
    "monitorWorkspaceResourceGroup": "rg-observability-dev",
}

#: A well-formed sha256 digest (64 lowercase hex digits); not the digest of anything published.
DIGEST = "0123456789abcdef" * 4

SUB_A = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"
SUB_B = "0b9d3c1e-2222-4a4a-8b8b-123456789abc"

GOOD = [
    ("clusterName", "a"),
    ("clusterName", "aks_gpu-01"),
    ("clusterName", "a" * 63),
    ("clusterResourceGroup", "rg.(prod)_1-x"),
    ("clusterResourceGroup", "r" * 90),
    ("clusterResourceGroup", "Ressourcengruppe-München"),
    ("grafanaName", "ab"),
    ("grafanaName", "a" + "b" * 21 + "1"),
    ("monitorWorkspaceName", "amw1"),
    ("monitorWorkspaceName", "a" + "b" * 42 + "c"),
    ("managedPrivateEndpointName", "pe"),
    ("managedPrivateEndpointName", "pyroscope-mpe-cl-01"),
    ("managedPrivateEndpointName", "a" * 20),
    ("pyroscopeChartVersion", "1.15.0"),
    ("pyroscopeChartVersion", "2.0.0-rc.1+build.5"),
    ("extensionVersion", ""),
    ("extensionVersion", "0.46.0"),
    ("privateLinkVisibility", "*"),
    ("privateLinkVisibility", SUB_A),
    ("privateLinkVisibility", f"{SUB_A} {SUB_B}"),
    ("privateLinkServiceName", "pyroscope-pls"),
    ("privateLinkServiceName", "pls_"),
    ("privateLinkServiceResourceGroup", ""),
    ("privateLinkServiceResourceGroup", "rg-network"),
    ("privateLinkSubnet", ""),
    ("privateLinkSubnet", "snet-pls"),
    ("privateLinkIpAddressCount", "1"),
    ("privateLinkIpAddressCount", "8"),
    ("extensionTimeoutSeconds", "60"),
    ("extensionTimeoutSeconds", "7200"),
    ("pyroscopeReleaseTimeoutSeconds", "3600"),
    ("pyroscopeImageTag", "1.14.1"),
    ("pyroscopeImageRepository", "myregistry.azurecr.io/grafana/pyroscope"),
    ("pyroscopeImageRepository", "localhost:5000/pyroscope"),
    ("pyroscopeImageTag", "weekly-f123"),
    ("pyroscopeChart", "oci://ghcr.io/grafana/helm-charts/pyroscope"),
    ("pyroscopeChart", "oci://myacr.azurecr.io/helm/pyroscope"),
    ("pyroscopeChart", "https://grafana.github.io/helm-charts"),
    # Digests (docs/how-it-works.md "Pins that cannot move"): the chart by an OCI digest, the image by tag@digest.
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope@sha256:{DIGEST}"),
    ("pyroscopeChart", f"oci://myacr.azurecr.io:443/helm/pyroscope@sha256:{DIGEST}"),
    ("pyroscopeImageTag", f"1.15.0@sha256:{DIGEST}"),
    ("pyroscopeImageTag", f"weekly-f123@sha256:{DIGEST}"),
    ("kubeconfigCredentials", "admin"),
    ("kubeloginMode", "workloadidentity"),
    ("extensionName", "inspektor-gadget"),
    ("extensionReleaseTrain", "stable"),
    ("extensionGpuObservability", "false"),
    ("extensionAzureMonitor", "false"),
    ("extensionAzureMonitor", "False"),
    ("privateLinkServiceTimeoutSeconds", "3600"),
    ("connectionApprovalTimeoutSeconds", "60"),
    ("managedPrivateEndpointTimeoutSeconds", "900"),
    ("createGrafana", "true"),
    ("createMonitorWorkspace", "true"),
    ("grafanaPublicNetworkAccess", "Disabled"),
    ("assignMonitoringDataReader", "false"),
    ("pyroscopeDatasourceUid", "pyro_01-a"),
    ("prometheusDatasourceUid", "a" * 40),
    ("pyroscopeDatasourceName", "Pyroscope (aks-gpu-dev)"),
    ("prometheusDatasourceName", "Azure Monitor Prometheus"),
    ("dashboardSource", "https://example.com/gpu/AdvancedGPUObservability.json"),
    ("dashboardSha256", "A" * 64),
    ("dashboardUid", "AdvancedGPUObservability"),
    ("dashboardProfileType", "process_cpu:malloc:bytes::"),
    ("dashboardProfileType", "process_cpu:malloc:bytes:process_cuda:bytes"),
    ("dashboardProfileType", "process_cuda:malloc:bytes:process_cuda:bytes"),
    ("grafanaTimeoutSeconds", "30"),
    ("production", "true"),
    ("deployerPrincipalType", "ServicePrincipal"),
    ("multiCluster", "true"),
    ("clusterStack", "acme/platform-aks/prod-eastus2"),
    ("grafanaStack", "shared-observability"),
]

BAD = [
    ("clusterName", "-aks", "AKS cluster name"),
    ("clusterName", "aks-", "AKS cluster name"),
    ("clusterName", "a" * 64, "AKS cluster name"),
    ("clusterName", "aks gpu", "AKS cluster name"),
    ("clusterResourceGroup", "rg.", "resource group"),
    ("clusterResourceGroup", "r" * 91, "resource group"),
    ("clusterResourceGroup", "rg/x", "resource group"),
    ("grafanaResourceGroup", "rg#1", "resource group"),
    ("monitorWorkspaceResourceGroup", "rg with space", "resource group"),
    ("grafanaName", "a", "Managed Grafana"),
    ("grafanaName", "1amg", "Managed Grafana"),
    ("grafanaName", "amg-", "Managed Grafana"),
    ("grafanaName", "a" * 24, "Managed Grafana"),
    ("grafanaName", "amg_gpu", "Managed Grafana"),
    ("monitorWorkspaceName", "amw", "Azure Monitor workspace"),
    ("monitorWorkspaceName", "-amw1", "Azure Monitor workspace"),
    ("monitorWorkspaceName", "a" * 45, "Azure Monitor workspace"),
    ("managedPrivateEndpointName", "p", "2-20 characters"),
    ("managedPrivateEndpointName", "1pe", "2-20 characters"),
    ("managedPrivateEndpointName", "a" * 21, "2-20 characters"),
    ("managedPrivateEndpointName", "pe_1", "2-20 characters"),
    ("managedPrivateEndpointName", "pe.1", "2-20 characters"),
    ("pyroscopeChartVersion", "", "semantic version"),
    ("pyroscopeChartVersion", "1.15", "semantic version"),
    ("pyroscopeChartVersion", "v1.15.0", "semantic version"),
    ("pyroscopeChartVersion", "^1.15.0", "semantic version"),
    ("pyroscopeChartVersion", "latest", "semantic version"),
    ("pyroscopeChartVersion", "01.15.0", "semantic version"),
    ("extensionVersion", "0.46", "semantic version"),
    ("privateLinkVisibility", "", "subscription GUIDs"),
    ("privateLinkVisibility", "* " + SUB_A, "subscription GUIDs"),
    ("privateLinkVisibility", f"{SUB_A},{SUB_B}", "subscription GUIDs"),
    ("privateLinkVisibility", "my-subscription", "subscription GUIDs"),
    ("privateLinkServiceName", "-pls", "private link service name"),
    ("privateLinkServiceName", "pls-", "private link service name"),
    ("privateLinkServiceName", "a" * 81, "private link service name"),
    ("privateLinkServiceResourceGroup", "rg.", "resource group"),
    ("privateLinkSubnet", "-snet", "subnet name"),
    ("privateLinkIpAddressCount", "0", "from 1 to 8"),
    ("privateLinkIpAddressCount", "9", "from 1 to 8"),
    ("privateLinkIpAddressCount", "two", "expected an integer"),
    ("extensionTimeoutSeconds", "0", "from 60 to 7200 seconds"),
    ("extensionTimeoutSeconds", "-5", "from 60 to 7200 seconds"),
    ("extensionTimeoutSeconds", "7201", "from 60 to 7200 seconds"),
    ("pyroscopeReleaseTimeoutSeconds", "3601", "from 60 to 3600 seconds"),
    ("pyroscopeReleaseTimeoutSeconds", "1.5", "expected an integer"),
    ("pyroscopeImageTag", "", "image tag"),
    ("pyroscopeImageTag", ".hidden", "image tag"),
    ("pyroscopeImageTag", "1.14.1 ", "image tag"),
    ("pyroscopeImageRepository", "grafana/pyroscope:1.15.0", "image repository"),
    ("pyroscopeImageRepository", "Grafana/Pyroscope", "image repository"),
    ("pyroscopeChart", "ghcr.io/grafana/helm-charts/pyroscope", "oci://"),
    ("pyroscopeChart", "http://grafana.github.io/helm-charts", "oci://"),
    ("kubeconfigCredentials", "root", "one of user, admin"),
    ("kubeloginMode", "password", "one of azurecli"),
    ("extensionName", "Inspektor-Gadget", "extension name"),
    ("extensionReleaseTrain", "", "release train"),
    ("extensionGpuObservability", "yes", "true or false"),
    ("extensionAzureMonitor", "TRUE", "true or false"),
    ("extensionAzureMonitor", "1", "true or false"),
    ("pyroscopeChart", "oci://ghcr.io/grafana/helm-charts", "ending in /pyroscope"),
    ("pyroscopeChart", "oci://ghcr.io/grafana/helm-charts/pyroscope:1.15.0", "ending in /pyroscope"),
    # A chart digest: 64 lowercase hex digits, on the chart itself; the version stays in pyroscopeChartVersion.
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope@sha256:{DIGEST.upper()}", "64 lowercase hex"),
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope@sha256:{DIGEST[:63]}", "64 lowercase hex"),
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope@sha256:{DIGEST}0", "64 lowercase hex"),
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope@sha512:{DIGEST * 2}", "64 lowercase hex"),
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope:1.15.0@sha256:{DIGEST}", "ending in /pyroscope"),
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope@{DIGEST}", "64 lowercase hex"),
    ("pyroscopeChart", f"https://grafana.github.io/helm-charts@sha256:{DIGEST}", "only an oci:// chart"),
    ("pyroscopeChartVersion", f"1.15.0@sha256:{DIGEST}", "semantic version"),
    ("pyroscopeImageTag", f"1.15.0@sha256:{DIGEST.upper()}", "64 lowercase hex"),
    ("pyroscopeImageTag", f"1.15.0@sha256:{DIGEST[:40]}", "64 lowercase hex"),
    ("pyroscopeImageTag", f"1.15.0@sha256:{DIGEST}ab", "64 lowercase hex"),
    ("pyroscopeImageTag", f"sha256:{DIGEST}", "image tag"),
    ("pyroscopeImageTag", f"@sha256:{DIGEST}", "image tag"),
    ("pyroscopeImageTag", f"1.15.0@{DIGEST}", "64 lowercase hex"),
    ("pyroscopeImageTag", f"1.15.0@sha512:{DIGEST * 2}", "64 lowercase hex"),
    ("pyroscopeImageTag", f"1.15.0@sha256:{DIGEST}@sha256:{DIGEST}", "64 lowercase hex"),
    ("pyroscopeImageRepository", f"grafana/pyroscope@sha256:{DIGEST}", "image repository"),
    ("connectionApprovalTimeoutSeconds", "59", "from 60 to 3600 seconds"),
    ("managedPrivateEndpointTimeoutSeconds", "3601", "from 60 to 3600 seconds"),
    ("privateLinkServiceTimeoutSeconds", "0", "from 60 to 3600 seconds"),
    ("grafanaPublicNetworkAccess", "enabled", "one of Enabled, Disabled"),
    ("pyroscopeDatasourceUid", "local pyroscope", "Grafana uid"),
    ("prometheusDatasourceUid", "a" * 41, "Grafana uid"),
    ("dashboardUid", "", "Grafana uid"),
    ("pyroscopeDatasourceName", " Pyroscope", "datasource name"),
    ("managedPrivateEndpointName", "1mpe", "managed private endpoint name"),
    ("assignMonitoringDataReader", "yes", "expected one of auto, true, false"),
    ("prometheusDatasourceName", " Prometheus", "datasource name"),
    ("dashboardSource", "http://example.com/d.json", "https:// URL or a file path"),
    ("dashboardSource", "", "https:// URL or a file path"),
    ("dashboardSource", "/etc/passwd", "relative to the project directory"),
    ("dashboardSource", "../shared/reference/x.json", "relative to the project directory"),
    ("dashboardSource", "dashboards/missing.json", "no file 'dashboards/missing.json' in the project directory"),
    ("deployerPrincipalType", "user", "one of auto, User, ServicePrincipal, Group"),
    ("dashboardSha256", "9c87339704d1c8b9", "sha256 digest"),
    ("dashboardSha256", "g" * 64, "sha256 digest"),
    ("dashboardProfileType", "process_cpu:malloc", "Pyroscope profile type ID name:type:unit:periodType:periodUnit"),
    ("dashboardProfileType", "foo:bar:baz::", "expected a GPU-memory profile type ID, sample type malloc and unit bytes"),
    ("dashboardProfileType", "process_cpu:malloc:bytes:process_cuda:bytes:x", "Pyroscope profile type ID"),
    ("dashboardProfileType", "process_cpu::bytes::", "Pyroscope profile type ID"),
    ("grafanaTimeoutSeconds", "29", "from 30 to 3600 seconds"),
    ("createGrafana", "yes", "true or false"),
    ("production", "prod", "true or false"),
    ("clusterStack", "acme/infra/prod/extra", "expected a stack name"),
    ("grafanaStack", "acme infra", "expected a stack name"),
    ("tags", "costCenter=1", "list of strings"),
    ("tags", '["costCenter"]', "key=value items"),
    ("tags", '["a/b=1"]', "key=value items"),
    ("tags", '[1]', "list of strings"),
]


def parse(**overrides):
    return config.parse({**VALID, **overrides})


def test_valid_minimal_config_takes_pulumi_yaml_defaults():
    cfg = parse()
    assert cfg.pyroscope_chart_version == "1.15.0"
    assert cfg.private_link_service_name == ""  # derived once the cluster is known (stack_inputs.for_cluster)
    assert cfg.private_link_visibility == "*"
    assert cfg.managed_private_endpoint_name == ""  # derived once the cluster is known (stack_inputs.for_cluster)
    assert cfg.assign_monitoring_data_reader == "auto" and cfg.assigns_monitoring_data_reader is True
    assert cfg.extension_release_train == "preview"
    assert cfg.extension_gpu_observability is True and cfg.extension_azure_monitor is True
    assert cfg.extension_timeout_seconds == 1800 and cfg.pyroscope_release_timeout_seconds == 600
    assert cfg.private_link_ip_address_count == 1


def test_config_is_frozen():
    cfg = parse()
    with pytest.raises(Exception):
        cfg.cluster_name = "other"  # type: ignore[misc]




def test_a_local_dashboard_file_is_accepted_with_its_digest_and_uid():
    """A project file as dashboardSource is checked when the config is read (sha256, JSON, uid), not after every
    other step has run; its bad forms are in tests/test_bad_input.py."""
    cfg = parse(dashboardSource=LOCAL_DASHBOARD, dashboardSha256=LOCAL_SHA256.upper())
    assert cfg.dashboard_source == LOCAL_DASHBOARD and cfg.dashboard_sha256 == LOCAL_SHA256.upper()


def test_the_dashboard_profile_type_defaults_to_the_published_panels_and_is_read_as_tools_hotspots_reads_it():
    """dashboardProfileType: the pinned dashboard's flame-graph ID by default (so the step uploads it unchanged),
    checked with stack.profile_types' own ID, not a copy of it."""
    from components.gpu_dashboard import PINNED_PROFILE_TYPE
    from stack import profile_types

    assert parse().dashboard_profile_type == profile_types.PUBLISHED == PINNED_PROFILE_TYPE
    assert config.PROFILE_TYPE_ID is profile_types.ID


@pytest.mark.parametrize("key,value", GOOD)
def test_good_values_are_accepted(key, value):
    cfg = parse(**{key: value})
    got = getattr(cfg, config.snake(key))
    assert str(got).lower() == value.lower() or got == int(value)


@pytest.mark.parametrize("key,value,expected", BAD)
def test_bad_values_fail_with_one_line_naming_the_key(key, value, expected):
    with pytest.raises(config.ConfigError) as caught:
        parse(**{key: value})
    message = str(caught.value)
    assert caught.value.key == key
    assert message.startswith(f"{key}: ")
    assert expected in message
    assert "\n" not in message


@pytest.mark.parametrize("key", sorted(VALID))
@pytest.mark.parametrize("value", [None, "", "   "])
def test_required_keys_missing_or_empty(key, value):
    raw = dict(VALID)
    if value is None:
        del raw[key]
    else:
        raw[key] = value
    with pytest.raises(config.ConfigError) as caught:
        config.parse(raw)
    assert str(caught.value).startswith(f"{key}: required")
    assert f"pulumi config set {key}" in str(caught.value)
    assert f"or set {config.REQUIRED_UNLESS[key]} to a stack that exports it" in str(caught.value)


def test_required_keys_may_come_from_a_stack_reference_later():
    cfg = config.parse({"clusterStack": "acme/infra/prod", "grafanaName": "amg", "grafanaResourceGroup": "rg",
                        "monitorWorkspaceName": "amw1", "monitorWorkspaceResourceGroup": "rg"})
    assert cfg.cluster_name == "" and cfg.cluster_stack == "acme/infra/prod"
    filled = config.with_values(cfg, {"clusterName": "aks-a", "clusterResourceGroup": "rg-a"}, "stack acme/infra/prod")
    assert config.check_required(filled).cluster_name == "aks-a"
    with pytest.raises(config.ConfigError, match=r"^clusterName: expected an AKS cluster name.*\(from stack acme/infra/prod\)$"):
        config.with_values(cfg, {"clusterName": "-bad", "clusterResourceGroup": "rg-a"}, "stack acme/infra/prod")
    set_here = config.parse({**VALID, "clusterStack": "acme/infra/prod"})
    assert config.with_values(set_here, {"clusterName": "other"}, "x").cluster_name == "aks-gpu-dev"  # a set key wins


def test_secret_keys_come_from_secret_config_and_secret_referenced_outputs():
    cfg = config.parse({**VALID, "clusterName": "", "clusterStack": "acme/infra/prod"}, secret_keys=["grafanaName"])
    assert cfg.secret_keys == {"grafanaName"}
    filled = config.with_values(cfg, {"clusterName": "aks-secret", "clusterResourceGroup": "rg-a"}, "stack x",
                                secret={"clusterName"})
    assert filled.secret_keys == {"grafanaName", "clusterName"}
    assert filled.secret_values == ("amg-gpu-dev", "aks-secret")  # longest first
    # A secret output that this stack's own (plain) setting overrides brings no secret in.
    kept = config.with_values(config.parse(VALID), {"clusterName": "other"}, "stack x", secret={"clusterName"})
    assert kept.secret_keys == frozenset() and kept.secret_values == ()


def test_a_secret_value_its_rule_refuses_is_not_printed():
    """`pulumi up` prints a ConfigError's line; the engine would not mask a value it knows only as config, so the
    line says [secret] where the rule would quote the value, from the stack's config or a referenced stack."""
    with pytest.raises(config.SecretValueError) as caught:
        config.parse({**VALID, "grafanaName": "amg_top_secret"}, secret_keys=["grafanaName"])
    assert "amg_top_secret" not in str(caught.value) and "(got [secret])" in str(caught.value)
    assert str(caught.value).startswith("grafanaName: expected an Azure Managed Grafana name")
    cfg = config.parse({**VALID, "clusterName": "", "clusterStack": "acme/infra/prod"})
    with pytest.raises(config.SecretValueError) as caught:
        config.with_values(cfg, {"clusterName": "-aks-top-secret"}, "stack acme/infra/prod", secret={"clusterName"})
    assert "aks-top-secret" not in str(caught.value) and "(got [secret])" in str(caught.value)
    with pytest.raises(config.ConfigError, match="'amg_plain'"):  # a plain value is quoted as before
        config.parse({**VALID, "grafanaName": "amg_plain"})


@pytest.mark.parametrize("written, passed", [("1.20", "1.2"), ("1.0", "1"), ("1e3", "1000"), ("2.50", "2.5")])
def test_the_program_refuses_a_yaml_number_the_cli_would_change_for_a_string_key(tmp_path, written, passed):
    """Under the real CLI too: the program reads its stack file (Pulumi.<stack>.yaml) for a number given for a string
    key, which the CLI passes on as Go's JSON text of it (config.go_json_number)."""
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(f"config:\n  aks-gpu-observability:extensionTimeoutSeconds: 900\n  pyroscopeImageTag: {written}\n")
    with pytest.raises(config.ConfigError) as caught:
        config.check_stack_file_numbers(path)
    assert str(caught.value) == (f'pyroscopeImageTag: Pulumi.t.yaml:3:22: {written} is a YAML number, which the Pulumi CLI '
                                 f'passes on as "{passed}"; quote it to keep it as written: pyroscopeImageTag: "{written}"')
    for fine in ('"1.20"', "2", "1.2"):  # quoted, or a number the CLI passes on as written
        path.write_text(f"config:\n  pyroscopeImageTag: {fine}\n")
        config.check_stack_file_numbers(path)
    config.check_stack_file_numbers(tmp_path / "Pulumi.missing.yaml")


def test_visibility_list_splits_subscriptions():
    cfg = parse(privateLinkVisibility=f"{SUB_A}  {SUB_B}")
    assert cfg.private_link_visibility_list == [SUB_A, SUB_B]


def test_every_declared_key_is_typed_described_and_mapped():
    declared = config.declared()
    # Every field mirrors a key, but secret_keys (which keys came in secret: not itself config).
    assert set(config.snake(k) for k in declared) == {f.name for f in fields(config.StackConfig)} - {"secret_keys"}
    for key, decl in declared.items():
        assert decl.get("type") in ("string", "integer", "boolean", "array"), key
        assert len(decl.get("description", "")) > 20, key
        assert key[0].islower() and "_" not in key and "-" not in key, f"{key} is not flat camelCase"


def test_required_keys_are_exactly_the_fixed_ones():
    # Declared with an empty default (the CLI would otherwise demand them even when a stack reference
    # supplies them); the program requires them unless clusterStack/grafanaStack is set.
    assert set(config.REQUIRED_UNLESS) == set(VALID)
    assert all(config.declared()[k]["default"] == "" for k in VALID)
    assert not [k for k, d in config.declared().items() if "default" not in d]


def test_fixed_defaults_from_design():
    declared = config.declared()
    assert declared["pyroscopeChartVersion"]["default"] == "1.15.0"
    # DESIGN §3 fixes pyroscope-pls; derived like the endpoint's name, since two clusters' PLS can meet in a shared group.
    assert declared["privateLinkServiceName"]["default"] == ""
    assert config.derived_private_link_service_name(parse(), "id") == "pyroscope-pls"
    assert declared["privateLinkVisibility"]["default"] == "*"
    # DESIGN §3 fixes pyroscope-mpe; issue 15 moves it behind "" (derive), since the CLI writes defaults out.
    assert declared["managedPrivateEndpointName"]["default"] == ""
    assert config.derived_names(parse(), "id")["managedPrivateEndpointName"] == "pyroscope-mpe"
    assert config.derived_names(parse(multiCluster="true"), "id")["managedPrivateEndpointName"] != "pyroscope-mpe"


def test_every_default_passes_its_own_rule():
    for key, decl in config.declared().items():
        if "default" in decl and key in config.RULES and key not in config.REQUIRED_UNLESS:
            value = config._typed(key, decl["type"], config.cli_value(decl["default"]))
            config.RULES[key](key, value)


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


def test_dev_stack_file_is_valid_and_holds_no_secrets():
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    values = document["config"]
    raw = {k.split(":", 1)[1]: str(v) for k, v in values.items() if k.startswith("aks-gpu-observability:")}
    config.parse(raw)
    assert not any(isinstance(v, dict) and "secure" in v for v in values.values())


def test_booleans_accept_what_pulumi_get_bool_accepts():
    assert parse(extensionAzureMonitor="True").extension_azure_monitor is True
    assert parse(extensionAzureMonitor="False").extension_azure_monitor is False


def test_unknown_project_keys_are_rejected_with_a_suggestion():
    config.check_known(["aks-gpu-observability:clusterName", "azure-native:location", "other:anything"])
    with pytest.raises(config.ConfigError) as caught:
        config.check_known(["aks-gpu-observability:extensionVerison"])
    assert str(caught.value) == (
        "extensionVerison: unknown config key (did you mean extensionVersion?); the keys are declared in Pulumi.yaml"
    )


def test_tags_parse_into_a_map_with_managed_by():
    cfg = parse(tags='["costCenter=1234", "note=a=b"]')
    assert cfg.tags == ("costCenter=1234", "note=a=b")
    assert cfg.tag_map == {"costCenter": "1234", "managed-by": "aks-gpu-observability", "note": "a=b"}
    assert parse().tags == () and parse().tag_map == {"managed-by": "aks-gpu-observability"}


def test_pls_names_are_per_cluster_wherever_two_clusters_can_meet():
    """Two clusters in one privateLinkServiceResourceGroup (or multiCluster stacks) must not claim one PLS name: each
    derives its own from its ARM id; in its own node resource group a cluster keeps the procedure's pyroscope-pls."""
    a = "/subscriptions/s/resourceGroups/rg-a/providers/Microsoft.ContainerService/managedClusters/aks-a"
    b = "/subscriptions/s/resourceGroups/rg-b/providers/Microsoft.ContainerService/managedClusters/aks-a"
    for settings in ({"privateLinkServiceResourceGroup": "rg-network"}, {"multiCluster": "true"}):
        names = {config.derived_private_link_service_name(parse(**settings), cluster) for cluster in (a, b)}
        assert len(names) == 2 and "pyroscope-pls" not in names, settings
        assert all(re.fullmatch(r"pyroscope-pls-[0-9a-f]{12}", n) and "aks-a" not in n for n in names)
        assert config.derived_private_link_service_name(parse(**settings), a.upper()) in names  # ARM ids ignore case
    assert config.derived_private_link_service_name(parse(), a) == config.derived_private_link_service_name(parse(), b) \
        == "pyroscope-pls"
    # A name the stack sets wins (stack_inputs.for_cluster fills only an empty key).
    from components.stack_inputs import for_cluster
    assert for_cluster(parse(privateLinkServiceName="my-pls", multiCluster="true"), a).private_link_service_name == "my-pls"
