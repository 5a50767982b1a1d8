"""flamegraph.hotspots: the command line, from a saved file or from the stack's Grafana through az rest."""

from __future__ import annotations

import json

import pytest

from flamegraph import formats, hotspots, query
from flamegraph.query import seconds
from flamegraph.svg import flame_svg
from flamegraph.text import DIFF_NOTE
from offline.program import run
from stack import profile_types
from tests.support import ROOT
from tests.support.flamegraphs import (
    CPU_TYPE,
    DASHBOARD_TYPE,
    EXAMPLE,
    EXAMPLE_AFTER,
    EXAMPLE_DIFF_SVG,
    EXAMPLE_PPROF,
    EXAMPLE_RENDER,
    EXAMPLE_TOP,
    GADGET_054_TYPE,
    KV,
    VLLM,
    T,
    cli,
    drawn,
    example_profile,
    pprof_of,
    pprof_with,
    query_through_az_rest,
    response,
    stack_cli,
    stack_cli_against_pyroscope,
    stack_rules,
)
from tests.support.scenarios import calls_in, fake_az_env


def test_from_file_text_and_json(tmp_path):
    path = tmp_path / "response.json"
    path.write_text(json.dumps(response(VLLM)))
    text = cli("--from-file", str(path), "--top", "3")
    assert text.returncode == 0, text.stderr
    assert "1. GPUModelRunner._allocate_kv_cache_tensors  self 55.1 GiB (77.7 %), total 55.4 GiB" in text.stdout
    assert "EngineCore.__init__ -> EngineCore._initialize_kv_caches" in text.stdout
    assert "<interpreter trampoline>       CPython's own frames" in text.stdout
    as_json = json.loads(cli("--from-file", str(path), "--json").stdout)
    assert set(as_json) == {"unit", "total", "truncated", "topSelf", "topTotal", "orchestrators"}
    assert set(as_json["topSelf"][0]) == {"function", "self", "total", "selfPercent", "stack"}
    assert set(as_json["topTotal"][0]) == {"function", "total", "self"}
    assert isinstance(as_json["topSelf"][0]["selfPercent"], float)


def test_bad_input_is_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{}")
    done = cli("--from-file", str(path))
    assert done.returncode == 2 and done.stderr.strip() == f"error: {path}: not a Grafana query response: no 'results'"
    assert cli("--from-file", str(path), "--since", "yesterday").stderr.startswith("error: --since:")


def test_query_sent_through_az_rest(tmp_path):
    done, outputs = query_through_az_rest(tmp_path)
    assert json.loads(done.stdout)["topSelf"][0]["function"] == "GPUModelRunner._allocate_kv_cache_tensors"
    assert json.loads(done.stdout)["profileType"] == "process_cpu:malloc:bytes::"
    assert json.loads(done.stdout)["alsoHeld"] == []
    types, call = calls_in(tmp_path)
    # First the profile types Pyroscope holds over the query's range (start and end in milliseconds) ...
    url = types["argv"][types["argv"].index("--url") + 1]
    assert url.startswith(f"{outputs['grafanaEndpoint']}/api/datasources/uid/local-pyroscope"
                          "/resources/profileTypes?start=")
    start, end = (int(part.split("=")[1]) for part in url.split("?")[1].split("&"))
    assert end - start == 30 * 60 * 1000
    # ... then the dashboard panel's query.
    argv = call["argv"]
    assert argv[argv.index("--url") + 1] == f"{outputs['grafanaEndpoint']}/api/ds/query"
    assert argv[argv.index("--resource") + 1] == "ce34e7e5-485f-4d76-964f-b3d2b16d1e4f"
    assert call["body"] == {
        "from": "now-30m", "to": "now",
        "queries": [{"refId": "A", "datasource": {"type": "grafana-pyroscope-datasource", "uid": "local-pyroscope"},
                     "queryType": "profile", "profileTypeId": "process_cpu:malloc:bytes::",
                     "labelSelector": '{k8s_namespace=~"ml-inference",k8s_podName=~"vllm-.*"}',
                     "groupBy": [], "spanSelector": []}]}


def test_gadget_054_profile_type_is_found_and_the_dashboard_mismatch_said(tmp_path):
    """Inspektor Gadget v0.54.0 on sends the period type process_cuda, so Pyroscope v1.15.0 stores the GPU memory as
    process_cpu:malloc:bytes:process_cuda:bytes; the dashboard's process_cpu:malloc:bytes:: would answer nothing."""
    done, _ = stack_cli(tmp_path, types=(CPU_TYPE, GADGET_054_TYPE))
    assert done.returncode == 0, done.stderr
    assert calls_in(tmp_path)[1]["body"]["queries"][0]["profileTypeId"] == "process_cpu:malloc:bytes:process_cuda:bytes"
    first = done.stdout.splitlines()[0]
    assert first.startswith("Profile type process_cpu:malloc:bytes:process_cuda:bytes: Pyroscope holds the GPU memory")
    assert "asks for process_cpu:malloc:bytes::" in first
    assert "`pulumi config set dashboardProfileType process_cpu:malloc:bytes:process_cuda:bytes && pulumi up`" in first


def test_both_ids_in_one_range_read_the_dashboards_and_name_the_other(tmp_path):
    """A gadget upgrade inside the range: Pyroscope holds the GPU memory under both IDs, each with its own part."""
    done, _ = stack_cli(tmp_path, types=(GADGET_054_TYPE, CPU_TYPE, DASHBOARD_TYPE))
    assert done.returncode == 0, done.stderr
    assert calls_in(tmp_path)[1]["body"]["queries"][0]["profileTypeId"] == "process_cpu:malloc:bytes::"
    assert done.stdout.splitlines()[0] == (
        "Also held in this range: process_cpu:malloc:bytes:process_cuda:bytes (another Inspektor Gadget version wrote "
        "it); this report reads process_cpu:malloc:bytes:: only, --profile-type "
        "process_cpu:malloc:bytes:process_cuda:bytes reads that part.")
    (tmp_path / "json").mkdir()
    done, _ = stack_cli(tmp_path / "json", "--json", types=(GADGET_054_TYPE, DASHBOARD_TYPE))
    assert json.loads(done.stdout)["alsoHeld"] == ["process_cpu:malloc:bytes:process_cuda:bytes"]


def test_baseline_across_a_gadget_upgrade_reads_each_range_under_its_own_id(tmp_path):
    outputs = run("dev").outputs
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    rules = [{"match": ["rest", "--method", "get", "/resources/profileTypes?start="],
              "responses": [{"json": [GADGET_054_TYPE]}, {"json": [DASHBOARD_TYPE]}]},
             {"match": ["rest", "--method", "post", "/api/ds/query"], "responses": [{"json": response(VLLM)}]}]
    done = cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), "--baseline", "3h..2h",
               env=fake_az_env(tmp_path, rules))
    assert done.returncode == 0, done.stderr
    sent = [c["body"]["queries"][0]["profileTypeId"] for c in calls_in(tmp_path) if c.get("body")]
    assert sent == ["process_cpu:malloc:bytes:process_cuda:bytes", "process_cpu:malloc:bytes::"]
    assert ("The baseline range holds it as process_cpu:malloc:bytes:: (Inspektor Gadget changed version between the "
            "ranges): each range is read under its own ID.") in done.stdout.splitlines()


def test_a_non_gpu_sample_type_is_titled_by_its_id(tmp_path):
    done, _ = stack_cli(tmp_path, "--sample-type", "cpu", types=(CPU_TYPE, DASHBOARD_TYPE))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("Profile process_cpu:cpu:nanoseconds:cpu:nanoseconds: ")


def test_no_gpu_memory_profile_is_one_line(tmp_path):
    done, _ = stack_cli(tmp_path, "--since", "2h", types=(CPU_TYPE,))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("error: Pyroscope holds no malloc:bytes profile in this time range (it holds: "
                                  "process_cpu:cpu:nanoseconds:cpu:nanoseconds); is a GPU workload running")
    assert len(calls_in(tmp_path)) == 1  # no flame-graph query


def test_several_candidates_need_profile_type_and_it_skips_the_lookup(tmp_path):
    other = {"id": "process_cuda:malloc:bytes:process_cuda:bytes", "label": "process_cuda - malloc"}
    done, _ = stack_cli(tmp_path, types=(GADGET_054_TYPE, other))
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: several malloc:bytes profile types "
                                   "(process_cpu:malloc:bytes:process_cuda:bytes, "
                                   "process_cuda:malloc:bytes:process_cuda:bytes): pick one with --profile-type")
    given = tmp_path / "given"
    given.mkdir()
    done, _ = stack_cli(given, "--profile-type", "process_cuda:malloc:bytes:process_cuda:bytes", "--json", types=())
    assert done.returncode == 0, done.stderr
    (call,) = calls_in(given)
    assert call["body"]["queries"][0]["profileTypeId"] == "process_cuda:malloc:bytes:process_cuda:bytes"


def configured_cli(tmp_path, profile_type, *args, types):
    outputs = run("dev", {"dashboardProfileType": profile_type}).outputs
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    return cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), *args,
               env=fake_az_env(tmp_path, stack_rules(types)))


def test_a_stack_set_to_the_gadget_054_id_reads_it_and_says_nothing_of_the_dashboard(tmp_path):
    """dashboardProfileType set to the ID Inspektor Gadget v0.54+ writes: that one is read when held (the published
    one, from before the upgrade, is named as also held), and the note on the dashboard's ID is not printed."""
    done = configured_cli(tmp_path, GADGET_054_TYPE["id"], types=(DASHBOARD_TYPE, GADGET_054_TYPE))
    assert done.returncode == 0, done.stderr
    assert calls_in(tmp_path)[1]["body"]["queries"][0]["profileTypeId"] == GADGET_054_TYPE["id"]
    assert "the dashboard's flame graph asks for" not in done.stdout
    assert done.stdout.splitlines()[0].startswith("Also held in this range: process_cpu:malloc:bytes:: ")


def test_a_stack_set_to_an_id_not_held_names_its_own_and_the_config_set(tmp_path):
    done = configured_cli(tmp_path, GADGET_054_TYPE["id"], types=(DASHBOARD_TYPE,))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "Profile type process_cpu:malloc:bytes::: Pyroscope holds the GPU memory under this ID; the dashboard's flame "
        "graph asks for process_cpu:malloc:bytes:process_cuda:bytes (`pulumi config set dashboardProfileType "
        "process_cpu:malloc:bytes:: && pulumi up` makes it ask for this one).")


@pytest.mark.parametrize("args,message", [
    (["--profile-type", "process_cpu:malloc"], "--profile-type: expected a Pyroscope profile type ID"),
    (["--profile-type", "process_cpu:malloc:bytes::", "--sample-type", "malloc"],
     "--sample-type: --profile-type already"),
])
def test_bad_profile_type_is_one_line(tmp_path, args, message):
    done, _ = stack_cli(tmp_path, *args)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {message}") and len(done.stderr.splitlines()) == 1
    assert not calls_in(tmp_path)


def test_profile_type_is_for_stack_only(tmp_path):
    done = cli("--from-file", str(ROOT / "examples" / "flamegraph-frame.json"), "--profile-type",
               "process_cpu:malloc:bytes::")
    assert done.returncode == 2 and done.stderr.startswith("error: --profile-type: shapes the query --stack sends")


@pytest.mark.parametrize("args", [["--sample-type", "cpu"],
                                  ["--profile-type", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"]])
def test_a_type_asked_for_by_hand_is_not_called_the_gpu_memory(tmp_path, args):
    """With --sample-type cpu (or --profile-type naming the CPU ID) the report reads CPU time while Pyroscope also
    holds the GPU memory under the dashboard's own ID: the first line must not say "Pyroscope holds the GPU memory
    under this ID" nor tell the user to point the GPU panel at the CPU ID. In grafana/pyroscope v1.15.0 (38a40a93)
    pkg/ingester/otlp/convert.go ``newProfileBuilder`` the CPU ID is the one whose OTLP type is
    samples:count:cpu:nanoseconds (renamed cpu:nanoseconds, ``__name__`` process_cpu), a different series from the
    gadget's malloc:bytes (pkg/phlaredb/labels/labels.go ``CreateProfileLabels``: one ``__profile_type__`` per
    sample type); grafana/grafana 041993ff pyroscopeClient.go ``ProfileTypes`` labels it "process_cpu - cpu"."""
    done, _ = stack_cli(tmp_path, *args, types=(CPU_TYPE, DASHBOARD_TYPE))
    assert done.returncode == 0, done.stderr
    query = calls_in(tmp_path)[-1]["body"]["queries"][0]
    assert query["profileTypeId"] == "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    assert "holds the GPU memory under this ID" not in done.stdout
    assert "dashboardProfileType" not in done.stdout


def test_baseline_range_reads_the_id_each_range_holds(monkeypatch, capsys):
    """--baseline FROM..TO looks the profile type up in each range on its own. Across a gadget upgrade
    (inspektor-gadget 7eeb981e, first in v0.54.0: PeriodType set from ``profiles.name``) the two ranges hold different
    IDs: grafana/pyroscope v1.15.0 (38a40a93) pkg/phlaredb/labels/labels.go ``CreateProfileLabels`` puts the period
    type into ``__profile_type__``, so process_cpu:malloc:bytes:: holds only the baseline's part and
    process_cpu:malloc:bytes:process_cuda:bytes only the current one. One lookup over the union of both ranges would
    pick the dashboard's ID and query the current range under an ID that holds nothing there (the diff would report
    everything as shrunk). Each flame-graph query asks for an ID held in its own range (or the command says it
    cannot compare them)."""
    old, new = DASHBOARD_TYPE["id"], GADGET_054_TYPE["id"]
    upgrade = 90 * 60  # the gadget was upgraded 90 minutes ago

    def held_in(start_back, end_back):  # seconds back from now
        return ([old] if start_back > upgrade else []) + ([new] if end_back < upgrade else [])

    queries = []

    class FakeGrafana:
        dashboard_profile_type = profile_types.PUBLISHED  # what StackQuery reads from the outputs

        def __init__(self, stack, outputs_file):
            pass

        def profile_types(self, since, until=None):
            return held_in(seconds(since), seconds(until) if until else 0)

        def flame_graph(self, body_args):
            start = seconds(body_args["since"])
            end = seconds(body_args["until"]) if body_args.get("until") else 0
            queries.append((body_args["profile_type"], held_in(start, end)))
            return response(VLLM if body_args["profile_type"] in held_in(start, end) else T("total", 0))

    monkeypatch.setattr(query, "StackQuery", FakeGrafana)
    code = hotspots.main(["--stack", "dev", "--since", "1h", "--baseline", "3h..2h", "--json"])
    capsys.readouterr()
    asked_unheld = [(asked, held) for asked, held in queries if asked not in held]
    assert code == 2 or not asked_unheld, f"queried an ID its range does not hold: {asked_unheld}"


def test_svg_from_the_example_file_end_to_end(tmp_path):
    out = tmp_path / "flame.svg"
    done = cli("--from-file", str(EXAMPLE), "--top", str(EXAMPLE_TOP), "--svg", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GPU memory allocations: 73.6 GiB in all\n") and done.stderr == ""
    assert out.read_bytes() == flame_svg(example_profile(), EXAMPLE_TOP)
    assert len(drawn(out.read_bytes())) == len(example_profile().nodes)


def test_svg_unwritable_path_is_one_line(tmp_path):
    missing = tmp_path / "no-such-folder" / "flame.svg"
    done = cli("--from-file", str(EXAMPLE), "--svg", str(missing))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: --svg: cannot write {missing}: No such file or directory\n"
    done = cli("--from-file", str(EXAMPLE), "--svg", str(tmp_path))
    assert done.returncode == 2 and done.stderr == f"error: --svg: cannot write {tmp_path}: Is a directory\n"


def test_readme_example_is_the_tool_output_on_the_example_file():
    """The guide (docs/flamegraphs.md) shows the tool's output on the sample frame; the README points at both."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python -m flamegraph.hotspots --from-file examples/flamegraph-frame.json --top 2 --hide-trampolines"
    assert command in " ".join(readme.split())
    assert "](docs/flamegraph-example.svg)" in readme and "](docs/flamegraphs.md)" in readme
    guide = (ROOT / "docs" / "flamegraphs.md").read_text(encoding="utf-8")
    section = guide.split("# Reading the GPU-memory flame graph", 1)[1]
    flat = " ".join(section.split())
    assert command in flat
    assert f"--top {EXAMPLE_TOP} --svg docs/flamegraph-example.svg" in flat
    assert "](flamegraph-example.svg)" in section and (ROOT / "docs" / "flamegraph-example.svg").is_file()
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    output = cli("--from-file", str(EXAMPLE), "--top", "2", "--hide-trampolines").stdout.splitlines()
    position = 0
    for line in shown:  # abridged: every line shown is in the output, in the same order
        if line.strip() == "...":
            continue
        assert line in output[position:], line
        position = output.index(line, position) + 1


def test_baseline_from_the_command_line_and_the_committed_picture(tmp_path):
    out = tmp_path / "diff.svg"
    done = cli("--from-file", str(EXAMPLE_AFTER), "--baseline", str(EXAMPLE), "--top", "3", "--svg", str(out))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "GPU memory allocations, before -> after: 73.6 GiB -> 46.0 GiB (-27.5 GiB)"
    shrank = lines.index("Shrank (self, the largest shrink first):")
    assert lines[shrank + 1].startswith(f"   1. {KV}  self 55.1 GiB -> 27.5 GiB (-27.5 GiB)")
    assert out.read_bytes() == EXAMPLE_DIFF_SVG.read_bytes()  # docs/flamegraphs.md's command; re-run it when this fails
    as_json = json.loads(cli("--from-file", str(EXAMPLE_AFTER), "--baseline", str(EXAMPLE_RENDER), "--json").stdout)
    assert as_json["shrank"][0]["function"] == KV and set(as_json) == {"unit", "total", "truncated", "grew", "shrank"}


def _range(call):
    """(start, end) in ms of a profileTypes lookup."""
    url = call["argv"][call["argv"].index("--url") + 1]
    assert "/resources/profileTypes?start=" in url, url
    return tuple(int(part.split("=")[1]) for part in url.split("?")[1].split("&"))


def test_baseline_time_range_queries_twice(tmp_path):
    done, _ = stack_cli(tmp_path, "--since", "1h", "--baseline", "3h..2h", "--max-nodes", "65536", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["grew"] == [] and result["shrank"] == []
    assert result["profileType"] == result["baselineProfileType"] == "process_cpu:malloc:bytes::"
    types, current, baseline_types, baseline = calls_in(tmp_path)
    # Each range's profile types are looked up over that range (across a gadget upgrade they differ).
    (start, end), (b_start, b_end) = _range(types), _range(baseline_types)
    assert end - start == 3600 * 1000 and b_end - b_start == 3600 * 1000
    assert 2 * 3600 * 1000 - 5000 < end - b_end <= 2 * 3600 * 1000
    bodies = [current["body"], baseline["body"]]
    assert [(b["from"], b["to"], b["queries"][0]["maxNodes"], b["queries"][0]["profileTypeId"]) for b in bodies] == [
        ("now-1h", "now", 65536, "process_cpu:malloc:bytes::"), ("now-3h", "now-2h", 65536,
                                                                 "process_cpu:malloc:bytes::")]


def test_mismatched_sample_types_are_one_line(tmp_path):
    (tmp_path / "now.pb").write_bytes(pprof_with(["malloc", "bytes"]))
    (tmp_path / "then.pb").write_bytes(pprof_with(["malloc", "count"]))
    done = cli("--from-file", str(tmp_path / "now.pb"), "--baseline", str(tmp_path / "then.pb"), "--sample-type",
               "malloc")
    assert done.returncode == 2 and done.stderr == (
        f"error: --baseline {tmp_path / 'then.pb'}: its unit 'count' differs from the current profile's 'bytes'\n")
    (tmp_path / "then.pb").write_bytes(pprof_with(["free", "bytes"]))
    done = cli("--from-file", str(tmp_path / "now.pb"), "--baseline", str(tmp_path / "then.pb"))
    assert done.returncode == 2 and done.stderr == (
        f"error: --baseline {tmp_path / 'then.pb'}: its sample type free:bytes differs from the current profile's "
        "malloc:bytes\n")
    done = cli("--from-file", str(tmp_path / "now.pb"), "--baseline", "2h..1h")
    assert done.returncode == 2 and done.stderr == ("error: --baseline: expected a profile file (got '2h..1h': no such "
                                                    "file; a time range needs --stack)\n")
    done = cli("--from-file", str(tmp_path / "now.pb"), "--max-nodes", "100")
    assert done.returncode == 2 and done.stderr.startswith("error: --max-nodes: shapes the query --stack sends")


def test_outputs_file_is_for_stack_only(tmp_path):
    done = cli("--from-file", str(EXAMPLE), "--outputs-file", str(tmp_path / "nope.json"))
    assert done.returncode == 2 and done.stderr == (
        "error: --outputs-file: gives --stack the stack's outputs; --from-file reads a saved profile and needs none\n")


def test_an_empty_side_of_a_comparison_is_one_line(tmp_path):
    """A profile with sample types and no samples reads as empty; as either side of --baseline it would make every
    function grow from 0 (or shrink to 0), so the comparison stops with one line naming that side."""
    empty = formats._pb2().Profile(string_table=["", "malloc", "bytes"])
    empty.sample_type.add(type=1, unit=2)
    (tmp_path / "empty.pb").write_bytes(empty.SerializeToString())
    alone = cli("--from-file", str(tmp_path / "empty.pb"))
    assert alone.returncode == 0 and "No allocations in this profile" in alone.stdout
    done = cli("--from-file", str(EXAMPLE_PPROF), "--baseline", str(tmp_path / "empty.pb"))
    assert done.returncode == 2 and done.stderr == (
        f"error: --baseline {tmp_path / 'empty.pb'}: no samples (an empty time range, or an empty export?); nothing to "
        "compare\n")
    done = cli("--from-file", str(tmp_path / "empty.pb"), "--baseline", str(EXAMPLE_PPROF))
    assert done.returncode == 2 and done.stderr.startswith(f"error: {tmp_path / 'empty.pb'}: no samples")


def test_a_file_of_another_sample_type_is_not_called_gpu_memory(tmp_path):
    (tmp_path / "cpu.pb").write_bytes(pprof_with(["cpu", "nanoseconds"]))
    done = cli("--from-file", str(tmp_path / "cpu.pb"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Profile cpu:nanoseconds: 5 nanoseconds in all"


def test_hide_trampolines_draws_none_in_the_svg(tmp_path):
    """--hide-trampolines folds CPython's trampolines out of the picture too (it changed only the text before), and of
    both sides of a comparison, its lists and its picture."""
    shown, hidden = tmp_path / "shown.svg", tmp_path / "hidden.svg"
    assert cli("--from-file", str(EXAMPLE), "--svg", str(shown)).returncode == 0
    done = cli("--from-file", str(EXAMPLE), "--svg", str(hidden), "--hide-trampolines")
    assert done.returncode == 0, done.stderr
    trampolines = [f for f in drawn(shown.read_bytes()) if f["title"].startswith("<interpreter trampoline>\n")]
    assert trampolines and not [f for f in drawn(hidden.read_bytes()) if "<interpreter trampoline>" in f["title"]]
    assert drawn(hidden.read_bytes())[0]["title"] == drawn(shown.read_bytes())[0]["title"]  # the same total
    diff = tmp_path / "diff.svg"
    done = cli("--from-file", str(EXAMPLE_AFTER), "--baseline", str(EXAMPLE), "--svg", str(diff), "--hide-trampolines",
               "--top", "50")
    assert done.returncode == 0, done.stderr
    assert "<interpreter trampoline>" not in done.stdout.split("Grew", 1)[1]
    assert drawn(diff.read_bytes()) and not [f for f in drawn(diff.read_bytes()) if "trampoline" in f["title"]]


def test_palette_picks_the_diff_colours_and_needs_the_picture(tmp_path):
    classic, default = tmp_path / "classic.svg", tmp_path / "default.svg"
    for out, extra in ((classic, ["--palette", "classic"]), (default, [])):
        done = cli("--from-file", str(EXAMPLE_AFTER), "--baseline", str(EXAMPLE), "--svg", str(out), *extra)
        assert done.returncode == 0, done.stderr
    fills = {f["fill"] for f in drawn(classic.read_bytes())}
    assert "#948e8e" in fills and not fills & {"#0072b2", "#e69f00"}
    assert fills != {f["fill"] for f in drawn(default.read_bytes())}
    done = cli("--from-file", str(EXAMPLE), "--svg", str(classic), "--palette", "classic")
    assert done.returncode == 2 and done.stderr == (
        "error: --palette: colours the before-and-after picture; give it with --baseline and --svg\n")
    done = cli("--from-file", str(EXAMPLE), "--palette", "rainbow")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--palette" in done.stderr


def test_the_diff_report_says_what_its_amounts_and_the_colours_are():
    done = cli("--from-file", str(EXAMPLE_AFTER), "--baseline", str(EXAMPLE), "--top", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(DIFF_NOTE + "\n")
    assert "share of its side's total" in DIFF_NOTE and "not by its bytes" in DIFF_NOTE


def _release_flags():
    """The extra args the dev stack starts Pyroscope with (its Helm release's values)."""
    return run("dev").one("kubernetes:helm.sh/v3:Release").inputs["values"]["pyroscope"]["extraArgs"]


@pytest.mark.parametrize("since", ["2d", "7d", "30d"])
def test_ranges_longer_than_a_day_are_read_from_the_stacks_pyroscope(tmp_path, since):
    """grafana/pyroscope#3072 and #3147: Pyroscope's ``-querier.max-query-length`` defaults to 24h, so a "Last 7 days"
    flame graph and ``--since 2d`` (this command's own help) failed with "the query time range exceeds the limit".
    Against a Pyroscope started with the dev stack's flags every such range is read (30d: beyond the retention, the
    query frontend moves the start up to the lookback)."""
    done = stack_cli_against_pyroscope(tmp_path, _release_flags(), "--since", since, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] > 0


def test_the_length_limit_left_at_its_default_refuses_two_days(tmp_path):
    """The failing input of grafana/pyroscope#3072: without the stack's ``-querier.max-query-length`` (Pyroscope's
    24h default), ``--since 2d`` fails: the profile types over the range are refused first, which Grafana reports as
    500 "Failed to call resource" (docs/troubleshooting.md names both symptoms)."""
    flags = {k: v for k, v in _release_flags().items() if k != "querier.max-query-length"}
    done = stack_cli_against_pyroscope(tmp_path, flags, "--since", "2d")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        'error: querying Grafana failed: ERROR: Internal Server Error({"message": "Failed to call resource", '
        '"traceID": ""})']


def test_a_baseline_read_with_other_dropped_frames_is_said(tmp_path):
    """Two sides pruned differently read as growth that is not there (the same allocation under two names): the title
    and the JSON say what each side's file declared."""
    stack = [([["alloc"], ["main"]], 100)]
    (tmp_path / "plain.pb").write_bytes(pprof_of(stack))
    (tmp_path / "dropping.pb").write_bytes(pprof_of(stack, "alloc"))
    done = cli("--from-file", str(tmp_path / "plain.pb"), "--baseline", str(tmp_path / "dropping.pb"))
    assert done.returncode == 0, done.stderr
    assert "; the baseline declares drop_frames=alloc" in done.stdout.splitlines()[0]
    as_json = json.loads(cli("--from-file", str(tmp_path / "plain.pb"), "--baseline", str(tmp_path / "dropping.pb"),
                             "--json").stdout)
    assert as_json["baselinePrunedBy"] == "drop_frames=alloc" and "prunedBy" not in as_json


def test_the_readme_command_ranks_allocators_by_total():
    """The README's command: its "top by total" names the two biggest allocators, the KV cache and the MLP weights,
    where <module> and <unknown> (each the whole 73.6 GiB, passed on) used to fill it; the chains keep them."""
    done = cli("--from-file", str(EXAMPLE), "--top", "2", "--hide-trampolines")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("Top by total"))
    ranked = [line.split()[1] for line in lines[heading + 1:heading + 3]]
    assert ranked == [KV, "LlamaMLP.__init__"] and lines[heading + 3] == ""
    assert "<unknown> -> <module> -> EngineCoreProc.run_engine_core" in done.stdout
