"""Review 2 of the review-22 fixes (5f3fd7f) and the fleet fixes (76ffc2a): failing tests, one per finding.

Each test names its upstream evidence; the Helm ones also render chart 1.15.0 (tests/reference, .ci/fetch-reference)
with the real Helm (skipped without it, tests/support/helm.py helm)."""

from __future__ import annotations

import subprocess

import yaml

from policy import rules
from tests.support import scenarios
from tests.support import reference
from tests.support.scenarios import PLS_ID, SHOW, WAIT_ENV, Scenario, ip_configuration, pls
from tests.support.helm import helm, helm_env
from tests.support.policy import check, persistent_release

PRODUCTION = {"production": True, "stack": "prod-eu"}


def _render_chart(tmp_path, values: dict) -> list[dict]:
    """helm template of chart 1.15.0 with ``values`` (the Release's ``values``)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "v.yaml").write_text(yaml.safe_dump(values))
    chart = reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz")
    done = subprocess.run([helm(), "template", "pyroscope", str(chart), "-n", "gadget", "-f", str(tmp_path / "v.yaml")],
                          capture_output=True, text=True, env=helm_env(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _data_volume(docs: list[dict], component: str) -> str:
    """How the workload of ``component`` gets volume ``data``: emptyDir, claim or volumeClaimTemplate."""
    (workload,) = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")
                   and (d["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == component]
    if any(t["metadata"]["name"] == "data" for t in workload["spec"].get("volumeClaimTemplates") or []):
        return "volumeClaimTemplate"
    (volume,) = [v for v in workload["spec"]["template"]["spec"]["volumes"] if v["name"] == "data"]
    return "emptyDir" if "emptyDir" in volume else "claim"


def _args(docs: list[dict], component: str) -> list[str]:
    (workload,) = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")
                   and (d["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == component]
    return workload["spec"]["template"]["spec"]["containers"][0]["args"]


# ------------------------------------------------------------------------------------------------ 1. the PLS wait


def test_rev2_pls_wait_returns_on_the_old_subnets_nat_ips_after_privatelinksubnet_is_cleared(tmp_path):
    """SEVERITY: medium (Grafana shut out of Pyroscope after a config change, until the next pulumi up).

    Upstream: kubernetes-sigs/cloud-provider-azure ``pkg/provider/azure_privatelinkservice.go`` @ 7b31c76c:
    ``getPLSSubnetName`` falls back to ``azure-load-balancer-internal-subnet``, then ``nil``, and
    ``reconcilePLSIpConfigs`` then uses ``az.SubnetName`` (the cloud config's subnet, the one the internal load
    balancer's frontend is in, README: "empty = the load balancer's subnet") and rebuilds every configuration whose
    ``subnet.id`` differs (``changed = true``), dynamic ones with new addresses.

    Ours: privateLinkSubnet "snet-pls" -> "" changes the wait's environment (PLS_SUBNET ""), so the wait runs again, as
    designed for exactly this rebuild. But ``as_annotated`` returns 0 as soon as PLS_SUBNET is empty: the PLS still
    carries the old configuration in snet-pls (the cloud provider reconciles the Service in its own time), so the wait
    returns at once, the lookup reads 10.225.8.4, the NAT NetworkPolicy admits only it, and the cloud provider then
    moves the PLS to the node subnet with a new address that nothing admits. The wait must not accept
    configurations outside the subnet the cloud provider will use (with no PLS_SUBNET: the internal load balancer
    frontend's subnet, which it can read from the PLS's ``loadBalancerFrontendIpConfigurations[0].id``)."""
    frontend = {"id": scenarios.FRONTEND, "name": scenarios.FRONTEND.rsplit("/", 1)[-1],
                "privateIPAddress": "10.224.0.40", "privateIPAllocationMethod": "Dynamic",
                "subnet": {"id": f"/subscriptions/{scenarios.SUB}/resourceGroups/rg-aks-gpu-dev/providers/"
                                 "Microsoft.Network/virtualNetworks/vnet-aks/subnets/snet-aks"}}
    scenario = Scenario(
        "rev2-pls-subnet-cleared", "wait_private_link_service.sh", {**WAIT_ENV, "PLS_SUBNET": ""},
        [{"match": SHOW, "responses": [pls(ip_configurations=[ip_configuration("10.225.8.4", "snet-pls")]),
                                        pls(ip_configurations=[ip_configuration("10.224.0.9", "snet-aks")])]},
         # However the fix reads the load balancer frontend's subnet, answer it (az network lb frontend-ip show,
         # az resource show --ids <frontend id>, az network lb show).
         {"match": ["network", "lb", "frontend-ip", "show"], "responses": [{"json": frontend}]},
         {"match": ["resource", "show"], "responses": [{"json": {**frontend, "properties": frontend}}]},
         {"match": ["network", "lb", "show"],
          "responses": [{"json": {"id": scenarios.LB_SCOPE + "kubernetes-internal", "frontendIPConfigurations": [frontend]}}]}],
        stdout=PLS_ID + "\n")
    result = scenarios.run(scenario, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == PLS_ID + "\n"
    assert result.count(0) == 2, ("the wait accepted the NAT IP configuration still in the old subnet snet-pls",
                                  result.stderr)


# ------------------------------------------------------------------------------------------------ 2. the persistence rule


def test_rev2_existing_claim_without_enabled_is_an_emptydir_yet_passes_the_production_rule(tmp_path):
    """SEVERITY: medium (a mandatory production rule passes a release that loses every profile on a restart).

    Upstream: chart pyroscope 1.15.0 ``templates/deployments-statefulsets.yaml``:
    ``{{- if not $persistence.enabled }} - name: data emptyDir: {}`` comes *before* ``else if
    $persistence.existingClaim``: an ``existingClaim`` is mounted only when ``enabled`` is true (values.yaml's
    default is ``enabled: false``). Rendered below with Helm.

    Ours: ``policy/pyroscope_production.py`` ``_volume_enabled`` takes ``bool(persistence.get("existingClaim"))`` alone as a volume
    (its docstring: "unless persistence.enabled (or an existingClaim) is set"), and tests/policy/test_rules.py
    ``test_pyroscope_persistent_in_production`` asserts ``{"existingClaim": "pv"}`` passes."""
    persistence = {"enabled": False, "existingClaim": "pyroscope-data"}
    docs = _render_chart(tmp_path / "render", {"pyroscope": {"persistence": persistence}})
    assert _data_volume(docs, "all") == "emptyDir"  # the chart: no claim
    props = persistent_release(persistence)
    assert len(check(rules.pyroscope_persistent_in_production, rules.RELEASE, props, **PRODUCTION)) == 1
    # Without enabled at all (the chart's default false) the same.
    assert len(check(rules.pyroscope_persistent_in_production, rules.RELEASE,
                     persistent_release({"existingClaim": "pyroscope-data"}), **PRODUCTION)) == 1


def _micro(props: dict, ingester: dict, extra: dict | None = None) -> dict:
    single = props["values"]["pyroscope"]
    single["components"] = {"distributor": {"kind": "Deployment"}, "querier": {"kind": "Deployment"},
                            "ingester": {"kind": "StatefulSet", **ingester}}
    single["extraArgs"] = {"storage.backend": "azure", "storage.azure.account-name": "st"}
    single.update(extra or {})
    return props


def test_rev2_an_ingesters_own_extraargs_backend_filesystem_passes_the_production_rule(tmp_path):
    """SEVERITY: medium (mandatory rule fooled: the ingesters write their blocks to their own disks, never the bucket,
    so the queriers and store-gateways never see them and a lost disk loses them).

    Upstream: chart 1.15.0 ``templates/deployments-statefulsets.yaml``: ``$extraArgs := mustMergeOverwrite (deepCopy
    .Values.pyroscope.extraArgs) ($cfg.extraArgs | default dict)``: a component's ``extraArgs`` override the global
    ones, one ``-key=value`` arg each (rendered below: the ingester runs ``-storage.backend=filesystem``);
    grafana/pyroscope v1.15.0 ``pkg/cfg/dynamic.go``: the flags win over the config file.

    Ours: ``_storage_backend`` reads only ``pyroscope.extraArgs`` and ``pyroscope.structuredConfig``, never
    ``components.<name>.extraArgs``."""
    props = _micro(persistent_release({"enabled": False}),
                   {"persistence": {"enabled": True, "size": "64Gi"}, "extraArgs": {"storage.backend": "filesystem"}})
    docs = _render_chart(tmp_path / "render", props["values"])
    assert "-storage.backend=filesystem" in _args(docs, "ingester")
    assert "-storage.backend=azure" in _args(docs, "querier")
    assert len(check(rules.pyroscope_persistent_in_production, rules.RELEASE, props, **PRODUCTION)) == 1


def test_rev2_an_ingester_persistence_override_is_merged_over_the_global_one(tmp_path):
    """SEVERITY: low (false positive of a mandatory rule: a valid production release is refused).

    Upstream: chart 1.15.0 ``templates/deployments-statefulsets.yaml``: ``$values := mustMergeOverwrite (deepCopy
    .Values.pyroscope) ($cfg | default dict)`` is a deep merge (sprig ``mustMergeOverwrite``, mergo WithOverride):
    ``components.ingester.persistence: {size: 20Gi}`` over ``pyroscope.persistence.enabled: true`` keeps
    ``enabled: true``; rendered below, the ingester gets its volumeClaimTemplate.

    Ours: ``_pyroscope_not_persistent`` takes the ingester's ``persistence`` *instead of* the global one whenever the
    ingester has one (``ingester["persistence"] if isinstance(...) else single.get("persistence")``), so it reports an
    emptyDir that the chart does not render. (The rule's own docstring says "each component's values merged over
    pyroscope's".)"""
    props = _micro(persistent_release({"enabled": True, "size": "64Gi", "storageClassName": "managed-csi"}),
                   {"persistence": {"size": "128Gi"}})
    docs = _render_chart(tmp_path / "render", props["values"])
    assert _data_volume(docs, "ingester") == "volumeClaimTemplate"
    assert check(rules.pyroscope_persistent_in_production, rules.RELEASE, props, **PRODUCTION) == []
