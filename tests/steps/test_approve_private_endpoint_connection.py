"""steps/approve_private_endpoint_connection.sh against the stand-in az: only this stack's connection is approved,
and its nonce is never shown."""

from __future__ import annotations

import pytest

from tests.support import scenario_checks, scenarios
from tests.support.scenarios import SCENARIOS

#: The az command that approves or rejects a connection on the PLS.
UPDATE = ["network", "private-link-service", "connection", "update"]


def test_only_our_connection_is_ever_named_in_an_approval(scenario_results):
    result = scenario_results["two-pending-only-ours-approved"]
    approvals = [c["argv"] for c in result.calls if c["argv"][:4] == UPDATE]
    assert len(approvals) == 1
    argv = approvals[0]
    assert argv[argv.index("--name") + 1] == f"{scenarios.OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1"
    assert argv[argv.index("--connection-status") + 1] == "Approved"


def test_a_strangers_same_name_connection_is_never_approved(scenario_results):
    """The attack: a private endpoint named like Grafana's, in another subscription (attacker-rg), which
    does not carry this stack's nonce. The approval used to match the name only and approved it."""
    result = scenario_results["stranger-same-name-is-rejected-not-approved"]
    updates = [c["argv"] for c in result.calls if c["argv"][:4] == UPDATE]
    assert not [argv for argv in updates if argv[argv.index("--connection-status") + 1] == "Approved"], updates
    assert [argv[argv.index("--connection-status") + 1] for argv in updates] == ["Rejected"], updates
    assert f"in subscription {scenarios.ATTACKER_SUB}" in result.stderr, result.stderr


def test_the_approval_nonce_is_never_printed_nor_on_a_command_line(scenario_results):
    """The nonce is a secret: no approval scenario prints it (stdout, stderr) or passes it to az as an argument (a
    command line is visible to every local user); the marker, an HMAC of it, may be written."""
    seen = 0
    for scenario in SCENARIOS:
        if scenario.script != "approve_private_endpoint_connection.sh":
            continue
        result = scenario_results[scenario.name]
        assert scenarios.NONCE not in result.stdout + result.stderr, scenario.name
        for call in result.calls:
            assert not any(scenarios.NONCE in arg for arg in call["argv"]), (scenario.name, call["argv"])
        seen += 1
    assert seen >= 15


def test_a_re_run_after_approval_writes_nothing(scenario_results):
    result = scenario_results["already-approved"]
    assert result.returncode == 0
    assert [c["argv"][:4] for c in result.calls if c["argv"][:4] == UPDATE] == []


@pytest.mark.parametrize("scenario", scenario_checks.of("approve_private_endpoint_connection.sh"), ids=lambda s: s.name)
def test_scenario(scenario, scenario_results):
    """Each scenario of steps/approve_private_endpoint_connection.sh under the stand-in az."""
    scenario_checks.check(scenario, scenario_results[scenario.name])
