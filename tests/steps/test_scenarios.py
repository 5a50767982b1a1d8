"""Every step script against the stand-in az: each scenario of tests/support/scenarios.py (SIMULATED: Azure), and
what every script may call."""

from __future__ import annotations

import re

import pytest

from tests.support import scenarios
from tests.support.scenarios import SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario, scenario_results):
    result = scenario_results[scenario.name]
    assert result.returncode == scenario.exit, result.stderr
    if scenario.pattern:
        assert re.fullmatch(scenario.stdout, result.stdout), (result.stdout, result.stderr)
    else:
        assert result.stdout == scenario.stdout, result.stderr
    for text in scenario.stderr_has:
        assert text in result.stderr, result.stderr
    for rule, expected in scenario.calls.items():
        assert result.count(rule) == expected, (rule, result.calls)
    assert all(call["rule"] is not None for call in result.calls), "a call no rule expected"
    assert result.seconds < scenario.max_seconds
    if scenario.exit:
        errors = [line for line in result.stderr.splitlines() if "error: " in line]
        assert len(errors) == 1, result.stderr  # one clear error line


def test_scripts_print_no_tokens_and_use_only_az():
    """The scripts call az and shell built-ins/coreutils only: no curl, kubectl or token handling."""
    for path in sorted(scenarios.ROOT.glob("steps/*.sh")):
        text = path.read_text()
        for forbidden in ("curl ", "wget ", "kubectl ", "get-access-token", "Authorization:"):
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
            assert forbidden not in code.replace("kubectl -n gadget", ""), (path.name, forbidden)
