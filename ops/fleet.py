#!/usr/bin/env python3
"""CI: roll a fleet of stacks out onto shared Grafanas, serializing only what conflicts (docs/fleet.md).

    python3 -m ops.fleet classify PREVIEW_JSON --stack S --grafana G --out DIR [--outcome success|failure]
    python3 -m ops.fleet plan --stacks JSON DIR
    python3 -m ops.fleet endpoints --stacks JSON

Owns: ``classify`` (one stack's ``pulumi preview --json`` -> ``none``, ``parallel``, ``grafana``, ``serial`` or
``failed``; writes ``DIR/<artifact>.json`` and ``class=``, ``artifact=``, ``exclude=`` to ``$GITHUB_OUTPUT``), ``plan``
(one Grafana's records -> ``endpoints=``, ``chunks=``, ``failed=`` and a summary table) and ``endpoints`` (the
serialized phase: pass 1 one stack at a time, pass 2 ``FLEET_PARALLEL`` at once with ``python -m ops.verify``; on a
re-run each stack is previewed first; ``ok=``/``failed=``/``skipped=``). Inputs: previews, records, ``GITHUB_*``,
``PULUMI``/``PYTHON`` (the commands), ``FLEET_RELOGIN``. Errors: a failing stack is reported and skipped, exit 1 when
any failed. Upstream: pulumi/pulumi ``pkg/display/json.go``; what conflicts and why: docs/decisions/fleet-rollout.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
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
#: Chunks of the serialized phase (docs/fleet.md, "Chunks"): one job each, one after another.
FLEET_CHUNK = 25
SERIAL_WEIGHT = 3


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
    serial = [f"{op} {name(urn)}: {SERIAL_WHY}" for op, urn in changed if conflicting(urn) and op not in EXCLUDE_SAFE]
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


def classify(argv: list[str]) -> int:
    stack, grafana, out = option(argv, "--stack"), option(argv, "--grafana"), Path(option(argv, "--out"))
    attempt = os.environ.get("GITHUB_RUN_ATTEMPT", "1")
    if option(argv, "--outcome", "success") == "failure":
        kind, reasons = "failed", ["pulumi preview or pulumi up failed (see this stack's job)"]
    else:
        try:
            preview = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
            kind, reasons = classify_preview(preview)
        except (OSError, ValueError, IndexError, AttributeError) as error:
            kind, reasons = "failed", [f"cannot read the preview ({error})"]
    name = artifact_name(stack, attempt)
    out.mkdir(parents=True, exist_ok=True)
    record = {"stack": stack, "grafana": grafana, "class": kind, "reasons": reasons, "attempt": int(attempt)}
    (out / f"{name}.json").write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")
    output({"class": kind, "artifact": name, "exclude": "\n".join(CONFLICTING)})
    return 0


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


def run(command: list[str], log: list[str], lock: threading.Lock, capture: list[str] | None = None) -> bool:
    done = subprocess.run(command, capture_output=True, text=True)
    with lock:
        shown = "(the preview's JSON)\n" if capture is not None else done.stdout
        print(f"$ {' '.join(command)}\n{shown}{done.stderr}", flush=True)
        log.append(f"{' '.join(command[:3])}: exit {done.returncode}")
    if capture is not None:
        capture.append(done.stdout)
    return done.returncode == 0


def endpoints(argv: list[str]) -> int:
    stacks = json.loads(option(argv, "--stacks"))
    whole = set(json.loads(option(argv, "--whole", "[]")))
    pulumi, python = os.environ.get("PULUMI", "pulumi"), os.environ.get("PYTHON", ".venv/bin/python")
    parallel = max(1, int(os.environ.get("FLEET_PARALLEL", "8")))
    common = ["--yes", "--skip-preview", "--non-interactive", "--policy-pack", "policy"]
    relogin = os.environ.get("FLEET_RELOGIN", "")
    lock, relogin_lock, log = threading.Lock(), threading.Lock(), []
    result: dict[str, str] = {}
    skip_pass1: set[str] = set()

    def reclassify(stack: str) -> None:
        """A re-run: what this stack still has to do now (it may have converged in an earlier attempt)."""
        text: list[str] = []
        if not run([pulumi, "preview", "--json", "--non-interactive", "--stack", stack, "--policy-pack", "policy"],
                   log, lock, capture=text):
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

    # GitHub: GITHUB_RUN_ATTEMPT "begins at 1 for the workflow run's first attempt, and increments with each re-run";
    # a re-run job keeps the plan's outputs of the attempt that ran it (docs/fleet.md, "Failures and re-runs").
    if int(os.environ.get("GITHUB_RUN_ATTEMPT", "1") or "1") > 1:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(reclassify, stacks))
    for stack in stacks:  # pass 1: azure-native's writes to Grafana's provider, one stack at a time
        if stack in result or stack in skip_pass1:
            continue
        if relogin and not run(["bash", "-c", relogin], log, lock):
            result[stack] = "failed: Azure sign-in (FLEET_RELOGIN)"
            continue
        if stack in whole:  # the cascade writes the endpoint anyway: all of this stack's pulumi up, serialized
            if not run([pulumi, "up", "--stack", stack, *common], log, lock):
                result[stack] = "failed: whole pulumi up (serialized: it replaces or deletes the endpoint)"
            continue
        targets = [arg for glob in AZURE_NATIVE_GLOBS for arg in ("--target", glob)]
        if not run([pulumi, "up", "--stack", stack, *common, *targets], log, lock):
            result[stack] = "failed: managed private endpoint (pulumi up --target)"

    def finish(stack: str) -> None:
        if stack not in whole:
            if relogin:  # az's cached tokens last 60-90 minutes; sign in again between stacks (never two at once)
                with relogin_lock:
                    if not run(["bash", "-c", relogin], log, lock):
                        result[stack] = "failed: Azure sign-in (FLEET_RELOGIN)"
                        return
            if not run([pulumi, "up", "--stack", stack, *common], log, lock):
                result[stack] = "failed: approval, refresh or Pyroscope datasource (pulumi up)"
                return
        if not run([python, "-m", "ops.verify", "--stack", stack], log, lock):
            result[stack] = "failed: ops.verify"
        else:
            result[stack] = "ok"

    with ThreadPoolExecutor(max_workers=parallel) as pool:  # pass 2: the refresh retries Grafana's 409 itself
        list(pool.map(finish, [s for s in stacks if s not in result]))
    ok = [s for s in stacks if result[s] == "ok"]
    skipped = [s for s in stacks if result[s].startswith("skipped")]
    failed = [s for s in stacks if s not in ok and s not in skipped]
    summary(["| stack | Grafana phase |", "| --- | --- |"] + [f"| {s} | {result[s]} |" for s in stacks])
    for stack in failed:
        print(f"::error title=Stack {stack} failed::{result[stack]}; the other stacks went on. Re-run the failed "
              "jobs: on a re-run each stack is previewed first and one with nothing to do is skipped (docs/fleet.md)")
    for stack in skipped:
        print(f"::notice title=Stack {stack} skipped::{result[stack]}")
    compact = lambda value: json.dumps(value, separators=(",", ":"))  # noqa: E731
    output({"ok": compact(ok), "failed": compact(failed), "skipped": compact(skipped)})
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    commands = {"classify": classify, "plan": plan, "endpoints": endpoints}
    if not argv or argv[0] not in commands:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return commands[argv[0]](argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
