"""Which Grafana a step talks to, and what its version changes for the datasources and the dashboard.

Owns: :func:`probe` (``GET /api/health`` and ``GET /api/plugins?type=datasource`` read into a :class:`Server`),
:func:`datasource_type` and :func:`for_grafana` (the Prometheus datasource's type in that Grafana:
``grafana-azureprometheus-datasource`` from 13.0 on, ``prometheus`` before), :func:`dashboard_prometheus_type` (what
the dashboard's Prometheus variable selects). Inputs: Grafana's answers through steps/azcli.py ``rest``. Outputs:
:class:`Server` and types. Errors: ``AzError``; the plugin missing in a Grafana 13 stops the step with one line. Used
by steps/grafana_datasource.py, steps/grafana_dashboard.py and ``ops.verify --drift``. Upstream: grafana/grafana
``pkg/api/http_server.go``; the version rules and their sources: docs/decisions/grafana-versions.md.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Optional

from steps.azcli import AzError, Step, rest

PROMETHEUS = "prometheus"
AZURE_PROMETHEUS = "grafana-azureprometheus-datasource"
#: What Grafana's own migration adds to a datasource's jsonData (``prom_mig.go`` ``updateDataSourceType``).
MIGRATION_MARKER = "prometheus-type-migration"
#: The first Grafana without Azure authentication in core Prometheus (PR 123089).
AZURE_AUTH_REMOVED = (13, 0)


def release(version: Optional[str]) -> Optional[tuple]:
    """``"12.4.4"`` (or ``"12.4.4+security-01"``, ``"13.0.0-pre"``) -> ``(12, 4, 4)``; None when unknown."""
    found = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return tuple(int(part or 0) for part in found.groups()) if found else None


@dataclass(frozen=True)
class Server:
    """``version``: what ``/api/health`` reports (None when hidden); ``plugins``: datasource plugin ids it has."""

    version: Optional[str]
    plugins: frozenset = field(default_factory=frozenset)

    @property
    def release(self) -> Optional[tuple]:
        return release(self.version)

    @property
    def without_azure_auth_in_prometheus(self) -> bool:
        """True from 13.0 on; False before it, and when the version is unknown."""
        return self.release is not None and self.release[:2] >= AZURE_AUTH_REMOVED

    def describe(self) -> str:
        return f"Grafana {self.version}" if self.version else "Grafana (version not reported)"


def probe(step: Step, endpoint: str, timeout: float) -> Server:
    """The version and datasource plugins of the Grafana at ``endpoint``; transient errors retried, anything else stops
    the step with one line."""
    def get(path: str, what: str):
        try:
            return step.retry(f"reading {what}", lambda: rest("get", f"{endpoint}{path}"), timeout)
        except AzError as error:
            step.fail(f"reading {what} failed: {error.last_line}")

    health = get("/api/health", "Grafana's version (GET /api/health)") or {}
    listed = get("/api/plugins?" + urllib.parse.urlencode({"type": "datasource"}),
                 "Grafana's datasource plugins (GET /api/plugins)") or []
    plugins = frozenset(item.get("id") for item in listed if isinstance(item, dict) and item.get("id"))
    server = Server(health.get("version") or None, plugins)
    step.log(f"{server.describe()}; "
             f"{AZURE_PROMETHEUS} {'installed' if AZURE_PROMETHEUS in plugins else 'not installed'}")
    return server


def uses_azure_auth(definition: dict) -> bool:
    """True for a Prometheus datasource (either type) that authenticates with Azure (``jsonData.azureCredentials``)."""
    return (definition.get("type") in (PROMETHEUS, AZURE_PROMETHEUS)
            and (definition.get("jsonData") or {}).get("azureCredentials") is not None)


def accepted_types(server: Server) -> set:
    """The types an Azure-auth Prometheus datasource may have in this Grafana without being rewritten (or reported as
    drift): the plugin's wherever it is installed (Grafana's migration, or an admin, put it there); ``prometheus``
    only where core Prometheus still has Azure authentication (before 13.0, or the version unknown)."""
    types = {AZURE_PROMETHEUS} if AZURE_PROMETHEUS in server.plugins else set()
    if not server.without_azure_auth_in_prometheus:
        types.add(PROMETHEUS)
    return types


def new_type(server: Server) -> str:
    """The type to write for an Azure-auth Prometheus datasource that is not there yet (or has a type this Grafana
    cannot use): the plugin's from 13.0 on, and when the version is unknown and the plugin installed; else
    ``prometheus``."""
    if server.without_azure_auth_in_prometheus:
        return AZURE_PROMETHEUS
    if server.release is None and AZURE_PROMETHEUS in server.plugins:
        return AZURE_PROMETHEUS
    return PROMETHEUS


def datasource_type(server: Server, live: Optional[dict]) -> str:
    """What an Azure-auth Prometheus datasource's type should be in this Grafana: the live one when accepted
    (:func:`accepted_types`), else :func:`new_type`."""
    if live is not None and live.get("type") in accepted_types(server):
        return live["type"]
    return new_type(server)


def for_grafana(definition: dict, server: Server, live: Optional[dict]) -> dict:
    """``definition`` (the stack's, type ``prometheus``) with the type this Grafana needs; unchanged unless it is an
    Azure-auth Prometheus datasource."""
    if not uses_azure_auth(definition):
        return definition
    return {**definition, "type": datasource_type(server, live)}


def missing_plugin(server: Server, definition: dict) -> Optional[str]:
    """Why ``definition`` (as :func:`for_grafana` made it) cannot work in this Grafana, or None: the plugin type and
    the plugin not installed."""
    if definition.get("type") != AZURE_PROMETHEUS or AZURE_PROMETHEUS in server.plugins:
        return None
    return (f"{server.describe()} has no Azure authentication in its core Prometheus datasource (removed in 13.0) and "
            f"the plugin {AZURE_PROMETHEUS} is not installed; install it in this Grafana (Azure Managed Grafana: the "
            "workspace's plugin management), then run `pulumi up` again")


def dashboard_prometheus_type(server: Server) -> str:
    """The plugin id the GPU dashboard's Prometheus datasource variable selects in this Grafana (module docstring)."""
    return new_type(server)


def retarget_prometheus_variables(dashboard: dict, plugin_id: str) -> dict:
    """Point each datasource variable that selects ``prometheus`` datasources at ``plugin_id`` instead."""
    if plugin_id == PROMETHEUS:
        return dashboard
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        if variable.get("type") == "datasource" and variable.get("query") == PROMETHEUS:
            variable["query"] = plugin_id
    return dashboard
