"""bench.deploy_sim: the deploy simulation's arithmetic checked against its own table, and shown to follow the
table and the plan graph rather than fixed numbers. No wall-clock timing is asserted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from bench import deploy_sim
from offline.program import orders, run
from tests.support import EXTENSION, RELEASE, ROOT
from tests.support.benchmarks import bench


@pytest.fixture(scope="module")
def dev():
    return run("dev")


@pytest.fixture(scope="module")
def result(dev):
    return deploy_sim.simulate(dev)


def test_deploy_sim_prints_the_comparison_targets_path_slack_and_rates():
    done = bench("bench.deploy_sim")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for text in ("this stack (Pulumi, polling waits)", "seed procedure, step by step", "Terraform port",
                 "physical limit", "Unavoidable chain (physical limit):", "Critical path (this stack):",
                 "Slack per wait", "ARM reads (50 stacks"):
        assert text in done.stdout, text
    assert any(line.strip().startswith("ratios: seed/ours = ") and ", terraform/ours = " in line
               and ", ours/physical = " in line for line in lines)
    assert any(line.endswith("within one poll interval per wait") for line in lines)
    assert "targets: seed/ours >= 1.3 met, terraform/ours >= 1.6 met, ours/physical <= 1.05 met" in done.stdout


def test_poll_schedule_follows_the_scripts():
    assert deploy_sim.poll_defaults() == (3, 6)  # steps/lib.sh
    # checks start at 0, 3, 9, 15 (each 1 s): an event at 10 s is seen by the check at 15 s, done at 16 s
    wait = deploy_sim.poll("x", 0, 10, 1, deploy_sim.delays(3, 6))
    assert (wait.checks, wait.noticed, wait.interval) == ([0, 3, 9, 15], 16, 6)
    assert deploy_sim.poll("x", 100, 50, 1, deploy_sim.delays(3, 6)).noticed == 101  # already there: one check
    # a check longer than the delay: the next starts when it ends
    assert deploy_sim.poll("x", 0, 9, 4, deploy_sim.delays(3, 6)).checks == [0, 4, 10]
    # work after the n-th check (the refresh's re-post) delays the next slot only when it does not fit
    assert deploy_sim.poll("x", 0, 20, 1, deploy_sim.delays(3, 6),
                           extra=lambda n: 5 if n == 2 else 0).checks == [0, 3, 9, 15, 21]
    assert deploy_sim.poll("x", 0, 20, 4, deploy_sim.delays(3, 6),
                           extra=lambda n: 5 if n == 2 else 0).checks == [0, 4, 13, 19, 25]


def test_every_wait_notices_its_event_within_one_interval_and_ten_seconds(result):
    check = result["pollSchedule"]["check"]
    assert result["waits"] and result["withinTarget"] is True
    for wait in result["waits"]:
        assert 0 <= wait["slack"] <= wait["interval"] + check <= deploy_sim.NOTICE_BOUND, wait
    # the bound holds for any alignment of event and checks, not only this table's
    for event in range(0, 60):
        wait = deploy_sim.poll("x", 0, event, check, deploy_sim.delays(*deploy_sim.poll_defaults()))
        assert wait.slack <= deploy_sim.NOTICE_BOUND


def test_targets_met_on_the_committed_table(result):
    assert all(t["met"] for t in result["targets"].values()), result["ratios"]
    assert result["ratios"]["seed/ours"] >= 1.3 and result["ratios"]["terraform/ours"] >= 1.6
    assert result["ratios"]["ours/physical"] <= 1.05
    assert result["physical"] <= result["ours"] <= result["seed"] and result["ours"] <= result["terraform"]


def test_physical_limit_is_the_chain_from_the_table(dev, result):
    table = deploy_sim.Table()
    e = table.events
    expected = (table.resource(RELEASE) + e["load_balancer_frontend"] + e["pls_after_load_balancer"]
                + table.resource(deploy_sim.MPE) + e["connection_after_mpe"] + e["approval_put"] + e["ip_after_refresh"]
                + 2 * e["grafana_api_call"])
    assert result["physical"] == expected
    assert [c["step"] for c in result["chain"]] == [
        "pyroscope-release", "pyroscope-private-link", "grafana-private-link-wait-for-pls", "grafana-private-link-mpe",
        "grafana-private-link-approve-connection", "grafana-private-link-refresh", "grafana-datasources-pyroscope"]


def test_critical_path_is_the_chain_after_the_namespace(dev, result):
    """The namespace, the claim the release waits for, then the chain: the private link Service after the release, the
    PLS from its load balancer."""
    names = [step["resource"] for step in result["criticalPath"]]
    assert names == ["gadget-namespace", "pyroscope-data-0", "pyroscope-release", "pyroscope-private-link",
                     "grafana-private-link-wait-for-pls", "grafana-private-link-mpe",
                     "grafana-private-link-approve-connection", "grafana-private-link-refresh",
                     "grafana-datasources-pyroscope"]
    assert "inspektor-gadget-extension" not in names and "gpu-dashboard-upload" not in names
    assert result["waitsOnPath"] == 3
    table = deploy_sim.Table()
    steps = {step["resource"]: step for step in result["criticalPath"]}
    assert steps["pyroscope-data-0"]["finish"] - steps["pyroscope-data-0"]["start"] == table.resource(deploy_sim.CLAIM)
    service = steps["pyroscope-private-link"]
    assert service["start"] == steps["pyroscope-release"]["finish"]
    assert service["finish"] - service["start"] == max(table.events["load_balancer_frontend"],
                                                       table.resource(deploy_sim.SERVICE))
    # The Terraform port's own graph keeps the published order: the release after the extension, and the PLS from the
    # chart's Service (no private link Service, no claims of the stack's own).
    assert [s["resource"] for s in result["terraformPath"]][:3] == ["inspektor-gadget-extension", "pyroscope-release",
                                                                    "grafana-private-link-wait-for-pls"]
    terraform = {r.urn for r in dev.resources} & set(deploy_sim.predecessors(dev, "terraform"))
    assert not {r.urn for r in dev.resources if r.type in (deploy_sim.SERVICE, deploy_sim.CLAIM)} & terraform
    assert abs(sum(s["seconds"] for s in result["seedSteps"]) - result["seed"]) < 1e-9


def test_the_physical_limit_does_not_count_the_extension(dev):
    """Put the release back behind the extension (the graph of an earlier version): the physical limit is the same
    chain, while this stack's time grows by the extension's rollout."""
    extension = dev.one(EXTENSION)
    resources = [dataclasses.replace(r, dependencies=sorted(set(r.dependencies) | {extension.urn}))
                 if r.type == RELEASE else r
                 for r in dev.resources]
    create, destroy = orders(resources)
    behind = dataclasses.replace(dev, resources=resources, create_order=create, destroy_order=destroy)
    now, before = deploy_sim.simulate(dev), deploy_sim.simulate(behind)
    assert before["physical"] == now["physical"]
    assert before["ours"] - now["ours"] >= deploy_sim.Table().resource(EXTENSION) - deploy_sim.Table().resource(
        "kubernetes:core/v1:Namespace") - 10
    assert [s["resource"] for s in before["criticalPath"]][:4] == ["gadget-namespace", "inspektor-gadget-extension",
                                                                   "pyroscope-release", "pyroscope-private-link"]


def test_results_follow_the_table(dev, result, tmp_path):
    """Nothing is fixed in the bench: a slower PLS moves this stack, the Terraform port (its sleep no longer
    covers it) and the physical limit by as much, and the seed's polling finds it later."""
    data = yaml.safe_load(deploy_sim.TABLE.read_text())
    data["events"]["pls_after_load_balancer"]["seconds"] += 300  # past the port's 180 s sleep
    path = Path(tmp_path) / "latencies.yaml"
    path.write_text(yaml.safe_dump(data))
    slower = deploy_sim.simulate(dev, deploy_sim.Table(path))
    assert slower["physical"] == result["physical"] + 300
    assert 290 <= slower["ours"] - result["ours"] <= 310
    assert slower["terraform"] > result["terraform"] and slower["seed"] > result["seed"]


def test_request_rate_of_fifty_stacks_is_under_arms_read_limits(result):
    rates = result["requests"]
    assert rates["fleet"] == 50 and rates["readsPerStack"] > 0
    assert rates["fleetPeakReadsPerSecond"] < rates["refillPerSecond"] == 25
    assert rates["throttled"] is False and rates["lowestTokens"] >= 0
    assert rates["fleetNetworkReadsPer5Min"] < rates["networkLimitPer5Min"] == 10_000


def test_created_workspaces_count_in_the_physical_limit(tmp_path):
    """The MPE starts after the longer of the Grafana the stack creates and the cluster side (release, the private link
    Service's load balancer, the PLS). On the committed table Grafana (300 s) is the shorter; a Grafana slower than
    the cluster side moves the limit by as much."""
    plan = run("dev", {"createGrafana": "true"})
    with_grafana = deploy_sim.simulate(plan)
    table = deploy_sim.Table()
    e = table.events
    assert [w["step"] for w in with_grafana["workspaces"]] == ["managed-grafana-workspace"]
    cluster = table.resource(RELEASE) + e["load_balancer_frontend"] + e["pls_after_load_balancer"]
    after = table.resource(deploy_sim.MPE) + e["approval_put"] + e["ip_after_refresh"] + 2 * e["grafana_api_call"]
    assert with_grafana["physical"] == max(table.resource("azure-native:dashboard:Grafana"), cluster) + after
    assert with_grafana["ratios"]["ours/physical"] <= 1.05
    data = yaml.safe_load(deploy_sim.TABLE.read_text())
    data["resources"]["azure-native:dashboard:Grafana"]["seconds"] = cluster + 100
    path = Path(tmp_path) / "latencies.yaml"
    path.write_text(yaml.safe_dump(data))
    slow = deploy_sim.simulate(plan, deploy_sim.Table(path))
    assert slow["physical"] == cluster + 100 + after
    assert slow["ratios"]["ours/physical"] <= 1.05


def test_the_readme_quotes_the_simulation(result):
    """docs/performance.md quotes the ratios line of this simulation (deterministic: the same table and plan)."""
    assert "](docs/performance.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    section = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").split("# Performance", 1)[1]
    line = "ratios: " + ", ".join(f"{k} = {v:.2f}" for k, v in result["ratios"].items())
    assert f"`{line}`" in section
    for variant, settings in (("With `createGrafana`: ", {"createGrafana": "true"}),):
        ratios = deploy_sim.simulate(run("dev", settings))["ratios"]
        expected = ", ".join(f"{k} = {v:.2f}" for k, v in ratios.items())
        assert variant + expected in " ".join(section.split()), expected
