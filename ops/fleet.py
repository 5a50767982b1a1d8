#!/usr/bin/env python3
"""CI: roll a fleet of stacks out onto shared Grafanas, serializing only what conflicts (docs/fleet.md).

    python3 -m ops.fleet cluster --stacks JSON --grafana G --out DIR
    python3 -m ops.fleet classify PREVIEW_JSON --stack S --grafana G --out DIR [--outcome success|failure]
    python3 -m ops.fleet plan --stacks JSON DIR
    python3 -m ops.fleet endpoints --stacks JSON

Owns: ``cluster`` (phase 1 of a group of stacks at once: preview, classify, ``pulumi up``, record, verify;
``artifact=``), ``classify`` (one stack's ``pulumi preview --json`` -> ``none``, ``parallel``, ``grafana``, ``serial``
or ``failed``; writes ``DIR/<artifact>.json`` and ``class=``, ``artifact=``, ``exclude=`` to ``$GITHUB_OUTPUT``),
``plan`` (one Grafana's records -> ``endpoints=``, ``chunks=``, ``failed=`` and a summary table) and ``endpoints``
(the serialized phase: pass 1, ``PASS1_WORKERS`` stacks' endpoint write and approval at once under the Grafana lock,
one write at a time; then one refresh of the Grafana beside pass 2, ``FLEET_PARALLEL`` at once, the rest and
``python -m ops.verify``; on a re-run each stack is previewed first; ``ok=``/``failed=``/``skipped=``/``relogins=``).
Inputs: previews, records, ``GITHUB_*``, ``PULUMI``/``PYTHON``/``AZ`` (the commands), ``GRAFANA`` and
``ARM_SUBSCRIPTION_ID`` (the refresh), ``FLEET_RELOGIN`` (run when the last sign-in is ``FLEET_RELOGIN_AFTER``
seconds old), ``FLEET_GRAFANA_LOCK`` (the lock file; default under ``RUNNER_TEMP``). Errors: a failing stack is
reported and skipped, exit 1 when any failed. Upstream: pulumi/pulumi ``pkg/display/json.go``; what conflicts and why:
docs/decisions/fleet-rollout.md.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

#: Resources whose writes azure-native sends to Grafana's resource provider (pulumi URN globs: ``**`` any text,
#: ``*`` no colon; pulumi/pulumi v3.230.0 ``pkg/resource/deploy/deployment.go`` ``UrnTargets.getMatcher``).
AZURE_NATIVE_GLOBS = ("**azure-native:dashboard:ManagedPrivateEndpoint::*", "**azure-native:dashboard:Grafana::*")
#: The refresh step (``components/grafana_private_link.py``): POST refreshManagedPrivateEndpoints.
REFRESH_GLOB = "**::grafana-private-link-refresh"
CONFLICTING = AZURE_NATIVE_GLOBS + (REFRESH_GLOB,)
NO_CHANGE = {"same", "read", "discard"}
#: The only changes of a conflicting resource that ``--exclude`` keeps out of phase 1 (pulumi/pulumi v3.230.0,
#: ae2e2698, ``pkg/resource/deploy/step_generator.go``): an excluded resource is not targeted (L134
#: ``!sg.isExcludedFromUpdate``), so a new one is not created and an old one's update becomes a SameStep (case 3,
#: ``if !isTargeted``, after L1399), and ``GenerateDeletes`` does not delete it (``forbiddenResourcesToDelete``).
EXCLUDE_SAFE = {"create", "update"}
#: The refresh step may also be replaced (its script or trigger changed): an action command is replaced create-first
#: with no delete command (steps/command.py) and no resource names it in ``replace_with``, so no delete-first cascade
#: starts from it, and excluded it is a SameStep (step_generator.go case 3, ``if !isTargeted``, before any Diff).
REFRESH_SAFE = EXCLUDE_SAFE | {"replace", "create-replacement", "delete-replaced"}
#: Why anything else on a conflicting resource sends the whole stack to the serialized phase (``serial``): a
#: delete-first replacement of X deletes every resource whose ``replaceWith`` names X (``findResourcesReplacedWith``,
#: L1915/L3114) and every dependent it must replace (``calculateDependentReplacements``), with
#: ``NewDeleteReplacementStep`` (L1965) and no exclude check, and re-creates each when the program registers it (L962
#: ``recreating``, L1364, before the exclude bookkeeping at L1399). Our MPE is ``replace_with=[private link Service,
#: its identity]`` and that Service (``pyroscope-private-link``, ``replace_with=[namespace]``) is delete-before-replace
#: (components/grafana_private_link.py, components/pyroscope.py), so a preview that replaces the MPE (``replace``;
#: ``create-replacement``/``delete-replaced`` with --show-replacement-steps, pkg/backend/display/display.go
#: ``shouldShow``) may be that cascade: a new PLS name or group, or a new namespace. Delete, discard and imports are
#: rare and sent the same way rather than reasoned about one by one.
SERIAL_WHY = "the engine writes it despite --exclude (delete-first replacement cascade); whole pulumi up serialized"
CLASSES = ("none", "parallel", "grafana", "serial", "failed")
#: The approval (the stack's own PLS, Microsoft.Network: no Grafana write) joins pass 1, behind the next stack's write.
APPROVAL_GLOB = "**::grafana-private-link-approve-connection"
PASS1_TARGETS = AZURE_NATIVE_GLOBS + (APPROVAL_GLOB,)
#: The lock file's variable, as stack/grafana_lock.py reads it (that module imports pulumi; this one runs on the
#: runner's own python3).
GRAFANA_LOCK_ENV = "FLEET_GRAFANA_LOCK"
#: Pass 1 runs this many stacks' ``pulumi up --target`` at once; the Grafana lock (stack/grafana_lock.py) lets one
#: write at a time, so the next stack's start and lookups and the last one's approval run during a write.
PASS1_WORKERS = 3
#: Pass 2: stacks at once (CPU and memory of one runner; nothing there conflicts but the one refresh, which the rest
#: read and do not repeat).
FLEET_PARALLEL = 8
#: Sign az in again only when the last sign-in is older than this: the tokens its warm-up cached serve at least 55
#: minutes (Entra's 60-90, less MSAL's 5; .ci/warm_tokens.sh; SignIn), which leaves 30 for a run started after the
#: check: a pass-2 up whose refresh retries for its default 900 s, a pass-1 up waiting for the lock and then for the
#: connection (600 s), a serial stack's whole up (about 7 minutes; docs/fleet.md, "Chunks").
RELOGIN_AFTER_SECONDS = 25 * 60
#: How long fleet.py keeps the lock after a serial stack's whole up: its refresh step re-posts a refresh every 4th poll
#: and may exit (it has read the IP) while that one runs, which a PUT would meet as 409 (about one refresh).
WHOLE_GRACE_SECONDS = float(os.environ.get("FLEET_WHOLE_GRACE", "60"))
#: The jobs' limits, enforced by bench/fleet_sim.py: the workflow's timeout-minutes of a chunk and of a cluster job,
#: the Pulumi Cloud token a chunk asks for (token-expiration), all in .github/workflows/deploy-stacks.yml, and az's
#: cached tokens.
CHUNK_TIMEOUT_MINUTES = 120
CLUSTER_TIMEOUT_MINUTES = 90
PULUMI_TOKEN_SECONDS = 7200
AZ_TOKEN_SECONDS = 55 * 60
#: Grafana's ARM API version, as steps/command.py DASHBOARD_API_VERSION (that module imports pulumi; a test holds
#: them equal).
DASHBOARD_API_VERSION = "2024-10-01"
#: Chunks of the serialized phase (docs/fleet.md, "Chunks"): one job each, one after another.
FLEET_CHUNK = 25
SERIAL_WEIGHT = 3


#: The policy pack with its production config: every stack the fleet deploys is held to the production rules, whatever
#: its own ``production`` key says (policy/values.py, ``FORCED``).
POLICY_FLAGS = ["--policy-pack", "policy", "--policy-pack-config", "policy/production.json"]
#: Every pulumi up of the fleet: no prompt, no second preview, the policy pack held to production.
UP_FLAGS = ["--yes", "--skip-preview", "--non-interactive", *POLICY_FLAGS]


def preview_args(stack: str) -> list[str]:
    """``pulumi`` arguments of the preview a stack's class is read from (``--json``: a PreviewDigest)."""
    return ["preview", "--json", "--non-interactive", "--stack", stack, *POLICY_FLAGS]


def glob_match(glob: str, urn: str) -> bool:
    """pulumi's URN glob (see AZURE_NATIVE_GLOBS)."""
    pattern = ".*".join("[^:]*".join(re.escape(part) for part in segment.split("*")) for segment in glob.split("**"))
    return re.fullmatch(pattern, urn) is not None


def conflicting(urn: str) -> bool:
    return any(glob_match(glob, urn) for glob in CONFLICTING)


def classify_preview(preview: dict) -> tuple[str, list[str]]:
    """(class, reasons) of one stack's PreviewDigest (module docstring)."""
    changed = [(step.get("op", ""), step.get("urn", "")) for step in preview.get("steps") or []
               if step.get("op") not in NO_CHANGE or (conflicting(step.get("urn", "")) and step.get("op") == "discard")]
    name = lambda urn: urn.rsplit("::", 1)[-1]  # noqa: E731
    safe = lambda op, urn: op in (REFRESH_SAFE if glob_match(REFRESH_GLOB, urn) else EXCLUDE_SAFE)  # noqa: E731
    serial = [f"{op} {name(urn)}: {SERIAL_WHY}" for op, urn in changed if conflicting(urn) and not safe(op, urn)]
    if serial:
        return "serial", serial
    reasons = [f"{op} {name(urn)}" for op, urn in changed if conflicting(urn)]
    if reasons:
        return "grafana", reasons
    return ("parallel", [f"{op} {name(urn)}" for op, urn in changed]) if changed else ("none", [])


def artifact_name(stack: str, attempt: str) -> str:
    return "fleet-" + re.sub(r"[^A-Za-z0-9_.-]", "_", stack) + f"-attempt-{attempt}"


def output(pairs: dict[str, str]) -> None:
    """GitHub step outputs (multi-line values in the heredoc form), stdout when $GITHUB_OUTPUT is unset."""
    lines = []
    for key, value in pairs.items():
        lines += [f"{key}<<FLEET_EOF", value, "FLEET_EOF"] if "\n" in value else [f"{key}={value}"]
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))


def summary(lines: list[str]) -> None:
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    else:
        print("\n".join(lines), file=sys.stderr)


def option(argv: list[str], name: str, default: str | None = None) -> str:
    if name in argv:
        return argv[argv.index(name) + 1]
    if default is None:
        raise SystemExit(f"fleet: error: {name} is required")
    return default


def write_record(out: Path, stack: str, grafana: str, kind: str, reasons: list[str]) -> str:
    """``out/<artifact>.json``, the record the plan job reads; returns the artifact's name."""
    attempt = os.environ.get("GITHUB_RUN_ATTEMPT", "1")
    name = artifact_name(stack, attempt)
    out.mkdir(parents=True, exist_ok=True)
    record = {"stack": stack, "grafana": grafana, "class": kind, "reasons": reasons, "attempt": int(attempt)}
    (out / f"{name}.json").write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")
    return name


def classify(argv: list[str]) -> int:
    stack, grafana, out = option(argv, "--stack"), option(argv, "--grafana"), Path(option(argv, "--out"))
    if option(argv, "--outcome", "success") == "failure":
        kind, reasons = "failed", ["pulumi preview or pulumi up failed (see this stack's job)"]
    else:
        try:
            preview = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
            kind, reasons = classify_preview(preview)
        except (OSError, ValueError, IndexError, AttributeError) as error:
            kind, reasons = "failed", [f"cannot read the preview ({error})"]
    name = write_record(out, stack, grafana, kind, reasons)
    output({"class": kind, "artifact": name, "exclude": "\n".join(CONFLICTING)})
    return 0


def cluster(argv: list[str]) -> int:
    """Phase 1 of a group of stacks (one job), up to ``FLEET_PARALLEL`` at once: each previews, is classified, runs
    ``pulumi up`` (class grafana without the conflicting writes and their dependents), is recorded and, unless the
    Grafana phase will, verified."""
    stacks, grafana = json.loads(option(argv, "--stacks")), option(argv, "--grafana")
    out = Path(option(argv, "--out"))
    pulumi, python = os.environ.get("PULUMI", "pulumi"), os.environ.get("PYTHON", ".venv/bin/python")
    common = UP_FLAGS
    exclude = [arg for glob in CONFLICTING for arg in ("--exclude", glob)] + ["--exclude-dependents"]
    lock, log, result = threading.Lock(), [], {}

    def one(stack: str) -> None:
        try:
            each(stack)
        except Exception as error:  # noqa: BLE001 - one stack's fault must not lose its group's records
            reasons = [f"phase 1 stopped: {type(error).__name__}: {error}"]
            try:
                result[stack] = (write_record(out, stack, grafana, "failed", reasons), "failed", reasons)
            except OSError:
                result[stack] = ("", "failed", reasons)

    def each(stack: str) -> None:
        text: list[str] = []
        kind, reasons = "failed", ["pulumi preview failed (see this job's log)"]
        if run([pulumi, *preview_args(stack)], log, lock, capture=text):
            try:
                kind, reasons = classify_preview(json.loads(text[0]))
            except (ValueError, AttributeError) as error:
                reasons = [f"cannot read the preview ({error})"]
        if kind in ("parallel", "grafana") and not run(
                [pulumi, "up", "--stack", stack, *common, *(exclude if kind == "grafana" else [])], log, lock):
            kind, reasons = "failed", ["pulumi up failed (see this job's log)"]
        result[stack] = (write_record(out, stack, grafana, kind, reasons), kind, reasons)
        if kind in ("none", "parallel") and not run([python, "-m", "ops.verify", "--stack", stack], log, lock):
            result[stack] = (result[stack][0], "failed", ["ops.verify failed (the record keeps its class)"])

    with ThreadPoolExecutor(max_workers=max(1, min(len(stacks), FLEET_PARALLEL))) as pool:  # one runner's share
        list(pool.map(one, stacks))
    summary(["| stack | phase 1 | why |", "| --- | --- | --- |"]
            + [f"| {s} | {result[s][1]} | {'; '.join(result[s][2]) or 'no change'} |" for s in stacks])
    failed = [s for s in stacks if result[s][1] == "failed"]
    for stack in failed:
        print(f"::error title=Stack {stack} failed::{'; '.join(result[stack][2])}; the other stacks went on")
    output({"artifact": f"{artifact_name(stacks[0], os.environ.get('GITHUB_RUN_ATTEMPT', '1'))}-group" if stacks
            else ""})
    return 1 if failed else 0


def records(directory: Path, stacks: list[str]) -> dict[str, dict]:
    """The newest attempt's record of each stack in ``stacks`` found under ``directory``."""
    found: dict[str, dict] = {}
    for path in sorted(directory.rglob("*.json")) if directory.is_dir() else []:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        stack = record.get("stack")
        if stack in stacks and record.get("class") in CLASSES and (
                stack not in found or record.get("attempt", 0) > found[stack].get("attempt", 0)):
            found[stack] = record
    return found


def chunks(stacks: list[str], serial: set[str], size: int = FLEET_CHUNK) -> list[dict]:
    """``stacks`` in order, cut into chunks of at most ``size`` weight (a serial stack weighs SERIAL_WEIGHT)."""
    out: list[dict] = []
    weight = size
    for stack in stacks:
        w = min(SERIAL_WEIGHT if stack in serial else 1, size)
        if weight + w > size:
            out.append({"chunk": len(out) + 1, "stacks": [], "whole": []})
            weight = 0
        out[-1]["stacks"].append(stack)
        if stack in serial:
            out[-1]["whole"].append(stack)
        weight += w
    return out


def plan(argv: list[str]) -> int:
    stacks = json.loads(option(argv, "--stacks"))
    found = records(Path(argv[-1]), stacks)
    endpoints = [s for s in stacks if found.get(s, {}).get("class") in ("grafana", "serial")]
    serial = {s for s in endpoints if found[s]["class"] == "serial"}
    failed = [s for s in stacks if found.get(s, {}).get("class", "failed") == "failed"]
    rows = ["| stack | first phase | why |", "| --- | --- | --- |"]
    for stack in stacks:
        record = found.get(stack, {"class": "failed", "reasons": ["no record: its first-phase job did not finish"]})
        rows.append(f"| {stack} | {record['class']} | {'; '.join(record['reasons']) or 'no change'} |")
    summary(rows)
    compact = lambda value: json.dumps(value, separators=(",", ":"))  # noqa: E731
    output({"endpoints": compact(endpoints), "chunks": compact(chunks(endpoints, serial)), "failed": compact(failed)})
    return 0


def run(command: list[str], log: list[str], lock: threading.Lock, capture: list[str] | None = None,
        env: dict[str, str] | None = None) -> bool:
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    with lock:
        shown = "(the preview's JSON)\n" if capture is not None else done.stdout
        print(f"$ {' '.join(command)}\n{shown}{done.stderr}", flush=True)
        log.append(f"{' '.join(command[:3])}: exit {done.returncode}")
    if capture is not None:
        capture.append(done.stdout)
    return done.returncode == 0


class SignIn:
    """az's sign-in, renewed (``FLEET_RELOGIN``) only when the last one is older than ``after`` seconds, by one stack
    while the others go on with the tokens they have. Each renewal signs in into a new ``AZURE_CONFIG_DIR`` under
    ``base``, so its warm-up caches new tokens (in the old cache MSAL would serve the old ones while they have 5
    minutes left) and no file a running az reads is rewritten; processes started after it get that directory. The
    first sign-in is the job's own (azure/login and the token warm-up, the steps just before)."""

    def __init__(self, command: str, after: float, base: str) -> None:
        self.command, self.after, self.base = command, after, base
        self.at, self.count, self.lock = time.monotonic(), 0, threading.Lock()
        self.env: dict[str, str] = {}  # the newest sign-in's AZURE_CONFIG_DIR; empty: the job's own

    def fresh(self, log: list[str], output: threading.Lock) -> dict[str, str] | None:
        """The environment a process started now uses (None: the renewal it made failed)."""
        if not self.command or time.monotonic() - self.at <= self.after:
            return dict(self.env)
        if not self.lock.acquire(blocking=False):  # another stack is signing in; the tokens still serve meanwhile
            return dict(self.env)
        try:
            if time.monotonic() - self.at <= self.after:  # it just did
                return dict(self.env)
            directory = tempfile.mkdtemp(prefix="az-sign-in-", dir=self.base)
            if not run(["bash", "-c", self.command], log, output, env={**os.environ, "AZURE_CONFIG_DIR": directory}):
                return None
            self.env, self.at, self.count = {"AZURE_CONFIG_DIR": directory}, time.monotonic(), self.count + 1
            return dict(self.env)
        finally:
            self.lock.release()


@contextmanager
def grafana_written(path: str):
    """Hold the Grafana lock (the file stack/grafana_lock.py locks) while this process's child writes unlocked."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def endpoints(argv: list[str]) -> int:
    stacks = json.loads(option(argv, "--stacks"))
    whole = set(json.loads(option(argv, "--whole", "[]")))
    pulumi, python = os.environ.get("PULUMI", "pulumi"), os.environ.get("PYTHON", ".venv/bin/python")
    parallel = max(1, int(os.environ.get("FLEET_PARALLEL", str(FLEET_PARALLEL))))
    common = UP_FLAGS
    temp = os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()
    sign_in = SignIn(os.environ.get("FLEET_RELOGIN", ""),
                     float(os.environ.get("FLEET_RELOGIN_AFTER", str(RELOGIN_AFTER_SECONDS))), temp)
    lock_file = os.environ.get(GRAFANA_LOCK_ENV) or os.path.join(temp, "fleet-grafana.lock")
    unlocked = {k: v for k, v in os.environ.items() if k != GRAFANA_LOCK_ENV}
    locked = {**unlocked, GRAFANA_LOCK_ENV: lock_file}
    lock, log = threading.Lock(), []
    result: dict[str, str] = {}
    skip_pass1: set[str] = set()

    def reclassify(stack: str) -> None:
        """A re-run: what this stack still has to do now (it may have converged in an earlier attempt)."""
        text: list[str] = []
        if not run([pulumi, *preview_args(stack)], log, lock, capture=text, env={**unlocked, **sign_in.env}):
            result[stack] = "failed: pulumi preview (re-run)"
            return
        try:
            kind, _ = classify_preview(json.loads(text[0]))
        except (ValueError, AttributeError) as error:
            result[stack] = f"failed: cannot read the preview ({error})"
            return
        if kind == "none":
            result[stack] = "skipped: nothing to do (converged in an earlier attempt)"
        elif kind == "parallel":  # nothing conflicting left: no pass 1
            whole.discard(stack)
            skip_pass1.add(stack)
        elif kind == "serial":
            whole.add(stack)
        else:
            whole.discard(stack)

    def write(stack: str) -> None:
        """Pass 1: the endpoint (and workspace) write under the lock, then the approval, which runs behind the next
        stack's write; or a serial stack's whole pulumi up, with the lock held around it."""
        if stack in whole:  # the cascade writes the endpoint anyway: all of this stack's pulumi up, alone
            with grafana_written(lock_file):  # signed in once the lock is held: the wait for it can be long
                az = sign_in.fresh(log, lock)
                if az is None:
                    result[stack] = "failed: Azure sign-in (FLEET_RELOGIN)"
                elif not run([pulumi, "up", "--stack", stack, *common], log, lock, env={**unlocked, **az}):
                    result[stack] = "failed: whole pulumi up (serialized: it replaces or deletes the endpoint)"
                time.sleep(WHOLE_GRACE_SECONDS)  # a refresh its step re-posted may still run: no PUT meanwhile
            return
        az = sign_in.fresh(log, lock)
        if az is None:
            result[stack] = "failed: Azure sign-in (FLEET_RELOGIN)"
        elif not run([pulumi, "up", "--stack", stack, *common, *pass1_targets()], log, lock, env={**locked, **az}):
            result[stack] = "failed: managed private endpoint or approval (pulumi up --target)"

    def finish(stack: str) -> None:
        """Pass 2: the rest (its refresh step reads the one refresh done), then verify."""
        az = sign_in.fresh(log, lock)
        if az is None:
            result[stack] = "failed: Azure sign-in (FLEET_RELOGIN)"
            return
        if stack not in whole and not run([pulumi, "up", "--stack", stack, *common], log, lock,
                                          env={**unlocked, **az}):
            result[stack] = "failed: refresh or Pyroscope datasource (pulumi up)"
            return
        if not run([python, "-m", "ops.verify", "--stack", stack], log, lock, env={**unlocked, **az}):
            result[stack] = "failed: ops.verify"
        else:
            result[stack] = "ok"

    # GitHub: GITHUB_RUN_ATTEMPT "begins at 1 for the workflow run's first attempt, and increments with each re-run";
    # a re-run job keeps the plan's outputs of the attempt that ran it (docs/fleet.md, "Failures and re-runs").
    if int(os.environ.get("GITHUB_RUN_ATTEMPT", "1") or "1") > 1:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(reclassify, stacks))
    written = [s for s in stacks if s not in result and s not in skip_pass1]
    with ThreadPoolExecutor(max_workers=PASS1_WORKERS) as pool:  # in order; the lock lets one write at a time
        list(pool.map(write, written))
    refreshing = None
    if any(s not in result and s not in whole for s in written):  # every approval of the chunk is in
        refreshing = threading.Thread(target=refresh_once, args=(log, lock, {**unlocked, **sign_in.env}))
        refreshing.start()
    with ThreadPoolExecutor(max_workers=parallel) as pool:  # no write to the Grafana is left but the refresh
        list(pool.map(finish, [s for s in stacks if s not in result]))
    if refreshing:
        refreshing.join()
    ok = [s for s in stacks if result[s] == "ok"]
    skipped = [s for s in stacks if result[s].startswith("skipped")]
    failed = [s for s in stacks if s not in ok and s not in skipped]
    summary(["| stack | Grafana phase |", "| --- | --- |"] + [f"| {s} | {result[s]} |" for s in stacks]
            + ["", f"Azure sign-ins renewed: {sign_in.count}"])
    for stack in failed:
        print(f"::error title=Stack {stack} failed::{result[stack]}; the other stacks went on. Re-run the failed "
              "jobs: on a re-run each stack is previewed first and one with nothing to do is skipped (docs/fleet.md)")
    for stack in skipped:
        print(f"::notice title=Stack {stack} skipped::{result[stack]}")
    compact = lambda value: json.dumps(value, separators=(",", ":"))  # noqa: E731
    output({"ok": compact(ok), "failed": compact(failed), "skipped": compact(skipped),
            "relogins": str(sign_in.count)})
    return 1 if failed else 0


def refresh_once(log: list[str], lock: threading.Lock, env: dict[str, str]) -> None:
    """One refresh of the Grafana (``GRAFANA``: resource group/name, ``ARM_SUBSCRIPTION_ID``) as soon as every approval
    of the chunk is in, beside pass 2's starts: their refresh steps then read it done. Best effort: when it fails (a
    409, anything), the steps refresh themselves."""
    group, _, name = os.environ.get("GRAFANA", "").partition("/")
    subscription = os.environ.get("ARM_SUBSCRIPTION_ID", "")
    if not (group and name and subscription):
        return
    url = (f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Dashboard/grafana/{name}"
           f"/refreshManagedPrivateEndpoints?api-version={DASHBOARD_API_VERSION}")
    run([os.environ.get("AZ", "az"), "rest", "--method", "post", "--url", url, "--output", "none"], log, lock, env=env)


def pass1_targets() -> list[str]:
    """``--target`` arguments of pass 1: the conflicting writes and the approval."""
    return [arg for glob in PASS1_TARGETS for arg in ("--target", glob)]


def main(argv: list[str]) -> int:
    commands = {"classify": classify, "cluster": cluster, "plan": plan, "endpoints": endpoints}
    if not argv or argv[0] not in commands:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return commands[argv[0]](argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
