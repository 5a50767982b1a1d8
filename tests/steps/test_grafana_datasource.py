"""steps/grafana_datasource.py, the datasource step: every scenario of tests/support/scenarios.py that
runs it, against the stand-in az (SIMULATED: Azure)."""

from __future__ import annotations

import pytest

from tests.support import scenario_checks


@pytest.mark.parametrize("scenario", scenario_checks.of("grafana_datasource.py"), ids=lambda s: s.name)
def test_scenario(scenario, scenario_results):
    """Each scenario of steps/grafana_datasource.py under the stand-in az."""
    scenario_checks.check(scenario, scenario_results[scenario.name])
