"""Review of dashboardProfileType: where the step's stand-in for Grafana's datasource resolution
(steps/grafana_dashboard.py ``pyroscope_queries``) and the tools built on it part from upstream Grafana.

Each test states what upstream does, citing the file and commit read; each failed against the code reviewed and holds
the fix (docs/offline.md G13)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from tests.support import ROOT
from tests.support.scenarios import fake_az_env
from tests.test_dashboard_profile_type import CUDA, DEFAULTS, INPUTS, PUBLISHED, grafana_dashboard, pinned
from offline.program import run

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

    - grafana/grafana ``public/app/features/query/state/PanelQueryRunner.ts`` @ 011e90db83ec0cceab2a61a30629c52ae926d079,
      ``run``: ``if (!query.datasource || (query.datasource.uid !== ds.uid && !isMixedDS && !isExpressionQuery))
      { query.datasource = ds.getRef(); }`` ("When using a data source variable, the panel might have the incorrect
      datasource stored, so when running the query make sure it is done with the correct one").
    - grafana/scenes ``packages/scenes/src/querying/SceneQueryRunner.ts`` @ ac1dec6d (lines 776-789,
      ``prepareRequests``), the same rule for scenes dashboards (Grafana 11.3+), whose query runner gets
      ``datasource: panel.datasource`` (grafana/grafana ``createPanelDataProvider``); its test
      ``SceneQueryRunner.test.ts`` @ ac1dec6d lines 1925-1945 ("should keep non-Mixed runtime datasource for templated
      datasource variable with single selected value") expects a query naming ``{uid: '${ds}'}`` to be sent as the
      resolved ``{uid: 'test-uid'}``.

    ``pyroscope_queries`` instead takes a query's own reference whenever it has a uid (the schema-36 migration, which
    only runs for dashboards older than schema 36, is not the runtime rule). So in a flame-graph panel whose datasource is
    ``${pyroscope_ds}``, a GPU-memory query that still carries a stale reference (an author's datasource uid without a
    type, a legacy name string, a Prometheus reference left from a copied panel) is sent to Pyroscope by Grafana but is
    not rewritten: the panel keeps asking ``process_cpu:malloc:bytes::`` and stays empty."""
    dashboard = {
        "uid": "gpu-stale", "title": "stale references", "schemaVersion": 41, "templating": copy.deepcopy(TEMPLATING),
        "panels": [{"id": 1, "type": "flamegraph", "datasource": PYRO, "targets": [
            {"refId": "A", "datasource": {"uid": "P02E4190217B50628"}, "profileTypeId": PUBLISHED, "queryType": "profile"},
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
                    "targets": [{"refId": "A", "datasource": PYRO, "profileTypeId": PUBLISHED, "queryType": "profile"}]}],
    }
    assert grafana_dashboard.pyroscope_queries(dashboard, {"local-pyroscope"}) == []


def _multi_rules(outputs: dict, stored_dashboard: dict, held: list) -> list:
    mpe = outputs["managedPrivateEndpointId"].rsplit("/", 1)[1]
    return [
        {"match": ["rest", "--method", "get", "/extensions/inspektor-gadget?api-version=2023-05-01"], "responses": [
            {"json": {"id": outputs["extensionId"], "properties": {"provisioningState": "Succeeded",
                                                                   "extensionType": "microsoft.inspektorgadget"}}}]},
        {"match": ["rest", "--method", "get", f"/managedPrivateEndpoints/{mpe}?api-version=2024-10-01"], "responses": [
            {"json": {"properties": {"connectionState": {"status": "Approved"}, "privateLinkServicePrivateIP": "10.0.4.36"}}}]},
        {"match": ["rest", "--method", "get", f"/api/datasources/uid/{outputs['pyroscopeDatasourceUid']}/health"],
         "responses": [{"json": {"status": "OK", "message": "Data source is working"}}]},
        {"match": ["rest", "--method", "get", f"/api/datasources/uid/{outputs['prometheusDatasourceUid']}/health"],
         "responses": [{"json": {"status": "OK", "message": "Data source is working"}}]},
        {"match": ["rest", "--method", "get", "/api/dashboards/uid/AdvancedGPUObservability"],
         "responses": [{"json": {"dashboard": stored_dashboard}}]},
        {"match": ["rest", "--method", "get", "/resources/profileTypes"],
         "responses": [{"json": [{"id": i, "label": "process_cpu - malloc"} for i in held]}]},
    ]


def test_verify_of_a_multicluster_stack_is_green_while_the_shared_dashboard_asks_a_siblings_id(tmp_path):
    """multiCluster: several stacks upload one dashboard, each with its own dashboardProfileType; the last to run wins.
    The ID follows each cluster's Inspektor Gadget version (docs/offline.md G12), which the extension's release train
    upgrades per cluster, so two clusters can need different IDs. Here cluster A's stack set
    ``process_cpu:malloc:bytes:process_cuda:bytes`` and uploaded; this stack (cluster B, gadget before v0.54) keeps the
    default, and its Pyroscope holds ``process_cpu:malloc:bytes::``. The shared flame graph Grafana holds asks A's ID, so
    it is empty for cluster B, yet ``python -m ops.verify`` (whose check 5 is documented as "Pyroscope holds the
    GPU-memory profile type the dashboard asks for") passes: it compares with the stack's own
    ``dashboardDefinition.profileType``, never with the dashboard it has just read in check 4 (grafana/pyroscope v1.15.0
    ``pkg/model/profile.go`` ``SelectorFromProfileType``: a query selects the exact five-part ID, so A's ID selects
    nothing of B's)."""
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
