"""bench.hotspots_scale runs on a small profile, and its columnar view reads what the real schema reads."""

from __future__ import annotations

from tests.support.benchmarks import bench


def test_hotspots_scale_runs_small():
    """The reader's scaling benchmark on a small profile: it prints the ratios (the 200 000-node figures are in
    docs/performance.md; no timing is asserted)."""
    done = bench("bench.hotspots_scale", "--nodes", "2000", "--repeat", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("profile: 2000 nodes, ")
    assert "ratio: time(read and report)/time(parser alone) = " in done.stdout
    assert "peak memory/decoded size = " in done.stdout
    # The columnar floor moves every sample's location ids out of the parser: as many as the samples hold.
    columns = next(line for line in done.stdout.splitlines() if line.startswith("columns, no pass ("))
    assert " location ids and the values as two lists" in columns
    assert "floors: time(parser and one pass)/time(parser alone) = " in done.stdout


def test_columns_view_concatenates_every_sample():
    """The benchmark's columnar view relies on protobuf's merge rule for a non-repeated embedded message met more
    than once (repeated fields concatenated): the upb runtime must hand over exactly the ids and values the real
    schema reads sample by sample, in order."""
    import gzip

    from bench.hotspots_scale import columns_view, synthetic
    from flamegraph.pprof import profile_pb2

    raw = gzip.decompress(synthetic(500))
    message = profile_pb2.Profile.FromString(raw)
    merged = columns_view().FromString(raw).sample
    assert list(merged.location_id) == [i for sample in message.sample for i in sample.location_id]
    assert list(merged.value) == [v for sample in message.sample for v in sample.value]
    assert len(message.sample) > 100 and len(merged.location_id) > len(message.sample)
