"""Deploy-time simulation: this stack vs the seed's manual procedure vs a Terraform port.

    python -m bench.deploy_sim [--stack dev] [--set KEY=VALUE]... [--json]

SIMULATED throughout: no Azure here. Every operation takes the time in ``bench/latencies.yaml`` (fixed
before comparing, the same table for all three; each number names its source or says it is an
assumption). What differs is only how each procedure waits:

- **this stack**: the offline plan's dependency graph (resources, their recorded dependencies and providers,
  invokes gated on steps) run with Pulumi's default unbounded parallelism; the wait steps poll as the scripts
  do (scripts/lib.sh: first check at once, then 5 s doubling to 30 s), so each notices its event at the
  first check at or after it;
- **the seed procedure**: the manual steps one after another, with its fixed ``sleep 30`` after the Helm
  install and 10 s polls for the PLS, the pending connection and the private IP;
- **a Terraform port**: the same graph and parallelism (Terraform's default 10 is wider than this graph),
  but a fixed 180 s ``time_sleep`` after the Helm release (instead of waiting for the PLS) and 180 s after the
  approval (before the refresh).

The physical limit is the sum of latencies on this stack's critical path with no waiting at all. Target:
this stack exceeds it by no more than one poll interval per wait.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

import yaml

from tools.mock_engine import Plan, run

TABLE = Path(__file__).resolve().parent / "latencies.yaml"
LIB_SH = Path(__file__).resolve().parent.parent / "scripts" / "lib.sh"


def poll_defaults() -> tuple[int, int]:
    """(first delay, ceiling) of the scripts' backoff, read from scripts/lib.sh itself."""
    text = LIB_SH.read_text()
    first = int(re.search(r"POLL_INITIAL_SECONDS:-(\d+)", text).group(1))
    ceiling = int(re.search(r"POLL_MAX_SECONDS:-(\d+)", text).group(1))
    return first, ceiling


def backoff_notice(event: float) -> tuple[float, float]:
    """(when the scripts' polling notices an event at ``event`` s, the interval it last slept)."""
    first, ceiling = poll_defaults()
    t, delay, last = 0.0, first, 0.0
    while t < event:
        t, last = t + delay, delay
        delay = min(delay * 2, ceiling)
    return t, last


def fixed_notice(event: float, every: float) -> float:
    """When a fixed-interval poll (first check at once) notices an event at ``event`` s."""
    checks = -(-event // every) if event > 0 else 0
    return checks * every


class Table:
    def __init__(self, path: Path = TABLE) -> None:
        data = yaml.safe_load(path.read_text())
        self.resources = {k: float(v["seconds"]) for k, v in data["resources"].items()}
        self.events = {k: float(v["seconds"]) for k, v in data["events"].items()}

    def resource(self, type_: str) -> float:
        return self.resources.get(type_, self.resources["default"])


def step_kind(resource) -> Optional[str]:
    create = str(resource.inputs.get("create") or "")
    for kind in ("wait_private_link_service", "approve_private_endpoint_connection", "refresh_managed_private_endpoints",
                 "grafana_datasource", "grafana_dashboard"):
        if kind in create:
            return kind
    return None


def polled(what: str, event: float, at: float = 0.0) -> tuple[float, str]:
    """(how long the scripts' polling takes to notice ``what`` appearing ``event`` s after the step
    starts at ``at`` s, a note for the critical path)."""
    took, interval = backoff_notice(event)
    return took, f"{what} at {at + event:.0f}s, noticed at {at + took:.0f}s (poll interval {interval:.0f}s)"


def durations(plan: Plan, table: Table, mode: str) -> dict[str, tuple[float, float, str]]:
    """urn -> (duration, physical duration, what the wait was). ``mode``: "ours" or "terraform"."""
    e = table.events
    first, _ = poll_defaults()
    result = {}
    for r in plan.resources:
        kind = step_kind(r) if r.type == "command:local:Command" else None
        physical = table.resource(r.type)
        note = ""
        if kind == "wait_private_link_service":
            physical = e["pls_after_release"]
            took, note = polled("PLS", physical) if mode == "ours" else (180.0, "fixed time_sleep 180s after the Helm release")
        elif kind == "approve_private_endpoint_connection":
            physical = e["connection_after_mpe"] + e["approval_put"]
            if mode == "ours":  # one backoff sleep, then it reads Approved back
                took, note = physical + first, "approve, then one poll to read it back"
            else:
                took, note = physical + 180.0, "approve, then fixed time_sleep 180s"
        elif kind == "refresh_managed_private_endpoints":
            physical = e["ip_after_refresh"]
            took, note = polled("IP", physical) if mode == "ours" else (physical, "refresh as a long-running action (waits for completion)")
        elif kind == "grafana_datasource":
            physical = took = 2 * e["grafana_api_call"]
        elif kind == "grafana_dashboard":
            physical = took = e["dashboard_download"] + 2 * e["grafana_api_call"]
        else:
            took = physical
        result[r.urn] = (took, physical, note)
    return result


def schedule(plan: Plan, table: Table, mode: str) -> dict:
    """Start and finish of every resource with unbounded parallelism; invokes gated on a resource add their
    latency on the edges out of it; the program's own lookups run first, one after another."""
    timing = durations(plan, table, mode)
    gated = {d for invoke in plan.invokes for d in invoke.dependencies}
    prologue = table.events["invoke"] * sum(1 for i in plan.invokes if not i.dependencies)
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    finish_physical: dict[str, float] = {}
    previous: dict[str, Optional[str]] = {}
    release = next((r.urn for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release"), None)
    for urn in plan.create_order:
        r = plan.get(urn)
        before = set(r.dependencies) | {u for u in (r.parent, r.provider) if u}
        best, best_urn, best_physical = prologue, None, prologue
        for dep in before:
            if dep not in finish:
                continue
            gate = table.events["invoke"] if dep in gated else 0.0
            if finish[dep] + gate > best:
                best, best_urn = finish[dep] + gate, dep
            best_physical = max(best_physical, finish_physical[dep] + gate)
        start[urn], previous[urn] = best, best_urn
        took, physical, note = timing[urn]
        if step_kind(r) == "wait_private_link_service" and release in finish:
            # AKS creates the PLS a fixed time after the release's load balancer, not after this step starts.
            event = finish[release] + table.events["pls_after_release"]
            if mode == "ours":
                took, note = polled("PLS", max(0.0, event - best), best)
            else:
                took = max(took, event - best)  # a fixed sleep that ends before the PLS exists would fail
            physical = max(0.0, finish_physical[release] + table.events["pls_after_release"] - best_physical)
            timing[urn] = (took, physical, note)
        finish[urn] = best + took
        finish_physical[urn] = best_physical + physical
    end = max(finish, key=finish.get)
    path, node = [], end
    while node:
        path.append(node)
        node = previous[node]
    path.reverse()
    return {"total": finish[end], "physical": max(finish_physical.values()), "path": path,
            "start": start, "finish": finish, "timing": timing}


def seed_procedure(table: Table, plan: Optional[Plan] = None) -> list[tuple[str, float]]:
    """The manual procedure, step by step (each step waits for the previous one). When the stack creates
    Grafana or the workspace, the seed's operator creates them first too."""
    r, e = table.resources, table.events
    pls_poll = fixed_notice(e["pls_after_release"] - 30, 10)
    types = {res.type for res in plan.resources} if plan else set()
    created = [(f"create {name}", r[t]) for t, name in (("azure-native:monitor:AzureMonitorWorkspace", "the Azure Monitor workspace"),
                                                        ("azure-native:dashboard:Grafana", "the Grafana workspace"))
               if t in types]
    return created + [
        ("look up cluster, Grafana, workspace, client (az ... show)", 4 * e["invoke"]),
        ("az k8s-extension create (Inspektor Gadget)", r["azure-native:kubernetesconfiguration:Extension"]),
        ("helm install pyroscope --wait", r["kubernetes:helm.sh/v3:Release"]),
        ("sleep 30", 30.0),
        (f"poll every 10s for the PLS (there {e['pls_after_release'] - 30:.0f}s after the sleep)", pls_poll),
        ("create the managed private endpoint", r["azure-native:dashboard:ManagedPrivateEndpoint"]),
        ("poll every 10s for the Pending connection", fixed_notice(e["connection_after_mpe"], 10)),
        ("approve the connection", e["approval_put"]),
        ("refresh managed private endpoints, poll every 10s for the IP", fixed_notice(e["ip_after_refresh"], 10)),
        ("role assignment Monitoring Data Reader", r["azure-native:authorization:RoleAssignment"]),
        ("create the Pyroscope and Prometheus datasources", 2 * e["grafana_api_call"]),
        ("download and import the dashboard (one upload; the stack also reads it first)", e["dashboard_download"] + e["grafana_api_call"]),
    ]


def simulate(plan: Plan, table: Optional[Table] = None) -> dict:
    table = table or Table()
    ours = schedule(plan, table, "ours")
    terraform = schedule(plan, table, "terraform")
    seed_steps = seed_procedure(table, plan)
    seed = sum(t for _, t in seed_steps)
    waits = [(plan.get(u).name, ours["timing"][u]) for u in ours["path"] if "noticed" in ours["timing"][u][2]]
    first, ceiling = poll_defaults()
    excess = ours["total"] - ours["physical"]
    return {
        "ours": ours["total"], "seed": seed, "terraform": terraform["total"], "physical": ours["physical"],
        "ratios": {"seed/ours": seed / ours["total"], "terraform/ours": terraform["total"] / ours["total"],
                   "ours/physical": ours["total"] / ours["physical"]},
        "excess": excess,
        "waitsOnPath": len(waits),
        "withinTarget": excess <= ceiling * max(1, len(waits)),
        "criticalPath": [{"resource": plan.get(u).name, "type": plan.get(u).type, "start": ours["start"][u],
                          "finish": ours["finish"][u], "note": ours["timing"][u][2]} for u in ours["path"]
                         if ours["timing"][u][0] > 0 or ours["timing"][u][2]],
        "seedSteps": [{"step": s, "seconds": t} for s, t in seed_steps],
    }


def render(result: dict) -> str:
    def m(seconds: float) -> str:
        return f"{seconds:6.0f} s ({seconds / 60:4.1f} min)"

    lines = ["Deploy time, simulated with bench/latencies.yaml (no Azure involved)", "",
             f"  this stack (Pulumi, polling waits) {m(result['ours'])}",
             f"  seed procedure, step by step       {m(result['seed'])}",
             f"  Terraform port, fixed 180 s sleeps  {m(result['terraform'])}",
             f"  physical limit (no waiting at all) {m(result['physical'])}", "",
             "  ratios: " + ", ".join(f"{k} = {v:.2f}" for k, v in result["ratios"].items()),
             f"  this stack exceeds the physical limit by {result['excess']:.0f} s over {result['waitsOnPath']} wait(s) "
             f"on the critical path: {'within' if result['withinTarget'] else 'OVER'} one poll interval per wait", "",
             "Critical path (this stack):"]
    for step in result["criticalPath"]:
        lines.append(f"  {step['start']:6.0f} -> {step['finish']:6.0f} s  {step['resource']} ({step['type']})"
                     + (f"  [{step['note']}]" if step["note"] else ""))
    lines += ["", "Seed procedure:"] + [f"  {s['seconds']:6.0f} s  {s['step']}" for s in result["seedSteps"]]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.deploy_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from components.config import ConfigError
    from tools.plan import _parse_sets

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
