#!/usr/bin/env bash
set -euo pipefail
# Stack dev: the deployer's roles and where they are assigned (docs/deployer-role.md). Run as Owner or User Access Administrator on these groups (creating a role needs roleDefinitions/write).
SUB=$(az account show --query id --output tsv)
[[ $SUB =~ ^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$ ]] || { echo "error: az account show: expected a subscription id (got '$SUB')" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s|/subscriptions/[$]SUB/|/subscriptions/$SUB/|g" > "$dir/deployer-role.json" <<'EOF'
{
  "Name": "aks-gpu-observability deployer (dev)",
  "IsCustom": true,
  "Description": "Runs pulumi up/destroy for aks-gpu-observability (docs/deployer-role.md): reads the AKS cluster and its user kubeconfig, manages the Inspektor Gadget extension and Grafana's managed private endpoint, and (createGrafana, createMonitorWorkspace) a Grafana and an Azure Monitor workspace. Assigned on the cluster's, Grafana's and the workspace's resource groups; no role assignments (the role assigner role has them).",
  "Actions": [
    "Microsoft.ContainerService/managedClusters/read",
    "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",
    "Microsoft.KubernetesConfiguration/extensions/read",
    "Microsoft.KubernetesConfiguration/extensions/write",
    "Microsoft.KubernetesConfiguration/extensions/delete",
    "Microsoft.KubernetesConfiguration/extensions/operations/read",
    "Microsoft.Dashboard/grafana/read",
    "Microsoft.Dashboard/grafana/write",
    "Microsoft.Dashboard/grafana/delete",
    "Microsoft.Dashboard/grafana/managedPrivateEndpoints/read",
    "Microsoft.Dashboard/grafana/managedPrivateEndpoints/write",
    "Microsoft.Dashboard/grafana/managedPrivateEndpoints/delete",
    "Microsoft.Dashboard/grafana/managedPrivateEndpoints/action",
    "Microsoft.Dashboard/locations/operationStatuses/read",
    "Microsoft.Monitor/accounts/read",
    "Microsoft.Monitor/accounts/write",
    "Microsoft.Monitor/accounts/delete",
    "Microsoft.Monitor/locations/operationStatuses/read"
  ],
  "NotActions": [],
  "DataActions": [],
  "NotDataActions": [],
  "AssignableScopes": [
    "/subscriptions/$SUB/resourceGroups/rg-aks-gpu-dev",
    "/subscriptions/$SUB/resourceGroups/rg-observability-dev"
  ]
}
EOF
az role definition create --role-definition @"$dir/deployer-role.json"
# re-run after a change of groups: az role definition update --role-definition @"$dir/deployer-role.json"
sed "s|/subscriptions/[$]SUB/|/subscriptions/$SUB/|g" > "$dir/deployer-role-role-assigner.json" <<'EOF'
{
  "Name": "aks-gpu-observability role assigner (dev)",
  "IsCustom": true,
  "Description": "Assigns the built-in roles aks-gpu-observability assigns (docs/deployer-role.md): Monitoring Data Reader to Grafana's identity on the Azure Monitor workspace, with createGrafana Grafana Admin to the deployer, and with grafanaViewers Grafana Viewer to each of them on the Grafana workspace. Assigned only on the groups where the stack assigns one, each time with a condition that allows only those roles to those principals.",
  "Actions": [
    "Microsoft.Authorization/roleAssignments/read",
    "Microsoft.Authorization/roleAssignments/write",
    "Microsoft.Authorization/roleAssignments/delete",
    "Microsoft.Authorization/roleDefinitions/read"
  ],
  "NotActions": [],
  "DataActions": [],
  "NotDataActions": [],
  "AssignableScopes": [
    "/subscriptions/$SUB/resourceGroups/rg-observability-dev"
  ]
}
EOF
az role definition create --role-definition @"$dir/deployer-role-role-assigner.json"
# re-run after a change of groups: az role definition update --role-definition @"$dir/deployer-role-role-assigner.json"
sed "s|/subscriptions/[$]SUB/|/subscriptions/$SUB/|g" > "$dir/deployer-role-private-link.json" <<'EOF'
{
  "Name": "aks-gpu-observability private link approver (dev)",
  "IsCustom": true,
  "Description": "Finds Pyroscope's private link service and approves Grafana's connection to it, for aks-gpu-observability (docs/deployer-role.md). Assigned on the private link service's resource group and, without privateLinkSubnet, the cluster's node resource group (the service's load balancer).",
  "Actions": [
    "Microsoft.Network/privateLinkServices/read",
    "Microsoft.Network/privateLinkServices/privateEndpointConnections/read",
    "Microsoft.Network/privateLinkServices/privateEndpointConnections/write",
    "Microsoft.Network/loadBalancers/read"
  ],
  "NotActions": [],
  "DataActions": [],
  "NotDataActions": [],
  "AssignableScopes": [
    "/subscriptions/$SUB/resourceGroups/<node-resource-group>"
  ]
}
EOF
az role definition create --role-definition @"$dir/deployer-role-private-link.json"
# re-run after a change of groups: az role definition update --role-definition @"$dir/deployer-role-private-link.json"
az role assignment create --assignee-object-id "<deployer-object-id>" --assignee-principal-type User --role "aks-gpu-observability deployer (dev)" --scope "/subscriptions/$SUB/resourceGroups/rg-aks-gpu-dev"
az role assignment create --assignee-object-id "<deployer-object-id>" --assignee-principal-type User --role "aks-gpu-observability deployer (dev)" --scope "/subscriptions/$SUB/resourceGroups/rg-observability-dev"
az role assignment create --assignee-object-id "<deployer-object-id>" --assignee-principal-type User --role "aks-gpu-observability role assigner (dev)" --scope "/subscriptions/$SUB/resourceGroups/rg-observability-dev" --condition '((!(ActionMatches{'\''Microsoft.Authorization/roleAssignments/write'\''})) OR (@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {b0d8363b-8ddd-447d-831f-62ca05bff136} AND @Request[Microsoft.Authorization/roleAssignments:PrincipalId] ForAnyOfAnyValues:GuidEquals {<grafana-principal-id>})) AND ((!(ActionMatches{'\''Microsoft.Authorization/roleAssignments/delete'\''})) OR (@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {b0d8363b-8ddd-447d-831f-62ca05bff136} AND @Resource[Microsoft.Authorization/roleAssignments:PrincipalId] ForAnyOfAnyValues:GuidEquals {<grafana-principal-id>}))' --condition-version 2.0
az role assignment create --assignee-object-id "<deployer-object-id>" --assignee-principal-type User --role "aks-gpu-observability private link approver (dev)" --scope "/subscriptions/$SUB/resourceGroups/<node-resource-group>"
az role assignment create --assignee-object-id "<deployer-object-id>" --assignee-principal-type User --role 22926164-76b3-42b3-bc55-97df8dab3e41 --scope "/subscriptions/$SUB/resourceGroups/rg-observability-dev/providers/Microsoft.Dashboard/grafana/amg-gpu-dev"
# Replace before running: <deployer-object-id>, <grafana-principal-id>, <node-resource-group> (docs/deployer-role.md, "Placeholders").
