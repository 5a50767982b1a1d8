"""Two clusters on one Grafana under the real engine (docs/platform.md, "Many clusters, one Grafana"): stack ``a``
creates the Grafana workspace and runs Pyroscope in microservices mode, stack ``b`` joins that Grafana in single-binary
mode; both ``multiCluster``. Each cluster is its own real control plane; Azure is one simulated world."""

from __future__ import annotations

from offline import canned
from tests.support.simulated_aks import aks_fleet

GRAFANA = {"grafanaName": "amg-gpu-fleet", "grafanaResourceGroup": "rg-observability-fleet",
           "monitorWorkspaceName": "amw-gpu-dev", "monitorWorkspaceResourceGroup": "rg-observability-dev",
           "azure-native:location": "eastus2"}
CLUSTERS = [("rg-aks-gpu-a", "aks-gpu-a"), ("rg-aks-gpu-b", "aks-gpu-b")]


def config(cluster: tuple[str, str], chart, **extra) -> dict:
    rg, name = cluster
    return {"clusterName": name, "clusterResourceGroup": rg, **GRAFANA, "multiCluster": "true",
            "pyroscopeChart": chart.reference, **extra}


def test_two_clusters_share_one_created_grafana_and_leave_one_another_alone(engine_tools, chart, tmp_path):
    with aks_fleet(tmp_path, engine_tools, CLUSTERS) as (a, b):
        first = a.workspace(tmp_path / "a", engine_tools, chart)
        first.init("a", config(CLUSTERS[0], chart, createGrafana="true", pyroscopeMode="microservices"))
        first.up("a")
        second = b.workspace(tmp_path / "b", engine_tools, chart)
        second.init("b", config(CLUSTERS[1], chart))
        second.up("b")

        world = a.world()
        assert sorted((m["status"], m["ip"]) for m in world["mpes"].values()) == [
            ("Approved", canned.MPE_PRIVATE_IP)] * 2
        assert len(world["mpes"]) == 2 and len({m["pls"] for m in world["mpes"].values()}) == 2
        [grafana] = world["grafana"].values()
        pyroscope = {uid for uid, ds in grafana["datasources"].items() if ds["type"] == "grafana-pyroscope-datasource"}
        assert len(pyroscope) == 2, grafana["datasources"].keys()
        assert list(grafana["dashboards"]) == ["AdvancedGPUObservability"]
        ingesters = a.cp.get("/apis/apps/v1/namespaces/gadget/statefulsets/pyroscope-ingester")
        assert ingesters["status"]["readyReplicas"] == ingesters["spec"]["replicas"]
        assert b.cp.get("/apis/apps/v1/namespaces/gadget/statefulsets/pyroscope")["status"]["readyReplicas"] == 1
        for ws, stack in ((first, "a"), (second, "b")):
            again = {op: n for op, n in ws.preview(stack)["changeSummary"].items() if op != "same"}
            assert again == {}, (stack, again)

        second.destroy("b")
        world = a.world()
        assert [(m["status"], m["ip"]) for m in world["mpes"].values()] == [("Approved", canned.MPE_PRIVATE_IP)]
        [grafana] = world["grafana"].values()
        assert len([ds for ds in grafana["datasources"].values()
                    if ds["type"] == "grafana-pyroscope-datasource"]) == 1
        assert list(grafana["dashboards"]) == ["AdvancedGPUObservability"]  # shared: left for the other clusters
        assert b.cp.get("/api/v1/namespaces/gadget") is None

        first.destroy("a")
        world = a.world()
        assert (world["mpes"], world["pls"], world["arm"], world["grafana"]) == ({}, {}, {}, {})
        assert a.cp.get("/api/v1/namespaces/gadget") is None
