"""bench.hotspots_scale runs small against the real ``go tool pprof`` and prints the line other checks read."""

from __future__ import annotations

import re

from tests.support.benchmarks import bench


def test_hotspots_scale_runs_small_against_go_tool_pprof():
    """Both readers run on each size; the table has a row per size and the last line one ratio per size for time
    and for memory (the figures at 20 000, 200 000 and 1 000 000 nodes are in docs/decisions/benchmarks.md; none is
    asserted). Without Go on PATH this fails with the bench's one-line error."""
    done = bench("bench.hotspots_scale", "--nodes", "2000", "5000", "--repeat", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["nodes", "decoded", "ours", "s"]
    assert [line.split()[0] for line in lines[1:3]] == ["2000", "5000"]
    assert re.fullmatch(r"vs go tool pprof: time \d+\.\d\d \d+\.\d\d; memory \d+\.\d\d \d+\.\d\d", lines[-1])


def test_synthetic_profile_has_the_nodes_asked_for():
    """The benchmark's profile merges into a call tree of exactly ``nodes`` nodes, root included."""
    import gzip

    from bench.hotspots_scale import synthetic
    from flamegraph import formats

    assert len(formats.from_pprof(gzip.decompress(synthetic(3000))).nodes) == 3000


def test_bad_sizes_are_one_line():
    done = bench("bench.hotspots_scale", "--nodes", "2000", "--repeat", "0")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].endswith(
        "error: --repeat: at least 1; --nodes: each at least 2 (the root and one frame)")
