"""The step scripts against the stand-in az: every scenario in tests/support/scenarios.py. SIMULATED: Azure."""

from __future__ import annotations

import os
import re
import subprocess

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


def test_only_our_connection_is_ever_named_in_an_approval(scenario_results):
    result = scenario_results["two-pending-only-ours-approved"]
    approvals = [c["argv"] for c in result.calls if c["argv"][:4] == ["network", "private-link-service", "connection", "update"]]
    assert len(approvals) == 1
    argv = approvals[0]
    assert argv[argv.index("--name") + 1] == f"{scenarios.OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1"
    assert argv[argv.index("--connection-status") + 1] == "Approved"


def test_a_strangers_same_name_connection_is_never_approved(scenario_results):
    """The security finding: a private endpoint named like Grafana's, in another subscription (attacker-rg), which
    does not carry this stack's nonce. The approval used to match the name only and approved it."""
    result = scenario_results["stranger-same-name-is-rejected-not-approved"]
    updates = [c["argv"] for c in result.calls if c["argv"][:4] == ["network", "private-link-service", "connection", "update"]]
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
    assert [c["argv"][:4] for c in result.calls if c["argv"][:4] == ["network", "private-link-service", "connection", "update"]] == []


def test_scripts_print_no_tokens_and_use_only_az():
    """The scripts call az and shell built-ins/coreutils only: no curl, kubectl or token handling."""
    for path in sorted(scenarios.ROOT.glob("steps/*.sh")):
        text = path.read_text()
        for forbidden in ("curl ", "wget ", "kubectl ", "get-access-token", "Authorization:"):
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
            assert forbidden not in code.replace("kubectl -n gadget", ""), (path.name, forbidden)


#: steps/lib.sh's schedule on a fake clock: each check takes CHECK_TAKES_MS, ``sleep`` advances the clock.
SCHEDULE = r"""
source steps/lib.sh
CLOCK=0
now_ms() { printf '%s\n' "$CLOCK"; }
sleep() { local ms=${1/./}; CLOCK=$((CLOCK + 10#$ms)); }
start_clock "$TIMEOUT"
while :; do
  printf '%s\n' "$CLOCK"
  CLOCK=$((CLOCK + CHECK_TAKES_MS))
  backoff || break
done
"""


def check_starts(check_ms: int, timeout: int = 40, **env) -> list[int]:
    """Start times (ms) of the checks a waiting script makes, with checks taking ``check_ms`` each."""
    done = subprocess.run(["bash", "-c", SCHEDULE], cwd=scenarios.ROOT, capture_output=True, text=True, check=True,
                          env={"PATH": os.environ["PATH"], "TIMEOUT": str(timeout), "CHECK_TAKES_MS": str(check_ms), **env})
    return [int(line) for line in done.stdout.split()]


def test_poll_schedule_counts_from_each_check_start():
    """Checks start 3 s, then every 6 s, apart however long a check takes: an event is noticed at most one
    delay plus one check after it happens (<= 10 s for checks of up to 4 s)."""
    for check_ms in (0, 1500, 3000, 4000):
        starts = check_starts(check_ms)
        if check_ms <= 3000:
            assert starts[:5] == [0, 3000, 9000, 15000, 21000], (check_ms, starts)
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        assert max(gaps) + check_ms <= 10_000, (check_ms, starts)
    assert check_starts(4000)[:3] == [0, 4000, 10000]  # a check longer than the first delay


def test_poll_schedule_stops_at_the_deadline_and_follows_the_environment():
    starts = check_starts(0, timeout=10)
    assert starts == [0, 3000, 9000, 10000]  # the last sleep is cut at the deadline, then one last check
    assert check_starts(500, timeout=3, POLL_INITIAL_SECONDS="1", POLL_MAX_SECONDS="1") == [0, 1000, 2000, 3000]
    # A check longer than the delay: the next one starts when it ends.
    assert check_starts(2500, timeout=10, POLL_INITIAL_SECONDS="1", POLL_MAX_SECONDS="1") == [0, 2500, 5000, 7500]


def test_python_retries_count_from_each_attempt_start(monkeypatch):
    """steps/azcli.py Step.retry keeps the same schedule for what it waits out (a role propagating)."""
    from steps import azcli

    clock = {"now": 0.0}
    starts = []
    monkeypatch.setattr(azcli.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(azcli.time, "sleep", lambda s: clock.__setitem__("now", clock["now"] + s))
    monkeypatch.delenv("POLL_INITIAL_SECONDS", raising=False)
    monkeypatch.delenv("POLL_MAX_SECONDS", raising=False)
    monkeypatch.setenv("RETRY_FORBIDDEN", "true")

    def call():
        starts.append(clock["now"])
        clock["now"] += 1.5  # the call itself
        if len(starts) < 5:
            raise azcli.AzError(["az"], "ERROR: Forbidden({})")
        return "ok"

    assert azcli.Step("t").retry("reading", call, timeout=60) == "ok"
    assert starts == [0.0, 3.0, 9.0, 15.0, 21.0]


def test_the_workspace_check_uses_the_stacks_api_version():
    """steps/azcli.py falls back to its own copy of the Microsoft.Dashboard API version (the scripts import
    nothing from components/); it must be the one the stack passes as API_VERSION."""
    import sys

    from steps.command import DASHBOARD_API_VERSION

    from steps import azcli
    assert azcli.DASHBOARD_API_VERSION == DASHBOARD_API_VERSION
