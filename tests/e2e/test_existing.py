"""docs/existing-objects.md under the real engine: a Grafana made in the portal under the name `createGrafana` would
create (existing/taken.py), and what a run of the published procedure by hand left (existing/handmade.py), are refused
in one line before anything is registered, where azure-native's Create or Helm's install used to fail `pulumi up` half
way."""

from __future__ import annotations

import subprocess

from stack.specs import STACK_ANNOTATION
from tests.support import ROOT, fake_world
from tests.support.procedure import GRAFANA_ID, HAND_MADE_UID, procedure
from tests.support.real_engine import Workspace

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
    """The procedure's extension, Helm release, endpoint, namespace and Prometheus datasource stopped the first `pulumi
    up` in one line before anything registered: the program read namespace gadget and the release's records with the
    real kubectl from the real API server, Grafana's datasource through the stand-in az (existing/handmade.py). The
    line's commands, run as given, leave a setup the next `up` deploys over."""
    procedure(aks, helm)
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    done = ws.up(STACK, check=False)
    text = done.stdout + done.stderr
    line = next((x for x in text.splitlines() if "extensionName: extension /subscriptions/" in x), "")
    found = "/extensions/inspektor-gadget, Helm release pyroscope in namespace gadget, managed private endpoint /"
    assert done.returncode != 0 and found in line, text[-3000:]
    assert line.endswith(
        f"namespace gadget (no {STACK_ANNOTATION}=aks-gpu-observability/dev annotation; pulumi-kubernetes creates "
        "nothing that exists) already exist and this stack did not make them (a run by hand?): bring them under the "
        "stack (docs/adopting.md), or delete them (az k8s-extension delete --cluster-type managedClusters "
        "--cluster-name aks-gpu-dev --resource-group rg-aks-gpu-dev --name inspektor-gadget; helm uninstall pyroscope "
        "--namespace gadget; az grafana mpe delete --workspace-name amg-gpu-dev --resource-group rg-observability-dev "
        "--name pyroscope-mpe; kubectl delete namespace gadget, which deletes all in it, Pyroscope's volumes and "
        "profiles too: kubectl get pvc,all --namespace gadget shows them; the helm and kubectl ones on the cluster's "
        "context: az aks get-credentials --resource-group rg-aks-gpu-dev --name aks-gpu-dev), and the stack makes its "
        "own; Grafana does not change "
        f"a datasource's uid, so for datasource 'amw-gpu-dev' under uid '{HAND_MADE_UID}' (not "
        f"'azure-monitor-prometheus') keep the uid (pulumi config set prometheusDatasourceUid {HAND_MADE_UID}) or "
        "rename or delete it in Grafana"), line
    assert [r["type"] for r in ws.state(STACK).get("resources") or []
            if not r["type"].startswith("pulumi:")] == []  # nothing registered, so nothing created
    # The line's commands, in its order, as the user runs them: the simulated Azure's two, the real Helm and kubectl,
    # then the config that keeps the datasource's uid.
    with fake_world.locked(str(aks.world_path)) as world:
        fake_world.arm_delete(world, "azure-native:kubernetesconfiguration:Extension", EXTENSION, "")
        fake_world.arm_delete(world, fake_world.MPE, MPE, GRAFANA_ID)
    kubeconfig = ["--kubeconfig", str(aks.cp.kubeconfig)]
    subprocess.run([helm, "uninstall", "pyroscope", "-n", "gadget", *kubeconfig], check=True, capture_output=True,
                   timeout=120)
    subprocess.run([str(engine_tools.bin / "kubectl"), *kubeconfig, "delete", "namespace", "gadget", "--wait"],
                   check=True, capture_output=True, timeout=120)
    ws.pulumi("config", "set", "prometheusDatasourceUid", HAND_MADE_UID, stack=STACK)
    ws.up(STACK)
    namespace = aks.cp.get("/api/v1/namespaces/gadget")["metadata"]
    assert namespace["annotations"][STACK_ANNOTATION] == "aks-gpu-observability/dev"


def test_a_private_cluster_is_refused_from_outside_its_network_and_deployed_from_inside(
        aks, engine_tools, chart, tmp_path):
    """Parallels/prl-devops-service PR #520, ministryofjustice/cloud-platform#8159: a private cluster's API server has
    a private address only, and what followed from a machine off its network read as "the cluster is gone". Under the
    real engine: ARM (simulated) answers the cluster as private; with the API server's address unresolvable (a hosted
    runner) `pulumi up` is refused in one line and registers nothing; from the cluster's network (the control plane
    here answers) the stack deploys."""
    cid = next(iter(aks.world()["clusters"]))
    with fake_world.locked(str(aks.world_path)) as world:
        world["clusters"][cid]["apiServerAccessProfile"] = {"enablePrivateCluster": True}
        server = world["clusters"][cid]["server"]
        world["clusters"][cid]["server"] = "https://aks-gpu-dev-0f1e2d3c.privatelink.eastus2.invalid:443"
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    done = ws.up(STACK, check=False)
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert ("clusterName: cluster 'aks-gpu-dev' is a private cluster (apiServerAccessProfile.enablePrivateCluster) "
            "and its API server aks-gpu-dev-0f1e2d3c.privatelink.eastus2.invalid:443 cannot be reached from this "
            "machine") in text, text[-3000:]
    assert [r["type"] for r in ws.state(STACK).get("resources") or [] if not r["type"].startswith("pulumi:")] == []
    with fake_world.locked(str(aks.world_path)) as world:
        world["clusters"][cid]["server"] = server  # on the cluster's network: the API server answers
    ws.up(STACK)
    assert aks.cp.get("/api/v1/namespaces/gadget/services/pyroscope-private-link") is not None


def test_a_refusal_names_a_cluster_from_a_secret_stack_output_as_secret(aks, engine_tools, chart, tmp_path):
    """The cluster's name comes from another stack's secret output (``clusterStack``); the engine masks only this
    stack's own secret config, so the refusal the program prints (a private cluster unreachable from here) would show
    the name, and its node resource group and API server host, in plain text. Under the real engine and a real
    StackReference: ``[secret]`` in their place, and nothing registered."""
    cid = next(iter(aks.world()["clusters"]))
    with fake_world.locked(str(aks.world_path)) as world:
        world["clusters"][cid]["apiServerAccessProfile"] = {"enablePrivateCluster": True}
        world["clusters"][cid]["server"] = "https://aks-gpu-dev-0f1e2d3c.privatelink.eastus2.invalid:443"
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    platform = tmp_path / "platform"
    platform.mkdir()
    (platform / "Pulumi.yaml").write_text(
        "name: platform\nruntime:\n  name: python\n  options:\n    toolchain: pip\n"
        f"    virtualenv: {ROOT / '.venv'}\n")
    (platform / "__main__.py").write_text(
        "import pulumi\n"
        "pulumi.export('clusterName', pulumi.Output.secret('aks-gpu-dev'))\n"
        "pulumi.export('clusterResourceGroup', pulumi.Output.secret('rg-aks-gpu-dev'))\n")
    cluster_side = Workspace(tmp_path / "platform-ws", engine_tools, aks.world_path,
                             {"PULUMI_BACKEND_URL": ws.env["PULUMI_BACKEND_URL"]}, project=platform)
    cluster_side.init("prod", {})
    cluster_side.up("prod")
    ws.init(STACK, {"pyroscopeChart": chart.reference, "clusterName": "", "clusterResourceGroup": "",
                    "clusterStack": "organization/platform/prod"})
    done = ws.up(STACK, check=False)
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert "clusterName: cluster '[secret]' is a private cluster" in text, text[-3000:]
    assert "aks-gpu-dev" not in text and "rg-aks-gpu-dev" not in text, text[-3000:]
    assert [r["type"] for r in ws.state(STACK).get("resources") or [] if not r["type"].startswith("pulumi:")] == []
