"""existing/grafana.py: an existing Grafana must be Standard tier with a system-assigned identity; an existing Azure
Monitor workspace must report its query endpoint."""

from __future__ import annotations

import pytest

from offline import canned
from stack_config.schema import ConfigError


def test_grafana_must_be_standard_tier(plan):
    def essential(args, location):
        answer = canned.grafana(args, location)
        answer["sku"] = {"name": "Essential"}
        return answer

    with pytest.raises(ConfigError,
                       match="^grafanaName: Azure Managed Grafana 'amg-gpu-dev' is on the Essential tier; managed "
                             "private endpoints need Standard"):
        plan(invoke_overrides={"azure-native:dashboard:getGrafana": essential})


def test_existing_grafana_needs_a_system_identity(plan):
    def no_identity(args, location):
        answer = canned.grafana(args, location)
        answer["identity"] = {"type": "None"}
        return answer

    with pytest.raises(ConfigError,
                       match="^grafanaName: Azure Managed Grafana 'amg-gpu-dev' has no system-assigned identity"):
        plan(invoke_overrides={"azure-native:dashboard:getGrafana": no_identity})


def test_workspace_without_query_endpoint_is_refused(plan):
    def bare(args, location):
        answer = canned.monitor_workspace(args, location)
        answer["metrics"] = {}
        return answer

    with pytest.raises(ConfigError, match="^monitorWorkspaceName: Azure Monitor workspace 'amw-gpu-dev' reports no"):
        plan(invoke_overrides={"azure-native:monitor:getAzureMonitorWorkspace": bare})
