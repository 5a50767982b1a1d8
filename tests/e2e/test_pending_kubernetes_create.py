"""A Kubernetes object whose create a killed `pulumi up` cut short: the cluster has it, the state only a pending create.
The documented recovery (docs/kill-points.md: ``python -m ops.recover --stack dev --run``, then `pulumi up`) must
converge with the object the kill left, whatever the kubernetes provider: pulumi-kubernetes up to 4.28 creates with a
server-side apply, an upsert; 4.29.0 and later (4.34.2 is what users run) create with a plain create, which the API
server refuses for an existing object ("already exists") on a provider without ``upsertExistingObjects``, as the
stack's ``aks`` provider is (pulumi/pulumi-kubernetes#2926). The kill is played without a race: the state of a
deployed stack is edited to what the kill leaves, for ``pyroscope-network-policy``, which nothing depends on.
Run with ``AKS_GPU_OBS_ENGINE_TOOLS`` naming tools whose pulumi-resource-kubernetes is 4.29.0 or later to hold the
recovery to the provider users run (docs/decisions/kubernetes-provider-newest.md); with any provider the recovery must
have put the object into the state (with the program's inputs: its next run changes nothing)."""

from __future__ import annotations

import json

from tests.support.kill_points import pending_operations, recover

STACK = "dev"
RESOURCE = "pyroscope-network-policy"
POLICY = "/apis/networking.k8s.io/v1/namespaces/gadget/networkpolicies/pyroscope"
#: What a resource's state entry has that a pending create's does not (the provider's answer).
ANSWERED = ("id", "outputs", "created", "modified", "initErrors")


def cut_short(ws, name: str) -> None:
    """Turn the state entry of ``name`` into the pending create a kill during its create leaves, in the backend's file
    (``pulumi stack import`` drops pending operations)."""
    path = ws.folder / "state" / ".pulumi" / "stacks" / "aks-gpu-observability" / f"{STACK}.json"
    stored = json.loads(path.read_text())
    resources = stored["checkpoint"]["latest"]["resources"]
    entry = next(r for r in resources if r["urn"].endswith("::" + name))
    users = [r["urn"] for r in resources if entry["urn"] in (r.get("dependencies") or [])
             or any(entry["urn"] in urns for urns in (r.get("propertyDependencies") or {}).values())]
    assert users == [], f"{name} has dependents, so a kill during its create would not have left them: {users}"
    resources.remove(entry)
    pending = {k: v for k, v in entry.items() if k not in ANSWERED}
    stored["checkpoint"]["latest"]["pending_operations"] = [{"resource": pending, "type": "creating"}]
    path.write_text(json.dumps(stored, indent=4))


def test_a_kubernetes_create_cut_short_converges_after_the_documented_recovery(aks, engine_tools, chart, tmp_path):
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    ws.up(STACK)
    uid = aks.cp.get(POLICY)["metadata"]["uid"]
    cut_short(ws, RESOURCE)
    assert pending_operations(ws) == [(RESOURCE, "creating")]

    printed = recover(ws, aks)
    assert any(line.startswith("pulumi stack import") for line in printed.splitlines()), printed
    assert pending_operations(ws) == []
    assert any(r["urn"].endswith("::" + RESOURCE) and r["provider"].split("::")[-2] == "aks"
               for r in ws.state(STACK)["resources"]), "imported under the program's provider"
    # Taken with the program's inputs, not the live object's (an import would add fields the program does not set,
    # and the next run would replace it): the next run has nothing to do.
    preview = ws.preview(STACK)
    changes = {op: n for op, n in preview["changeSummary"].items() if op != "same"}
    assert changes == {}, [(s["op"], s["urn"].rsplit("::", 1)[-1], s.get("diffReasons"))
                           for s in preview.get("steps", []) if s["op"] != "same"]
    ws.up(STACK)

    changes = {op: n for op, n in ws.preview(STACK)["changeSummary"].items() if op != "same"}
    assert changes == {}, changes
    state = ws.state(STACK)
    assert not state.get("pending_operations")
    assert any(r["urn"].endswith("::" + RESOURCE) for r in state["resources"])
    # The policy the kill left is the one kept: never deleted, so Pyroscope was never open meanwhile.
    assert aks.cp.get(POLICY)["metadata"]["uid"] == uid
