"""docs/existing-objects.md under the real engine: a Grafana made in the portal under the name `createGrafana` would
create (existing/taken.py), and what a run of the published procedure by hand left (existing/handmade.py), are refused
in one line before anything is registered, where azure-native's Create or Helm's install used to fail `pulumi up` half
way."""

from __future__ import annotations

import subprocess

from stack.specs import STACK_ANNOTATION
from tests.support import fake_world
from tests.support.procedure import GRAFANA_ID, procedure

STACK = "dev"
GRAFANA = "azure-native:dashboard:Grafana"
NAMES = {"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"}
EXTENSION = {"resourceGroupName": "rg-aks-gpu-dev", "clusterRp": "Microsoft.ContainerService",
             "clusterResourceName": "managedClusters", "clusterName": "aks-gpu-dev",
             "extensionName": "inspektor-gadget"}
MPE = {"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev",
       "managedPrivateEndpointName": "pyroscope-mpe"}


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


def test_a_run_by_hand_is_refused_in_one_line_before_anything_is_created(aks, engine_tools, chart, tmp_path, helm):
    """The procedure's extension, Helm release and endpoint stopped the first `pulumi up` in one line before anything
    registered: the program read namespace gadget and the release's records with the real kubectl from the real API
    server (existing/handmade.py). Once the line's commands removed them, the namespace they leave is refused alone
    (pulumi-kubernetes 4.29.0+ creates nothing that exists)."""
    procedure(aks, helm)
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    before = aks.cp.get("/api/v1/namespaces/gadget")["metadata"]
    mark = f"{STACK_ANNOTATION}=aks-gpu-observability/dev annotation: a run by hand?"
    expected = [
        ("extensionName: extension /subscriptions/",
         "/extensions/inspektor-gadget, Helm release pyroscope in namespace gadget, managed private endpoint "
         "/subscriptions/", f"already exist and this stack did not make them "
         f"(namespace gadget has no {mark}): bring them under the stack (docs/adopting.md), or delete them (az "
         "k8s-extension delete", "; helm uninstall pyroscope --namespace gadget; az grafana mpe delete"),
        ("clusterName: namespace gadget already exists and this stack did not make it",
         "kubectl delete namespace gadget"),
    ]
    for number, parts in enumerate(expected):
        done = ws.up(STACK, check=False)
        text = done.stdout + done.stderr
        assert done.returncode != 0 and all(part in text for part in parts), text[-3000:]
        assert [r["type"] for r in ws.state(STACK).get("resources") or []
                if not r["type"].startswith("pulumi:")] == []  # nothing registered, so nothing created
        if number == 0:  # the line's commands, as the user runs them (simulated Azure; the real Helm)
            with fake_world.locked(str(aks.world_path)) as world:
                fake_world.arm_delete(world, "azure-native:kubernetesconfiguration:Extension", EXTENSION, "")
                fake_world.arm_delete(world, fake_world.MPE, MPE, GRAFANA_ID)
            subprocess.run([helm, "uninstall", "pyroscope", "-n", "gadget", "--kubeconfig", str(aks.cp.kubeconfig)],
                           check=True, capture_output=True, timeout=120)
    assert aks.cp.get("/api/v1/namespaces/gadget")["metadata"].get("annotations") == before.get("annotations")
