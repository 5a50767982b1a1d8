"""steps/lib.sh: the waiting scripts' poll schedule, on a fake clock; what every shell step (and the library they
source) may call."""

from __future__ import annotations

import os
import subprocess

from tests.support import scenarios

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
                          env={"PATH": os.environ["PATH"], "TIMEOUT": str(timeout), "CHECK_TAKES_MS": str(check_ms),
                               **env})
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


def test_scripts_print_no_tokens_and_use_only_az():
    """The scripts call az and shell built-ins/coreutils only: no curl, kubectl or token handling."""
    for path in sorted(scenarios.ROOT.glob("steps/*.sh")):
        text = path.read_text()
        for forbidden in ("curl ", "wget ", "kubectl ", "get-access-token", "Authorization:"):
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
            assert forbidden not in code.replace("kubectl -n gadget", ""), (path.name, forbidden)


def test_a_step_and_what_it_runs_never_see_the_pulumi_login():
    """pulumi/pulumi#23589: from CLI 3.247.0 every plugin starts with the Pulumi Cloud login (``PULUMI_ACCESS_TOKEN``,
    ``PULUMI_API``), and pulumi-command hands its environment to each step: sourcing lib.sh drops them, a stack's
    passphrase and GitHub's OIDC request pair (steps/azcli.py's list, the same), and keeps the rest."""
    from steps.azcli import DEPLOY_CREDENTIALS

    env = {**os.environ, **{name: "pul-0123456789abcdef" for name in DEPLOY_CREDENTIALS}, "GRAFANA_ID": "kept"}
    done = subprocess.run(["bash", "-c", "source steps/lib.sh; env"], cwd=scenarios.ROOT, env=env, capture_output=True,
                          text=True, check=True)
    names = {line.split("=", 1)[0] for line in done.stdout.splitlines()}
    assert names & set(DEPLOY_CREDENTIALS) == set()
    assert "GRAFANA_ID" in names
