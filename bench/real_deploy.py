"""Deploy time against the real engine: bench/deploy_sim.py's model held against the real Pulumi CLI, in one run.

    python -m bench.real_deploy [--scale 0.25] [--keep DIR] [--json]

Needs the real engine's tools (toolchain/build makes .tools/engine; without them one line says so, exit 2). On two
simulated AKS clusters (tests/support/simulated_aks.py: real API servers, kwok nodes, the stand-ins for Azure), one
without latency and one whose stand-ins take bench/latencies.yaml's times x ``--scale`` (tests/support/latency.py),
it times with the real CLI, Python host and kubernetes provider: ``pulumi up`` of the dev stack from empty, the
day-two changes :data:`DAY_TWO` one after the other, ``pulumi destroy``; each operation on both clusters back to back.
On each operation's steps (from its first resource on: :func:`steps_seconds`) the prediction is the model's figure
at the scale (deploy_sim ``schedule``, ``day_two``, ``destroy``, with the run's poll schedule) plus the engine's own
time: the zero-latency run's steps less the model's zero-latency figure. Prints real/predicted per operation (bound
:data:`BOUND`) and ours/physical as the real engine achieves it. Method and findings: docs/decisions/benchmarks.md
("Deploy time against the real engine").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional, Sequence

from bench import deploy_sim

STACK = "dev"
#: The day-two changes, one after the other (tests/support/day_two_cases.py): the private link Service's subnet (the
#: Service, the wait and the NAT NetworkPolicy updated), then the PLS's name (the chain replaced: the Service
#: delete-first, the wait, the nonce, the endpoint, the approval and the refresh).
DAY_TWO = ("pls-subnet", "pls-name")
#: The steps' poll schedule in the simulated cluster's workspaces (tests/support/simulated_aks.py ``Aks.workspace``).
POLLS = (1.0, 2.0)
#: real/model may differ by this much.
BOUND = 0.10
CHART_REPOSITORY = "grafana/helm-charts/pyroscope"


class MissingTools(Exception):
    pass


def engine_tools():
    """The real engine's tools, or MissingTools with the one line saying what to build."""
    import pytest

    from tests.support import real_engine

    try:
        return real_engine.tools()
    except (pytest.skip.Exception, pytest.fail.Exception) as refusal:
        raise MissingTools(str(refusal.msg)) from None


@contextlib.contextmanager
def chart_registry(folder: Path) -> Iterator:
    """The reference Pyroscope chart 1.15.0 served over TLS on loopback, as the e2e tests serve it."""
    from tests.support import control_plane, reference
    from tests.support.oci_registry import Registry
    from tests.support.simulated_aks import Chart

    control_plane.make_certificates(folder)
    bundle = folder / "ca-bundle.crt"
    system = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    bundle.write_bytes((system.read_bytes() if system.exists() else b"") + (folder / "ca.crt").read_bytes())
    with Registry(tls=(str(folder / "server.crt"), str(folder / "server.key"))) as registry:
        registry.push_chart(CHART_REPOSITORY, reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz").read_bytes(),
                            tag="1.15.0")
        yield Chart(f"oci://{registry.host}/{CHART_REPOSITORY}", bundle)


@contextlib.contextmanager
def latency_scale(scale: float) -> Iterator[None]:
    from tests.support import latency

    saved = os.environ.get(latency.SCALE_ENV)
    os.environ[latency.SCALE_ENV] = repr(scale)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(latency.SCALE_ENV)
        else:
            os.environ[latency.SCALE_ENV] = saved


def steps_seconds(event_log: Path) -> float:
    """Seconds from the engine's first step on a resource other than the stack and the default providers (before it:
    the CLI's and the program's start, its lookups and reads) to the last event, from ``--event-log`` (whole seconds:
    pulumi's engine events carry a Unix ``timestamp``)."""
    events = [json.loads(line) for line in event_log.read_text().splitlines() if line.strip()]
    starts = [e["timestamp"] for e in events if "resourcePreEvent" in e
              and not _outside(e["resourcePreEvent"]["metadata"]["urn"])]
    return float(events[-1]["timestamp"] - min(starts))


def _outside(urn: str) -> bool:
    kind, name = urn.rsplit("::", 2)[-2:]
    return kind == "pulumi:pulumi:Stack" or (kind.startswith("pulumi:providers:") and name.startswith("default"))


def operations(changes: Sequence[str]) -> tuple[str, ...]:
    return ("up", *changes, "destroy")


def measure(folder: Path, tools, chart, scale: float, changes: Sequence[str] = DAY_TWO) -> tuple[dict, dict]:
    """Per operation (:func:`operations`), without latency and with the stand-ins' latencies times ``scale``: its wall
    seconds and :func:`steps_seconds`. Two clusters, one per factor, each operation played on one right after the
    other (which goes first alternating), so the two see the machine's load of the same minutes."""
    from tests.support.simulated_aks import aks_cluster

    factors = (0.0, scale)
    times: tuple[dict, dict] = ({}, {})
    with contextlib.ExitStack() as stack:
        clusters = []
        for factor in factors:  # each control plane's kwok and workspace take the factor when they start
            where = folder / f"latency-{factor:g}"
            where.mkdir(parents=True)
            with latency_scale(factor):
                aks = stack.enter_context(aks_cluster(where, tools))
                ws = aks.workspace(where / "ws", tools, chart)
                ws.init(STACK, {"pyroscopeChart": chart.reference})
            clusters.append((where, aks, ws))
        for n, operation in enumerate(operations(changes)):
            for side in ((0, 1) if n % 2 == 0 else (1, 0)):
                where, aks, ws = clusters[side]
                log = where / f"events-{operation}.jsonl"
                with latency_scale(factors[side]):  # the cloud-side loops run in this process
                    if operation in changes:
                        ws.pulumi("config", "set-all", *[a for k, v in change_sets(operation).items()
                                                         for a in ("--plaintext", f"{k}={v}")], stack=STACK)
                    started = time.monotonic()
                    if operation == "destroy":
                        ws.destroy(STACK, "--event-log", str(log))
                    else:
                        ws.up(STACK, "--event-log", str(log))
                    times[side][operation] = {"wall": time.monotonic() - started, "steps": steps_seconds(log)}
        for _, aks, _ in clusters:
            if aks.cloud.errors:
                raise RuntimeError(f"the cloud-side loop failed: {aks.cloud.errors[-1]}")
    return times


def change_sets(name: str) -> dict[str, str]:
    from tests.support import day_two_cases

    return next(change.sets for change in day_two_cases.CHANGES if change.name == name)


def model(chart_reference: str, scales: Sequence[float], changes: Sequence[str] = DAY_TWO) -> dict[float, dict]:
    """At each scale, for the configuration the run deploys: per operation the model's ``total`` and ``steps`` (less
    the program's lookups and reads before its first resource), the physical limit, and the most steps with Azure
    time the up runs at once (``widest``: the engine runs at most ``--parallel`` at once)."""
    from offline import diff as plan_diff
    from offline.program import run

    sets = {"pyroscopeChart": chart_reference}
    plans = [deploy_sim.program_reads(STACK, sets)]
    orders = []
    for name in changes:
        sets = {**sets, **change_sets(name)}
        orders.append(plan_diff.preview(plans[-1][0].to_json(),
                                        lambda pending, sets=sets: run(STACK, sets, pending=pending), [])[0].order)
        plans.append(deploy_sim.program_reads(STACK, sets))
    out = {}
    for scale in scales:
        table = deploy_sim.Table(scale=scale)
        up = deploy_sim.schedule(plans[0][0], table, "ours", POLLS, None, plans[0][1])
        out[scale] = {"up": _split(up.total, up), "physical": deploy_sim.physical(plans[0][0], table)[0],
                      "widest": widest(up)}
        for n, name in enumerate(changes):
            (head, reads), base = plans[n + 1], plans[n][0]
            out[scale][name] = _split(*deploy_sim.day_two(head, orders[n], table, POLLS, reads, base))
        destroy = deploy_sim.destroy(plans[-1][0], table)[0]
        out[scale]["destroy"] = {"total": destroy, "steps": destroy}
    return out


def _split(total: float, schedule: deploy_sim.Schedule) -> dict[str, float]:
    prologue = min(t.start for t in schedule.steps.values())
    return {"total": total, "steps": total - prologue}


def widest(schedule: deploy_sim.Schedule) -> int:
    """The most steps taking time that run at one moment."""
    timed = [t for t in schedule.steps.values() if t.finish > t.start]
    return max((sum(1 for t in timed if t.start <= moment < t.finish) for moment in {t.start for t in timed}),
               default=0)


def compare(real0: dict, real: dict, model0: dict, modelled: dict) -> dict:
    """Per operation, on its steps (from the first resource on, :func:`steps_seconds`): the engine's own time (the
    zero-latency run's steps less the model's), the prediction (the model's steps plus it) and real/predicted; the
    start-up before them as measured, beside the model's lookups and reads. And ours/physical as the real engine
    achieves it: its up less its own time, against the model's physical limit."""
    rows = {}
    for operation in [k for k in real0 if k in modelled]:
        own = real0[operation]["steps"] - model0[operation]["steps"]
        predicted = modelled[operation]["steps"] + own
        ratio = real[operation]["steps"] / predicted
        rows[operation] = {"wall": real[operation]["wall"], "steps": real[operation]["steps"],
                           "model": modelled[operation]["steps"], "engineOwn": own, "predicted": predicted,
                           "ratio": ratio, "within": abs(ratio - 1) <= BOUND,
                           "startup": real[operation]["wall"] - real[operation]["steps"],
                           "startupZero": real0[operation]["wall"] - real0[operation]["steps"],
                           "modelReads": modelled[operation]["total"] - modelled[operation]["steps"]}
    up = rows["up"]
    achieved = (up["steps"] - up["engineOwn"] + up["modelReads"]) / modelled["physical"]
    return {"operations": rows, "physical": modelled["physical"], "oursPhysicalReal": achieved,
            "oursPhysicalModel": modelled["up"]["total"] / modelled["physical"], "widest": modelled["widest"]}


def run_benchmark(scale: float, folder: Optional[Path] = None, changes: Sequence[str] = DAY_TWO) -> dict:
    """The whole run (MissingTools without the tools); ``folder`` keeps the clusters' files and event logs;
    ``changes``: the day-two changes played (default both)."""
    tools = engine_tools()
    folder = folder or Path(tempfile.mkdtemp(prefix="real-deploy-"))
    folder.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([str(tools.bin / "pulumi"), "version"], capture_output=True, text=True).stdout.strip()
    with chart_registry(folder) as chart:
        real0, real = measure(folder, tools, chart, scale, changes)
        modelled = model(chart.reference, (0.0, scale), changes)
    result = compare(real0, real, modelled[0.0], modelled[scale])
    return {"scale": scale, "pulumi": version, "parallel": 4 * (os.cpu_count() or 1), "bound": BOUND,
            "folder": str(folder), **result}


def render(result: dict) -> str:
    lines = [f"Deploy time against the real engine (Pulumi CLI {result['pulumi']}), Azure's latencies "
             f"x {result['scale']:g}", "",
             "  steps: from the first resource on; start-up: the CLI and the program before it (its lookups and reads)",
             f"  {'':9} {'wall':>7} {'start-up':>9} {'steps':>7} {'model':>7} {'+ engine own':>12} "
             f"{'= predicted':>11} {'real/model':>10}"]
    for operation, row in result["operations"].items():
        lines.append(f"  {operation:9} {row['wall']:6.1f}s {row['startup']:8.1f}s {row['steps']:6.1f}s "
                     f"{row['model']:6.1f}s {row['engineOwn']:11.1f}s {row['predicted']:10.1f}s {row['ratio']:10.2f}"
                     + ("" if row["within"] else "  OFF"))
    lines += ["", "  start-up (not compared: the CLI's and Python's start under the machine's load): "
              + ", ".join(f"{k} {r['startup']:.1f}s (zero latency {r['startupZero']:.1f}s, "
                          f"model's reads {r['modelReads']:.1f}s)" for k, r in result["operations"].items()),
              f"  engine --parallel {result['parallel']} (4 x cores); the model's up runs at most {result['widest']} "
              "steps with Azure time at once",
              f"  ours/physical: {result['oursPhysicalReal']:.2f} as the real engine achieves it, "
              f"{result['oursPhysicalModel']:.2f} modelled (physical limit {result['physical']:.1f}s at this scale)",
              "  real/model: " + ", ".join(f"{k} = {r['ratio']:.2f}" for k, r in result["operations"].items())
              + f" (bound: within {result['bound']:.0%})"]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_deploy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.25, help="factor on bench/latencies.yaml (default 0.25)")
    parser.add_argument("--keep", type=Path, help="a new folder for the clusters' files and event logs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.scale > 0:
        print(f"error: --scale must be a number > 0, not {args.scale:g}", file=sys.stderr)
        return 2
    try:
        result = run_benchmark(args.scale, args.keep)
    except MissingTools as missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
