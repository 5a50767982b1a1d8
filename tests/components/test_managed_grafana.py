"""components/managed_grafana.py and components/monitor_workspace.py, as the plan registers them: the Grafana and the
Azure Monitor workspace the stack creates (createGrafana, createMonitorWorkspace), the deployer's Grafana Admin role and
its principal type."""

from __future__ import annotations

from offline import canned
from tests.support.config_values import named

MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
WORKSPACE_ID = canned.monitor_workspace_id("rg-observability-dev", "amw-gpu-dev")


def test_created_grafana_and_workspace(plan):
    p = plan(createGrafana="true", createMonitorWorkspace="true", grafanaPublicNetworkAccess="Disabled")
    tokens = {i.token for i in p.invokes}
    assert "azure-native:dashboard:getGrafana" not in tokens
    assert "azure-native:monitor:getAzureMonitorWorkspace" not in tokens
    grafana = p.one("azure-native:dashboard:Grafana")
    workspace = p.one("azure-native:monitor:AzureMonitorWorkspace")
    assert grafana.inputs["sku"] == {"name": "Standard"}
    assert grafana.inputs["identity"] == {"type": "SystemAssigned"}
    assert grafana.inputs["workspaceName"] == "amg-gpu-dev" and grafana.inputs["location"] == "eastus2"
    assert grafana.inputs["properties"]["publicNetworkAccess"] == "Disabled"
    assert grafana.inputs["properties"]["grafanaIntegrations"] == {
        "azureMonitorWorkspaceIntegrations": [{"azureMonitorWorkspaceResourceId": WORKSPACE_ID}]}
    assert workspace.urn in grafana.dependencies
    assert workspace.inputs == {"azureMonitorWorkspaceName": "amw-gpu-dev", "resourceGroupName": "rg-observability-dev",
                                "location": "eastus2", "tags": {"managed-by": "aks-gpu-observability"}}
    assert grafana.inputs["tags"] == {"managed-by": "aks-gpu-observability"}
    admin = named(p, "managed-grafana-grafana-admin")
    client = canned.client_config({}, "eastus2")
    assert admin.inputs["principalId"] == client["objectId"]
    assert admin.inputs["principalType"] == "User"  # auto, and no ARM_CLIENT_ID/AZURE_CLIENT_ID here
    assert admin.inputs["roleDefinitionId"].endswith("/roleDefinitions/22926164-76b3-42b3-bc55-97df8dab3e41")
    assert admin.inputs["scope"] == canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
    reader = named(p, "grafana-datasources-monitoring-data-reader")
    assert reader.inputs["principalId"] == canned.guid("grafana-identity", "rg-observability-dev", "amg-gpu-dev")
    assert grafana.urn in reader.dependencies and workspace.urn in reader.dependencies
    for step in ("grafana-datasources-pyroscope", "grafana-datasources-prometheus", "gpu-dashboard-upload"):
        resource = named(p, step)
        assert resource.inputs["environment"]["RETRY_FORBIDDEN"] == "true"
        assert {grafana.urn, admin.urn} <= set(resource.dependencies)  # Grafana API calls need the Admin role
    # The private link makes ARM calls only: it waits for the workspace (its location and id), not the role.
    assert admin.urn not in named(p, "grafana-private-link-wait-for-pls").dependencies
    assert grafana.urn in p.one(MPE).dependencies and admin.urn not in p.one(MPE).dependencies
    d = p.destroy_order.index
    assert d(named(p, "gpu-dashboard-upload").urn) < d(grafana.urn) and d(p.one(MPE).urn) < d(grafana.urn)


def test_deployer_principal_type(plan, monkeypatch):
    """azure-native sends principalType "User" when none is given, which ARM rejects for a service principal (CI
    with OIDC): auto picks ServicePrincipal when signed in as one."""
    for variable in ("ARM_CLIENT_ID", "AZURE_CLIENT_ID"):
        monkeypatch.delenv(variable, raising=False)
    assert named(plan(createGrafana="true"), "managed-grafana-grafana-admin").inputs["principalType"] == "User"
    monkeypatch.setenv("ARM_CLIENT_ID", "00000000-0000-0000-0000-000000000001")
    admin = named(plan(createGrafana="true"), "managed-grafana-grafana-admin")
    assert admin.inputs["principalType"] == "ServicePrincipal"
    assert named(plan(createGrafana="true", deployerPrincipalType="Group"),
                 "managed-grafana-grafana-admin").inputs["principalType"] == "Group"
