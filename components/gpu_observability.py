"""Component GpuObservability: GPU-memory profiling on an existing AKS cluster, the whole graph as one resource.

Owns every child the stack deploys (README's diagram): the Kubernetes providers, namespace ``gadget``, the Inspektor
Gadget extension, Pyroscope (and its storage in microservices mode), Grafana's private link to it, the datasources,
the dashboard, Grafana viewers, and the Grafana and Azure Monitor workspace it creates when asked. Input:
:class:`~components.gpu_observability_args.GpuObservabilityArgs` (one field per config key, docs/configuration.md) or
a loaded :class:`~stack_config.schema.StackConfig`; the cluster, Grafana and what exists are checked before any child
registers (one-line ConfigError naming the argument). Outputs: the stack's documented outputs (docs/outputs.md), as
attributes in snake_case and in :attr:`stack_outputs` by their names. Every child keeps the URN it had at the stack's
root (an alias), so a stack deployed before the component existed previews no change. Upstream: pulumi/pulumi
``sdk/python/lib/pulumi/resource.py`` (aliases, transformations); the move: docs/decisions/component-package.md.
"""

# No `from __future__ import annotations`: the package's schema is read from these annotations as types.
from typing import Any, Optional, Union

import pulumi
from pulumi_azure_native import authorization

from components.gadget_namespace import GadgetNamespace, GadgetNamespaceArgs
from components.gpu_dashboard import GpuDashboard, GpuDashboardArgs
from components.gpu_observability_args import GpuObservabilityArgs
from components.grafana_datasources import GrafanaDatasources, GrafanaDatasourcesArgs
from components.grafana_private_link import GrafanaPrivateLink, GrafanaPrivateLinkArgs
from components.grafana_viewers import GrafanaViewers, GrafanaViewersArgs
from components.inspektor_gadget import InspektorGadget, InspektorGadgetArgs
from components.managed_grafana import ManagedGrafana, ManagedGrafanaArgs, deployer_principal_type
from components.monitor_workspace import MonitorWorkspace, MonitorWorkspaceArgs
from components.pyroscope import Pyroscope, PyroscopeArgs, largest_requests
from components.pyroscope_storage import PyroscopeStorage, PyroscopeStorageArgs, derived_account_name
from existing.api_server import refuse_unreachable
from existing.cluster import lookup_cluster
from existing.grafana import GrafanaFacts, MonitorWorkspaceFacts, lookup_grafana, lookup_monitor_workspace
from existing.handmade import refuse_handmade
from existing.kubeconfig import cluster_kubeconfig, kubeconfig_for, kubernetes_provider
from existing.node_pools import refuse_unschedulable
from existing.roles import assigns_monitoring_data_reader, viewers_to_assign
from existing.taken import refuse_foreign_pls, refuse_taken
from stack.secrecy import Secrecy
from stack.specs import pyroscope_identity_name, stack_mark
from stack_config.component_args import to_config
from stack_config.references import for_cluster
from stack_config.schema import StackConfig

TYPE = "aks-gpu-observability:index:GpuObservability"

#: Where every child was before the component existed: the stack's root. The engine gives the children's children
#: the matching aliases.
AT_ROOT = [pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)]


class GpuObservability(pulumi.ComponentResource):
    """The Inspektor Gadget extension with GPU observability, Pyroscope behind an internal load balancer and private
    link service, Azure Managed Grafana's private endpoint to it, the Pyroscope and Azure Monitor Prometheus
    datasources and the GPU dashboard, on an existing AKS cluster."""

    cluster_name: pulumi.Output[str]
    """The AKS cluster's name."""
    cluster_resource_group: pulumi.Output[str]
    """The AKS cluster's resource group."""
    cluster_id: pulumi.Output[str]
    """The AKS cluster's ARM id."""
    node_resource_group: pulumi.Output[str]
    """The cluster's node resource group (AKS's MC_ group)."""
    extension_id: pulumi.Output[str]
    """ARM id of the Inspektor Gadget extension."""
    pyroscope_in_cluster_url: pulumi.Output[str]
    """Pyroscope's URL inside the cluster (http://<service>.gadget.svc.cluster.local:4040)."""
    private_link_service_name: pulumi.Output[str]
    """Name of the private link service AKS made for Pyroscope's Service."""
    private_link_service_resource_group: pulumi.Output[str]
    """Resource group of the private link service."""
    private_link_service_id: pulumi.Output[str]
    """ARM id of the private link service."""
    managed_private_endpoint_id: pulumi.Output[str]
    """ARM id of Grafana's managed private endpoint to Pyroscope."""
    managed_private_endpoint_state: pulumi.Output[str]
    """The endpoint connection's state (Approved once approved)."""
    pyroscope_private_url: pulumi.Output[str]
    """Pyroscope's URL as Grafana reaches it (the endpoint's private IP, port 4040)."""
    grafana_name: pulumi.Output[str]
    """The Azure Managed Grafana workspace's name."""
    grafana_endpoint: pulumi.Output[str]
    """The Grafana workspace's https endpoint."""
    monitor_workspace_id: pulumi.Output[str]
    """ARM id of the Azure Monitor workspace."""
    pyroscope_datasource_uid: pulumi.Output[str]
    """uid of the Pyroscope datasource in Grafana."""
    prometheus_datasource_uid: pulumi.Output[str]
    """uid of the Azure Monitor Prometheus datasource in Grafana."""
    dashboard_url: pulumi.Output[str]
    """URL of the GPU dashboard in Grafana."""
    pyroscope_datasource: pulumi.Output[dict[str, Any]]
    """The Pyroscope datasource as the stack set it in Grafana (ops.verify --drift compares Grafana with it)."""
    prometheus_datasource: pulumi.Output[dict[str, Any]]
    """The Prometheus datasource as the stack set it in Grafana."""
    dashboard_definition: pulumi.Output[dict[str, Any]]
    """The dashboard as the stack uploaded it."""

    def __init__(self, name: str, args: GpuObservabilityArgs,
                 opts: Optional[pulumi.ResourceOptions] = None) -> None:
        cfg = _config(args)
        # --- What already exists (every check runs before anything is registered) -----------------------------
        cluster = lookup_cluster(cfg)
        # Pyroscope must fit on a node pool (off GPU nodes): refused here in one line, not after the release's timeout.
        refuse_unschedulable(cfg, cluster.agent_pools, largest_requests(cfg.pyroscope_mode, cfg.pyroscope_resources))
        cfg = for_cluster(cfg, cluster.id)  # names in Grafana left empty: derived (per cluster with multiCluster)
        client = authorization.get_client_config()
        # What the stack would create must not exist already unless it made it (tagged managed-by): refused.
        refuse_taken(cfg, client.subscription_id, derived_account_name(cluster.id),
                     pyroscope_identity_name(cfg.cluster_name))
        # A private link service of that name serving another cluster would be taken from it by the cloud provider.
        pls_group = cfg.private_link_service_resource_group or cluster.node_resource_group
        # This cluster's PLS, when there is one already: its id, which a preview puts in the endpoint.
        pls_id = refuse_foreign_pls(cfg.private_link_service_name, pls_group, cluster.load_balancer_scope,
                                    Pyroscope.owner_service)
        grafana = None if cfg.create_grafana else lookup_grafana(cfg)
        workspace = None if cfg.create_monitor_workspace else lookup_monitor_workspace(cfg)
        # Azure's onboarding may have given Grafana's identity the role already: then none is assigned.
        assign_role = assigns_monitoring_data_reader(cfg, workspace and workspace.id, grafana and grafana.principal_id)
        # Likewise a grafanaViewers principal holding Grafana Viewer on the workspace by an assignment made elsewhere.
        viewers = viewers_to_assign(cfg, grafana and grafana.id)
        kubeconfig_text = cluster_kubeconfig(cfg)
        # A private cluster's API server answers only on its network: refused here, not read later as "gone".
        refuse_unreachable(cfg, cluster, kubeconfig_text)
        mark = stack_mark(pulumi.get_project(), pulumi.get_stack())
        # What a run by hand left (namespace, extension, release, endpoint, datasources) stops the first `up` here,
        # not half way: namespace gadget carries the stack's owner mark (docs/existing-objects.md).
        refuse_handmade(cfg, kubeconfig_text, cluster.id, client.subscription_id, mark,
                        grafana.endpoint if grafana else "")

        # Every input and output of a child that carries a secret config value is secret (children inherit it).
        secrecy = Secrecy(cfg.secret_values)
        own = pulumi.ResourceOptions(transformations=[secrecy.transformation]) if secrecy.values else None
        super().__init__(TYPE, name, None, pulumi.ResourceOptions.merge(opts, own))

        def child(**options) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, aliases=AT_ROOT, **options)

        kubeconfig = kubeconfig_for(cfg, kubeconfig_text)
        kubernetes = kubernetes_provider("aks", cfg, kubeconfig, opts=child())
        # Pyroscope's volumes: adopted where a StatefulSet made them before the stack owned them (pyroscope.py).
        claims_kubernetes = (kubernetes_provider("aks-claims", cfg, kubeconfig, upsert=True, opts=child())
                             if cfg.pyroscope_persistence else None)

        # --- Workspaces the stack creates, when asked ---------------------------------------------------------
        grafana_ready: list = []
        if workspace is None:
            created_workspace = MonitorWorkspace(
                "monitor-workspace",
                MonitorWorkspaceArgs(cfg.monitor_workspace_name, cfg.monitor_workspace_resource_group,
                                     cluster.location, cfg.tags),
                opts=child(),
            )
            workspace = MonitorWorkspaceFacts(created_workspace.id, created_workspace.query_endpoint)
        if grafana is None:
            created_grafana = ManagedGrafana(
                "managed-grafana",
                ManagedGrafanaArgs(
                    name=cfg.grafana_name,
                    resource_group=cfg.grafana_resource_group,
                    location=cluster.location,
                    workspace_id=workspace.id,
                    subscription_id=client.subscription_id,
                    deployer_object_id=client.object_id,
                    deployer_principal_type=deployer_principal_type(cfg),
                    public_network_access=cfg.grafana_public_network_access,
                    tags=cfg.tags,
                ),
                opts=child(),
            )
            grafana = GrafanaFacts(created_grafana.id, cfg.grafana_name, cfg.grafana_resource_group,
                                   created_grafana.location, created_grafana.endpoint, "Standard",
                                   created_grafana.principal_id)
            grafana_ready = created_grafana.ready

        # --- Cluster side ---------------------------------------------------------------------------------------
        # The stack owns namespace gadget (docs/decisions/gadget-namespace.md), so Pyroscope needs it and not the
        # extension's rollout; the extension installs into it beside the release.
        namespace = GadgetNamespace("gadget", GadgetNamespaceArgs(owner=mark), opts=child(providers=[kubernetes]))

        gadget = InspektorGadget(
            "inspektor-gadget",
            InspektorGadgetArgs(
                cluster_name=cfg.cluster_name,
                cluster_resource_group=cfg.cluster_resource_group,
                extension_name=cfg.extension_name,
                release_train=cfg.extension_release_train,
                version=cfg.extension_version,
                gpu_observability=cfg.extension_gpu_observability,
                azure_monitor=cfg.extension_azure_monitor,
                timeout_seconds=cfg.extension_timeout_seconds,
                namespace=namespace.namespace,  # destroy order and replace_with only: the extension reads nothing
            ),
            opts=child(),
        )

        # Microservices mode: profiles in a blob container reached through workload identity (pyroscope_storage.py).
        storage = None
        if cfg.pyroscope_mode == "microservices":
            storage = PyroscopeStorage(
                "pyroscope-storage",
                PyroscopeStorageArgs(
                    account_name=cfg.pyroscope_storage_account or derived_account_name(cluster.id),
                    resource_group=cfg.pyroscope_storage_account_resource_group or cfg.cluster_resource_group,
                    container_name=cfg.pyroscope_blob_container,
                    location=cluster.location,
                    subscription_id=client.subscription_id,
                    oidc_issuer_url=cluster.oidc_issuer_url,
                    identity_name=pyroscope_identity_name(cfg.cluster_name),
                    create_account=not cfg.pyroscope_storage_account,
                    sku=cfg.pyroscope_storage_sku,
                    tags=cfg.tags,
                ),
                opts=child(),
            )

        pyroscope = Pyroscope(
            "pyroscope",
            PyroscopeArgs(
                chart=cfg.pyroscope_chart,
                chart_version=cfg.pyroscope_chart_version,
                image_tag=cfg.pyroscope_image_tag,
                image_repository=cfg.pyroscope_image_repository,
                private_link_service_name=cfg.private_link_service_name,
                private_link_resource_group=cfg.private_link_service_resource_group,
                private_link_visibility=cfg.private_link_visibility,
                private_link_subnet=cfg.private_link_subnet,
                private_link_ip_address_count=cfg.private_link_ip_address_count,
                timeout_seconds=cfg.pyroscope_release_timeout_seconds,
                termination_grace_period_seconds=cfg.pyroscope_termination_grace_period_seconds,
                persistence=cfg.pyroscope_persistence,
                storage_class=cfg.pyroscope_storage_class,
                storage_size=cfg.pyroscope_storage_size,
                retention=cfg.pyroscope_retention,
                # Every GPU node's exporter pushes into this Pyroscope as one tenant: the limits follow their number.
                ingestion_rate_mb=cfg.pyroscope_ingestion_rate_mb, ingestion_burst_mb=cfg.pyroscope_ingestion_burst_mb,
                gpu_nodes=sum(pool.nodes for pool in cluster.agent_pools if pool.gpu),
                resources=cfg.pyroscope_resources,
                node_selector=cfg.pyroscope_node_selector,
                tolerations=cfg.pyroscope_tolerations,
                network_policy=cfg.pyroscope_network_policy,
                allowed_cidrs=tuple(cfg.pyroscope_allowed_cidrs) if cfg.pyroscope_network_policy else (),
                namespace=namespace.namespace,  # the release's namespace is read from it
                mode=cfg.pyroscope_mode,
                claims_provider=claims_kubernetes,
                **({} if storage is None else dict(
                    storage_account=storage.account_name,
                    blob_container=storage.container_name,
                    workload_identity_client_id=storage.client_id,  # the service account's annotation reads it
                    storage_ready=tuple(storage.ready),  # the pods authenticate with the credential and the role
                )),
            ),
            opts=child(providers=[kubernetes]),
        )

        # --- Grafana's private path to Pyroscope ------------------------------------------------------------------
        private_link = GrafanaPrivateLink(
            "grafana-private-link",
            GrafanaPrivateLinkArgs(
                grafana_id=grafana.id,
                grafana_name=cfg.grafana_name,
                grafana_resource_group=cfg.grafana_resource_group,
                grafana_location=grafana.location,
                private_link_service_name=cfg.private_link_service_name,
                private_link_service_resource_group=pls_group,
                private_link_service_region=cluster.location,
                managed_private_endpoint_name=cfg.managed_private_endpoint_name,
                request_message=f"Azure Managed Grafana {cfg.grafana_name} to Pyroscope on AKS cluster "
                                f"{cfg.cluster_name}",
                private_link_service_timeout_seconds=cfg.private_link_service_timeout_seconds,
                approval_timeout_seconds=cfg.connection_approval_timeout_seconds,
                refresh_timeout_seconds=cfg.managed_private_endpoint_timeout_seconds,
                replace_with=(pyroscope.private_link_service, pyroscope.private_link_identity),  # a new PLS: new steps
                load_balancer_scope=cluster.load_balancer_scope,  # the wait accepts only this cluster's PLS
                owner_service=pyroscope.owner_service,
                private_link_ip_address_count=cfg.private_link_ip_address_count,  # the NAT IPs the wait waits for
                private_link_subnet=cfg.private_link_subnet,
                known_private_link_service_id=pls_id,  # what a preview keys the endpoint chain on
                tags=cfg.tags,
                admit_nat_addresses=cfg.pyroscope_network_policy,  # Pyroscope's NetworkPolicy admits the NAT IPs
                pyroscope_namespace=namespace.namespace,
            ),
            # The PLS comes from the private link Service. A Grafana the stack creates reaches the MPE and the refresh
            # through its location and id (outputs); the private link needs no Grafana Admin role (ARM calls only).
            opts=child(depends_on=[pyroscope.private_link_service], providers=[kubernetes]),
        )

        # --- Grafana content ----------------------------------------------------------------------------------------
        datasources = GrafanaDatasources(
            "grafana-datasources",
            GrafanaDatasourcesArgs(
                grafana_endpoint=grafana.endpoint,
                grafana_id=grafana.id,
                grafana_principal_id=grafana.principal_id,
                subscription_id=client.subscription_id,
                workspace_id=workspace.id,
                workspace_query_endpoint=workspace.query_endpoint,
                pyroscope_url=private_link.pyroscope_url,
                pyroscope_uid=cfg.pyroscope_datasource_uid,
                pyroscope_name=cfg.pyroscope_datasource_name,
                prometheus_uid=cfg.prometheus_datasource_uid,
                prometheus_name=cfg.prometheus_datasource_name,
                assign_role=assign_role,
                shared_role=cfg.multi_cluster,  # ensured, never deleted: other clusters rely on it
                timeout_seconds=cfg.grafana_timeout_seconds,
                retry_forbidden=cfg.create_grafana,
            ),
            # Grafana API calls: a Grafana the stack creates, and the deployer's Grafana Admin role on it.
            opts=child(depends_on=grafana_ready or None),
        )

        dashboard = GpuDashboard(
            "gpu-dashboard",
            GpuDashboardArgs(
                grafana_endpoint=grafana.endpoint,
                grafana_id=grafana.id,
                datasources={
                    "prom_ds": {"name": cfg.prometheus_datasource_name, "uid": cfg.prometheus_datasource_uid},
                    "pyroscope_ds": {"name": cfg.pyroscope_datasource_name, "uid": cfg.pyroscope_datasource_uid},
                },
                input_datasources={"grafana-pyroscope-datasource": cfg.pyroscope_datasource_uid,
                                   "prometheus": cfg.prometheus_datasource_uid},
                source=cfg.dashboard_source,
                sha256=cfg.dashboard_sha256.lower(),
                uid=cfg.dashboard_uid,
                profile_type=cfg.dashboard_profile_type,
                timeout_seconds=cfg.grafana_timeout_seconds,
                retry_forbidden=cfg.create_grafana,
                shared=cfg.multi_cluster,
            ),
            # Grafana stores a dashboard without resolving its datasources (components/gpu_dashboard.py): the upload
            # needs Grafana and the Admin role, not the datasources, so it runs beside the private link chain.
            opts=child(depends_on=grafana_ready or None),
        )

        # --- Who reads it: Grafana Viewer on the workspace for each of grafanaViewers (ARM calls, beside the rest) --
        if viewers:
            GrafanaViewers("grafana-viewers", GrafanaViewersArgs(grafana.id, client.subscription_id, viewers),
                           opts=child())

        # --- Outputs (docs/outputs.md) ------------------------------------------------------------------------------
        #: The stack's outputs by their documented names, each secret where it carries a secret config value.
        self.stack_outputs: dict[str, Any] = {name: secrecy.taint(value) for name, value in {
            "clusterName": cfg.cluster_name,
            "clusterResourceGroup": cfg.cluster_resource_group,
            "clusterId": cluster.id,
            "nodeResourceGroup": cluster.node_resource_group,
            "extensionId": gadget.extension_id,
            "pyroscopeInClusterUrl": pyroscope.in_cluster_url,
            "privateLinkServiceName": cfg.private_link_service_name,
            "privateLinkServiceResourceGroup": pls_group,
            "privateLinkServiceId": private_link.private_link_service_id,
            "managedPrivateEndpointId": private_link.managed_private_endpoint_id,
            "managedPrivateEndpointState": private_link.connection_state,
            "pyroscopePrivateUrl": private_link.pyroscope_url,
            "grafanaName": cfg.grafana_name,
            "grafanaEndpoint": grafana.endpoint,
            "monitorWorkspaceId": workspace.id,
            "pyroscopeDatasourceUid": datasources.pyroscope_uid,
            "prometheusDatasourceUid": datasources.prometheus_uid,
            "dashboardUrl": dashboard.url,
            # What the Grafana steps set (commands cannot be refreshed): `python -m ops.verify --drift` compares
            # Grafana with it.
            "pyroscopeDatasource": datasources.pyroscope_definition,
            "prometheusDatasource": datasources.prometheus_definition,
            "dashboardDefinition": dashboard.definition,
        }.items()}
        for output, value in self.stack_outputs.items():
            setattr(self, _snake(output), pulumi.Output.from_input(value))
        self.register_outputs({})


def _config(args: Union[GpuObservabilityArgs, StackConfig]) -> StackConfig:
    """The validated configuration: the stack's (already loaded) or the arguments'."""
    return args if isinstance(args, StackConfig) else to_config(args)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
