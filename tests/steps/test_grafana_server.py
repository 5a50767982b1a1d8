"""The Grafana steps and ``ops.verify --drift`` against every Grafana release of the version matrix
(tests/support/fake_world.py ``GRAFANA_VERSIONS``; docs/offline.md G3, G8-G10). SIMULATED: Grafana's answers, per
version.

Azure Managed Grafana runs Grafana 11 and 12 and upgrades workspaces in place, so one stack meets several versions:
what each version does differently (a uid change refused with 400 or 500, Azure authentication gone from core
Prometheus in 13.0, Grafana 13 migrating such datasources to ``grafana-azureprometheus-datasource`` when it starts)
is modelled per version in the stand-in, and the steps must be right on each.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from offline.program import run
from tests.support import ROOT, fake_world
from tests.support.scenarios import HAND_MADE_UID

VERSIONS = fake_world.GRAFANA_VERSIONS
BEFORE_13 = tuple(v for v in VERSIONS if fake_world.release(v) < (13, 0, 0))
PLAN = run("dev")
OUTPUTS = PLAN.outputs
HOST = OUTPUTS["grafanaEndpoint"].split("//", 1)[1]
OWNER_KEY = "aksGpuObservabilityOwner"
STEPS = {"pyroscope": "grafana-datasources-pyroscope", "prometheus": "grafana-datasources-prometheus",
         "dashboard": "gpu-dashboard-upload"}
SCRIPTS = {"pyroscope": "grafana_datasource.py", "prometheus": "grafana_datasource.py",
           "dashboard": "grafana_dashboard.py"}
#: A small dashboard of the pinned one's shape: the two datasource variables the step defaults, served at SOURCE.
SOURCE = "https://dashboards.example.test/gpu.json"
DASHBOARD = {
    "uid": "AdvancedGPUObservability", "title": "Advanced GPU Observability", "schemaVersion": 39,
    "panels": [{"id": 1, "type": "timeseries", "title": "GPU memory",
                "datasource": {"type": "prometheus", "uid": "${prom_ds}"}}],
    "templating": {"list": [{"name": "prom_ds", "type": "datasource", "query": "prometheus"},
                            {"name": "pyroscope_ds", "type": "datasource", "query": "grafana-pyroscope-datasource"}]},
}
#: What the uid-change check answers in each release (tests/support/fake_world.py ``uid_change_answer``).
UID_CHANGE = {"10.4.19": "moves", "11.6.14": "moves", "11.6.15": "400", "12.2.8": "500", "12.4.4": "400",
              "13.0.1": "500", "13.0.2": "400"}


def environment(step: str) -> dict:
    return dict(next(r for r in PLAN.resources if r.name == STEPS[step]).inputs["environment"])


class World:
    """A world file (tests/support/fake_world.py) with one Grafana at ``version``, and the steps run against it with the
    environment the plan gives them (the dashboard served from SOURCE)."""

    def __init__(self, tmp_path: Path, version: str, plugins: tuple = ()) -> None:
        self.dir = tmp_path
        self.path = tmp_path / "world.json"
        self.source = tmp_path / "gpu.json"
        self.source.write_text(json.dumps(DASHBOARD))
        world = fake_world.empty()
        world["downloads"] = {SOURCE: str(self.source)}
        g = fake_world.grafana(world, HOST)
        g["version"] = version
        for plugin in plugins:
            fake_world.install_plugin(g, plugin)
        self.save(world)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        (bin_dir / "az").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests" / "support" / "fake_az.py"}" '
                                    '"$@"\n')
        (bin_dir / "az").chmod(0o755)
        self.env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
                    "FAKE_AZ_WORLD": str(self.path), "FAKE_AZ_LOG": str(tmp_path / "calls.jsonl"),
                    "POLL_INITIAL_SECONDS": "0", "POLL_MAX_SECONDS": "0"}
        self.stdout: dict[str, str] = {}

    def load(self) -> dict:
        return json.loads(self.path.read_text())

    def save(self, world: dict) -> None:
        self.path.write_text(json.dumps(world, indent=1, sort_keys=True))

    def grafana(self) -> dict:
        return self.load()["grafana"][HOST]

    def change(self, edit) -> None:
        world = self.load()
        edit(world)
        self.save(world)

    def calls(self) -> list:
        log = self.dir / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def step(self, step: str, action: str = "apply", update: bool = True, **env) -> subprocess.CompletedProcess:
        """Run a step as pulumi-command does: a create (no previous stdout) the first time, an update (previous stdout
        in PULUMI_COMMAND_STDOUT) after that unless ``update`` is false; the dashboard served from SOURCE."""
        full = {**environment(step), **self.env, **env}
        if step == "dashboard":
            full.update(DASHBOARD_SOURCE=SOURCE, DASHBOARD_SHA256=hashlib.sha256(self.source.read_bytes()).hexdigest())
        if update and step in self.stdout:
            full["PULUMI_COMMAND_STDOUT"] = self.stdout[step]
        (self.dir / "calls.jsonl").unlink(missing_ok=True)
        done = subprocess.run(["python3", "-m", f"steps.{SCRIPTS[step][:-3]}", action], cwd=ROOT, env=full,
                              capture_output=True,
                              text=True, timeout=120)
        if done.returncode == 0 and action == "apply":
            self.stdout[step] = done.stdout
        return done

    def drift(self) -> subprocess.CompletedProcess:
        definition = {**OUTPUTS["dashboardDefinition"], "source": SOURCE,
                      "sha256": hashlib.sha256(self.source.read_bytes()).hexdigest()}
        (self.dir / "outputs.json").write_text(json.dumps({**OUTPUTS, "dashboardDefinition": definition}))
        return subprocess.run([sys.executable, "-m", "ops.verify", "--stack", "dev", "--outputs-file",
                               str(self.dir / "outputs.json"), "--drift", "--json"], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=120)


def installable(version: str) -> tuple:
    """The Azure Prometheus plugin where it installs (grafanaDependency >=11.5.0), as an admin would have it."""
    return (fake_world.AZURE_PROMETHEUS,) if fake_world.release(version) >= (11, 5, 0) else ()


def errors(done: subprocess.CompletedProcess) -> list:
    return [line for line in done.stderr.splitlines() if "error: " in line]


def puts(world: World) -> list:
    return [c for c in world.calls() if c["argv"][:3] == ["rest", "--method", "put"]]


def by_state(done: subprocess.CompletedProcess) -> dict:
    return {(o["kind"], o["uid"]): o for o in json.loads(done.stdout)["objects"]}


# --- the stand-in itself -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_the_stand_in_answers_a_uid_change_as_that_grafana_does(version):
    """PUT /api/datasources/uid/{uid} with another uid in the body: moved in place before grafana/grafana PR 107486,
    500 after it, 400 from the release that carries commit e99df481 (TestUpdateDataSourceByUID_UIDMismatch)."""
    world = fake_world.empty()
    g = fake_world.grafana(world, HOST)
    g["version"] = version
    g["datasources"]["old"] = {"uid": "old", "name": "n", "type": "loki", "id": 5, "version": 1, "jsonData": {}}
    answer = fake_world._datasources("put", "/api/datasources/uid/old", {"uid": "new", "name": "n", "type": "loki"}, g)
    expected = UID_CHANGE[version]
    assert expected == fake_world.uid_change_answer(version)
    if expected == "moves":
        assert answer["json"]["message"] == "Datasource updated" and list(g["datasources"]) == ["new"]
        assert g["datasources"]["new"]["id"] == 5
    else:
        reason = {"400": "Bad Request", "500": "Internal Server Error"}[expected]
        assert answer["exit"] == 1 and answer["stderr"].startswith(f"ERROR: {reason}(")
        assert list(g["datasources"]) == ["old"]


def test_grafana_13_migrates_azure_prometheus_datasources_when_it_starts():
    """TestGetPrometheusDataSources_Azure_ReturnsOnlyAzurePrometheus and
    TestApplyMigration_PluginNotInstalled_InstallSucceeds (grafana/grafana pkg/services/promtypemigration): only type
    prometheus with azureCredentials set is migrated, the plugin is installed first, the marker added; nothing before
    13.0 unless the toggle is on."""
    world = fake_world.empty()
    g = fake_world.grafana(world, HOST)
    g["version"] = "12.4.4"
    azure = {"uid": "a", "name": "a", "type": "prometheus", "id": 2, "version": 4, "url": "https://x",
             "jsonData": {"azureCredentials": {"authType": "msi"}, "httpMethod": "POST"}}
    g["datasources"] = {"a": azure, "p": {"uid": "p", "name": "p", "type": "prometheus", "id": 3, "jsonData": {}},
                        "n": {"uid": "n", "name": "n", "type": "prometheus", "id": 4,
                              "jsonData": {"azureCredentials": None}}}
    fake_world.start(world, HOST)
    assert g["datasources"]["a"]["type"] == "prometheus" and g["plugins"] == []
    fake_world.upgrade(world, HOST, "13.0.2")
    assert g["plugins"] == [fake_world.AZURE_PROMETHEUS]
    assert g["datasources"]["a"] == {**azure, "type": fake_world.AZURE_PROMETHEUS, "version": 1,
                                     "jsonData": {**azure["jsonData"], "prometheus-type-migration": True}}
    assert [g["datasources"][uid]["type"] for uid in ("p", "n")] == ["prometheus", "prometheus"]


# --- item 1: a datasource's uid is never changed ------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_datasource_made_by_hand_is_adopted_under_its_own_uid(version, tmp_path):
    """The published procedure's Prometheus datasource (uid picked by Grafana): the step sends no uid-changing PUT on
    any version (it would get 400, or a 500 that a retry only repeats), stops at once with one line naming the config
    that adopts it, and adopts it in place once that is set."""
    world = World(tmp_path, version)
    hand_made = {"access": "proxy", "jsonData": {"azureCredentials": {"authType": "msi"}, "httpMethod": "POST"},
                 "name": "amw-gpu-dev", "type": "prometheus", "uid": HAND_MADE_UID, "url": json.loads(
                     environment("prometheus")["DATASOURCE"])["url"], "id": 3, "orgId": 1, "version": 1,
                 "readOnly": False}

    def seed(w):
        w["grafana"][HOST]["datasources"][HAND_MADE_UID] = dict(hand_made)
        fake_world.start(w, HOST)  # Grafana 13 migrates it when it starts

    world.change(seed)
    before = world.grafana()["datasources"]
    started = time.monotonic()
    done = world.step("prometheus", TIMEOUT_SECONDS="30")
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - started < 15, "a permanent refusal was retried"
    (line,) = errors(done)
    assert f"a datasource named 'amw-gpu-dev' already exists under uid '{HAND_MADE_UID}'" in line
    assert f"`pulumi config set prometheusDatasourceUid {HAND_MADE_UID}`" in line
    assert puts(world) == [] and world.grafana()["datasources"] == before

    done = world.step("prometheus", DATASOURCE=json.dumps({**json.loads(environment("prometheus")["DATASOURCE"]),
                                                           "uid": HAND_MADE_UID}))
    assert done.returncode == 0, done.stderr
    (stored,) = world.grafana()["datasources"].values()
    assert stored["uid"] == HAND_MADE_UID and stored["id"] == 3  # the same Grafana object, under its own uid
    assert stored["jsonData"][OWNER_KEY] == done.stdout.split("owner=", 1)[1].strip()
    assert stored["type"] == before[HAND_MADE_UID]["type"]  # Grafana 13's migration kept


# --- item 2: the Prometheus datasource's type follows the version --------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_the_prometheus_datasource_has_the_type_its_grafana_needs(version, tmp_path):
    """Created fresh (the plugin installed where it installs): ``prometheus`` before 13.0, the plugin's type from 13.0
    on (Azure authentication left core Prometheus there), the jsonData the plugin reads; a re-run writes nothing."""
    world = World(tmp_path, version, installable(version))
    done = world.step("prometheus")
    assert done.returncode == 0, done.stderr
    stored = world.grafana()["datasources"]["azure-monitor-prometheus"]
    expected = fake_world.AZURE_PROMETHEUS if version not in BEFORE_13 else "prometheus"
    assert stored["type"] == expected
    assert stored["jsonData"]["azureCredentials"] == {"authType": "msi"} and stored["jsonData"]["httpMethod"] == "POST"
    again = world.step("prometheus")
    assert again.returncode == 0 and "nothing written" in again.stderr and puts(world) == []


def test_grafana_13_without_the_plugin_stops_with_one_line(tmp_path):
    world = World(tmp_path, "13.0.2")
    done = world.step("prometheus")
    assert done.returncode == 1
    (line,) = errors(done)
    assert "Grafana 13.0.2 has no Azure authentication in its core Prometheus datasource" in line
    assert "the plugin grafana-azureprometheus-datasource is not installed; install it" in line
    assert world.grafana()["datasources"] == {}


@pytest.mark.parametrize("version", BEFORE_13)
def test_grafanas_own_migration_is_kept_and_is_no_drift(version, tmp_path):
    """Deployed on ``version``, then Azure Managed Grafana upgrades the workspace in place to 13.0.2 and Grafana
    migrates the Prometheus datasource to the plugin. A later run of the step leaves it on the plugin (no PUT of
    ``prometheus`` back), and ``--drift`` reports the datasource in place; the dashboard uploaded before the upgrade
    selects ``prometheus`` datasources, which offer nothing now: drift, until its step runs again."""
    world = World(tmp_path, version)
    for step in ("pyroscope", "prometheus", "dashboard"):
        assert world.step(step).returncode == 0, step
    clean = world.drift()
    assert clean.returncode == 0, clean.stdout + clean.stderr

    world.change(lambda w: fake_world.upgrade(w, HOST, "13.0.2"))
    migrated = world.grafana()["datasources"]["azure-monitor-prometheus"]
    assert migrated["type"] == fake_world.AZURE_PROMETHEUS

    again = world.step("prometheus")
    assert again.returncode == 0, again.stderr
    assert puts(world) == [] and world.grafana()["datasources"]["azure-monitor-prometheus"] == migrated

    found = world.drift()
    objects = by_state(found)
    assert objects[("datasource", "azure-monitor-prometheus")]["state"] == "ok", found.stdout
    assert objects[("datasource", "local-pyroscope")]["state"] == "ok"
    dashboard = objects[("dashboard", "AdvancedGPUObservability")]
    assert dashboard["state"] == "drifted" and "gpu-dashboard-upload" in dashboard["next_step"]
    assert found.returncode == 1

    assert world.step("dashboard").returncode == 0  # what `pulumi up --replace` of the upload step runs
    assert world.drift().returncode == 0
    g = world.grafana()
    prom_ds = g["dashboards"]["AdvancedGPUObservability"]["templating"]["list"][0]
    assert fake_world.datasource_variable_options(g, prom_ds) == ["azure-monitor-prometheus"]


# --- item 3: the dashboard and the drift check on every version ----------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_the_dashboard_offers_the_stacks_datasources_and_nothing_drifts(version, tmp_path):
    """All three steps on a fresh Grafana of each version (the plugin installed where it installs): the dashboard's
    datasource variables offer exactly the stack's datasources, and ``--drift`` finds everything in place."""
    world = World(tmp_path, version, installable(version))
    for step in ("pyroscope", "prometheus", "dashboard"):
        done = world.step(step)
        assert done.returncode == 0, (step, done.stderr)
    g = world.grafana()
    variables = {v["name"]: v for v in g["dashboards"]["AdvancedGPUObservability"]["templating"]["list"]}
    assert fake_world.datasource_variable_options(g, variables["prom_ds"]) == ["azure-monitor-prometheus"]
    assert fake_world.datasource_variable_options(g, variables["pyroscope_ds"]) == ["local-pyroscope"]
    assert variables["prom_ds"]["current"]["value"] == "azure-monitor-prometheus"
    found = world.drift()
    assert found.returncode == 0, found.stdout + found.stderr
    assert {o["state"] for o in json.loads(found.stdout)["objects"]} == {"ok"}
    again = world.step("dashboard")
    assert again.returncode == 0 and "up to date; nothing written" in again.stderr


@pytest.mark.parametrize("version", [v for v in VERSIONS if v not in BEFORE_13])
def test_drift_reports_a_prometheus_type_in_grafana_13(version, tmp_path):
    """A datasource of type ``prometheus`` with Azure authentication in a Grafana 13 (set back by hand, or by an older
    version of this stack) cannot authenticate: drift, with the step's restore hint."""
    world = World(tmp_path, version, installable(version))
    for step in ("pyroscope", "prometheus", "dashboard"):
        assert world.step(step).returncode == 0, step
    world.change(lambda w: w["grafana"][HOST]["datasources"]["azure-monitor-prometheus"].update(type="prometheus"))
    found = world.drift()
    assert found.returncode == 1
    prometheus = by_state(found)[("datasource", "azure-monitor-prometheus")]
    assert prometheus["fields"] == [{"field": "type", "grafana": "prometheus", "stack": fake_world.AZURE_PROMETHEUS}]
    assert "grafana-datasources-prometheus" in prometheus["next_step"]


# --- what the scenarios of tests/support/scenarios.py sent (their command lines also go to the azure-cli parser check)


def test_the_plugin_type_is_what_grafana_13_is_sent(scenario_results):
    """On Grafana 13 (the probe's GET /api/health and GET /api/plugins answered so) the POST carries the plugin's type
    and the jsonData the plugin reads; before 13 it carries ``prometheus``."""
    for name, expected in (("prometheus-datasource-created-with-the-plugin-type-on-grafana-13",
                            fake_world.AZURE_PROMETHEUS),
                           ("prometheus-datasource-created-as-prometheus-before-13", "prometheus")):
        result = scenario_results[name]
        probes = [c["argv"][c["argv"].index("--url") + 1].rsplit("/api/", 1)[1] for c in result.calls
                  if c["argv"][:3] == ["rest", "--method", "get"] and "/api/datasources" not in " ".join(c["argv"])]
        assert probes == ["health", "plugins?type=datasource"], name
        (post,) = [c for c in result.calls if c["argv"][:3] == ["rest", "--method", "post"]]
        assert post["body"]["type"] == expected, name
        assert post["body"]["jsonData"]["azureCredentials"] == {"authType": "msi"}
        assert post["body"]["jsonData"]["httpMethod"] == "POST"


def test_the_dashboard_sent_to_grafana_13_selects_the_plugin(scenario_results):
    for name, expected in (("dashboard-on-grafana-13-selects-the-plugin-type", fake_world.AZURE_PROMETHEUS),
                           ("dashboard-first-upload", "prometheus")):
        (post,) = [c for c in scenario_results[name].calls if c["argv"][:3] == ["rest", "--method", "post"]]
        variables = {v["name"]: v for v in post["body"]["dashboard"]["templating"]["list"]}
        assert variables["prom_ds"]["query"] == expected, name
        assert variables["pyroscope_ds"]["query"] == "grafana-pyroscope-datasource"


# --- before 11.3 a dashboard's title is unique per folder (docs/offline.md G11) -----------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_the_stand_in_keeps_titles_unique_per_folder_before_11_3(version):
    """grafana/grafana ``getExistingDashboardByTitleAndFolder`` (removed by PR 90687, 11.3): a save whose title is
    another dashboard's in the same folder takes that one over with ``overwrite``, and is refused with 412 without it;
    from 11.3 on both dashboards are kept."""
    world = fake_world.empty()
    g = fake_world.grafana(world, HOST)
    g["version"] = version
    g["dashboards"]["hand-made"] = {"uid": "hand-made", "title": "Advanced GPU Observability", "id": 3, "version": 4}
    ours = {"uid": "AdvancedGPUObservability", "title": "Advanced GPU Observability", "panels": []}
    refused = fake_world._dashboards("post", "/api/dashboards/db", {"dashboard": ours}, g)
    elsewhere = fake_world._dashboards("post", "/api/dashboards/db",
                                       {"dashboard": {**ours, "uid": "x"}, "folderUid": "team"}, g)
    assert "exit" not in elsewhere  # another folder: no collision
    saved = fake_world._dashboards("post", "/api/dashboards/db", {"dashboard": ours, "overwrite": True}, g)
    if fake_world.release(version) < (11, 3, 0):
        assert refused["exit"] == 1 and refused["stderr"].startswith("ERROR: Precondition Failed(")
        assert "A dashboard with the same name in the folder already exists" in refused["stderr"]
        assert saved["json"]["uid"] == "hand-made" and saved["json"]["version"] == 5
        assert "AdvancedGPUObservability" not in g["dashboards"] and g["dashboards"]["hand-made"]["id"] == 3
        assert g["dashboards"]["hand-made"]["panels"] == []
    else:
        assert "exit" not in refused and saved["json"]["uid"] == "AdvancedGPUObservability"
        assert g["dashboards"]["hand-made"]["version"] == 4


@pytest.mark.parametrize("version", VERSIONS)
def test_the_dashboard_step_never_overwrites_a_dashboard_with_its_title(version, tmp_path):
    """A dashboard made by hand with the GPU dashboard's title in the General folder: before 11.3 the step stops with
    one line naming it (and how to go on), writing nothing; from 11.3 on it uploads beside it. That dashboard is
    kept."""
    world = World(tmp_path, version, installable(version))
    hand_made = {"uid": "hand-made-gpu", "title": DASHBOARD["title"], "id": 1, "version": 2, "panels": [], "tags": []}
    world.change(lambda w: w["grafana"][HOST]["dashboards"].update({"hand-made-gpu": hand_made}))
    done = world.step("dashboard")
    g = world.grafana()
    assert g["dashboards"]["hand-made-gpu"] == hand_made
    if fake_world.release(version) < (11, 3, 0):
        assert done.returncode == 1
        (line,) = errors(done)
        assert "(uid hand-made-gpu)" in line and "rename or delete" in line and "dashboardUid to hand-made-gpu" in line
        assert "AdvancedGPUObservability" not in g["dashboards"]
        assert not [c for c in world.calls() if c["argv"][:3] == ["rest", "--method", "post"]]
    else:
        assert done.returncode == 0, done.stderr
        assert "AdvancedGPUObservability" in g["dashboards"]
        assert not [c for c in world.calls() if "/api/search" in " ".join(c["argv"])]


def test_the_stand_in_refuses_a_save_without_overwrite_only_at_another_version():
    """G2: without ``overwrite`` a save of an existing uid is refused with 412 only when the body's version is not the
    stored one (grafana/grafana ``getExistingDashboardByIDOrUIDForUpdate``: ``dash.Version != existing.Version``)."""
    world = fake_world.empty()
    g = fake_world.grafana(world, HOST)
    g["dashboards"]["d"] = {"uid": "d", "title": "D", "id": 3, "version": 4}
    stale = fake_world._dashboards("post", "/api/dashboards/db",
                                   {"dashboard": {"uid": "d", "title": "D", "version": 3}}, g)
    unversioned = fake_world._dashboards("post", "/api/dashboards/db", {"dashboard": {"uid": "d", "title": "D"}}, g)
    for refused in (stale, unversioned):
        assert refused["exit"] == 1 and "The dashboard has been changed by someone else" in refused["stderr"]
    current = fake_world._dashboards("post", "/api/dashboards/db",
                                     {"dashboard": {"uid": "d", "title": "D", "version": 4}}, g)
    assert current["json"]["version"] == 5 and g["dashboards"]["d"]["version"] == 5


@pytest.mark.parametrize("version", VERSIONS)
def test_the_stand_in_refuses_to_change_a_read_only_datasource(version):
    """G6 in the stateful stand-in (L2): PUT and DELETE of a provisioned datasource answer 403 and change nothing."""
    world = fake_world.empty()
    g = fake_world.grafana(world, HOST)
    g["version"] = version
    provisioned = {"uid": "p", "name": "n", "type": "loki", "id": 5, "version": 1, "jsonData": {}, "readOnly": True}
    g["datasources"]["p"] = dict(provisioned)
    put = fake_world._datasources("put", "/api/datasources/uid/p", {"uid": "p", "name": "m", "type": "loki"}, g)
    delete = fake_world._datasources("delete", "/api/datasources/uid/p", None, g)
    assert put["exit"] == 1 and put["stderr"].startswith("ERROR: Forbidden(")
    assert "Cannot update read-only data source" in put["stderr"]
    assert delete["exit"] == 1 and "Cannot delete read-only data source" in delete["stderr"]
    assert g["datasources"] == {"p": provisioned}


def test_the_stand_in_answers_datasources_as_dtos_and_a_rename_onto_a_taken_name_with_409():
    """G4/L2: GET after POST answers a ``dtos.DataSource`` (``convertModelToDtos``: Grafana's own fields, secrets only
    as ``secureJsonFields``); a PUT renaming onto another datasource's name answers 409 "Failed to update datasource:
    ..."."""
    world = fake_world.empty()
    g = fake_world.grafana(world, HOST)
    body = {"uid": "p", "name": "Pyroscope", "type": "grafana-pyroscope-datasource", "access": "proxy",
            "url": "http://10.0.4.36:4040", "jsonData": {}, "secureJsonData": {"basicAuthPassword": "s3cret"}}
    added = fake_world._datasources("post", "/api/datasources", body, g)
    fake_world._datasources("post", "/api/datasources",
                            {**body, "uid": "l", "name": "Loki", "type": "loki", "secureJsonData": {}}, g)
    got = fake_world._datasources("get", "/api/datasources/uid/p", None, g)["json"]
    assert set(got) == set(fake_world.DTO_DEFAULTS) and added["json"]["datasource"] == got
    assert {k: got[k] for k in ("readOnly", "basicAuth", "isDefault", "withCredentials", "orgId", "version")} == {
        "readOnly": False, "basicAuth": False, "isDefault": False, "withCredentials": False, "orgId": 1, "version": 1}
    assert got["secureJsonFields"] == {"basicAuthPassword": True} and "s3cret" not in json.dumps(got)
    assert got["typeLogoUrl"].endswith(".svg") and got["uid"] == "p" and got["name"] == "Pyroscope"
    assert fake_world._datasources("get", "/api/datasources/name/Pyroscope", None, g)["json"] == got
    renamed = fake_world._datasources("put", "/api/datasources/uid/l",
                                      {"uid": "l", "name": "Pyroscope", "type": "loki"}, g)
    assert renamed["exit"] == 1 and renamed["stderr"].startswith("ERROR: Conflict(")
    assert "Failed to update datasource: data source with the same name already exists" in renamed["stderr"]
    assert g["datasources"]["l"]["name"] == "Loki"


# --- public reports on Azure authentication in core Prometheus ----------------------------------------------------


@pytest.mark.parametrize("version", [v for v in VERSIONS if v not in BEFORE_13])
def test_grafana_13_is_sent_the_azure_prometheus_plugin_type_or_one_line_naming_the_plugin(version, tmp_path):
    """grafana/grafana#123089 removed Azure authentication from the core Prometheus datasource in 13.0, leaving it to
    the grafana-azureprometheus-datasource plugin. On each Grafana 13 the datasource step POSTs the plugin's type
    (never ``prometheus``) where the plugin is installed, and where it is not stops with one line naming the plugin,
    sending nothing."""
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    ready = World(tmp_path / "with", version, (fake_world.AZURE_PROMETHEUS,))
    done = ready.step("prometheus")
    assert done.returncode == 0, done.stderr
    (post,) = [c for c in ready.calls() if c["argv"][:3] == ["rest", "--method", "post"]]
    assert post["body"]["type"] == fake_world.AZURE_PROMETHEUS
    assert post["body"]["jsonData"]["azureCredentials"] == {"authType": "msi"}

    bare = World(tmp_path / "without", version)
    refused = bare.step("prometheus")
    assert refused.returncode == 1
    (line,) = errors(refused)
    assert f"Grafana {version} has no Azure authentication in its core Prometheus datasource" in line
    assert f"the plugin {fake_world.AZURE_PROMETHEUS} is not installed" in line
    assert [c for c in bare.calls() if c["argv"][:3] in (["rest", "--method", "post"], ["rest", "--method", "put"])] \
        == []
    assert bare.grafana()["datasources"] == {}


@pytest.mark.parametrize("version", [v for v in BEFORE_13 if fake_world.release(v) >= (12, 0, 0)])
def test_grafana_12_is_sent_core_prometheus_even_with_the_azure_plugin_installed(version, tmp_path):
    """grafana/grafana#107207 deprecates Azure authentication in core Prometheus ahead of its removal in 13.0: on 12.x
    it still works. There the stack keeps writing type ``prometheus`` (the plugin installed or not), and the
    dashboard's Prometheus variable selects ``prometheus`` datasources, offering the stack's."""
    world = World(tmp_path, version, (fake_world.AZURE_PROMETHEUS,))
    done = world.step("prometheus")
    assert done.returncode == 0, done.stderr
    (post,) = [c for c in world.calls() if c["argv"][:3] == ["rest", "--method", "post"]]
    assert post["body"]["type"] == "prometheus"
    assert world.grafana()["datasources"]["azure-monitor-prometheus"]["type"] == "prometheus"
    assert world.step("dashboard").returncode == 0
    g = world.grafana()
    prom_ds = g["dashboards"]["AdvancedGPUObservability"]["templating"]["list"][0]
    assert prom_ds["query"] == "prometheus"
    assert fake_world.datasource_variable_options(g, prom_ds) == ["azure-monitor-prometheus"]


@pytest.mark.parametrize("version", [v for v in VERSIONS if v not in BEFORE_13])
def test_grafana_13s_unconditional_type_migration_finds_nothing_to_change_in_the_stacks_datasource(version, tmp_path):
    """grafana/grafana#121862 dropped the prometheusTypeMigration toggle check: from 13.0 Grafana migrates every
    Azure-auth ``prometheus`` datasource to the plugin each time it starts. The stack writes the plugin's type on 13
    itself, so a restart (the toggle off) leaves its datasource exactly as written (no migration marker, same
    version), and the next run of the step and ``--drift`` find nothing to change."""
    world = World(tmp_path, version, (fake_world.AZURE_PROMETHEUS,))
    for step in ("pyroscope", "prometheus", "dashboard"):
        assert world.step(step).returncode == 0, step
    written = world.grafana()["datasources"]["azure-monitor-prometheus"]
    assert written["type"] == fake_world.AZURE_PROMETHEUS and world.grafana()["features"] == []

    world.change(lambda w: fake_world.start(w, HOST))
    restarted = world.grafana()["datasources"]["azure-monitor-prometheus"]
    assert restarted == written and fake_world.MIGRATION_MARKER not in restarted["jsonData"]

    again = world.step("prometheus")
    assert again.returncode == 0 and "nothing written" in again.stderr and puts(world) == []
    found = world.drift()
    assert found.returncode == 0, found.stdout + found.stderr
