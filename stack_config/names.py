"""The names an empty config key derives: names in Grafana and the private link service's name.

Owns: :data:`SINGLE_CLUSTER_NAMES`, :func:`derived_names`, :func:`cluster_names` (``multiCluster``),
:data:`SINGLE_CLUSTER_PLS_NAME`, :func:`derived_private_link_service_name`. Inputs: a
:class:`~stack_config.schema.StackConfig` and the cluster's ARM id. Outputs: config key -> name. No errors.
Upstream: the published procedure, MicrosoftDocs/azure-aks-docs ``articles/aks/gpu-profiling.md``; why the
defaults are empty: docs/decisions/config-defaults.md.
"""

from __future__ import annotations

import hashlib
import re

from stack_config.schema import StackConfig

#: The names a single-cluster stack uses in Grafana when the keys are left empty: the published procedure's
#: (MicrosoftDocs/azure-aks-docs articles/aks/gpu-profiling.md: MPE ``pyroscope-mpe``, Pyroscope datasource
#: name and uid ``local-pyroscope``, the Prometheus datasource named after the Azure Monitor workspace; the
#: procedure lets Grafana pick that one's uid, the stack fixes it so the dashboard and consumers can name it).
SINGLE_CLUSTER_NAMES = {
    "managedPrivateEndpointName": "pyroscope-mpe",
    "pyroscopeDatasourceUid": "local-pyroscope",
    "pyroscopeDatasourceName": "local-pyroscope",
    "prometheusDatasourceUid": "azure-monitor-prometheus",
}


def derived_names(config: StackConfig, cluster_id: str) -> dict[str, str]:
    """The names in Grafana that an empty key derives (config key -> value): :data:`SINGLE_CLUSTER_NAMES`
    and the Prometheus datasource named after the workspace, or with ``multiCluster`` :func:`cluster_names`
    of the cluster."""
    if config.multi_cluster:
        return cluster_names(config.cluster_name, cluster_id)
    return {**SINGLE_CLUSTER_NAMES, "prometheusDatasourceName": config.monitor_workspace_name}


#: The PLS name of a stack whose PLS cannot meet another cluster's (the published procedure's): in the node resource
#: group, which belongs to one cluster.
SINGLE_CLUSTER_PLS_NAME = "pyroscope-pls"


def derived_private_link_service_name(config: StackConfig, cluster_id: str) -> str:
    """The PLS name an empty ``privateLinkServiceName`` derives. In the cluster's node resource group, which no other
    cluster uses, the procedure's ``pyroscope-pls``. Where PLS of several clusters can meet, with ``multiCluster`` or in
    a ``privateLinkServiceResourceGroup``, ``pyroscope-pls-<12 hex digits>``: a sha256 of the cluster's ARM id
    (lower-cased),
    distinct per cluster; the cluster's name is left out, so a secret cluster name stays out of an ARM resource name
    and the plain ``privateLinkServiceName`` output (a PLS name is 1-80 characters, so it fits)."""
    if not (config.multi_cluster or config.private_link_service_resource_group):
        return SINGLE_CLUSTER_PLS_NAME
    return f"{SINGLE_CLUSTER_PLS_NAME}-{hashlib.sha256(cluster_id.lower().encode()).hexdigest()[:12]}"


def cluster_names(cluster_name: str, cluster_id: str) -> dict[str, str]:
    """The names a cluster stack uses in a Grafana shared by several clusters (``multiCluster``).

    Deterministic and distinct per cluster: a slug of the cluster name (readable) plus a short sha256 of the
    cluster's ARM id, lower-cased (distinct even for equal names in other resource groups or
    subscriptions). The managed private endpoint name fits Azure's 2-20 characters, letter first; uids fit
    Grafana's 40.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", cluster_name.lower()).strip("-") or "cluster"
    digest = hashlib.sha256(cluster_id.lower().encode()).hexdigest()
    return {
        "managedPrivateEndpointName": f"pyro-{slug[:8].strip('-')}-{digest[:6]}",
        "pyroscopeDatasourceUid": f"pyroscope-{slug[:20].strip('-')}-{digest[:8]}",
        "pyroscopeDatasourceName": f"Pyroscope ({cluster_name})",
        "prometheusDatasourceUid": f"prometheus-{slug[:19].strip('-')}-{digest[:8]}",
        "prometheusDatasourceName": f"Azure Monitor Prometheus ({cluster_name})",
    }
