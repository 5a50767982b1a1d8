"""Fleet rollout simulation: N stacks over G Grafanas, our scheme (docs/fleet.md) against today's serialized one.

    python -m bench.fleet_sim [--sizes 1,10,50,100] [--grafanas 1,5] [--json]

SIMULATED: no GitHub, no Azure. One stack's steps come from ``bench.deploy_sim`` on the dev stack's offline plan,
the CI overheads from ``bench/latencies.yaml``'s ``ci`` section; stacks are spread over the Grafanas in turn.
Schemes: **today** (per Grafana one job per stack, one after another), **ours** (``ops/fleet.py``: phase 1 every
stack at once, then per Grafana the conflicting writes in chunks) and the **floor** (the cluster side in parallel
plus every stack's conflicting Grafana operations one after another). Three runs: a first rollout, a chart-version
bump on every stack, a run with nothing to do. Targets: first rollout of 50 on one Grafana <= 1.2 x the floor; chart
bump and nothing-to-do of 50 <= 1.5 x one stack's time. Output: a text report, or ``--json``. The model in detail:
docs/decisions/benchmarks.md ("Fleet rollout").
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Optional, Sequence

import yaml

from bench import deploy_sim
from offline.program import run
from ops import fleet

FLEET_PARALLEL = 8  # ops/fleet.py's default
FLEET_CHUNK, SERIAL_WEIGHT = fleet.FLEET_CHUNK, fleet.SERIAL_WEIGHT
TARGET_FLOOR, TARGET_SINGLE = 1.2, 1.5


@dataclass
class Stack:
    """One stack's figures (seconds), from deploy_sim's schedule of the dev plan."""

    full: float          # pulumi up of a first rollout, lookups included
    cluster: float       # the same without the excluded resources (phase 1 of a first rollout)
    prologue: float      # the program's lookups
    mpe: float           # the endpoint's PUT
    approval: float      # the approval step (its wait for the connection, the PUT)
    refresh_busy: float  # refreshManagedPrivateEndpoints' long-running action
    datasource: float    # the Pyroscope datasource step
    release: float       # the Helm release's update (chart bump; the private link Service is not touched)
    physical_cluster: float  # namespace, claims, release, the Service's load balancer, the PLS appearing; no polls


def stack_figures(table: deploy_sim.Table) -> Stack:
    plan = run("dev")
    ours = deploy_sim.schedule(plan, table, "ours")
    links = deploy_sim.chain(plan)  # release, private link Service, PLS wait, MPE, approval, refresh, datasource
    excluded = {links[3].urn, links[4].urn, links[5].urn, links[6].urn}
    e = table.events
    prologue = e["invoke"] * len([i for i in plan.invokes if not i.dependencies])
    step = lambda r: ours.steps[r.urn].finish - ours.steps[r.urn].start  # noqa: E731
    namespace = table.resource(deploy_sim.NAMESPACE)
    # The claims are created side by side (each one request), all before the release.
    claims = table.resource(deploy_sim.CLAIM) if any(r.type == deploy_sim.CLAIM for r in plan.resources) else 0.0
    return Stack(full=ours.total, cluster=max(t.finish for u, t in ours.steps.items() if u not in excluded),
                 prologue=prologue, mpe=table.resource(deploy_sim.MPE), approval=step(links[4]),
                 refresh_busy=e["ip_after_refresh"], datasource=step(links[6]),
                 release=table.resource(deploy_sim.RELEASE),
                 physical_cluster=namespace + claims + table.resource(deploy_sim.RELEASE)
                 + e["load_balancer_frontend"] + e["pls_after_load_balancer"])


def ci_table() -> dict[str, float]:
    data = yaml.safe_load(deploy_sim.TABLE.read_text())
    return {k: float(v["seconds"]) for k, v in data["ci"].items()}


def chunk_job(k: int, s: Stack, ci: dict[str, float], check: float, parallel: int = FLEET_PARALLEL) -> float:
    """Seconds of one ``grafana`` job (one chunk of ``k`` stacks of class grafana): its setup; pass 1, the endpoint
    PUTs one stack after another (pulumi's start, the lookups, the PUT); pass 2, FLEET_PARALLEL stacks at once, each
    refresh holding the Grafana for its long-running action while the others retry its 409 on the scripts'
    schedule (``steps/lib.sh`` backoff), then verify."""
    start, verify = ci["pulumi_startup"], ci["verify"]
    t = ci["job_setup"] + k * (start + s.prologue + s.mpe)       # pass 1: one endpoint PUT at a time
    slots, free, end = [t] * min(parallel, k), 0.0, t            # pass 2: FLEET_PARALLEL stacks at once
    for _ in range(k):  # each stack takes the earliest free slot; the refreshes hold the Grafana in turn
        slot = min(range(len(slots)), key=lambda j: slots[j])
        ready = slots[slot] + start + s.prologue + s.approval
        began, noticed = refresh(ready, free, s.refresh_busy, check)
        free = began + s.refresh_busy
        slots[slot] = noticed + s.datasource + verify
        end = max(end, slots[slot])
    return end


def whole_chunk_job(s: Stack, ci: dict[str, float]) -> float:
    """Seconds of a chunk of only ``serial`` stacks (FLEET_CHUNK // SERIAL_WEIGHT of them): each one's whole
    ``pulumi up``, taken as a first rollout's (the private link Service re-created, and the release with the
    namespace; the PLS, the endpoint, approval, refresh, datasource), one after another, then verify."""
    k = FLEET_CHUNK // SERIAL_WEIGHT
    return ci["job_setup"] + k * (ci["pulumi_startup"] + s.full) + ci["verify"]


def simulate(n: int, grafanas: int, kind: str, s: Stack, ci: dict[str, float], check: float,
             parallel: int = FLEET_PARALLEL, chunk: int = FLEET_CHUNK) -> dict[str, float]:
    """Total seconds of one run of ``kind`` (first, bump, none) for ``n`` stacks over ``grafanas``: ours, today's,
    the floor, and one stack alone under today's scheme; for a first rollout also the longest Grafana job (chunk)."""
    setup, light, start, verify = ci["job_setup"], ci["light_job"], ci["pulumi_startup"], ci["verify"]
    up = {"first": s.full, "bump": s.prologue + s.release, "none": s.prologue}[kind]
    single = setup + start + up + verify
    groups = [len(range(g, n, grafanas)) for g in range(grafanas) if g < n]
    today = light + max(k * single for k in groups)
    preview = start + s.prologue
    if kind == "first":
        phase1 = setup + preview + start + s.cluster + ci["artifact"]
        totals, longest = [], 0.0
        for k in groups:  # per Grafana: the chunks of the Grafana phase, one job after another (max-parallel: 1)
            t = light + phase1 + light
            for size in [min(chunk, k - i) for i in range(0, k, chunk)]:
                job = chunk_job(size, s, ci, check, parallel)
                t += job
                longest = max(longest, job)
            totals.append(t)
        ours = max(totals)
        floor = s.physical_cluster + max(groups) * (s.mpe + s.refresh_busy)
        return {"ours": ours, "today": today, "floor": floor, "single": single, "grafanaJob": longest}
    else:
        ours = light + setup + preview + (start + up if kind == "bump" else 0.0) + verify + ci["artifact"] + light
        floor = s.release if kind == "bump" else 0.0
    return {"ours": ours, "today": today, "floor": floor, "single": single}


def refresh(ready: float, free: float, busy: float, check: float) -> tuple[float, float]:
    """One refresh step ready to POST at ``ready`` on a Grafana busy until ``free``: the POST gets 409 and is retried on
    the scripts' backoff (steps/lib.sh: first, then ceiling seconds after the previous try started) until a try finds
    it free; it then holds the Grafana ``busy`` seconds and the step notices the IP on its poll schedule. Returns
    (when the POST was accepted, when the IP was noticed)."""
    first, ceiling = deploy_sim.poll_defaults()
    at, delay = ready, first
    while at < free:
        at += max(delay, check)
        delay = min(delay * 2, ceiling)
    return at, deploy_sim.poll("IP", at, at + busy, check, deploy_sim.delays(first, ceiling),
                               first_offset=check).noticed


def table_rows(sizes: Sequence[int], grafanas: Sequence[int]) -> dict:
    table = deploy_sim.Table()
    s, ci, check = stack_figures(table), ci_table(), table.events["poll_check"]
    rows = [{"run": kind, "stacks": n, "grafanas": g, **simulate(n, g, kind, s, ci, check)}
            for kind in ("first", "bump", "none") for g in grafanas for n in sizes]
    pick = {(r["run"], r["stacks"], r["grafanas"]): r for r in rows}
    first, bump, none = (pick.get((k, 50, 1)) or simulate(50, 1, k, s, ci, check) for k in ("first", "bump", "none"))
    ratios = {"first rollout (50, 1 Grafana): ours/floor": first["ours"] / first["floor"],
              "chart bump (50): ours/one stack": bump["ours"] / bump["single"],
              "nothing to do (50): ours/one stack": none["ours"] / none["single"]}
    limits = dict(zip(ratios, (TARGET_FLOOR, TARGET_SINGLE, TARGET_SINGLE)))
    return {"stack": s.__dict__, "ci": ci, "fleetParallel": FLEET_PARALLEL, "fleetChunk": FLEET_CHUNK,
            "serialWeight": SERIAL_WEIGHT, "rows": rows, "ratios": ratios,
            "targets": {k: {"target": f"<= {limits[k]}", "met": ratios[k] <= limits[k]} for k in ratios},
            "todayFirst50": first["today"], "grafanaJob50": first["grafanaJob"],
            "unchunkedGrafanaJob50": chunk_job(50, s, ci, check), "wholeChunkJob": whole_chunk_job(s, ci)}


def render(result: dict) -> str:
    def m(x: float) -> str:
        return f"{x / 60:7.1f} min"

    names = {"first": "first rollout", "bump": "chart bump", "none": "nothing to do"}
    lines = ["Fleet rollout, simulated with bench/latencies.yaml (no GitHub, no Azure)", "",
             f"{'run':<14} {'stacks':>6} {'Grafanas':>8} {'ours':>11} {'today':>11} {'floor':>11} {'ours/floor':>10} "
             f"{'today/ours':>10}"]
    for r in result["rows"]:
        ratio = f"{r['ours'] / r['floor']:10.2f}" if r["floor"] else f"{'-':>10}"
        lines.append(f"{names[r['run']]:<14} {r['stacks']:>6} {r['grafanas']:>8} {m(r['ours'])} {m(r['today'])} "
                     f"{m(r['floor'])} {ratio} {r['today'] / r['ours']:10.2f}")
    lines += ["", "  one stack alone (today's scheme): " + ", ".join(
        f"{names[k]} {m(next(r['single'] for r in result['rows'] if r['run'] == k)).strip()}" for k in names),
              "", "  ratios: " + ", ".join(f"{k} = {v:.2f}" for k, v in result["ratios"].items()),
              "  targets: " + ", ".join(f"{k} {t['target']} {'met' if t['met'] else 'NOT MET'}"
                                        for k, t in result["targets"].items()),
              f"  (pass 2 runs {result['fleetParallel']} stacks at once; runners for every stack at once assumed)",
              f"  the Grafana phase runs in chunks of at most {result['fleetChunk']} stacks, one job each, one after "
              f"another; the longest chunk job of a first rollout of 50 on one Grafana runs "
              f"{m(result['grafanaJob50']).strip()} (unchunked: {m(result['unchunkedGrafanaJob50']).strip()}), a chunk "
              f"of {result['fleetChunk'] // result['serialWeight']} whole-up (serial) stacks "
              f"{m(result['wholeChunkJob']).strip()}: "
              + ("within" if max(result["grafanaJob50"], result["wholeChunkJob"]) <= 6000 else "LONGER THAN")
              + " the ~100 minutes a chunk may take (120-minute timeout, 2-hour Pulumi token; "
              "docs/fleet.md, \"Chunks\")"]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50,100")
    parser.add_argument("--grafanas", default="1,5")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = table_rows([int(x) for x in args.sizes.split(",")], [int(x) for x in args.grafanas.split(",")])
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
