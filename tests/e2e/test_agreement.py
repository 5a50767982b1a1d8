"""The offline diff held against the real engine: every day-two change the lifecycle tests play
(tests/support/day_two_cases.py) is previewed and applied with the real CLI from one deployed dev stack, and compared
with the offline prediction (offline/diff.py) from the same base: the op and replacement order of every resource, the
engine's actions as a partial order (the real engine runs unrelated steps at once), and the end state. The table in
docs/real-engine-agreement.md is this test's output: ``AKS_GPU_OBS_WRITE_AGREEMENT=1`` rewrites it; otherwise a table
that differs from the run fails."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from offline import diff as plan_diff
from offline import program, wire
from offline.program import run
from tests.support import ROOT, day_two_cases, real_engine
from tests.support.simulated_aks import aks_cluster

STACK = "dev"
TABLE = ROOT / "docs" / "real-engine-agreement.md"
#: Changes whose `pulumi up` cannot run here, and why (their preview is compared all the same).
PREVIEW_ONLY = {
    "kubelogin-mode": "kubelogin's workloadidentity login asks Microsoft Entra ID for a token; nothing answers it here",
}
#: Changes that cannot be undone: their configuration becomes the base of the changes after them.
KEPT = {"storage-size-grow": "a claim cannot shrink"}
REPLACEMENT_OPS = ("replace", "create-replacement", "delete-replaced")
#: The first row: a config value set as a secret (`pulumi config set --secret`), compared also on what is secret.
SECRET_CASE, SECRET_KEY = "secret-config", "pyroscopeDatasourceName"
#: What the row's secret compares: a placeholder ciphertext offline, which makes the value secret as the CLI's does.
SECURE_PLACEHOLDER = "v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA=="


@dataclass
class Row:
    case: str
    preview: list[str] = field(default_factory=list)  # disagreements of the preview: "<name>: offline X, real Y"
    order: list[str] = field(default_factory=list)  # real actions that break the offline order's constraints
    end: list[str] = field(default_factory=list)  # end-state differences
    up: Optional[str] = None  # why no up ran

    def verdict(self, lines: list[str]) -> str:
        """``agrees``, the causes of what differs (KNOWN), or ``differs``."""
        found, rest = causes(lines)
        if rest:
            return "differs"
        return "; ".join(found) or "agrees"

    @property
    def unexplained(self) -> list[str]:
        return causes(self.preview + self.order + self.end)[1]

    @property
    def agrees(self) -> bool:
        """Compared in full, and no difference."""
        return not (self.preview or self.order or self.end or self.up)


def name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def compared(urn: str) -> bool:
    """The stack and default providers are not in the offline plan's steps."""
    return "pulumi:pulumi:Stack" not in urn and "::default" not in urn


def real_ops(steps: list[dict]) -> dict[str, str]:
    """URN -> op of a ``pulumi preview --json`` step list, which lists the resources that change, a replacement as one
    ``replace`` step without its order (the order is compared on the `up`'s events); a resource not listed is same."""
    return {step["urn"]: "replace" if step["op"] in REPLACEMENT_OPS else step["op"] for step in steps}


def preview_disagreements(offline: plan_diff.Diff, steps: list[dict]) -> list[str]:
    real = real_ops(steps)
    predicted = {s.urn: s.op for s in offline.steps}
    out = []
    for urn in sorted(set(real) | set(predicted), key=name):
        if not compared(urn):
            continue
        mine, theirs = predicted.get(urn, "same"), real.get(urn, "same")
        if mine != theirs:
            out.append(f"{name(urn)}: offline {mine}, real {theirs}")
    return out


#: Differences with a named cause (not a fault of the comparison): cause -> (what it is, lines it explains).
KNOWN: dict[str, tuple[str, re.Pattern]] = {}


def causes(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the KNOWN causes that explain some of ``lines``, the lines none explains)."""
    found, rest = [], []
    for line in lines:
        cause = next((k for k, (_, pattern) in KNOWN.items() if pattern.search(line)), None)
        if cause is None:
            rest.append(line)
        elif cause not in found:
            found.append(cause)
    return found, rest


def executed(event_log: Path) -> list[tuple[str, str, int, int]]:
    """(kind, urn, start, end) of each step the engine ran, from ``--event-log`` (sequence numbers of its pre and
    outputs events); kinds as the offline order names them (``delete-replaced`` is a delete)."""
    started, done = {}, []
    for line in event_log.read_text().splitlines():
        event = json.loads(line)
        for key in ("resourcePreEvent", "resOutputsEvent"):
            if key not in event:
                continue
            meta = event[key]["metadata"]
            op = {"delete-replaced": "delete"}.get(meta["op"], meta["op"])
            if op not in ("create", "update", "delete", "create-replacement"):
                continue
            if key == "resourcePreEvent":
                started[(op, meta["urn"])] = event["sequence"]
            else:
                done.append((op, meta["urn"], started.get((op, meta["urn"]), event["sequence"]), event["sequence"]))
    return done


def order_breaks(offline: plan_diff.Diff, head: dict, ran: list[tuple[str, str, int, int]]) -> list[str]:
    """The offline order's constraints the real run broke, and actions one has and the other not. A constraint: two
    actions on one resource keep their order; a create/update after what its resource depends on; a delete before
    the deletes of what its resource depends on (unless that delete deletes nothing: a step without a delete
    command; or both are in the ``replaceWith`` set of one replaced resource, which the engine deletes in Go map
    order: ``findResourcesReplacedWith``, pkg/resource/deploy/step_generator.go at v3.230.0)."""
    deps = {r["urn"]: set(r.get("dependencies") or []) | {r.get("parent")} | {r.get("provider")}
            for r in head["resources"]}
    replaced = {s.urn for s in offline.steps if s.op == "replace"}
    replace_with = {r["urn"]: set((r.get("options") or {}).get("replaceWith") or []) & replaced
                    for r in head["resources"]}
    # A step without a delete command deletes nothing: when its delete runs is no constraint.
    inert = {r["urn"] for r in head["resources"]
             if r["type"] == "command:local:Command" and not (r.get("inputs") or {}).get("delete")}
    out = []
    predicted = [(a.kind, a.urn) for a in offline.order]
    real = {(kind, urn): (start, end) for kind, urn, start, end in ran}
    missing = [f"{k} {name(u)}" for k, u in predicted if (k, u) not in real]
    extra = [f"{k} {name(u)}" for k, u, *_ in ran if (k, u) not in set(predicted)]
    out += [f"offline only: {m}" for m in missing] + [f"real only: {e}" for e in extra]
    for i, (k1, u1) in enumerate(predicted):
        for k2, u2 in predicted[i + 1:]:
            bound = (u1 == u2 or (k2 != "delete" and u1 in deps.get(u2, ())) or
                     (k1 == "delete" and k2 == "delete" and u2 in deps.get(u1, ()) and u2 not in inert
                      and not replace_with.get(u1, set()) & replace_with.get(u2, set())))
            first, then = real.get((k1, u1)), real.get((k2, u2))
            if bound and first and then and not first[1] < then[0]:
                out.append(f"{k2} {name(u2)} began before {k1} {name(u1)} ended")
    return out


#: Deployments the changes are shared out over (each its own control plane, world and stack): the steps mostly wait.
SHARDS = 2
#: The table's rows: the secret config first, then each day-two change.
CASES = [SECRET_CASE] + [c.name for c in day_two_cases.CHANGES]


@dataclass
class Prediction:
    diff: plan_diff.Diff
    head: dict  # the head plan with every value known
    targets: list[str]
    sets: dict
    at_up: Optional[program.Plan] = None  # the program at `pulumi up` (every value known): its secrets compared


@dataclass
class Deployed:
    ws: real_engine.Workspace
    aks: object
    config: dict = field(default_factory=dict)  # the base's stack configuration (`pulumi config --json`)

    def restore(self, keys) -> None:
        """Put ``keys`` back as the base has them: its value, or unset."""
        base = {k.split(":", 1)[1] if k.startswith("aks-gpu-observability:") else k: v["value"]
                for k, v in self.config.items()}
        kept = [a for k in keys if k in base for a in ("--plaintext", f"{k}={base[k]}")]
        if kept:
            self.ws.pulumi("config", "set-all", *kept, stack=STACK)
        removed = [k for k in keys if k not in base]
        if removed:
            self.ws.pulumi("config", "rm", *removed, stack=STACK)


def predict(base: dict, base_sets: dict, dashboards: dict) -> dict[str, Prediction]:
    """Every change's offline diff from ``base`` (one at a time: the SDK's mocks are per process)."""
    urns = {name(r["urn"]): r["urn"] for r in base["resources"]}
    found = {}
    for change in day_two_cases.CHANGES:
        sets = day_two_cases.settings(change, dashboards)
        targets = [urns[t] for t in change.targets]
        diff, known = plan_diff.preview(base, lambda pending, sets=sets: run(STACK, {**base_sets, **sets},
                                                                             pending=pending), targets)
        found[change.name] = Prediction(diff, known.to_json(), targets, sets)
    with secret_stack_file():
        diff, known = plan_diff.preview(base, lambda pending: run(STACK, base_sets, pending=pending), [])
        found[SECRET_CASE] = Prediction(diff, known.to_json(), [], {}, run(STACK, base_sets, preview=False))
    return found


@contextlib.contextmanager
def secret_stack_file():
    """The offline program reads the dev stack's file with :data:`SECRET_KEY` as a ``secure:`` value."""
    folder = Path(tempfile.mkdtemp())
    path = folder / f"Pulumi.{STACK}.yaml"
    path.write_text(program.stack_file(STACK).read_text()
                    + f"  aks-gpu-observability:{SECRET_KEY}:\n    secure: {SECURE_PLACEHOLDER}\n")
    saved = program.stack_file
    program.stack_file = lambda stack: path
    try:
        yield
    finally:
        program.stack_file = saved
        shutil.rmtree(folder)


def secret_keys(props: Optional[dict]) -> set[str]:
    """The top-level keys of a property map (state or wire format) that hold a secret, at any depth; not the
    provider's own ``__`` keys (pulumi-kubernetes' ``checkpointObject`` writes ``__inputs``), which no program reads:
    the Python SDK resolves only the outputs a resource declares (pulumi 3.272.0 ``runtime/rpc.py``
    ``resolve_properties`` skips a key without a resolver)."""
    def holds(value) -> bool:
        if isinstance(value, dict):
            return value.get(wire.SIG) == wire.SECRET_SIG or any(holds(v) for v in value.values())
        return isinstance(value, list) and any(holds(v) for v in value)
    return {key for key, value in (props or {}).items() if not key.startswith("__") and holds(value)}


def secrecy_differences(state: dict, plan: program.Plan) -> list[str]:
    """Which stack outputs and which custom resources' inputs and outputs are secret: the real state against the
    offline plan at `pulumi up`."""
    real = {r["urn"]: r for r in state["resources"]}
    out = []
    stack = next(r for r in state["resources"] if r["type"] == "pulumi:pulumi:Stack")
    mine = {key for key, value in plan.outputs.items() if wire.SECRET in json.dumps(value)}
    if secret_keys(stack.get("outputs")) != mine:
        out.append(f"secret stack outputs: offline {sorted(mine)}, real {sorted(secret_keys(stack.get('outputs')))}")
    for resource in plan.resources:
        theirs = real.get(resource.urn)
        if not resource.custom or theirs is None or not compared(resource.urn):
            continue
        for side, offline, held in (("inputs", resource.wire, theirs.get("inputs")),
                                    ("outputs", resource.outputs, theirs.get("outputs"))):
            if secret_keys(offline) != secret_keys(held):
                out.append(f"{name(resource.urn)}: secret {side} offline {sorted(secret_keys(offline))}, "
                           f"real {sorted(secret_keys(held))}")
    return out


@pytest.fixture(scope="module")
def rows(tmp_path_factory, engine_tools, chart) -> dict[str, Row]:
    """Each change played on one of :data:`SHARDS` deployments of the dev stack, the changes that cannot be undone
    (:data:`KEPT`) last in theirs."""
    tmp = tmp_path_factory.mktemp("agreement")
    dashboards = day_two_cases.dashboards(tmp)
    base_sets = {"pyroscopeChart": chart.reference}
    predictions = predict(run(STACK, base_sets).to_json(), base_sets, dashboards)
    names = [c.name for c in day_two_cases.CHANGES if c.name not in KEPT] + list(KEPT)
    shards = [names[i::SHARDS] for i in range(SHARDS)]
    shards[0] = [n for n in shards[0] if n not in KEPT] + [n for n in names if n in KEPT]
    shards[1:] = [[n for n in shard if n not in KEPT] for shard in shards[1:]]
    downloads = {url: path for url, (path, _) in dashboards.items()}

    def play_shard(index: int) -> list[Row]:
        folder = tmp / f"shard{index}"
        folder.mkdir()
        with aks_cluster(folder, engine_tools, downloads) as aks:
            d = Deployed(aks.workspace(folder / "ws", engine_tools, chart), aks)
            d.ws.init(STACK, base_sets)
            d.config = json.loads(d.ws.pulumi("config", "--json", stack=STACK).stdout)
            d.ws.up(STACK)
            return [play(d, n, predictions[n]) for n in shards[index] + ([SECRET_CASE] if index == 1 else [])]

    with ThreadPoolExecutor(max_workers=SHARDS) as pool:
        played = {row.case: row for rows_ in pool.map(play_shard, range(SHARDS)) for row in rows_}
    return {c: played[c] for c in CASES}


def play(d: Deployed, case: str, prediction: Prediction) -> Row:
    row = Row(case)
    if case == SECRET_CASE:
        d.ws.pulumi("config", "set", "--secret", SECRET_KEY, "Pyroscope (GPU)", stack=STACK)
    if prediction.sets:
        d.ws.pulumi("config", "set-all", *[a for k, v in prediction.sets.items() for a in ("--plaintext", f"{k}={v}")],
                    stack=STACK)
    replace = [arg for urn in prediction.targets for arg in ("--replace", urn)]
    previewed = d.ws.pulumi("preview", "--json", *replace, stack=STACK, check=False)
    if previewed.returncode == 0:
        row.preview = preview_disagreements(prediction.diff, json.loads(previewed.stdout)["steps"])
    else:  # recorded as the run found it: the table never carries a fixed reason for a failed preview
        row.preview = [f"the real preview failed: {failure(previewed)}"]
    if case in PREVIEW_ONLY:
        row.up = PREVIEW_ONLY[case]
    else:
        log = d.ws.folder / f"events-{case}.jsonl"
        done = d.ws.up(STACK, "--event-log", str(log), *replace, check=False)
        if done.returncode != 0:
            row.end = [f"the real up failed: {failure(done)}"]
        else:
            row.order = order_breaks(prediction.diff, prediction.head, executed(log))
            row.end = end_state(d, prediction.head)
            if prediction.at_up is not None:
                row.end += secrecy_differences(d.ws.state(STACK), prediction.at_up)
    if case in KEPT:
        return row
    if case == SECRET_CASE:
        d.restore([SECRET_KEY])
        d.ws.up(STACK)
    if prediction.sets:
        d.restore(prediction.sets)
        if row.up is None:
            d.ws.up(STACK)  # back to the base for the next change
    return row


def failure(done) -> str:
    """The telling line of a failed command: the program's exception, else the engine's first error."""
    text = done.stdout + "\n" + done.stderr
    try:
        text = "\n".join(d["message"] for d in json.loads(done.stdout).get("diagnostics", [])
                         if d["severity"] == "error") or text
    except (ValueError, AttributeError):
        pass
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    telling = [line for line in lines if line.startswith("Exception: ")] or [
        line for line in lines if line.startswith("error:")] or lines[-1:]
    return telling[0][:400] if telling else "(no output)"


def end_state(d: Deployed, head: dict) -> list[str]:
    """What the real end state lacks of the head plan: its resources in the state, nothing left to change, one
    approved endpoint with its private IP, Grafana's datasources and dashboard those of the head."""
    out = []
    state = {r["urn"] for r in d.ws.state(STACK)["resources"] if compared(r["urn"])}
    wanted = {r["urn"] for r in head["resources"] if compared(r["urn"])}
    out += [f"state lacks {name(u)}" for u in sorted(wanted - state)] + [f"state has {name(u)}" for u in
                                                                          sorted(state - wanted)]
    again = {op: n for op, n in d.ws.preview(STACK)["changeSummary"].items() if op != "same"}
    if again:
        out.append(f"a re-run would change {again}")
    world = d.aks.world()
    if sorted((m["status"], bool(m["ip"])) for m in world["mpes"].values()) != [("Approved", True)]:
        out.append(f"endpoints: {[(m['status'], m['ip']) for m in world['mpes'].values()]}")
    uids = {r["inputs"]["environment"].get("DATASOURCE_UID") for r in head["resources"]
            if r["type"] == "command:local:Command" and "DATASOURCE_UID" in (r["inputs"].get("environment") or {})}
    held = {uid for g in world["grafana"].values() for uid in g["datasources"]}
    if uids and held != uids:
        out.append(f"datasources {sorted(held)}, wanted {sorted(uids)}")
    return out


#: Under xdist the rows are played once, on one worker (their fixture plays every change on its own deployments).
AGREEMENT = pytest.mark.xdist_group("agreement")


@AGREEMENT
@pytest.mark.parametrize("change", CASES)
def test_the_real_engine_agrees_with_the_offline_diff(change, rows):
    row = rows[change]
    assert not row.unexplained, "\n".join(row.unexplained)


def render(rows: dict[str, Row]) -> str:
    """The table: per change a verdict per comparison (``agrees``, a cause of :data:`KNOWN`, ``differs``, ``not run``),
    then the causes."""
    lines = ["# The offline diff against the real engine", "",
             "Generated by `tests/e2e/test_agreement.py` (`AKS_GPU_OBS_WRITE_AGREEMENT=1` rewrites it): each",
             "day-two change of the lifecycle tests, previewed and applied with the real CLI",
             "([real-engine.md](real-engine.md)) from one deployed dev stack, against the offline prediction from the",
             "same base: the op of every resource in the preview, the `pulumi up`'s actions and their order (a",
             "partial order: the real engine runs unrelated steps at once; replacement order included), and the end",
             f"state. The first row, `{SECRET_CASE}`, sets `{SECRET_KEY}` with `pulumi config set --secret`; its end",
             "state also compares which stack outputs, and which resources' inputs and outputs, are secret.", "",
             f"**{sum(r.agrees for r in rows.values())} of {len(rows)} changes agree in full.**", "",
             "| change | preview | `pulumi up`: actions and order | end state |", "|---|---|---|---|"]
    for row in rows.values():
        preview = row.verdict(row.preview)
        up = (f"not run: {row.up}", "—") if row.up else (row.verdict(row.order), row.verdict(row.end))
        lines.append(f"| `{row.case}` | {preview} | {up[0]} | {up[1]} |")
    if KNOWN:
        lines += ["", "Causes:", ""] + [f"- **{key}**: {text}" for key, (text, _) in KNOWN.items()]
    return "\n".join(lines) + "\n"


@AGREEMENT
def test_the_agreement_table_is_this_run(rows):
    table = render(rows)
    if os.environ.get("AKS_GPU_OBS_WRITE_AGREEMENT") == "1":
        TABLE.write_text(table)
    assert TABLE.exists() and TABLE.read_text() == table, (
        "docs/real-engine-agreement.md differs from this run: AKS_GPU_OBS_WRITE_AGREEMENT=1 .venv/bin/python -m pytest "
        "tests/e2e/test_agreement.py rewrites it")
