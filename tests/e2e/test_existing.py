"""docs/existing-objects.md under the real engine: a Grafana made in the portal under the name `createGrafana` would
create is refused in one line before anything is registered (existing/taken.py), where azure-native's Create used to
fail `pulumi up` half way; with its managed-by tag it is the stack's own and `pulumi up` goes on."""

from __future__ import annotations

from tests.support import fake_world

STACK = "dev"
GRAFANA = "azure-native:dashboard:Grafana"
NAMES = {"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"}


def test_a_grafana_made_in_the_portal_is_refused_before_anything_is_created(aks, engine_tools, chart, tmp_path):
    with fake_world.locked(str(aks.world_path)) as world:
        world["arm"][fake_world.arm_identity(GRAFANA, NAMES)] = {**NAMES, "location": "eastus2", "tags": {}}
        before = sorted(world["arm"])
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference, "createGrafana": "true"})
    done = ws.up(STACK, check=False)
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert "createGrafana: /subscriptions/" in text and "already exists and this stack did not make it" in text, \
        text[-3000:]
    assert [r["type"] for r in ws.state(STACK).get("resources") or []
            if not r["type"].startswith("pulumi:")] == []  # nothing registered, so nothing created
    assert sorted(aks.world()["arm"]) == before
    assert aks.cp.get("/api/v1/namespaces/gadget") is None
