"""Canned answers for the offline plan: what Azure would return to the program's invokes and what the
engine would report for new resources. SIMULATED: nothing here talks to Azure or Kubernetes.

Shapes follow the ARM responses the azure-native invokes mirror (``GET managedClusters/{name}``,
``POST .../listClusterUserCredential``, ``POST .../listClusterAdminCredential``), in the camelCase property
names the Pulumi engine uses. Identifiers are deterministic so plans are diffable.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Mapping

import yaml

SUBSCRIPTION_ID = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"
TENANT_ID = "72f988bf-86f1-41af-91ab-2d7cd011db47"
#: AKS's Microsoft Entra server application id (the --server-id in every AKS kubelogin kubeconfig).
AKS_SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"
#: The Azure Kubernetes CLI public client id AKS writes into user kubeconfigs.
AKS_CLIENT_ID = "80faf920-1908-4b52-b5ef-a8e7bedfc67a"


def guid(*parts: str) -> str:
    """A stable GUID-shaped string derived from ``parts``."""
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def cluster_id(resource_group: str, name: str) -> str:
    return (
        f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{resource_group}"
        f"/providers/Microsoft.ContainerService/managedClusters/{name}"
    )


def managed_cluster(args: Mapping[str, Any], location: str) -> dict:
    """getManagedCluster: an Entra ID cluster with the Azure Monitor metrics add-on and a GPU pool."""
    rg, name = args["resourceGroupName"], args["resourceName"]
    return {
        "id": cluster_id(rg, name),
        "name": name,
        "type": "Microsoft.ContainerService/ManagedClusters",
        "location": location,
        "kubernetesVersion": "1.33.3",
        "currentKubernetesVersion": "1.33.3",
        "dnsPrefix": f"{name}-dns",
        "fqdn": f"{name}-dns-{guid(rg, name)[:8]}.hcp.{location}.azmk8s.io",
        "nodeResourceGroup": f"MC_{rg}_{name}_{location}",
        "provisioningState": "Succeeded",
        "powerState": {"code": "Running"},
        "enableRBAC": True,
        "disableLocalAccounts": False,
        "aadProfile": {"managed": True, "enableAzureRBAC": True, "tenantID": TENANT_ID},
        "azureMonitorProfile": {"metrics": {"enabled": True}},
        "agentPoolProfiles": [
            {"name": "system", "count": 2, "vmSize": "Standard_D4ds_v5", "mode": "System", "osType": "Linux"},
            {"name": "gpu", "count": 1, "vmSize": "Standard_NC24ads_A100_v4", "mode": "User", "osType": "Linux"},
        ],
        "identity": {"type": "SystemAssigned", "principalId": guid("cluster-identity", rg, name), "tenantId": TENANT_ID},
    }


def _server(args: Mapping[str, Any], location: str) -> str:
    return f"https://{args['resourceName']}-dns-{guid(args['resourceGroupName'], args['resourceName'])[:8]}.hcp.{location}.azmk8s.io:443"


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _kubeconfig(args: Mapping[str, Any], location: str, kind: str, context: str, user: dict) -> str:
    """A kubeconfig as AKS returns it (base64 of YAML) for user ``cluster<kind>_<rg>_<name>``."""
    name = args["resourceName"]
    user_name = f"cluster{kind}_{args['resourceGroupName']}_{name}"
    document = {
        "apiVersion": "v1",
        "clusters": [{"cluster": {
            "certificate-authority-data": _encoded("-----BEGIN CERTIFICATE-----(canned CA)-----END CERTIFICATE-----"),
            "server": _server(args, location)}, "name": name}],
        "contexts": [{"context": {"cluster": name, "user": user_name}, "name": context}],
        "current-context": context,
        "kind": "Config",
        "preferences": {},
        "users": [{"name": user_name, "user": user}],
    }
    return _encoded(yaml.safe_dump(document, sort_keys=False))


def user_credentials(args: Mapping[str, Any], location: str) -> dict:
    """listManagedClusterUserCredentials (format exec): kubelogin devicecode, as AKS returns it."""
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "args": ["get-token", "--environment", "AzurePublicCloud", "--server-id", AKS_SERVER_ID,
                 "--client-id", AKS_CLIENT_ID, "--tenant-id", TENANT_ID, "--login", "devicecode"],
        "command": "kubelogin",
        "env": None,
        "installHint": "\nkubelogin is not installed which is required to connect to AAD enabled cluster.\n",
        "provideClusterInfo": False,
    }
    value = _kubeconfig(args, location, "User", args["resourceName"], {"exec": plugin})
    return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}


def admin_credentials(args: Mapping[str, Any], location: str) -> dict:
    """listManagedClusterAdminCredentials: a local-account client certificate kubeconfig."""
    user = {
        "client-certificate-data": _encoded("-----BEGIN CERTIFICATE-----(canned client cert)-----END CERTIFICATE-----"),
        "client-key-data": _encoded("-----BEGIN RSA PRIVATE KEY-----(canned key)-----END RSA PRIVATE KEY-----"),
        "token": guid("admin-token", args["resourceName"]).replace("-", ""),
    }
    value = _kubeconfig(args, location, "Admin", f"{args['resourceName']}-admin", user)
    return {"kubeconfigs": [{"name": "clusterAdmin", "value": value}]}


def client_config(_args: Mapping[str, Any], _location: str) -> dict:
    return {
        "clientId": guid("deployer-client"),
        "objectId": guid("deployer-object"),
        "subscriptionId": SUBSCRIPTION_ID,
        "tenantId": TENANT_ID,
    }


def grafana_id(resource_group: str, name: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{resource_group}/providers/Microsoft.Dashboard/grafana/{name}"


#: The private IP Grafana's managed private endpoint gets once approved and refreshed.
MPE_PRIVATE_IP = "10.0.4.36"


def grafana(args: Mapping[str, Any], location: str) -> dict:
    """getGrafana: a Standard-tier workspace with a system-assigned identity."""
    rg, name = args["resourceGroupName"], args["workspaceName"]
    return {
        "id": grafana_id(rg, name),
        "name": name,
        "type": "Microsoft.Dashboard/grafana",
        "location": location,
        "sku": {"name": "Standard"},
        "identity": {"type": "SystemAssigned", "principalId": guid("grafana-identity", rg, name), "tenantId": TENANT_ID},
        "properties": {
            "provisioningState": "Succeeded",
            "grafanaVersion": "11.6.4",
            "grafanaMajorVersion": "11",
            "endpoint": f"https://{name}-{guid(rg, name)[:10].replace('-', '')}.{location[:3]}.grafana.azure.com",
            "publicNetworkAccess": "Enabled",
            "zoneRedundancy": "Disabled",
            "apiKey": "Disabled",
            "deterministicOutboundIP": "Disabled",
        },
    }


def private_link_service(args: Mapping[str, Any], location: str) -> dict:
    """getPrivateLinkService: the PLS AKS created for the Pyroscope Service."""
    rg, name = args["resourceGroupName"], args["serviceName"]
    return {
        "id": f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{rg}/providers/Microsoft.Network/privateLinkServices/{name}",
        "name": name,
        "type": "Microsoft.Network/privateLinkServices",
        "location": location,
        "alias": f"{name}.{guid(rg, name)}.{location}.azure.privatelinkservice",
        "provisioningState": "Succeeded",
        "visibility": {"subscriptions": ["*"]},
        "privateEndpointConnections": [],
        "tags": {"k8s-azure-owner-service": "gadget/pyroscope", "k8s-azure-cluster-name": "kubernetes"},
    }


def managed_private_endpoint(args: Mapping[str, Any], location: str) -> dict:
    """getManagedPrivateEndpoint after approval and refresh: Approved, with its private IP."""
    rg, workspace, name = args["resourceGroupName"], args["workspaceName"], args["managedPrivateEndpointName"]
    return {
        "id": f"{grafana_id(rg, workspace)}/managedPrivateEndpoints/{name}",
        "name": name,
        "type": "Microsoft.Dashboard/grafana/managedPrivateEndpoints",
        "location": location,
        "provisioningState": "Succeeded",
        "connectionState": {"status": "Approved", "description": "Approved for Azure Managed Grafana"},
        "privateLinkServicePrivateIP": MPE_PRIVATE_IP,
    }


def monitor_workspace_id(resource_group: str, name: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{resource_group}/providers/Microsoft.Monitor/accounts/{name}"


def query_endpoint(name: str, location: str) -> str:
    return f"https://{name}-{guid('amw', name)[:4]}.{location}.prometheus.monitor.azure.com"


def monitor_workspace(args: Mapping[str, Any], location: str) -> dict:
    """getAzureMonitorWorkspace: with its Prometheus query endpoint."""
    rg, name = args["resourceGroupName"], args["azureMonitorWorkspaceName"]
    return {
        "id": monitor_workspace_id(rg, name),
        "name": name,
        "type": "Microsoft.Monitor/accounts",
        "location": location,
        "provisioningState": "Succeeded",
        "publicNetworkAccess": "Enabled",
        "accountId": guid("amw-account", rg, name),
        "metrics": {"internalId": f"mac_{guid('amw-internal', rg, name)}", "prometheusQueryEndpoint": query_endpoint(name, location)},
        "defaultIngestionSettings": {
            "dataCollectionEndpointResourceId": f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/MA_{name}_{location}_managed/providers/Microsoft.Insights/dataCollectionEndpoints/{name}",
            "dataCollectionRuleResourceId": f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/MA_{name}_{location}_managed/providers/Microsoft.Insights/dataCollectionRules/{name}",
        },
    }


INVOKES = {
    "azure-native:monitor:getAzureMonitorWorkspace": monitor_workspace,
    "azure-native:dashboard:getGrafana": grafana,
    "azure-native:network:getPrivateLinkService": private_link_service,
    "azure-native:dashboard:getManagedPrivateEndpoint": managed_private_endpoint,
    "azure-native:containerservice:getManagedCluster": managed_cluster,
    "azure-native:containerservice:listManagedClusterUserCredentials": user_credentials,
    "azure-native:containerservice:listManagedClusterAdminCredentials": admin_credentials,
    "azure-native:authorization:getClientConfig": client_config,
}


def stack_outputs(stack: str) -> dict:
    """Outputs of a referenced platform stack (clusterStack / grafanaStack): the cluster and the shared
    Grafana and workspace it exports."""
    return {
        "clusterName": "aks-gpu-shared",
        "clusterResourceGroup": "rg-aks-gpu-shared",
        "grafanaName": "amg-gpu-shared",
        "grafanaResourceGroup": "rg-observability-shared",
        "monitorWorkspaceName": "amw-gpu-shared",
        "monitorWorkspaceResourceGroup": "rg-observability-shared",
        "kubernetesVersion": "1.33.3",
    }


def resource_state(type_: str, name: str, inputs: Mapping[str, Any]) -> tuple[str, dict]:
    """(id, outputs) the engine would report after creating a resource of ``type_``."""
    state = dict(inputs)
    if type_ == "azure-native:kubernetesconfiguration:Extension":
        rid = (
            cluster_id(inputs["resourceGroupName"], inputs["clusterName"])
            + f"/providers/Microsoft.KubernetesConfiguration/extensions/{inputs.get('extensionName', name)}"
        )
        state.update(
            {
                "id": rid,
                "name": inputs.get("extensionName", name),
                "provisioningState": "Succeeded",
                "currentVersion": inputs.get("version") or "0.46.0",
                "isSystemExtension": False,
            }
        )
        return rid, state
    if type_ == "kubernetes:helm.sh/v3:Release":
        release, namespace = inputs.get("name", name), inputs.get("namespace", "default")
        state["status"] = {
            "name": release,
            "namespace": namespace,
            "chart": "pyroscope",
            "version": inputs.get("version", ""),
            "appVersion": "1.14.1",
            "revision": 1,
            "status": "deployed",
        }
        return f"{namespace}/{release}", state
    if type_ == "azure-native:dashboard:ManagedPrivateEndpoint":
        rid = (
            f"{grafana_id(inputs['resourceGroupName'], inputs['workspaceName'])}"
            f"/managedPrivateEndpoints/{inputs.get('managedPrivateEndpointName', name)}"
        )
        # As created: the connection on the PLS is Pending and there is no private IP yet.
        state.update({"id": rid, "provisioningState": "Succeeded", "privateLinkServicePrivateIP": "",
                      "connectionState": {"status": "Pending", "description": ""}})
        return rid, state
    if type_ == "azure-native:dashboard:Grafana":
        rg, name = inputs["resourceGroupName"], inputs.get("workspaceName", name)
        rid = grafana_id(rg, name)
        answer = grafana({"resourceGroupName": rg, "workspaceName": name}, inputs.get("location", "eastus2"))
        state.update({"id": rid, "identity": answer["identity"],
                      "properties": {**(inputs.get("properties") or {}), "endpoint": answer["properties"]["endpoint"],
                                     "provisioningState": "Succeeded"}})
        return rid, state
    if type_ == "azure-native:monitor:AzureMonitorWorkspace":
        rg, name = inputs["resourceGroupName"], inputs.get("azureMonitorWorkspaceName", name)
        rid = monitor_workspace_id(rg, name)
        state.update({"id": rid, "metrics": monitor_workspace({"resourceGroupName": rg, "azureMonitorWorkspaceName": name},
                                                              inputs.get("location", "eastus2"))["metrics"]})
        return rid, state
    if type_ == "azure-native:authorization:RoleAssignment":
        rid = f"{inputs['scope']}/providers/Microsoft.Authorization/roleAssignments/{inputs.get('roleAssignmentName', name)}"
        return rid, {**state, "id": rid}
    if type_ == "command:local:Command":
        state.update({"stdout": "", "stderr": ""})  # the scripts print their result; nothing runs here
        return guid("command", name), state
    if type_.startswith("pulumi:providers:"):
        return guid("provider", type_, name), state
    return f"{name}-id", state
