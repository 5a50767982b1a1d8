"""ops/fleet.py, the deploy workflow's fleet scripts, run here as the workflow runs them: the classification of
`pulumi preview --json` outputs (made up in pulumi's PreviewDigest shape), the plan from the per-stack records, and
the Grafana phase against a stand-in `pulumi` that logs when each call runs, one stack failing in each pass.
SIMULATED: GitHub Actions, Pulumi and Azure."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ops import fleet
from tests.support import ROOT

SCRIPT = ROOT / "ops" / "fleet.py"
P = "urn:pulumi:{s}::aks-gpu-observability::"
URNS = {
    "release": "aks-gpu-observability:index:Pyroscope$kubernetes:helm.sh/v3:Release::pyroscope-release",
    "identity": "aks-gpu-observability:index:Pyroscope$command:local:Command::pyroscope-private-link-identity",
    "service": "aks-gpu-observability:index:Pyroscope$kubernetes:core/v1:Service::pyroscope-private-link",
    "wait": "aks-gpu-observability:index:GrafanaPrivateLink$command:local:Command::grafana-private-link-wait-for-pls",
    "mpe": ("aks-gpu-observability:index:GrafanaPrivateLink$azure-native:dashboard:ManagedPrivateEndpoint"
            "::grafana-private-link-mpe"),
    "approve": ("aks-gpu-observability:index:GrafanaPrivateLink$command:local:Command"
                "::grafana-private-link-approve-connection"),
    "refresh": "aks-gpu-observability:index:GrafanaPrivateLink$command:local:Command::grafana-private-link-refresh",
    "pyroscope": "aks-gpu-observability:index:GrafanaDatasources$command:local:Command::grafana-datasources-pyroscope",
    "prometheus": ("aks-gpu-observability:index:GrafanaDatasources$command:local:Command"
                   "::grafana-datasources-prometheus"),
    "dashboard": "aks-gpu-observability:index:GpuDashboard$command:local:Command::gpu-dashboard-upload",
    "grafana": "aks-gpu-observability:index:ManagedGrafana$azure-native:dashboard:Grafana::managed-grafana-grafana",
}


def preview(stack: str = "a", **ops: str) -> dict:
    """A PreviewDigest (pulumi/pulumi v3.230.0 pkg/display/json.go): every resource of URNS, `same` unless named."""
    return {"steps": [{"op": ops.get(key, "same"), "urn": P.format(s=stack) + urn} for key, urn in URNS.items()],
            "changeSummary": {}}


@pytest.mark.parametrize("ops,kind", [
    ({key: "create" for key in URNS}, "grafana"),                    # first rollout
    ({"release": "update"}, "parallel"),                             # chart bump
    ({}, "none"),                                                    # nothing to do
    ({"mpe": "update"}, "grafana"),                                  # excluded: a SameStep under --exclude
    ({"refresh": "create", "pyroscope": "create"}, "grafana"),       # the refresh POST holds the workspace
    ({"grafana": "update"}, "grafana"),
    # Anything but a create or an update of a conflicting resource: the whole `pulumi up` is serialized (a
    # delete-first replacement upstream deletes and re-creates it despite --exclude; fleet.SERIAL_WHY).
    ({"mpe": "replace"}, "serial"),
    ({"mpe": "delete"}, "serial"),
    ({"mpe": "discard"}, "serial"),
    ({"refresh": "replace"}, "grafana"),                             # a new refresh script: create-first, no cascade
    ({"refresh": "delete"}, "serial"),
    ({"refresh": "replace", "approve": "replace"}, "grafana"),       # an approval re-run (a new PLS id)
    ({"grafana": "delete"}, "serial"),
    ({"release": "replace", "mpe": "replace", "approve": "replace", "refresh": "replace"}, "serial"),
    ({"pyroscope": "update", "prometheus": "update", "dashboard": "replace", "approve": "update"}, "parallel"),
    ({"release": "read", "mpe": "read"}, "none"),
])
def test_a_preview_is_classified_by_whether_it_writes_to_grafanas_resource_provider(ops, kind):
    assert fleet.classify_preview(preview(**ops))[0] == kind


def replacement_preview(show_steps: bool) -> dict:
    """`pulumi preview --json` of a new PLS name, which replaces the private link Service delete-first (its
    replace_on_changes: the PLS annotations) and the PLS's identity, shaped as pulumi/pulumi v3.230.0 emits it:
    pkg/backend/display/json.go appends one PreviewStep (pkg/display/json.go: op, urn, provider, oldState, newState,
    diffReasons, replaceReasons, detailedDiff) per ResourcePreEvent that ``shouldShow``
    (pkg/backend/display/display.go): no ``same`` steps without --show-sames; only the logical ``replace`` step of a
    replacement unless --show-replacement-steps, which adds ``delete-replaced``/``create-replacement``. The wait and
    the MPE are replaced because their replaceWith names the Service and the identity (step_generator.go
    findResourcesReplacedWith), the approval and the refresh with them."""
    def step(op, key, **extra):
        urn = P.format(s="a") + URNS[key]
        state = {"urn": urn, "custom": True, "type": urn.split("::")[2].rsplit("$", 1)[-1]}
        return {"op": op, "urn": urn, "provider": "urn:pulumi:a::aks-gpu-observability::pulumi:providers:x::default",
                "oldState": state, "newState": state, "detailedDiff": None, **extra}
    ops = [("identity", ["triggers"]), ("service", ["metadata"]), ("wait", ["triggers"]), ("mpe", []),
           ("approve", []), ("refresh", []), ("pyroscope", [])]
    steps = []
    for key, reasons in ops:
        if show_steps:
            steps.append(step("delete-replaced", key))
        steps.append(step("replace", key, replaceReasons=reasons, diffReasons=reasons))
        if show_steps:
            steps.append(step("create-replacement", key, replaceReasons=reasons))
    return {"config": {"aks-gpu-observability:privateLinkServiceName": "pyroscope-pls-2"}, "steps": steps,
            "duration": 4200000000, "changeSummary": {"replace": 7, "same": 9}}


@pytest.mark.parametrize("show_steps", [False, True])
def test_a_delete_first_private_link_service_replacement_sends_the_whole_stack_to_the_serialized_phase(tmp_path,
                                                                                                      show_steps):
    """Such a stack runs no `pulumi up` in phase 1 (the workflow's up step runs for parallel and grafana only); the
    plan puts it in a chunk's `whole` list and the Grafana phase runs its whole `pulumi up` in pass 1, one stack at a
    time, between the other stacks' endpoint writes, and no second `pulumi up` in pass 2 (only verify)."""
    kind, reasons = fleet.classify_preview(replacement_preview(show_steps))
    assert kind == "serial" and any(r.startswith("replace grafana-private-link-mpe") for r in reasons), reasons
    classify(tmp_path, "a", preview("a", mpe="create"))
    classify(tmp_path, "b",
             json.loads(json.dumps(replacement_preview(show_steps)).replace("urn:pulumi:a::", "urn:pulumi:b::")))
    classify(tmp_path, "c", preview("c", mpe="create"))
    sh("plan", "--stacks", json.dumps(list("abc")), str(tmp_path / "records"),
       env={"GITHUB_OUTPUT": str(tmp_path / "p")})
    got = outputs(tmp_path / "p")
    assert json.loads(got["endpoints"]) == list("abc")
    assert json.loads(got["chunks"]) == [{"chunk": 1, "stacks": list("abc"), "whole": ["b"]}]
    done, calls, got, summary = grafana_phase(tmp_path, list("abc"), whole=["b"])
    assert done.returncode == 0 and json.loads(got["ok"]) == list("abc"), summary
    pass1 = [c for c in calls if c["kind"] == "target" or (c["kind"] == "up" and c["stack"] == "b")]
    assert sorted((c["stack"], c["kind"]) for c in pass1) == [("a", "target"), ("b", "up"), ("c", "target")]
    assert overlaps(writes(pass1)) == [], "pass 1, the whole up included: one Grafana write at a time"
    b = next(c for c in pass1 if c["stack"] == "b")
    assert "--target" not in b["args"] and b["locked"] is None, "fleet.py holds the lock around a whole up"
    later = [c for c in calls if c not in pass1]
    assert min(c["start"] for c in later) >= max(c["end"] for c in pass1)
    assert sorted((c["stack"], c["kind"]) for c in later) == [("a", "up"), ("a", "verify"), ("b", "verify"),
                                                               ("c", "up"), ("c", "verify")]


def test_the_chunks_keep_the_order_and_weigh_a_whole_up_more():
    stacks = [f"s{i}" for i in range(60)]
    got = fleet.chunks(stacks, set())
    assert [len(c["stacks"]) for c in got] == [25, 25, 10] and [s for c in got for s in c["stacks"]] == stacks
    assert [c["chunk"] for c in got] == [1, 2, 3] and all(c["whole"] == [] for c in got)
    got = fleet.chunks(stacks[:30], {"s0", "s1", "s29"})
    assert [len(c["stacks"]) for c in got] == [21, 9] and got[0]["whole"] == ["s0", "s1"] and got[1]["whole"] == ["s29"]
    assert fleet.chunks([], set()) == []


def test_the_exclude_globs_match_what_pulumi_would_and_only_the_conflicting_resources():
    """pulumi's glob: ** any text, * no colon (pkg/resource/deploy/deployment.go UrnTargets.getMatcher), on the URNs of
    the offline plan of the dev stack (which has no Grafana resource) and of one that creates its Grafana."""
    from offline.program import run

    for sets, expected in (({}, {"grafana-private-link-mpe", "grafana-private-link-refresh"}),
                           ({"createGrafana": "true"}, {"grafana-private-link-mpe", "grafana-private-link-refresh"})):
        plan = run("dev", sets)
        hit = {r.urn.rsplit("::", 1)[1] for r in plan.resources if fleet.conflicting(r.urn)}
        grafanas = {r.urn.rsplit("::", 1)[1] for r in plan.resources if r.type == "azure-native:dashboard:Grafana"}
        assert hit == expected | grafanas
        assert bool(grafanas) == bool(sets)
    assert not fleet.glob_match("**azure-native:dashboard:Grafana::*", P.format(s="a") + URNS["mpe"])
    assert fleet.glob_match("**azure-native:dashboard:Grafana::*", P.format(s="a") + URNS["grafana"])


def sh(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], **(env or {})}, timeout=120)


def outputs(path) -> dict:
    text, found = path.read_text(), {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            key, marker = line.split("<<")
            found[key] = "\n".join(iter(lambda: next(lines), marker))
        else:
            key, value = line.split("=", 1)
            found[key] = value
    return found


def classify(tmp_path, stack, digest, attempt="1", outcome="success"):
    safe = stack.replace("/", "_")
    (tmp_path / f"{safe}.preview.json").write_text(json.dumps(digest) if digest is not None else "")
    out = tmp_path / f"out-{safe}-{attempt}"
    done = sh("classify", str(tmp_path / f"{safe}.preview.json"), "--stack", stack, "--grafana", "rg/amg",
              "--out", str(tmp_path / "records"), "--outcome", outcome,
              env={"GITHUB_OUTPUT": str(out), "GITHUB_RUN_ATTEMPT": attempt})
    assert done.returncode == 0, done.stderr
    return outputs(out)


def test_classify_writes_the_record_and_the_outputs_the_workflow_reads(tmp_path):
    got = classify(tmp_path, "acme/gpu/east-1", preview("east-1", **{k: "create" for k in URNS}))
    assert got["class"] == "grafana" and got["artifact"] == "fleet-acme_gpu_east-1-attempt-1"
    assert got["exclude"].splitlines() == list(fleet.CONFLICTING)
    record = json.loads((tmp_path / "records" / f"{got['artifact']}.json").read_text())
    assert record["stack"] == "acme/gpu/east-1" and record["class"] == "grafana" and record["attempt"] == 1
    assert "create grafana-private-link-mpe" in record["reasons"]
    assert classify(tmp_path, "b", None)["class"] == "failed"                       # unreadable preview
    assert classify(tmp_path, "c", preview("c"), outcome="failure")["class"] == "failed"


def test_the_plan_lists_the_stacks_that_need_the_grafana_phase_newest_attempt_first(tmp_path):
    classify(tmp_path, "a", preview("a", mpe="create"))
    classify(tmp_path, "b", preview("b", release="update"))
    classify(tmp_path, "c", preview("c", mpe="create"), outcome="failure")          # its first up failed
    classify(tmp_path, "c", preview("c", mpe="create"), attempt="2")                # the re-run got through
    classify(tmp_path, "d", preview("d"))
    classify(tmp_path, "other-grafana", preview("x", mpe="create"))
    out, summary = tmp_path / "plan-out", tmp_path / "summary.md"
    done = sh("plan", "--stacks", json.dumps(["a", "b", "c", "d", "e"]), str(tmp_path / "records"),
              env={"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 0, done.stderr
    got = outputs(out)
    assert json.loads(got["endpoints"]) == ["a", "c"] and json.loads(got["failed"]) == ["e"]
    assert "| e | failed | no record" in summary.read_text()
    assert "| b | parallel | update pyroscope-release |" in summary.read_text()


STAND_IN = r'''#!/usr/bin/env python3
"""Stand-in pulumi / python: logs each call's start and end (seconds) to $FLEET_LOG; fails as $FAIL says. A stack
whose plain `pulumi up` succeeded has converged ($FLEET_STATE): its `pulumi preview --json` shows nothing to do;
another's shows its endpoint created (or replaced, for the stacks in $SERIAL)."""
import json, os, sys, time
args = sys.argv[1:]
stack = args[args.index("--stack") + 1]
kind = ("preview" if args[0] == "preview" else "verify" if "ops.verify" in args
        else ("target" if "--target" in args else "up"))
start, write, lock = time.monotonic(), None, os.environ.get("FLEET_GRAFANA_LOCK")
if kind == "target" and lock:  # start and lookups; the endpoint write under the lock, as the program takes it; approval
    import fcntl
    time.sleep(float(os.environ.get("SLEEP_LOOKUPS", "0.05")))
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    write = [time.monotonic()]
    time.sleep(float(os.environ.get("SLEEP_WRITE", "0.05")))
    write.append(time.monotonic())
    os.close(fd)
    time.sleep(float(os.environ.get("SLEEP_APPROVAL", "0.05")))
else:
    time.sleep(float(os.environ.get("SLEEP_" + kind.upper(), "0.05")))
with open(os.environ["FLEET_LOG"], "a") as fh:
    fh.write(json.dumps({"stack": stack, "kind": kind, "start": start, "end": time.monotonic(), "args": args,
                         "write": write, "locked": lock, "azdir": os.environ.get("AZURE_CONFIG_DIR")}) + "\n")
failed = f"{stack}:{kind}" in os.environ.get("FAIL", "").split(",")
state = os.environ["FLEET_STATE"]
if kind == "up" and not failed:
    with open(state, "a") as fh:
        fh.write(stack + "\n")
if kind == "preview":
    done = os.path.exists(state) and stack in open(state).read().split()
    op = "same" if done else ("replace" if stack in os.environ.get("SERIAL", "").split(",") else "create")
    urn = (f"urn:pulumi:{stack}::aks-gpu-observability::aks-gpu-observability:index:GrafanaPrivateLink"
           "$azure-native:dashboard:ManagedPrivateEndpoint::grafana-private-link-mpe")
    print(json.dumps({"steps": [] if done else [{"op": op, "urn": urn}],
                      "changeSummary": {"same": 14} if done else {op: 1}}))
sys.exit(1 if failed else 0)
'''


AZ_STAND_IN = r'''#!/usr/bin/env python3
"""Stand-in az: logs the call to $FLEET_LOG (kind "az")."""
import json, os, sys, time
now = time.monotonic()
with open(os.environ["FLEET_LOG"], "a") as fh:
    fh.write(json.dumps({"stack": "", "kind": "az", "start": now, "end": now, "args": sys.argv[1:], "write": None,
                         "locked": None}) + "\n")
'''


def grafana_phase(tmp_path, stacks, fail="", parallel="3", attempt="1", whole=None, serial="", relogin="",
                  relogin_after="2400"):
    """`fleet.py endpoints` in run attempt `attempt` against the stand-in, whose converged stacks persist between
    calls in one tmp_path (as the stacks' state does between a run's attempts)."""
    stand_in, az = tmp_path / "stand-in", tmp_path / "az"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    az.write_text(AZ_STAND_IN)
    az.chmod(0o755)
    log, out, summary = tmp_path / "calls.jsonl", tmp_path / "phase-out", tmp_path / "phase.md"
    for path in (log, out, summary):
        path.unlink(missing_ok=True)
    done = sh("endpoints", "--stacks", json.dumps(stacks), *(("--whole", json.dumps(whole)) if whole else ()),
              env={"PULUMI": str(stand_in), "PYTHON": str(stand_in), "FLEET_LOG": str(log), "FAIL": fail,
                   "FLEET_PARALLEL": parallel, "SLEEP_WRITE": "0.15", "SLEEP_APPROVAL": "0.1", "SLEEP_UP": "0.3",
                   "FLEET_GRAFANA_LOCK": str(tmp_path / "grafana.lock"), "FLEET_RELOGIN": relogin,
                   "FLEET_RELOGIN_AFTER": relogin_after, "AZ": str(az), "GRAFANA": "rg-obs/amg-shared",
                   "FLEET_WHOLE_GRACE": "0.05", "RUNNER_TEMP": str(tmp_path),
                   "ARM_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000001",
                   "FLEET_STATE": str(tmp_path / "converged"), "SERIAL": serial, "GITHUB_RUN_ATTEMPT": attempt,
                   "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)})
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, [c for c in calls if c["kind"] != "az"], outputs(out), summary.read_text()


def az_calls(tmp_path):
    """The stand-in az's calls in the last grafana_phase (fleet.py's one refresh)."""
    log = tmp_path / "calls.jsonl"
    return [c for c in map(json.loads, log.read_text().splitlines()) if c["kind"] == "az"]


def overlaps(calls):
    return [(a["stack"], b["stack"]) for i, a in enumerate(calls) for b in calls[i + 1:]
            if a["start"] < b["end"] and b["start"] < a["end"]]


def at_once(calls) -> int:
    """The most calls running at the same moment."""
    events = sorted([(c["start"], 1) for c in calls] + [(c["end"], -1) for c in calls], key=lambda e: (e[0], e[1]))
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def writes(calls):
    """The Grafana writes: each targeted up's locked part, and a whole up of pass 1 (the lock held around it)."""
    return [{**c, "start": c["write"][0], "end": c["write"][1]} if c["write"] else c for c in calls]


def test_the_grafana_phase_serializes_the_endpoint_writes_and_isolates_a_failing_stack(tmp_path):
    stacks = [f"s{i}" for i in range(6)]
    done, calls, got, summary = grafana_phase(tmp_path, stacks, fail="s1:target,s3:up")
    assert done.returncode == 1, "a failed stack fails the job"
    targets = [c for c in calls if c["kind"] == "target"]
    assert sorted(c["stack"] for c in targets) == stacks and all(c["write"] for c in targets)
    assert overlaps(writes(targets)) == [], "pass 1: one endpoint write at a time"
    assert overlaps(targets), "pass 1: the next stack starts, and the last one's approval runs, during a write"
    assert at_once(targets) <= fleet.PASS1_WORKERS
    assert any(a["write"][1] <= b["write"][0] < a["end"] for a in targets for b in targets), "approval behind a write"
    for call in targets:
        assert [call["args"][i + 1] for i, a in enumerate(call["args"]) if a == "--target"] == list(
            fleet.PASS1_TARGETS)
        assert "--policy-pack" in call["args"] and "--skip-preview" in call["args"]
    ups = [c for c in calls if c["kind"] == "up"]
    assert min(c["start"] for c in ups) >= max(c["end"] for c in targets), "no refresh while an endpoint is written"
    assert all(c["locked"] is None for c in ups), "pass 2 takes no lock"
    refresh = az_calls(tmp_path)
    assert len(refresh) == 1 and refresh[0]["start"] >= max(c["end"] for c in targets), "one refresh, after pass 1"
    assert refresh[0]["args"] == [
        "rest", "--method", "post", "--url", "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/"
        "rg-obs/providers/Microsoft.Dashboard/grafana/amg-shared/refreshManagedPrivateEndpoints?api-version=2024-10-01",
        "--output", "none"]
    assert sorted(c["stack"] for c in ups) == ["s0", "s2", "s3", "s4", "s5"], "s1 (pass 1 failed) is skipped"
    assert at_once(ups) <= 3
    assert len(overlaps(ups)) > 0, "pass 2 runs several stacks at once"
    assert sorted(c["stack"] for c in calls if c["kind"] == "verify") == ["s0", "s2", "s4", "s5"]
    assert json.loads(got["ok"]) == ["s0", "s2", "s4", "s5"] and json.loads(got["failed"]) == ["s1", "s3"]
    assert "| s1 | failed: managed private endpoint or approval" in summary
    assert "| s3 | failed: refresh or Pyroscope datasource" in summary
    assert "::error title=Stack s1 failed::" in done.stdout and "::error title=Stack s3 failed::" in done.stdout


@pytest.mark.parametrize("after", ["2400", "0"])
def test_az_signs_in_again_only_when_the_last_sign_in_is_old_enough_one_stack_at_a_time(tmp_path, after):
    """FLEET_RELOGIN runs when the last sign-in is older than FLEET_RELOGIN_AFTER: within a fresh job never; with 0,
    before a pulumi up whenever no other stack is signing in (at most the 4 stacks' two ups), never two at once."""
    count, busy = tmp_path / "relogins", tmp_path / "signing-in"
    relogin = (f"if [ -e {busy} ]; then echo twice >> {count}; fi; touch {busy}; sleep 0.2; "
               f'echo "$AZURE_CONFIG_DIR" >> {count}; rm {busy}')
    done, calls, got, summary = grafana_phase(tmp_path, list("abcd"), relogin=relogin, relogin_after=after)
    assert done.returncode == 0, summary
    lines = count.read_text().split() if count.exists() else []
    assert "twice" not in lines
    assert len(lines) == int(got["relogins"]) and f"Azure sign-ins renewed: {len(lines)}" in summary
    assert (len(lines) == 0) if after == "2400" else (1 <= len(lines) <= 8)
    # each renewal signs in into a new, empty config directory (new tokens, no file a running az reads rewritten);
    # the processes started after it use it
    assert len(set(lines)) == len(lines) and all(line.startswith(str(tmp_path / "az-sign-in-")) for line in lines)
    used = {c["azdir"] for c in calls}
    assert used == {None} if after == "2400" else (used - {None}) <= set(lines) and used - {None}


def test_a_rerun_redoes_only_what_failed(tmp_path):
    """Run 1: four stacks of one Grafana, first rollout; b fails its endpoint write, c its refresh. Run 2 (re-run):
    the previews of a and d show no change (they converged), b and c still their Grafana steps: only b and c go
    through the Grafana phase again, and both converge."""
    first = {k: "create" for k in URNS}
    for stack in "abcd":
        classify(tmp_path, stack, preview(stack, **first))
    done = sh("plan", "--stacks", json.dumps(list("abcd")), str(tmp_path / "records"),
              env={"GITHUB_OUTPUT": str(tmp_path / "p1")})
    assert done.returncode == 0
    done, calls, got, _ = grafana_phase(tmp_path, json.loads(outputs(tmp_path / "p1")["endpoints"]),
                                        fail="b:target,c:up")
    assert done.returncode == 1 and json.loads(got["ok"]) == ["a", "d"]
    # the re-run: previews now
    classify(tmp_path, "a", preview("a"), attempt="2")
    classify(tmp_path, "b", preview("b", mpe="create", approve="create", refresh="create", pyroscope="create"),
             attempt="2")
    classify(tmp_path, "c", preview("c", refresh="create", pyroscope="create"), attempt="2")
    classify(tmp_path, "d", preview("d"), attempt="2")
    sh("plan", "--stacks", json.dumps(list("abcd")), str(tmp_path / "records"),
       env={"GITHUB_OUTPUT": str(tmp_path / "p2")})
    again = json.loads(outputs(tmp_path / "p2")["endpoints"])
    assert again == ["b", "c"]
    done, calls, got, _ = grafana_phase(tmp_path, again)
    assert done.returncode == 0 and json.loads(got["ok"]) == ["b", "c"]
    assert {c["stack"] for c in calls} == {"b", "c"}


def test_no_stack_waits_for_another_when_none_touches_grafanas_provider(tmp_path):
    """A chart bump or a run with nothing to do: the plan lists no stack for the Grafana phase, so the workflow's
    `grafana` job (if: ... != '[]') does not run and nothing is serialized."""
    for stack in "ab":
        classify(tmp_path, stack, preview(stack, release="update"))
    classify(tmp_path, "c", preview("c"))
    sh("plan", "--stacks", json.dumps(list("abc")), str(tmp_path / "records"),
       env={"GITHUB_OUTPUT": str(tmp_path / "p")})
    assert outputs(tmp_path / "p")["endpoints"] == "[]"


WORKFLOW = ROOT / ".github" / "workflows" / "deploy-stacks.yml"


def _dev_plan():
    from offline.program import run

    return {r.urn.rsplit("::", 1)[1]: r for r in run("dev").resources}


NAMESPACE_URN = "aks-gpu-observability:index:GadgetNamespace$kubernetes:core/v1:Namespace::gadget-namespace"


@pytest.mark.parametrize("cause", ["service", "namespace"])
def test_a_delete_first_replacement_upstream_of_the_endpoint_is_not_run_in_the_parallel_phase(cause):
    """Upstream (pulumi/pulumi v3.230.0, commit ae2e2698, pkg/resource/deploy/step_generator.go):

    - L1888-1975, ``continueStepsFromDiff``, ``if deleteBeforeReplace {``: before a delete-first replacement of X the
      engine calls ``findResourcesReplacedWith(X)`` (L1915, L3114: every new *and old* state whose ``ReplaceWith``
      names X) and emits a ``NewDeleteReplacementStep`` for each (L1965). There is no ``isExcludedFromUpdate`` /
      ``isIncludedInOperation`` check anywhere in that loop.
    - L962 ``_, recreating := sg.deletes[urn]`` and L1364 ``if recreating {``: a resource so deleted is re-created
      (``NewReplaceStep`` + ``NewCreateReplacementStep``) when the program registers it, and that branch comes *before*
      the exclude bookkeeping (L1399) and before the ``if !isTargeted`` SameStep of case 3; for an untargeted
      resource the check is stubbed to the OLD inputs (L1186-1191), so it is re-created from the old inputs.
    - The engine's own tests cover the cascade (pkg/engine/lifecycletest/replace_with_test.go
      ``TestReplaceWithDeleteBeforeReplace``: replacing A delete-first deletes and re-creates B, whose ReplaceWith
      names A) but no test combines it with ``Excludes`` (target_test.go ``TestExcludeTarget``/``TestExcludeChildren``
      use plain updates).

    Ours: the private link Service ``pyroscope-private-link`` (the one AKS makes the PLS for) is
    ``delete_before_replace=True`` with ``replace_with=[namespace]`` (components/pyroscope.py), and the MPE has
    ``replace_with=[private link Service, identity]`` (components/grafana_private_link.py). A preview that replaces
    the Service (a new PLS name or group; or the namespace, which replaces the Service) shows the MPE replaced too.
    Run in the ``cluster`` job's ``pulumi up --exclude <MPE, Grafana, refresh> --exclude-dependents``, *in parallel
    with every other stack*, the Service's delete-first replacement would delete the MPE (ARM DELETE on
    Microsoft.Dashboard) and re-create it (PUT) anyway: the very writes docs/fleet.md says must never overlap on one
    Grafana (409 ConflictInProcessing, not retried). So fleet.py sends such a stack wholly to the serialized phase
    (or keeps the cause out of the parallel one)."""
    plan = _dev_plan()
    mpe, service, namespace = plan["grafana-private-link-mpe"], plan["pyroscope-private-link"], plan["gadget-namespace"]
    assert service.urn in mpe.replace_with, "precondition: the MPE is replaced with the private link Service"
    assert service.options.get("deleteBeforeReplace"), "precondition: the Service is delete-before-replace"
    assert namespace.urn in service.replace_with and namespace.options.get("deleteBeforeReplace"), (
        "precondition: the Service is replaced with the namespace, which is delete-before-replace")
    ops = {"identity": "replace", "service": "replace", "mpe": "replace", "wait": "replace", "approve": "replace",
           "refresh": "replace", "pyroscope": "replace"}
    cause_urn = P.format(s="a") + URNS["service"]
    if cause == "namespace":  # everything in the namespace goes with it, the release too
        ops = {**ops, "release": "replace"}
        ops.pop("identity")
        cause_urn = P.format(s="a") + NAMESPACE_URN
    digest = preview(**ops)
    if cause == "namespace":
        digest["steps"].insert(0, {"op": "replace", "urn": cause_urn})
    kind, _ = fleet.classify_preview(digest)
    phase1_runs_up = kind in ("parallel", "grafana")
    cause_kept_out_of_phase1 = any(fleet.glob_match(glob, cause_urn) for glob in fleet.CONFLICTING)
    assert not phase1_runs_up or cause_kept_out_of_phase1, (
        f"class {kind!r}: phase 1 runs `pulumi up --exclude {' --exclude '.join(fleet.CONFLICTING)} "
        f"--exclude-dependents` in parallel, and the {cause}'s delete-first replacement deletes and re-creates the "
        "excluded MPE anyway (step_generator.go findResourcesReplacedWith + recreating)")


def test_a_delete_first_release_replacement_leaves_the_endpoint_alone_and_runs_in_the_parallel_phase():
    """Upstream (pulumi/pulumi step_generator.go): a delete-first replacement of X deletes what names X in its
    ``replaceWith`` (``findResourcesReplacedWith``) and the dependents ``calculateDependentReplacements`` finds, which
    takes only a custom resource one of whose inputs reads a replaced resource ("If none of this resource's
    properties depend on a resource in the replace set ... this resource does not need to be replaced").

    Ours: the release (delete-first, a new mode or persistence) is named in no private link step's ``replaceWith``, and
    the private link Service only starts after it (``depends_on``): no input of the Service reads the release. So a
    preview that replaces the release alone touches neither the Service nor the MPE, and the stack runs its whole
    ``pulumi up`` in phase 1, beside the others, without waiting for the Grafana phase."""
    plan = _dev_plan()
    release, service = plan["pyroscope-release"], plan["pyroscope-private-link"]
    assert release.options.get("deleteBeforeReplace"), "precondition: the release is delete-before-replace"
    for name in ("pyroscope-private-link", "grafana-private-link-wait-for-pls", "grafana-private-link-mpe"):
        assert release.urn not in plan[name].replace_with, name
    assert release.urn in service.dependencies, "precondition: the Service starts after the release"
    assert all(release.urn not in deps for deps in service.property_dependencies.values()), (
        "an input of the Service reads the release: its delete-first replacement would replace the Service too")
    assert fleet.classify_preview(preview(release="replace")) == ("parallel", ["replace pyroscope-release"])


def test_the_plan_job_can_download_an_earlier_attempts_records_on_a_partial_rerun():
    """Upstream: GitHub Docs, "Re-running workflows and jobs": "When you re-run failed jobs or a specific job, GitHub
    also re-runs the jobs that depend on them. Jobs that aren't included keep their outputs from the previous attempt".
    So after one ``cluster`` job fails, "Re-run failed jobs" re-runs it and ``plan``, but not the other ``cluster``
    jobs: their ``fleet-<stack>-attempt-1`` artifacts are from attempt 1. actions/download-artifact without
    ``github-token`` uses the runner's internal artifact service, which resolves downloads against the *current* run
    attempt: folo-rs/folo#423 (``actions/download-artifact@v4``, "(404) Not Found: workflow run not found" whenever a
    subset of jobs was re-run), actions/download-artifact#486 (ListArtifacts lists what GetSignedArtifactURL then
    refuses), and MeshInspector/MeshLib#6474 (the fix: pass ``github-token`` and ``run-id`` so the action uses the
    REST API, where artifacts are scoped to the run; needs ``actions: read``). Also orgs/community discussion #52505:
    with a reusable workflow called from a matrix (deploy.yml -> deploy-stacks.yml) "Re-run failed jobs" has been
    seen to re-run only the failed jobs, not their dependents.

    Ours: deploy-stacks.yml's ``plan`` job downloads ``fleet-*`` with actions/download-artifact, passing
    ``github-token`` and ``run-id``, with ``actions: read``: docs/fleet.md ("Failures and re-runs") and
    tests/ops/test_fleet.py::test_a_rerun_redoes_only_what_failed rely on that download succeeding on a re-run
    (without it the plan job fails, and ``grafana`` is skipped: ``endpoints`` empty)."""
    plan = yaml.safe_load(WORKFLOW.read_text())["jobs"]["plan"]
    download = [s for s in plan["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    assert download, "the plan job downloads the records"
    inputs = download[0].get("with", {})
    assert "github-token" in inputs and "run-id" in inputs, (
        "download-artifact without github-token/run-id cannot read an earlier attempt's artifacts on a partial re-run")
    assert plan.get("permissions", {}).get("actions") in ("read", "write")


def test_rerunning_the_failed_grafana_job_redoes_only_the_stacks_that_failed(tmp_path):
    """Upstream: GitHub Docs, "Re-running workflows and jobs": a re-run of failed jobs re-runs them and their
    dependents; "Jobs that aren't included keep their outputs from the previous attempt, which the newly run jobs can
    use". When every ``cluster`` job passed and only ``grafana`` failed, the re-run re-runs ``grafana`` alone, and it
    reads ``needs.plan.outputs.endpoints`` of attempt 1: no preview runs again.

    Ours: docs/fleet.md ("Failures and re-runs") says "a stack that already converged previews as **none** and is
    skipped, so only what failed is redone". In this path ``fleet.py endpoints`` gets attempt 1's whole list; on a
    re-run it previews each listed stack first, so only the failed one is written and verified again, not every
    stack that had already converged (``pulumi up --target``, one stack after another, each with a re-login, then the
    full ``pulumi up`` + verify), which would not fit the 120-minute job budget docs/fleet.md's Limits find too small
    for ~35+ stacks."""
    first = {k: "create" for k in URNS}
    for stack in "abcd":
        classify(tmp_path, stack, preview(stack, **first))
    sh("plan", "--stacks", json.dumps(list("abcd")), str(tmp_path / "records"),
       env={"GITHUB_OUTPUT": str(tmp_path / "p1")})
    stale = json.loads(outputs(tmp_path / "p1")["endpoints"])
    done, calls, got, _ = grafana_phase(tmp_path, stale, fail="b:target")
    assert done.returncode == 1 and json.loads(got["ok"]) == ["a", "c", "d"]
    # "Re-run failed jobs": only `grafana` re-runs, with plan's outputs from attempt 1 (GitHub Docs above), in run
    # attempt 2 (GitHub Docs, "Variables reference": GITHUB_RUN_ATTEMPT "increments with each re-run").
    # The re-run runs as GitHub runs it, with GITHUB_RUN_ATTEMPT=2 (attempt 1 twice could not be told apart from the
    # first run); each listed stack is previewed again on a re-run, so previews of a, c, d are expected: what must
    # not happen is their writes and verify.
    done, calls, got, _ = grafana_phase(tmp_path, stale, attempt="2")
    writes = [c for c in calls if c["kind"] != "preview"]
    assert {c["stack"] for c in writes} == {"b"}, (
        f"the re-run redid {sorted({c['stack'] for c in writes})}, not only the failed stack b")
    assert sorted(c["stack"] for c in calls if c["kind"] == "preview") == list("abcd")
    assert done.returncode == 0 and json.loads(got["ok"]) == ["b"] and json.loads(got["skipped"]) == ["a", "c", "d"]


def test_phase_1_runs_a_group_of_stacks_at_once_and_records_each(tmp_path):
    """`fleet.py cluster` (the cluster job, one group of stacks): every stack previews at once; a stack of class
    grafana runs pulumi up without the conflicting resources and their dependents, a serial one none, one with nothing
    to do only verify; each is recorded, a failed up is recorded as failed and fails the job, the others go on."""
    stand_in = tmp_path / "stand-in"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    state, log, out, records = tmp_path / "converged", tmp_path / "calls.jsonl", tmp_path / "o", tmp_path / "records"
    state.write_text("c\n")
    done = sh("cluster", "--stacks", json.dumps(list("abcd")), "--grafana", "rg/amg", "--out", str(records),
              env={"PULUMI": str(stand_in), "PYTHON": str(stand_in), "FLEET_LOG": str(log), "FAIL": "d:up",
                   # Each preview lasts long enough for all four to start under the suite's load (5 of 6 overlaps
                   # at 0.5 s and a load of 18).
                   "SERIAL": "b", "FLEET_STATE": str(state), "SLEEP_PREVIEW": "3", "GITHUB_RUN_ATTEMPT": "2",
                   "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")})
    assert done.returncode == 1, "a failed stack fails the job"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    previews = [c for c in calls if c["kind"] == "preview"]
    assert sorted(c["stack"] for c in previews) == list("abcd") and len(overlaps(previews)) == 6, "all at once"
    assert all(" ".join(fleet.POLICY_FLAGS) in " ".join(c["args"]) for c in calls if c["kind"] != "verify"), (
        "every preview and up of the deploy holds the stack to the production rules")
    ups = {c["stack"]: c["args"] for c in calls if c["kind"] == "up"}
    assert sorted(ups) == ["a", "d"], "serial: no up in phase 1; nothing to do: no up"
    excluded = [ups["a"][i + 1] for i, arg in enumerate(ups["a"]) if arg == "--exclude"]
    assert excluded == list(fleet.CONFLICTING) and "--exclude-dependents" in ups["a"]
    verified = sorted(c["stack"] for c in calls if c["kind"] == "verify")
    assert verified == ["c"], "grafana and serial: their chunk verifies them"
    got = {r["stack"]: r for r in map(json.loads, (p.read_text() for p in records.glob("*.json")))}
    assert {s: r["class"] for s, r in got.items()} == {"a": "grafana", "b": "serial", "c": "none", "d": "failed"}
    assert {r["attempt"] for r in got.values()} == {2} and sorted(p.name for p in records.glob("*.json")) == [
        f"fleet-{s}-attempt-2.json" for s in "abcd"]
    assert outputs(out)["artifact"] == "fleet-a-attempt-2-group"
    assert "::error title=Stack d failed::pulumi up failed" in done.stdout
    assert "| d | failed | pulumi up failed" in (tmp_path / "summary.md").read_text()


def test_one_stacks_fault_in_phase_1_loses_no_record_of_its_group(tmp_path, monkeypatch):
    """An exception in one stack's thread is that stack's failure: the group's records are all written and the
    artifact named, so the plan job still sends the others on."""
    def fake_run(command, log, lock, capture=None, env=None):
        stack = command[command.index("--stack") + 1]
        if stack == "b":
            raise RuntimeError("boom")
        if capture is not None:
            capture.append(json.dumps(preview(stack, mpe="create")))
        return True

    monkeypatch.setattr(fleet, "run", fake_run)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "1")
    out = str(tmp_path / "r")
    assert fleet.cluster(["cluster", "--stacks", '["a", "b"]', "--grafana", "rg/amg", "--out", out]) == 1
    got = {r["stack"]: r for r in map(json.loads, (p.read_text() for p in (tmp_path / "r").glob("*.json")))}
    assert got["a"]["class"] == "grafana" and got["b"]["class"] == "failed"
    assert got["b"]["reasons"] == ["phase 1 stopped: RuntimeError: boom"]
    assert outputs(tmp_path / "out")["artifact"] == "fleet-a-attempt-1-group"
