"""A setup made by hand by the published procedure (Microsoft Learn "GPU profiling on AKS") in the end-to-end tests'
world: a real `helm install` of the chart with the procedure's values into the real API server, and in the simulated
Azure the extension, Grafana's managed private endpoint on the release's PLS, approved and refreshed, its datasources
and the dashboard (tests/e2e/test_adoption.py adopts it, tests/e2e/test_existing.py is refused by it)."""

from __future__ import annotations

import json
import time

from offline import canned
from tests.support import fake_world, processes, reference

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


def procedure(aks, helm: str) -> None:
    """What a user who followed the procedure by hand has: the release (real Helm), and in Azure the extension, the
    endpoint on the release's PLS, approved and refreshed, the two datasources and the dashboard."""
    chart = reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz")
    args = [a for value in PROCEDURE_VALUES for a in ("--set-string" if "annotations" in value else "--set", value)]
    processes.run([helm, "install", "pyroscope", str(chart), "-n", "gadget", "--create-namespace",
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
