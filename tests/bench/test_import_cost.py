"""bench.import_cost runs and prints its figures (no wall-clock timing is asserted)."""

from __future__ import annotations

from tests.support.benchmarks import bench


def test_import_cost_runs():
    done = bench("bench.import_cost", "--repeat", "1")
    assert done.returncode == 0, done.stderr
    assert "the whole SDK is not imported: yes" in done.stdout
    assert "azure-native submodules loaded: " in done.stdout and "pulumi-azure-native" in done.stdout
