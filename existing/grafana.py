"""The existing Azure Managed Grafana and Azure Monitor workspace: their facts and the up-front checks.

Owns: :class:`GrafanaFacts`, :class:`MonitorWorkspaceFacts`, :func:`lookup_grafana`,
:func:`lookup_monitor_workspace`. Input: a StackConfig. Outputs: the facts, from the azure-native invokes
``dashboard.getGrafana`` (ARM ``GET .../Microsoft.Dashboard/grafana/{name}``, API 2024-10-01) and
``monitor.getAzureMonitorWorkspace`` (ARM ``GET .../Microsoft.Monitor/accounts/{name}``). Errors: ConfigError on
``grafanaName`` (not readable, not Standard tier, no system-assigned identity) or ``monitorWorkspaceName`` (not
readable, no Prometheus query endpoint). When the stack creates them instead: ``components.managed_grafana``,
``components.monitor_workspace``.
Upstream: Azure/azure-rest-api-specs ``specification/dashboard``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import dashboard, monitor

from existing.cluster import unreadable
from stack_config.schema import ConfigError, StackConfig


@dataclass(frozen=True)
class GrafanaFacts:
    """``id`` (ARM id), ``location``, ``endpoint`` (``properties.endpoint``, https URL), ``sku``
    (``sku.name``), ``principal_id`` (system-assigned identity, empty if none)."""

    id: pulumi.Input[str]
    name: str
    resource_group: str
    location: pulumi.Input[str]
    endpoint: pulumi.Input[str]
    sku: str
    principal_id: pulumi.Input[str]


@dataclass(frozen=True)
class MonitorWorkspaceFacts:
    """``id`` (ARM id) and ``query_endpoint`` (``metrics.prometheusQueryEndpoint``, https URL)."""

    id: pulumi.Input[str]
    query_endpoint: pulumi.Input[str]


def lookup_grafana(cfg: StackConfig) -> GrafanaFacts:
    """Look the Grafana workspace up. Raises ConfigError (key ``grafanaName``) unless it is Standard tier
    (managed private endpoints, ``Microsoft.Dashboard/grafana/managedPrivateEndpoints``, need Standard) and
    has a system-assigned identity (the Prometheus datasource authenticates with it)."""
    try:
        result = dashboard.get_grafana(resource_group_name=cfg.grafana_resource_group, workspace_name=cfg.grafana_name)
    except Exception as error:  # the SDK raises a plain Exception for a failed invoke
        raise unreadable("grafanaName", f"Azure Managed Grafana '{cfg.grafana_name}' in resource group "
                                        f"'{cfg.grafana_resource_group}'", error) from None
    sku = result.sku.name if result.sku else ""
    if sku != "Standard":
        raise ConfigError(
            "grafanaName",
            f"Azure Managed Grafana '{cfg.grafana_name}' is on the {sku or 'unknown'} tier; managed private "
            "endpoints need Standard (upgrade it in the portal or with "
            f"`az resource update --ids {result.id} --set sku.name=Standard`)",
        )
    identity = result.identity
    if not (identity and identity.principal_id):
        raise ConfigError(
            "grafanaName",
            f"Azure Managed Grafana '{cfg.grafana_name}' has no system-assigned identity; the Prometheus datasource "
            f"authenticates with it: `az resource update --ids {result.id} --set identity.type=SystemAssigned` "
            "(or enable it under Identity in the portal)",
        )
    return GrafanaFacts(
        id=result.id,
        name=result.name,
        resource_group=cfg.grafana_resource_group,
        location=result.location,
        endpoint=(result.properties.endpoint if result.properties else "") or "",
        sku=sku,
        principal_id=(identity.principal_id if identity else "") or "",
    )


def lookup_monitor_workspace(cfg: StackConfig) -> MonitorWorkspaceFacts:
    """Look the Azure Monitor workspace up. Raises ConfigError (key ``monitorWorkspaceName``) when it has no
    Prometheus query endpoint."""
    try:
        result = monitor.get_azure_monitor_workspace(
            resource_group_name=cfg.monitor_workspace_resource_group,
            azure_monitor_workspace_name=cfg.monitor_workspace_name,
        )
    except Exception as error:  # the SDK raises a plain Exception for a failed invoke
        raise unreadable("monitorWorkspaceName", f"Azure Monitor workspace '{cfg.monitor_workspace_name}' in resource "
                                                 f"group '{cfg.monitor_workspace_resource_group}'", error) from None
    endpoint = (result.metrics.prometheus_query_endpoint if result.metrics else "") or ""
    if not endpoint:
        raise ConfigError(
            "monitorWorkspaceName",
            f"Azure Monitor workspace '{cfg.monitor_workspace_name}' reports no metrics.prometheusQueryEndpoint",
        )
    return MonitorWorkspaceFacts(id=result.id, query_endpoint=endpoint)
