"""The flame-graph reader against ``go tool pprof -top`` on the same large GPU-memory profiles, in one run.

    python -m bench.hotspots_scale [--nodes 20000 200000 1000000] [--repeat 3]

For each size, writes a synthetic pprof profile (``malloc``/``bytes``, gzip, seed 21) whose merged call tree has that
many nodes, then runs, each in its own process and taking turns: ``python -m flamegraph.hotspots --from-file FILE
--top 10`` (ours) and ``go tool pprof -top -sample_index=malloc FILE`` (the peer). It prints each one's median wall
time and peak resident memory (the process and its children, from ``wait4``), where our time goes (in one process:
parse, tree, report), and ends with the line other checks read::

    vs go tool pprof: time <ratio per size>; memory <ratio per size>

(ours divided by pprof's). No figure is asserted: tests/bench/test_hotspots_scale.py runs it small. Needs ``go`` on
PATH (its first ``go tool pprof`` builds the tool, untimed). The method: docs/decisions/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = 4096
SIZES = (20_000, 200_000, 1_000_000)


def synthetic(nodes: int, seed: int = 21) -> bytes:
    """A gzip pprof profile whose call tree has ``nodes`` nodes (the root included): a random recursive tree over
    :data:`NAMES` function names, one sample per leaf and per fourth node."""
    from flamegraph.pprof import profile_pb2

    rng = random.Random(seed)
    parent = [-1]
    name = [0]
    taken: list[set[int]] = [set()]
    for i in range(1, nodes):
        p = rng.randrange(i)
        n = rng.randrange(1, NAMES + 1)
        while n in taken[p]:
            n = n % NAMES + 1
        taken[p].add(n)
        taken.append(set())
        parent.append(p)
        name.append(n)
    message = profile_pb2.Profile()
    message.string_table.extend(["", "malloc", "bytes", "process_cuda"]
                                + [f"module{n % 97}.Class{n % 13}.fn_{n}" for n in range(1, NAMES + 1)])
    message.sample_type.add(type=1, unit=2)
    message.period_type.type, message.period_type.unit, message.period = 3, 2, 1
    for n in range(1, NAMES + 1):
        message.function.add(id=n, name=3 + n)
        message.location.add(id=n).line.add(function_id=n)
    stacks: list[list[int]] = [[]]
    for i in range(1, nodes):
        stacks.append([name[i], *stacks[parent[i]]])
    for i in range(1, nodes):
        if not taken[i] or i % 4 == 0:
            message.sample.add(location_id=stacks[i], value=[rng.randrange(1, 1 << 30)])
    return gzip.compress(message.SerializeToString(), compresslevel=6, mtime=0)


#: Run by a fresh small interpreter: Linux counts the resident size a child had when forked in its peak, so the
#: benchmark's own (large) process must not be the one that forks the measured command.
LAUNCHER = """
import os, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status))
"""


def measure(command: list[str]) -> tuple[float, int]:
    """(wall seconds, peak resident bytes of the process and its children, from ``wait4``) of one run of
    ``command`` (its output discarded)."""
    done = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *command], capture_output=True, text=True,
                          check=True)
    seconds, peak, code = done.stdout.split()
    if int(code):
        raise SystemExit(f"error: {' '.join(command)} exited {code}")
    return float(seconds), int(peak)


def phases(path: str) -> dict:
    """Our seconds per phase, in this process: parse (gunzip, protobuf, names), tree (samples into the call tree,
    with :mod:`flamegraph.calltree`) and report (:func:`flamegraph.analysis.report`)."""
    from flamegraph import analysis, calltree, formats

    built = {}
    plain, vectorized = calltree.plain, calltree.vectorized

    def timed(build):
        def run(*args):
            start = time.perf_counter()
            columns = build(*args)
            built["tree"] = built.get("tree", 0.0) + time.perf_counter() - start
            return columns
        return run

    calltree.plain, calltree.vectorized = timed(plain), timed(vectorized)
    try:
        start = time.perf_counter()
        profile = formats.read_file(path, None)
        loaded = time.perf_counter()
        analysis.report(profile)
        done = time.perf_counter()
    finally:
        calltree.plain, calltree.vectorized = plain, vectorized
    return {"parse": loaded - start - built["tree"], "tree": built["tree"], "report": done - loaded}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hotspots_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=list(SIZES),
                        help="call-tree sizes, the root included (default 20000 200000 1000000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each per size, taking turns; the median is "
                        "reported (default 3)")
    parser.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(phases(args.child)))
        return 0
    if args.repeat < 1 or min(args.nodes) < 2:
        parser.error("--repeat: at least 1; --nodes: each at least 2 (the root and one frame)")
    go = shutil.which("go")
    if go is None:
        print("error: go is not on PATH: this benchmark compares with `go tool pprof` (Go 1.26, README)",
              file=sys.stderr)
        return 2
    ours_command = [sys.executable, "-m", "flamegraph.hotspots", "--top", "10", "--from-file"]
    pprof_command = [go, "tool", "pprof", "-top", "-sample_index=malloc"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for nodes in args.nodes:
            path = str(Path(folder) / f"profile-{nodes}.pb.gz")
            data = synthetic(nodes)
            Path(path).write_bytes(data)
            if not rows:
                measure(pprof_command + [path])  # the first `go tool pprof` builds the tool: not timed
            ours, theirs = [], []
            for _ in range(args.repeat):
                ours.append(measure(ours_command + [path]))
                theirs.append(measure(pprof_command + [path]))
            split = json.loads(subprocess.run([sys.executable, "-m", "bench.hotspots_scale", "--child", path],
                                              capture_output=True, text=True, check=True).stdout)
            rows.append({"nodes": nodes, "gzip": len(data), "decoded": len(gzip.decompress(data)),
                         "ours": (statistics.median(r[0] for r in ours), statistics.median(r[1] for r in ours)),
                         "pprof": (statistics.median(r[0] for r in theirs), statistics.median(r[1] for r in theirs)),
                         "split": split})
    print(f"{'nodes':>9} {'decoded':>9} {'ours s':>8} {'pprof s':>8} {'time':>6} {'ours MB':>8} {'pprof MB':>9} "
          f"{'memory':>7}  our time: parse / tree / report (s)")
    for row in rows:
        (ours_s, ours_b), (pprof_s, pprof_b), split = row["ours"], row["pprof"], row["split"]
        print(f"{row['nodes']:>9} {row['decoded'] / 1e6:>7.1f}MB {ours_s:>8.2f} {pprof_s:>8.2f} "
              f"{ours_s / pprof_s:>5.2f}x {ours_b / 1e6:>8.1f} {pprof_b / 1e6:>9.1f} {ours_b / pprof_b:>6.2f}x  "
              f"{split['parse']:.2f} / {split['tree']:.2f} / {split['report']:.2f}")
    times = " ".join(f"{row['ours'][0] / row['pprof'][0]:.2f}" for row in rows)
    memory = " ".join(f"{row['ours'][1] / row['pprof'][1]:.2f}" for row in rows)
    print(f"vs go tool pprof: time {times}; memory {memory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
