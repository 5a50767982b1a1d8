"""docs/adopting.md under the real engine: a setup made by hand by the published procedure (a real `helm install` of
the chart with the procedure's values into the real API server; the extension, Grafana's managed private endpoint,
approved and refreshed, its datasources and the dashboard in the simulated Azure) is taken over with the guide's
commands — the import file, the namespace's owner mark (the real kubectl), `pulumi up --target` the Kubernetes
provider, `pulumi import --file`, the Prometheus datasource's uid — and the next `pulumi up` converges."""

from __future__ import annotations

import subprocess
import sys

from offline import canned
from stack.specs import STACK_ANNOTATION
from tests.support import ROOT, fake_world
from tests.support.procedure import HAND_MADE_UID, procedure

STACK = "dev"


def test_a_setup_made_by_the_published_procedure_is_adopted_and_converges(aks, engine_tools, chart, tmp_path, helm):
    procedure(aks, helm)
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    import_file = tmp_path / "import.json"
    principal = canned.grafana({"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"},
                               "eastus2")["identity"]["principalId"]
    subprocess.run([sys.executable, "-m", "offline.plan", "--stack", STACK, "--import-file", str(import_file),
                    "--subscription-id", canned.SUBSCRIPTION_ID, "--grafana-principal-id", principal,
                    "--skip", "grafana-datasources-monitoring-data-reader"], cwd=ROOT, check=True,
                   capture_output=True, timeout=300)
    # The guide's step 4: the namespace the run by hand made is marked as this stack's, or the program refuses.
    subprocess.run([str(engine_tools.bin / "kubectl"), "--kubeconfig", str(aks.cp.kubeconfig), "annotate",
                    "namespace", "gadget", f"{STACK_ANNOTATION}=aks-gpu-observability/{STACK}"], check=True,
                   capture_output=True, timeout=60)
    component = "aks-gpu-observability:index:GpuObservability"
    ws.pulumi("up", "--yes", "--skip-preview",
              "--target", f"urn:pulumi:{STACK}::aks-gpu-observability::{component}::gpu-observability",
              "--target", f"urn:pulumi:{STACK}::aks-gpu-observability::{component}$pulumi:providers:kubernetes::aks",
              stack=STACK)
    ws.pulumi("import", "--yes", "--file", str(import_file), "--protect=false", "--generate-code=false", stack=STACK)
    ws.pulumi("config", "set", "prometheusDatasourceUid", HAND_MADE_UID, stack=STACK)
    # The procedure's StatefulSet keeps profiles in an emptyDir; the stack's volume claim template is a StatefulSet
    # field Kubernetes refuses to update (Helm's upgrade fails), so the first up reinstalls the release.
    release = next(r["urn"] for r in ws.state(STACK)["resources"] if r["urn"].endswith("::pyroscope-release"))
    ws.up(STACK, "--replace", release)

    again = {op: n for op, n in ws.preview(STACK)["changeSummary"].items() if op != "same"}
    assert again == {}, again
    world = aks.world()
    (pls,) = world["pls"].values()
    assert pls["tags"][fake_world.OWNER_SERVICE_TAG] == "gadget/pyroscope-private-link"
    assert [c["status"] for c in pls["connections"]] == ["Approved"]
    assert [(m["status"], m["ip"]) for m in world["mpes"].values()] == [("Approved", canned.MPE_PRIVATE_IP)]
    [g] = world["grafana"].values()
    assert {uid: ds["id"] for uid, ds in g["datasources"].items()} == {"local-pyroscope": 2, HAND_MADE_UID: 3}
    assert list(g["dashboards"]) == ["AdvancedGPUObservability"]
    assert aks.cp.get("/api/v1/namespaces/gadget/services/pyroscope")["spec"]["type"] == "ClusterIP"
    assert aks.cp.get("/api/v1/namespaces/gadget/secrets/sh.helm.release.v1.pyroscope.v1") is not None  # reinstalled
