"""Every kill point converges: the real Pulumi CLI killed (SIGKILL, with everything it started) while one step is in
flight (tests/support/kill_points.py) — of a `pulumi up` from empty, a day-two change that replaces the endpoint chain
(the PLS renamed), a chart upgrade or a `pulumi destroy` — then recovered as docs/troubleshooting.md says:
``python -m ops.recover --stack dev --run``, then the interrupted command again. After it, a further `pulumi up`
changes nothing and the world holds exactly what an uninterrupted run makes (after a destroy: nothing of the stack),
the profile claim never deleted."""

from __future__ import annotations

import os

import pytest

from tests.support.kill_points import (
    KILL_POINTS,
    KUBERNETES,
    OBJECTS,
    KillPoint,
    kill_during,
    pending_operations,
    recover,
)
from tests.support.once import once_per_run

STACK = "dev"
UP = ["up", "--yes", "--skip-preview"]
DESTROY = ["destroy", "--yes", "--skip-preview"]
CLAIM = "/api/v1/namespaces/gadget/persistentvolumeclaims/data-pyroscope-0"


def cluster_objects(aks) -> set[tuple[str, str]]:
    """(kind, name) of what the stack and its release make in the namespace ``gadget``."""
    kinds = {"Service": "/api/v1/namespaces/gadget/services",
             "Claim": "/api/v1/namespaces/gadget/persistentvolumeclaims",
             "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/gadget/networkpolicies",
             "StatefulSet": "/apis/apps/v1/namespaces/gadget/statefulsets",
             "Deployment": "/apis/apps/v1/namespaces/gadget/deployments",
             "HelmRelease": "/api/v1/namespaces/gadget/secrets?labelSelector=owner%3Dhelm"}
    found = set()
    for kind, path in kinds.items():
        for item in (aks.cp.get(path) or {}).get("items", []):
            labels = item["metadata"].get("labels") or {}
            found.add((kind, f"{labels['name']}:{labels['status']}" if kind == "HelmRelease"
                       else item["metadata"]["name"]))
    return found


def azure_objects(aks) -> dict:
    """What the simulated Azure holds of the stack: ARM resources (type and name), endpoints and their state, private
    link services and their connections, Grafana's datasources and dashboards."""
    world = aks.world()
    return {"arm": sorted(key.split(" ", 1)[0] for key in world["arm"]),
            "mpes": sorted((m["status"], m.get("ip", "")) for m in world["mpes"].values()),
            "pls": sorted(tuple(c["status"] for c in p["connections"]) for p in world["pls"].values()),
            "datasources": sorted(d for g in world["grafana"].values() for d in g.get("datasources", {})),
            "dashboards": sorted(d for g in world["grafana"].values() for d in g.get("dashboards", {}))}


@pytest.fixture(scope="module")
def reference_world(tmp_path_factory, engine_tools, chart):
    """The cluster objects and Azure objects of an uninterrupted `pulumi up` of the dev stack: made once per test run,
    the xdist workers sharing it (tests/support/once.py)."""
    def make() -> tuple:
        from tests.support.simulated_aks import aks_cluster
        folder = tmp_path_factory.mktemp("reference")
        with aks_cluster(folder, engine_tools) as aks:
            ws = aks.workspace(folder / "ws", engine_tools, chart)
            ws.init(STACK, {"pyroscopeChart": chart.reference})
            ws.up(STACK)
            return set(cluster_objects(aks)), azure_objects(aks)

    return once_per_run(tmp_path_factory, "kill-points-reference-world", make)


def summary(printed: str) -> list[str]:
    """ops.recover's printed commands as docs/kill-points.md names them."""
    steps = []
    for line in printed.splitlines():
        words = line.split()
        if words[:2] == ["pulumi", "cancel"]:
            steps.append("pulumi cancel")
        elif words[:1] == ["helm"]:
            steps.append(f"helm {words[1]} {words[2]}")
        elif words[:3] == ["pulumi", "stack", "import"]:
            steps.append("pulumi stack import")
        elif words[:2] == ["pulumi", "import"]:
            steps.append("pulumi import --file")
        elif words[:2] == ["pulumi", "refresh"]:
            steps.append("pulumi refresh --clear-pending-creates")
    return steps


def prepare(ws, point: KillPoint, chart) -> list[str]:
    """The stack before the kill, and the command to kill."""
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    if point.run == "up":
        return UP
    ws.up(STACK)
    if point.run == "day-two":
        ws.pulumi("config", "set", "privateLinkServiceName", "pyroscope-pls-2", stack=STACK)
    elif point.run == "upgrade":
        ws.pulumi("config", "set", "pyroscopeChartVersion", "1.15.1", stack=STACK)
    return DESTROY if point.run == "destroy" else UP


@pytest.fixture(autouse=True)
def _helm_installed():
    if not os.environ.get("HELM_BIN") and os.environ.get("REQUIRE_HELM") == "1":
        pytest.fail("real Helm is not installed (HELM_BIN; .ci/install-helm .tools installs it)", pytrace=False)


@pytest.mark.parametrize("point", KILL_POINTS, ids=lambda p: p.id)
def test_a_run_killed_at_this_point_converges_after_the_documented_recovery(
        point, aks, engine_tools, chart, tmp_path, reference_world):
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    argv = prepare(ws, point, chart)
    claim = aks.cp.get(CLAIM)
    killed = kill_during(ws, aks, STACK, argv, point)
    assert killed.effect_seen, f"{point.id}: the kill came before the {point.op} took effect"
    left = aks.cp.get(OBJECTS[point.resource]) if point.hold == KUBERNETES and point.op == "create" else None
    assert (point.resource, point.pending) in pending_operations(ws)
    steps = summary(recover(ws, aks))
    expected = [s.split(" (")[0] for s in point.recovery()[:-1]]
    # The point's own lines, in order; a step in flight beside it (the Helm release beside the Grafana steps) may
    # add its own.
    assert [s for s in steps if s in expected] == expected, steps
    if point.run == "destroy":
        ws.destroy(STACK)
        assert [r for r in ws.state(STACK).get("resources") or [] if r["type"] != "pulumi:pulumi:Stack"] == []
        world = azure_objects(aks)
        assert world == {"arm": [], "mpes": [], "pls": [], "datasources": [], "dashboards": []}, world
        assert aks.cp.get("/api/v1/namespaces/gadget") is None or \
            aks.cp.get("/api/v1/namespaces/gadget")["status"].get("phase") == "Terminating"
        return
    ws.up(STACK)
    changes = {op: n for op, n in ws.preview(STACK)["changeSummary"].items() if op != "same"}
    assert changes == {}, changes
    cluster, azure = reference_world
    assert cluster_objects(aks) - {("HelmRelease", "pyroscope:superseded")} == \
        cluster - {("HelmRelease", "pyroscope:superseded")} or point.run == "upgrade"
    assert azure_objects(aks) == azure
    if claim is not None:
        assert aks.cp.get(CLAIM)["metadata"]["uid"] == claim["metadata"]["uid"], "the profile claim was replaced"
    if left is not None:  # the object the kill left is kept, never replaced by the recovery's next run
        assert aks.cp.get(OBJECTS[point.resource])["metadata"]["uid"] == left["metadata"]["uid"], point.resource
