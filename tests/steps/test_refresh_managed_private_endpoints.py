"""steps/refresh_managed_private_endpoints.sh, which refreshes Grafana's managed private endpoints after the
approval: every scenario of tests/support/scenarios.py that runs it, against the stand-in az (SIMULATED: Azure)."""

from __future__ import annotations

import pytest

from tests.support import scenario_checks


@pytest.mark.parametrize("scenario", scenario_checks.of("refresh_managed_private_endpoints.sh"), ids=lambda s: s.name)
def test_scenario(scenario, scenario_results):
    """Each scenario of steps/refresh_managed_private_endpoints.sh under the stand-in az."""
    scenario_checks.check(scenario, scenario_results[scenario.name])
