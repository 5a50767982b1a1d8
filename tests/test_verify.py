"""tools.verify against the stand-in az (SIMULATED: ARM and Grafana answers) and a stand-in pulumi."""

from __future__ import annotations

import json
import subprocess
import sys


from tests.conftest import ROOT
from tests.scenarios import calls_in, fake_az_env, grafana_error
from tools.mock_engine import run

OUTPUTS = run("dev").outputs
GRAFANA = OUTPUTS["grafanaEndpoint"]

EXT_OK = {"json": {"id": OUTPUTS["extensionId"], "properties": {"provisioningState": "Succeeded", "extensionType": "microsoft.inspektorgadget"}}}
MPE_OK = {"json": {"properties": {"connectionState": {"status": "Approved"}, "privateLinkServicePrivateIP": "10.0.4.36"}}}
HEALTH_OK = {"json": {"status": "OK", "message": "Data source is working"}}
DASH_OK = {"json": {"dashboard": {"title": "Advanced GPU Observability", "uid": "AdvancedGPUObservability"}}}
PROFILES = {"json": [{"id": "process_cpu:malloc:bytes::", "label": "GPU memory allocations"}]}


def rules(ext=EXT_OK, mpe=MPE_OK, pyro=HEALTH_OK, prom=HEALTH_OK, dash=DASH_OK, profiles=PROFILES):
    return [
        {"match": ["rest", "--method", "get", "/extensions/inspektor-gadget?api-version=2023-05-01"], "responses": [ext]},
        {"match": ["rest", "--method", "get", "/managedPrivateEndpoints/pyroscope-mpe?api-version=2024-10-01"], "responses": [mpe]},
        {"match": ["rest", "--method", "get", "/api/datasources/uid/local-pyroscope/health"], "responses": [pyro]},
        {"match": ["rest", "--method", "get", "/api/datasources/uid/azure-monitor-prometheus/health"], "responses": [prom]},
        {"match": ["rest", "--method", "get", "/api/dashboards/uid/AdvancedGPUObservability"], "responses": [dash]},
        {"match": ["rest", "--method", "get", "/resources/profileTypes"], "responses": [profiles]},
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
        stand_in.write_text(f"#!/bin/sh\n[ \"$1 $2 $3\" = \"stack output --json\" ] || exit 9\ncat <<'EOF'\n{json.dumps(pulumi_outputs)}\nEOF\n")
        stand_in.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "tools.verify", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    return done, calls_in(tmp_path)


def test_all_green(tmp_path):
    done, calls = verify(tmp_path, rules())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "6 passed, 0 failed"
    assert "✅ managed private endpoint: connection Approved, private IP 10.0.4.36" in done.stdout
    assert all(c["rule"] is not None for c in calls)
    grafana_calls = [c["argv"] for c in calls if GRAFANA in " ".join(c["argv"])]
    assert grafana_calls and all("ce34e7e5-485f-4d76-964f-b3d2b16d1e4f" in a for a in grafana_calls)


def test_failures_each_get_a_next_step(tmp_path):
    done, _ = verify(tmp_path, rules(
        mpe={"json": {"properties": {"connectionState": {"status": "Pending"}, "privateLinkServicePrivateIP": ""}}},
        pyro={"json": {"status": "ERROR", "message": "dial tcp 10.0.4.36:4040: i/o timeout"}},
        profiles={"json": []}))
    assert done.returncode == 1
    out = done.stdout
    assert "❌ managed private endpoint: connection Pending, private IP none (datasource uses 10.0.4.36)" in out
    assert "next: run `pulumi up` again (approval and refresh re-run)" in out
    assert "❌ Pyroscope datasource local-pyroscope: health ERROR: dial tcp 10.0.4.36:4040: i/o timeout" in out
    assert "❌ Pyroscope profile types: 0 profile type(s)" in out and "next: no profiles yet: run a GPU workload" in out
    assert out.splitlines()[-1] == "3 passed, 3 failed"


def test_az_errors_become_failed_checks(tmp_path):
    done, _ = verify(tmp_path, rules(ext={"exit": 3, "stderr": "ERROR: (ResourceNotFound) The Resource was not found."},
                                     dash=grafana_error("Not Found", "Dashboard not found")))
    assert done.returncode == 1
    assert "❌ Inspektor Gadget extension: ERROR: (ResourceNotFound) The Resource was not found." in done.stdout
    assert "❌ dashboard AdvancedGPUObservability: ERROR: Not Found" in done.stdout
    assert "next: run `pulumi up` (the dashboard step uploads it)" in done.stdout


def test_outputs_from_pulumi_stack_output(tmp_path):
    done, _ = verify(tmp_path, rules(), pulumi_outputs=OUTPUTS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_missing_output_is_one_line(tmp_path):
    outputs = {k: v for k, v in OUTPUTS.items() if k != "dashboardUrl"}
    done, calls = verify(tmp_path, rules(), outputs)
    assert done.returncode == 2 and calls == []
    assert done.stderr.strip() == "error: stack dev has no output dashboardUrl; was `pulumi up` completed with this version?"


def test_json_output(tmp_path):
    done, _ = verify(tmp_path, rules(), OUTPUTS, "--json")
    checks = json.loads(done.stdout)
    assert [c["ok"] for c in checks] == [True] * 6
    assert {"name", "ok", "detail", "next_step"} == set(checks[0])
