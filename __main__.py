"""aks-gpu-observability: GPU-memory profiling on an existing AKS cluster (see README's diagram).

    config ─► existing AKS cluster (lookup, prerequisites) ─► Kubernetes provider
        └─► Inspektor Gadget extension ─► Pyroscope Helm release (internal LB + private link service)
                └─► Grafana private link: wait for PLS ─► MPE ─► approve ─► refresh ─► private IP
"""

import pulumi

from components import config
from components.cluster import kubernetes_provider, lookup_cluster
from components.grafana import lookup_grafana
from components.grafana_private_link import GrafanaPrivateLink, GrafanaPrivateLinkArgs
from components.inspektor_gadget import InspektorGadget, InspektorGadgetArgs
from components.pyroscope import Pyroscope, PyroscopeArgs

cfg = config.load()
cluster = lookup_cluster(cfg)
grafana = lookup_grafana(cfg)
kubernetes = kubernetes_provider("aks", cfg)

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
    ),
)

pyroscope = Pyroscope(
    "pyroscope",
    PyroscopeArgs(
        chart=cfg.pyroscope_chart,
        chart_version=cfg.pyroscope_chart_version,
        image_tag=cfg.pyroscope_image_tag,
        private_link_service_name=cfg.private_link_service_name,
        private_link_resource_group=cfg.private_link_service_resource_group,
        private_link_visibility=cfg.private_link_visibility_list,
        private_link_subnet=cfg.private_link_subnet,
        private_link_ip_address_count=cfg.private_link_ip_address_count,
        timeout_seconds=cfg.pyroscope_release_timeout_seconds,
    ),
    opts=pulumi.ResourceOptions(providers=[kubernetes], depends_on=[gadget]),
)

private_link = GrafanaPrivateLink(
    "grafana-private-link",
    GrafanaPrivateLinkArgs(
        grafana_id=grafana.id,
        grafana_name=cfg.grafana_name,
        grafana_resource_group=cfg.grafana_resource_group,
        grafana_location=grafana.location,
        private_link_service_name=cfg.private_link_service_name,
        private_link_service_resource_group=cfg.private_link_service_resource_group or cluster.node_resource_group,
        private_link_service_region=cluster.location,
        managed_private_endpoint_name=cfg.managed_private_endpoint_name,
        request_message=f"Azure Managed Grafana {cfg.grafana_name} to Pyroscope on AKS cluster {cfg.cluster_name}",
        private_link_service_timeout_seconds=cfg.private_link_service_timeout_seconds,
        approval_timeout_seconds=cfg.connection_approval_timeout_seconds,
        refresh_timeout_seconds=cfg.managed_private_endpoint_timeout_seconds,
    ),
    opts=pulumi.ResourceOptions(depends_on=[pyroscope]),
)

pulumi.export("clusterId", cluster.id)
pulumi.export("nodeResourceGroup", cluster.node_resource_group)
pulumi.export("extensionId", gadget.extension_id)
pulumi.export("pyroscopeInClusterUrl", pyroscope.in_cluster_url)
pulumi.export("privateLinkServiceName", cfg.private_link_service_name)
pulumi.export(
    "privateLinkServiceResourceGroup", cfg.private_link_service_resource_group or cluster.node_resource_group
)
pulumi.export("privateLinkServiceId", private_link.private_link_service_id)
pulumi.export("managedPrivateEndpointId", private_link.managed_private_endpoint_id)
pulumi.export("managedPrivateEndpointState", private_link.connection_state)
pulumi.export("pyroscopePrivateUrl", private_link.pyroscope_url)
pulumi.export("grafanaEndpoint", grafana.endpoint)
