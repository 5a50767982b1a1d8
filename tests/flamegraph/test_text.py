"""flamegraph.text: the text report, amounts in Grafana's units and the truncation lines."""

from __future__ import annotations

import json

from flamegraph.text import human, truncation_lines
from tests.support.flamegraphs import TRUNCATED_TREE, VLLM, T, cli, response, result_of


def test_units_follow_grafana():
    assert human(int(55.1 * 1024 ** 3), "bytes") == "55.1 GiB"
    assert human(55_100_000_000, "decbytes") == "55.1 GB"
    assert human(512, "bytes") == "512 B" and human(3, "samples") == "3 samples"


def test_truncated_share_and_the_hint_to_raise_the_limit(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(response(TRUNCATED_TREE)))
    done = cli("--from-file", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == ("Truncated stacks: 48.0 GiB (52.2 %) in 3 'other' nodes, what the node limit (8192) folded; "
                        "not a function, not ranked.")
    assert lines[2].startswith("  Raise the limit to see who allocates it: --max-nodes 32768 with --stack")
    assert "1. load_weights  self 30.0 GiB (32.6 %)" in done.stdout and "1. other" not in done.stdout
    small = T("total", 0, T("main", 0, T("alloc", 99), T("other", 1)))
    assert truncation_lines(result_of(small)["truncated"], "bytes") == [
        "Truncated stacks: 1 B (1.0 %) in 1 'other' node, what the node limit (8192) folded; not a function, not "
        "ranked."]
    assert truncation_lines(result_of(VLLM)["truncated"], "bytes") == []


def test_a_gpu_memory_report_says_what_its_bytes_are(tmp_path):
    """A GPU-memory report (Inspektor Gadget's profile_cuda) says in one line what a byte is: requested from the
    CUDA driver over the time range and summed, frees never subtracted, so 73.6 GiB is not read as memory held now.
    A profile of another sample type (--sample-type, e.g. CPU time) is not described so."""
    from tests.support.flamegraphs import EXAMPLE, EXAMPLE_PPROF, pprof_with

    for source in (EXAMPLE, EXAMPLE_PPROF):
        done = cli("--from-file", str(source))
        assert done.returncode == 0, done.stderr
        unit = [line for line in done.stdout.splitlines() if line.lstrip().startswith("Bytes: ")]
        assert len(unit) == 1 and "summed" in unit[0] and "frees are not subtracted" in unit[0], done.stdout
    path = tmp_path / "cpu.pb"
    path.write_bytes(pprof_with(("cpu", "nanoseconds")))
    done = cli("--from-file", str(path))
    assert done.returncode == 0, done.stderr
    assert "1. f  self 5 nanoseconds" in done.stdout and "Bytes: " not in done.stdout
