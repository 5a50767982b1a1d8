"""Plan cost as the fleet grows: the offline plan for 1, 10 and 50 cluster stacks.

    python -m bench.plan_scaling [--sizes 1,10,50] [--jobs 1]

One process per stack, as Pulumi runs one program per stack: each is ``python -m offline.plan --json`` for the
dev stack as cluster ``aks-gpu-NN`` with ``multiCluster=true`` (all sharing one Grafana). Prints, per fleet
size, the wall time for the whole fleet, the mean and worst time per stack, the peak RSS of any one stack
(from ``wait4``'s rusage), and the growth ratio time(50)/time(1). Targets here: one stack <= 3 s and
<= 400 MB; growth linear (ratio close to 50 with one job at a time).

One stack with 50 clusters' worth of datasources is not measured: by design each cluster is its own stack
(``multiCluster``), so no stack ever holds more than one cluster's datasources.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent


def plan_once(index: int) -> tuple[float, int]:
    """(seconds, peak RSS in MB) of one stack's offline plan in its own process."""
    command = [sys.executable, "-m", "offline.plan", "--json", "--set", f"clusterName=aks-gpu-{index:02d}",
               "--set", f"clusterResourceGroup=rg-aks-gpu-{index:02d}", "--set", "multiCluster=true"]
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: a chatty child cannot block on it
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"plan for stack {index} failed: {errors.read().decode()[-300:]}")
    return seconds, usage.ru_maxrss // 1024  # ru_maxrss is in KiB on Linux


def fleet(size: int, jobs: int) -> dict:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(plan_once, range(size)))
    wall = time.perf_counter() - started
    times = [t for t, _ in runs]
    return {"stacks": size, "wall": wall, "mean": sum(times) / size, "worst": max(times),
            "peakMB": max(rss for _, rss in runs)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plan_scaling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50", help="fleet sizes (default 1,10,50)")
    parser.add_argument("--jobs", type=int, default=1, help="stacks planned at once (default 1)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"Offline plan per cluster stack, one process each, {args.jobs} at a time ({os.cpu_count()} cores)")
    print(f"  {'stacks':>6}  {'fleet wall':>10}  {'mean/stack':>10}  {'worst':>7}  {'peak RSS':>8}")
    results = []
    for size in sizes:
        result = fleet(size, args.jobs)
        results.append(result)
        print(f"  {size:>6}  {result['wall']:>9.1f}s  {result['mean']:>9.2f}s  {result['worst']:>6.2f}s  "
              f"{result['peakMB']:>6} MB")
    first, last = results[0], results[-1]
    growth = last["wall"] / first["wall"]
    print(f"  growth: time({last['stacks']})/time({first['stacks']}) = {growth:.1f} "
          f"(linear would be {last['stacks'] / first['stacks']:.0f}); per stack {last['mean'] / first['mean']:.2f}x")
    one = first
    print(f"  targets: one stack {one['worst']:.2f} s <= 3 s: {'met' if one['worst'] <= 3 else 'MISSED'}; "
          f"{one['peakMB']} MB <= 400 MB: {'met' if one['peakMB'] <= 400 else 'MISSED'}")
    print("  one stack with 50 clusters' datasources: not applicable, one stack per cluster by design (multiCluster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
