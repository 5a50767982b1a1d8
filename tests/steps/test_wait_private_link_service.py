"""steps/wait_private_link_service.sh, which waits for the private link service the release's annotations make:
every scenario of tests/support/scenarios.py that runs it, against the stand-in az (SIMULATED: Azure)."""

from __future__ import annotations

import pytest

from tests.support import scenario_checks


@pytest.mark.parametrize("scenario", scenario_checks.of("wait_private_link_service.sh"), ids=lambda s: s.name)
def test_scenario(scenario, scenario_results):
    """Each scenario of steps/wait_private_link_service.sh under the stand-in az."""
    scenario_checks.check(scenario, scenario_results[scenario.name])
