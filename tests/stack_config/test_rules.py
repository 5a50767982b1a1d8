"""stack_config/rules.py: each key's good and bad values, the required keys, and the checks across keys."""

from __future__ import annotations

import json

import pytest

from stack_config import cli_values, load, rules, schema
from stack_config.schema import ConfigError
from tests.support.config_values import DIGEST, LOCAL_DASHBOARD, LOCAL_SHA256, SUB_A, SUB_B, VALID, parse

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
    ("pyroscopeChartVersion", "1.16.0-rc.1+build.5"),
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
    ("pyroscopeTerminationGracePeriodSeconds", "30"),
    ("pyroscopeIngestionRateMb", "0"),
    ("pyroscopeIngestionRateMb", "64"),
    ("pyroscopeIngestionBurstMb", "1024"),
    ("pyroscopeTerminationGracePeriodSeconds", "3600"),
    ("pyroscopeImageTag", "1.14.1"),
    ("pyroscopeImageRepository", "myregistry.azurecr.io/grafana/pyroscope"),
    ("pyroscopeImageRepository", "localhost:5000/pyroscope"),
    ("pyroscopeImageTag", "v1.15.0"),
    ("pyroscopeChart", "oci://ghcr.io/grafana/helm-charts/pyroscope"),
    ("pyroscopeChart", "oci://myacr.azurecr.io/helm/pyroscope"),
    ("pyroscopeChart", "https://grafana.github.io/helm-charts"),
    # Digests (docs/how-it-works.md "Pins that cannot move"): the chart by an OCI digest, the image by tag@digest.
    ("pyroscopeChart", f"oci://ghcr.io/grafana/helm-charts/pyroscope@sha256:{DIGEST}"),
    ("pyroscopeChart", f"oci://myacr.azurecr.io:443/helm/pyroscope@sha256:{DIGEST}"),
    ("pyroscopeImageTag", f"1.15.0@sha256:{DIGEST}"),
    ("pyroscopeImageTag", f"1.15.0-custom@sha256:{DIGEST}"),
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
    ("pyroscopeTerminationGracePeriodSeconds", "0", "from 30 to 3600 seconds"),
    ("pyroscopeIngestionRateMb", "1025", "from 0 to 1024 MB per second (0: derived)"),
    ("pyroscopeIngestionBurstMb", "-1", "from 0 to 1024 MB (0: derived)"),
    ("pyroscopeIngestionRateMb", "4.5", "expected an integer"),
    ("pyroscopeTerminationGracePeriodSeconds", "29", "from 30 to 3600 seconds"),
    ("pyroscopeTerminationGracePeriodSeconds", "3601", "from 30 to 3600 seconds"),
    ("pyroscopeTerminationGracePeriodSeconds", "10m", "expected an integer"),
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
    ("dashboardSource", "../elsewhere/x.json", "relative to the project directory"),
    ("dashboardSource", "dashboards/missing.json", "no file 'dashboards/missing.json' in the project directory"),
    ("deployerPrincipalType", "user", "one of auto, User, ServicePrincipal, Group"),
    ("dashboardSha256", "9c87339704d1c8b9", "sha256 digest"),
    ("dashboardSha256", "g" * 64, "sha256 digest"),
    ("dashboardProfileType", "process_cpu:malloc", "Pyroscope profile type ID name:type:unit:periodType:periodUnit"),
    ("dashboardProfileType", "foo:bar:baz::",
     "expected a GPU-memory profile type ID, sample type malloc and unit bytes"),
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


@pytest.mark.parametrize("key,value", GOOD)
def test_good_values_are_accepted(key, value):
    cfg = parse(**{key: value})
    got = getattr(cfg, schema.snake(key))
    got = " ".join(got) if key == "privateLinkVisibility" else got  # parsed into a tuple of its items
    assert str(got).lower() == value.lower() or got == int(value)


@pytest.mark.parametrize("key,value,expected", BAD)
def test_bad_values_fail_with_one_line_naming_the_key(key, value, expected):
    with pytest.raises(schema.ConfigError) as caught:
        parse(**{key: value})
    message = str(caught.value)
    assert caught.value.key == key
    assert message.startswith(f"{key}: ")
    assert expected in message
    assert "\n" not in message


def test_a_local_dashboard_file_is_accepted_with_its_digest_and_uid():
    """A project file as dashboardSource is checked when the config is read (sha256, JSON, uid), not after every
    other step has run; its bad forms are in tests/cli/test_bad_input.py."""
    cfg = parse(dashboardSource=LOCAL_DASHBOARD, dashboardSha256=LOCAL_SHA256.upper())
    assert cfg.dashboard_source == LOCAL_DASHBOARD and cfg.dashboard_sha256 == LOCAL_SHA256.upper()


def test_the_dashboard_profile_type_defaults_to_the_published_panels_and_is_read_as_tools_hotspots_reads_it():
    """dashboardProfileType: the pinned dashboard's flame-graph ID by default (so the step uploads it unchanged),
    checked with stack.profile_types' own ID, not a copy of it."""
    from components.gpu_dashboard import PINNED_PROFILE_TYPE
    from stack import profile_types

    assert parse().dashboard_profile_type == profile_types.PUBLISHED == PINNED_PROFILE_TYPE
    assert rules.PROFILE_TYPE_ID is profile_types.ID


def test_required_keys_are_exactly_the_fixed_ones():
    # Declared with an empty default (the CLI would otherwise demand them even when a stack reference
    # supplies them); the program requires them unless clusterStack/grafanaStack is set.
    assert set(rules.REQUIRED_UNLESS) == set(VALID)
    assert all(schema.declared()[k]["default"] == "" for k in VALID)
    assert not [k for k, d in schema.declared().items() if "default" not in d]


def test_every_default_passes_its_own_rule():
    for key, decl in schema.declared().items():
        if "default" in decl and key in rules.RULES and key not in rules.REQUIRED_UNLESS:
            value = load._typed(key, decl["type"], cli_values.cli_value(decl["default"]))
            rules.RULES[key](key, value)


@pytest.mark.parametrize("bad", ["10.0.0.1/8", "10.0.0.0", "fd00::/300", "any"])
def test_allowed_cidrs_must_be_networks(plan, bad):
    with pytest.raises(ConfigError, match="^pyroscopeAllowedCidrs: expected address ranges in CIDR notation"):
        plan(paths={"pyroscopeAllowedCidrs[0]": bad})


@pytest.mark.parametrize("everything", ["0.0.0.0/0", "::/0"])
def test_allowed_cidrs_refuse_a_range_that_admits_every_address(plan, everything):
    """0.0.0.0/0 passed the CIDR check and made the NetworkPolicy admit every source (a failing input found once)."""
    with pytest.raises(ConfigError, match="^pyroscopeAllowedCidrs: '.*' admits every address"):
        plan(paths={"pyroscopeAllowedCidrs[0]": everything})


def test_microservices_refuses_single_binary_resources(plan):
    """pyroscopeResources sizes the single binary's pod only; in microservices mode it was silently ignored (the failing
    input of a README walk-through): now one line naming the key, before any resource."""
    from stack_config.schema import ConfigError

    with pytest.raises(ConfigError) as caught:
        plan(pyroscopeMode="microservices", paths={"pyroscopeResources[0]": "requests.cpu=2"})
    assert caught.value.key == "pyroscopeResources" and "\n" not in str(caught.value)
    assert "applies to the single binary only" in str(caught.value)
    assert plan(paths={"pyroscopeResources[0]": "requests.cpu=2"})  # single binary: taken


def test_storage_account_sku_refuses_premium_or_typos(plan):
    from stack_config.schema import ConfigError

    with pytest.raises(ConfigError, match="^pyroscopeStorageSku: "):
        plan(pyroscopeMode="microservices", pyroscopeStorageSku="Standard_ZRSS")


@pytest.mark.parametrize("chart,image,key,message", [
    # Chart 2.x passes -architecture.storage=v1, a flag no 1.x image knows: the pod would not start.
    ("2.0.0", "1.15.0", "pyroscopeChartVersion",
     "2.0.0 is chart 2.x but pyroscopeImageTag 1.15.0 is Pyroscope 1.x; set both to the same major"),
    # A 2.x image under chart 1.x starts on its default v1-v2-dual storage: a quiet move off the stack's volume.
    ("1.15.0", "2.0.1", "pyroscopeImageTag",
     "2.0.1 is Pyroscope 2.x but pyroscopeChartVersion 1.15.0 is chart 1.x; set both to the same major"),
    ("1.15.0", f"v2.0.1@sha256:{DIGEST}", "pyroscopeImageTag", "is Pyroscope 2.x but pyroscopeChartVersion"),
    ("1.15.0", "weekly-f123", "pyroscopeImageTag", "expected a version tag such as 1.15.0"),
    ("3.0.0", "3.0.0", "pyroscopeChartVersion", "chart 3.0.0 is major 3; this stack's values are written for majors"),
])
def test_a_chart_and_an_image_of_different_majors_are_refused(plan, chart, image, key, message):
    """Renovate bumped the chart alone, or a tag was set by hand: one line naming the key, before any resource."""
    with pytest.raises(ConfigError) as caught:
        plan(pyroscopeChartVersion=chart, pyroscopeImageTag=image)
    assert caught.value.key == key and "\n" not in str(caught.value) and message in str(caught.value)


def test_a_move_to_pyroscope_2_takes_both_keys():
    cfg = parse(pyroscopeChartVersion="2.0.0", pyroscopeImageTag="2.0.1")
    assert (cfg.pyroscope_chart_version, cfg.pyroscope_image_tag) == ("2.0.0", "2.0.1")


# --- grafanaViewers -----------------------------------------------------------------------------------------------
GROUP_ID, USER_ID = "0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"


def refused_registering_nothing(monkeypatch, plan, paths: dict) -> ConfigError:
    """The ConfigError of the dev stack's program with ``paths`` set (``--set-path``), and that it came before the
    program registered any resource (the engine saw the stack's own registration only)."""
    from offline import program

    monitors = []
    original = program.RecordingMonitor

    def recording(mocks):
        monitors.append(original(mocks))
        return monitors[-1]

    monkeypatch.setattr(program, "RecordingMonitor", recording)
    with pytest.raises(ConfigError) as caught:
        plan(paths=paths)
    assert [[r.type for r in m.recorded] for m in monitors] == [["pulumi:pulumi:Stack"]]
    return caught.value


@pytest.mark.parametrize("paths, key, expected", [
    ({"grafanaViewers[0]": "ml-engineers"}, "grafanaViewers[0]",
     "expected a Microsoft Entra ID object id (a GUID), optionally as User:<id>, Group:<id> or ServicePrincipal:<id> "
     "(got 'ml-engineers')"),
    ({"grafanaViewers[0]": GROUP_ID, "grafanaViewers[1]": f"Owner:{USER_ID}"}, "grafanaViewers[1]",
     f"(got 'Owner:{USER_ID}')"),
    ({"grafanaViewers[0]": f" {GROUP_ID}"}, "grafanaViewers[0]", f"(got ' {GROUP_ID}')"),
    ({"grafanaViewers[0]": f"user:{USER_ID}"}, "grafanaViewers[0]", "optionally as User:<id>"),
    # The same principal twice, even in another case or with a type: ARM holds one assignment of a role per principal.
    ({"grafanaViewers[0]": GROUP_ID, "grafanaViewers[1]": USER_ID, "grafanaViewers[2]": f"Group:{GROUP_ID.upper()}"},
     "grafanaViewers[2]", f"object id {GROUP_ID} is grafanaViewers[0] already; expected each principal once"),
])
def test_a_bad_grafana_viewer_is_one_line_naming_its_item_before_anything_registers(monkeypatch, plan, paths, key,
                                                                                    expected):
    """A typo in the list that gives ML engineers Grafana must stop `pulumi up` before any resource, on one line that
    says which item and what it should be, not fail at ARM half way (or assign the wrong principal)."""
    error = refused_registering_nothing(monkeypatch, plan, paths)
    assert error.key == key and "\n" not in str(error)
    assert str(error).startswith(f"{key}: ") and expected in str(error)


def test_grafana_viewers_parse_to_lower_case_object_ids_and_their_principal_type():
    """A bare object id is a group (the type ARM is told); Type:<id> names it; object ids as Entra ID writes them."""
    robot = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
    cfg = parse(grafanaViewers=json.dumps([GROUP_ID.upper(), f"User:{USER_ID}", f"ServicePrincipal:{robot}"]))
    assert cfg.grafana_viewers == ((GROUP_ID, "Group"), (USER_ID, "User"), (robot, "ServicePrincipal"))
    assert parse().grafana_viewers == ()
