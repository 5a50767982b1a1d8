"""docs/adopting.md under the real engine: a setup made by hand by the published procedure (a real `helm install` of
the chart with the procedure's values into the real API server; the extension, Grafana's managed private endpoint,
approved and refreshed, its datasources and the dashboard in the simulated Azure) is taken over with the guide's
commands — the import file, `pulumi up --target` the Kubernetes provider, `pulumi import --file`, the Prometheus
datasource's uid — and the next `pulumi up` converges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from offline import canned
from tests.support import ROOT, fake_world, reference

STACK = "dev"
HELM_ENV = "HELM_BIN"
HAND_MADE_UID = "bf2k9zq1m0xyz"
GRAFANA_ID = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
ANNOTATION = "service.beta.kubernetes.io/"
#: Microsoft Learn "GPU profiling on AKS": `helm install pyroscope` with these values.
PROCEDURE_VALUES = [
    "pyroscope.image.repository=grafana/pyroscope", "pyroscope.image.tag=1.15.0", "pyroscope.replicaCount=1",
    "pyroscope.structuredConfig.self_profiling.disable_push=true",
    "pyroscope.structuredConfig.storage.backend=filesystem", "pyroscope.service.type=LoadBalancer",
    "pyroscope.service.port=4040", "alloy.enabled=false", "minio.enabled=false",
    f"pyroscope.service.annotations.{ANNOTATION.replace('.', chr(92) + '.')}azure-load-balancer-internal=true",
    f"pyroscope.service.annotations.{ANNOTATION.replace('.', chr(92) + '.')}azure-pls-create=true",
    f"pyroscope.service.annotations.{ANNOTATION.replace('.', chr(92) + '.')}azure-pls-name=pyroscope-pls",
    f"pyroscope.service.annotations.{ANNOTATION.replace('.', chr(92) + '.')}azure-pls-proxy-protocol=false",
    f"pyroscope.service.annotations.{ANNOTATION.replace('.', chr(92) + '.')}azure-pls-visibility=*",
]


@pytest.fixture(scope="module")
def helm() -> str:
    path = os.environ.get(HELM_ENV)
    if not path or not os.path.exists(path):
        message = f"real Helm is not installed ({HELM_ENV}; .ci/install-helm .tools installs it)"
        if os.environ.get("REQUIRE_HELM") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


def procedure(aks, helm: str) -> None:
    """What a user who followed the procedure by hand has: the release (real Helm), and in Azure the extension, the
    endpoint on the release's PLS, approved and refreshed, the two datasources and the dashboard."""
    chart = reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz")
    args = [a for value in PROCEDURE_VALUES for a in ("--set-string" if "annotations" in value else "--set", value)]
    subprocess.run([helm, "install", "pyroscope", str(chart), "-n", "gadget", "--create-namespace",
                    "--kubeconfig", str(aks.cp.kubeconfig), *args], check=True, capture_output=True, timeout=120)
    pls_id = fake_world.pls_id("MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2", "pyroscope-pls", canned.SUBSCRIPTION_ID)
    deadline = time.monotonic() + 60
    while pls_id.lower() not in aks.world()["pls"]:
        assert time.monotonic() < deadline, "the cloud side made no PLS for the procedure's Service"
        time.sleep(0.3)
    with fake_world.locked(str(aks.world_path)) as world:
        extension = {"resourceGroupName": "rg-aks-gpu-dev", "clusterRp": "Microsoft.ContainerService",
                     "clusterResourceName": "managedClusters", "clusterName": "aks-gpu-dev",
                     "extensionName": "inspektor-gadget", "extensionType": "microsoft.inspektorgadget",
                     "releaseTrain": "preview", "autoUpgradeMinorVersion": True,
                     "configurationSettings": {"gpuObservability.enabled": "true", "azureMonitor.enabled": "true"}}
        assert fake_world.arm_create(world, "azure-native:kubernetesconfiguration:Extension", extension, "") is None
        mpe = {"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev",
               "managedPrivateEndpointName": "pyroscope-mpe", "location": "eastus2", "privateLinkResourceId": pls_id,
               "groupIds": []}
        assert fake_world.arm_create(world, fake_world.MPE, mpe, GRAFANA_ID) is None
        for connection in world["pls"][pls_id.lower()]["connections"]:
            connection["status"] = "Approved"
        endpoint = world["mpes"][fake_world.mpe_key(GRAFANA_ID, "pyroscope-mpe")]
        endpoint.update(status="Approved", ip=canned.MPE_PRIVATE_IP)
        host = canned.grafana({"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"},
                              "eastus2")["properties"]["endpoint"].split("//", 1)[1]
        g = fake_world.grafana(world, host)
        g["datasources"] = {
            "local-pyroscope": {"access": "proxy", "jsonData": {"keepCookies": ["pyroscope_git_session"]},
                                "name": "local-pyroscope", "type": "grafana-pyroscope-datasource",
                                "uid": "local-pyroscope", "url": f"http://{canned.MPE_PRIVATE_IP}:4040", "id": 2,
                                "orgId": 1, "version": 1, "readOnly": False},
            HAND_MADE_UID: {"access": "proxy", "jsonData": {"azureCredentials": {"authType": "msi"},
                                                            "httpMethod": "POST"},
                            "name": "amw-gpu-dev", "type": "prometheus", "uid": HAND_MADE_UID,
                            "url": canned.query_endpoint("amw-gpu-dev", "eastus2"), "id": 3, "orgId": 1,
                            "version": 1, "readOnly": False}}
        dashboard = json.loads(reference("grafana-dashboards/AdvancedGPUObservability.json").read_text())
        g["dashboards"] = {"AdvancedGPUObservability": {**dashboard, "id": 10, "version": 1}}
        g["next_id"] = 30


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
    ws.pulumi("up", "--yes", "--skip-preview", "--target",
              f"urn:pulumi:{STACK}::aks-gpu-observability::pulumi:providers:kubernetes::aks", stack=STACK)
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
