"""Review 22 (adversarial): the Pyroscope NetworkPolicies / PLS NAT addresses and microservices mode, against upstream.

Failing tests are findings (the code is not fixed here); the tests marked "holds" confirm an assumption against the
upstream source. Real Helm from ``HELM_BIN`` (tests/support/helm.py ``helm``); the chart is the reference archive.
"""

from __future__ import annotations

import pathlib
import subprocess

import pytest
import yaml

from components.pyroscope import (
    MEMBERLIST_PORT, MODE_PATHS, PORT, SELECTOR_LABELS, WORKLOAD_IDENTITY_CLIENT_ID,
    WORKLOAD_IDENTITY_LABEL, network_policy_spec, pls_service_name,
)
from stack.specs import PRIVATE_LINK_POLICY
from components.pyroscope_storage import subject
from policy import rules
from tests.support import RELEASE, reference
from tests.support.helm import helm, helm_env
from tests.support.policy import check, persistent_release
from offline import program

MICRO = {"pyroscopeMode": "microservices"}


def _render(tmp_path, overrides: dict, extra_values: dict | None = None) -> tuple[dict, list[dict]]:
    inputs = program.run("dev", overrides).one(RELEASE).inputs
    tmp_path.mkdir(parents=True, exist_ok=True)
    files = [tmp_path / "values.yaml"]
    files[0].write_text(yaml.safe_dump(inputs["values"]))
    if extra_values:
        files.append(tmp_path / "extra.yaml")
        files[1].write_text(yaml.safe_dump(extra_values))
    chart = reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz")
    result = subprocess.run([helm(), "template", inputs["name"], str(chart), "-n", inputs["namespace"],
                             *[a for f in files for a in ("-f", str(f))]],
                            capture_output=True, text=True, env=helm_env(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    return inputs, [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _workloads(docs):
    return [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]


# ------------------------------------------------------------------------------------------------ findings


def test_review22_microservices_read_paths_the_pls_misses_are_the_documented_ones(tmp_path):
    """FINDING (medium). Upstream: chart pyroscope-1.15.0 ``templates/ingress.yaml`` (grafana/pyroscope tag
    pyroscope-1.15.0; the reference archive) routes, when ``pyroscope.components`` has more than one entry,
    ``/settings.v1.SettingsService/`` to ``<fullname>-tenant-settings`` and ``/adhocprofiles.v1.AdHocProfileService/`` to
    ``<fullname>-ad-hoc-profiles``; only ``/``, ``/querier.v1.QuerierService/``, ``/render`` and ``/render-diff`` go to
    the query-frontend. grafana/pyroscope v1.15.0 (38a40a93) ``pkg/pyroscope/pyroscope.go`` module deps:
    ``QueryFrontend: {OverridesExporter, API, MemberlistKV, UsageReport, Version, FeatureFlags}`` (no TenantSettings,
    no AdHocProfiles), and ``modules_experimental.go`` ``initQueryFrontendV1`` registers only the querier, Pyroscope
    render and VCS handlers. Grafana's Profiles Drilldown reads ``POST /settings.v1.SettingsService/Get`` through the
    datasource (its ``SettingsApiClient``).

    Ours: in microservices mode the PLS (Grafana's only way in, the datasource URL ``http://<MPE IP>:4040``) fronts
    ``pyroscope-query-frontend`` alone (``components.pyroscope._microservices``), so every settings / ad-hoc-profile
    call Grafana makes gets a 404 from the query-frontend. In single-binary mode the same calls work (target ``all``).
    The test renders the chart's own ingress with our values: every read path it routes must land on the Service
    the PLS fronts."""
    _, docs = _render(tmp_path, MICRO, {"ingress": {"enabled": True, "hosts": ["pyroscope.example"]}})
    ingress = next(d for d in docs if d["kind"] == "Ingress")
    write_paths = {"/push.v1.PusherService/", "/ingest"}  # the exporter's, through the stack's Service pyroscope
    routed = {p["path"]: p["backend"]["service"]["name"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}
    wrong = {path: svc for path, svc in routed.items() if path not in write_paths and svc != pls_service_name("microservices")}
    # Kept as a known gap (one PLS fronts one Service; a path-routing proxy is not deployed): the paths missed are exactly
    # the tenant settings and ad-hoc profiles, and docs/how-it-works.md says so.
    assert wrong == {"/settings.v1.SettingsService/": "pyroscope-tenant-settings",
                     "/adhocprofiles.v1.AdHocProfileService/": "pyroscope-ad-hoc-profiles"}, wrong
    docs = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "how-it-works.md").read_text()
    assert "Known gap (microservices only): two read paths stay out of Grafana's reach" in docs
    assert all(path in docs for path in wrong)


@pytest.mark.parametrize("overrides", [{"privateLinkIpAddressCount": "2"}, {"privateLinkSubnet": "snet-pls"}],
                         ids=["ip-address-count", "pls-subnet"])
def test_review22_nat_addresses_are_read_again_when_the_pls_ip_configurations_change(overrides):
    """FINDING (medium). Upstream: kubernetes-sigs/cloud-provider-azure ``pkg/provider/azure_privatelinkservice.go``
    @7b31c76c ``reconcilePLSIpConfigs``: when the number of IP configurations differs from
    ``azure-pls-ip-configuration-ip-address-count``, or a configuration's subnet differs from
    ``azure-pls-ip-configuration-subnet``, ``changed`` is set and the cloud provider rebuilds *all* IP configurations
    (``-dynamic-<i>`` ones with no ``PrivateIPAddress``: ARM allocates new ones), asynchronously, after the Service
    update Helm makes. The PLS name does not change.

    Ours: the NAT NetworkPolicy ``pyroscope-private-link`` takes its addresses from ``getPrivateLinkService`` issued
    after the step ``grafana-private-link-wait-for-pls``, whose inputs/triggers are only the PLS name, resource group,
    owner and scope. A change of ``privateLinkIpAddressCount`` or ``privateLinkSubnet`` upgrades the release in place
    (neither is in ``replace_on_changes``), leaves the wait unchanged (a same step, nothing waits for the cloud
    provider's reconcile) and the lookup reads the PLS's *old* configurations (or a half-reconciled one): the policy
    keeps the old /32s, Grafana's connections from the new NAT IPs are dropped, and ``pulumi up`` reports success.
    The wait (the step the lookup follows) must be a new step when the PLS's IP configurations are asked to change."""
    base = program.run("dev", {}).named("grafana-private-link-wait-for-pls").inputs
    changed = program.run("dev", overrides).named("grafana-private-link-wait-for-pls").inputs
    assert changed != base, "the PLS's IP configurations change, but the step the NAT-address lookup follows does not"


def test_review22_persistence_rule_not_fooled_by_a_storage_backend_flag():
    """FINDING (low). Upstream: grafana/pyroscope v1.15.0 ``pkg/cfg/dynamic.go`` ``DynamicUnmarshal``: defaults, the
    config file, dynamic config, the config file again, then "Load the flags again, this will supersede anything set
    from config file with flags from the command line"; ``pkg/cfg/cfg_test.go`` ``TestParse`` asserts a flag beats the
    YAML value. ``storage.backend`` is a flag (``pkg/objstore/client/config.go`` ``RegisterFlagsWithPrefix``), and chart
    1.15.0 turns ``pyroscope.extraArgs`` into ``-key=value`` container args (``deployments-statefulsets.yaml``).

    Ours: ``policy/rules.py`` ``_pyroscope_not_persistent`` accepts microservices mode as persistent when
    ``structuredConfig.storage.backend`` is ``azure``, without looking at ``extraArgs``: with
    ``extraArgs: {storage.backend: filesystem}`` Pyroscope stores blocks on each pod's emptyDir and the mandatory
    production rule passes."""
    policy = rules.pyroscope_persistent_in_production
    props = persistent_release({"enabled": False})
    props["values"]["pyroscope"]["components"] = {"distributor": {"kind": "Deployment"}, "ingester": {"kind": "StatefulSet"}}
    props["values"]["pyroscope"]["structuredConfig"] = {"storage": {"backend": "azure", "azure": {"account_name": "a"}}}
    props["values"]["pyroscope"]["extraArgs"] = {"storage.backend": "filesystem"}
    assert len(check(policy, rules.RELEASE, props, production=True, stack="prod-eu")) == 1


def test_review22_microservices_without_ingester_volume_is_not_persistent_in_production():
    """FINDING (low). Upstream: grafana/pyroscope v1.15.0 ``pkg/phlaredb/phlaredb.go``: the ingester keeps its head in
    ``-pyroscopedb.data-path`` (``./data``, i.e. ``/data``, the chart's volume ``data``) and cuts a block only after
    ``-pyroscopedb.max-block-duration`` (default 1h) before it is shipped to the bucket; chart 1.15.0 makes ``data`` an
    emptyDir unless ``persistence.enabled`` (``templates/deployments-statefulsets.yaml``).

    Ours: ``pyroscopePersistence: false`` with ``pyroscopeMode: microservices`` gives the ingesters
    ``persistence.enabled: false`` and the mandatory ``pyroscope-persistent-in-production`` rule passes (backend azure),
    although an ingester restart loses up to an hour of every tenant's profiles, the loss the rule exists to stop."""
    found = {v.policy for v in mock_engine_policy({"production": "true", **MICRO, "pyroscopePersistence": "false"})}
    assert "pyroscope-persistent-in-production" in found


def mock_engine_policy(overrides):
    from offline import policy_check

    return policy_check.evaluate(program.run("dev", overrides))


def test_review22_grafana_datasource_waits_for_the_nat_network_policy():
    """FINDING (low). Upstream: Kubernetes API reference, NetworkPolicy (k8s.io/api ``networking/v1/types.go``
    ``NetworkPolicySpec.podSelector``/``ingress``): a pod selected by any policy admits only the union of their
    ingress rules. ``gadget/pyroscope`` selects Pyroscope's pods from the start (it reads only the namespace) and
    admits no Grafana traffic; ``pyroscope-private-link`` is the only policy that does.

    Ours: the Grafana datasource (``grafana-datasources-pyroscope``, the first thing that sends Grafana to Pyroscope)
    depends on the refresh of the MPE only; nothing orders it (or the stack's ``pyroscope_url`` output) after the NAT
    policy, so Grafana can be pointed at Pyroscope while every connection through the PLS is still refused, and a
    failed NAT policy does not hold the datasource back."""
    p = program.run("dev", {})
    by_urn = {r.urn: r for r in p.resources}

    def closure(urn, seen=None):
        seen = set() if seen is None else seen
        resource = by_urn.get(urn)
        for dep in (resource.dependencies if resource else []):
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    datasource = p.named("grafana-datasources-pyroscope")
    assert p.named("grafana-private-link-nat-network-policy").urn in closure(datasource.urn)


# ------------------------------------------------------------------------------------------------ holds


def test_review22_holds_azure_bucket_gets_workload_identity_from_account_and_container_only():
    """HOLDS. grafana/pyroscope v1.15.0 ``pkg/objstore/providers/azure/bucket_client.go`` copies the config into
    thanos-io/objstore ``azure.DefaultConfig`` (go.mod pin v0.0.0-20250813080715-4e5fd4289b50; ``Endpoint:
    "blob.core.windows.net"``, kept when ``endpoint_suffix`` is empty); thanos ``providers/azure/helpers.go``
    ``getTokenCredential`` @4e5fd428 uses ``azidentity.NewDefaultAzureCredential(nil)`` when no client secret and no
    ``user_assigned_id``; ``validate`` needs only the account and container names. So the values must hold exactly
    those two and no key, connection string, secret, ``user_assigned_id`` or endpoint."""
    values = program.run("dev", MICRO).one(RELEASE).inputs["values"]["pyroscope"]
    storage = values["structuredConfig"]["storage"]
    assert storage["backend"] == "azure"
    assert set(storage["azure"]) == {"account_name", "container_name"}
    assert not any(k.startswith("storage.azure") for k in values["extraArgs"])


def test_review22_holds_every_pod_gets_the_workload_identity_label_and_the_sa_its_client_id(tmp_path):
    """HOLDS. Azure/azure-workload-identity: the webhook mutates pods labelled ``azure.workload.identity/use: "true"``
    (``objectSelector``) using the service account's ``azure.workload.identity/client-id``; chart 1.15.0 puts
    ``extraLabels`` on every pod template and ``serviceAccount.annotations`` on the SA ``pyroscope`` (real render), the
    subject of the federated credential."""
    _, docs = _render(tmp_path, MICRO)
    sa = next(d for d in docs if d["kind"] == "ServiceAccount")
    assert subject() == f"system:serviceaccount:gadget:{sa['metadata']['name']}"
    assert WORKLOAD_IDENTITY_CLIENT_ID in sa["metadata"]["annotations"]
    for w in _workloads(docs):
        pod = w["spec"]["template"]
        assert pod["metadata"]["labels"][WORKLOAD_IDENTITY_LABEL] == "true", w["metadata"]["name"]
        assert pod["spec"]["serviceAccountName"] == sa["metadata"]["name"]


def test_review22_holds_network_policy_admits_every_container_port_between_components(tmp_path):
    """HOLDS. grafana/pyroscope v1.15.0 ``pkg/pyroscope/modules.go`` registers every v1 ring (distributor, ingester,
    store-gateway, compactor, query-scheduler) with ``Server.HTTPListenPort`` (4040; only the v2 segment writer uses
    the gRPC port, not enabled); memberlist is dskit's TCP transport on 7946 (the chart's ``pyroscope-memberlist``
    Service, TCP). The rendered components expose only those ports, and the policy admits both from Pyroscope's pods."""
    _, docs = _render(tmp_path, MICRO)
    ports = {(p["containerPort"], p.get("protocol", "TCP")) for w in _workloads(docs)
             for c in w["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
    assert ports == {(PORT, "TCP"), (MEMBERLIST_PORT, "TCP")}
    own = network_policy_spec([])["ingress"][-1]
    assert {(p["port"], p["protocol"]) for p in own["ports"]} == ports
    for w in _workloads(docs):
        labels = w["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in SELECTOR_LABELS.items())


def test_review22_holds_write_path_service_selects_the_distributors_http_port(tmp_path):
    """HOLDS. Chart 1.15.0: the distributor's pods carry ``app.kubernetes.io/component: distributor`` and a container
    port named ``http2`` (4040); ``pkg/api/api.go`` ``RegisterDistributor`` serves ``/ingest`` and push there."""
    p = program.run("dev", MICRO)
    svc = p.named("pyroscope-write-path").inputs["spec"]
    _, docs = _render(tmp_path, MICRO)
    dist = next(w for w in _workloads(docs) if w["metadata"]["name"] == "pyroscope-distributor")
    labels = dist["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in svc["selector"].items())
    names = {p["name"] for c in dist["spec"]["template"]["spec"]["containers"] for p in c["ports"]}
    assert svc["ports"][0]["targetPort"] in names


def test_review22_holds_mode_path_contains_the_providers_diff_path():
    """HOLDS. pulumi/pulumi v3.230.0 ``step_generator.go`` ``applyReplaceOnChanges`` turns a detailed-diff entry into a
    replacement when a ``replaceOnChanges`` path ``Contains`` it (a prefix); pulumi-kubernetes' Release diff
    (``helm_release.go`` ``Diff`` at 94977969) diffs the inputs, so adding or removing ``values.pyroscope.components``
    (or any key under it) is reported under that path. ``findResourcesReplacedWith`` ranges over ``olds`` too, so the
    write-path Service, gone from the program on the way back, is deleted before the release."""
    for mode in ("single-binary", "microservices"):
        opts = program.run("dev", {"pyroscopeMode": mode}).one(RELEASE).options
        assert set(MODE_PATHS) <= set(opts["replaceOnChanges"])
    assert PRIVATE_LINK_POLICY == "pyroscope-private-link"
