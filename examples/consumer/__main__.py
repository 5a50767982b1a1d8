"""A consumer of aks-gpu-observability: an ML team's stack that reads the observability stack's outputs
through a StackReference and publishes them where its engineers and tools look, a ConfigMap in the team's
namespace (on the cluster the observability stack reports). Uses only outputs of the documented contract
(docs/outputs.md; stack/outputs.py), each with require_output, so a missing one fails loudly.
"""

import pulumi
import pulumi_kubernetes as k8s

config = pulumi.Config()
observability = pulumi.StackReference(config.require("observabilityStack"))

dashboard_url = observability.require_output("dashboardUrl")
grafana_endpoint = observability.require_output("grafanaEndpoint")
pyroscope_uid = observability.require_output("pyroscopeDatasourceUid")
prometheus_uid = observability.require_output("prometheusDatasourceUid")
cluster_name = observability.require_output("clusterName")

links = k8s.core.v1.ConfigMap(
    "gpu-observability-links",
    metadata=k8s.meta.v1.ObjectMetaArgs(
        name="gpu-observability",
        namespace=config.get("teamNamespace") or "ml-inference",
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
)

pulumi.export("dashboardUrl", dashboard_url)
pulumi.export("configMap", links.metadata.apply(lambda m: f"{m.namespace}/{m.name}"))
