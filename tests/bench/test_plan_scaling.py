"""bench.plan_scaling runs and prints its figures (no wall-clock timing is asserted: figures vary by machine)."""

from __future__ import annotations

from tests.support.benchmarks import bench


def test_plan_scaling_runs():
    done = bench("bench.plan_scaling", "--sizes", "1,2")
    assert done.returncode == 0, done.stderr
    assert "growth: time(2)/time(1)" in done.stdout and "peak RSS" in done.stdout
