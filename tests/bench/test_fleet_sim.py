"""bench/fleet_sim.py: the floor is a lower bound, the chunk is ``fleet.py endpoints``' schedule with its limits
enforced, the runners and groups are the workflow's, and the bench fails when a target is missed (no wall-clock
timing is asserted)."""

from __future__ import annotations

import json

import pytest
import yaml

from bench import fleet_sim
from offline.program import run
from ops import fleet, stack_matrix
from tests.support import ROOT
from tests.support.benchmarks import bench
from tests.support.workflows import load, steps


@pytest.fixture(scope="module")
def plan():
    return run("dev")


@pytest.fixture(scope="module")
def lat():
    return fleet_sim.Latencies.load()


@pytest.fixture(scope="module")
def figures(plan, lat):
    return fleet_sim.stack_figures(lat.table, plan)


def test_the_floor_is_the_cluster_side_the_serialized_puts_one_approval_one_refresh_and_the_datasource(figures):
    floor = fleet_sim.floor(50, figures)
    assert floor["total"] == pytest.approx(figures.physical_cluster + 50 * figures.mpe + figures.approval_put
                                           + figures.refresh + figures.datasource)
    assert floor["one refresh"] == figures.refresh, "one refresh: it is workspace-wide"


@pytest.mark.parametrize("label", [d[0] for d in fleet_sim.DRIVING])
@pytest.mark.parametrize("factor", fleet_sim.FACTORS)
def test_no_schedule_of_ours_beats_the_floor(plan, lat, label, factor):
    """A lower bound: at every runner count and every latency of the sensitivity table, ours is not below it."""
    scaled = lat.scaled((label,), factor)
    s = fleet_sim.stack_figures(scaled.table, plan)
    for runners in (20, 40, 0):
        for n in (1, 10, 50):
            assert fleet_sim.ours("first", n, 1, runners, s, scaled)["seconds"] >= fleet_sim.floor(n, s)["total"]


def test_the_endpoint_puts_of_a_chunk_run_back_to_back_and_one_refresh_serves_it(figures, lat, monkeypatch):
    started_refreshes = []
    step = fleet_sim.Refresh.step

    def counting(self, at):
        before = self.done
        noticed = step(self, at)
        if before is None:  # this step found no refresh and posted one
            started_refreshes.append(at)
        return noticed

    monkeypatch.setattr(fleet_sim.Refresh, "step", counting)
    chunk = fleet_sim.chunk_job(25, figures, lat)
    start = fleet_sim.started(lat, fleet.PASS1_WORKERS)
    # pass 1 ends with the 25th PUT and its approval: the next stack's start and lookups ran during each PUT
    pass1 = lat.setup + start + figures.prologue + 25 * figures.mpe + figures.approval
    assert started_refreshes == [], "fleet.py's one refresh serves every step of pass 2"
    assert pass1 + lat.ci["az_call"] + figures.refresh < chunk.seconds < pass1 + 5 * 60


def test_a_chunk_past_its_timeout_or_without_a_fresh_sign_in_fails_the_bench(figures, lat, monkeypatch):
    assert fleet_sim.chunk_job(25, figures, lat).exceeded == []
    # one runner: all 200 stacks in one cluster job, 8 at a time, past its 90 minutes
    assert "cluster job timeout 90 min" in fleet_sim.ours("first", 200, 1, 1, figures, lat)["exceeded"]
    # two runners: 100 stacks a job, 70 minutes, within 90 but past the tokens its one sign-in cached
    assert fleet_sim.ours("first", 200, 1, 2, figures, lat)["exceeded"] == ["cluster job past its az tokens' 55 min"]
    assert "timeout 120 min" in fleet_sim.chunk_job(70, figures, lat).exceeded
    monkeypatch.setattr(fleet, "RELOGIN_AFTER_SECONDS", 10 ** 6)  # never sign in again
    assert fleet_sim.chunk_job(30, figures, lat).exceeded == ["az tokens 55 min after a sign-in"]
    monkeypatch.setattr(fleet_sim, "TARGET_FLOOR", 1.0)
    result = fleet_sim.simulate([50], [1], [40])
    assert not all(t["met"] for t in result["targets"].values())


def test_phase_1_needs_one_wave_of_jobs_on_the_runners_there_are(figures, lat):
    """20 runners: 50 stacks in 17 jobs of up to 3 (ops/stack_matrix.py), so a chart bump takes one job's time."""
    bump = fleet_sim.ours("bump", 50, 1, 20, figures, lat)["seconds"]
    assert bump == fleet_sim.ours("bump", 50, 1, 0, figures, lat)["seconds"]
    assert fleet_sim.run_jobs([fleet_sim.Job(10.0)] * 5, 2) == [10.0, 10.0, 20.0, 20.0, 30.0]
    assert fleet_sim.run_jobs([fleet_sim.Job(10.0), fleet_sim.Job(5.0, (0,)), fleet_sim.Job(1.0)], 1) == [
        10.0, 16.0, 11.0]


def test_the_bench_prints_the_floor_the_runner_counts_the_chunks_and_the_sensitivity_and_meets_its_targets():
    done = bench("bench.fleet_sim", "--sizes", "1,50", "--grafanas", "1,5")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for text in ("The floor, 50 stacks on one Grafana", "By runners", "unlimited", "Chunk jobs", "Sensitivity",
                 "Grafana (endpoint PUT and refresh)", "targets:"):
        assert text in out, text
    targets = out.split("targets:")[1].strip().splitlines()
    assert len(targets) == 9 and all(line.endswith(" met") for line in targets), targets
    result = json.loads(bench("bench.fleet_sim", "--sizes", "50", "--grafanas", "1", "--json").stdout)
    assert {row["runners"] for row in result["byRunners"]} == {20, 40, 60, 0}


# --- The workflow does what the bench models ---------------------------------------------------------------------


def setup_steps(job: dict) -> list[str]:
    """The job's steps before its first pulumi command, by name or action."""
    names = []
    for step in steps(job):
        if "-m ops.fleet " in step.get("run", ""):
            break
        names.append(step.get("name") or step["uses"].split("@")[0])
    return names


def test_a_jobs_setup_is_the_steps_the_workflow_runs_before_pulumi():
    modelled = list(yaml.safe_load((ROOT / "bench" / "latencies.yaml").read_text())["ci"]["setup_steps"])
    jobs = load("deploy-stacks.yml")["jobs"]
    for name in ("cluster", "grafana"):
        assert ["runner", *setup_steps(jobs[name])] == modelled, name


def test_the_chunk_limits_and_the_sign_in_are_the_workflows():
    jobs = load("deploy-stacks.yml")["jobs"]
    grafana = jobs["grafana"]
    assert grafana["timeout-minutes"] == fleet.CHUNK_TIMEOUT_MINUTES
    auth = next(s for s in steps(grafana) if s.get("uses", "").startswith("pulumi/auth-actions@"))
    assert int(auth["with"]["token-expiration"]) == fleet.PULUMI_TOKEN_SECONDS
    endpoints = next(s for s in steps(grafana) if "-m ops.fleet endpoints" in s.get("run", ""))
    assert endpoints["env"]["FLEET_RELOGIN"] == "bash .ci/azure_relogin.sh"
    for variable in ("FLEET_RELOGIN_AFTER", "FLEET_PARALLEL", "FLEET_GRAFANA_LOCK"):
        assert variable not in endpoints["env"], f"{variable}: the default is what the bench models"
    assert grafana["strategy"]["max-parallel"] == 1
    assert jobs["cluster"]["timeout-minutes"] == fleet.CLUSTER_TIMEOUT_MINUTES


def test_the_groups_and_chunks_are_the_scripts(figures, lat):
    stacks = [f"s{i:02}" for i in range(50)]
    for runners in (20, 40, 60):
        cut = stack_matrix.with_groups([{"grafana": "rg/amg", "stacks": stacks}], runners)[0]["groups"]
        per_job = -(-50 // runners)
        assert cut == stack_matrix.cluster_groups(stacks, per_job)
    sizes = [len(c["stacks"]) for c in fleet.chunks(stacks, set())]
    modelled = [c.stacks for c in fleet_sim.ours("first", 50, 1, 40, figures, lat)["chunks"]]
    assert sizes == modelled == [25, 25]
