"""A dashboard exported "for sharing" (``__inputs``, ``${DS_...}`` where datasource uids were) is imported as Grafana's
import does: each datasource input of a known type bound to this stack's datasource, or the step refuses in one line
naming the input. The export is tests/data/gpu-dashboard-shared-export.json (written for these tests, in the shape
Grafana 11 exports). SIMULATED: Grafana; the step script is real."""

from __future__ import annotations

import hashlib
import json
import re

from tests.support import scenarios
from tests.support import ROOT, reference
from tests.support.lifecycle import Deployment
from offline.program import run

EXPORT = ROOT / scenarios.SHARED_EXPORT


def uploaded(result) -> dict:
    (post,) = [c["body"] for c in result.calls if "post" in c["argv"]]
    return post["dashboard"]


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_the_committed_export_matches_its_digest():
    assert hashlib.sha256(EXPORT.read_bytes()).hexdigest() == scenarios.SHARED_EXPORT_SHA256
    assert json.loads(EXPORT.read_bytes())["__inputs"], "an export made for sharing"


def test_inputs_are_bound_to_the_stacks_datasources(scenario_results):
    result = scenario_results["dashboard-export-for-sharing-imported"]
    assert result.returncode == 0, result.stderr
    dashboard = uploaded(result)
    assert "__inputs" not in dashboard
    assert not [s for s in strings(dashboard) if re.search(r"\$\{(DS_|VAR_)", s)], "no input reference left"
    timeseries, flamegraph = dashboard["panels"]
    assert timeseries["datasource"] == {"type": "prometheus", "uid": "azure-monitor-prometheus"}
    assert [t["datasource"]["uid"] for t in timeseries["targets"]] == ["azure-monitor-prometheus", "__expr__"]
    assert flamegraph["datasource"] == flamegraph["targets"][0]["datasource"] == {
        "type": "grafana-pyroscope-datasource", "uid": "local-pyroscope"}
    # Dashboard variables are not inputs: ${namespace} stays for Grafana to fill in; the constant input is its value.
    assert '{namespace="${namespace}"}' in flamegraph["targets"][0]["labelSelector"]
    assert dashboard["templating"]["list"][0]["query"] == "gadget"
    assert dashboard["__requires"] and dashboard["uid"] == "gpu-shared-export"  # as Grafana's import keeps them


def test_an_input_nothing_maps_is_refused_in_one_line(tmp_path):
    export = json.loads(EXPORT.read_bytes())
    export["__inputs"].append({"name": "DS_LOKI", "label": "Loki", "type": "datasource", "pluginId": "loki"})
    source = tmp_path / "with-loki.json"
    source.write_bytes(json.dumps(export).encode())
    scenario = scenarios.Scenario(
        "export-with-loki", "grafana_dashboard.py",
        {**scenarios.EXPORT_ENV, "DASHBOARD_SOURCE": str(source), "DASHBOARD_SHA256": hashlib.sha256(source.read_bytes()).hexdigest()},
        [{"match": scenarios.DASH_POST, "responses": [{"json": {}}]}], args=["apply"])
    result = scenarios.run(scenario, tmp_path / "run")
    assert result.returncode == 1 and result.calls == []
    (line,) = [line for line in result.stderr.splitlines() if "error: " in line]
    assert line.endswith(f"error: dashboard {source} has input DS_LOKI (datasource loki) that nothing maps: this stack "
                         "maps only datasource inputs of type grafana-pyroscope-datasource, prometheus (and constants "
                         "with a value); export the dashboard without 'Export for sharing externally', or remove that "
                         "input; nothing uploaded")


def test_the_stack_passes_its_datasources_and_none_when_shared(plan):
    env = next(r for r in plan().resources if r.name == "gpu-dashboard-upload").inputs["environment"]
    assert json.loads(env["DATASOURCE_INPUTS"]) == scenarios.STACK_INPUTS
    shared = next(r for r in plan(multiCluster="true").resources if r.name == "gpu-dashboard-upload")
    assert shared.inputs["environment"]["DATASOURCE_INPUTS"] == "{}"


def test_a_deployed_export_names_the_datasources_grafana_holds(tmp_path):
    """End to end in the stand-in world: dashboardSource at the export; every datasource reference the uploaded
    dashboard makes is a datasource the stack created in that Grafana."""
    reference("grafana-dashboards/AdvancedGPUObservability.json")  # the harness's downloads need the reference copy
    plan = run("dev", {"dashboardSource": scenarios.SHARED_EXPORT, "dashboardSha256": scenarios.SHARED_EXPORT_SHA256,
                       "dashboardUid": "gpu-shared-export"}).to_json()
    deployment = Deployment(tmp_path, {})
    deployment.deploy(plan)
    (grafana,) = deployment.world()["grafana"].values()
    dashboard = grafana["dashboards"]["gpu-shared-export"]
    referenced = {(d["type"], d["uid"]) for panel in dashboard["panels"]
                  for d in [panel["datasource"], *(t["datasource"] for t in panel["targets"])] if d["type"] != "__expr__"}
    assert referenced == {(ds["type"], ds["uid"]) for ds in grafana["datasources"].values()}
