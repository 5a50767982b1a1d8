"""steps/grafana_dashboard.py, the dashboard step: a dashboard exported "for sharing" imported as Grafana imports it
(``__inputs`` bound to this stack's datasources, or one line naming the input it cannot map); the profile type ID its
Pyroscope GPU-memory queries ask for (``dashboardProfileType``, ``with_profile_type`` inside ``prepare``: what it
uploads, its content hash and ``ops.verify --drift`` agree); the step's reading of Grafana's datasource resolution
as upstream does it (docs/offline.md G13, each test citing the file and commit read); the upload command as the plan
registers it. The pinned dashboard (inspektor-gadget/grafana-dashboards 494542d8, AdvancedGPUObservability.json) asks
for ``process_cpu:malloc:bytes::``; from Inspektor Gadget v0.54.0 on, Pyroscope v1.15.0 holds the GPU memory as
``process_cpu:malloc:bytes:process_cuda:bytes`` (docs/offline.md G12). SIMULATED: Grafana (the stand-in az and its
world), the engine; the step script and the program are real."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import sys

import pytest

from offline import canned
from offline import diff as plan_diff
from offline.program import run
from stack import profile_types
from steps import grafana_dashboard
from steps.command import script_hash
from tests.support import ROOT, fake_world, reference, scenario_checks, scenarios
from tests.support.config_values import LOCAL_DASHBOARD, LOCAL_SHA256, named
from tests.support.lifecycle import Deployment
from tests.support.plans import ENDPOINT
from tests.support.scenarios import fake_az_env

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


def refused_source(tmp_path, name: str, document: dict):
    """(the source file, its one error line): the upload step run on ``document`` as a local dashboardSource with its
    digest, which must stop with exit 1 before any az call."""
    source = tmp_path / name
    source.write_text(json.dumps(document))
    scenario = scenarios.Scenario(
        name, "grafana_dashboard.py",
        {**scenarios.EXPORT_ENV, "DASHBOARD_SOURCE": str(source),
         "DASHBOARD_SHA256": hashlib.sha256(source.read_bytes()).hexdigest()},
        [{"match": scenarios.DASH_POST, "responses": [{"json": {}}]}], args=["apply"])
    result = scenarios.run(scenario, tmp_path / "run")
    assert result.returncode == 1 and result.calls == []
    (line,) = [line for line in result.stderr.splitlines() if "error: " in line]
    return source, line


def test_an_input_nothing_maps_is_refused_in_one_line(tmp_path):
    export = json.loads(EXPORT.read_bytes())
    export["__inputs"].append({"name": "DS_LOKI", "label": "Loki", "type": "datasource", "pluginId": "loki"})
    source, line = refused_source(tmp_path, "with-loki.json", export)
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
                  for d in [panel["datasource"], *(t["datasource"] for t in panel["targets"])]
                  if d["type"] != "__expr__"}
    assert referenced == {(ds["type"], ds["uid"]) for ds in grafana["datasources"].values()}


PUBLISHED = profile_types.PUBLISHED
CUDA = "process_cpu:malloc:bytes:process_cuda:bytes"
#: What the dev stack hands the step (components/gpu_dashboard.py, __main__.py).
DEFAULTS = {"prom_ds": {"name": "amw-gpu-dev", "uid": "azure-monitor-prometheus"},
            "pyroscope_ds": {"name": "local-pyroscope", "uid": "local-pyroscope"}}
INPUTS = {"grafana-pyroscope-datasource": "local-pyroscope", "prometheus": "azure-monitor-prometheus"}
UPLOAD = "gpu-dashboard-upload"
UID = "AdvancedGPUObservability"


def pinned() -> dict:
    return json.loads(reference("grafana-dashboards/AdvancedGPUObservability.json").read_bytes())


def asked(dashboard: dict, uids=()) -> list:
    return [query.get("profileTypeId") for query in grafana_dashboard.pyroscope_queries(dashboard, uids)]


def test_the_pinned_dashboards_one_pyroscope_query_is_its_flame_graph():
    """The pinned JSON references its datasources through variables: ``{"type": "grafana-pyroscope-datasource", "uid":
    "${pyroscope_ds}"}`` on the flame-graph panel and its query; the six Prometheus panels' queries are not
    Pyroscope's."""
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
                     {"refId": "B", "datasource": {"type": "grafana-pyroscope-datasource"},
                      "profileTypeId": PUBLISHED}]},
        {"id": 4, "type": "timeseries", "datasource": {"uid": "$pyroscope_ds"},  # variable forms, no type
         "targets": [{"refId": "A", "datasource": {"uid": "$pyroscope_ds"}, "profileTypeId": PUBLISHED,
                      "queryType": "metrics"},
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
         {"match": scenarios.DASH_POST,
          "responses": [{"json": {"status": "success", "uid": "AdvancedGPUObservability"}}]}],
        args=["apply"])
    result = scenarios.run(scenario, tmp_path)
    assert result.returncode == 0, result.stderr
    (post,) = [call["body"] for call in result.calls if "post" in call["argv"]]
    assert asked(post["dashboard"]) == [CUDA]
    assert (f"dashboard AdvancedGPUObservability: profile type of its Pyroscope GPU-memory queries (1) set to {CUDA} "
            f"(dashboardProfileType), was {PUBLISHED}") in result.stderr


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


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """The dev stack deployed with the defaults, then `pulumi up` with dashboardProfileType set: the diff the offline
    preview predicts, played against the stand-in world."""
    url = scenarios.DASHBOARD_URL
    base = run("dev").to_json()
    deployment = Deployment(tmp_path_factory.mktemp("profile-type"),
                            {url: str(reference("grafana-dashboards/AdvancedGPUObservability.json"))})
    deployment.deploy(base)
    before = copy.deepcopy(stored(deployment, base))
    diff, head = plan_diff.preview(base, lambda pending: run("dev", {"dashboardProfileType": CUDA}, pending=pending),
                                   [])
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


PYRO = {"type": "grafana-pyroscope-datasource", "uid": "${pyroscope_ds}"}
TEMPLATING = {"list": [{"name": "prom_ds", "type": "datasource", "query": "prometheus"},
                       {"name": "pyroscope_ds", "type": "datasource", "query": "grafana-pyroscope-datasource"}]}


def targets_of(dashboard: dict, panel_id: int) -> list:
    stack = list(dashboard["panels"])
    while stack:
        panel = stack.pop(0)
        if panel.get("id") == panel_id:
            return [t.get("profileTypeId") for t in panel.get("targets") or []]
        stack += panel.get("panels") or []
    raise KeyError(panel_id)


def test_a_query_of_a_non_mixed_pyroscope_panel_runs_on_the_panels_datasource_whatever_it_names():
    """Grafana runs every query of a panel that is not "-- Mixed --" on the panel's datasource: it resolves the panel's
    datasource once and replaces the reference of each query whose uid differs from it (expressions excepted) with the
    panel's ``ds.getRef()``.

    - grafana/grafana ``public/app/features/query/state/PanelQueryRunner.ts``
      @ 011e90db83ec0cceab2a61a30629c52ae926d079, ``run``: ``if (!query.datasource || (query.datasource.uid !==
      ds.uid && !isMixedDS && !isExpressionQuery)) { query.datasource = ds.getRef(); }`` ("When using a data source
      variable, the panel might have the incorrect datasource stored, so when running the query make sure it is done
      with the correct one").
    - grafana/scenes ``packages/scenes/src/querying/SceneQueryRunner.ts`` @ ac1dec6d (lines 776-789,
      ``prepareRequests``), the same rule for scenes dashboards (Grafana 11.3+), whose query runner gets
      ``datasource: panel.datasource`` (grafana/grafana ``createPanelDataProvider``); its test
      ``SceneQueryRunner.test.ts`` @ ac1dec6d lines 1925-1945 ("should keep non-Mixed runtime datasource for templated
      datasource variable with single selected value") expects a query naming ``{uid: '${ds}'}`` to be sent as the
      resolved ``{uid: 'test-uid'}``.

    ``pyroscope_queries`` instead takes a query's own reference whenever it has a uid (the schema-36 migration, which
    only runs for dashboards older than schema 36, is not the runtime rule). So in a flame-graph panel whose datasource
    is ``${pyroscope_ds}``, a GPU-memory query that still carries a stale reference (an author's datasource uid without
    a type, a legacy name string, a Prometheus reference left from a copied panel) is sent to Pyroscope by Grafana but
    is not rewritten: the panel keeps asking ``process_cpu:malloc:bytes::`` and stays empty."""
    dashboard = {
        "uid": "gpu-stale", "title": "stale references", "schemaVersion": 41, "templating": copy.deepcopy(TEMPLATING),
        "panels": [{"id": 1, "type": "flamegraph", "datasource": PYRO, "targets": [
            {"refId": "A", "datasource": {"uid": "P02E4190217B50628"}, "profileTypeId": PUBLISHED,
             "queryType": "profile"},
            {"refId": "B", "datasource": "Pyroscope", "profileTypeId": PUBLISHED, "queryType": "profile"},
            {"refId": "C", "datasource": {"type": "prometheus", "uid": "${prom_ds}"}, "profileTypeId": PUBLISHED,
             "queryType": "profile"}]}],
    }
    prepared = grafana_dashboard.prepare(dashboard, DEFAULTS, profile_type=CUDA, inputs=INPUTS)
    assert targets_of(prepared, 1) == [CUDA, CUDA, CUDA]


def test_a_datasource_variable_of_pyroscopes_alias_phlare_selects_pyroscope():
    """A datasource variable offers the datasources whose plugin matches its ``query`` by id *or alias*: the Pyroscope
    plugin's ``aliasIDs`` are ``["phlare"]`` (its id before Grafana 10's rename), so a variable with ``query:
    "phlare"`` (a dashboard made in the Phlare days) offers, and resolves to, Grafana Pyroscope datasources.

    - grafana/grafana ``public/app/plugins/datasource/grafana-pyroscope-datasource/plugin.json`` @ 0b596ec9:
      ``"aliasIDs": ["phlare"]``;
    - ``public/app/features/plugins/datasource_srv.ts`` @ 00b324aa ``getList``: ``filters.pluginId &&
      !matchPluginId(filters.pluginId, x.meta)``; ``packages/grafana-data/src/utils/matchPluginId.ts`` @ 01296eea:
      ``pluginMeta.aliasIDs.includes(idToMatch)``, test ``matchPluginId.test.ts`` @ 3b764a1c "should match alias IDs";
    - grafana/scenes ``packages/scenes/src/variables/variants/DataSourceVariable.tsx`` @ ac1dec6d line 54:
      ``getDataSourceSrv().getList({ metrics: true, variables: false, pluginId: this.state.pluginId })``.

    ``pyroscope_queries`` counts a variable as Pyroscope's only when its ``query`` is exactly
    ``grafana-pyroscope-datasource`` (and a reference's ``type`` only when it is that id), so this flame graph keeps the
    published ID."""
    dashboard = {
        "uid": "gpu-phlare", "title": "phlare variable", "schemaVersion": 41,
        "templating": {"list": [{"name": "profiles", "type": "datasource", "query": "phlare"}]},
        "panels": [{"id": 1, "type": "flamegraph", "datasource": {"type": "phlare", "uid": "${profiles}"},
                    "targets": [{"refId": "A", "datasource": {"type": "phlare", "uid": "${profiles}"},
                                 "profileTypeId": PUBLISHED, "queryType": "profile"}]}],
    }
    prepared = grafana_dashboard.prepare(dashboard, {}, profile_type=CUDA)
    assert targets_of(prepared, 1) == [CUDA]


def test_a_library_panels_inline_queries_are_not_what_grafana_runs():
    """A dashboard panel that is a library panel (``libraryPanel: {uid, name}``) runs the queries of the library
    element's stored model, loaded from the library-elements API, not any ``targets`` inlined in the dashboard JSON:
    grafana/grafana ``public/app/features/dashboard-scene/scene/LibraryPanelBehavior.tsx`` @ 0887ac78
    (``loadLibraryPanelFromPanelModel``: ``getLibraryPanel(this.state.uid, true)``; ``setPanelFromLibPanel``: ``$data:
    createPanelDataProvider(new PanelModel(libPanel.model))``). The step uploads with ``POST /api/dashboards/db``, which
    does not write library elements.

    ``pyroscope_queries`` counts (and ``with_profile_type`` rewrites) the inlined copy, so the step logs "profile type
    of its Pyroscope GPU-memory queries (1) set to ..." and ``ops.verify`` checks the configured ID, while the panel
    Grafana renders still asks the library element's ``process_cpu:malloc:bytes::``. The step should not count what it
    cannot change."""
    dashboard = {
        "uid": "gpu-library", "title": "library panel", "schemaVersion": 41, "templating": copy.deepcopy(TEMPLATING),
        "panels": [{"id": 1, "type": "flamegraph", "title": "GPU Memory Profiles", "datasource": PYRO,
                    "libraryPanel": {"uid": "gpu-memory-flamegraph", "name": "GPU Memory Profiles"},
                    "targets": [{"refId": "A", "datasource": PYRO, "profileTypeId": PUBLISHED,
                                 "queryType": "profile"}]}],
    }
    assert grafana_dashboard.pyroscope_queries(dashboard, {"local-pyroscope"}) == []


def _multi_rules(outputs: dict, stored_dashboard: dict, held: list) -> list:
    from tests.support.verify_runs import prometheus

    mpe = outputs["managedPrivateEndpointId"].rsplit("/", 1)[1]
    return [
        {"match": ["account", "show"], "responses": [{"json": {"id": "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"}}]},
        {"match": ["rest", "--method", "post", "/api/ds/query"], "responses": [prometheus()]},
        {"match": ["rest", "--method", "get", "/extensions/inspektor-gadget?api-version=2023-05-01"], "responses": [
            {"json": {"id": outputs["extensionId"], "properties": {"provisioningState": "Succeeded",
                                                                   "extensionType": "microsoft.inspektorgadget"}}}]},
        {"match": ["rest", "--method", "get", f"/managedPrivateEndpoints/{mpe}?api-version=2024-10-01"], "responses": [
            {"json": {"properties": {"connectionState": {"status": "Approved"},
                                     "privateLinkServicePrivateIP": "10.0.4.36"}}}]},
        {"match": ["rest", "--method", "get", f"/api/datasources/uid/{outputs['pyroscopeDatasourceUid']}/health"],
         "responses": [{"json": {"status": "OK", "message": "Data source is working"}}]},
        {"match": ["rest", "--method", "get", f"/api/datasources/uid/{outputs['prometheusDatasourceUid']}/health"],
         "responses": [{"json": {"status": "OK", "message": "Data source is working"}}]},
        {"match": ["rest", "--method", "get", "/api/dashboards/uid/AdvancedGPUObservability"],
         "responses": [{"json": {"dashboard": stored_dashboard}}]},
        {"match": ["rest", "--method", "get", "/resources/profileTypes"],
         "responses": [{"json": [{"id": i, "label": "process_cpu - malloc"} for i in held]}]},
    ]


def test_verify_of_a_multicluster_stack_fails_while_the_shared_dashboard_asks_a_siblings_id(tmp_path):
    """multiCluster: several stacks upload one dashboard, each with its own dashboardProfileType; the last to run wins.
    The ID follows each cluster's Inspektor Gadget version (docs/offline.md G12), which the extension's release train
    upgrades per cluster, so two clusters can need different IDs. Here cluster A's stack set
    ``process_cpu:malloc:bytes:process_cuda:bytes`` and uploaded; this stack (cluster B, gadget before v0.54) keeps the
    default, and its Pyroscope holds ``process_cpu:malloc:bytes::``. The shared flame graph Grafana holds asks A's ID,
    so it is empty for cluster B (grafana/pyroscope v1.15.0 ``pkg/model/profile.go`` ``SelectorFromProfileType``: a
    query selects the exact five-part ID, so A's ID selects nothing of B's): ``python -m ops.verify`` (check 5,
    "Pyroscope holds the GPU-memory profile type the dashboard asks for") compares with the ID the dashboard it has
    just read in check 4 asks for, not only with the stack's own ``dashboardDefinition.profileType``, fails, and says
    what to do."""
    outputs = run("dev", {"multiCluster": "true"}).outputs
    assert outputs["dashboardDefinition"]["profileType"] == PUBLISHED
    uploaded_by_sibling = grafana_dashboard.prepare(pinned(), {}, profile_type=CUDA)
    stored = {**uploaded_by_sibling, "id": 42, "version": 3}
    env = fake_az_env(tmp_path, _multi_rules(outputs, stored, [PUBLISHED]))
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    done = subprocess.run([sys.executable, "-m", "ops.verify", "--stack", "dev", "--outputs-file", str(path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "✅ dashboard AdvancedGPUObservability" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1, done.stdout
    assert "❌ Pyroscope profile types" in done.stdout
    assert ("the dashboard asks process_cpu:malloc:bytes:process_cuda:bytes (set by another stack sharing it: this one "
            "sets process_cpu:malloc:bytes::)") in done.stdout
    assert "pin the same extensionVersion on the clusters" in done.stdout
    assert "`pulumi up --replace <URN of gpu-dashboard-upload>`" in done.stdout  # the step re-runs only when replaced


def test_dashboard_step(plan):
    upload = named(plan(), "gpu-dashboard-upload")
    assert upload.inputs["create"] == "python3 -m steps.grafana_dashboard apply"
    assert upload.inputs["delete"] == "python3 -m steps.grafana_dashboard delete"
    assert upload.inputs["environment"] == {
        "API_VERSION": "2024-10-01",
        # The published dashboard's flame-graph profile type (dashboardProfileType's default): uploaded unchanged.
        "DASHBOARD_PROFILE_TYPE": "process_cpu:malloc:bytes::",
        "DASHBOARD_SHA256": "9c87339704d1c8b9d5897e82acd366cea751cf0030850319feb06c05ac3b1ea4",
        "DASHBOARD_SOURCE": "https://raw.githubusercontent.com/inspektor-gadget/grafana-dashboards/494542d8a0439fe4b1a60577e70677cec5c96070/dashboards/gpu-observability/AdvancedGPUObservability.json",
        "DASHBOARD_UID": "AdvancedGPUObservability",
        "DATASOURCES": ('{"prom_ds":{"name":"amw-gpu-dev","uid":"azure-monitor-prometheus"},'
                        '"pyroscope_ds":{"name":"local-pyroscope","uid":"local-pyroscope"}}'),
        # What an export made "for sharing" (__inputs) is imported with: plugin id -> this stack's datasource uid.
        "DATASOURCE_INPUTS": ('{"grafana-pyroscope-datasource":"local-pyroscope",'
                              '"prometheus":"azure-monitor-prometheus"}'),
        "GRAFANA_ENDPOINT": ENDPOINT,
        "GRAFANA_ID": canned.grafana_id("rg-observability-dev", "amg-gpu-dev"),  # checked before a delete
        "RETRY_FORBIDDEN": "false",
        "SCRIPT_SHA256": script_hash("grafana_dashboard.py"),
        "TIMEOUT_SECONDS": "300",
    }
    assert upload.inputs["triggers"] == [ENDPOINT, "AdvancedGPUObservability"]
    # Create-first: a changed dashboardUid that the JSON does not carry fails before the old one is deleted; the old
    # step's delete then leaves the dashboard the new step stamped (its owner token arrives through stdout).
    assert upload.options["deleteBeforeReplace"] is False
    assert upload.inputs["addPreviousOutputInEnv"] is True


def test_dashboard_from_a_local_file_with_its_own_hash(plan):
    env = named(plan(dashboardSource=LOCAL_DASHBOARD, dashboardSha256=LOCAL_SHA256.upper()),
                "gpu-dashboard-upload").inputs["environment"]
    assert env["DASHBOARD_SOURCE"] == LOCAL_DASHBOARD and env["DASHBOARD_SHA256"] == LOCAL_SHA256


@pytest.mark.parametrize("scenario", scenario_checks.of("grafana_dashboard.py"), ids=lambda s: s.name)
def test_scenario(scenario, scenario_results):
    """Each scenario of steps/grafana_dashboard.py under the stand-in az."""
    scenario_checks.check(scenario, scenario_results[scenario.name])


@pytest.mark.parametrize("version,schema", [("12.1.8", "v2alpha1"), ("12.4.4", "v2beta1"), ("13.0.2", "v2")])
def test_a_dashboard_saved_in_the_v2_schema_is_drift_the_step_overwrites_and_destroy_deletes(tmp_path, version,
                                                                                              schema):
    """esnet/gdg#467, grafana/grafana PR #120842: once the dashboard is saved from Grafana 12's editor with dynamic
    dashboards it is stored in the v2 schema, and ``GET /api/dashboards/uid/<uid>`` answers 406 "dashboard api
    version not supported, use /apis/..." (13 converts it and says ``meta.apiVersion``). The step read first and exited
    1, so ``pulumi destroy`` was blocked and ``ops.verify --drift`` exited 2. Now: the drift check reports it, the
    step's apply writes the pinned dashboard back, and its delete deletes it, on each Grafana line."""
    url = scenarios.DASHBOARD_URL
    plan = run("dev").to_json()
    deployment = Deployment(tmp_path / "d", {url: str(reference("grafana-dashboards/AdvancedGPUObservability.json"))})
    host = ENDPOINT.split("//", 1)[1]
    world = deployment.world()
    world["grafana"][host] = {"datasources": {}, "dashboards": {}, "next_id": 1, "version": version,
                              "plugins": [fake_world.AZURE_PROMETHEUS] if version >= "13" else []}
    deployment._save(world)
    deployment.deploy(plan)
    pinned_content = grafana_dashboard.content_sha256(stored(deployment, plan))
    world = deployment.world()
    assert fake_world.edit_in_dynamic_dashboards(world, host, UID) == schema
    deployment._save(world)

    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(plan["outputs"]))
    drift = subprocess.run([sys.executable, "-m", "ops.verify", "--stack", "dev", "--outputs-file", str(outputs),
                            "--drift"], cwd=ROOT, env={**deployment.env}, capture_output=True, text=True, timeout=120)
    assert drift.returncode == 1, drift.stdout + drift.stderr
    assert f'schema: "{schema}" in Grafana, "v1" set by the stack' in drift.stdout

    upload = next(r for r in plan["resources"] if r["urn"].endswith(f"::{UPLOAD}"))
    env = {**deployment.env, **upload["inputs"]["environment"]}
    again = subprocess.run([sys.executable, "-m", "steps.grafana_dashboard", "apply"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"is stored in Grafana's {schema} schema" in again.stderr
    assert "apiVersion" not in stored(deployment, plan)
    assert grafana_dashboard.content_sha256(stored(deployment, plan)) == pinned_content

    world = deployment.world()
    fake_world.edit_in_dynamic_dashboards(world, host, UID)
    deployment._save(world)
    deployment.destroy(plan)
    assert UID not in deployment.world()["grafana"][host]["dashboards"]


def test_grafana_12s_406_is_read_where_it_names_and_13s_conversion_by_its_api_version():
    """The two answers the legacy read gives for a v2 dashboard (grafana/grafana ``pkg/api/dashboard.go``
    ``GetDashboard``): 12's 406 names the ``/apis`` URL, which is read instead; 13's 200 carries ``meta.apiVersion``.
    A classic dashboard is read as before; 404 is None."""
    endpoint = "https://g"
    where = "/apis/dashboard.grafana.app/v2beta1/namespaces/default/dashboards/u"
    message = json.dumps({"message": f"dashboard api version not supported, use {where} instead"})

    def twelve(url):
        if url.endswith("/api/dashboards/uid/u"):
            raise grafana_dashboard.AzError(["rest"], f"ERROR: Not Acceptable({message})")
        assert url == endpoint + where
        return {"spec": {"title": "t", "elements": {}}}

    found = grafana_dashboard.stored(endpoint, "u", twelve)
    assert (found.url, found.schema, found.dashboard["title"]) == (endpoint + where, "v2beta1", "t")
    thirteen = grafana_dashboard.stored(endpoint, "u", lambda _: {"dashboard": {"title": "t"},
                                                                  "meta": {"apiVersion": "v2"}})
    assert (thirteen.url, thirteen.schema) == (f"{endpoint}/api/dashboards/uid/u", "v2")
    classic = grafana_dashboard.stored(endpoint, "u", lambda _: {"dashboard": {"title": "t"}, "meta": {"version": 2}})
    assert classic.schema == "" and classic.dashboard == {"title": "t"}
    assert grafana_dashboard.stored(endpoint, "u", lambda _: None) is None


@pytest.mark.parametrize("resource", [
    {"apiVersion": "dashboard.grafana.app/v2beta1", "kind": "Dashboard", "metadata": {"name": UID},
     "spec": {"title": "t", "elements": {}, "layout": {}}},
    {"kind": "Dashboard", "metadata": {"name": UID}, "spec": {"title": "t", "panels": []}},
])
def test_a_dashboard_source_in_the_resource_form_is_refused_before_anything_is_sent(tmp_path, resource):
    """grafana/grafana-operator#2710: Grafana 13.0.1 answers ``POST /api/dashboards/db`` with a Kubernetes-style
    dashboard (Grafana 12/13's export of a v2 dashboard) with 400 "The k8s style dashboard must not include an id on the
    root element"; grafana/grafana#119689 made that message clearer. A ``dashboardSource`` in that form is refused in
    one line naming the keys, before anything is sent."""
    source, line = refused_source(tmp_path, "resource.json", resource)
    assert f"error: dashboard {source} is a Kubernetes-style resource (" in line
    assert line.endswith("point dashboardSource and dashboardSha256 at it; nothing uploaded")
