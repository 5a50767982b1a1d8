"""The stack's __main__.py before the component (components/gpu_observability.py): every child at the stack's root.
Kept to deploy a stack of the old layout in tests, which then previews the new one (tests/e2e/test_component_move.py,
tests/components/test_gpu_observability.py).

aks-gpu-observability: GPU-memory profiling on an existing AKS cluster (see README's diagram).

    config ─► existing AKS cluster, Grafana, Azure Monitor workspace (lookups and prerequisite checks)
      ├─► Kubernetes provider ─► namespace gadget ─┬─► Inspektor Gadget extension (beside the chain below)
      │                                           └─► claims ─► Pyroscope Helm release ─► Service with the PLS
      │     └─► Grafana private link: wait for PLS ─┬─► MPE ─► approve ─► refresh ─► private IP ─► Pyroscope datasource
      │                                             └─► NetworkPolicy admitting the PLS's NAT IPs
      └─► [created Azure Monitor workspace, Grafana] ─► role; Prometheus datasource; dashboard; viewers (each beside)

An edge is kept only where the later step reads what the earlier one makes; each edge's reason is in a comment
where it is made (tests/test_main.py pins the whole set). The unavoidable chain is release ─► Service ─► PLS ─► MPE
─► approval ─► refresh ─► Pyroscope datasource; the Service is the stack's own, so no change of the release re-creates
it.
"""

import pulumi
from pulumi_azure_native import authorization

from components.gadget_namespace import GadgetNamespace, GadgetNamespaceArgs
from components.gpu_dashboard import GpuDashboard, GpuDashboardArgs
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
from stack.secrecy import keep_secret
from stack.specs import pyroscope_identity_name, stack_mark
from stack_config.load import load
from stack_config.references import for_cluster, resolve

# --- Configuration and what already exists (all checks run before any resource is registered) ---------
cfg = resolve(load())  # + outputs of clusterStack/grafanaStack
cluster = lookup_cluster(cfg)
# Pyroscope must fit on a node pool (off GPU nodes): refused here in one line, not after the release's whole timeout.
refuse_unschedulable(cfg, cluster.agent_pools, largest_requests(cfg.pyroscope_mode, cfg.pyroscope_resources))
cfg = for_cluster(cfg, cluster.id)  # names in Grafana left empty: derived (per cluster with multiCluster)
# From here on, every input and export that carries a secret config value is secret.
secrecy = keep_secret(cfg.secret_values)
client = authorization.get_client_config()
# What the stack would create must not exist already unless it made it (tagged managed-by): refused in one line.
refuse_taken(cfg, client.subscription_id, derived_account_name(cluster.id), pyroscope_identity_name(cfg.cluster_name))
# A private link service of that name serving another cluster would be taken from it by the cloud provider: refused.
pls_group = cfg.private_link_service_resource_group or cluster.node_resource_group
# This cluster's PLS, when there is one already: its id, which a preview puts in the endpoint (GrafanaPrivateLink).
pls_id = refuse_foreign_pls(cfg.private_link_service_name, pls_group, cluster.load_balancer_scope,
                            Pyroscope.owner_service)
grafana = None if cfg.create_grafana else lookup_grafana(cfg)
workspace = None if cfg.create_monitor_workspace else lookup_monitor_workspace(cfg)
# Azure's onboarding may have given Grafana's identity the role already: then none is assigned (or `true` is refused).
assign_role = assigns_monitoring_data_reader(cfg, workspace and workspace.id, grafana and grafana.principal_id)
# Likewise a grafanaViewers principal holding Grafana Viewer on the workspace by an assignment made elsewhere.
viewers = viewers_to_assign(cfg, grafana and grafana.id)
kubeconfig_text = cluster_kubeconfig(cfg)
# A private cluster's API server answers only on its network: refused here in one line, not read later as "gone".
refuse_unreachable(cfg, cluster, kubeconfig_text)
mark = stack_mark(pulumi.get_project(), pulumi.get_stack())
# What a run by hand left (namespace, extension, release, endpoint, datasources) stops the first `up` here in one
# line, not half way: namespace gadget carries the stack's owner mark (docs/existing-objects.md).
refuse_handmade(cfg, kubeconfig_text, cluster.id, client.subscription_id, mark, grafana.endpoint if grafana else "")
kubeconfig = kubeconfig_for(cfg, kubeconfig_text)
kubernetes = kubernetes_provider("aks", cfg, kubeconfig)
# Pyroscope's volumes: adopted where a StatefulSet made them before the stack owned them (components/pyroscope.py).
claims_kubernetes = (kubernetes_provider("aks-claims", cfg, kubeconfig, upsert=True) if cfg.pyroscope_persistence
                     else None)

# --- Workspaces the stack creates, when asked ------------------------------------------------------------
grafana_ready: list = []
if workspace is None:
    created_workspace = MonitorWorkspace(
        "monitor-workspace",
        MonitorWorkspaceArgs(cfg.monitor_workspace_name, cfg.monitor_workspace_resource_group, cluster.location,
                             cfg.tags),
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
    )
    grafana = GrafanaFacts(created_grafana.id, cfg.grafana_name, cfg.grafana_resource_group, created_grafana.location,
                           created_grafana.endpoint, "Standard", created_grafana.principal_id)
    grafana_ready = created_grafana.ready

# --- Cluster side ------------------------------------------------------------------------------------------
# The stack owns namespace gadget (docs/decisions/gadget-namespace.md), so Pyroscope needs it and not the
# extension's rollout; the extension installs into it beside the release.
namespace = GadgetNamespace("gadget", GadgetNamespaceArgs(owner=mark),
                            opts=pulumi.ResourceOptions(providers=[kubernetes]))

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
        namespace=namespace.namespace,  # destroy order and replace_with only: the extension reads nothing from it
    ),
)

# Microservices mode: profiles in a blob container reached through workload identity (components/pyroscope_storage.py).
storage = None
if cfg.pyroscope_mode == "microservices":
    storage_group = cfg.pyroscope_storage_account_resource_group or cfg.cluster_resource_group
    storage = PyroscopeStorage(
        "pyroscope-storage",
        PyroscopeStorageArgs(
            account_name=cfg.pyroscope_storage_account or derived_account_name(cluster.id),
            resource_group=storage_group,
            container_name=cfg.pyroscope_blob_container,
            location=cluster.location,
            subscription_id=client.subscription_id,
            oidc_issuer_url=cluster.oidc_issuer_url,
            identity_name=pyroscope_identity_name(cfg.cluster_name),
            create_account=not cfg.pyroscope_storage_account,
            sku=cfg.pyroscope_storage_sku,
            tags=cfg.tags,
        ),
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
        # Every GPU node's exporter pushes into this Pyroscope as one tenant: the ingestion limits follow their number.
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
            storage_ready=tuple(storage.ready),  # the pods authenticate with the federated credential and the role
        )),
    ),
    opts=pulumi.ResourceOptions(providers=[kubernetes]),
)

# --- Grafana's private path to Pyroscope -------------------------------------------------------------------
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
        request_message=f"Azure Managed Grafana {cfg.grafana_name} to Pyroscope on AKS cluster {cfg.cluster_name}",
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
        admit_nat_addresses=cfg.pyroscope_network_policy,  # Pyroscope's NetworkPolicy admits the PLS's NAT IPs
        pyroscope_namespace=namespace.namespace,
    ),
    # The PLS comes from the private link Service. A Grafana the stack creates reaches the MPE and the refresh
    # through its location and id (outputs); the private link needs no Grafana Admin role (ARM calls only).
    opts=pulumi.ResourceOptions(depends_on=[pyroscope.private_link_service], providers=[kubernetes]),
)

# --- Grafana content -----------------------------------------------------------------------------------------
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
    opts=pulumi.ResourceOptions(depends_on=grafana_ready or None),
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
    # Grafana stores a dashboard without resolving its datasources (see components/gpu_dashboard.py): the upload
    # needs Grafana and the Admin role, not the datasources, so it runs beside the private link chain.
    opts=pulumi.ResourceOptions(depends_on=grafana_ready or None),
)

# --- Who reads it: Grafana Viewer on the workspace for each of grafanaViewers (ARM calls, beside the rest) ---------
if viewers:
    GrafanaViewers("grafana-viewers", GrafanaViewersArgs(grafana.id, client.subscription_id, viewers))

# --- Outputs (docs/outputs.md) ---------------------------------------------------------------------------------
for name, value in {
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
    # What the Grafana steps set (commands cannot be refreshed): `python -m ops.verify --drift` compares Grafana with
    # it.
    "pyroscopeDatasource": datasources.pyroscope_definition,
    "prometheusDatasource": datasources.prometheus_definition,
    "dashboardDefinition": dashboard.definition,
}.items():
    secrecy.export(name, value)
