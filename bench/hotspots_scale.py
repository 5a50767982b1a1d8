"""How ``flamegraph.hotspots`` scales with a large pprof profile.

    python -m bench.hotspots_scale [--nodes 200000] [--repeat 3]

Writes a synthetic GPU-memory pprof profile (``malloc``/``bytes``, gzip) whose merged call tree has ``--nodes`` nodes
(seed 21), then times, each in a fresh process and the best of ``--repeat``: the parser alone, the parser and one
Python pass over the samples, a columnar parse with no pass (:func:`columns_view`, a floor, not a reader), and what
``python -m flamegraph.hotspots --from-file FILE`` does before printing (``flamegraph.formats.load`` and
``flamegraph.analysis.report``). It prints the times, their ratios to the parser alone, and each run's peak memory
over the profile's decoded size. No figure is asserted: tests/bench/test_hotspots_scale.py runs it small. The profile
and the measures in detail: docs/decisions/benchmarks.md ("Reading a large profile").
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = 4096


def synthetic(nodes: int, seed: int = 21) -> bytes:
    """A gzip pprof profile whose call tree has ``nodes`` nodes (the root included)."""
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


def columns_view():
    """The message class of a columnar view of google/pprof's ``Profile``: field 2 (``sample``) declared as *one*
    ``Columns`` message (``repeated uint64 location_id = 1; repeated int64 value = 2``), not a repeated ``Sample``.
    Protobuf's wire rule for a non-repeated embedded message met more than once is to merge the occurrences, "and
    repeated fields are concatenated" (protobuf.dev/programming-guides/encoding, "Last One Wins"), so the upb
    runtime decodes all samples' ids and values, in C, into two arrays. Built at run time with the runtime's own
    descriptor API (``descriptor_pb2``, ``message_factory.GetMessageClass``): no protoc, no hand decoding."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="bench_pprof_columns.proto", package="bench", syntax="proto3")
    columns = file.message_type.add(name="Columns")
    columns.field.add(name="location_id", number=1, type=field.TYPE_UINT64, label=field.LABEL_REPEATED)
    columns.field.add(name="value", number=2, type=field.TYPE_INT64, label=field.LABEL_REPEATED)
    profile = file.message_type.add(name="ProfileColumns")
    profile.field.add(name="sample", number=2, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                      type_name=".bench.Columns")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.ProfileColumns"))


def _status(field: str) -> int:
    """A /proc/self/status memory figure (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    """Start the peak resident size (VmHWM) afresh: Linux's /proc/PID/clear_refs, value 5 (proc(5))."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def child(kind: str, path: str) -> dict:
    """One timed run in this process: its seconds and its peak memory over the resident size before reading."""
    import gc

    from flamegraph import analysis, formats
    from flamegraph.pprof import profile_pb2

    view = columns_view() if kind == "columns" else None
    data = Path(path).read_bytes()
    gc.collect()
    _reset_peak()
    before = _status("VmRSS")
    start = time.perf_counter()
    if kind in ("parser", "touch"):
        message = profile_pb2.Profile.FromString(gzip.decompress(data))
        nodes = len(message.sample)
        if kind == "touch":  # every sample's stack and value read once into Python, nothing more
            for sample in message.sample:
                tuple(sample.location_id), sample.value[0]
    elif kind == "columns":  # no per-sample step: every id and value through the runtime's C code into two lists
        merged = view.FromString(gzip.decompress(data)).sample
        ids, values = merged.location_id[:], merged.value[:]
        nodes = len(ids)
        del ids, values
    else:
        profile, _ = formats.load(data)
        analysis.report(profile)
        nodes = len(profile.nodes)
    seconds = time.perf_counter() - start
    peak = _status("VmHWM")
    return {"seconds": seconds, "peak": max(0, peak - before), "count": nodes}


def run(kind: str, path: str, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-m", "bench.hotspots_scale", "--child", kind, path],
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hotspots_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=200_000,
                        help="nodes in the synthetic profile's call tree, the root included (default 200000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each kind, each in a fresh process; the best "
                        "is reported (default 3)")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    data = synthetic(args.nodes)
    decoded = len(gzip.decompress(data))
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "profile.pb.gz")
        Path(path).write_bytes(data)
        parser_only = run("parser", path, args.repeat)
        touch = run("touch", path, args.repeat)
        columns = run("columns", path, args.repeat)
        full = run("full", path, args.repeat)
    print(f"profile: {full['count']} nodes, {parser_only['count']} samples, {len(data) / 1e6:.1f} MB gzip, "
          f"{decoded / 1e6:.1f} MB decoded")
    print(f"parser alone (gunzip + protobuf): {parser_only['seconds']:.3f} s, peak +{parser_only['peak'] / 1e6:.1f} MB")
    print(f"parser + one Python pass over the samples: {touch['seconds']:.3f} s, peak +{touch['peak'] / 1e6:.1f} MB")
    print(f"columns, no pass ({columns['count']} location ids and the values as two lists, no per-sample step): "
          f"{columns['seconds']:.3f} s, peak +{columns['peak'] / 1e6:.1f} MB")
    print(f"read and report (flamegraph.formats.load + report): {full['seconds']:.3f} s, "
          f"peak +{full['peak'] / 1e6:.1f} MB")
    print(f"ratio: time(read and report)/time(parser alone) = {full['seconds'] / parser_only['seconds']:.2f} "
          f"(against the parser and one pass: {full['seconds'] / touch['seconds']:.2f}); "
          f"peak memory/decoded size = {full['peak'] / decoded:.2f} "
          f"(parser alone: {parser_only['peak'] / decoded:.2f})")
    print(f"floors: time(parser and one pass)/time(parser alone) = {touch['seconds'] / parser_only['seconds']:.2f}; "
          f"time(columns, no pass)/time(parser alone) = {columns['seconds'] / parser_only['seconds']:.2f}, "
          f"its peak memory/decoded size = {columns['peak'] / decoded:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
