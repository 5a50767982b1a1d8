"""What every scenario of tests/support/scenarios.py must show once its step script has run: the exit status, the
stdout, the stderr lines it names, the stand-in az calls per rule and no call outside the rules, its time, and one
clear error line when it fails. Each test module of tests/steps/ runs the scenarios of its own script through
:func:`check`."""

from __future__ import annotations

import re

from tests.support.scenarios import SCENARIOS, Result, Scenario


def of(script: str) -> list[Scenario]:
    """The scenarios of ``script`` (its file name under steps/); a script has at least one."""
    chosen = [s for s in SCENARIOS if s.script == script]
    assert chosen, f"no scenario runs {script}"
    return chosen


def check(scenario: Scenario, result: Result) -> None:
    """Assert that ``result`` (the script run under the stand-in az) is what ``scenario`` expects."""
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
