"""Canned answers for the offline plan: what Azure would return to the program's invokes and what the
engine would report for new resources. SIMULATED: nothing here talks to Azure or Kubernetes.

Shapes follow the ARM responses the azure-native invokes mirror (``GET managedClusters/{name}``,
``POST .../listClusterUserCredential``, ``POST .../listClusterAdminCredential``), in the camelCase property
names the Pulumi engine uses. Identifiers are deterministic so plans are diffable. Created resources' outputs
(:func:`resource_state`, and :func:`preview_outputs` for a preview) have the shapes of the SDKs' output types
(:data:`OUTPUTS`). Upstream: https://github.com/Azure/azure-rest-api-specs (``specification/containerservice``)
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, Mapping, Optional

import yaml
from pulumi.runtime.rpc import UNKNOWN

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


def node_subnet_id(resource_group: str) -> str:
    """The cluster's node subnet: ``snet-aks`` of virtual network ``vnet-aks`` in the cluster's resource group."""
    return (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{resource_group}/providers/Microsoft.Network"
            "/virtualNetworks/vnet-aks/subnets/snet-aks")


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
        "nodeResourceGroupProfile": {"restrictionLevel": "Unrestricted"},  # the API's default; ReadOnly when locked
        "provisioningState": "Succeeded",
        "powerState": {"code": "Running"},
        "enableRBAC": True,
        "disableLocalAccounts": False,
        "aadProfile": {"managed": True, "enableAzureRBAC": True, "tenantID": TENANT_ID},
        "azureMonitorProfile": {"metrics": {"enabled": True}},
        # Azure CNI overlay powered by Cilium, in a virtual network of the user's (vnetSubnetID set).
        "networkProfile": {"networkPlugin": "azure", "networkPluginMode": "overlay", "networkDataplane": "cilium",
                           "networkPolicy": "cilium", "podCidr": "192.168.0.0/16", "serviceCidr": "10.0.0.0/16",
                           "dnsServiceIP": "10.0.0.10", "loadBalancerSku": "standard", "outboundType": "loadBalancer"},
        "agentPoolProfiles": [
            {"name": "system", "count": 2, "vmSize": "Standard_D4ds_v5", "mode": "System", "osType": "Linux",
             "vnetSubnetID": node_subnet_id(rg)},
            {"name": "gpu", "count": 1, "vmSize": "Standard_NC24ads_A100_v4", "mode": "User", "osType": "Linux",
             "vnetSubnetID": node_subnet_id(rg)},
        ],
        "identity": {"type": "SystemAssigned", "principalId": guid("cluster-identity", rg, name),
                     "tenantId": TENANT_ID},
        # OIDC issuer and workload identity on (`az aks update --enable-oidc-issuer --enable-workload-identity`); the
        # issuer URL's form: https://<region>.oic.prod-aks.azure.com/<tenant id>/<guid>/ (MicrosoftDocs/azure-aks-docs
        # articles/aks/use-oidc-issuer.md).
        "oidcIssuerProfile": {"enabled": True,
                              "issuerURL": (f"https://{location}.oic.prod-aks.azure.com/{TENANT_ID}"
                                            f"/{guid('oidc', rg, name)}/")},
        "securityProfile": {"workloadIdentity": {"enabled": True}},
    }


def _server(args: Mapping[str, Any], location: str) -> str:
    suffix = guid(args["resourceGroupName"], args["resourceName"])[:8]
    return f"https://{args['resourceName']}-dns-{suffix}.hcp.{location}.azmk8s.io:443"


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
    return (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{resource_group}/providers/Microsoft.Dashboard/grafana"
            f"/{name}")


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
        "identity": {"type": "SystemAssigned", "principalId": guid("grafana-identity", rg, name),
                     "tenantId": TENANT_ID},
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


#: The canned PLS's first NAT IP, in the node subnet ``snet-aks`` (10.224.0.0/16); further ones follow it
#: (:func:`pls_nat_addresses`).
PLS_NAT_ADDRESS = "10.224.0.9"
#: The subnet the cloud provider puts NAT IPs in when the Service names none: its cloud config's subnet, the node
#: subnet, which the internal load balancer's frontend is in.
NODE_SUBNET = "snet-aks"
#: ``service.beta.kubernetes.io/`` annotations the AKS cloud provider reads for a PLS's NAT IP configurations.
PLS_NAME_ANNOTATION = "service.beta.kubernetes.io/azure-pls-name"
PLS_COUNT_ANNOTATION = "service.beta.kubernetes.io/azure-pls-ip-configuration-ip-address-count"
PLS_SUBNET_ANNOTATION = "service.beta.kubernetes.io/azure-pls-ip-configuration-subnet"
INTERNAL_ANNOTATION = "service.beta.kubernetes.io/azure-load-balancer-internal"
INTERNAL_SUBNET_ANNOTATION = "service.beta.kubernetes.io/azure-load-balancer-internal-subnet"


def subnet_id(resource_group: str, subnet: str) -> str:
    """Subnet ``subnet`` of the cluster's virtual network ``vnet-aks`` (:func:`node_subnet_id` for ``snet-aks``)."""
    return node_subnet_id(resource_group).rsplit("/", 1)[0] + f"/{subnet}"


SERVICE = "kubernetes:core/v1:Service"
RELEASE = "kubernetes:helm.sh/v3:Release"


def service_annotations(registered: list, pls_name: Optional[str]) -> Optional[tuple[str, dict]]:
    """(``<namespace>/<name>``, annotations) of the Service whose ``azure-pls-name`` is ``pls_name`` among the
    registered ``(type, inputs)``: a Service resource (``metadata.annotations``, as components/pyroscope.py writes the
    private link Service), or a Helm release's ``values.pyroscope.service`` (or a component's ``service``), as older
    versions of the stack wrote them; None when none has one."""
    for type_, inputs in registered:
        if type_ == SERVICE:
            metadata = inputs.get("metadata") or {}
            annotations = metadata.get("annotations")
            if isinstance(annotations, dict) and annotations.get(PLS_NAME_ANNOTATION) == pls_name:
                return f"{metadata.get('namespace')}/{metadata.get('name')}", annotations
            continue
        if type_ != RELEASE:
            continue
        values = (inputs.get("values") or {}).get("pyroscope") or {}
        components = values.get("components") or {}
        services = [(inputs.get("name"), values.get("service"))] + [
            (f"{inputs.get('name')}-{name}", c.get("service")) for name, c in components.items() if isinstance(c, dict)]
        for name, service in services:
            annotations = service.get("annotations") if isinstance(service, dict) else None
            if isinstance(annotations, dict) and annotations.get(PLS_NAME_ANNOTATION) == pls_name:
                return f"{inputs.get('namespace')}/{name}", annotations
    return None


def pls_subnet(annotations: Mapping[str, str]) -> str:
    """The subnet the cloud provider gives the PLS's NAT IP configurations (``getPLSSubnetName``): the
    ``azure-pls-ip-configuration-subnet`` annotation, else for an internal load balancer its
    ``azure-load-balancer-internal-subnet``, else :data:`NODE_SUBNET`. Blank values count as unset."""
    named = (annotations.get(PLS_SUBNET_ANNOTATION) or "").strip()
    if not named and annotations.get(INTERNAL_ANNOTATION) == "true":  # requiresInternalLoadBalancer: exactly "true"
        named = (annotations.get(INTERNAL_SUBNET_ANNOTATION) or "").strip()
    return named or NODE_SUBNET


def pls_nat_addresses(subnet: str, count: int) -> list[str]:
    """``count`` distinct NAT IPs in ``subnet``, deterministic: hosts .9, .10, ... of its canned /16, which is
    10.224.0.0/16 for :data:`NODE_SUBNET` and, for any other subnet, one of 10.225-10.239 chosen by its name's hash
    (the canned virtual network is 10.224.0.0/12). SIMULATED: ARM allocates dynamic addresses of its own choosing."""
    second = 224 if subnet == NODE_SUBNET else 225 + int(hashlib.sha256(subnet.encode()).hexdigest(), 16) % 15
    return [f"10.{second}.{(9 + i) // 256}.{(9 + i) % 256}" for i in range(count)]


def private_link_service(args: Mapping[str, Any], location: str,
                         annotations: Optional[Mapping[str, str]] = None,
                         owner: str = "gadget/pyroscope-private-link") -> dict:
    """getPrivateLinkService: the PLS AKS created for the Service ``owner`` (its ``k8s-azure-owner-service`` tag),
    whose ``annotations`` (the Service's, full keys; None: none) set its NAT IP configurations as
    ``reconcilePLSIpConfigs`` builds them
    (kubernetes-sigs/cloud-provider-azure ``pkg/provider/azure_privatelinkservice.go`` @
    7b31c76ce2ff602cc2dfec988744d8d0534b448c, unchanged since v1.33.17): one dynamic configuration per
    ``azure-pls-ip-configuration-ip-address-count`` (default 1), named ``<subnet>-<pls>-dynamic-<i>``, the first
    primary, all in :func:`pls_subnet`, with the addresses of :func:`pls_nat_addresses`. A count that is not an integer
    from 1 to 8 (which the cloud provider refuses) is taken as 1."""
    rg, name = args["resourceGroupName"], args["serviceName"]
    annotations = annotations or {}
    try:
        count = int(annotations.get(PLS_COUNT_ANNOTATION) or 1)
    except ValueError:
        count = 1
    count = count if 1 <= count <= 8 else 1
    subnet = pls_subnet(annotations)
    return {
        "id": (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{rg}/providers/Microsoft.Network/privateLinkServices"
               f"/{name}"),
        "name": name,
        "type": "Microsoft.Network/privateLinkServices",
        "location": location,
        "alias": f"{name}.{guid(rg, name)}.{location}.azure.privatelinkservice",
        "provisioningState": "Succeeded",
        "visibility": {"subscriptions": ["*"]},
        "privateEndpointConnections": [],
        "ipConfigurations": [{
            # The cloud provider cuts the name's "<subnet>-<pls>" prefix so the whole stays within 80 characters.
            "name": f"{subnet}-{name}"[:80 - len(f"-dynamic-{i}")] + f"-dynamic-{i}",
            "privateIPAddress": address,
            "privateIPAllocationMethod": "Dynamic",
            "privateIPAddressVersion": "IPv4",
            "primary": i == 0,
            "subnet": {"id": subnet_id(rg, subnet)},
        } for i, address in enumerate(pls_nat_addresses(subnet, count))],
        "tags": {"k8s-azure-owner-service": owner, "k8s-azure-cluster-name": "kubernetes"},
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
    return (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{resource_group}/providers/Microsoft.Monitor/accounts"
            f"/{name}")


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
        "metrics": {"internalId": f"mac_{guid('amw-internal', rg, name)}",
                    "prometheusQueryEndpoint": query_endpoint(name, location)},
        "defaultIngestionSettings": {
            "dataCollectionEndpointResourceId": (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups"
                                                 f"/MA_{name}_{location}_managed/providers/Microsoft.Insights"
                                                 f"/dataCollectionEndpoints/{name}"),
            "dataCollectionRuleResourceId": (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups"
                                             f"/MA_{name}_{location}_managed/providers/Microsoft.Insights"
                                             f"/dataCollectionRules/{name}"),
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


def answer(handler: Any, args: Mapping[str, Any], location: str, registered: list) -> dict:
    """A mocked invoke's answer from ``handler`` (a dict, or ``(args, location) -> dict``); :func:`private_link_service`
    also gets the Service that names the PLS among ``registered`` (``(type, inputs)`` of the resources so far) and its
    annotations, as the cloud provider builds the PLS from them (:func:`service_annotations`)."""
    if handler is private_link_service:
        found = service_annotations(registered, args.get("serviceName"))
        if found is None:
            return handler(args, location)
        owner, annotations = found
        return handler(args, location, annotations, owner)
    return handler(args, location) if callable(handler) else handler


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


#: ``systemData.createdAt`` of every resource the offline plan creates. ARM sets it at each creation (common-types
#: ``Resource.systemData``); the approval step is keyed on the MPE's (components/grafana_private_link.py), and
#: tests/support/lifecycle.py puts the stand-in world's own value, new for each creation, in its place.
CREATED_AT = "2026-11-30T12:00:00.0000000Z"


def _system_data() -> dict:
    """``systemData`` as ARM returns it on every resource the stack creates (deterministic, like the ids)."""
    by = guid("deployer-object")
    return {"createdAt": CREATED_AT, "createdBy": by, "createdByType": "User",
            "lastModifiedAt": CREATED_AT, "lastModifiedBy": by, "lastModifiedByType": "User"}


_ARM = ("id", "azureApiVersion", "name", "systemData", "type")

#: Output properties the engine records for each resource type the stack creates: the camelCase names the
#: installed SDKs declare as output getters (``@pulumi.getter(name=...)`` on the resource class), plus, for
#: azure-native, ``id``: its outputs are the ARM response body mapped to SDK names, ``id`` included
#: (pulumi/pulumi-azure-native ``provider/pkg/provider/provider.go`` Create -> ``ResponseBodyToSdkOutputs``;
#: a recorded state showing ``id``/``name``/``type`` among the outputs:
#: ``provider/pkg/provider/testdata/recorded/TestProviderUpgrade/upgrade-keyvault/2.76.0/stack.json`` at
#: f27a6a5d5424c5caeadecbf2511138fcfc2e839c). SDK files (pulumi-azure-native 3.29.0, pulumi-command 1.2.1,
#: pulumi-kubernetes 4.34.2): ``pulumi_azure_native/dashboard/managed_private_endpoint.py`` (API 2024-10-01),
#: ``dashboard/grafana.py`` (2024-10-01), ``monitor/azure_monitor_workspace.py`` (2023-04-03),
#: ``authorization/role_assignment.py`` (2022-04-01), ``kubernetesconfiguration/extension.py`` (2023-05-01),
#: ``pulumi_command/local/command.py``, ``pulumi_kubernetes/helm/v3/release.py``. tests/policy/test_rules.py checks
#: each list against those classes. Not listed: the secret ``__inputs`` pulumi-kubernetes adds to a Release's
#: state (``checkpointRelease``); no SDK declares it and no rule reads it.
OUTPUTS: dict[str, tuple[str, ...]] = {
    "azure-native:dashboard:ManagedPrivateEndpoint": _ARM + (
        "connectionState", "groupIds", "location", "privateLinkResourceId", "privateLinkResourceRegion",
        "privateLinkServicePrivateIP", "privateLinkServiceUrl", "provisioningState", "requestMessage", "tags"),
    "azure-native:dashboard:Grafana": _ARM + ("identity", "location", "properties", "sku", "tags"),
    "azure-native:monitor:AzureMonitorWorkspace": _ARM + (
        "accountId", "defaultIngestionSettings", "etag", "location", "metrics", "privateEndpointConnections",
        "provisioningState", "publicNetworkAccess", "tags"),
    "azure-native:authorization:RoleAssignment": _ARM + (
        "condition", "conditionVersion", "createdBy", "createdOn", "delegatedManagedIdentityResourceId",
        "description", "principalId", "principalType", "roleDefinitionId", "scope", "updatedBy", "updatedOn"),
    "azure-native:kubernetesconfiguration:Extension": _ARM + (
        "aksAssignedIdentity", "autoUpgradeMinorVersion", "configurationProtectedSettings", "configurationSettings",
        "currentVersion", "customLocationSettings", "errorInfo", "extensionType", "identity", "isSystemExtension",
        "packageUri", "plan", "provisioningState", "releaseTrain", "scope", "statuses", "version"),
    "command:local:Command": (
        "addPreviousOutputInEnv", "archive", "archivePaths", "assetPaths", "assets", "create", "delete", "dir",
        "environment", "interpreter", "logging", "stderr", "stdin", "stdout", "triggers", "update"),
    "kubernetes:helm.sh/v3:Release": (
        "allowNullValues", "atomic", "chart", "cleanupOnFail", "createNamespace", "dependencyUpdate", "description",
        "devel", "disableCRDHooks", "disableOpenapiValidation", "disableWebhooks", "forceUpdate", "keyring", "lint",
        "manifest", "maxHistory", "name", "namespace", "postrender", "recreatePods", "renderSubchartNotes", "replace",
        "repositoryOpts", "resetValues", "resourceNames", "reuseValues", "skipAwait", "skipCrds", "status",
        "takeOwnership", "timeout", "valueYamlFiles", "values", "verify", "version", "waitForJobs"),
}

#: Outputs a provider reports as unknown when it previews a create, for the providers that do not mark every
#: output it cannot copy from an input (azure-native does: see :func:`preview_outputs`).
#: pulumi-command v1.2.1 ``provider/pkg/provider/local/commandController.go`` Create returns its inputs when
#: previewing, and pulumi-go-provider v1.3.0 ``infer/resource.go`` (``markComputed``) marks each output that
#: does not mirror an input computed: ``stdout``, ``stderr``. pulumi-kubernetes
#: ``provider/pkg/provider/helm_release.go`` (94977969d64112b04e19945818a7d5d5f38f631d) ``checkpointRelease``:
#: the inputs, with ``status`` and ``resourceNames`` computed.
PREVIEW_COMPUTED: dict[str, tuple[str, ...]] = {
    "command:local:Command": ("stderr", "stdout"),
    "kubernetes:helm.sh/v3:Release": ("resourceNames", "status"),
}


def preview_outputs(type_: str, inputs: Mapping[str, Any]) -> Optional[dict]:
    """Outputs the engine records for a resource of ``type_`` that a preview creates, from its ``inputs`` in
    the wire format; None for a type not in :data:`OUTPUTS` (the caller keeps the inputs: the engine's own
    fallback for a provider without previews, pulumi/pulumi v3.230.0
    ``sdk/go/common/resource/plugin/provider_plugin.go`` Create).

    The engine keeps what the provider's Create returns with ``preview=true`` (v3.230.0
    ``pkg/resource/deploy/step.go`` CreateStep.Apply). azure-native returns every output property, the
    input of the same SDK name where there is one and unknown otherwise, so ``id``, ``name`` and ``type``
    are unknown and input-only properties (``workspaceName``, ``resourceGroupName``) are gone
    (pulumi-azure-native ``provider/pkg/convert/previewOutputs.go`` at
    604cfd525f965477da629fdb2474063bdce7d798, called from ``provider/pkg/provider/provider.go`` Create).
    Simplified: an object input is kept whole, where azure-native would add unknowns for its missing nested
    response properties. The other providers: their inputs, plus :data:`PREVIEW_COMPUTED` unknown. Unknowns
    are the engine's sentinel (:data:`pulumi.runtime.rpc.UNKNOWN`), as pulumi-policy's analyzer receives them.
    """
    names = OUTPUTS.get(type_)
    if names is None:
        return None
    if type_ not in PREVIEW_COMPUTED:
        return {name: inputs.get(name, UNKNOWN) for name in names}
    return {**{k: v for k, v in inputs.items() if k in names}, **dict.fromkeys(PREVIEW_COMPUTED[type_], UNKNOWN)}


def approval_nonce(name: str) -> str:
    """The canned stdout of the approval nonce step ``name``: 32 hex digits, as ``od -An -N16 -tx1 /dev/urandom`` prints
    16 random bytes (the real one is random; this one is fixed per step name, so plans compare)."""
    return hashlib.sha256(f"approval-nonce|{name}".encode()).hexdigest()[:32]


def _arm(rid: str, name: str, arm_type: str, api_version: str) -> dict:
    return {"id": rid, "name": name, "type": arm_type, "azureApiVersion": api_version, "systemData": _system_data()}


def resource_state(type_: str, name: str, inputs: Mapping[str, Any]) -> tuple[str, dict]:
    """(id, outputs) a provider reports after creating a resource of ``type_`` (what the mocks return to the
    program, and what the engine records for ``pulumi up``): inputs of an output's name copied, computed
    outputs canned, and for a type in :data:`OUTPUTS` nothing else (input-only properties such as an MPE's
    ``workspaceName`` are not outputs). Providers and other types: the inputs."""
    rid, computed = _created(type_, name, inputs)
    state = {**inputs, **computed}
    if type_ in OUTPUTS:
        state = {key: value for key, value in state.items() if key in OUTPUTS[type_]}
    return rid, state


def _created(type_: str, name: str, inputs: Mapping[str, Any]) -> tuple[str, dict]:
    """(id, computed outputs) of a created resource of ``type_``."""
    location = inputs.get("location", "eastus2")
    if type_ == "azure-native:kubernetesconfiguration:Extension":
        extension = inputs.get("extensionName", name)
        rid = (cluster_id(inputs["resourceGroupName"], inputs["clusterName"])
               + f"/providers/Microsoft.KubernetesConfiguration/extensions/{extension}")
        return rid, {**_arm(rid, extension, "Microsoft.KubernetesConfiguration/extensions", "2023-05-01"),
                     "provisioningState": "Succeeded", "currentVersion": inputs.get("version") or "0.46.0",
                     "isSystemExtension": False, "statuses": []}
    if type_ == "kubernetes:helm.sh/v3:Release":
        release, namespace = inputs.get("name", name), inputs.get("namespace", "default")
        status = {"name": release, "namespace": namespace, "chart": "pyroscope", "version": inputs.get("version", ""),
                  "appVersion": "1.14.1", "revision": 1, "status": "deployed"}
        return f"{namespace}/{release}", {"status": status}
    if type_ == "azure-native:dashboard:ManagedPrivateEndpoint":
        endpoint = inputs.get("managedPrivateEndpointName", name)
        rid = f"{grafana_id(inputs['resourceGroupName'], inputs['workspaceName'])}/managedPrivateEndpoints/{endpoint}"
        # As created: the connection on the PLS is Pending and there is no private IP yet.
        return rid, {**_arm(rid, endpoint, "Microsoft.Dashboard/grafana/managedPrivateEndpoints", "2024-10-01"),
                     "provisioningState": "Succeeded", "privateLinkServicePrivateIP": "",
                     "connectionState": {"status": "Pending", "description": ""}}
    if type_ == "azure-native:dashboard:Grafana":
        rg, workspace = inputs["resourceGroupName"], inputs.get("workspaceName", name)
        answer = grafana({"resourceGroupName": rg, "workspaceName": workspace}, location)
        properties = {**(inputs.get("properties") or {}), "endpoint": answer["properties"]["endpoint"],
                      "provisioningState": "Succeeded"}
        return answer["id"], {**_arm(answer["id"], workspace, answer["type"], "2024-10-01"),
                              "identity": answer["identity"], "properties": properties}
    if type_ == "azure-native:monitor:AzureMonitorWorkspace":
        rg, workspace = inputs["resourceGroupName"], inputs.get("azureMonitorWorkspaceName", name)
        answer = monitor_workspace({"resourceGroupName": rg, "azureMonitorWorkspaceName": workspace}, location)
        return answer["id"], {**answer, **_arm(answer["id"], workspace, answer["type"], "2023-04-03"),
                              "etag": f'"{guid("amw-etag", rg, workspace)}"', "privateEndpointConnections": []}
    if type_ == "azure-native:authorization:RoleAssignment":
        assignment = inputs.get("roleAssignmentName", name)
        rid = f"{inputs['scope']}/providers/Microsoft.Authorization/roleAssignments/{assignment}"
        by = guid("deployer-object")
        return rid, {**_arm(rid, assignment, "Microsoft.Authorization/roleAssignments", "2022-04-01"),
                     "createdBy": by, "createdOn": "2026-11-30T12:00:00.0000000Z", "updatedBy": by,
                     "updatedOn": "2026-11-30T12:00:00.0000000Z"}
    if type_ == "azure-native:managedidentity:UserAssignedIdentity":
        rg, identity = inputs["resourceGroupName"], inputs.get("resourceName", name)
        rid = (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{rg}/providers/Microsoft.ManagedIdentity"
               f"/userAssignedIdentities/{identity}")
        return rid, {**_arm(rid, identity, "Microsoft.ManagedIdentity/userAssignedIdentities", "2023-01-31"),
                     "clientId": guid("identity-client", rg, identity),
                     "principalId": guid("identity-principal", rg, identity),
                     "tenantId": TENANT_ID}
    if type_ == "azure-native:storage:StorageAccount":
        rg, account = inputs["resourceGroupName"], inputs.get("accountName", name)
        rid = (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{rg}/providers/Microsoft.Storage/storageAccounts"
               f"/{account}")
        return rid, {**_arm(rid, account, "Microsoft.Storage/storageAccounts", "2024-01-01"),
                     "provisioningState": "Succeeded",
                     "primaryEndpoints": {"blob": f"https://{account}.blob.core.windows.net/"}}
    if type_ == "azure-native:storage:BlobContainer":
        rg, account, container = inputs["resourceGroupName"], inputs["accountName"], inputs.get("containerName", name)
        rid = (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{rg}/providers/Microsoft.Storage/storageAccounts"
               f"/{account}"
               f"/blobServices/default/containers/{container}")
        return rid, _arm(rid, container, "Microsoft.Storage/storageAccounts/blobServices/containers", "2024-01-01")
    if type_ == "azure-native:managedidentity:FederatedIdentityCredential":
        rg, identity = inputs["resourceGroupName"], inputs["resourceName"]
        credential = inputs.get("federatedIdentityCredentialResourceName", name)
        rid = (f"/subscriptions/{SUBSCRIPTION_ID}/resourceGroups/{rg}/providers/Microsoft.ManagedIdentity"
               f"/userAssignedIdentities/{identity}/federatedIdentityCredentials/{credential}")
        return rid, _arm(rid, credential,
                         "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
                         "2023-01-31")
    if type_ == "command:local:Command":
        if "/dev/urandom" in str(inputs.get("create") or ""):  # the approval nonce (components/grafana_private_link.py)
            return guid("command", name), {"stdout": approval_nonce(name), "stderr": ""}
        return guid("command", name), {"stdout": "", "stderr": ""}  # the scripts print their result; nothing runs here
    if type_.startswith("pulumi:providers:"):
        return guid("provider", type_, name), {}
    return f"{name}-id", {}


#: What a canned answer puts into the plan, found in its text: (pattern, what it stands for). The offline plan marks
#: each line that holds one (offline/plan.py render_text), so that no canned value reads as a real one.
CANNED_VALUES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(re.escape(SUBSCRIPTION_ID)), "subscription id"),
    (re.compile(re.escape(TENANT_ID)), "tenant id"),
    (re.compile(r"(?<![\d.])" + re.escape(MPE_PRIVATE_IP) + r"(?![\d])"), "endpoint private IP"),
    (re.compile(r"(?<![\d.])10\.2(2[4-9]|3\d)\.\d+\.\d+(?![\d])"), "PLS NAT IP"),
    (re.compile(r"https://[\w-]+-[0-9a-f]{9}\.\w{3}\.grafana\.azure\.com"), "Grafana endpoint"),
    (re.compile(r"https://[\w-]+-[0-9a-f]{4}\.\w+\.prometheus\.monitor\.azure\.com"), "query endpoint"),
    (re.compile(r"MC_[\w.()-]+_[\w-]+_\w+"), "node resource group"),
    (re.compile(re.escape(CREATED_AT)), "creation time"),
)
#: Stack outputs read from a canned lookup whose value has no pattern of its own.
CANNED_OUTPUTS = {"managedPrivateEndpointState": "endpoint state"}


def canned_in(text: str) -> list[str]:
    """What of :data:`CANNED_VALUES` ``text`` holds, in that order (each once)."""
    return [what for pattern, what in CANNED_VALUES if pattern.search(text)]


def marked(line: str, also: Optional[str] = None) -> str:
    """``line`` with ``  [canned: ...]`` naming ``also`` and the canned values it holds (:func:`canned_in`), if any:
    how the offline plan and diff texts mark a value made up here (offline/plan.py, offline/diff_text.py)."""
    found = ([also] if also else []) + canned_in(line)
    return f"{line}  [canned: {', '.join(found)}]" if found else line


#: Role assignments the canned world holds, made outside the stack: (scope lower-cased, principal id, role id) ->
#: assignment names. Empty: Grafana's identity holds no role on the workspace (tests add one, as linking does).
ROLE_HOLDERS: dict[tuple[str, str, str], list[str]] = {}


def role_holders(scope: str, principal_id: str, role: str) -> list[str]:
    """existing/roles.py LOOKUP offline: the names :data:`ROLE_HOLDERS` holds for that scope, principal and role."""
    return list(ROLE_HOLDERS.get((scope.lower(), principal_id, role), []))


#: ARM id (lower case) -> tags of what the canned world holds beyond what the invokes answer: objects someone else
#: made where the stack would create one (existing/taken.py). Empty: every name the stack would create is free.
TAKEN: dict[str, dict] = {}


def resource_tags(resource_id: str) -> Optional[dict]:
    """existing/taken.py LOOKUP offline: the tags :data:`TAKEN` holds for ``resource_id``, or None."""
    tags = TAKEN.get(resource_id.lower())
    return None if tags is None else dict(tags)


#: (resource group, name), lower case -> (load balancer frontend id, k8s-azure-owner-service tag) of private link
#: services the canned world holds before the stack runs (existing/taken.py). Empty: none, as before a first `pulumi
#: up`; :func:`offline.deployed_world.deployed` adds those of a deployed base plan while the offline diff evaluates a
#: head against it.
PRIVATE_LINK_SERVICES: dict[tuple[str, str], tuple[str, str]] = {}


def private_link_service_owner(resource_group: str, name: str) -> Optional[tuple[str, str, str]]:
    """existing/taken.py PLS_LOOKUP offline: what :data:`PRIVATE_LINK_SERVICES` holds and the ARM id
    getPrivateLinkService answers for it (:func:`private_link_service`), or None."""
    found = PRIVATE_LINK_SERVICES.get((resource_group.lower(), name.lower()))
    if found is None:
        return None
    answer = private_link_service({"resourceGroupName": resource_group, "serviceName": name}, "eastus2")
    return found[0], found[1], answer["id"]


#: API server host -> why this machine cannot reach it (existing/api_server.py). Empty: every API server answers, as
#: on a machine on the cluster's network.
UNREACHABLE: dict[str, str] = {}


def api_server_reach(kubeconfig: str) -> Optional[str]:
    """existing/api_server.py REACH offline: what :data:`UNREACHABLE` says of the kubeconfig's API server."""
    from existing.api_server import server_of

    return UNREACHABLE.get(server_of(kubeconfig)[0])


#: Namespace ``gadget``'s metadata in the canned cluster (existing/handmade.py), or None: the cluster has none, as
#: before a first `pulumi up`. Tests put one there (a run by hand's, the stack's with its mark).
NAMESPACE: Optional[dict] = None
#: Helm release name -> its records (Secret names) in ``gadget``. Empty: no release.
HELM_RELEASES: dict[str, list[str]] = {}


def namespace_metadata(kubeconfig: str) -> Optional[dict]:
    """existing/handmade.py NAMESPACE_LOOKUP offline: :data:`NAMESPACE`."""
    return None if NAMESPACE is None else dict(NAMESPACE)


def helm_releases(kubeconfig: str, release: str) -> list[str]:
    """existing/handmade.py RELEASE_LOOKUP offline: the records :data:`HELM_RELEASES` holds for ``release``."""
    return list(HELM_RELEASES.get(release, []))


#: Grafana's datasources of the canned world beyond the stack's: name -> uid (existing/handmade.py). Empty: none.
DATASOURCES: dict[str, str] = {}


def datasource_uid(endpoint: str, name: str) -> Optional[str]:
    """existing/handmade.py DATASOURCE_LOOKUP offline: the uid :data:`DATASOURCES` holds for ``name``, or None."""
    return DATASOURCES.get(name)
