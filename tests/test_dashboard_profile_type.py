"""dashboardProfileType: the Pyroscope profile type ID the GPU dashboard's flame graph asks for. The pinned dashboard
(inspektor-gadget/grafana-dashboards 494542d8, AdvancedGPUObservability.json) asks for ``process_cpu:malloc:bytes::``;
from Inspektor Gadget v0.54.0 on, Pyroscope v1.15.0 holds the GPU memory as
``process_cpu:malloc:bytes:process_cuda:bytes`` (docs/offline.md G12), and the panel stays empty. The dashboard step sets
the configured ID in the dashboard's Pyroscope GPU-memory queries (steps/grafana_dashboard.py ``with_profile_type``)
inside ``prepare``, so what it uploads, its content hash and ``ops.verify --drift`` agree. SIMULATED: Grafana (the
stand-in az and its world), the engine; the step script and the program are real."""

from __future__ import annotations

import copy
import json
import sys

import pytest

from tests.support import scenarios
from tests.support import ROOT, reference
from tests.support.lifecycle import Deployment
from flamegraph import hotspots
from offline import diff as plan_diff
from offline.program import run

from steps import grafana_dashboard  # the step's own transformation

PUBLISHED = hotspots.PROFILE_TYPE
CUDA = "process_cpu:malloc:bytes:process_cuda:bytes"
#: What the dev stack hands the step (components/gpu_dashboard.py, __main__.py).
DEFAULTS = {"prom_ds": {"name": "amw-gpu-dev", "uid": "azure-monitor-prometheus"},
            "pyroscope_ds": {"name": "local-pyroscope", "uid": "local-pyroscope"}}
INPUTS = {"grafana-pyroscope-datasource": "local-pyroscope", "prometheus": "azure-monitor-prometheus"}
UPLOAD = "gpu-dashboard-upload"


def pinned() -> dict:
    return json.loads(reference("grafana-dashboards/AdvancedGPUObservability.json").read_bytes())


def asked(dashboard: dict, uids=()) -> list:
    return [query.get("profileTypeId") for query in grafana_dashboard.pyroscope_queries(dashboard, uids)]


# --- the step's transformation -------------------------------------------------------------------------------


def test_the_pinned_dashboards_one_pyroscope_query_is_its_flame_graph():
    """The pinned JSON references its datasources through variables: ``{"type": "grafana-pyroscope-datasource", "uid":
    "${pyroscope_ds}"}`` on the flame-graph panel and its query; the six Prometheus panels' queries are not Pyroscope's."""
    dashboard = pinned()
    (query,) = grafana_dashboard.pyroscope_queries(dashboard)
    flamegraph = next(panel for panel in dashboard["panels"] if panel["type"] == "flamegraph")
    assert query is flamegraph["targets"][0] and query["profileTypeId"] == PUBLISHED
    assert query["datasource"] == {"type": "grafana-pyroscope-datasource", "uid": "${pyroscope_ds}"}


def test_the_default_uploads_the_published_dashboard_unchanged():
    """The key's default is the pinned panel's own ID: prepare gives the same dashboard, byte for byte in its content
    hash, as without the key (a stack from before it), so upgrading the stack rewrites nothing in Grafana."""
    before = grafana_dashboard.prepare(pinned(), DEFAULTS, inputs=INPUTS)
    after = grafana_dashboard.prepare(pinned(), DEFAULTS, profile_type=PUBLISHED, inputs=INPUTS)
    assert after == before and asked(after) == [PUBLISHED]
    assert grafana_dashboard.content_sha256(after) == grafana_dashboard.content_sha256(before)


def test_a_configured_id_is_set_in_the_flame_graph_query_and_changes_the_content_hash():
    prepared = grafana_dashboard.prepare(pinned(), DEFAULTS, profile_type=CUDA, inputs=INPUTS)
    assert asked(prepared) == [CUDA]
    published = grafana_dashboard.prepare(pinned(), DEFAULTS, inputs=INPUTS)
    # Only the flame graph's profileTypeId differs: the panels of the published dashboard are otherwise as they were.
    changed = copy.deepcopy(published)
    next(p for p in changed["panels"] if p["type"] == "flamegraph")["targets"][0]["profileTypeId"] = CUDA
    assert prepared == changed
    assert grafana_dashboard.content_sha256(prepared) != grafana_dashboard.content_sha256(published)


#: A dashboard with every way a query can reach Pyroscope (grafana/grafana DashboardMigrator.ts @ ddb62093: a query
#: naming no datasource, or one without a uid, uses its panel's unless that is "-- Mixed --"; a collapsed row keeps its
#: panels in ``panels``), and queries that must keep their profile type.
PYRO = {"type": "grafana-pyroscope-datasource", "uid": "${pyroscope_ds}"}
VARIETY = {
    "uid": "gpu-variety", "title": "variety",
    "templating": {"list": [{"name": "prom_ds", "type": "datasource", "query": "prometheus"},
                            {"name": "pyroscope_ds", "type": "datasource", "query": "grafana-pyroscope-datasource"},
                            {"name": "other_ds", "type": "datasource", "query": "grafana-testdata-datasource"}]},
    "panels": [
        {"id": 1, "type": "row", "collapsed": True, "panels": [
            {"id": 2, "type": "flamegraph", "datasource": PYRO,
             "targets": [{"refId": "A", "datasource": PYRO, "profileTypeId": PUBLISHED, "queryType": "profile"}]}]},
        {"id": 3, "type": "flamegraph", "datasource": PYRO,  # queries inherit the panel's datasource
         "targets": [{"refId": "A", "profileTypeId": PUBLISHED},
                     {"refId": "B", "datasource": {"type": "grafana-pyroscope-datasource"}, "profileTypeId": PUBLISHED}]},
        {"id": 4, "type": "timeseries", "datasource": {"uid": "$pyroscope_ds"},  # variable forms, no type
         "targets": [{"refId": "A", "datasource": {"uid": "$pyroscope_ds"}, "profileTypeId": PUBLISHED, "queryType": "metrics"},
                     {"refId": "B", "datasource": "[[pyroscope_ds]]", "profileTypeId": PUBLISHED},
                     {"refId": "C", "datasource": {"uid": "${pyroscope_ds:text}"}, "profileTypeId": PUBLISHED}]},
        {"id": 5, "type": "flamegraph", "datasource": {"uid": "local-pyroscope"},  # the stack's uid, hard-coded
         "targets": [{"refId": "A", "datasource": {"uid": "local-pyroscope"}, "profileTypeId": PUBLISHED}]},
        {"id": 6, "type": "timeseries", "datasource": {"type": "datasource", "uid": "-- Mixed --"},
         "targets": [{"refId": "A", "datasource": PYRO, "profileTypeId": PUBLISHED},
                     {"refId": "B", "profileTypeId": PUBLISHED},  # Mixed: no datasource of its own, not the panel's
                     {"refId": "C", "datasource": {"type": "grafana-testdata-datasource", "uid": "${other_ds}"},
                      "profileTypeId": PUBLISHED}]},
        {"id": 7, "type": "flamegraph", "datasource": PYRO,  # Pyroscope, but not GPU memory: kept
         "targets": [{"refId": "A", "profileTypeId": "memory:alloc_space:bytes:space:bytes"},
                     {"refId": "B", "profileTypeId": "process_cpu:cpu:nanoseconds:cpu:nanoseconds"},
                     {"refId": "C"}]},
        {"id": 8, "type": "timeseries", "datasource": {"type": "prometheus", "uid": "${prom_ds}"},
         "targets": [{"refId": "A", "expr": "sum(mem_alloc_bytes_total)"}]},
    ],
}


def test_every_pyroscope_gpu_memory_query_is_set_in_rows_too_and_nothing_else():
    dashboard = grafana_dashboard.prepare(copy.deepcopy(VARIETY), DEFAULTS, profile_type=CUDA, inputs=INPUTS)
    by_panel = {}
    stack = [*dashboard["panels"]]
    while stack:
        panel = stack.pop(0)
        by_panel[panel["id"]] = [t.get("profileTypeId") for t in panel.get("targets") or []]
        stack += panel.get("panels") or []
    assert by_panel == {
        1: [], 2: [CUDA], 3: [CUDA, CUDA], 4: [CUDA, CUDA, CUDA], 5: [CUDA],
        6: [CUDA, PUBLISHED, PUBLISHED],  # only the query naming Pyroscope itself
        7: ["memory:alloc_space:bytes:space:bytes", "process_cpu:cpu:nanoseconds:cpu:nanoseconds", None],
        8: [None]}
    # A hard-coded uid counts only as the stack's own Pyroscope datasource (a shared dashboard names none).
    shared = grafana_dashboard.prepare(copy.deepcopy(VARIETY), {}, profile_type=CUDA)
    assert next(p for p in shared["panels"] if p["id"] == 5)["targets"][0]["profileTypeId"] == PUBLISHED


def test_an_imported_export_for_sharing_keeps_its_non_gpu_flame_graph():
    """tests/data/gpu-dashboard-shared-export.json asks Pyroscope for a Go heap profile
    (``memory:alloc_space:bytes:space:bytes``) through ``${DS_PYROSCOPE}``: imported, it is the stack's datasource, and
    its profile type is not GPU memory, so the key leaves it as exported."""
    export = json.loads((ROOT / scenarios.SHARED_EXPORT).read_bytes())
    imported = grafana_dashboard.import_inputs(export, INPUTS, scenarios.SHARED_EXPORT)
    prepared = grafana_dashboard.prepare(imported, DEFAULTS, profile_type=CUDA, inputs=INPUTS)
    assert asked(prepared) == ["memory:alloc_space:bytes:space:bytes"]


def test_the_step_checks_the_sha256_before_it_sets_the_profile_type(tmp_path):
    """The key changes what is uploaded, never what is trusted: a source whose sha256 is not the pinned one is refused,
    nothing uploaded."""
    scenario = scenarios.Scenario(
        "profile-type-hash-mismatch", "grafana_dashboard.py",
        {**scenarios.DASH_ENV, "DASHBOARD_SHA256": "0" * 64, "DASHBOARD_PROFILE_TYPE": CUDA},
        [{"match": scenarios.DOWNLOAD, "responses": [scenarios.FETCH]},
         {"match": scenarios.DASH_POST, "responses": [{"json": {}}]}], args=["apply"])
    result = scenarios.run(scenario, tmp_path)
    assert result.returncode == 1 and result.count(1) == 0
    assert f"has sha256 {scenarios.DASHBOARD_SHA256}, expected {'0' * 64}; nothing uploaded" in result.stderr


def test_upgrading_a_stack_to_the_key_rewrites_nothing_in_grafana(tmp_path):
    """The first `pulumi up` after upgrading to this code updates the dashboard step (a new environment value, the
    default; tests/offline/test_diff.py ``test_a_single_binary_stack_upgrading_to_this_code_sees_no_change``): it runs
    again against the dashboard the older step uploaded and, the default being the published ID, writes nothing."""
    scenario = scenarios.Scenario(
        "profile-type-upgrade", "grafana_dashboard.py",
        {**scenarios.DASH_ENV, **scenarios.DASH_AS_UPDATE, "DASHBOARD_PROFILE_TYPE": PUBLISHED},
        [{"match": scenarios.DOWNLOAD, "responses": [scenarios.FETCH]},
         {"match": scenarios.DASH_GET, "responses": [scenarios.uploaded_dashboard(scenarios.MINE)]},
         {"match": scenarios.DASH_POST, "responses": [{"json": {}}]}], args=["apply"])
    result = scenarios.run(scenario, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.count(2) == 0 and "up to date; nothing written" in result.stderr
    assert "dashboardProfileType" not in result.stderr  # nothing to set: the source already asks for it


def test_the_step_uploads_the_configured_id_and_says_so(tmp_path):
    scenario = scenarios.Scenario(
        "profile-type-upload", "grafana_dashboard.py", {**scenarios.DASH_ENV, "DASHBOARD_PROFILE_TYPE": CUDA},
        [{"match": scenarios.DOWNLOAD, "responses": [scenarios.FETCH]},
         {"match": scenarios.DASH_GET, "responses": [scenarios.NOT_FOUND_DASH]},
         {"match": scenarios.DASH_POST, "responses": [{"json": {"status": "success", "uid": "AdvancedGPUObservability"}}]}],
        args=["apply"])
    result = scenarios.run(scenario, tmp_path)
    assert result.returncode == 0, result.stderr
    (post,) = [call["body"] for call in result.calls if "post" in call["argv"]]
    assert asked(post["dashboard"]) == [CUDA]
    assert (f"dashboard AdvancedGPUObservability: profile type of its Pyroscope GPU-memory queries (1) set to {CUDA} "
            f"(dashboardProfileType), was {PUBLISHED}") in result.stderr


# --- the program: engine-level inputs and the output ---------------------------------------------------------------


def upload_step(plan):
    return next(r for r in plan.resources if r.name == UPLOAD)


def test_the_step_gets_the_key_and_the_definition_exports_it(plan):
    default = plan()
    assert upload_step(default).inputs["environment"]["DASHBOARD_PROFILE_TYPE"] == PUBLISHED
    assert default.outputs["dashboardDefinition"]["profileType"] == PUBLISHED
    configured = plan(dashboardProfileType=CUDA)
    assert upload_step(configured).inputs["environment"]["DASHBOARD_PROFILE_TYPE"] == CUDA
    assert configured.outputs["dashboardDefinition"]["profileType"] == CUDA
    # An environment value, not a trigger: a change updates the step in place (it re-runs and overwrites), the
    # dashboard keeps its identity.
    assert upload_step(configured).inputs["triggers"] == upload_step(default).inputs["triggers"]


def test_a_shared_dashboard_gets_the_key_too(plan):
    """With multiCluster the dashboard carries no cluster's datasources, but the profile type is the gadget's, not a
    cluster's: it is set (every stack sharing the dashboard must set the same)."""
    shared = plan(multiCluster="true", dashboardProfileType=CUDA)
    assert upload_step(shared).inputs["environment"]["DASHBOARD_PROFILE_TYPE"] == CUDA
    definition = shared.outputs["dashboardDefinition"]
    assert definition["profileType"] == CUDA and definition["datasources"] == {} and definition["inputs"] == {}


# --- end to end: the stand-in Grafana's stored dashboard -----------------------------------------------------------


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """The dev stack deployed with the defaults, then `pulumi up` with dashboardProfileType set: the diff the offline
    preview predicts, played against the stand-in world."""
    url = scenarios.DASHBOARD_URL
    base = run("dev").to_json()
    deployment = Deployment(tmp_path_factory.mktemp("profile-type"), {url: str(reference("grafana-dashboards/AdvancedGPUObservability.json"))})
    deployment.deploy(base)
    before = copy.deepcopy(stored(deployment, base))
    diff, head = plan_diff.preview(base, lambda pending: run("dev", {"dashboardProfileType": CUDA}, pending=pending), [])
    deployment.actions.clear()
    deployment.apply(diff, head.to_json())
    return {"before": before, "after": stored(deployment, base), "diff": diff, "actions": list(deployment.actions)}


def stored(deployment: Deployment, plan: dict) -> dict:
    env = next(r for r in plan["resources"] if r["urn"].endswith(f"::{UPLOAD}"))["inputs"]["environment"]
    host = env["GRAFANA_ENDPOINT"].split("//", 1)[1]
    return deployment.world()["grafana"][host]["dashboards"][env["DASHBOARD_UID"]]


def test_the_default_deploy_stores_the_published_id(deployed):
    assert asked(deployed["before"]) == [PUBLISHED]
    expected = grafana_dashboard.prepare(pinned(), DEFAULTS, inputs=INPUTS)
    assert grafana_dashboard.content_sha256(deployed["before"]) == grafana_dashboard.content_sha256(expected)


def test_changing_the_key_updates_the_dashboard_step_and_grafana_holds_the_new_id(deployed):
    changed = [step for step in deployed["diff"].steps if step.op != "same"]
    assert [(step.name, step.op, [d["path"] for d in step.diffs]) for step in changed] == [
        (UPLOAD, "update", ["environment.DASHBOARD_PROFILE_TYPE"])]
    assert [action.split("::")[-1] for action in deployed["actions"]] == [UPLOAD]
    assert deployed["actions"][0].startswith("update ")
    assert asked(deployed["after"]) == [CUDA]
    expected = grafana_dashboard.prepare(pinned(), DEFAULTS, profile_type=CUDA, inputs=INPUTS)
    assert grafana_dashboard.content_sha256(deployed["after"]) == grafana_dashboard.content_sha256(expected)


def test_the_offline_plan_shows_the_change(tmp_path):
    """`python -m offline.plan --set dashboardProfileType=... --diff-against <base>` (docs/reviewing.md): one update, of
    the dashboard step, with the old and new ID."""
    import subprocess

    def plan(*args):
        done = subprocess.run([sys.executable, "-m", "offline.plan", "--stack", "dev", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    base = tmp_path / "base.json"
    base.write_text(plan("--json"))
    text = plan("--set", f"dashboardProfileType={CUDA}", "--diff-against", str(base))
    assert "~ 1 to update, +-0 to replace, - 0 to delete" in text
    assert f'~ environment.DASHBOARD_PROFILE_TYPE: "{PUBLISHED}" => "{CUDA}"' in text
    assert "update             gpu-dashboard-upload" in text
