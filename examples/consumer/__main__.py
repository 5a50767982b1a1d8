"""A consumer of aks-gpu-observability: an ML team's stack that reads the observability stack's outputs
through a StackReference and publishes them where its engineers and tools look, a ConfigMap in the team's
namespace, on the cluster the observability stack reports (its ``clusterId``), through an explicit provider
(cluster_access.py), never the current kubeconfig's cluster. The namespace is made if missing and left in place on
destroy. Uses only outputs of the documented contract (docs/outputs.md; stack/outputs.py), each with require_output,
so a missing one fails loudly. Run from this folder: README.md.
"""

import pulumi
import pulumi_kubernetes as k8s
from cluster_access import cluster_providers, settings

# Every config key checked here, in one line naming it, before anything is registered.
cfg = settings(pulumi.Config())
observability = pulumi.StackReference(cfg.observability_stack)

dashboard_url = observability.require_output("dashboardUrl")
grafana_endpoint = observability.require_output("grafanaEndpoint")
pyroscope_uid = observability.require_output("pyroscopeDatasourceUid")
prometheus_uid = observability.require_output("prometheusDatasourceUid")
cluster_name = observability.require_output("clusterName")
cluster, adopting = cluster_providers(observability, cfg.kubelogin_mode)

# The team's namespace usually exists already (its workloads run there): adopted then, made otherwise, and never
# deleted by this stack's destroy, which would take the team's workloads with it.
namespace = k8s.core.v1.Namespace(
    "team-namespace",
    metadata=k8s.meta.v1.ObjectMetaArgs(name=cfg.team_namespace),
    opts=pulumi.ResourceOptions(provider=adopting, retain_on_delete=True),
)

links = k8s.core.v1.ConfigMap(
    "gpu-observability-links",
    metadata=k8s.meta.v1.ObjectMetaArgs(
        name="gpu-observability",
        namespace=namespace.metadata.name,
        labels={"app.kubernetes.io/managed-by": "pulumi"},
    ),
    data={
        "cluster": cluster_name,
        "dashboardUrl": dashboard_url,
        "grafanaEndpoint": grafana_endpoint,
        "pyroscopeDatasourceUid": pyroscope_uid,
        "prometheusDatasourceUid": prometheus_uid,
        # Grafana Explore, opened on this cluster's GPU-memory profiles.
        "flameGraphUrl": pulumi.Output.concat(
            grafana_endpoint, "/explore?left=%7B%22datasource%22:%22", pyroscope_uid, "%22%7D"
        ),
    },
    opts=pulumi.ResourceOptions(provider=cluster),
)

pulumi.export("dashboardUrl", dashboard_url)
pulumi.export("configMap", links.metadata.apply(lambda m: f"{m.namespace}/{m.name}"))
