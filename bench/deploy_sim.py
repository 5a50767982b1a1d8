"""Deploy-time simulation: this stack vs the published procedure vs a Terraform port, against the physical limit.

    python -m bench.deploy_sim [--stack dev] [--set KEY=VALUE]... [--json]

SIMULATED throughout: no Azure here. Every operation takes the time in ``bench/latencies.yaml`` (fixed before
comparing, the same table for all); what differs is only the order of the steps and how each procedure waits: this
stack (the offline plan's dependency graph, the waits polling as ``steps/lib.sh`` does), the seed (the published
procedure, command by command), a Terraform port (fixed ``time_sleep``s) and the physical limit (the unavoidable
chain Helm release -> the private link Service's load balancer -> PLS -> MPE -> approval -> refresh -> Pyroscope
datasource, nothing polled). This stack's private link Service is its own, after the release (components/pyroscope.py):
its load balancer's frontend comes after the pods, where the chart's own LoadBalancer Service of the seed and of the
Terraform port (which has neither that Service nor the claims) gets it during the release. Also the request rate
against Azure Resource Manager's documented limits for 50 stacks in one subscription.
Targets: ``seed/ours >= 1.3``, ``terraform/ours >= 1.6``, ``ours/physical <= 1.05``, and each wait on the critical
path notices its event within one poll interval (plus one check, <= 10 s). Output: a text report, or ``--json``.
The model of each procedure and the sources: docs/decisions/benchmarks.md ("Deploy time").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import yaml

from offline.program import Plan, run

TABLE = Path(__file__).resolve().parent / "latencies.yaml"
LIB_SH = Path(__file__).resolve().parent.parent / "steps" / "lib.sh"

#: The published procedure's fixed waits (gpu-profiling.md, commit above): the PLS poll's ``sleep 10`` and the
#: ``sleep 30`` after ``az grafana $MPE create``.
SEED_POLL_SLEEP = 10.0
SEED_SLEEP_AFTER_MPE = 30.0
#: The Terraform port's ``time_sleep`` (after the Helm release, after the approval).
TERRAFORM_SLEEP = 180.0
TARGETS = {"seed/ours": (">=", 1.3), "terraform/ours": (">=", 1.6), "ours/physical": ("<=", 1.05)}
#: A wait notices its event within this many seconds.
NOTICE_BOUND = 10.0
#: ARM's documented limits (module docstring): subscription reads per principal, and the Network RP's reads.
READ_BUCKET, READ_REFILL_PER_SECOND, GLOBAL_FACTOR = 250, 25.0, 15
NETWORK_READS_PER_5_MIN = 10_000
FLEET = 50

EXTENSION = "azure-native:kubernetesconfiguration:Extension"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
SERVICE = "kubernetes:core/v1:Service"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
COMMAND = "command:local:Command"
WORKSPACE_TYPES = ("azure-native:dashboard:Grafana", "azure-native:monitor:AzureMonitorWorkspace")
STEP_KINDS = ("wait_private_link_service", "approve_private_endpoint_connection", "refresh_managed_private_endpoints",
              "grafana_datasource", "grafana_dashboard")


class Table:
    """bench/latencies.yaml: ``resource(type)`` and ``events[name]`` in seconds."""

    def __init__(self, path: Path = TABLE) -> None:
        data = yaml.safe_load(path.read_text())
        self.resources = {k: float(v["seconds"]) for k, v in data["resources"].items()}
        self.events = {k: float(v["seconds"]) for k, v in data["events"].items()}

    def resource(self, type_: str) -> float:
        return self.resources.get(type_, self.resources["default"])


def poll_defaults() -> tuple[int, int]:
    """(first delay, ceiling) of the scripts' polling, read from steps/lib.sh itself."""
    text = LIB_SH.read_text()
    first = int(re.search(r"POLL_INITIAL_SECONDS:-(\d+)", text).group(1))
    ceiling = int(re.search(r"POLL_MAX_SECONDS:-(\d+)", text).group(1))
    return first, ceiling


def delays(first: float, ceiling: float) -> Iterator[float]:
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, ceiling)


@dataclass
class Wait:
    """One wait: when its event happened and when the step noticed it (seconds from the deploy's start),
    the gap between the last two checks, and the start of every check (an ARM request each)."""

    what: str
    event: float
    noticed: float
    interval: float
    checks: list[float] = field(default_factory=list)

    @property
    def slack(self) -> float:
        return self.noticed - self.event


def poll(what: str, start: float, event: float, check: float, schedule: Iterator[float],
         extra: Callable[[int], float] = lambda n: 0.0, first_offset: float = 0.0) -> Wait:
    """Checks from ``start + first_offset`` on, the next one each ``delay`` after the previous started (or when
    it and ``extra(n)`` ended, if longer); the first that starts at or after ``event`` sees it and ends
    ``check`` later. ``extra(n)``: more work after the n-th check in the same slot (the refresh's re-post)."""
    slot, at, n, gap, checks = start, start + first_offset, 0, 0.0, []
    busy = first_offset
    while True:
        checks.append(at)
        n += 1
        if at >= event:
            return Wait(what, event, at + check, gap, checks)
        busy += check + extra(n)
        gap = max(next(schedule), busy)
        slot += gap
        at, busy = slot, 0.0


def step_kind(resource) -> Optional[str]:
    if resource.type != COMMAND:
        return None
    create = str(resource.inputs.get("create") or "")
    return next((kind for kind in STEP_KINDS if kind in create), None)


def is_pyroscope_datasource(resource) -> bool:
    if step_kind(resource) != "grafana_datasource":
        return False
    definition = (resource.inputs.get("environment") or {}).get("DATASOURCE", "")
    try:
        return json.loads(definition).get("type") == "grafana-pyroscope-datasource"
    except (TypeError, ValueError):
        return "pyroscope" in resource.name  # unknown at preview: the step's name says which


def is_private_link_service(resource) -> bool:
    """The stack's Service that AKS makes the PLS for: the one of type LoadBalancer (the write path's is ClusterIP)."""
    return resource.type == SERVICE and (resource.inputs.get("spec") or {}).get("type") == "LoadBalancer"


def chain(plan: Plan) -> list:
    """The unavoidable chain's resources in the plan: the Helm release, the private link Service, the PLS wait, the
    MPE, the approval, the refresh and the Pyroscope datasource. Raises LookupError if the plan lacks one."""
    picks = [lambda r: r.type == RELEASE, is_private_link_service,
             lambda r: step_kind(r) == "wait_private_link_service",
             lambda r: r.type == MPE, lambda r: step_kind(r) == "approve_private_endpoint_connection",
             lambda r: step_kind(r) == "refresh_managed_private_endpoints", is_pyroscope_datasource]
    found = []
    for pick in picks:
        matches = [r for r in plan.resources if pick(r)]
        if len(matches) != 1:
            raise LookupError(f"the plan has {len(matches)} resources for one step of the chain")
        found.append(matches[0])
    return found


@dataclass
class Timed:
    start: float
    finish: float
    note: str = ""
    wait: Optional[Wait] = None
    reads: list[tuple[float, str]] = field(default_factory=list)  # (time, resource provider)


@dataclass
class Schedule:
    total: float
    steps: dict[str, Timed]
    path: list[str]
    prologue_reads: list[tuple[float, str]]


def predecessors(plan: Plan, mode: str) -> dict[str, set[str]]:
    """urn -> what it starts after: dependencies, parent, provider. The Terraform port (module docstring) has
    no namespace resource and its Helm release waits for the extension, as the published procedure's does; it
    installs the chart as the procedure does, so it has neither the private link Service (the chart's Service has
    the PLS annotations) nor the claims (the StatefulSet makes them): what follows one of them follows what it
    followed."""
    before = {r.urn: set(r.dependencies) | {u for u in (r.parent, r.provider) if u} for r in plan.resources}
    if mode == "terraform":
        namespace = {r.urn for r in plan.resources if r.type == NAMESPACE or r.type.endswith(":GadgetNamespace")}
        bypassed = {r.urn for r in plan.resources if is_private_link_service(r) or r.type == CLAIM}

        def through(deps: set[str]) -> set[str]:
            out: set[str] = set()
            for dep in deps:
                out |= through(before[dep]) if dep in bypassed else {dep}
            return out

        dropped = namespace | bypassed
        extension = next(r.urn for r in plan.resources if r.type == EXTENSION)
        before = {urn: through(deps) - dropped for urn, deps in before.items() if urn not in dropped}
        for r in plan.resources:
            if r.type == RELEASE:
                before[r.urn].add(extension)
    return before


def _provider(token_or_type: str) -> str:
    module = token_or_type.split(":")[1] if ":" in token_or_type else ""
    return {"network": "Microsoft.Network", "dashboard": "Microsoft.Dashboard"}.get(module, f"azure-native:{module}")


def schedule(plan: Plan, table: Table, mode: str) -> Schedule:
    """Start and finish of every resource ("ours" or "terraform"), unbounded parallelism."""
    e, check = table.events, table.events["poll_check"]
    first, ceiling = poll_defaults()
    before = predecessors(plan, mode)
    gated = {d for invoke in plan.invokes for d in invoke.dependencies}
    lookups = [i for i in plan.invokes if not i.dependencies]
    if mode == "ours":  # plain invokes in the program, one after another
        prologue_reads = [(n * e["invoke"], _provider(i.token)) for n, i in enumerate(lookups)]
        prologue = e["invoke"] * len(lookups)
    else:  # Terraform reads its data sources in parallel
        prologue_reads = [(0.0, _provider(i.token)) for i in lookups]
        prologue = e["invoke"] if lookups else 0.0
    steps: dict[str, Timed] = {}
    previous: dict[str, Optional[str]] = {}
    for urn in plan.create_order:
        if urn not in before:
            continue
        r = plan.get(urn)
        start, after = prologue, None
        for dep in before[urn]:
            if dep in steps:
                ready = steps[dep].finish + (e["invoke"] if dep in gated else 0.0)
                if ready > start:
                    start, after = ready, dep
        previous[urn] = after
        kind = step_kind(r)
        timed = Timed(start, start + table.resource(r.type))
        if is_private_link_service(r):  # pulumi-kubernetes' await: the ingress IP, and the endpoints settled
            timed = Timed(start, start + max(table.resource(r.type), e["load_balancer_frontend"]),
                          f"load balancer frontend at {start + e['load_balancer_frontend']:.0f}s")
        elif kind == "wait_private_link_service":
            # AKS makes the PLS some time after the Service's load balancer: this stack's own Service's, or the
            # chart's, whose IP the release's Helm --wait waited for (the Terraform port).
            service = next((d for d in before[urn] if is_private_link_service(plan.get(d))), None)
            if service is not None:
                event = steps[service].start + e["load_balancer_frontend"] + e["pls_after_load_balancer"]
            else:
                release = next(d for d in before[urn] if plan.get(d).type == RELEASE)
                event = steps[release].finish + e["pls_after_load_balancer"]
            if mode == "ours":
                w = poll("PLS", start, event, check, delays(first, ceiling))
                timed = Timed(start, w.noticed, f"PLS at {event:.0f}s, noticed at {w.noticed:.0f}s", w,
                              [(t, "Microsoft.Network") for t in w.checks])
            else:  # a sleep that ends before the PLS exists would fail the next step: never shorter
                timed = Timed(start, max(start + TERRAFORM_SLEEP, event), f"time_sleep {TERRAFORM_SLEEP:.0f}s")
        elif kind == "approve_private_endpoint_connection":
            event = max(steps[d].finish for d in before[urn] if plan.get(d).type == MPE) + e["connection_after_mpe"]
            if mode == "ours":
                w = poll("Pending connection", start, event, check, delays(first, ceiling))
                timed = Timed(start, w.noticed + e["approval_put"], "approved; the PUT's answer says Approved", w,
                              [(t, "Microsoft.Network") for t in w.checks])
            else:
                timed = Timed(start, start + e["approval_put"] + TERRAFORM_SLEEP,
                              f"approve, time_sleep {TERRAFORM_SLEEP:.0f}s")
        elif kind == "refresh_managed_private_endpoints":
            if mode == "ours":  # one read first (no refresh yet after this approval), then the POST
                event = start + check + e["ip_after_refresh"]
                w = poll("private IP", start, event, check, delays(first, ceiling),
                         extra=lambda n: check if n % 4 == 0 else 0.0, first_offset=2 * check)
                timed = Timed(start, w.noticed, f"IP at {event:.0f}s, noticed at {w.noticed:.0f}s", w,
                              [(t, "Microsoft.Dashboard") for t in [start, *w.checks]])
            else:
                event = start + e["ip_after_refresh"]  # the refresh's long-running action, posted at the step's start
                timed = Timed(start, event, "refresh as a long-running action (waits for completion)")
        elif kind == "grafana_datasource":
            timed = Timed(start, start + 2 * e["grafana_api_call"])
        elif kind == "grafana_dashboard":
            timed = Timed(start, start + e["dashboard_download"] + 2 * e["grafana_api_call"])
        elif r.type.startswith("azure-native:") and r.custom and timed.finish > start:
            # the provider's status polls of a long-running create, and one read of the result
            polls = int((timed.finish - start) // e["provider_lro_poll"])
            timed.reads = [(start + k * e["provider_lro_poll"], _provider(r.type)) for k in range(1, polls + 1)]
            timed.reads.append((timed.finish, _provider(r.type)))
        steps[urn] = timed
    for invoke in plan.invokes:  # a gated read happens when its step has finished
        for dep in invoke.dependencies:
            if dep in steps:
                steps[dep].reads.append((steps[dep].finish, _provider(invoke.token)))
    end = max(steps, key=lambda u: steps[u].finish)
    path, node = [], end
    while node:
        path.append(node)
        node = previous[node]
    return Schedule(steps[end].finish, steps, list(reversed(path)), prologue_reads)


def physical(plan: Plan, table: Table) -> tuple[float, list[tuple[str, float]]]:
    """The physical limit: the chain's steps (and a workspace the stack creates) at their physical times along
    the plan's edges, everything else costing nothing; (seconds, [(chain step, its physical seconds)])."""
    e = table.events
    links = chain(plan)
    weight = {links[0].urn: table.resource(RELEASE), links[1].urn: e["load_balancer_frontend"],
              links[2].urn: e["pls_after_load_balancer"], links[3].urn: table.resource(MPE),
              links[4].urn: e["connection_after_mpe"] + e["approval_put"], links[5].urn: e["ip_after_refresh"],
              links[6].urn: 2 * e["grafana_api_call"]}
    for r in plan.resources:
        if r.type in WORKSPACE_TYPES:
            weight[r.urn] = table.resource(r.type)
    before = predecessors(plan, "ours")
    finish: dict[str, float] = {}
    for urn in plan.create_order:
        finish[urn] = max((finish[d] for d in before[urn] if d in finish), default=0.0) + weight.get(urn, 0.0)
    return max(finish.values()), [(r.name, weight[r.urn]) for r in links]


def seed_procedure(table: Table, plan: Optional[Plan] = None) -> list[tuple[str, float]]:
    """The published procedure command by command (module docstring), each waiting for the previous one:
    [(command, seconds)]. With ``createGrafana``/``createMonitorWorkspace`` its operator creates them first."""
    r, e, check = table.resources, table.events, table.events["poll_check"]
    types = {res.type for res in plan.resources} if plan else set()
    steps = [(f"create {what}", r[t])
             for t, what in (("azure-native:monitor:AzureMonitorWorkspace", "the Azure Monitor workspace"),
                             ("azure-native:dashboard:Grafana", "the Grafana workspace")) if t in types]
    steps += [("az k8s-extension create (waits for the extension)", r[EXTENSION]),
              ("helm install pyroscope -n gadget (no --wait: returns at once)", 0.0),
              ("az aks show (node resource group)", check)]
    # The PLS appears pls_after_load_balancer after the load balancer of the chart's Service, which is ready Release
    # seconds after the install (the figure covers the pull and the frontend, which come at the same time).
    elapsed = sum(s for _, s in steps)
    install = elapsed - check
    w = poll("PLS", elapsed, install + r[RELEASE] + e["pls_after_load_balancer"], check,
             iter(lambda: SEED_POLL_SLEEP + check, None))
    steps += [(f"until az network private-link-service show; do sleep {SEED_POLL_SLEEP:.0f}; done "
               f"(PLS at {w.event - install:.0f}s after the install)", w.noticed - elapsed),
              ("az network private-link-service show (PLS id)", check),
              ("az grafana mpe create", r[MPE]),
              (f"sleep {SEED_SLEEP_AFTER_MPE:.0f}", SEED_SLEEP_AFTER_MPE),
              ("az network private-link-service show (the Pending connection's name)", check),
              ("az network private-link-service connection update --connection-status Approved", e["approval_put"]),
              ("az grafana mpe refresh (waits for the long-running action)", e["ip_after_refresh"]),
              ("az grafana mpe show (private IP)", check),
              ("az grafana data-source create (Pyroscope)", e["grafana_api_call"]),
              ("az resource show (workspace query endpoint)", check),
              ("az grafana data-source create (Prometheus)", e["grafana_api_call"]),
              ("Monitoring Data Reader for Grafana's identity (the procedure's prerequisite)",
               r["azure-native:authorization:RoleAssignment"]),
              ("curl the dashboard; az grafana dashboard create", e["dashboard_download"] + e["grafana_api_call"]),
              ("az grafana show (dashboard URL)", check)]
    return steps


def request_rates(ours: Schedule) -> dict:
    """ARM reads of one stack over its deploy and of FLEET stacks started together (the worst alignment), under
    one principal in one subscription and region, against the documented limits (module docstring)."""
    reads = list(ours.prologue_reads) + [read for step in ours.steps.values() for read in step.reads]
    horizon = int(max(t for t, _ in reads)) + 1
    per_second = [0] * (horizon + 1)
    network = [0] * (horizon + 1)
    for t, rp in reads:
        per_second[int(t)] += 1
        network[int(t)] += rp == "Microsoft.Network"
    window = 60  # sustained rate; the bucket (250 reads, 10 s of refill) absorbs shorter bursts
    peak = max(sum(per_second[i:i + window]) for i in range(horizon + 1)) / window
    network_5min = max(sum(network[i:i + 300]) for i in range(horizon + 1))
    tokens, lowest = float(READ_BUCKET), float(READ_BUCKET)
    for count in per_second:  # token bucket: refill, then spend the fleet's reads of that second
        tokens = min(READ_BUCKET, tokens + READ_REFILL_PER_SECOND) - FLEET * count
        lowest = min(lowest, tokens)
    return {"readsPerStack": len(reads), "peakReadsPerSecondPerStack": peak, "windowSeconds": window,
            "fleet": FLEET, "fleetPeakReadsPerSecond": FLEET * peak, "refillPerSecond": READ_REFILL_PER_SECOND,
            "globalRefillPerSecond": GLOBAL_FACTOR * READ_REFILL_PER_SECOND,
            "bucket": READ_BUCKET, "lowestTokens": lowest, "throttled": lowest < 0,
            "fleetNetworkReadsPer5Min": FLEET * network_5min, "networkLimitPer5Min": NETWORK_READS_PER_5_MIN}


def simulate(plan: Plan, table: Optional[Table] = None) -> dict:
    table = table or Table()
    ours = schedule(plan, table, "ours")
    terraform = schedule(plan, table, "terraform")
    limit, links = physical(plan, table)
    seed_steps = seed_procedure(table, plan)
    seed = sum(t for _, t in seed_steps)
    first, ceiling = poll_defaults()
    check = table.events["poll_check"]
    waits = [(plan.get(u).name, ours.steps[u].wait) for u in plan.create_order
             if u in ours.steps and ours.steps[u].wait]
    on_path = [(plan.get(u).name, ours.steps[u].wait) for u in ours.path if ours.steps[u].wait]
    within = all(w.slack <= w.interval + check + 1e-9 and w.slack <= NOTICE_BOUND for _, w in waits)
    ratios = {"seed/ours": seed / ours.total, "terraform/ours": terraform.total / ours.total,
              "ours/physical": ours.total / limit}
    met = {k: (ratios[k] >= v) if op == ">=" else (ratios[k] <= v) for k, (op, v) in TARGETS.items()}
    slack = sum(w.slack for _, w in on_path)
    return {
        "ours": ours.total, "seed": seed, "terraform": terraform.total, "physical": limit,
        "ratios": ratios, "targets": {k: {"target": f"{op} {v}", "met": met[k]} for k, (op, v) in TARGETS.items()},
        "excess": ours.total - limit, "pollingSlackOnPath": slack, "waitsOnPath": len(on_path),
        "withinTarget": within, "pollSchedule": {"first": first, "ceiling": ceiling, "check": check},
        "chain": [{"step": name, "seconds": seconds} for name, seconds in links],
        "workspaces": [{"step": r.name, "seconds": table.resource(r.type)} for r in plan.resources
                       if r.type in WORKSPACE_TYPES],
        "waits": [{"step": name, "what": w.what, "event": w.event, "noticed": w.noticed, "slack": w.slack,
                   "interval": w.interval, "checks": len(w.checks)} for name, w in waits],
        "criticalPath": [{"resource": plan.get(u).name, "type": plan.get(u).type, "start": ours.steps[u].start,
                          "finish": ours.steps[u].finish, "note": ours.steps[u].note} for u in ours.path
                         if ours.steps[u].finish > ours.steps[u].start or ours.steps[u].note],
        "terraformPath": [{"resource": plan.get(u).name, "start": terraform.steps[u].start,
                           "finish": terraform.steps[u].finish, "note": terraform.steps[u].note} for u in terraform.path
                          if terraform.steps[u].finish > terraform.steps[u].start],
        "seedSteps": [{"step": s, "seconds": t} for s, t in seed_steps],
        "requests": request_rates(ours),
    }


def render(result: dict) -> str:
    def m(seconds: float) -> str:
        return f"{seconds:6.0f} s ({seconds / 60:4.1f} min)"

    schedule_ = result["pollSchedule"]
    r = result["requests"]
    lines = ["Deploy time, simulated with bench/latencies.yaml (no Azure involved)", "",
             f"  this stack (Pulumi, polling waits)   {m(result['ours'])}",
             f"  seed procedure, step by step         {m(result['seed'])}",
             f"  Terraform port, fixed 180 s sleeps    {m(result['terraform'])}",
             f"  physical limit (the chain, no wait)  {m(result['physical'])}", "",
             "  ratios: " + ", ".join(f"{k} = {v:.2f}" for k, v in result["ratios"].items()),
             "  targets: " + ", ".join(f"{k} {t['target']} {'met' if t['met'] else 'NOT MET'}"
                                       for k, t in result["targets"].items()),
             f"  this stack exceeds the physical limit by {result['excess']:.0f} s: "
             f"{result['pollingSlackOnPath']:.0f} s of "
             f"polling slack over {result['waitsOnPath']} wait(s) on the critical path, the rest lookups, "
             "the namespace, the claims "
             f"and reads the chain needs; {'within' if result['withinTarget'] else 'NOT within'} "
             "one poll interval per wait",
             "", "Unavoidable chain (physical limit): "
             + " -> ".join(f"{c['step']} {c['seconds']:.0f} s" for c in result["chain"])
             + ("".join(f"; {w['step']} {w['seconds']:.0f} s before the steps that read it"
                        for w in result["workspaces"])),
             "", "Critical path (this stack):"]
    for step in result["criticalPath"]:
        lines.append(f"  {step['start']:6.0f} -> {step['finish']:6.0f} s  {step['resource']} ({step['type']})"
                     + (f"  [{step['note']}]" if step["note"] else ""))
    lines += ["", f"Slack per wait (checks {schedule_['first']} s then {schedule_['ceiling']} s apart, "
                  f"{schedule_['check']:.0f} s each; bound: one interval plus one check, <= {NOTICE_BOUND:.0f} s):"]
    for w in result["waits"]:
        lines.append(f"  {w['step']}: {w['what']} at {w['event']:.0f} s, noticed at {w['noticed']:.0f} s: slack "
                     f"{w['slack']:.0f} s (last interval {w['interval']:.0f} s, {w['checks']} check(s))")
    lines += ["", f"ARM reads ({r['fleet']} stacks in one subscription and region, one principal, "
                  "all started together):",
              f"  one stack: {r['readsPerStack']} reads (lookups, polls, the provider's status reads), at most "
              f"{r['peakReadsPerSecondPerStack']:.2f}/s over any {r['windowSeconds']} s",
              f"  {r['fleet']} stacks: at most {r['fleetPeakReadsPerSecond']:.1f}/s over any "
              f"{r['windowSeconds']} s against "
              f"{r['refillPerSecond']:.0f}/s per principal ({r['globalRefillPerSecond']:.0f}/s per subscription); "
              "token "
              f"bucket of {r['bucket']}: lowest {r['lowestTokens']:.0f} left, "
              f"{'THROTTLED' if r['throttled'] else 'never throttled'}",
              f"  {r['fleet']} stacks: Microsoft.Network reads {r['fleetNetworkReadsPer5Min']} in the busiest 5 min "
              f"against {r['networkLimitPer5Min']}"]
    lines += ["", "Terraform port (critical path):"] + [
        f"  {s['start']:6.0f} -> {s['finish']:6.0f} s  {s['resource']}" + (f"  [{s['note']}]" if s["note"] else "")
        for s in result["terraformPath"]]
    lines += ["", "Seed procedure:"] + [f"  {s['seconds']:6.0f} s  {s['step']}" for s in result["seedSteps"]]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.deploy_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from offline.plan import _parse_sets
    from stack_config.schema import ConfigError

    try:
        plan = run(args.stack, _parse_sets(args.sets))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result = simulate(plan)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
