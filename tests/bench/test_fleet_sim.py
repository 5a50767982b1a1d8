"""bench.fleet_sim runs and states every target in its output (no wall-clock timing is asserted)."""

from __future__ import annotations

from tests.support.benchmarks import bench


def test_fleet_sim_prints_the_three_runs_ours_today_and_the_floor_and_each_target_met_or_not():
    """A smoke test: it runs and states every target in its output; no timing is asserted."""
    done = bench("bench.fleet_sim", "--sizes", "1,50", "--grafanas", "1,5")
    assert done.returncode == 0, done.stderr
    for text in ("first rollout", "chart bump", "nothing to do", "ours", "today", "floor", "one stack alone"):
        assert text in done.stdout, text
    ratios = next(line for line in done.stdout.splitlines() if line.strip().startswith("ratios: "))
    for name in ("first rollout (50, 1 Grafana): ours/floor = ", "chart bump (50): ours/one stack = ",
                 "nothing to do (50): ours/one stack = "):
        assert name in ratios, ratios
    targets = next(line for line in done.stdout.splitlines() if line.strip().startswith("targets: "))
    assert targets.count(" met") + targets.count("NOT MET") == 3, targets
    assert "ours/floor <= 1.2" in targets and targets.count("<= 1.5") == 2
