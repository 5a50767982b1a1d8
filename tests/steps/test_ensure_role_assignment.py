"""steps/ensure_role_assignment.sh, the shared Monitoring Data Reader assignment made only if missing: every
scenario of tests/support/scenarios.py that runs it, against the stand-in az (SIMULATED: Azure)."""

from __future__ import annotations

import pytest

from tests.support import scenario_checks


@pytest.mark.parametrize("scenario", scenario_checks.of("ensure_role_assignment.sh"), ids=lambda s: s.name)
def test_scenario(scenario, scenario_results):
    """Each scenario of steps/ensure_role_assignment.sh under the stand-in az."""
    scenario_checks.check(scenario, scenario_results[scenario.name])
