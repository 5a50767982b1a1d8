"""ops.verify against the stand-in az (SIMULATED: ARM and Grafana answers) and a stand-in pulumi."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import pytest

from offline.program import run
from steps import grafana_dashboard
from tests.support import ROOT
from tests.support.scenarios import calls_in, fake_az_env, grafana_error
from tests.support.verify_runs import (
    GRAFANA,
    OUTPUTS,
    OWNER,
    SOURCE,
    SOURCE_DASHBOARD,
    as_grafana_holds_it,
    check_drift,
    drift_outputs,
    drift_rules,
    edit,
    prometheus,
    rules,
    verify,
)


def test_all_green(tmp_path):
    done, calls = verify(tmp_path, rules())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "9 passed, 0 failed"
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
    assert out.splitlines()[-1] == "6 passed, 3 failed"


@pytest.mark.parametrize("held,line,hint", [
    (["process_cpu:cpu:nanoseconds:cpu:nanoseconds"], "no GPU memory (malloc:bytes)", "no GPU-memory profiles yet"),
    (["process_cpu:malloc:bytes:process_cuda:bytes"],
     "GPU memory as process_cpu:malloc:bytes:process_cuda:bytes, the dashboard asks process_cpu:malloc:bytes::",
     "next: the dashboard's flame graph stays empty: `pulumi config set dashboardProfileType "
     "process_cpu:malloc:bytes:process_cuda:bytes && pulumi up`"),
])
def test_profile_types_the_dashboard_cannot_show_fail(tmp_path, held, line, hint):
    """Inspektor Gadget v0.54.0 on sends the period type process_cuda, which Pyroscope v1.15.0 keeps in the ID: the
    dashboard panel's process_cpu:malloc:bytes:: then finds nothing (docs/offline.md G12)."""
    done, _ = verify(tmp_path, rules(profiles={"json": [{"id": i, "label": "x"} for i in held]}))
    assert done.returncode == 1
    assert f"❌ Pyroscope profile types: 1 profile type(s): {held[0]}; {line}" in done.stdout
    assert hint in done.stdout and done.stdout.splitlines()[-1] == "8 passed, 1 failed"


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


#: A cluster and a Grafana whose names came in secret: every output that carries one is a Pulumi secret
#: (stack/secrecy.py), which `pulumi stack output --json` prints as "[secret]" unless given --show-secrets.
SECRET_NAMES = ("aks-gpu-dev", "amg-gpu-dev")


def as_the_cli_masks(value):
    """``value`` as `pulumi stack output --json` prints it without --show-secrets: a string that carries a secret name
    is a secret (secrets.py taints strings), printed "[secret]" (pulumi/pulumi v3.230.0 display.MassageSecrets)."""
    if isinstance(value, dict):
        return {key: as_the_cli_masks(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_the_cli_masks(item) for item in value]
    return "[secret]" if isinstance(value, str) and any(name in value for name in SECRET_NAMES) else value


def verify_secret(tmp_path, rule_list, outputs, *extra):
    """verify against a stand-in `pulumi` that prints the outputs as the CLI does: masked, or in plaintext with
    --show-secrets; each command line it was given is appended to pulumi-calls.txt."""
    env = fake_az_env(tmp_path, rule_list)
    (tmp_path / "masked.json").write_text(json.dumps(as_the_cli_masks(outputs)))
    (tmp_path / "shown.json").write_text(json.dumps(outputs))
    stand_in = tmp_path / "bin" / "pulumi"
    stand_in.write_text(f"""#!/bin/sh
echo "$*" >> {tmp_path}/pulumi-calls.txt
[ "$1 $2 $3" = "stack output --json" ] || exit 9
case " $* " in *" --show-secrets "*) cat {tmp_path}/shown.json ;; *) cat {tmp_path}/masked.json ;; esac
""")
    stand_in.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "ops.verify", "--stack", "dev", *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    return done, calls_in(tmp_path), (tmp_path / "pulumi-calls.txt").read_text().splitlines()


def printed_no_secret(done):
    for name in SECRET_NAMES:
        assert name not in done.stdout and name not in done.stderr, (name, done.stdout, done.stderr)


def test_secret_outputs_are_read_with_show_secrets_and_never_printed(tmp_path):
    done, calls, asked = verify_secret(tmp_path, rules(), OUTPUTS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "9 passed, 0 failed"
    # then the state, without --show-secrets, for the version facts (ops/versions.py)
    assert asked == ["stack output --json --stack dev", "stack output --json --show-secrets --stack dev",
                     "stack export --stack dev"]
    urls = [c["argv"][c["argv"].index("--url") + 1] for c in calls if "--url" in c["argv"]]
    assert f"{OUTPUTS['extensionId']}?api-version=2023-05-01" in urls  # the real id, not "[secret]"
    assert all(url.startswith(GRAFANA) for url in urls if "/api/" in url)
    printed_no_secret(done)


def test_a_failure_naming_a_secret_prints_it_masked(tmp_path):
    gone = {"exit": 3, "stderr": f"ERROR: (ResourceNotFound) The Resource '{OUTPUTS['extensionId']}' was not found."}
    for extra in ([], ["--json"]):
        done, _, _ = verify_secret(tmp_path, rules(ext=gone), OUTPUTS, *extra)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "The Resource '[secret]" in done.stdout
        printed_no_secret(done)


def test_drift_with_secret_outputs_prints_no_secret(tmp_path):
    outputs = drift_outputs(tmp_path)
    held = as_grafana_holds_it(outputs, pyro=edit("url", f"http://{SECRET_NAMES[0]}.example:4040"))
    for extra in (["--drift"], ["--drift", "--json"]):
        done, _, _ = verify_secret(tmp_path, drift_rules(tmp_path, held), outputs, *extra)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "[secret]" in done.stdout
        printed_no_secret(done)


def test_outputs_file_saved_without_show_secrets_is_one_line(tmp_path):
    done, calls = verify(tmp_path, rules(), as_the_cli_masks(OUTPUTS))
    assert done.returncode == 2 and calls == [] and done.stdout == ""
    assert done.stderr == (f"error: --outputs-file: output extensionId is [secret] in {tmp_path / 'outputs.json'}; "
                           "save the outputs with `pulumi stack output --json --show-secrets`\n")


def test_missing_output_is_one_line(tmp_path):
    outputs = {k: v for k, v in OUTPUTS.items() if k != "dashboardUrl"}
    done, calls = verify(tmp_path, rules(), outputs)
    assert done.returncode == 2 and calls == []
    assert done.stderr.strip() == ("error: stack dev has no output dashboardUrl; "
                                   "was `pulumi up` completed with this version?")


def test_json_output(tmp_path):
    done, _ = verify(tmp_path, rules(), OUTPUTS, "--json")
    checks = json.loads(done.stdout)
    assert [c["ok"] for c in checks] == [True] * 9
    assert {"name", "ok", "detail", "next_step"} == set(checks[0])


def test_drift_none_when_grafana_holds_what_the_stack_set(tmp_path):
    """Grafana's own fields, an extra jsonData key and the steps' owner ids are not drift."""
    done, calls = check_drift(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "3 in place, 0 drifted"
    assert "✅ datasource local-pyroscope: as the stack set it" in done.stdout
    assert "✅ dashboard AdvancedGPUObservability: as the stack set it" in done.stdout
    assert all(c["rule"] is not None for c in calls) and done.stderr == ""
    grafana_calls = [c["argv"] for c in calls if GRAFANA in " ".join(c["argv"])]
    # the three objects, and which Grafana it is (GET /api/health, GET /api/plugins, the Azure plugin's settings)
    assert len(grafana_calls) == 6 and all("ce34e7e5-485f-4d76-964f-b3d2b16d1e4f" in a for a in grafana_calls)


@pytest.mark.parametrize("installed", [True, False])
def test_drift_finds_the_azure_prometheus_plugin_a_viewer_is_not_listed(tmp_path, installed):
    """The drift identity is a Grafana Viewer, to whom Grafana lists core plugins only (grafana/grafana pkg/api/
    plugins.go @ 54ec4964, GetPluginList): a Prometheus datasource Grafana's migration moved to the Azure plugin was
    reported as drift. The plugin's settings answer a Viewer: installed, it is not drift; not installed, it is."""
    from tests.support import fake_world

    azure = fake_world.AZURE_PROMETHEUS
    outputs = drift_outputs(tmp_path)
    rules_ = drift_rules(tmp_path, as_grafana_holds_it(outputs, prom=edit("type", azure)))  # lists core plugins only
    settings = next(r for r in rules_ if r["match"][-1].endswith(f"/api/plugins/{azure}/settings"))
    settings["responses"] = [fake_world._plugin_settings(azure, {"plugins": [azure] if installed else []})]
    done, _ = verify(tmp_path, rules_, outputs, "--drift")
    assert done.returncode == (0 if installed else 1), done.stdout + done.stderr
    assert ("✅ datasource azure-monitor-prometheus" in done.stdout) is installed


def test_drift_a_datasource_url_edited_in_grafana(tmp_path):
    done, _ = check_drift(tmp_path, None, pyro=edit("url", "http://10.0.9.9:4040"))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "❌ datasource local-pyroscope: drifted" in out
    assert '       url: "http://10.0.9.9:4040" in Grafana, "http://10.0.4.36:4040" set by the stack' in out
    assert ("next: `pulumi up --replace 'urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:"
            "GpuObservability$aks-gpu-observability:index:GrafanaDatasources$command:local:Command"
            "::grafana-datasources-pyroscope'`") in out
    assert "✅ datasource azure-monitor-prometheus" in out and out.splitlines()[-1] == "2 in place, 1 drifted"


def test_drift_inside_json_data_and_a_removed_field(tmp_path):
    done, _ = check_drift(tmp_path, None, prom=edit("jsonData.httpMethod", "GET"),
                          pyro=edit("jsonData.keepCookies", []))
    assert done.returncode == 1
    assert '       jsonData.httpMethod: "GET" in Grafana, "POST" set by the stack' in done.stdout
    assert '       jsonData.keepCookies: [] in Grafana, ["pyroscope_git_session"] set by the stack' in done.stdout


def test_drift_a_datasource_deleted(tmp_path):
    done, _ = check_drift(tmp_path, None, prom=lambda _: grafana_error("Not Found", "Data source not found"))
    assert done.returncode == 1
    assert "❌ datasource azure-monitor-prometheus: missing (deleted in Grafana?)" in done.stdout


def test_drift_the_dashboard_replaced(tmp_path):
    def replaced(answer):
        answer = json.loads(json.dumps(answer))
        answer["json"]["dashboard"]["title"] = "GPU (edited)"
        answer["json"]["dashboard"]["panels"] = []
        return answer

    done, _ = check_drift(tmp_path, None, dash=replaced)
    assert done.returncode == 1
    out = done.stdout
    assert "❌ dashboard AdvancedGPUObservability: drifted" in out
    assert '       title: "GPU (edited)" in Grafana, "Advanced GPU Observability" set by the stack' in out
    assert re.search(r'       panels: "<0 items, sha256 [0-9a-f]{12}>" in Grafana, "<1 items, sha256 [0-9a-f]{12}>"',
                     out)
    assert re.search(r'       content sha256: "[0-9a-f]{64}" in Grafana, "[0-9a-f]{64}" set by the stack', out)
    assert "gpu-dashboard-upload" in out


def test_drift_a_datasource_variable_default_changed_is_drift(tmp_path):
    """The defaults the upload applies are part of what the stack wants."""
    def repointed(answer):
        answer = json.loads(json.dumps(answer))
        answer["json"]["dashboard"]["templating"]["list"][0]["current"]["value"] = "someone-elses-prometheus"
        return answer

    done, _ = check_drift(tmp_path, None, dash=repointed)
    assert done.returncode == 1 and '       templating: "<1 keys, sha256' in done.stdout


def test_drift_the_dashboard_deleted(tmp_path):
    done, _ = check_drift(tmp_path, None, dash=lambda _: grafana_error("Not Found", "Dashboard not found"))
    assert done.returncode == 1
    assert "❌ dashboard AdvancedGPUObservability: missing (deleted in Grafana?)" in done.stdout


def test_drift_json_shape(tmp_path):
    done, _ = check_drift(tmp_path, None, "--json", pyro=edit("url", "http://10.0.9.9:4040"),
                          dash=lambda _: grafana_error("Not Found", "Dashboard not found"))
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert set(document) == {"stack", "drifted", "objects"}
    assert document["stack"] == "dev" and document["drifted"] is True
    assert [(o["kind"], o["uid"], o["state"]) for o in document["objects"]] == [
        ("datasource", "local-pyroscope", "drifted"), ("datasource", "azure-monitor-prometheus", "ok"),
        ("dashboard", "AdvancedGPUObservability", "missing")]
    for item in document["objects"]:
        assert set(item) == {"kind", "uid", "state", "fields", "next_step"}
        assert bool(item["next_step"]) == (item["state"] != "ok")
    assert document["objects"][0]["fields"] == [{"field": "url", "grafana": "http://10.0.9.9:4040",
                                                 "stack": "http://10.0.4.36:4040"}]
    clean, _ = check_drift(tmp_path, None, "--json")
    assert clean.returncode == 0 and json.loads(clean.stdout)["drifted"] is False


def test_drift_reads_the_outputs_from_pulumi(tmp_path):
    outputs = drift_outputs(tmp_path)
    done, _ = verify(tmp_path, drift_rules(tmp_path, as_grafana_holds_it(outputs)), outputs, "--drift",
                     pulumi_outputs=outputs)
    assert done.returncode == 0, done.stdout + done.stderr


def test_drift_with_the_pinned_dashboard(tmp_path):
    """The real pinned dashboard (tests/reference, vendored), prepared as the step prepares it: no drift; its panels
    edited: drift."""
    from tests.support.scenarios import DASHBOARD_FILE, DASHBOARD_URL

    raw = DASHBOARD_FILE.read_bytes()
    outputs = {**OUTPUTS, "dashboardDefinition": {**OUTPUTS["dashboardDefinition"], "source": DASHBOARD_URL}}
    assert outputs["dashboardDefinition"]["sha256"] == hashlib.sha256(raw).hexdigest()
    dashboard = grafana_dashboard.prepare(json.loads(raw), outputs["dashboardDefinition"]["datasources"])
    held = as_grafana_holds_it(outputs)
    held["dash"] = {"json": {"dashboard": {**dashboard, **OWNER, "id": 3, "version": 1}, "meta": {}}}
    rules = drift_rules(tmp_path, held)
    rules[0] = {"match": ["rest", "--method", "get", DASHBOARD_URL, "--skip-authorization-header"],
                "responses": [{"stdout": "", "output_file": str(DASHBOARD_FILE)}]}
    done, _ = verify(tmp_path, rules, outputs, "--drift")
    assert done.returncode == 0, done.stdout + done.stderr
    held["dash"]["json"]["dashboard"]["panels"] = held["dash"]["json"]["dashboard"]["panels"][1:]
    done, _ = verify(tmp_path, drift_rules(tmp_path, held)[1:] + rules[:1], outputs, "--drift")
    assert done.returncode == 1 and "       panels: " in done.stdout


@pytest.mark.parametrize("change,line", [
    pytest.param({"pyro": lambda _: grafana_error("Forbidden", "Permissions needed: datasources:read")},
                 "error: reading datasource local-pyroscope from Grafana failed: ERROR: Forbidden", id="forbidden"),
])
def test_drift_that_cannot_be_checked_is_exit_2(tmp_path, change, line):
    done, _ = check_drift(tmp_path, None, **change)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(line), done.stderr


def test_drift_source_changed_since_the_upload_is_exit_2(tmp_path):
    outputs = drift_outputs(tmp_path)
    (tmp_path / "source.json").write_text("{}")  # the URL now serves other bytes
    done, _ = verify(tmp_path, drift_rules(tmp_path, as_grafana_holds_it(outputs)), outputs, "--drift")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"error: dashboard AdvancedGPUObservability: {SOURCE} has sha256 44136fa355b3678a")


def test_the_restore_hint_names_resources_of_the_plan():
    """ops.verify names the step commands by URN; they must be the ones the program registers."""
    from ops import verify as tool

    urns = {r.urn for r in run("dev").resources}
    for output in tool.STEPS:
        assert f"urn:pulumi:dev::aks-gpu-observability::{tool.STEPS[output]}" in urns, output


def test_no_az_on_path_is_one_line(tmp_path):
    """Without az on PATH (only a stand-in pulumi), verify and hotspots say what to install, in one line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "outputs.json").write_text(json.dumps(drift_outputs(tmp_path)))
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    for tool, extra in (("ops.verify", []), ("ops.verify", ["--drift"]), ("flamegraph.hotspots", [])):
        done = subprocess.run([sys.executable, "-m", tool, "--stack", "dev", "--outputs-file",
                               str(tmp_path / "outputs.json"), *extra],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stdout == "", (tool, done.stderr)
        assert done.stderr == ("error: the Azure CLI (az) is not on PATH; install Azure CLI 2.72 or newer "
                               "(https://learn.microsoft.com/cli/azure/install-azure-cli) and sign in with "
                               "`az login`\n"), tool


def test_drift_none_for_a_dashboard_exported_for_sharing(tmp_path):
    """--drift rebuilds the upload importing ``__inputs`` as the upload step does (with the step's own function and
    the input mapping the definition output carries), so a dashboard exported for sharing is not drift."""
    export = (ROOT / "tests" / "data" / "gpu-dashboard-shared-export.json").read_bytes()
    outputs = drift_outputs(tmp_path, export)
    definition = outputs["dashboardDefinition"]
    assert definition["inputs"] == {"grafana-pyroscope-datasource": "local-pyroscope",
                                    "prometheus": "azure-monitor-prometheus"}
    imported = grafana_dashboard.import_inputs(json.loads(export), definition["inputs"], definition["source"])
    held = as_grafana_holds_it(outputs)
    held["dash"]["json"]["dashboard"] = {**grafana_dashboard.prepare(imported, definition["datasources"]), **OWNER,
                                         "id": 42, "version": 5}
    done, _ = verify(tmp_path, drift_rules(tmp_path, held), outputs, "--drift")
    assert done.returncode == 0, done.stdout + done.stderr


def test_profile_types_are_asked_over_an_explicit_range(tmp_path):
    """The profile-type check asks over "the last hour" with an explicit start and end (docs/offline.md G12), as
    flamegraph.hotspots --stack does. Only Grafanas with grafana/grafana PR 110277 (merged 2025-08-28; instance.go @
    3e9248b7 ``profileTypes``: else branch "Make sure to pass a valid time range ... as v2 will not work without it",
    now-1h..now+1h) fill them in when absent. Older ones (PR 77523, 2023-11, up to that merge: at least the matrix's
    10.4.19 and 11.6.x, docs/offline.md G8, unless backported) read start/end when given but pass 0/0 when absent, and
    grafana/pyroscope v1.15.0 (38a40a93) then answers from the ingesters' head block only: proto
    api/querier/v1/querier.proto ProfileTypesRequest ("If missing or zero, only the ingesters will be queried"),
    pkg/querier/querier.go ``LabelValues`` (``!hasTimeRange`` -> labelValuesFromIngesters), pkg/phlaredb/phlaredb.go
    ``LabelValues`` (no range -> ``headQueriers``): without the range, which IDs verify sees would depend on the
    Grafana version and on when the head block was last cut."""
    done, calls = verify(tmp_path, rules())
    assert done.returncode == 0, done.stdout + done.stderr
    (call,) = [c for c in calls if "/resources/profileTypes" in " ".join(c["argv"])]
    url = call["argv"][call["argv"].index("--url") + 1]
    assert "start=" in url and "end=" in url, url


# --- dashboardProfileType: the flame graph's profile type ID, from dashboardDefinition.profileType ---------------
CUDA = "process_cpu:malloc:bytes:process_cuda:bytes"
PUBLISHED = "process_cpu:malloc:bytes::"


def with_profile_type(profile_type, outputs=OUTPUTS):
    """The dev outputs of a stack whose dashboardProfileType is ``profile_type`` (None: a stack from before the key,
    whose dashboardDefinition has no profileType)."""
    definition = {k: v for k, v in outputs["dashboardDefinition"].items() if k != "profileType"}
    if profile_type is not None:
        definition["profileType"] = profile_type
    return {**outputs, "dashboardDefinition": definition}


def held(*ids):
    return {"json": [{"id": i, "label": "process_cpu - malloc"} for i in ids]}


def test_profile_types_pass_when_the_configured_id_is_held(tmp_path):
    done, _ = verify(tmp_path, rules(profiles=held(CUDA)), with_profile_type(CUDA))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"✅ Pyroscope profile types: 1 profile type(s): {CUDA}" in done.stdout


def test_profile_types_fail_naming_the_config_set_when_only_another_id_is_held(tmp_path):
    """The stack asks for the v0.54+ ID, but Pyroscope holds only the published one (a gadget before v0.54.0, say a
    pinned extensionVersion): the next step names the key and the ID held."""
    done, _ = verify(tmp_path, rules(profiles=held(PUBLISHED)), with_profile_type(CUDA))
    assert done.returncode == 1
    assert (f"❌ Pyroscope profile types: 1 profile type(s): {PUBLISHED}; GPU memory as {PUBLISHED}, "
            f"the dashboard asks {CUDA}") in done.stdout
    assert ("next: the dashboard's flame graph stays empty: "
            f"`pulumi config set dashboardProfileType {PUBLISHED} && pulumi up`") in done.stdout


def test_profile_types_of_an_older_stack_are_checked_against_the_published_id(tmp_path):
    """Outputs of a stack from before dashboardProfileType (no profileType; or no dashboardDefinition at all, which
    verify does not need): its dashboard asks for the published ID."""
    older = with_profile_type(None)
    done, _ = verify(tmp_path, rules(profiles=held(CUDA)), older)
    assert done.returncode == 1 and f"the dashboard asks {PUBLISHED}" in done.stdout
    assert f"`pulumi config set dashboardProfileType {CUDA} && pulumi up`" in done.stdout
    (tmp_path / "oldest").mkdir()
    oldest = {k: v for k, v in OUTPUTS.items() if k != "dashboardDefinition"}
    done, _ = verify(tmp_path / "oldest", rules(profiles=held(PUBLISHED)), oldest)
    assert done.returncode == 0, done.stdout + done.stderr


def test_both_ids_held_the_configured_one_passes(tmp_path):
    """Across a gadget upgrade both IDs are held; the check passes on the one the dashboard asks for."""
    done, _ = verify(tmp_path, rules(profiles=held(PUBLISHED, CUDA)), with_profile_type(CUDA))
    assert done.returncode == 0, done.stdout + done.stderr


#: SOURCE_DASHBOARD with the pinned panel's Pyroscope query (its flame graph's profileTypeId).
PROFILE_SOURCE = json.loads(json.dumps(SOURCE_DASHBOARD))


PROFILE_SOURCE["panels"][0]["targets"] = [{"refId": "A", "queryType": "profile", "profileTypeId": PUBLISHED,
                                           "datasource": {"type": "grafana-pyroscope-datasource",
                                                          "uid": "${pyroscope_ds}"}}]


def profile_drift(tmp_path, profile_type, grafana_holds):
    """--drift for a stack with ``profile_type`` whose dashboard in Grafana asks for ``grafana_holds``."""
    outputs = with_profile_type(profile_type, drift_outputs(tmp_path, json.dumps(PROFILE_SOURCE).encode()))
    definition = outputs["dashboardDefinition"]
    uploaded = grafana_dashboard.prepare(json.loads(json.dumps(PROFILE_SOURCE)), definition["datasources"],
                                         profile_type=grafana_holds, inputs=definition["inputs"])
    stored = as_grafana_holds_it(outputs)
    stored["dash"]["json"]["dashboard"] = {**uploaded, **OWNER, "id": 42, "version": 5}
    return verify(tmp_path, drift_rules(tmp_path, stored), outputs, "--drift")


def test_drift_none_when_grafana_holds_the_configured_id(tmp_path):
    """--drift rebuilds the upload with the step's own prepare, profile type included."""
    done, _ = profile_drift(tmp_path, CUDA, CUDA)
    assert done.returncode == 0, done.stdout + done.stderr


def test_drift_when_the_flame_graphs_id_was_changed_in_grafana(tmp_path):
    """The panel's profile type picked by hand in Grafana (or left from before the key was set) is drift."""
    done, _ = profile_drift(tmp_path, CUDA, PUBLISHED)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "❌ dashboard AdvancedGPUObservability: drifted" in done.stdout and "       panels: " in done.stdout


def test_drift_of_an_older_stack_rebuilds_the_source_ids_unchanged(tmp_path):
    """A dashboardDefinition without profileType: its step uploaded the source's own IDs, and so does the rebuild."""
    done, _ = profile_drift(tmp_path, None, None)
    assert done.returncode == 0, done.stdout + done.stderr


GIB = 2**30


def test_a_pyroscope_disk_from_80_percent_fails_naming_the_retention_and_size_keys(tmp_path):
    """grafana/pyroscope#4418: single-binary head blocks can fill the disk; verify read only profile types."""
    done, calls = verify(tmp_path, rules(query=prometheus(used={"data-pyroscope-0": 52 * GIB})))
    assert done.returncode == 1
    assert "❌ Pyroscope disk: data-pyroscope-0 52.0 GiB of 64.0 GiB (81%)" in done.stdout
    assert "lower pyroscopeRetention or raise pyroscopeStorageSize" in done.stdout
    query = next(c["body"] for c in calls if "/api/ds/query" in " ".join(c["argv"]))
    assert {q["datasource"]["uid"] for q in query["queries"]} == {"azure-monitor-prometheus"}
    assert all('cluster="aks-gpu-dev"' in q["expr"] and q["instant"] for q in query["queries"])
    healthy, _ = verify(tmp_path / "ok", rules())
    assert "✅ Pyroscope disk: data-pyroscope-0 16.0 GiB of 64.0 GiB (25%)" in healthy.stdout


#: The daemonset controller's event when Azure Policy's Gatekeeper refuses a privileged pod (Inspektor Gadget's
#: troubleshooting guide, "Azure Policy"): the extension still reports Succeeded.
GATEKEEPER = {"items": [
    {"type": "Normal", "reason": "SuccessfulCreate", "involvedObject": {"kind": "DaemonSet", "name": "gadget"},
     "message": "Created pod: gadget-abcde", "lastTimestamp": "2026-12-05T09:00:00Z"},
    {"type": "Warning", "reason": "FailedCreate", "involvedObject": {"kind": "DaemonSet", "name": "gadget"},
     "lastTimestamp": "2026-12-05T10:00:00Z",
     "message": 'Error creating: admission webhook "validation.gatekeeper.sh" denied the request: '
                "[azurepolicy-k8sazurev2noprivilege-0f3b2c] Privileged container is not allowed: gadget, "
                'securityContext: {"privileged": true}'},
]}


def kubectl(tmp_path, stdout: str, exit_code: int = 0, stderr: str = "") -> None:
    """A stand-in kubectl on PATH: records its argv, prints ``stdout``."""
    path = tmp_path / "bin" / "kubectl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'kubectl.log'}\ncat <<'EOF'\n{stdout}\nEOF\n"
                    f"echo '{stderr}' >&2\nexit {exit_code}\n")
    path.chmod(0o755)


def test_fewer_ready_gadget_pods_than_nodes_name_the_admission_policy_that_refuses_them(tmp_path):
    kubectl(tmp_path, json.dumps(GATEKEEPER))
    done, _ = verify(tmp_path, rules(query=prometheus(desired={"gadget": 3}, ready={"gadget": 0})))
    assert done.returncode == 1
    assert "✅ Inspektor Gadget extension: provisioningState Succeeded" in done.stdout
    line = next(x for x in done.stdout.splitlines() if "gadget DaemonSet" in x)
    assert line.startswith("  ❌ gadget DaemonSet: gadget 0 of 3 ready; FailedCreate: Error creating: admission "
                           "webhook")
    assert "Privileged container is not allowed" in line and "SuccessfulCreate" not in line
    assert "next: Azure Policy (Gatekeeper) refuses the gadget pods" in done.stdout
    assert "excludedNamespaces" in done.stdout
    assert (tmp_path / "kubectl.log").read_text().splitlines() == [
        "--context aks-gpu-dev -n gadget get events -o json",
        "--context aks-gpu-dev -n gadget get pods -l app.kubernetes.io/name=pyroscope -o json"]  # the ingestion check


def test_without_kubectl_the_check_says_where_the_cause_is(tmp_path):
    kubectl(tmp_path, "", 1, 'error: context "other" does not exist')
    done, _ = verify(tmp_path, rules(query=prometheus(ready={"gadget": 2})), OUTPUTS, "--kube-context", "other")
    assert "❌ gadget DaemonSet: gadget 2 of 3 ready" in done.stdout
    assert ("next: the cause is in `kubectl -n gadget get events` (kubectl failed: error: context \"other\" does not "
            "exist; verify reads the context named --kube-context)") in done.stdout
    assert (tmp_path / "kubectl.log").read_text().split()[:2] == ["--context", "other"]


def test_without_an_az_login_verify_stops_in_one_line(tmp_path):
    """A newcomer's verify without `az login` printed 8 failed checks, each with a wrong next step."""
    login = {"exit": 1, "stderr": "ERROR: Please run 'az login' to setup account."}
    done, calls = verify(tmp_path, [{"match": ["account", "show"], "responses": [login]}, *rules()[1:]])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == ("error: az: ERROR: Please run 'az login' to setup account. (sign in with `az "
                                   "login`, then run verify again)")
    assert [c["argv"][:2] for c in calls] == [["account", "show"]]


def test_drift_after_an_upgrade_to_13_that_lost_the_dashboard_names_how_to_upload_it_again(tmp_path):
    """grafana/grafana#126013 and grafana/grafana#124030: upgrades from 12.x to 13.0 lost every dashboard (and folder)
    in the unified-storage migration. On such a Grafana 13 (its Prometheus datasource migrated to the Azure plugin,
    the dashboard answering 404) ``--drift`` keeps both datasources in place, reports the dashboard ``missing`` and
    names the replace of gpu-dashboard-upload that uploads it again; exit 1."""
    from tests.support import fake_world
    from tests.support.scenarios import grafana_server_rules

    def migrated(answer):  # what Grafana 13's prometheus type migration made of the stack's datasource
        answer = edit("type", fake_world.AZURE_PROMETHEUS)(answer)
        answer["json"]["jsonData"][fake_world.MIGRATION_MARKER] = True
        return answer

    outputs = drift_outputs(tmp_path)
    held = as_grafana_holds_it(outputs, prom=migrated, dash=lambda _: grafana_error("Not Found", "Dashboard not found"))
    rules_ = grafana_server_rules("13.0.1", (fake_world.AZURE_PROMETHEUS,)) + drift_rules(tmp_path, held, "13.0.1")
    done, _ = verify(tmp_path, rules_, outputs, "--drift", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    objects = {(o["kind"], o["uid"]): o for o in json.loads(done.stdout)["objects"]}
    assert objects[("datasource", "local-pyroscope")]["state"] == "ok"
    assert objects[("datasource", "azure-monitor-prometheus")]["state"] == "ok"
    dashboard = objects[("dashboard", "AdvancedGPUObservability")]
    assert dashboard["state"] == "missing" and dashboard["fields"] == []
    assert dashboard["next_step"].startswith(
        "`pulumi up --replace 'urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:GpuObservability"
        "$aks-gpu-observability:index:GpuDashboard$command:local:Command::gpu-dashboard-upload'` writes it again")
