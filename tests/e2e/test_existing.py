"""docs/existing-objects.md under the real engine: a Grafana made in the portal under the name `createGrafana` would
create (existing/taken.py), and what a run of the published procedure by hand left (existing/handmade.py), are refused
in one line before anything is registered, where azure-native's Create or Helm's install used to fail `pulumi up` half
way."""

from __future__ import annotations

import subprocess

from stack.specs import STACK_ANNOTATION
from tests.support import fake_world
from tests.support.procedure import procedure

STACK = "dev"
GRAFANA = "azure-native:dashboard:Grafana"
NAMES = {"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"}
EXTENSION = {"resourceGroupName": "rg-aks-gpu-dev", "clusterRp": "Microsoft.ContainerService",
             "clusterResourceName": "managedClusters", "clusterName": "aks-gpu-dev",
             "extensionName": "inspektor-gadget"}


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


def test_a_run_by_hand_is_refused_before_anything_is_created_one_object_at_a_time(aks, engine_tools, chart, tmp_path,
                                                                                  helm):
    """The procedure's extension, then (once deleted) its Helm release, then its endpoint, each stopped the first
    `pulumi up` in one line before anything registered: the program read namespace gadget and the release's records
    with the real kubectl from the real API server (existing/handmade.py)."""
    procedure(aks, helm)
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    before = aks.cp.get("/api/v1/namespaces/gadget")["metadata"]
    expected = [
        ("extensionName: /subscriptions/", "Microsoft.KubernetesConfiguration/extensions/inspektor-gadget already "
                                           "exists and this stack did not make it (namespace gadget has no "
                                           f"{STACK_ANNOTATION}=aks-gpu-observability/dev annotation"),
        ("clusterName: Helm release pyroscope in namespace gadget already exists", "helm uninstall pyroscope"),
        ("managedPrivateEndpointName: /subscriptions/", "bring it under the stack (docs/adopting.md) or delete it (az "
                                                        "grafana mpe delete --workspace-name amg-gpu-dev"),
    ]
    for number, (first, then) in enumerate(expected):
        done = ws.up(STACK, check=False)
        text = done.stdout + done.stderr
        assert done.returncode != 0 and first in text and then in text, text[-3000:]
        assert [r["type"] for r in ws.state(STACK).get("resources") or []
                if not r["type"].startswith("pulumi:")] == []  # nothing registered, so nothing created
        # The way out the line gives, as the user runs it (simulated Azure; the real Helm).
        if number == 0:
            with fake_world.locked(str(aks.world_path)) as world:
                fake_world.arm_delete(world, "azure-native:kubernetesconfiguration:Extension", EXTENSION, "")
        elif number == 1:
            subprocess.run([helm, "uninstall", "pyroscope", "-n", "gadget", "--kubeconfig", str(aks.cp.kubeconfig)],
                           check=True, capture_output=True, timeout=120)
    assert aks.cp.get("/api/v1/namespaces/gadget")["metadata"].get("annotations") == before.get("annotations")
