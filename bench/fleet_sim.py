"""Fleet rollout: N stacks over G Grafanas on R runners, the workflow (docs/fleet.md) against per-stack jobs and the
floor.

    python -m bench.fleet_sim [--sizes 1,10,50,100] [--grafanas 1,5] [--runners 20,40,60,0] [--json]

SIMULATED: no GitHub, no Azure. One stack's steps come from ``bench.deploy_sim`` on the dev stack's offline plan, the
CI figures from ``bench/latencies.yaml``'s ``ci`` section (a job's setup: the sum of its steps). Schemes: **ours**
(deploy-stacks.yml and ``ops/fleet.py``: the cluster jobs on the runners there are, the plan job, then per Grafana its
chunk jobs one after another, each run as ``fleet.py endpoints`` runs it), **per-stack** (per Grafana one job per
stack, one after another: the simplest safe workflow) and the **floor** (docs/fleet.md, "The floor": no schedule
beats it). Runs: first rollout, chart bump, nothing to do; ``--runners`` adds runner counts to 20, 40 and 60 (0 is
unlimited). Prints the runs at 40 runners, the ratios per runner count, the chunk jobs of a first rollout of 50
against their limits and each driving latency's effect at x0.5 and x1.5. Exit 1 when a target is missed or a chunk
passes its timeout or a token's life. The model: docs/decisions/benchmarks.md.
"""

from __future__ import annotations

import argparse
import copy
import heapq
import json
import math
import sys
from dataclasses import dataclass, field
from typing import Optional, Sequence

import yaml

from bench import deploy_sim
from offline.program import run
from ops import fleet, stack_matrix

TARGET_RUNNERS = 40
TARGET_FLOOR, TARGET_WAVES, TARGET_SENSITIVITY = 1.2, 1.2, 1.35
FACTORS = (0.5, 1.5)
#: The latencies that drive a first rollout: (label, section, key); ``setup`` scales every setup step.
DRIVING = (
    ("endpoint PUT", "resources", deploy_sim.MPE),
    ("refresh", "events", "ip_after_refresh"),
    ("approval PUT", "events", "approval_put"),
    ("load balancer frontend", "events", "load_balancer_frontend"),
    ("PLS after the frontend", "events", "pls_after_load_balancer"),
    ("Helm release", "resources", deploy_sim.RELEASE),
    ("ARM lookup", "events", "invoke"),
    ("poll check", "events", "poll_check"),
    ("pulumi start", "ci", "pulumi_startup"),
    ("pulumi start, its CPU part", "ci", "pulumi_start_cpu"),
    ("runner cores", "ci", "runner_cores"),
    ("job setup", "ci", "setup"),
    ("az sign-in again", "ci", "relogin"),
    ("light job", "ci", "light_job"),
    ("verify", "ci", "verify"),
)
GRAFANA = ("endpoint PUT", "refresh")  # scaled together in the combined row


@dataclass
class Latencies:
    """bench/latencies.yaml: the Azure table (deploy_sim.Table) and the ``ci`` section, one entry scalable."""

    table: deploy_sim.Table
    setup_steps: dict[str, float]
    ci: dict[str, float]

    @classmethod
    def load(cls) -> "Latencies":
        data = yaml.safe_load(deploy_sim.TABLE.read_text())["ci"]
        steps = {k: float(v["seconds"]) for k, v in data["setup_steps"].items()}
        return cls(deploy_sim.Table(), steps, {k: float(v["seconds"]) for k, v in data.items() if k != "setup_steps"})

    @property
    def setup(self) -> float:
        return sum(self.setup_steps.values())

    def scaled(self, labels: Sequence[str], factor: float) -> "Latencies":
        out = copy.deepcopy(self)
        for label, section, key in DRIVING:
            if label not in labels:
                continue
            if section == "ci" and key == "setup":
                out.setup_steps = {k: v * factor for k, v in out.setup_steps.items()}
            elif section == "ci":
                out.ci[key] *= factor
            else:
                getattr(out.table, section)[key] *= factor
        return out


@dataclass
class Stack:
    """One stack's figures (seconds), from deploy_sim's schedule of the dev plan."""

    full: float          # its whole pulumi up of a first rollout, lookups included
    cluster: float       # the same without the excluded resources (a first rollout's cluster job)
    prologue: float      # the program's lookups
    mpe: float           # the endpoint's PUT
    approval: float      # the approval step (its check for the connection, the PUT)
    refresh: float       # refreshManagedPrivateEndpoints' long-running action
    datasource: float    # the Pyroscope datasource step
    release: float       # the Helm release's update (a chart bump)
    physical_cluster: float  # namespace, claims, release, the load balancer frontend, the PLS: no polls
    approval_put: float  # the approval's PUT alone (the connection exists once the MPE does)
    check: float         # one check of a waiting step


def stack_figures(table: deploy_sim.Table, plan) -> Stack:
    ours = deploy_sim.schedule(plan, table, "ours")
    links = deploy_sim.chain(plan)  # release, private link Service, PLS wait, MPE, approval, refresh, datasource
    excluded = {links[3].urn, links[4].urn, links[5].urn, links[6].urn}
    e = table.events
    step = lambda r: ours.steps[r.urn].finish - ours.steps[r.urn].start  # noqa: E731
    claims = table.resource(deploy_sim.CLAIM) if any(r.type == deploy_sim.CLAIM for r in plan.resources) else 0.0
    return Stack(full=ours.total, cluster=max(t.finish for u, t in ours.steps.items() if u not in excluded),
                 prologue=e["invoke"] * len([i for i in plan.invokes if not i.dependencies]),
                 mpe=table.resource(deploy_sim.MPE), approval=step(links[4]), refresh=e["ip_after_refresh"],
                 datasource=step(links[6]), release=table.resource(deploy_sim.RELEASE),
                 physical_cluster=table.resource(deploy_sim.NAMESPACE) + claims + table.resource(deploy_sim.RELEASE)
                 + e["load_balancer_frontend"] + e["pls_after_load_balancer"],
                 approval_put=e["connection_after_mpe"] + e["approval_put"], check=e["poll_check"])


def floor(n: int, s: Stack) -> dict[str, float]:
    """What no schedule beats for a first rollout of ``n`` stacks on one Grafana (docs/fleet.md, "The floor"): every
    cluster side at once; then the n endpoint PUTs, one after another (they conflict); the last one's approval; one
    refresh (workspace-wide, so one after the last approval serves all); the last datasource."""
    parts = {"cluster side": s.physical_cluster, "endpoint PUTs": n * s.mpe, "last approval": s.approval_put,
             "one refresh": s.refresh, "datasource": s.datasource}
    return {**parts, "total": sum(parts.values())}


@dataclass
class Chunk:
    """One chunk job as ``fleet.py endpoints`` runs it: its seconds, az sign-ins renewed, the longest any process ran
    after the sign-in it relied on, and the limits it passed (empty when within all)."""

    stacks: int
    whole: int
    seconds: float
    relogins: int
    longest_after_sign_in: float
    exceeded: list[str] = field(default_factory=list)


def chunk_job(k: int, s: Stack, lat: Latencies, whole: int = 0) -> Chunk:
    """``k`` stacks of a first rollout (the first ``whole`` of them serial), from the job's start: its setup (az signs
    in and the Pulumi token is issued at its end); pass 1, ``fleet.PASS1_WORKERS`` stacks at once, each endpoint PUT
    under the lock, the approval after it; one refresh (fleet.py's, one az call) beside pass 2, ``fleet.FLEET_PARALLEL``
    at once, whose refresh steps read it (steps/refresh_managed_private_endpoints.sh), then the datasource and verify;
    az signs in again before a process when the last sign-in is ``fleet.RELOGIN_AFTER_SECONDS`` old."""
    ci, start = lat.ci, started(lat, fleet.PASS1_WORKERS)
    setup = lat.setup
    sign = {"at": setup, "free": setup, "before": setup, "count": 0}
    ran: list[tuple[float, float]] = []  # (sign-in relied on, end) per process

    def fresh(at: float) -> tuple[float, float]:
        """(when the process starts, the sign-in it relies on): one stack renews a sign-in that is old; while it does,
        the others go on with the last one (fleet.py SignIn)."""
        if at < sign["free"]:
            return at, sign["before"]
        if at - sign["at"] > fleet.RELOGIN_AFTER_SECONDS:
            sign.update(before=sign["at"], at=at + ci["relogin"], free=at + ci["relogin"], count=sign["count"] + 1)
            return sign["at"], sign["at"]
        return at, sign["at"]

    workers, lock = [setup] * fleet.PASS1_WORKERS, setup
    for i in range(k):  # pass 1, in order: the earliest free worker takes the next stack
        w = min(range(len(workers)), key=workers.__getitem__)
        if i < whole:  # fleet.py takes the lock, signs in if due, runs the whole up, keeps the lock a grace time
            begin, since = fresh(max(workers[w], lock))
            end = begin + start + s.full
            lock = end + fleet.WHOLE_GRACE_SECONDS
            end = lock
        else:
            begin, since = fresh(workers[w])
            write = max(begin + start + s.prologue, lock)
            lock = write + s.mpe
            end = lock + s.approval
        workers[w] = end
        ran.append((since, end))
    slots = [max(workers)] * max(1, min(fleet.FLEET_PARALLEL, k))
    grafana, busy = Refresh(s, lat), started(lat, len(slots))  # pass 2's starts share the runner's cores
    if k > whole:  # fleet.py's refresh_once, posted beside pass 2's starts
        grafana.done = max(workers) + ci["az_call"] + s.refresh
    for i in range(k):  # pass 2: the rest of each stack, then verify (a whole stack: verify only)
        j = min(range(len(slots)), key=slots.__getitem__)
        begin, since = fresh(slots[j])
        done = begin if i < whole else grafana.step(begin + busy + s.prologue) + s.datasource  # a whole stack: verify
        slots[j] = done + ci["verify"]
        ran.append((since, slots[j]))
    seconds = max(slots)
    longest = max(end - since for since, end in ran)
    exceeded = [text for text, over in (
        (f"timeout {fleet.CHUNK_TIMEOUT_MINUTES} min", seconds > fleet.CHUNK_TIMEOUT_MINUTES * 60),
        (f"Pulumi token {fleet.PULUMI_TOKEN_SECONDS // 60} min", seconds - setup > fleet.PULUMI_TOKEN_SECONDS),
        (f"az tokens {fleet.AZ_TOKEN_SECONDS // 60} min after a sign-in", longest > fleet.AZ_TOKEN_SECONDS)) if over]
    return Chunk(k, whole, seconds, sign["count"], longest, exceeded)


class Refresh:
    """The refresh steps of one pass 2: the first to post holds the Grafana ``s.refresh`` seconds; every step reads
    the endpoint first and before each retry of a 409 (steps/lib.sh backoff), and stops once it reads the IP."""

    def __init__(self, s: Stack, lat: Latencies) -> None:
        self.s, self.first_delay, self.ceiling = s, *deploy_sim.poll_defaults()
        self.done: Optional[float] = None
        self.noticed: Optional[float] = None

    def step(self, at: float) -> float:
        """When the step that starts at ``at`` has seen the private IP."""
        check, delays = self.s.check, deploy_sim.delays(self.first_delay, self.ceiling)
        while True:
            if self.done is not None and self.done <= at:
                return at + check  # the read sees Approved with the IP: no POST
            post = at + check
            if self.done is None:  # nothing running: this one refreshes, then polls for the IP
                self.done = post + self.s.refresh
                return deploy_sim.poll("IP", post, self.done, check, deploy_sim.delays(self.first_delay, self.ceiling),
                                       extra=lambda n: check if n % 4 == 0 else 0.0, first_offset=check).noticed
            at = post + max(next(delays), check)  # 409 while it runs: back off, read again


@dataclass
class Job:
    seconds: float
    needs: tuple[int, ...] = ()


def run_jobs(jobs: list[Job], runners: int) -> list[float]:
    """Finish times: a job starts once all it needs have finished and a runner is free, in the order the jobs became
    ready (ties: listed order); ``runners`` 0 is unlimited."""
    finish: list[Optional[float]] = [None] * len(jobs)
    pending, running, now = list(range(len(jobs))), [], 0.0
    while pending or running:
        ready = sorted((max((finish[d] for d in jobs[i].needs), default=0.0), i) for i in pending
                       if all(finish[d] is not None for d in jobs[i].needs))
        for _, i in ready:
            if runners and len(running) >= runners:
                break
            pending.remove(i)
            heapq.heappush(running, (now + jobs[i].seconds, i))
        now, i = heapq.heappop(running)
        finish[i] = now
    return finish  # type: ignore[return-value]


def started(lat: Latencies, at_once: int) -> float:
    """pulumi's start when ``at_once`` pulumi processes start together on one runner: its CPU part shares the runner's
    cores (``ci`` runner_cores, pulumi_start_cpu)."""
    ci = lat.ci
    return max(ci["pulumi_startup"], at_once * ci["pulumi_start_cpu"] / ci["runner_cores"])


def cluster_job(kind: str, group: int, s: Stack, lat: Latencies) -> float:
    """One job of deploy-stacks.yml's ``cluster`` matrix (``fleet.py cluster``): setup, then its ``group`` stacks,
    ``fleet.FLEET_PARALLEL`` at a time: preview, the up (a first rollout's without the Grafana writes), verify (not
    for class grafana: its chunk verifies it); the records' upload."""
    at_once = min(group, fleet.FLEET_PARALLEL)
    ci, start = lat.ci, started(lat, at_once)
    up = {"first": start + s.cluster, "bump": start + s.prologue + s.release, "none": 0.0}[kind]
    rounds = math.ceil(group / at_once)  # fleet.py cluster runs at most FLEET_PARALLEL at once
    return lat.setup + rounds * (start + s.prologue + up + (0.0 if kind == "first" else ci["verify"])) + ci["artifact"]


def single(kind: str, s: Stack, lat: Latencies) -> float:
    """One stack's job in the per-stack scheme: setup, its whole pulumi up, verify."""
    up = {"first": s.full, "bump": s.prologue + s.release, "none": s.prologue}[kind]
    return lat.setup + lat.ci["pulumi_startup"] + up + lat.ci["verify"]


def groups(n: int, grafanas: int) -> list[int]:
    return [len(range(g, n, grafanas)) for g in range(min(grafanas, n))]


def ours(kind: str, n: int, grafanas: int, runners: int, s: Stack, lat: Latencies) -> dict:
    """deploy.yml's run: the stack-matrix job, then per Grafana (in parallel) the cluster jobs (groups of stacks as
    ops/stack_matrix.py cuts them for ``runners``), the plan job and, for a first rollout, its chunk jobs one after
    another (``max-parallel: 1``), all on ``runners`` runners."""
    light, jobs, chunks = lat.ci["light_job"], [Job(lat.ci["light_job"])], []
    per_job = math.ceil(n / runners) if runners else 1
    over = []
    for k in groups(n, grafanas):
        cut = stack_matrix.cluster_groups(list(range(k)), per_job)
        cluster = [len(jobs) + i for i in range(len(cut))]
        jobs += [Job(cluster_job(kind, len(group), s, lat), (0,)) for group in cut]
        longest = max(jobs[i].seconds for i in cluster)
        if longest > fleet.CLUSTER_TIMEOUT_MINUTES * 60:
            over.append(f"cluster job timeout {fleet.CLUSTER_TIMEOUT_MINUTES} min")
        if longest - lat.setup > fleet.AZ_TOKEN_SECONDS:  # no sign-in renewal in a cluster job
            over.append(f"cluster job past its az tokens' {fleet.AZ_TOKEN_SECONDS // 60} min")
        jobs.append(Job(light, tuple(cluster)))
        if kind == "first":
            for size in [min(fleet.FLEET_CHUNK, k - i) for i in range(0, k, fleet.FLEET_CHUNK)]:
                chunk = chunk_job(size, s, lat)
                chunks.append(chunk)
                jobs.append(Job(chunk.seconds, (len(jobs) - 1,)))  # the plan job, or the chunk before
    return {"seconds": max(run_jobs(jobs, runners)), "chunks": chunks, "exceeded": sorted(set(over))}


def per_stack(kind: str, n: int, grafanas: int, runners: int, s: Stack, lat: Latencies) -> float:
    jobs = [Job(lat.ci["light_job"])]
    for k in groups(n, grafanas):
        for i in range(k):
            jobs.append(Job(single(kind, s, lat), (0,) if i == 0 else (len(jobs) - 1,)))
    return max(run_jobs(jobs, runners))


def one_stack(kind: str, s: Stack, lat: Latencies) -> float:
    """One stack deployed alone by the per-stack workflow: its run's stack-matrix job and the stack's job."""
    return lat.ci["light_job"] + single(kind, s, lat)


def waves(n: int, runners: int) -> int:
    return math.ceil(n / runners) if runners else 1


def first_rollout(lat: Latencies, plan, n: int = 50, runners: int = TARGET_RUNNERS) -> dict:
    s = stack_figures(lat.table, plan)
    got = ours("first", n, 1, runners, s, lat)
    return {"ratio": got["seconds"] / floor(n, s)["total"], "chunks": got["chunks"],
            "longestChunk": max(c.seconds for c in got["chunks"]),
            "exceeded": sorted({x for c in got["chunks"] for x in c.exceeded} | set(got["exceeded"]))}


def simulate(sizes: Sequence[int], grafana_counts: Sequence[int], runner_counts: Sequence[int]) -> dict:
    plan, lat = run("dev"), Latencies.load()
    s = stack_figures(lat.table, plan)
    rows = []
    for kind in ("first", "bump", "none"):
        for g in grafana_counts:
            for n in sizes:
                got = ours(kind, n, g, TARGET_RUNNERS, s, lat)
                exceeded = sorted(set(got["exceeded"]) | {x for c in got["chunks"] for x in c.exceeded})
                rows.append({"run": kind, "stacks": n, "grafanas": g, "ours": got["seconds"], "exceeded": exceeded,
                             "perStack": per_stack(kind, n, g, TARGET_RUNNERS, s, lat),
                             "floor": max(floor(k, s)["total"] for k in groups(n, g)) if kind == "first" else None})
    by_runners = []
    for r in runner_counts:
        got = ours("first", 50, 1, r, s, lat)
        row = {"runners": r, "first": got["seconds"], "firstFloor": floor(50, s)["total"],
               "exceeded": sorted(set(got["exceeded"]) | {x for c in got["chunks"] for x in c.exceeded})}
        for kind in ("bump", "none"):
            row[kind] = ours(kind, 50, 1, r, s, lat)["seconds"]
            row[kind + "Bound"] = waves(50, r) * one_stack(kind, s, lat)
        by_runners.append(row)
    chunks = ours("first", 50, 1, TARGET_RUNNERS, s, lat)["chunks"]
    serial = chunk_job(fleet.FLEET_CHUNK // fleet.SERIAL_WEIGHT, s, lat, whole=fleet.FLEET_CHUNK // fleet.SERIAL_WEIGHT)
    sensitivity = []
    for label, section, key in DRIVING + (("Grafana (endpoint PUT and refresh)", "", ""),):
        labels = GRAFANA if not section else (label,)
        base = (sum(lat.setup_steps.values()) if key == "setup" else lat.ci.get(key) if section == "ci"
                else getattr(lat.table, section)[key] if section else None)
        sensitivity.append({"latency": label, "seconds": base, **{
            f"x{f}": {k: v for k, v in first_rollout(lat.scaled(labels, f), plan).items() if k != "chunks"}
            for f in FACTORS}})
    return {"stack": s.__dict__, "setupSteps": lat.setup_steps, "ci": lat.ci, "setup": lat.setup,
            "floor50": floor(50, s), "rows": rows, "byRunners": by_runners,
            "chunks50": [c.__dict__ for c in chunks], "serialChunk": serial.__dict__, "sensitivity": sensitivity,
            "oneStack": {k: one_stack(k, s, lat) for k in ("bump", "none")}, "targets": targets(
                rows + by_runners, by_runners, chunks, serial, sensitivity)}


def targets(simulated: list[dict], by_runners: list[dict], chunks: list[Chunk], serial: Chunk,
            sensitivity: list[dict]) -> dict:
    """The targets, each with its measured value and whether it is met; the limits over every run simulated."""
    at = {row["runners"]: row for row in by_runners}
    out = {}
    if TARGET_RUNNERS in at:
        ratio = at[TARGET_RUNNERS]["first"] / at[TARGET_RUNNERS]["firstFloor"]
        out[f"first rollout of 50 at {TARGET_RUNNERS} runners <= {TARGET_FLOOR} x floor"] = (
            ratio, ratio <= TARGET_FLOOR)
    for kind, name in (("bump", "chart bump"), ("none", "nothing to do")):
        for r in (20, 40, 60):
            if r in at:
                ratio = at[r][kind] / at[r][kind + "Bound"]
                out[f"{name} of 50 at {r} runners <= {TARGET_WAVES} x waves x one stack"] = (
                    ratio, ratio <= TARGET_WAVES)
    worst = max(v[f"x{f}"]["ratio"] for v in sensitivity for f in FACTORS)
    out[f"every latency x0.5 and x1.5: first rollout <= {TARGET_SENSITIVITY} x floor"] = (
        worst, worst <= TARGET_SENSITIVITY)
    over = sorted({x for v in sensitivity for f in FACTORS for x in v[f"x{f}"]["exceeded"]}
                  | {x for c in [*chunks, serial] for x in c.exceeded} | {x for r in simulated for x in r["exceeded"]})
    out["every job within its timeout and tokens (sensitivity included)"] = (len(over), not over)
    return {k: {"value": v, "met": met} for k, (v, met) in out.items()}


def render(result: dict) -> str:
    def m(x: Optional[float]) -> str:
        return f"{x / 60:7.1f} min" if x is not None else f"{'-':>11}"

    names = {"first": "first rollout", "bump": "chart bump", "none": "nothing to do"}
    f50 = result["floor50"]
    lines = ["Fleet rollout, simulated with bench/latencies.yaml and ops/fleet.py's schedule (no GitHub, no Azure)", "",
             "The floor, 50 stacks on one Grafana (docs/fleet.md, \"The floor\"): " + " + ".join(
                 f"{k} {v:.0f} s" for k, v in f50.items() if k != "total") + f" = {m(f50['total']).strip()}", "",
             f"At {TARGET_RUNNERS} runners (the first rollout's target):",
             f"{'run':<14} {'stacks':>6} {'Grafanas':>8} {'ours':>11} {'per-stack':>11} {'floor':>11} "
             f"{'ours/floor':>10} {'per-stack/ours':>14}"]
    for r in result["rows"]:
        ratio = f"{r['ours'] / r['floor']:10.2f}" if r["floor"] else f"{'-':>10}"
        lines.append(f"{names[r['run']]:<14} {r['stacks']:>6} {r['grafanas']:>8} {m(r['ours'])} {m(r['perStack'])} "
                     f"{m(r['floor'])} {ratio} {r['perStack'] / r['ours']:14.2f}")
    one = result["oneStack"]
    lines += ["", f"By runners, 50 stacks on one Grafana (/waves: against ceil(50 / runners) x one stack alone, "
              f"deployed by the per-stack workflow: chart bump {m(one['bump']).strip()}, nothing to do "
              f"{m(one['none']).strip()}; below 1 where a phase-1 job runs several stacks at once):",
              f"{'runners':>9} {'first rollout':>13} {'/floor':>7} {'chart bump':>11} {'/waves':>7} "
              f"{'nothing':>11} {'/waves':>7}"]
    for row in result["byRunners"]:
        first = row["first"] / row["firstFloor"]
        lines.append(f"{row['runners'] or 'unlimited':>9} {m(row['first']):>13} {first:7.2f} "
                     f"{m(row['bump'])} {row['bump'] / row['bumpBound']:7.2f} {m(row['none'])} "
                     f"{row['none'] / row['noneBound']:7.2f}")
    lines += ["", f"Chunk jobs, first rollout of 50 on one Grafana (limits: timeout {fleet.CHUNK_TIMEOUT_MINUTES} min, "
              f"Pulumi token {fleet.PULUMI_TOKEN_SECONDS // 60} min, az tokens {fleet.AZ_TOKEN_SECONDS // 60} min "
              "after a sign-in):"]
    for c in [*result["chunks50"], {**result["serialChunk"], "apart": True}]:
        what = (f"and apart: a chunk of {c['stacks']} serial stacks (whole up)" if c.get("apart")
                else f"chunk of {c['stacks']} stacks")
        lines.append(f"  {what:<48} {m(c['seconds'])}  az sign-ins renewed {c['relogins']}, longest run after a "
                     f"sign-in {m(c['longest_after_sign_in']).strip()}: "
                     + ("within limits" if not c["exceeded"] else "EXCEEDS " + ", ".join(c["exceeded"])))
    lines += ["", f"Sensitivity, first rollout of 50 on one Grafana at {TARGET_RUNNERS} runners (one latency at a "
              "time; its ratio to the floor taken with that latency too):",
              f"  {'latency':<36} {'seconds':>7}  {'x0.5: /floor':>12} {'longest chunk':>13}  {'x1.5: /floor':>12} "
              f"{'longest chunk':>13}"]
    for v in result["sensitivity"]:
        cells = []
        for f in FACTORS:
            got = v[f"x{f}"]
            cells.append(f"{got['ratio']:12.2f} {m(got['longestChunk']):>13}" + ("!" if got["exceeded"] else " "))
        seconds = f"{v['seconds']:7.0f}" if v["seconds"] is not None else f"{'':>7}"
        lines.append(f"  {v['latency']:<36} {seconds}  {cells[0]} {cells[1]}")
    over = any(v[f"x{f}"]["exceeded"] for v in result["sensitivity"] for f in FACTORS)
    lines += ["  (!: a chunk passes a limit)" if over else "  (no chunk passes a limit)", "", "targets:"]
    for name, t in result["targets"].items():
        value = (f"{t['value']:.2f}" if isinstance(t["value"], float)
                 else f"{t['value']} over a limit" if t["value"] else "none over a limit")
        lines.append(f"  {name}: {value} {'met' if t['met'] else 'NOT MET'}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50,100")
    parser.add_argument("--grafanas", default="1,5")
    parser.add_argument("--runners", default="20,40,60,0", help="runner counts (0: unlimited; default 20,40,60,0)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    numbers = lambda text: [int(x) for x in text.split(",")]  # noqa: E731
    # the targets' runner counts are always simulated; --runners adds rows
    runner_counts = sorted(set(numbers(args.runners)) | {20, TARGET_RUNNERS, 60}, key=lambda r: r or 10 ** 9)
    result = simulate(numbers(args.sizes), numbers(args.grafanas), runner_counts)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0 if all(t["met"] for t in result["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
