"""The move into the component under the real engine: a stack deployed by the program before it
(tests/data/main_before_component.py, every child at the stack's root) previews, with today's program, one create,
the component, and every other resource the same; `pulumi up` then changes no object (same ids, same uids) and a
further preview changes nothing. pulumi/pulumi#9844 and pulumi/pulumi#8589: re-parented without aliases, every
resource would be deleted and created again, a Kubernetes object refused as "already exists"."""

from __future__ import annotations

import shutil

from tests.support import ROOT

STACK = "dev"
OLD_LAYOUT = ROOT / "tests" / "data" / "main_before_component.py"
COMPONENT = "aks-gpu-observability:index:GpuObservability"
OBJECTS = ("/api/v1/namespaces/gadget", "/api/v1/namespaces/gadget/persistentvolumeclaims/data-pyroscope-0",
           "/api/v1/namespaces/gadget/services/pyroscope-private-link")


def ids(state: dict) -> dict[str, str]:
    """Resource name -> id, for what has one (custom resources and providers)."""
    return {r["urn"].rsplit("::", 1)[-1]: r.get("id") for r in state.get("resources") or [] if r.get("id")}


def test_a_stack_of_the_old_layout_takes_the_component_without_touching_anything(aks, engine_tools, chart, tmp_path):
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    program = (ws.project / "__main__.py").read_text()
    shutil.copy2(OLD_LAYOUT, ws.project / "__main__.py")
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    ws.up(STACK)
    before, outputs = ids(ws.state(STACK)), ws.outputs(STACK, show_secrets=True)
    uids = {path: aks.cp.get(path)["metadata"]["uid"] for path in OBJECTS}
    assert not [r for r in ws.state(STACK)["resources"] if r["type"] == COMPONENT]

    (ws.project / "__main__.py").write_text(program)
    summary = ws.preview(STACK)["changeSummary"]
    assert {op: n for op, n in summary.items() if op != "same"} == {"create": 1}, summary
    ws.up(STACK)
    state = ws.state(STACK)
    component = next(r for r in state["resources"] if r["type"] == COMPONENT)
    moved = [r for r in state["resources"] if r.get("parent") == component["urn"]]
    assert {r["urn"].rsplit("::", 1)[-1] for r in moved} >= {"aks", "gadget", "pyroscope", "grafana-private-link",
                                                              "grafana-datasources", "gpu-dashboard"}
    assert ids(state) == before
    assert {path: aks.cp.get(path)["metadata"]["uid"] for path in OBJECTS} == uids
    assert ws.outputs(STACK, show_secrets=True) == outputs
    changes = {op: n for op, n in ws.preview(STACK)["changeSummary"].items() if op != "same"}
    assert changes == {}, changes
