"""aks-gpu-observability: GPU-memory profiling on an existing AKS cluster (see README's diagram).

    config ─► existing AKS cluster (lookup, prerequisites) ─► Kubernetes provider
        └─► Inspektor Gadget extension ─► Pyroscope Helm release (internal LB + private link service)
"""

import pulumi

from components import config
from components.cluster import kubernetes_provider, lookup_cluster
from components.inspektor_gadget import InspektorGadget, InspektorGadgetArgs
from components.pyroscope import Pyroscope, PyroscopeArgs

cfg = config.load()
cluster = lookup_cluster(cfg)
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

pulumi.export("clusterId", cluster.id)
pulumi.export("nodeResourceGroup", cluster.node_resource_group)
pulumi.export("extensionId", gadget.extension_id)
pulumi.export("pyroscopeInClusterUrl", pyroscope.in_cluster_url)
pulumi.export("privateLinkServiceName", cfg.private_link_service_name)
pulumi.export(
    "privateLinkServiceResourceGroup", cfg.private_link_service_resource_group or cluster.node_resource_group
)
