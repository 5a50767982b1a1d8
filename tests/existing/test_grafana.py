"""existing/grafana.py: an existing Grafana must be Standard tier."""

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
