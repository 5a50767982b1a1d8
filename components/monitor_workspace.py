"""Component MonitorWorkspace: an Azure Monitor workspace created by the stack (``createMonitorWorkspace``).

Owns: ``Microsoft.Monitor/accounts`` (azure-native ``monitor.AzureMonitorWorkspace``), delete-before-replace (its
name is fixed by config). Inputs: :class:`MonitorWorkspaceArgs`. Outputs: ``id``, ``query_endpoint``
(``metrics.prometheusQueryEndpoint``, the Prometheus datasource URL). The cluster's metrics add-on must send to it;
the stack does not change the cluster. Upstream: Azure/azure-rest-api-specs ``specification/monitor``;
docs/decisions/datasource-ownership.md ("Created workspaces").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import pulumi
from pulumi_azure_native import monitor

TYPE = "aks-gpu-observability:index:MonitorWorkspace"


@dataclass(frozen=True)
class MonitorWorkspaceArgs:
    name: str
    resource_group: str
    location: pulumi.Input[str]
    tags: dict = field(default_factory=dict)


class MonitorWorkspace(pulumi.ComponentResource):
    """Outputs: ``id``, ``query_endpoint``."""

    def __init__(self, name: str, args: MonitorWorkspaceArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        workspace = monitor.AzureMonitorWorkspace(
            f"{name}-workspace",
            azure_monitor_workspace_name=args.name,
            resource_group_name=args.resource_group,
            location=args.location,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.id = workspace.id
        self.query_endpoint = workspace.metrics.apply(lambda m: m.prometheus_query_endpoint if m else "")
        self.register_outputs({"id": self.id, "query_endpoint": self.query_endpoint})
