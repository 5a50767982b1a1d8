"""ops.verify run as a command against the stand-in az: the dev plan's outputs, the answers of a healthy stack, and
Grafana holding what the steps uploaded (for ``--drift``)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from offline.program import run
from steps import grafana_dashboard
from tests.support import ROOT
from tests.support.scenarios import calls_in, fake_az_env, grafana_server_rules

OUTPUTS = run("dev").outputs
GRAFANA = OUTPUTS["grafanaEndpoint"]
EXT_OK = {"json": {"id": OUTPUTS["extensionId"], "properties": {"provisioningState": "Succeeded",
                                                                "extensionType": "microsoft.inspektorgadget"}}}
MPE_OK = {"json": {"properties": {"connectionState": {"status": "Approved"},
                                  "privateLinkServicePrivateIP": "10.0.4.36"}}}
HEALTH_OK = {"json": {"status": "OK", "message": "Data source is working"}}
DASH_OK = {"json": {"dashboard": {"title": "Advanced GPU Observability", "uid": "AdvancedGPUObservability"}}}
PROFILES = {"json": [{"id": "process_cpu:malloc:bytes::", "label": "GPU memory allocations"}]}


def prometheus(used=None, size=None, desired=None, ready=None) -> dict:
    """Grafana's ``/api/ds/query`` answer for ops.verify_cluster's instant queries: per refId a frame per series, a
    Time and a Value field, the series' labels on the Value field (grafana/grafana pkg/promlib, instant queries);
    defaults: a 64 GiB volume 25 % used, one DaemonSet gadget with 3 of 3 pods ready."""
    given = {"used": {"data-pyroscope-0": 16 * 2**30} if used is None else used,
             "size": {"data-pyroscope-0": 64 * 2**30} if size is None else size,
             "desired": {"gadget": 3} if desired is None else desired,
             "ready": {"gadget": 3} if ready is None else ready}
    label = {"used": "persistentvolumeclaim", "size": "persistentvolumeclaim", "desired": "daemonset",
             "ready": "daemonset"}
    results = {}
    for ref, values in given.items():
        frames = [{"schema": {"refId": ref, "fields": [
                       {"name": "Time", "type": "time"},
                       {"name": "Value", "type": "number", "labels": {label[ref]: name, "cluster": "aks-gpu-dev"}}]},
                   "data": {"values": [[1796040000000], [value]]}} for name, value in values.items()]
        results[ref] = {"status": 200, "frames": frames}
    return {"json": {"results": results}}


def rules(ext=EXT_OK, mpe=MPE_OK, pyro=HEALTH_OK, prom=HEALTH_OK, dash=DASH_OK, profiles=PROFILES, query=None):
    return [
        {"match": ["account", "show"], "responses": [{"json": {"id": "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73",
                                                              "user": {"name": "deployer@example.test"}}}]},
        {"match": ["rest", "--method", "post", "/api/ds/query"], "responses": [query or prometheus()]},
        {"match": ["rest", "--method", "get", "/extensions/inspektor-gadget?api-version=2023-05-01"],
         "responses": [ext]},
        {"match": ["rest", "--method", "get", "/managedPrivateEndpoints/pyroscope-mpe?api-version=2024-10-01"],
         "responses": [mpe]},
        {"match": ["rest", "--method", "get", "/api/datasources/uid/local-pyroscope/health"], "responses": [pyro]},
        {"match": ["rest", "--method", "get", "/api/datasources/uid/azure-monitor-prometheus/health"],
         "responses": [prom]},
        {"match": ["rest", "--method", "get", "/api/dashboards/uid/AdvancedGPUObservability"], "responses": [dash]},
        {"match": ["rest", "--method", "get", "/resources/profileTypes"], "responses": [profiles]},
        # Which Grafana this is, for the version facts the checklist starts with (ops/versions.py).
        {"match": ["rest", "--method", "get", f"{GRAFANA}/api/health"],
         "responses": [{"json": {"database": "ok", "version": "12.4.4", "commit": "f3ab2c1"}}]},
    ]


def verify(tmp_path, rule_list, outputs=OUTPUTS, *extra, pulumi_outputs=None):
    env = fake_az_env(tmp_path, rule_list)
    args = ["--stack", "dev", *extra]
    if pulumi_outputs is None:
        path = tmp_path / "outputs.json"
        path.write_text(json.dumps(outputs))
        args += ["--outputs-file", str(path)]
    else:  # a stand-in `pulumi` that prints the outputs, as `pulumi stack output --json` does
        stand_in = tmp_path / "bin" / "pulumi"
        stand_in.write_text(
            "#!/bin/sh\n[ \"$1 $2 $3\" = \"stack output --json\" ] || exit 9\ncat "
            f"<<'EOF'\n{json.dumps(pulumi_outputs)}\nEOF\n")
        stand_in.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "ops.verify", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    return done, calls_in(tmp_path)


SOURCE = "https://dashboards.example.test/gpu.json"
#: A small dashboard of the pinned one's shape: the two datasource variables the step defaults.
SOURCE_DASHBOARD = {
    "uid": "AdvancedGPUObservability", "title": "Advanced GPU Observability", "schemaVersion": 39,
    "panels": [{"id": 1, "type": "flamegraph", "title": "GPU Memory Profiles",
                "datasource": {"type": "grafana-pyroscope-datasource", "uid": "${pyroscope_ds}"}}],
    "templating": {"list": [{"name": "prom_ds", "type": "datasource", "query": "prometheus"},
                            {"name": "pyroscope_ds", "type": "datasource", "query": "grafana-pyroscope-datasource"}]},
}
OWNER = {"aksGpuObservabilityOwner": "0123456789abcdef"}


def drift_outputs(tmp_path, source_bytes: bytes = json.dumps(SOURCE_DASHBOARD).encode()):
    """The dev plan's outputs with the dashboard pointed at a stand-in source (its bytes in tmp_path)."""
    (tmp_path / "source.json").write_bytes(source_bytes)
    definition = {**OUTPUTS["dashboardDefinition"], "source": SOURCE,
                  "sha256": hashlib.sha256(source_bytes).hexdigest()}
    return {**OUTPUTS, "dashboardDefinition": definition}


def as_grafana_holds_it(outputs, **changes):
    """Grafana's GET answers after the steps ran: each datasource with Grafana's own fields and the owner id
    added, the dashboard prepared by the step with id, version and owner id; ``changes`` edit them."""
    def stored(definition):
        return {"id": 7, "orgId": 1, "version": 3, "readOnly": False, "basicAuth": False, "secureJsonFields": {},
                "typeLogoUrl": "public/plugins/x.svg", **definition,
                "jsonData": {**definition["jsonData"], **OWNER, "timeInterval": "15s"}}

    dashboard = grafana_dashboard.prepare(json.loads(json.dumps(SOURCE_DASHBOARD)),
                                          outputs["dashboardDefinition"]["datasources"])
    held = {"pyro": {"json": stored(outputs["pyroscopeDatasource"])},
            "prom": {"json": stored(outputs["prometheusDatasource"])},
            "dash": {"json": {"dashboard": {**dashboard, **OWNER, "id": 42, "version": 5},
                              "meta": {"slug": "advanced-gpu-observability", "version": 5}}}}
    for name, change in changes.items():
        held[name] = change(held[name])
    return held


def drift_rules(tmp_path, held, grafana_version="12.4.4"):
    """The stand-in's answers for --drift: the source, the three objects, and which Grafana this is (a version before
    13.0, where the Prometheus datasource is ``prometheus``; the version matrix: tests/steps/test_grafana_server.py)."""
    return [
        {"match": ["rest", "--method", "get", SOURCE, "--skip-authorization-header"],
         "responses": [{"stdout": "", "output_file": str(tmp_path / "source.json")}]},
        {"match": ["rest", "--method", "get", "/api/datasources/uid/local-pyroscope"], "responses": [held["pyro"]]},
        {"match": ["rest", "--method", "get", "/api/datasources/uid/azure-monitor-prometheus"],
         "responses": [held["prom"]]},
        {"match": ["rest", "--method", "get", "/api/dashboards/uid/AdvancedGPUObservability"],
         "responses": [held["dash"]]},
        *grafana_server_rules(grafana_version),
    ]


def check_drift(tmp_path, outputs=None, *extra, **changes):
    outputs = outputs or drift_outputs(tmp_path)
    return verify(tmp_path, drift_rules(tmp_path, as_grafana_holds_it(outputs, **changes)), outputs, "--drift", *extra)


def edit(path, value):
    """A change to one field of Grafana's answer (``path`` dotted, under json)."""
    def change(answer):
        answer = json.loads(json.dumps(answer))
        *parents, last = ["json", *path.split(".")]
        target = answer
        for key in parents:
            target = target[key]
        target[last] = value
        return answer
    return change
