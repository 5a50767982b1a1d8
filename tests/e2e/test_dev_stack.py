"""The dev stack under the real engine: ``pulumi up`` from empty, the end state in the API server and the simulated
Azure, a second ``up`` that changes nothing, and a ``destroy`` that leaves nothing behind (docs/real-engine.md)."""

from __future__ import annotations

import json

from offline import canned

STACK = "dev"
NAMESPACE = "/api/v1/namespaces/gadget"


def non_stack_resources(state: dict) -> list[str]:
    return [r["urn"] for r in state.get("resources") or [] if r["type"] not in ("pulumi:pulumi:Stack",)
            and not r["type"].startswith("pulumi:providers:")]


def test_up_from_empty_then_a_rerun_changes_nothing_and_destroy_leaves_nothing(aks, engine_tools, chart, tmp_path):
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    # The first preview of a new stack: nothing exists yet, and no lookup may run before the step that makes it.
    first = ws.preview(STACK)["changeSummary"]
    assert set(first) == {"create"} and first["create"] >= 26, first
    ws.up(STACK)
    cp = aks.cp

    # --- the cluster side, read back from the API server ---
    assert cp.get(NAMESPACE)["status"]["phase"] == "Active"
    claim = cp.get(f"{NAMESPACE}/persistentvolumeclaims/data-pyroscope-0")
    assert claim["status"]["phase"] == "Bound" and claim["spec"]["storageClassName"] == "managed-csi"
    assert claim["spec"]["resources"]["requests"]["storage"] == "64Gi"
    policies = {p["metadata"]["name"] for p in cp.get("/apis/networking.k8s.io/v1/namespaces/gadget/networkpolicies")[
        "items"]}
    assert {"pyroscope", "pyroscope-private-link"} <= policies
    service = cp.get(f"{NAMESPACE}/services/pyroscope-private-link")
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["status"]["loadBalancer"]["ingress"][0]["ip"].startswith("10.224.")
    pods = cp.get(f"{NAMESPACE}/pods")["items"]
    selected = [p for p in pods
                if all(p["metadata"].get("labels", {}).get(k) == v for k, v in service["spec"]["selector"].items())]
    assert [p["metadata"]["name"] for p in selected] == ["pyroscope-0"]
    assert cp.get("/apis/apps/v1/namespaces/gadget/statefulsets/pyroscope")["status"]["readyReplicas"] == 1
    assert cp.get(f"{NAMESPACE}/services/pyroscope")["spec"]["ports"][0]["port"] == 4040
    assert cp.get(f"{NAMESPACE}/secrets/sh.helm.release.v1.pyroscope.v1") is not None

    # --- the Azure side, from the simulated world ---
    world = aks.world()
    pls = [p for p in world["pls"].values() if p["id"].endswith("/pyroscope-pls")]
    assert len(pls) == 1 and [c["status"] for c in pls[0]["connections"]] == ["Approved"]
    mpe = next(iter(world["mpes"].values()))
    assert (mpe["status"], mpe["ip"]) == ("Approved", canned.MPE_PRIVATE_IP)
    grafana = next(iter(world["grafana"].values()))
    assert grafana["datasources"]["local-pyroscope"]["url"] == f"http://{canned.MPE_PRIVATE_IP}:4040"
    assert {ds["type"] for ds in grafana["datasources"].values()} == {"grafana-pyroscope-datasource", "prometheus"}
    assert "AdvancedGPUObservability" in grafana["dashboards"]
    assert list(world["disks"].values())[0]["size"] == "64Gi"
    assert aks.cloud.errors == []

    # --- a second up changes nothing ---
    preview = ws.preview(STACK)
    changes = {op: n for op, n in preview["changeSummary"].items() if op != "same"}
    moved = [s["urn"] for s in preview["steps"] if s["op"] != "same"]
    assert changes == {}, f"a re-run would change {changes}: {moved}"
    assert "unchanged" in ws.up(STACK).stdout

    # --- destroy leaves nothing ---
    ws.destroy(STACK)
    assert non_stack_resources(ws.state(STACK)) == []
    assert cp.get(NAMESPACE) is None
    assert cp.get("/api/v1/persistentvolumes")["items"] == []
    world = aks.world()
    assert (world["pls"], world["mpes"], world["arm"], world.get("disks")) == ({}, {}, {}, {})
    assert all(not g["datasources"] and not g["dashboards"] for g in world["grafana"].values())
    assert aks.cloud.errors == []


def _nonce(world: dict) -> str:
    """The approval nonce in the request message of the one managed private endpoint the simulated Azure holds."""
    import re

    messages = [a["requestMessage"] for k, a in world["arm"].items()
                if k.startswith("azure-native:dashboard:ManagedPrivateEndpoint ")]
    assert len(messages) == 1, messages
    found = re.search(r"\(aks-gpu-observability ([0-9a-f]{32})\)$", messages[0])
    assert found, messages[0]
    return found.group(1)


def test_an_upgraded_stack_keeps_its_endpoint_and_each_new_endpoint_gets_a_nonce_of_its_own(aks, engine_tools, chart,
                                                                                              tmp_path):
    """From a stack whose nonce step predates the rotation (no interpreter, no ENDPOINT): the preview after the upgrade
    shows the nonce step updated and nothing else, not the endpoint chain replaced (pulumi-go-provider answers an
    update's outputs unknown only when an input the old state had changed), and `pulumi up` keeps the nonce and the
    endpoint. Then a nonce read from the state (production's is readable by the drift identity) must not open the
    next endpoint: a change that replaces Grafana's managed private endpoint makes a new nonce, the new endpoint is
    approved with it, the old one is gone from the state, and a re-run keeps the new one."""
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    component = ws.project / "components" / "grafana_private_link.py"
    current = component.read_text()
    rotation = ('            interpreter=NONCE_INTERPRETER,\n'
                '            environment={"ENDPOINT": endpoint_key(args)},\n')
    assert rotation in current, "update the older copy of the nonce step"
    component.write_text(current.replace(rotation, "").replace('additional_secret_outputs=["stdout", "stderr"]',
                                                                'additional_secret_outputs=["stdout"]'))
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    ws.up(STACK)
    first, created = _nonce(aks.world()), [m["createdAt"] for m in aks.world()["mpes"].values()]

    component.write_text(current)
    preview = ws.preview(STACK)
    moved = {s["urn"].rsplit("::", 1)[-1]: s["op"] for s in preview["steps"] if s["op"] != "same"}
    assert moved == {"grafana-private-link-approval-nonce": "update"}, moved
    ws.up(STACK)
    assert _nonce(aks.world()) == first
    assert [m["createdAt"] for m in aks.world()["mpes"].values()] == created, "the endpoint was not re-created"

    ws.pulumi("config", "set", "managedPrivateEndpointName", "pyroscope-mpe-2", stack=STACK)
    ws.up(STACK)
    world = aks.world()
    second = _nonce(world)
    assert second != first
    pls = [p for p in world["pls"].values() if p["id"].endswith("/pyroscope-pls")]
    assert [c["status"] for c in pls[0]["connections"]] == ["Approved"]
    assert [m["status"] for m in world["mpes"].values()] == ["Approved"]
    assert first not in json.dumps(ws.state(STACK)), "the spent nonce is gone from the state"
    again = ws.preview(STACK)
    assert {op: n for op, n in again["changeSummary"].items() if op != "same"} == {}
    assert _nonce(aks.world()) == second
    ws.destroy(STACK)
    assert non_stack_resources(ws.state(STACK)) == []
