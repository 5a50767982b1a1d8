"""Component Pyroscope: the Grafana Pyroscope Helm release, its volumes, and the stack's own internal LoadBalancer
Service whose annotations make AKS create a private link service (PLS) for it.

Owns: the ``helm.v3.Release`` ``pyroscope`` in ``gadget`` (chart 1.15.0, delete-before-replace, replaced with the
namespace and with its claims); ``<name>-private-link-identity``, a no-op command whose triggers are the PLS's name,
group and owner Service; the claims its StatefulSet mounts, with persistence (``data-pyroscope-0``, or
``data-pyroscope-ingester-<i>``), grown in place, and ``<name>-claims-identity``, a no-op command whose trigger is their
storage class; the Service ``pyroscope-private-link`` (PLS annotations, replaced
only when the PLS's name or group changes); the NetworkPolicy when ``network_policy``; in microservices mode the
Service ``pyroscope`` on the distributors. Inputs: :class:`PyroscopeArgs`. Outputs: ``release_name``, ``namespace``,
``service_name``, ``in_cluster_url``, ``owner_service``. Errors: none raised; error hooks log the way out of a release
left pending (:func:`helm_recovery`) and of a smaller claim (:func:`claim_recovery`). Upstream: grafana/pyroscope
``operations/pyroscope/helm/pyroscope`` at ``pyroscope-1.15.0``; the research: docs/decisions/pyroscope-chart.md and
docs/decisions/private-link.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from stack.recovery import already_exists_hooks, error_hooks, recover_command
from stack.specs import NAMESPACE, PATCH_FORCE, PRIVATE_LINK_SERVICE, pyroscope_major
from stack.specs import PYROSCOPE_PORT as PORT
from stack.specs import PYROSCOPE_RELEASE as RELEASE_NAME
from stack.specs import PYROSCOPE_SELECTOR_LABELS as SELECTOR_LABELS
from steps.command import forwarded_depends_on

TYPE = "aks-gpu-observability:index:Pyroscope"
_ANNOTATION = "service.beta.kubernetes.io/"
#: The private link Service's inputs that name its PLS, as the engine's property paths: the cloud provider cannot
#: rename or move the PLS of a live Service, so a change replaces the Service (docs/decisions/pyroscope-chart.md).
PLS_IDENTITY_PATHS = tuple(f'metadata.annotations["{_ANNOTATION}{key}"]'
                           for key in ("azure-pls-name", "azure-pls-resource-group"))
SINGLE_BINARY = "single-binary"
MICROSERVICES = "microservices"
#: Microservices mode (docs/decisions/pyroscope-chart.md, "Microservices mode"): the read path, which the private link
#: Service selects, and the write path, which the stack's own Service ``pyroscope`` selects for the Inspektor Gadget
#: exporter.
READ_PATH = "query-frontend"
WRITE_PATH = "distributor"
#: A change of mode reinstalls the release delete-first, in both directions (docs/decisions/pyroscope-chart.md,
#: "Switching modes"): the storage backend, ``filesystem`` or ``azure``, is the one value that changes with the mode and
#: never within one (``values.pyroscope.components`` would also match every change of a component's values).
MODE_PATHS = ("values.pyroscope.structuredConfig.storage.backend",)


@dataclass(frozen=True)
class PyroscopeArgs:
    """Inputs of :class:`Pyroscope`.

    ``chart``: ``oci://...`` chart reference (``...@sha256:<64 hex>`` pins it), or an ``https://`` repository URL
    holding
    chart ``pyroscope``. ``image_tag``: ``<tag>`` or ``<tag>@sha256:<64 hex>``.
    ``private_link_visibility``: ``["*"]`` or subscription ids. ``private_link_resource_group`` and
    ``private_link_subnet``: empty leaves the annotation out (AKS then uses the node resource group and the
    load balancer's frontend subnet). ``timeout_seconds``: Helm's wait for the release to be ready.
    ``namespace``: the stack's ``gadget`` Namespace resource; its ``metadata.name`` is the release's namespace
    (None: the plain name ``gadget``, the namespace then made by someone else).
    ``network_policy``: register the NetworkPolicy and the Service's ``externalTrafficPolicy: Local``
    (docs/decisions/private-link.md,
    "Who can reach Pyroscope"); ``allowed_cidrs``: ranges it admits to port 4040 besides the Inspektor Gadget pods and
    the PLS's NAT addresses (``pyroscopeAllowedCidrs``, default none).
    ``mode``: ``single-binary`` or ``microservices``; with the latter, ``storage_account``/``blob_container`` hold the
    profiles, ``workload_identity_client_id`` is the identity's client id (``components.pyroscope_storage``), and
    ``storage_ready`` what the release waits for (the federated credential and the role assignment).
    ``termination_grace_period_seconds``: the ingester's time to flush its head block on shutdown, the single binary's
    pod's or the ingesters' in microservices mode (docs/decisions/pyroscope-chart.md, "Shutdown grace period").
    ``ingestion_rate_mb``/``ingestion_burst_mb``: the per-tenant ingestion limits (0: :func:`ingestion_limits` from
    ``gpu_nodes``, the most nodes the cluster's GPU pools can have).
    ``claims_provider``: the Kubernetes provider of the claims, one that adopts a claim that already exists
    (``upsertExistingObjects``); None: the component's provider.
    """

    chart: str
    chart_version: str
    image_repository: str
    image_tag: str
    private_link_service_name: str
    private_link_resource_group: str
    private_link_visibility: Sequence[str]
    private_link_subnet: str
    private_link_ip_address_count: int
    timeout_seconds: int
    persistence: bool
    storage_class: str
    storage_size: str
    retention: str
    resources: Mapping[str, Mapping[str, str]]
    node_selector: Mapping[str, str]
    tolerations: Sequence[Mapping[str, str]]
    network_policy: bool
    allowed_cidrs: Sequence[str]
    mode: str
    termination_grace_period_seconds: int
    namespace: Optional[k8s.core.v1.Namespace] = None
    ingestion_rate_mb: int = 0
    ingestion_burst_mb: int = 0
    gpu_nodes: int = 0
    storage_account: str = ""
    blob_container: str = ""
    workload_identity_client_id: Optional[pulumi.Input[str]] = None
    storage_ready: tuple = ()
    claims_provider: Optional[k8s.Provider] = None


def service_annotations(args: PyroscopeArgs) -> dict[str, str]:
    """Annotations of the Pyroscope Service: internal LB plus PLS creation (string values, sorted keys)."""
    annotations = {
        "azure-load-balancer-internal": "true",
        "azure-pls-create": "true",
        "azure-pls-name": args.private_link_service_name,
        "azure-pls-ip-configuration-ip-address-count": str(args.private_link_ip_address_count),
        "azure-pls-proxy-protocol": "false",
        "azure-pls-visibility": " ".join(args.private_link_visibility),
    }
    if args.private_link_resource_group:
        annotations["azure-pls-resource-group"] = args.private_link_resource_group
    if args.private_link_subnet:
        annotations["azure-pls-ip-configuration-subnet"] = args.private_link_subnet
    return {_ANNOTATION + key: annotations[key] for key in sorted(annotations)}


#: Node labels that mark a GPU node: AKS sets ``kubernetes.azure.com/accelerator=nvidia`` on GPU node pools
#: (MicrosoftDocs/azure-aks-docs ``articles/aks/use-labels.md``, "Reserved system labels"); the NVIDIA GPU operator's
#: ClusterPolicy controller sets ``nvidia.com/gpu.present=true`` on the nodes Node Feature Discovery shows an NVIDIA
#: device on (NVIDIA/gpu-operator ``controllers/state_manager.go`` ``labelGPUNodes``; the label its operands' node
#: affinity selects). Pyroscope never needs a GPU, so its pod requires a node with neither.
GPU_NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.azure.com/accelerator", "operator": "DoesNotExist"},
                {"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]},
            ]}],
        },
    },
}
#: Where the single binary keeps its filesystem bucket: on the data volume the chart mounts at /data. Pyroscope's own
#: default, ``./data-shared`` (grafana/pyroscope ``pkg/objstore/client/config.go``@v1.15.0), is relative to the
#: container's working directory, which the image leaves at / (``cmd/pyroscope/Dockerfile``@v1.15.0 sets no WORKDIR),
#: outside the volume. A sibling of the ingester's ``/data/<tenant>/local`` blocks, never taken for a tenant (the disk
#: cleaner only counts a directory holding ``local``, ``pkg/ingester/retention.go``@v1.15.0 ``isTenantDir``).
BUCKET_DIR = "/data/shared"
#: The release's persistence values, per mode: where the StatefulSet's claim template is.
PERSISTENCE_PATH = {SINGLE_BINARY: "values.pyroscope.persistence",
                    MICROSERVICES: "values.pyroscope.components.ingester.persistence"}


#: Where the compactor stages blocks while it compacts, on the data volume. Its default, ``./data-compactor``
#: (grafana/pyroscope ``pkg/compactor/compactor.go``@v1.15.0 ``-compactor.data-dir``), is ``/data-compactor`` in the
#: image (no WORKDIR), and chart 1.15.0 mounts the volume there only for the component ``compactor``, not for ``all``
#: (``templates/deployments-statefulsets.yaml``@v1.15.0), so the single binary would stage on the container's disk.
COMPACTOR_DIR = "/data/compactor"


#: Hours of :func:`query_length` beyond the retention: room for the clock of the Grafana that asks being ahead of
#: Pyroscope's (Azure Managed Grafana runs outside the cluster).
QUERY_LENGTH_SLACK_HOURS = 24


def query_length(retention: str) -> str:
    """``-querier.max-query-length`` for a retention (``<n>h|d|w`` or ``0``): the retention plus a day, ``0`` (no
    limit) with retention ``0``. Its default, 24h (grafana/pyroscope ``pkg/validation/limits.go``@v1.15.0
    ``MaxQueryLength.Set("24h")``), refuses a "Last 7 days" flame graph outright ("the query time range exceeds the
    limit"). The query frontend first moves a range's start up to now minus the lookback (the retention), then
    compares the range's length with this limit (``pkg/validation/validate.go`` ``ValidateRangeRequest``), so any
    range Grafana asks for passes once the limit is the retention plus the clock skew between Grafana and Pyroscope
    (a range ending after Pyroscope's now is longer than the lookback by that skew)."""
    if retention == "0":
        return "0"
    count, unit = int(retention[:-1]), retention[-1]
    hours = count * {"h": 1, "d": 24, "w": 168}[unit] + QUERY_LENGTH_SLACK_HOURS
    return f"{hours // 24}d" if hours % 24 == 0 else f"{hours}h"


#: What one GPU node's exporter may push, in MB per second, when the ingestion limit is derived: the Inspektor Gadget
#: exporter's rate is not published, and a profiled service pushes about 100 KB per 15 s (grafana/pyroscope-go#63), so
#: this leaves a GPU node with many processes and deep Python stacks far more than that (docs/sizing.md).
INGESTION_MB_PER_GPU_NODE = 0.5
#: Pyroscope's own defaults (grafana/pyroscope ``pkg/validation/limits.go``@v1.15.0: rate 4 MB/s, burst 2 MB): a
#: derived limit is never below them.
DEFAULT_INGESTION_RATE_MB, DEFAULT_INGESTION_BURST_MB = 4, 2


def ingestion_limits(gpu_nodes: int, rate_mb: int = 0, burst_mb: int = 0) -> tuple[int, int]:
    """(rate MB/s, burst MB) of ``-distributor.ingestion-rate-limit-mb`` and ``-burst-size-mb``: the configured
    values, or for 0 the rate :data:`INGESTION_MB_PER_GPU_NODE` per GPU node (rounded up, at least Pyroscope's 4) and
    the burst a second of that rate (at least its 2). Every exporter pushes as one tenant, and past the rate (shared
    out among the distributors) the distributor refuses a profile (429 on the push API, 422 on ``/ingest``) and counts
    it in ``pyroscope_discarded_samples_total{reason="rate_limited"}`` (``pkg/distributor/distributor.go``
    ``rateLimit``); the burst must hold the largest profile, decompressed."""
    rate = rate_mb or max(DEFAULT_INGESTION_RATE_MB, math.ceil(gpu_nodes * INGESTION_MB_PER_GPU_NODE))
    return rate, burst_mb or max(DEFAULT_INGESTION_BURST_MB, rate)


def extra_args(args: PyroscopeArgs) -> dict[str, str]:
    """The single binary's extra flags (keys sorted).

    ``-compactor.blocks-retention-period``: the compactor (part of ``-target=all``) deletes blocks older than this from
    the bucket (grafana/pyroscope ``pkg/validation/limits.go`` and ``pkg/compactor/blocks_cleaner.go``@v1.15.0).
    ``-querier.max-query-lookback``, the same duration: its default is 7d (``limits.go``@v1.15.0
    ``MaxQueryLookback.Set("7d")``), and the query frontend empties a query that ends before now minus the lookback and
    moves an earlier start up to it (``pkg/validation/validate.go``@v1.15.0 ``ValidateRangeRequest``), so with 14d
    retention the second week would be stored but never shown. ``0`` (retention off) is ``0`` there too: "0 to
    disable" (the flag's help), and ``ValidateRangeRequest`` only applies a lookback ``> 0``.
    ``-querier.max-query-length``: :func:`query_length` of the retention; its 24h default refuses any longer range.
    ``-distributor.ingestion-rate-limit-mb`` and ``-distributor.ingestion-burst-size-mb``: :func:`ingestion_limits`.
    ``-compactor.data-dir``: :data:`COMPACTOR_DIR`, with persistence (an emptyDir is on the node's disk either way).
    """
    rate, burst = ingestion_limits(args.gpu_nodes, args.ingestion_rate_mb, args.ingestion_burst_mb)
    extra = {"compactor.blocks-retention-period": args.retention,
             "distributor.ingestion-burst-size-mb": str(burst), "distributor.ingestion-rate-limit-mb": str(rate),
             "querier.max-query-length": query_length(args.retention), "querier.max-query-lookback": args.retention}
    if args.persistence:
        extra["compactor.data-dir"] = COMPACTOR_DIR
    return dict(sorted(extra.items()))


def chart_values(args: PyroscopeArgs) -> dict:
    """Helm values for chart 1.15.0 (nested dicts, keys sorted): single replica, pinned image, local
    filesystem storage on a persistent volume (or an emptyDir), retention, requests and limits, off GPU nodes, no
    self-profiling push, ClusterIP Service on 4040, the shutdown grace period, Alloy and MinIO off."""
    persistence: dict = {"enabled": args.persistence}
    if args.persistence:
        persistence.update({"accessModes": ["ReadWriteOnce"], "size": args.storage_size,
                            "storageClassName": args.storage_class})
    pyroscope: dict = {
        "affinity": GPU_NODE_AFFINITY,
        "extraArgs": extra_args(args),
        "image": {"repository": args.image_repository, "tag": args.image_tag},
        "persistence": persistence,
        "replicaCount": 1,
        "resources": args.resources,
        # Cluster-internal: the private link Service is the stack's own (private_link_service_spec).
        "service": {"port": PORT, "type": "ClusterIP"},
        "structuredConfig": {
            "self_profiling": {"disable_push": True},
            "storage": {"backend": "filesystem", "filesystem": {"dir": BUCKET_DIR}},
        },
        # Kubernetes' 30 s default cuts the ingester's shutdown flush short; chart 1.15.0 sets a grace period only
        # for the microservices ingester and compactor.
        "terminationGracePeriodSeconds": args.termination_grace_period_seconds,
    }
    if args.node_selector:
        pyroscope["nodeSelector"] = dict(sorted(args.node_selector.items()))
    if args.tolerations:
        pyroscope["tolerations"] = list(args.tolerations)
    if args.mode == MICROSERVICES:
        _microservices(args, pyroscope)
    values = {"alloy": {"enabled": False}, "minio": {"enabled": False}, "pyroscope": dict(sorted(pyroscope.items()))}
    if pyroscope_major(args.chart_version) != 1:
        # Chart 2.x chooses the storage layer; 2.1.0 on default to v2, which starts on the filesystem bucket and
        # reads none of the v1 blocks on the volume. Pinned to v1: the chart then passes -architecture.storage=v1 and
        # -write-path=ingester, which Pyroscope 2 requires for it (docs/decisions/pyroscope-major.md).
        values["architecture"] = V1_STORAGE
    return dict(sorted(values.items()))


#: Chart 2.x's storage layer as chart 2.0.0 defaults it (values.yaml ``architecture.storage``): v1 only.
V1_STORAGE = {"storage": {"v1": True, "v2": False}}

#: Chart 1.15.0's own microservices layout, ``values-micro-services.yaml`` (grafana/pyroscope tag pyroscope-1.15.0,
#: commit 661762ea, ``operations/pyroscope/helm/pyroscope/values-micro-services.yaml``): each component's kind,
#: replicas,
#: requests and limits, and the store-gateway's readiness delay, as the chart ships them. The compactor and the
#: store-gateway run without a volume there (``persistence.enabled: false``); the ingesters get the stack's claim.
CHART_COMPONENTS: dict = {
    "ad-hoc-profiles": {"kind": "Deployment", "replicaCount": 1,
                        "resources": {"limits": {"memory": "4Gi"}, "requests": {"cpu": 0.1, "memory": "16Mi"}}},
    "compactor": {"kind": "StatefulSet", "persistence": {"enabled": False}, "replicaCount": 3,
                  "resources": {"limits": {"memory": "16Gi"}, "requests": {"cpu": 1, "memory": "8Gi"}},
                  "terminationGracePeriodSeconds": 1200},
    "distributor": {"kind": "Deployment", "replicaCount": 2,
                    "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "256Mi"}}},
    "ingester": {"kind": "StatefulSet", "replicaCount": 3,
                 "resources": {"limits": {"memory": "16Gi"}, "requests": {"cpu": 1, "memory": "8Gi"}},
                 "terminationGracePeriodSeconds": 600},
    "querier": {"kind": "Deployment", "replicaCount": 3,
                "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": 1, "memory": "256Mi"}}},
    "query-frontend": {"kind": "Deployment", "replicaCount": 2,
                       "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}},
    "query-scheduler": {"kind": "Deployment", "replicaCount": 2,
                        "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}},
    "store-gateway": {"kind": "StatefulSet", "persistence": {"enabled": False},
                      "readinessProbe": {"initialDelaySeconds": 60}, "replicaCount": 3,
                      "resources": {"limits": {"memory": "16Gi"}, "requests": {"cpu": 1, "memory": "8Gi"}}},
    "tenant-settings": {"kind": "Deployment", "replicaCount": 1,
                        "resources": {"limits": {"memory": "4Gi"}, "requests": {"cpu": 0.1, "memory": "16Mi"}}},
}
#: ``values-micro-services.yaml``'s one global flag (three store-gateways hold each block).
CHART_MICRO_EXTRA_ARGS = {"store-gateway.sharding-ring.replication-factor": "3"}
#: The workload identity webhook's pod label and service account annotation (components/pyroscope_storage.py).
WORKLOAD_IDENTITY_LABEL = "azure.workload.identity/use"
WORKLOAD_IDENTITY_CLIENT_ID = "azure.workload.identity/client-id"


def _microservices(args: PyroscopeArgs, pyroscope: dict) -> None:
    """Turn the single binary's values into chart 1.15.0's microservices mode (docs/decisions/pyroscope-chart.md,
    "Microservices
    mode"), in place. Per-component values merge over ``pyroscope.*`` (``templates/services.yaml`` and
    ``deployments-statefulsets.yaml``: ``mustMergeOverwrite (deepCopy .Values.pyroscope) $cfg``), so what stays global
    applies to every component: image, affinity, node selector, tolerations, retention flags, service account."""
    components = {name: json.loads(json.dumps(spec)) for name, spec in CHART_COMPONENTS.items()}
    # The volume: the ingesters' claims (a Deployment with persistence would mount a claim <name>-data nobody makes).
    components["ingester"]["persistence"] = pyroscope.pop("persistence")
    # The flush time goes to the ingesters only: a global value would reach every Deployment too.
    components["ingester"]["terminationGracePeriodSeconds"] = pyroscope.pop("terminationGracePeriodSeconds")
    pyroscope["persistence"] = {"enabled": False}
    pyroscope["components"] = {name: dict(sorted(spec.items())) for name, spec in sorted(components.items())}
    # Sizes are per component (the chart's); the single binary's requests would merge under each of them.
    pyroscope.pop("resources")
    extra = {k: v for k, v in pyroscope["extraArgs"].items() if k != "compactor.data-dir"}  # the chart mounts it
    pyroscope["extraArgs"] = dict(sorted({**extra, **CHART_MICRO_EXTRA_ARGS}.items()))
    pyroscope["structuredConfig"] = {
        "self_profiling": {"disable_push": True},
        "storage": {"azure": {"account_name": args.storage_account, "container_name": args.blob_container},
                    "backend": "azure"},
    }
    # pyroscope.extraLabels go on every pod's labels (templates/_helpers.tpl pyroscope.templateLabels), not on
    # selectors.
    pyroscope["extraLabels"] = {WORKLOAD_IDENTITY_LABEL: "true"}
    pyroscope["serviceAccount"] = {"annotations": {WORKLOAD_IDENTITY_CLIENT_ID: args.workload_identity_client_id},
                                   "create": True}


def largest_requests(mode: str, resources: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The CPU and memory requests of Pyroscope's largest pod: the single binary's ``resources``, or in microservices
    mode the chart's largest component (:data:`CHART_COMPONENTS`: the ingesters, compactor and store-gateways)."""
    if mode != MICROSERVICES:
        return dict(resources.get("requests") or {})
    from stack_config.rules import quantity_value

    sizes = [spec["resources"]["requests"] for spec in CHART_COMPONENTS.values()]
    largest = max(sizes, key=lambda r: (quantity_value(str(r["memory"])), quantity_value(str(r["cpu"]))))
    return {kind: str(value) for kind, value in largest.items()}


def private_link_service_spec(args: PyroscopeArgs) -> dict:
    """Spec of the stack's Service ``pyroscope-private-link`` (engine names): an internal LoadBalancer on 4040 to the
    pods' ``http2`` port, selecting the single binary (component ``all``) or the query frontends, as the chart's own
    Services select them (``templates/services.yaml``); ``externalTrafficPolicy: Local`` with the NetworkPolicy, so
    Pyroscope's pods see the PLS's NAT addresses as the source (docs/decisions/private-link.md)."""
    component = READ_PATH if args.mode == MICROSERVICES else "all"
    return {"externalTrafficPolicy": "Local" if args.network_policy else "Cluster",
            "ports": [{"name": "http2", "port": PORT, "protocol": "TCP", "targetPort": "http2"}],
            "selector": {**SELECTOR_LABELS, "app.kubernetes.io/component": component},
            "type": "LoadBalancer"}


#: Chart 1.15.0 names a component's workload ``<fullname>-<component>`` and the single binary's ``<fullname>``
#: (``templates/_helpers.tpl`` ``pyroscope.components``); its claim template is ``data``, so a claim is
#: ``data-<workload>-<ordinal>`` (kubernetes ``pkg/controller/statefulset/stateful_set_utils.go``
#: ``getPersistentVolumeClaimName``).
def claim_names(mode: str) -> list[str]:
    """The claims Pyroscope's StatefulSet mounts: ``data-pyroscope-0``, or one per ingester replica."""
    if mode != MICROSERVICES:
        return [f"data-{RELEASE_NAME}-0"]
    return [f"data-{RELEASE_NAME}-ingester-{i}" for i in range(CHART_COMPONENTS["ingester"]["replicaCount"])]


def claim_labels(mode: str) -> dict[str, str]:
    """The labels the StatefulSet controller gives its claims: the StatefulSet's selector (``getPersistentVolumeClaims``
    copies ``set.Spec.Selector.MatchLabels``), so an adopted claim keeps them."""
    return {**SELECTOR_LABELS, "app.kubernetes.io/component": "ingester" if mode == MICROSERVICES else "all"}


def claim_spec(args: PyroscopeArgs) -> dict:
    """A claim's spec as the chart's template writes it (``accessModes``, size, class), in engine names."""
    return {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": args.storage_size}},
            "storageClassName": args.storage_class}


def replace_on_changes(mode: str) -> list[str]:
    """The release's ``replace_on_changes``: persistence turned on or off (a claim template appears or goes, which a
    StatefulSet update refuses) and the mode."""
    return [f"{PERSISTENCE_PATH[mode]}.enabled", *MODE_PATHS]


def ignore_changes(args: PyroscopeArgs) -> list[str]:
    """The release's ``ignore_changes``: the claim template's size and class, which a StatefulSet update refuses to
    change. The stack's claims carry both; the template keeps the values of the first install."""
    if not args.persistence:
        return []
    return [f"{PERSISTENCE_PATH[args.mode]}.{key}" for key in ("size", "storageClassName")]


def write_path_service_spec() -> dict:
    """Spec of the stack's Service ``pyroscope`` in microservices mode (engine names): ClusterIP, port 4040 to the
    distributor pods' ``http2`` port (chart 1.15.0 ``values.yaml`` ``service.port_name``; the container port of that
    name, ``templates/deployments-statefulsets.yaml``), selected as the chart's own ``pyroscope-distributor`` Service
    selects them (``templates/services.yaml``)."""
    return {"type": "ClusterIP",
            "ports": [{"name": "http2", "port": PORT, "protocol": "TCP", "targetPort": "http2"}],
            "selector": {**SELECTOR_LABELS, "app.kubernetes.io/component": WRITE_PATH}}


#: The Inspektor Gadget pods' labels (chart 1.15.0's selector labels of the release's pods: stack.specs).
GADGET_POD_LABELS = {"k8s-app": "gadget"}
MEMBERLIST_PORT = 7946


def network_policy_spec(allowed_cidrs: Sequence[str], namespace: str = NAMESPACE) -> dict:
    """The NetworkPolicy's spec (engine names): ingress to Pyroscope's pods only from the Inspektor Gadget pods and
    ``allowed_cidrs`` on 4040, and from Pyroscope's own pods on 4040 and 7946 (docs/decisions/private-link.md)."""
    http = [{"port": PORT, "protocol": "TCP"}]
    return {
        "podSelector": {"matchLabels": dict(SELECTOR_LABELS)},
        "policyTypes": ["Ingress"],
        "ingress": [
            {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                       "podSelector": {"matchLabels": dict(GADGET_POD_LABELS)}}], "ports": http},
            *([{"from": [{"ipBlock": {"cidr": cidr}} for cidr in allowed_cidrs], "ports": http}]
              if allowed_cidrs else []),
            {"from": [{"podSelector": {"matchLabels": dict(SELECTOR_LABELS)}}],
             "ports": [*http, {"port": MEMBERLIST_PORT, "protocol": "TCP"}]},
        ],
    }


#: Helm's refusals that a hard-killed run leaves behind (docs/decisions/pyroscope-chart.md; a cancelled run leaves
#: none).
HELM_PENDING = "another operation (install/upgrade/rollback) is in progress"
HELM_NAME_IN_USE = "cannot re-use a name that is still in use"


def helm_recovery(errors: Sequence[str], namespace: str = NAMESPACE, release: str = RELEASE_NAME,
                  stack: str = "<stack>") -> Optional[str]:
    """The one-line way out of an error of the release's operation (``errors``, the provider's messages), or None when
    it is not one a hard-killed run leaves behind. Tested against the stand-in Helm (tests/support/fake_cluster.py)."""
    text = "\n".join(errors)
    history = f"`helm history {release} -n {namespace}`"
    if HELM_PENDING in text:
        return (f"{namespace}/{release}: Helm's last revision of the release is still pending, "
                "left by a run killed while Helm worked "
                f"({history} shows it), and `pulumi up` does not resume it: run `{recover_command(stack)}`, "
                f"which runs `helm rollback {release} -n {namespace}` "
                "(a pending-upgrade or pending-rollback; a pending-install: "
                f"`helm uninstall {release} -n {namespace}`), "
                "then `pulumi up` again")
    if HELM_NAME_IN_USE in text:
        return (f"{namespace}/{release}: Helm has a release of that name the stack's state does not hold; "
                "a first install "
                f"killed while Helm worked leaves it pending-install ({history}): run `{recover_command(stack)}`, "
                f"which runs `helm uninstall {release} -n {namespace}`, then "
                "`pulumi up` again (a release installed by hand: adopt it instead, docs/adopting.md)")
    return None


def _explain_helm_error(args: pulumi.ErrorHookArgs) -> bool:
    """Error hook of the release: logs :func:`helm_recovery`'s line when it applies; never asks for a retry."""
    line = helm_recovery(args.errors, stack=pulumi.get_stack())
    if line:
        pulumi.log.error(line)
    return False


#: The claims' annotations: no await, and a forced server-side apply (why: at the claims in :class:`Pyroscope`).
CLAIM_ANNOTATIONS = {"pulumi.com/patchForce": "true", "pulumi.com/skipAwait": "true"}
#: The claims' storage class, read through ``<name>-claims-identity`` (why: at that command in :class:`Pyroscope`).
CLAIM_CLASS_ANNOTATION = "aks-gpu-observability/storage-class"
#: The API server's refusal of a smaller claim (kubernetes ``pkg/apis/core/validation/validation.go``
#: ``ValidatePersistentVolumeClaimUpdate`` @ v1.34.4: "than previous value", or "than status.capacity" with
#: RecoverVolumeExpansionFailure).
CLAIM_SHRINK = "field can not be less than"
#: Its refusal of another class for a bound claim (the same function: only the requests may change).
CLAIM_IMMUTABLE = "spec is immutable after creation except resources.requests"


def claim_recovery(errors: Sequence[str], claim: str, size: str) -> Optional[str]:
    """The one line for a claim update (or an adopting create) the API server refused because ``size``
    (``pyroscopeStorageSize``) is smaller than the claim, or because the claim has another class; None for another
    error."""
    text = "\n".join(errors)
    show = f"`kubectl get pvc {claim} -n {NAMESPACE}`"
    if CLAIM_SHRINK in text:
        return (f"pyroscopeStorageSize: {size} is smaller than the claim {NAMESPACE}/{claim}, and a claim cannot "
                f"shrink; set it to the claim's size or more ({show}), then `pulumi up` again")
    if CLAIM_IMMUTABLE in text:
        return (f"pyroscopeStorageClass, pyroscopeStorageSize: the claim {NAMESPACE}/{claim} refuses the change: a "
                "claim's class never changes (set pyroscopeStorageClass to the claim's for this `pulumi up`, change "
                f"it in a later one), and its size only once it is Bound ({show}: a Pending claim waits for "
                "Pyroscope's pod)")
    return None


def _explain_claim_error(claim: str, size: str):
    def explain(args: pulumi.ErrorHookArgs) -> bool:
        line = claim_recovery(args.errors, claim, size)
        if line:
            pulumi.log.error(line)
        return False
    return explain


class Pyroscope(pulumi.ComponentResource):
    """Pyroscope as a Helm release (``helm.v3.Release``), using the Kubernetes provider passed in ``opts``.

    Outputs: ``release_name``, ``namespace``, ``service_name`` (the Service the PLS fronts, ``pyroscope-private-link``),
    ``in_cluster_url`` (``http://pyroscope.gadget.svc.cluster.local:4040``, the exporter's path). ``owner_service``
    (plain): the Service as the AKS cloud provider tags its PLS, ``gadget/pyroscope-private-link``.
    ``private_link_service`` and ``private_link_identity`` (a no-op command whose triggers are the PLS's name, group
    and owner Service): what the private link steps are replaced with.
    """

    #: The Service as the AKS cloud provider names it in a PLS's k8s-azure-owner-service tag (``getServiceName``).
    owner_service = f"{NAMESPACE}/{PRIVATE_LINK_SERVICE}"

    release: k8s.helm.v3.Release
    private_link_service: k8s.core.v1.Service
    private_link_identity: local.Command
    release_name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    service_name: pulumi.Output[str]
    in_cluster_url: pulumi.Output[str]

    def __init__(self, name: str, args: PyroscopeArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        micro = args.mode == MICROSERVICES
        # None only in a `pulumi up --target` that leaves the namespace out before it exists (its outputs are empty).
        namespace = args.namespace.metadata.apply(lambda m: m.name if m else NAMESPACE) if args.namespace else NAMESPACE
        in_namespace = [args.namespace] if args.namespace else []
        # The volumes, the stack's own so that a larger size grows them in place (a StatefulSet's claim template cannot
        # change); the provider adopts those a StatefulSet made before (docs/decisions/pyroscope-chart.md, "Volumes").
        # The PLS's identity and the Service that owns it: a new one is a new PLS, and the private link steps name it in
        # replace_with (a stack deployed while the chart's Service had the PLS sees its owner change once).
        self.private_link_identity = local.Command(
            f"{name}-private-link-identity",
            create="true",  # runs nothing; it exists for its triggers
            triggers=[args.private_link_service_name, args.private_link_resource_group, self.owner_service],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.claims: list[k8s.core.v1.PersistentVolumeClaim] = []
        self.claims_identity: Optional[local.Command] = None
        if args.persistence:
            # A new storage class replaces the claims under the same names (the StatefulSet mounts them by name). The
            # provider previews a claim's create as a server-side dry run against the old claim, which the API server
            # refuses ("spec is immutable"), so `pulumi preview` of the change failed while `pulumi up` succeeds. The
            # claims read this no-op command's stdout, unknown while it is replaced with them, and the provider does
            # not dry-run inputs it cannot know yet (provider.go Create: hasComputedValue): docs/decisions/
            # pyroscope-storage.md. Its stdout is None (empty) when a targeted `pulumi up` leaves it out before it
            # exists.
            self.claims_identity = local.Command(
                f"{name}-claims-identity",
                create="true",  # runs nothing; it exists for its triggers and its (empty) stdout
                triggers=[args.storage_class],
                opts=pulumi.ResourceOptions(parent=self),
            )
        # Named per mode: a switch creates one set and deletes the other, after the release's reinstall (a claim
        # replaced instead would take the release into its delete-first chain, but not the Service pyroscope of the
        # write path, which must go before the chart's is installed).
        prefix = f"{name}-ingester-data" if micro else f"{name}-data"
        for index, claim in enumerate(claim_names(args.mode) if args.persistence else []):
            self.claims.append(k8s.core.v1.PersistentVolumeClaim(
                f"{prefix}-{index}",
                # No await: pulumi-kubernetes waits for a new claim of a WaitForFirstConsumer class to be Pending
                # (awaiters.go untilCoreV1PersistentVolumeClaimReady), which an adopted, bound claim never is again.
                # Forced: an adopted claim's fields belong to kube-controller-manager, which made it, and a server-side
                # apply that changes one (a larger size) conflicts with that manager unless forced.
                metadata=k8s.meta.v1.ObjectMetaArgs(name=claim, namespace=namespace, labels=claim_labels(args.mode),
                                                    annotations={**CLAIM_ANNOTATIONS, CLAIM_CLASS_ANNOTATION:
                                                                 self.claims_identity.stdout.apply(
                                                                     lambda out: args.storage_class + (out or ""))}),
                spec=claim_spec(args),
                # A new class is a new disk (the provider replaces a claim whose storageClassName changes): the old
                # one is deleted first, after the release that mounts it (the release names it in replace_with).
                # Not in replace_with of the namespace (whose delete-first chain deletes what names it in no fixed
                # order, a claim possibly before the release that mounts it): the claims' namespace input makes them
                # dependents of a replaced namespace, replaced with it (a new disk: a namespace's delete deletes its
                # claims) and deleted after the release.
                # A delete waits for the pods that mount the claim to stop (kubernetes.io/pvc-protection), which Helm's
                # uninstall does not wait for: up to the grace period, beyond pulumi-kubernetes' 10 minutes.
                opts=pulumi.ResourceOptions(parent=self, provider=args.claims_provider, delete_before_replace=True,
                                            custom_timeouts=pulumi.CustomTimeouts(
                                                delete=f"{args.termination_grace_period_seconds + 600}s"),
                                            hooks=error_hooks(f"{prefix}-{index}-size",
                                                               _explain_claim_error(claim, args.storage_size))),
            ))
        if args.chart.startswith("oci://"):
            chart, repository = args.chart, None
        else:
            chart, repository = "pyroscope", k8s.helm.v3.RepositoryOptsArgs(repo=args.chart)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE_NAME,
            # Read from the Namespace resource: the one thing the release needs before it starts.
            namespace=namespace,
            create_namespace=False,  # one owner: the stack's Namespace resource
            chart=chart,
            repository_opts=repository,
            version=args.chart_version,
            values=chart_values(args),
            timeout=args.timeout_seconds,
            skip_await=False,
            atomic=False,
            cleanup_on_fail=True,
            max_history=10,
            # The StatefulSet mounts the claims, which must exist first; microservices: the pods authenticate to the
            # blob container at start (storage_ready).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*(forwarded_depends_on(opts) or []),
                                                                 *args.storage_ready, *self.claims] or None,
                                        delete_before_replace=True,
                                        replace_with=[*in_namespace, *self.claims] or None,
                                        replace_on_changes=replace_on_changes(args.mode),
                                        ignore_changes=ignore_changes(args) or None,
                                        hooks=error_hooks("pyroscope-release-helm-state", _explain_helm_error)),
        )
        # The PLS's Service, the stack's own: a reinstalled release leaves it, its PLS and Grafana's endpoint alone.
        # After the release: its pods are its endpoints (pulumi-kubernetes awaits them), and a stack deployed while the
        # chart's Service had the PLS frees the name by that update first (docs/decisions/private-link.md).
        self.private_link_service = k8s.core.v1.Service(
            f"{name}-private-link",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=PRIVATE_LINK_SERVICE, namespace=namespace,
                annotations={**service_annotations(args), **PATCH_FORCE},
                labels={**SELECTOR_LABELS, "app.kubernetes.io/component": "private-link"}),
            spec=private_link_service_spec(args),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release], delete_before_replace=True,
                                        replace_on_changes=list(PLS_IDENTITY_PATHS),
                                        replace_with=in_namespace or None,
                                        hooks=already_exists_hooks(f"{name}-private-link")),
        )
        self.write_path: Optional[k8s.core.v1.Service] = None
        if micro:
            # Service pyroscope for the Inspektor Gadget exporter: the distributors (docs/decisions/pyroscope-chart.md).
            # Created after the release (a switch from single-binary first uninstalls the chart's Service of that
            # name), and deleted before it is replaced: the engine deletes first what names the release in
            # replaceWith, also when this Service is no longer in the program (step_generator.go
            # findResourcesReplacedWith ranges over the olds), so going back to single-binary frees the name for the
            # chart's Service.
            self.write_path = k8s.core.v1.Service(
                f"{name}-write-path",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=RELEASE_NAME,
                    namespace=self.release.status.apply(lambda status: status.namespace if status else NAMESPACE),
                    labels={**SELECTOR_LABELS, "app.kubernetes.io/component": WRITE_PATH}, annotations=PATCH_FORCE),
                spec=write_path_service_spec(),
                opts=pulumi.ResourceOptions(parent=self, replace_with=[self.release], delete_before_replace=True,
                                            hooks=already_exists_hooks(f"{name}-write-path")),
            )
        self.network_policy: Optional[k8s.networking.v1.NetworkPolicy] = None
        if args.network_policy:
            # Reads the namespace only: in force before Pyroscope's pod exists (docs/decisions/pyroscope-chart.md).
            self.network_policy = k8s.networking.v1.NetworkPolicy(
                f"{name}-network-policy",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=RELEASE_NAME, namespace=namespace, annotations=PATCH_FORCE),
                spec=network_policy_spec(args.allowed_cidrs),
                # A fixed name: a replacement must delete the old object first (it would otherwise delete the new one).
                opts=pulumi.ResourceOptions(parent=self, replace_with=in_namespace or None,
                                            delete_before_replace=True,
                                            hooks=already_exists_hooks(f"{name}-network-policy")),
            )
        # Empty outputs (None) only when a targeted `pulumi up` leaves these out before they exist: the fixed names.
        self.release_name = self.release.status.apply(lambda status: status.name if status else RELEASE_NAME)
        self.namespace = self.release.status.apply(lambda status: status.namespace if status else NAMESPACE)
        self.service_name = self.private_link_service.metadata.apply(lambda m: m.name if m else PRIVATE_LINK_SERVICE)
        self.in_cluster_url = pulumi.Output.concat(
            "http://", self.release_name, ".", self.namespace, f".svc.cluster.local:{PORT}"
        )
        self.register_outputs(
            {
                "release_name": self.release_name,
                "namespace": self.namespace,
                "service_name": self.service_name,
                "in_cluster_url": self.in_cluster_url,
            }
        )
