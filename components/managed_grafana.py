"""Component ManagedGrafana: an Azure Managed Grafana workspace created by the stack (``createGrafana``).

Owns: ``Microsoft.Dashboard/grafana`` (azure-native ``dashboard.Grafana``, API 2024-10-01; Standard tier,
system-assigned identity, integrated with the workspace) and Grafana Admin for the deployer on it
(``stack.specs.GRAFANA_ADMIN``), both delete-before-replace. Inputs: :class:`ManagedGrafanaArgs`. Outputs: ``id``,
``endpoint``, ``location``, ``principal_id``, ``ready``. Upstream: Azure/azure-rest-api-specs
``specification/dashboard``; docs/decisions/datasource-ownership.md ("Created workspaces").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import pulumi
from pulumi_azure_native import authorization, dashboard

from stack import grafana_lock
from stack.specs import GRAFANA_ADMIN, role_assignment_name, role_definition_id

TYPE = "aks-gpu-observability:index:ManagedGrafana"


def deployer_principal_type(cfg) -> str:
    """``deployerPrincipalType``, or for ``auto``: ServicePrincipal when azure-native signs in as one
    (ARM_CLIENT_ID or AZURE_CLIENT_ID set, as in CI with OIDC), else User. ARM rejects a role assignment
    whose principalType does not match the principal (UnmatchedPrincipalType)."""
    if cfg.deployer_principal_type != "auto":
        return cfg.deployer_principal_type
    return "ServicePrincipal" if (os.environ.get("ARM_CLIENT_ID") or os.environ.get("AZURE_CLIENT_ID")) else "User"


@dataclass(frozen=True)
class ManagedGrafanaArgs:
    """``public_network_access``: ``Enabled`` or ``Disabled`` (then the deployer must reach Grafana's API
    privately). ``deployer_object_id``: who gets Grafana Admin."""

    name: str
    resource_group: str
    location: pulumi.Input[str]
    workspace_id: pulumi.Input[str]
    subscription_id: str
    deployer_object_id: str
    public_network_access: str
    deployer_principal_type: str
    tags: dict


class ManagedGrafana(pulumi.ComponentResource):
    """Outputs: ``id``, ``endpoint``, ``principal_id``, ``location``; ``ready`` lists what the Grafana API
    steps must wait for (the workspace and the deployer's Grafana Admin role)."""

    def __init__(self, name: str, args: ManagedGrafanaArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        held = grafana_lock.hold(args.name)  # written one process at a time in the fleet (stack/grafana_lock.py)
        grafana = dashboard.Grafana(
            f"{name}-workspace",
            workspace_name=held,
            resource_group_name=args.resource_group,
            location=args.location,
            sku=dashboard.ResourceSkuArgs(name="Standard"),
            identity=dashboard.ManagedServiceIdentityArgs(type=dashboard.ManagedServiceIdentityType.SYSTEM_ASSIGNED),
            properties=dashboard.ManagedGrafanaPropertiesArgs(
                public_network_access=args.public_network_access,
                zone_redundancy=dashboard.ZoneRedundancy.DISABLED,
                api_key=dashboard.ApiKey.DISABLED,
                deterministic_outbound_ip=dashboard.DeterministicOutboundIP.DISABLED,
                grafana_integrations=dashboard.GrafanaIntegrationsArgs(
                    azure_monitor_workspace_integrations=[
                        dashboard.AzureMonitorWorkspaceIntegrationArgs(azure_monitor_workspace_resource_id=args.workspace_id)
                    ]
                ),
            ),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        grafana_lock.release_after(grafana.id, held)
        admin = authorization.RoleAssignment(
            f"{name}-grafana-admin",
            role_assignment_name=grafana.id.apply(
                lambda gid: role_assignment_name(gid, GRAFANA_ADMIN, args.deployer_object_id)),
            scope=grafana.id,
            role_definition_id=role_definition_id(args.subscription_id, GRAFANA_ADMIN),
            principal_id=args.deployer_object_id,
            principal_type=args.deployer_principal_type,  # azure-native would send "User" for a service principal too
            description="The deployer manages datasources and dashboards (aks-gpu-observability)",
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.id = grafana.id
        self.endpoint = grafana.properties.apply(lambda p: p.endpoint)
        self.principal_id = grafana.identity.apply(lambda i: i.principal_id if i else "")
        self.location = grafana.location
        self.ready = [grafana, admin]
        self.register_outputs({"id": self.id, "endpoint": self.endpoint, "principal_id": self.principal_id})
