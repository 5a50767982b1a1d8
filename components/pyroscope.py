"""Component Pyroscope: the Grafana Pyroscope Helm release behind an internal load balancer whose Service
annotations make AKS create a private link service (PLS) for it.

Owns: the ``helm.v3.Release`` ``pyroscope`` in ``gadget`` (chart 1.15.0, delete-before-replace, replaced with the
namespace and with ``<name>-private-link-identity``, a no-op command whose triggers are the PLS name and group), the
NetworkPolicy and ``ServicePatch`` (``externalTrafficPolicy: Local``) when ``network_policy``, and in microservices
mode the Service ``pyroscope`` on the distributors. Inputs: :class:`PyroscopeArgs` (all from config). Outputs:
``release_name``, ``namespace``, ``service_name``, ``in_cluster_url``, ``owner_service``. Errors: none raised; the
release's error hook logs the way out of a release left pending (:func:`helm_recovery`). Upstream: grafana/pyroscope
``operations/pyroscope/helm/pyroscope`` at ``pyroscope-1.15.0``; the research: docs/decisions/pyroscope-chart.md and
docs/decisions/private-link.md ("Who can reach Pyroscope").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from stack.specs import NAMESPACE
from stack.specs import PYROSCOPE_PORT as PORT
from stack.specs import PYROSCOPE_RELEASE as RELEASE_NAME
from stack.specs import PYROSCOPE_SELECTOR_LABELS as SELECTOR_LABELS
from steps.command import forwarded_depends_on

TYPE = "aks-gpu-observability:index:Pyroscope"
_ANNOTATION = "service.beta.kubernetes.io/"
#: The release's inputs that name its PLS, as the engine's property paths (docs/decisions/pyroscope-chart.md).
PLS_IDENTITY_PATHS = tuple(f'values.pyroscope.service.annotations["{_ANNOTATION}{key}"]'
                           for key in ("azure-pls-name", "azure-pls-resource-group"))
SINGLE_BINARY = "single-binary"
MICROSERVICES = "microservices"
#: Microservices mode (docs/decisions/pyroscope-chart.md, "Microservices mode"): the read path, whose Service has the
#: PLS, and the write
#: path, which the stack's own Service ``pyroscope`` selects for the Inspektor Gadget exporter.
READ_PATH = "query-frontend"
WRITE_PATH = "distributor"
#: The same paths in microservices mode, where the annotations live on the read path's component.
MICRO_PLS_IDENTITY_PATHS = tuple(f'values.pyroscope.components["{READ_PATH}"].service.annotations["{_ANNOTATION}{key}"]'
                                 for key in ("azure-pls-name", "azure-pls-resource-group"))
#: A change of mode (``components`` appears or goes) reinstalls the release delete-first, in both directions
#: (docs/decisions/pyroscope-chart.md, "Switching modes").
MODE_PATHS = ("values.pyroscope.components",)


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
    storage_account: str = ""
    blob_container: str = ""
    workload_identity_client_id: Optional[pulumi.Input[str]] = None
    storage_ready: tuple = ()


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
#: The Release inputs whose change needs a new StatefulSet (docs/decisions/pyroscope-chart.md).
STORAGE_PATHS = ("values.pyroscope.persistence",)


#: Where the compactor stages blocks while it compacts, on the data volume. Its default, ``./data-compactor``
#: (grafana/pyroscope ``pkg/compactor/compactor.go``@v1.15.0 ``-compactor.data-dir``), is ``/data-compactor`` in the
#: image (no WORKDIR), and chart 1.15.0 mounts the volume there only for the component ``compactor``, not for ``all``
#: (``templates/deployments-statefulsets.yaml``@v1.15.0), so the single binary would stage on the container's disk.
COMPACTOR_DIR = "/data/compactor"


def extra_args(args: PyroscopeArgs) -> dict[str, str]:
    """The single binary's extra flags (keys sorted).

    ``-compactor.blocks-retention-period``: the compactor (part of ``-target=all``) deletes blocks older than this from
    the bucket (grafana/pyroscope ``pkg/validation/limits.go`` and ``pkg/compactor/blocks_cleaner.go``@v1.15.0).
    ``-querier.max-query-lookback``, the same duration: its default is 7d (``limits.go``@v1.15.0
    ``MaxQueryLookback.Set("7d")``), and the query frontend empties a query that ends before now minus the lookback and
    moves an earlier start up to it (``pkg/validation/validate.go``@v1.15.0 ``ValidateRangeRequest``), so with 14d
    retention the second week would be stored but never shown. ``0`` (retention off) is ``0`` there too: "0 to
    disable" (the flag's help), and ``ValidateRangeRequest`` only applies a lookback ``> 0``.
    ``-compactor.data-dir``: :data:`COMPACTOR_DIR`, with persistence (an emptyDir is on the node's disk either way).
    """
    extra = {"compactor.blocks-retention-period": args.retention, "querier.max-query-lookback": args.retention}
    if args.persistence:
        extra["compactor.data-dir"] = COMPACTOR_DIR
    return dict(sorted(extra.items()))


def chart_values(args: PyroscopeArgs) -> dict:
    """Helm values for chart 1.15.0 (nested dicts, keys sorted): single replica, pinned image, local
    filesystem storage on a persistent volume (or an emptyDir), retention, requests and limits, off GPU nodes, no
    self-profiling push, LoadBalancer Service on 4040, the shutdown grace period, Alloy and MinIO off."""
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
        "service": {"annotations": service_annotations(args), "port": PORT, "type": "LoadBalancer"},
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
    return {"alloy": {"enabled": False}, "minio": {"enabled": False}, "pyroscope": dict(sorted(pyroscope.items()))}


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
    service = pyroscope.pop("service")
    components = {name: json.loads(json.dumps(spec)) for name, spec in CHART_COMPONENTS.items()}
    # The PLS and the internal load balancer on the read path only; every other Service is ClusterIP, unannotated.
    components[READ_PATH]["service"] = service
    pyroscope["service"] = {"port": PORT, "type": "ClusterIP"}
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


def pls_service_name(mode: str) -> str:
    """The Service that carries the PLS annotations: ``pyroscope``, or the read path's ``pyroscope-query-frontend``
    (chart 1.15.0 names a component's Service ``<fullname>-<component>``, ``templates/_helpers.tpl``
    ``pyroscope.components``)."""
    return RELEASE_NAME if mode != MICROSERVICES else f"{RELEASE_NAME}-{READ_PATH}"


def replace_on_changes(mode: str) -> list[str]:
    """The release's ``replace_on_changes``: the PLS identity's paths of its mode, the volume's and the mode's."""
    if mode != MICROSERVICES:
        return [*PLS_IDENTITY_PATHS, *STORAGE_PATHS, *MODE_PATHS]
    return [*MICRO_PLS_IDENTITY_PATHS, "values.pyroscope.components.ingester.persistence", *MODE_PATHS]


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


def helm_recovery(errors: Sequence[str], namespace: str = NAMESPACE, release: str = RELEASE_NAME) -> Optional[str]:
    """The one-line way out of an error of the release's operation (``errors``, the provider's messages), or None when
    it is not one a hard-killed run leaves behind. Tested against the stand-in Helm (tests/support/fake_cluster.py)."""
    text = "\n".join(errors)
    history = f"`helm history {release} -n {namespace}`"
    if HELM_PENDING in text:
        return (f"{namespace}/{release}: Helm's last revision of the release is still pending, "
                "left by a run killed while Helm worked "
                f"({history} shows it), and `pulumi up` does not resume it: "
                f"run `helm rollback {release} -n {namespace}` "
                "(a pending-upgrade or pending-rollback; a pending-install: "
                f"`helm uninstall {release} -n {namespace}`), "
                "then `pulumi up` again")
    if HELM_NAME_IN_USE in text:
        return (f"{namespace}/{release}: Helm has a release of that name the stack's state does not hold; "
                "a first install "
                f"killed while Helm worked leaves it pending-install ({history}): "
                f"run `helm uninstall {release} -n {namespace}`, then "
                "`pulumi up` again (a release installed by hand: adopt it instead, docs/adopting.md)")
    return None


def _explain_helm_error(args: pulumi.ErrorHookArgs) -> bool:
    """Error hook of the release: logs :func:`helm_recovery`'s line when it applies; never asks for a retry."""
    line = helm_recovery(args.errors)
    if line:
        pulumi.log.error(line)
    return False


def _error_hooks() -> Optional[pulumi.ResourceHookBinding]:
    """The release's hooks: the Helm error hook, in an update (a preview runs no operation to fail) and when the CLI
    supports error hooks (the SDK refuses one otherwise)."""
    from pulumi.runtime.proto import resource_pb2
    from pulumi.runtime.settings import monitor_supports_feature

    if pulumi.runtime.is_dry_run() or not monitor_supports_feature(resource_pb2.RESOURCE_MONITOR_FEATURE_ERROR_HOOKS):
        return None
    return pulumi.ResourceHookBinding(on_error=[pulumi.ErrorHook("pyroscope-release-helm-state", _explain_helm_error)])


class Pyroscope(pulumi.ComponentResource):
    """Pyroscope as a Helm release (``helm.v3.Release``), using the Kubernetes provider passed in ``opts``.

    Outputs: ``release_name``, ``namespace``, ``service_name`` (the Service the PLS fronts, same as the
    release name), ``in_cluster_url`` (``http://pyroscope.gadget.svc.cluster.local:4040``). ``owner_service``
    (plain): the Service as the AKS cloud provider tags its PLS, ``gadget/pyroscope``.
    """

    #: The Service as the AKS cloud provider names it in a PLS's k8s-azure-owner-service tag (``getServiceName``); in
    #: microservices mode the instance's is ``gadget/pyroscope-query-frontend``.
    owner_service = f"{NAMESPACE}/{RELEASE_NAME}"

    release: k8s.helm.v3.Release
    private_link_identity: local.Command
    release_name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    service_name: pulumi.Output[str]
    in_cluster_url: pulumi.Output[str]

    def __init__(self, name: str, args: PyroscopeArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        micro = args.mode == MICROSERVICES
        pls_service = pls_service_name(args.mode)
        self.owner_service = f"{NAMESPACE}/{pls_service}"
        # The PLS's identity: replaced when it changes, and the release with it (docs/decisions/pyroscope-chart.md).
        self.private_link_identity = local.Command(
            f"{name}-private-link-identity",
            create="true",  # runs nothing; it exists for its triggers
            triggers=[args.private_link_service_name, args.private_link_resource_group],
            opts=pulumi.ResourceOptions(parent=self),
        )
        if args.chart.startswith("oci://"):
            chart, repository = args.chart, None
        else:
            chart, repository = "pyroscope", k8s.helm.v3.RepositoryOptsArgs(repo=args.chart)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE_NAME,
            # Read from the Namespace resource: the one thing the release needs before it starts.
            namespace=args.namespace.metadata.apply(lambda m: m.name) if args.namespace else NAMESPACE,
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
            # Microservices: the pods authenticate to the blob container at start (storage_ready).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*(forwarded_depends_on(opts) or []),
                                                                 *args.storage_ready] or None,
                                        delete_before_replace=True,
                                        replace_with=[*([args.namespace] if args.namespace else []),
                                                      self.private_link_identity],
                                        replace_on_changes=replace_on_changes(args.mode), hooks=_error_hooks()),
        )
        self.write_path: Optional[k8s.core.v1.Service] = None
        if micro:
            # Service pyroscope for the Inspektor Gadget exporter: the distributors (docs/decisions/pyroscope-chart.md).
            # Created after
            # the release (a switch from single-binary first uninstalls the chart's Service of that name), and deleted
            # before it is replaced: the engine deletes first what names the release in replaceWith, also when this
            # Service is no longer in the program (step_generator.go findResourcesReplacedWith ranges over the olds),
            # so going back to single-binary frees the name for the chart's Service.
            self.write_path = k8s.core.v1.Service(
                f"{name}-write-path",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=RELEASE_NAME, namespace=self.release.status.apply(lambda status: status.namespace),
                    labels={**SELECTOR_LABELS, "app.kubernetes.io/component": WRITE_PATH}),
                spec=write_path_service_spec(),
                opts=pulumi.ResourceOptions(parent=self, replace_with=[self.release], delete_before_replace=True),
            )
        self.network_policy: Optional[k8s.networking.v1.NetworkPolicy] = None
        self.local_traffic: Optional[k8s.core.v1.ServicePatch] = None
        if args.network_policy:
            namespace = args.namespace.metadata.apply(lambda m: m.name) if args.namespace else NAMESPACE
            # Reads the namespace only: in force before Pyroscope's pod exists (docs/decisions/pyroscope-chart.md).
            self.network_policy = k8s.networking.v1.NetworkPolicy(
                f"{name}-network-policy",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=RELEASE_NAME, namespace=namespace),
                spec=network_policy_spec(args.allowed_cidrs),
                # A fixed name: a replacement must delete the old object first (it would otherwise delete the new one).
                opts=pulumi.ResourceOptions(parent=self, replace_with=[args.namespace] if args.namespace else None,
                                            delete_before_replace=True),
            )
            # The Service keeps client addresses (the PLS's NAT IP): externalTrafficPolicy Local, which the chart cannot
            # set.
            self.local_traffic = k8s.core.v1.ServicePatch(
                f"{name}-local-traffic",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=self.release.status.apply(
                        lambda status: status.name if not micro else f"{status.name}-{READ_PATH}"),
                    namespace=self.release.status.apply(lambda status: status.namespace),
                    annotations={"pulumi.com/patchForce": "true"},  # Helm may own the field it created defaulted
                ),
                spec=k8s.core.v1.ServiceSpecPatchArgs(external_traffic_policy="Local"),
                opts=pulumi.ResourceOptions(parent=self, replace_with=[self.release], delete_before_replace=True),
            )
        self.release_name = self.release.status.apply(lambda status: status.name)
        self.namespace = self.release.status.apply(lambda status: status.namespace)
        self.service_name = self.release_name if not micro else self.release_name.apply(lambda n: f"{n}-{READ_PATH}")
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
