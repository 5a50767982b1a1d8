"""The dependency audit (issue 13, part 2): every edge the engine records between the stack's resources, and
what the later step reads from the earlier one. A new edge, or a lost one, fails here until it is listed with
its reason; an edge kept for ordering alone says so."""

from __future__ import annotations

import pytest

from offline.program import run

#: (resource, dependency) -> what the resource reads from the dependency (or why the edge exists otherwise).
EDGES = {
    ("inspektor-gadget-extension", "gadget-namespace"):
        "nothing at create (the extension agent uses the namespace or makes it); destroy order: the extension and "
        "its in-cluster uninstall before the namespace",
    ("pyroscope-release", "gadget-namespace"): "the release's namespace, metadata.name of the Namespace",
    ("grafana-private-link-wait-for-pls", "pyroscope-release"): "the PLS AKS makes from the release's Service",
    ("grafana-private-link-wait-for-pls", "pyroscope-private-link-identity"):
        "ordering only: the private link depends on the Pyroscope component, whose children include the PLS identity "
        "(it runs nothing, so it adds no time)",
    ("pyroscope-network-policy", "gadget-namespace"):
        "the policy's namespace, metadata.name of the Namespace (and nothing else: in force before Pyroscope's pod)",
    ("pyroscope-local-traffic", "pyroscope-release"): "the Service's name and namespace, from the release's status",
    ("grafana-private-link-wait-for-pls", "pyroscope-network-policy"):
        "ordering only: a child of the Pyroscope component (created long before the PLS appears, so it adds no time)",
    ("grafana-private-link-wait-for-pls", "pyroscope-local-traffic"):
        "ordering only: a child of the Pyroscope component (one server-side apply right after the release)",
    ("grafana-private-link-mpe", "grafana-private-link-wait-for-pls"): "the PLS id (read once the wait has seen it)",
    ("grafana-private-link-nat-network-policy", "grafana-private-link-wait-for-pls"):
        "the PLS's NAT IPs (read once the wait has seen it)",
    ("grafana-private-link-nat-network-policy", "gadget-namespace"): "the policy's namespace, metadata.name of the Namespace",
    ("grafana-datasources-pyroscope", "grafana-private-link-nat-network-policy"):
        "the URL is handed on once the policy admitting the PLS's NAT IPs exists (Grafana's reads are refused before)",
    ("grafana-private-link-approve-connection", "grafana-private-link-mpe"): "the Pending connection the MPE makes",
    ("grafana-private-link-mpe", "grafana-private-link-approval-nonce"): "the approval nonce in its requestMessage",
    ("grafana-private-link-approve-connection", "grafana-private-link-approval-nonce"): "the nonce (and its marker) it looks for",
    ("grafana-private-link-approve-connection", "grafana-private-link-wait-for-pls"): "the PLS id in its triggers",
    ("grafana-private-link-refresh", "grafana-private-link-approve-connection"): "Grafana sees an approval only at a later refresh",
    ("grafana-private-link-refresh", "grafana-private-link-wait-for-pls"): "the PLS id in its triggers",
    ("grafana-datasources-pyroscope", "grafana-private-link-refresh"): "the private IP the refresh waits for (its URL)",
    # Only when the stack creates the workspaces (createGrafana, createMonitorWorkspace):
    ("managed-grafana-workspace", "monitor-workspace-workspace"): "the workspace id for the Grafana integration",
    ("managed-grafana-grafana-admin", "managed-grafana-workspace"): "the Grafana id (the role's scope)",
    ("grafana-datasources-monitoring-data-reader", "managed-grafana-workspace"): "Grafana's identity (principal id)",
    ("grafana-datasources-monitoring-data-reader", "monitor-workspace-workspace"): "the workspace id (the role's scope)",
    ("grafana-private-link-mpe", "managed-grafana-workspace"): "Grafana's location (the MPE lives in Grafana)",
    ("grafana-private-link-refresh", "managed-grafana-workspace"): "the Grafana id it refreshes",
    ("grafana-datasources-pyroscope", "managed-grafana-workspace"): "the Grafana endpoint it calls",
    ("grafana-datasources-pyroscope", "managed-grafana-grafana-admin"): "the deployer's Grafana Admin role for the API call",
    ("grafana-datasources-prometheus", "managed-grafana-workspace"): "the Grafana endpoint it calls",
    ("grafana-datasources-prometheus", "managed-grafana-grafana-admin"): "the deployer's Grafana Admin role for the API call",
    ("grafana-datasources-prometheus", "monitor-workspace-workspace"): "the workspace's query endpoint (its URL)",
    ("gpu-dashboard-upload", "managed-grafana-workspace"): "the Grafana endpoint it calls",
    ("gpu-dashboard-upload", "managed-grafana-grafana-admin"): "the deployer's Grafana Admin role for the API call",
    # Only in microservices mode (pyroscopeMode: microservices, components/pyroscope_storage.py):
    ("pyroscope-storage-container", "pyroscope-storage-account"): "the account name (the container lives in it)",
    ("pyroscope-storage-federated-credential", "pyroscope-storage-identity"): "the identity's name (its parent resource)",
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
    ("grafana-private-link-wait-for-pls", "pyroscope-write-path"):
        "ordering only: a child of the Pyroscope component (created right after the release)",
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
}

#: Invokes run after a resource: (token, resource) -> what the read needs.
INVOKE_EDGES = {
    ("azure-native:network:getPrivateLinkService", "grafana-private-link-wait-for-pls"): "the PLS exists only then",
    ("azure-native:dashboard:getManagedPrivateEndpoint", "grafana-private-link-refresh"): "the private IP exists only then",
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
                         ids=["existing-workspaces", "created-workspaces", "microservices", "created-grafana", "multi-cluster"])
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
    assert seen == {"grafana-private-link-refresh", "grafana-private-link-approve-connection", "grafana-private-link-mpe",
                    "grafana-private-link-wait-for-pls", "pyroscope-release", "gadget-namespace",
                    "pyroscope-private-link-identity", "grafana-private-link-approval-nonce", "pyroscope-network-policy",
                    "grafana-private-link-nat-network-policy",
                    "pyroscope-local-traffic"}
