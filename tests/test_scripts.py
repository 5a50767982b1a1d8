"""The step scripts against the stand-in az: every scenario in tests/scenarios.py. SIMULATED: Azure."""

from __future__ import annotations

import re

import pytest

from tests import scenarios
from tests.scenarios import SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario, scenario_results):
    if scenario.needs is not None and not scenario.needs.exists():
        pytest.skip(f"reference artefact missing: {scenario.needs}")
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


def test_only_our_connection_is_ever_named_in_an_approval(scenario_results):
    result = scenario_results["two-pending-only-ours-approved"]
    approvals = [c["argv"] for c in result.calls if c["argv"][:4] == ["network", "private-link-service", "connection", "update"]]
    assert len(approvals) == 1
    argv = approvals[0]
    assert argv[argv.index("--name") + 1] == f"{scenarios.OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1"
    assert argv[argv.index("--connection-status") + 1] == "Approved"


def test_scripts_print_no_tokens_and_use_only_az():
    """The scripts call az and shell built-ins/coreutils only: no curl, kubectl or token handling."""
    for path in sorted(scenarios.ROOT.glob("scripts/*.sh")):
        text = path.read_text()
        for forbidden in ("curl ", "wget ", "kubectl ", "get-access-token", "Authorization:"):
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
            assert forbidden not in code.replace("kubectl -n gadget", ""), (path.name, forbidden)


def test_the_workspace_check_uses_the_stacks_api_version():
    """scripts/azcli.py falls back to its own copy of the Microsoft.Dashboard API version (the scripts import
    nothing from components/); it must be the one the stack passes as API_VERSION."""
    import sys

    from components.scripts import DASHBOARD_API_VERSION

    sys.path.insert(0, str(scenarios.ROOT / "scripts"))
    try:
        import azcli
    finally:
        sys.path.pop(0)
    assert azcli.DASHBOARD_API_VERSION == DASHBOARD_API_VERSION
