"""__main__.py: how it wires the components, and how the whole stack tears down.

The dependency audit: every edge the engine records between the stack's resources, and what the later step reads
from the earlier one. A new edge, or a lost one, fails here until it is listed with its reason; an edge kept for
ordering alone says so.

Tearing down what is already gone (docs/teardown.md, "Tearing down what is already gone"): the dev stack is deployed
into the stateful stand-in world, then the AKS cluster, the Grafana workspace or the managed private endpoint is
deleted behind the stack's back, and ``pulumi refresh`` / ``pulumi destroy`` are played in the plan's destroy order
with the providers' rules (tests/support/lifecycle.py) and the real step scripts against the stand-in ``az``. Each
must end with an empty state and nothing of the stack's left in the world. SIMULATED: Azure, Grafana, the engine and
the providers."""

from __future__ import annotations

import json
import re

import pytest

from offline import canned
from offline.program import run
from tests.support import ROOT, fake_world, reference
from tests.support.lifecycle import Deployment, EngineError

#: (resource, dependency) -> what the resource reads from the dependency (or why the edge exists otherwise).
EDGES = {
    ("inspektor-gadget-extension", "gadget-namespace"):
        "nothing at create (the extension agent uses the namespace or makes it); destroy order: the extension and "
        "its in-cluster uninstall before the namespace",
    ("pyroscope-release", "gadget-namespace"): "the release's namespace, metadata.name of the Namespace",
    ("pyroscope-release", "pyroscope-data-0"): "ordering: the StatefulSet mounts the claim, which must exist first",
    ("pyroscope-data-0", "gadget-namespace"): "the claim's namespace, metadata.name of the Namespace",
    ("pyroscope-data-0", "pyroscope-claims-identity"):
        "the storage class, through the identity step's stdout: unknown while a new class replaces both, so the "
        "provider previews the claim's create without a dry run against the old claim",
    **{(f"pyroscope-ingester-data-{i}", "pyroscope-claims-identity"): "the same, for each ingester's claim"
       for i in range(3)},
    ("pyroscope-private-link", "gadget-namespace"): "the Service's namespace, metadata.name of the Namespace",
    ("pyroscope-private-link", "pyroscope-release"):
        "ordering: the release's pods are its endpoints, and a stack whose chart Service had the PLS frees the PLS "
        "name by the release's update first",
    ("grafana-private-link-wait-for-pls", "pyroscope-private-link"):
        "the PLS AKS makes from the Service's annotations (GrafanaPrivateLink depends on the Service alone)",
    ("pyroscope-network-policy", "gadget-namespace"):
        "the policy's namespace, metadata.name of the Namespace (and nothing else: in force before Pyroscope's pod)",
    ("grafana-private-link-mpe", "grafana-private-link-wait-for-pls"): "the PLS id (read once the wait has seen it)",
    ("grafana-private-link-nat-network-policy", "grafana-private-link-wait-for-pls"):
        "the PLS's NAT IPs (read once the wait has seen it)",
    ("grafana-private-link-nat-network-policy", "gadget-namespace"): "the policy's namespace, metadata.name of the "
                                                                     "Namespace",
    ("grafana-datasources-pyroscope", "grafana-private-link-nat-network-policy"):
        "the URL is handed on once the policy admitting the PLS's NAT IPs exists (Grafana's reads are refused before)",
    ("grafana-private-link-approve-connection", "grafana-private-link-mpe"): "the Pending connection the MPE makes",
    ("grafana-private-link-mpe", "grafana-private-link-approval-nonce"): "the approval nonce in its requestMessage",
    ("grafana-private-link-approve-connection", "grafana-private-link-approval-nonce"): "the nonce (and its marker) it "
                                                                                        "looks for",
    ("grafana-private-link-approve-connection", "grafana-private-link-wait-for-pls"): "the PLS id in its triggers",
    ("grafana-private-link-refresh", "grafana-private-link-approve-connection"): "Grafana sees an approval only at a "
                                                                                 "later refresh",
    ("grafana-private-link-refresh", "grafana-private-link-wait-for-pls"): "the PLS id in its triggers",
    ("grafana-private-link-refresh", "grafana-private-link-mpe"): "the MPE's creation time in its triggers: a new MPE "
                                                                  "is refreshed anew, whichever run approved it",
    ("grafana-datasources-pyroscope", "grafana-private-link-refresh"): "the private IP the refresh waits for (its URL)",
    # Only when the stack creates the workspaces (createGrafana, createMonitorWorkspace):
    ("managed-grafana-workspace", "monitor-workspace-workspace"): "the workspace id for the Grafana integration",
    ("managed-grafana-grafana-admin", "managed-grafana-workspace"): "the Grafana id (the role's scope)",
    ("grafana-datasources-monitoring-data-reader", "managed-grafana-workspace"): "Grafana's identity (principal id)",
    ("grafana-datasources-monitoring-data-reader", "monitor-workspace-workspace"):
        "the workspace id (the role's scope)",
    ("grafana-private-link-mpe", "managed-grafana-workspace"): "Grafana's location (the MPE lives in Grafana)",
    ("grafana-private-link-approval-nonce", "managed-grafana-workspace"):
        "Grafana's location (in the endpoint the nonce is made for)",
    ("grafana-private-link-refresh", "managed-grafana-workspace"): "the Grafana id it refreshes",
    ("grafana-datasources-pyroscope", "managed-grafana-workspace"): "the Grafana endpoint it calls",
    ("grafana-datasources-pyroscope", "managed-grafana-grafana-admin"): "the deployer's Grafana Admin role for the API "
                                                                        "call",
    ("grafana-datasources-prometheus", "managed-grafana-workspace"): "the Grafana endpoint it calls",
    ("grafana-datasources-prometheus", "managed-grafana-grafana-admin"): "the deployer's Grafana Admin role for the "
                                                                         "API call",
    ("grafana-datasources-prometheus", "monitor-workspace-workspace"): "the workspace's query endpoint (its URL)",
    ("gpu-dashboard-upload", "managed-grafana-workspace"): "the Grafana endpoint it calls",
    ("gpu-dashboard-upload", "managed-grafana-grafana-admin"): "the deployer's Grafana Admin role for the API call",
    # Only in microservices mode (pyroscopeMode: microservices, components/pyroscope_storage.py):
    ("pyroscope-storage-container", "pyroscope-storage-account"): "the account name (the container lives in it)",
    ("pyroscope-storage-federated-credential", "pyroscope-storage-identity"): "the identity's name (its parent "
                                                                              "resource)",
    ("pyroscope-storage-blob-data-contributor", "pyroscope-storage-identity"): "the identity's principal id",
    ("pyroscope-storage-blob-data-contributor", "pyroscope-storage-container"):
        "ordering: the scope is the container's id as a string, and ARM refuses an assignment on a container not there",
    ("pyroscope-release", "pyroscope-storage-identity"): "the identity's client id (the service account's annotation)",
    ("pyroscope-release", "pyroscope-storage-federated-credential"):
        "ordering: the pods exchange their token at start, which needs the federated credential",
    ("pyroscope-release", "pyroscope-storage-blob-data-contributor"):
        "ordering: the pods read the container at start (thanos objstore checks it exists), which needs the role",
    ("pyroscope-write-path", "pyroscope-release"):
        "the namespace, from the release's status; and after the release, so a switch from single-binary has "
        "uninstalled the chart's Service pyroscope first",
    # The ingesters' claims, named per mode (a switch creates one set and deletes the other):
    ("pyroscope-ingester-data-0", "gadget-namespace"): "the claim's namespace, metadata.name of the Namespace",
    ("pyroscope-ingester-data-1", "gadget-namespace"): "as above",
    ("pyroscope-ingester-data-2", "gadget-namespace"): "as above",
    ("pyroscope-release", "pyroscope-ingester-data-0"): "ordering: the ingesters' StatefulSet mounts the claims",
    ("pyroscope-release", "pyroscope-ingester-data-1"): "as above",
    ("pyroscope-release", "pyroscope-ingester-data-2"): "as above",
}


#: Edges that must not come back: the later step reads nothing from the earlier one.
NOT_EDGES = {
    ("pyroscope-release", "inspektor-gadget-extension"):
        "Pyroscope needs the namespace, not the DaemonSet (components/gadget_namespace.py)",
    ("grafana-datasources-prometheus", "grafana-datasources-monitoring-data-reader"):
        "creating a datasource makes no query; the role matters when a panel queries",
    ("gpu-dashboard-upload", "grafana-datasources-pyroscope"):
        "Grafana stores a dashboard without resolving its datasources (components/gpu_dashboard.py)",
    ("gpu-dashboard-upload", "grafana-datasources-prometheus"): "as above",
    ("grafana-private-link-wait-for-pls", "managed-grafana-grafana-admin"): "ARM calls only; no Grafana API",
    ("grafana-private-link-mpe", "managed-grafana-grafana-admin"): "ARM calls only; no Grafana API",
    # The private link depends on the Service, not on the Pyroscope component and so all its children:
    ("grafana-private-link-wait-for-pls", "pyroscope-release"):
        "the wait reads the Service's PLS; the release comes before the Service anyway",
    ("grafana-private-link-wait-for-pls", "pyroscope-network-policy"): "reads nothing of the policy",
    ("grafana-private-link-wait-for-pls", "pyroscope-write-path"): "reads nothing of the exporter's Service",
    ("grafana-private-link-wait-for-pls", "pyroscope-data-0"): "reads nothing of the claims",
    ("grafana-private-link-wait-for-pls", "pyroscope-ingester-data-0"): "as above",
    ("pyroscope-private-link", "pyroscope-data-0"): "the Service reads nothing of the claims",
    ("pyroscope-private-link", "pyroscope-ingester-data-0"): "as above",
    # The PLS's identity is in the wait's and the MPE's replaceWith only: they read nothing of it.
    ("grafana-private-link-wait-for-pls", "pyroscope-private-link-identity"): "replaceWith only",
    ("grafana-private-link-mpe", "pyroscope-private-link-identity"): "replaceWith only",
}


#: Invokes run after a resource: (token, resource) -> what the read needs.
INVOKE_EDGES = {
    ("azure-native:network:getPrivateLinkService", "grafana-private-link-wait-for-pls"): "the PLS exists only then",
    ("azure-native:dashboard:getManagedPrivateEndpoint",
     "grafana-private-link-refresh"): "the private IP exists only then",
}


def edges(plan) -> tuple[set, set]:
    name = {r.urn: r.name for r in plan.resources}
    resources = {(r.name, name[d]) for r in plan.resources
                 if r.custom and not r.type.startswith("pulumi:providers:") for d in r.dependencies}
    invokes = {(i.token, name[d]) for i in plan.invokes for d in i.dependencies}
    return resources, invokes


@pytest.mark.parametrize("overrides", [{}, {"createGrafana": "true", "createMonitorWorkspace": "true"},
                                       {"pyroscopeMode": "microservices"},
                                        {"createGrafana": "true"}, {"multiCluster": "true"}],
                         ids=["existing-workspaces", "created-workspaces", "microservices", "created-grafana",
                              "multi-cluster"])
def test_every_edge_is_listed_with_what_it_reads(overrides):
    plan = run("dev", overrides)
    resources, invokes = edges(plan)
    present = {r.name for r in plan.resources}
    expected = {edge for edge in EDGES if set(edge) <= present}
    assert resources == expected, (resources - expected, expected - resources)
    assert invokes == set(INVOKE_EDGES)
    assert not resources & set(NOT_EDGES)


def test_the_chain_is_the_only_path_to_the_pyroscope_datasource():
    """Ancestors of the Pyroscope datasource (existing workspaces): the unavoidable chain and the namespace."""
    plan = run("dev")
    by_name = {r.name: r for r in plan.resources}
    name = {r.urn: r.name for r in plan.resources}
    seen, todo = set(), ["grafana-datasources-pyroscope"]
    while todo:
        for dep in by_name[todo.pop()].dependencies:
            if name[dep] not in seen:
                seen.add(name[dep])
                todo.append(name[dep])
    assert seen == {"grafana-private-link-refresh", "grafana-private-link-approve-connection",
                    "grafana-private-link-mpe",
                    "grafana-private-link-wait-for-pls", "pyroscope-private-link", "pyroscope-release",
                    "pyroscope-data-0", "pyroscope-claims-identity", "gadget-namespace",
                    "grafana-private-link-approval-nonce", "grafana-private-link-nat-network-policy"}


DASHBOARD_URL = ("https://raw.githubusercontent.com/inspektor-gadget/grafana-dashboards/"
                 "494542d8a0439fe4b1a60577e70677cec5c96070/dashboards/gpu-observability/AdvancedGPUObservability.json")


OPTED = {"kubernetesDeleteUnreachable": "true"}


PLS_GROUP = {"privateLinkServiceResourceGroup": "rg-network"}


#: One xdist worker runs this module: its deployed fixture deploys three worlds, once per run.
pytestmark = pytest.mark.xdist_group("main-deployed")


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """The dev stack deployed into fresh worlds: with and without kubernetesDeleteUnreachable, and with it and a
    privateLinkServiceResourceGroup."""
    dashboard = reference("grafana-dashboards/AdvancedGPUObservability.json")
    made = {}
    for name, settings in (("opted", OPTED), ("default", {}), ("pls-group", {**OPTED, **PLS_GROUP})):
        plan = run("dev", settings).to_json()
        deployment = Deployment(tmp_path_factory.mktemp(name), {DASHBOARD_URL: str(dashboard)})
        deployment.deploy(plan)
        made[name] = (plan, deployment)
    return made


def fresh(deployed, name, tmp_path) -> tuple[dict, Deployment]:
    plan, deployment = deployed[name]
    return plan, deployment.copy(tmp_path / name)


def grafana_host(plan: dict) -> str:
    step = next(r for r in plan["resources"] if r["name"] == "gpu-dashboard-upload")
    return step["inputs"]["environment"]["GRAFANA_ENDPOINT"].split("//", 1)[1]


def assert_nothing_left(deployment: Deployment) -> None:
    """An empty state, and nothing of the stack's in the world: no ARM resource, release, PLS, endpoint or Grafana
    content."""
    assert deployment.states == {}, sorted(deployment.states)
    world = deployment.world()
    assert world["arm"] == {} and world["releases"] == {} and world["pls"] == {} and world["mpes"] == {}
    assert world.get("services", {}) == {} and world.get("claims", {}) == {}  # the Service and the claims too
    assert all(not g["datasources"] and not g["dashboards"] for g in world["grafana"].values())


def calls(deployment: Deployment) -> list:
    """Every az command line this deployment's steps ran (a copy starts with none)."""
    log = deployment.workdir / "calls.jsonl"
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()] if log.exists() else []


def calls_to(deployment: Deployment, host: str) -> list:
    return [argv for argv in calls(deployment) if any(host in a for a in argv)]


def test_everything_already_gone_ends_in_a_clean_destroy(deployed, tmp_path):
    """Cluster and Grafana deleted: the refresh drops the release, the namespace, the NetworkPolicies, the private link
    Service and the claim (deleteUnreachable), the extension and the endpoint (ARM 404); the destroy's datasource and
    dashboard deletes find the workspace gone in ARM and call no Grafana; the role assignment on the workspace is
    deleted."""
    plan, deployment = fresh(deployed, "opted", tmp_path)
    host = grafana_host(plan)
    deployment.lose_cluster("rg-aks-gpu-dev", "aks-gpu-dev")
    deployment.lose_grafana("rg-observability-dev", "amg-gpu-dev", host)
    before = len(calls_to(deployment, host))
    dropped = {urn.rsplit("::", 1)[-1] for urn in deployment.refresh()}
    assert dropped == {"pyroscope-release", "gadget-namespace", "inspektor-gadget-extension",
                       "grafana-private-link-mpe", "pyroscope-private-link", "pyroscope-data-0",
                       "pyroscope-network-policy", "grafana-private-link-nat-network-policy"}
    deployment.destroy(plan)
    assert_nothing_left(deployment)
    assert len(calls_to(deployment, host)) == before, "no call to a Grafana whose workspace is gone"


def test_a_cluster_gone_without_the_option_names_the_way_out(deployed, tmp_path):
    """Without kubernetesDeleteUnreachable the provider's refresh fails naming PULUMI_K8S_DELETE_UNREACHABLE; with that
    variable set (read by the provider when the option was never recorded) the same teardown ends clean."""
    plan, deployment = fresh(deployed, "default", tmp_path)
    deployment.lose_cluster("rg-aks-gpu-dev", "aks-gpu-dev")
    with pytest.raises(EngineError, match="PULUMI_K8S_DELETE_UNREACHABLE environment variable set to \"true\""):
        deployment.refresh()
    deployment.refresh({"PULUMI_K8S_DELETE_UNREACHABLE": "true"})
    deployment.destroy(plan)
    assert_nothing_left(deployment)


def test_a_destroy_before_the_refresh_stops_at_the_release_and_resumes(deployed, tmp_path):
    """pulumi-kubernetes cannot delete a Helm release on an unreachable cluster, option or not
    (pulumi/pulumi-kubernetes#4593, open; DataDog/datadog-agent#39414 passes PULUMI_K8S_DELETE_UNREACHABLE to its
    cleanup for the same reason): the destroy stops there (everything before it already deleted); the refresh, then
    the destroy again, finish it."""
    plan, deployment = fresh(deployed, "opted", tmp_path)
    deployment.lose_cluster("rg-aks-gpu-dev", "aks-gpu-dev")
    with pytest.raises(EngineError, match="pyroscope-release: can't delete Helm Release with unreachable cluster"):
        deployment.destroy(plan)
    assert not any(g["datasources"] or g["dashboards"] for g in deployment.world()["grafana"].values())
    deployment.refresh()
    deployment.destroy(plan)
    assert_nothing_left(deployment)


def teardown_doc_command(name: str) -> list[str]:
    """The az command docs/teardown.md gives for ``name`` (e.g. "private-link-service delete"), as argv."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "docs" / "teardown.md").read_text())  # a continued line joined
    (line,) = [raw.strip() for raw in text.splitlines() if raw.strip().startswith(f"az network {name} ")]
    return line.split()[1:]


def test_a_cluster_gone_leaves_a_pls_in_its_own_resource_group_orphaned(deployed, tmp_path):
    """With privateLinkServiceResourceGroup the PLS is outside the node resource group: the cluster's deletion does not
    take it, and neither does the teardown (no Service, no cloud provider, not the stack's). Everything else ends clean;
    the PLS is left without connections, and docs/teardown.md's delete command names it."""
    plan, deployment = fresh(deployed, "pls-group", tmp_path)
    deployment.lose_cluster("rg-aks-gpu-dev", "aks-gpu-dev")
    deployment.refresh()
    deployment.destroy(plan)
    assert deployment.states == {}
    world = deployment.world()
    assert world["arm"] == {} and world["releases"] == {} and world["mpes"] == {}
    assert all(not g["datasources"] and not g["dashboards"] for g in world["grafana"].values())
    (orphan,) = world["pls"].values()
    assert orphan["connections"] == []
    argv = teardown_doc_command("private-link-service delete")
    values = {"<privateLinkServiceResourceGroup>": PLS_GROUP["privateLinkServiceResourceGroup"],
              "<privateLinkServiceName>": plan["outputs"]["privateLinkServiceName"]}
    argv = [values.get(a, a) for a in argv]
    group, name = argv[argv.index("--resource-group") + 1], argv[argv.index("--name") + 1]
    assert orphan["id"].lower() == fake_world.pls_id(group, name, canned.SUBSCRIPTION_ID).lower()


def test_a_cluster_gone_takes_a_pls_in_its_node_resource_group(deployed, tmp_path):
    """Without privateLinkServiceResourceGroup the PLS lives in the node resource group and goes with it."""
    plan, deployment = fresh(deployed, "opted", tmp_path)
    deployment.lose_cluster("rg-aks-gpu-dev", "aks-gpu-dev")
    assert deployment.world()["pls"] == {}


def test_a_grafana_gone_needs_no_refresh(deployed, tmp_path):
    plan, deployment = fresh(deployed, "default", tmp_path)
    host = grafana_host(plan)
    deployment.lose_grafana("rg-observability-dev", "amg-gpu-dev", host)
    before = len(calls_to(deployment, host))
    deployment.destroy(plan)
    assert_nothing_left(deployment)
    assert len(calls_to(deployment, host)) == before


def test_a_managed_private_endpoint_deleted_by_hand(deployed, tmp_path):
    """The endpoint's delete answers 404 (done); the PLS, free of its connection, goes with the release."""
    plan, deployment = fresh(deployed, "default", tmp_path)
    deployment.lose_mpe("rg-observability-dev", "amg-gpu-dev", "pyroscope-mpe")
    deployment.destroy(plan)
    assert_nothing_left(deployment)


def test_the_private_link_service_and_a_claim_deleted_by_hand_end_in_a_clean_destroy(deployed, tmp_path):
    """`kubectl delete svc pyroscope-private-link` and the claim gone (after a `helm uninstall` by hand): their deletes
    meet NotFound and count it as done (pulumi-kubernetes provider/pkg/await/await.go Deletion, nilIfGVKDeleted, at
    94977969d), and the destroy ends with nothing left."""
    plan, deployment = fresh(deployed, "default", tmp_path)
    (service,) = [r for r in plan["resources"] if r["name"] == "pyroscope-private-link"]
    deployment._service(service["inputs"], None, None)  # the cloud provider takes its PLS and connections with it
    world = deployment.world()
    assert world["pls"] == {} and len(world["claims"]) == 1
    world["claims"] = {}
    deployment._save(world)
    deployment.destroy(plan)
    assert_nothing_left(deployment)
    assert any(action.endswith("::pyroscope-data-0") for action in deployment.actions if action.startswith("delete"))


def test_404_on_every_delete_ends_in_a_clean_destroy(deployed, tmp_path):
    """Everything the deletes address already deleted by hand (datasources, dashboard, endpoint, extension, role
    assignment): each delete meets a 404 and counts it as done."""
    plan, deployment = fresh(deployed, "default", tmp_path)
    deployment.lose_mpe("rg-observability-dev", "amg-gpu-dev", "pyroscope-mpe")
    world = deployment.world()
    for g in world["grafana"].values():
        g["datasources"].clear()
        g["dashboards"].clear()
    world["arm"] = {}
    deployment._save(world)
    deployment.destroy(plan)
    assert_nothing_left(deployment)
    reads = [argv for argv in calls(deployment) if "get" in argv and any("/api/" in a for a in argv)]
    assert len(reads) >= 3, "each Grafana delete looked first and found nothing"


def test_a_service_that_goes_takes_its_pls_connections_first(deployed, tmp_path):
    """docs/offline.md L4: when the Service goes before the endpoint (here `kubectl delete service` by hand), AKS's
    cloud provider deletes every private endpoint connection on the Service's PLS, then the PLS (kubernetes-sigs/
    cloud-provider-azure azure_privatelinkservice.go safeDeletePLS, TestSafeDeletePLS): no connection blocks it, and
    Grafana's endpoint is left Disconnected. A `helm uninstall` by hand before it takes no PLS: the Service is the
    stack's own, not the chart's. The stack's destroy still ends clean."""
    plan, deployment = fresh(deployed, "default", tmp_path)
    release = next(r for r in plan["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release")
    deployment._release(release["inputs"], None, None)
    world = deployment.world()
    (pls,) = world["pls"].values()
    assert [c["status"] for c in pls["connections"]] == ["Approved"]
    assert [m["status"] for m in world["mpes"].values()] == ["Approved"]
    service = next(r for r in plan["resources"] if r["name"] == "pyroscope-private-link")
    deployment._service(service["inputs"], None, None)
    world = deployment.world()
    assert world["pls"] == {} and world["events"] == []
    assert [m["status"] for m in world["mpes"].values()] == ["Disconnected"]
    deployment.destroy(plan)
    assert_nothing_left(deployment)


def test_destroy_deletes_the_endpoint_before_the_service_and_the_release(deployed, tmp_path):
    """The stack's own order: the managed private endpoint, and with it its connection, goes before the private link
    Service (then the release), so the cloud provider finds no connection to cut when the Service goes, and Grafana
    never holds a Disconnected endpoint."""
    plan, deployment = fresh(deployed, "default", tmp_path)
    names = [urn.rsplit("::", 1)[-1] for urn in plan["destroyOrder"]]
    assert (names.index("grafana-private-link-mpe") < names.index("pyroscope-private-link")
            < names.index("pyroscope-release") < names.index("pyroscope-data-0"))
    retained = {r["urn"] for r in plan["resources"] if r["options"].get("retainOnDelete")}
    for urn in plan["destroyOrder"]:
        if urn.endswith("::pyroscope-private-link"):
            world = deployment.world()
            assert world["mpes"] == {} and [p["connections"] for p in world["pls"].values()] == [[]]
        state = deployment.states.get(urn)
        if state is not None and urn not in retained:
            deployment._delete(urn, state)
    assert_nothing_left(deployment)


def test_the_pyroscope_datasource_waits_for_the_nat_network_policy():
    """A pod selected by any NetworkPolicy admits only the union of their ingress rules (k8s.io/api
    ``networking/v1/types.go``): ``gadget/pyroscope`` selects Pyroscope from the start and admits no Grafana traffic,
    ``pyroscope-private-link`` does. The datasource, the first thing that sends Grafana to Pyroscope, waits for it."""
    plan = run("dev", {})
    by_urn = {r.urn: r for r in plan.resources}
    seen, todo = set(), [plan.named("grafana-datasources-pyroscope").urn]
    while todo:
        resource = by_urn.get(todo.pop())
        for dependency in (resource.dependencies if resource else []):
            if dependency not in seen:
                seen.add(dependency)
                todo.append(dependency)
    assert plan.named("grafana-private-link-nat-network-policy").urn in seen
