"""Smoke tests: the benchmarks run and print their figures. No timing is asserted (figures vary by
machine); the deploy simulation's arithmetic is checked on its own fixed table."""

from __future__ import annotations

import subprocess
import sys

from bench import deploy_sim
from tests.conftest import ROOT
from tools.mock_engine import run


def bench(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_plan_scaling_runs():
    done = bench("bench.plan_scaling", "--sizes", "1,2")
    assert done.returncode == 0, done.stderr
    assert "growth: time(2)/time(1)" in done.stdout and "peak RSS" in done.stdout


def test_import_cost_runs():
    done = bench("bench.import_cost", "--repeat", "1")
    assert done.returncode == 0, done.stderr
    assert "the whole SDK is not imported: yes" in done.stdout
    assert "azure-native submodules loaded: " in done.stdout and "pulumi-azure-native" in done.stdout


def test_deploy_sim_runs_and_prints_the_comparison():
    done = bench("bench.deploy_sim")
    assert done.returncode == 0, done.stderr
    for text in ("this stack (Pulumi, polling waits)", "seed procedure, step by step", "Terraform port",
                 "physical limit", "ratios: seed/ours", "Critical path (this stack):"):
        assert text in done.stdout


def test_poll_schedule_follows_the_scripts():
    assert deploy_sim.poll_defaults() == (5, 30)  # scripts/lib.sh
    assert deploy_sim.backoff_notice(0) == (0, 0)
    assert deploy_sim.backoff_notice(60) == (65, 30)   # checks at 0, 5, 15, 35, 65
    assert deploy_sim.backoff_notice(180) == (185, 30)
    assert deploy_sim.fixed_notice(150, 10) == 150 and deploy_sim.fixed_notice(151, 10) == 160


def test_simulation_structure():
    result = deploy_sim.simulate(run("dev"))
    names = [step["resource"] for step in result["criticalPath"]]
    assert names[:3] == ["inspektor-gadget-extension", "pyroscope-release", "grafana-private-link-wait-for-pls"]
    assert names[-1] == "gpu-dashboard-upload"
    assert result["physical"] <= result["ours"] <= result["terraform"]
    assert result["waitsOnPath"] == 2 and result["withinTarget"] is True
    assert abs(sum(s["seconds"] for s in result["seedSteps"]) - result["seed"]) < 1e-9
