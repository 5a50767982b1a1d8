"""The existing Azure Managed Grafana workspace: its facts and the tier check.

Not a component: looked up with the azure-native invoke ``dashboard.getGrafana`` (ARM ``GET
.../Microsoft.Dashboard/grafana/{name}``, API 2024-10-01), never created here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pulumi_azure_native import dashboard

from components.config import ConfigError, StackConfig


@dataclass(frozen=True)
class GrafanaFacts:
    """``id`` (ARM id), ``location``, ``endpoint`` (``properties.endpoint``, https URL), ``sku``
    (``sku.name``), ``principal_id`` (system-assigned identity, empty if none)."""

    id: str
    name: str
    resource_group: str
    location: str
    endpoint: str
    sku: str
    principal_id: str


def lookup_grafana(cfg: StackConfig) -> GrafanaFacts:
    """Look the Grafana workspace up. Raises ConfigError (key ``grafanaName``) unless it is Standard tier:
    managed private endpoints (``Microsoft.Dashboard/grafana/managedPrivateEndpoints``) need Standard."""
    result = dashboard.get_grafana(resource_group_name=cfg.grafana_resource_group, workspace_name=cfg.grafana_name)
    sku = result.sku.name if result.sku else ""
    if sku != "Standard":
        raise ConfigError(
            "grafanaName",
            f"Azure Managed Grafana '{cfg.grafana_name}' is on the {sku or 'unknown'} tier; managed private "
            "endpoints need Standard (upgrade it in the portal or with `az grafana update --sku-tier Standard`)",
        )
    identity = result.identity
    return GrafanaFacts(
        id=result.id,
        name=result.name,
        resource_group=cfg.grafana_resource_group,
        location=result.location,
        endpoint=(result.properties.endpoint if result.properties else "") or "",
        sku=sku,
        principal_id=(identity.principal_id if identity else "") or "",
    )
