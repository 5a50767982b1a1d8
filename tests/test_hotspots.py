"""flamegraph.hotspots: flame-graph frames built from small trees, the report, and the query it sends."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.support import ROOT
from tests.support.scenarios import calls_in, fake_az_env
from flamegraph import hotspots
from offline.program import run

GB = 1024 ** 3  # Grafana's 'bytes' unit is binary: the panel and the report say GiB


def T(label, self=0, *children):
    return (label, self, list(children))


def frame(tree, enum=False, extra=False):
    """A Grafana flame-graph frame (nested-set order) for a (label, self, children) tree; value = total."""
    rows = []

    def walk(node, level):
        label, own, children = node
        index = len(rows)
        rows.append([level, 0, own, label])
        total = own + sum(walk(child, level + 1) for child in children)
        rows[index][1] = total
        return total

    walk(tree, 0)
    levels, values, selfs, labels = (list(c) for c in zip(*rows)) if rows else ([], [], [], [])
    label_field = {"name": "label", "type": "string"}
    if enum:
        text = sorted(set(labels))
        labels = [text.index(l) for l in labels]
        label_field = {"name": "label", "type": "enum", "config": {"type": {"enum": {"text": text}}}}
    fields = [{"name": "level", "type": "number"}, {"name": "value", "type": "number", "config": {"unit": "bytes"}},
              {"name": "self", "type": "number", "config": {"unit": "bytes"}}, label_field]
    values_out = [levels, values, selfs, labels]
    if extra:
        fields.append({"name": "fileName", "type": "string"})
        values_out.append(["x.py"] * len(levels))
    return {"schema": {"name": "response", "meta": {"preferredVisualisationType": "flamegraph"}, "fields": fields},
            "data": {"values": values_out}}


def response(tree, **kw):
    return {"results": {"A": {"status": 200, "frames": [frame(tree, **kw)]}}}


# The seed's vLLM engine: the KV cache allocation is 55.1 GB of self under the engine's start-up.
VLLM = T("total", 0,
    T("<module>", 0,
      T("main", 0,
        T("<interpreter trampoline>", 0,
          T("EngineCoreProc.run_engine_core", 0,
            T("EngineCore.__init__", 0,
              T("EngineCore._initialize_kv_caches", 0,
                T("Executor.initialize_from_config", 0,
                  T("<interpreter trampoline>", 0,
                    T("Worker.initialize_from_config", 0,
                      T("GPUModelRunner.initialize_kv_cache", 0,
                        T("GPUModelRunner._allocate_kv_cache_tensors", int(55.1 * GB),
                          T("0x7f3a9c2d1e40", 300_000_000))))))),
              T("Worker.load_model", 0,
                T("GPUModelRunner.load_model", 0,
                  T("DefaultModelLoader.load_weights", int(14.2 * GB)))),
              T("Worker.compile_or_warm_up_model", 0,
                T("CUDAGraphRunner.capture", int(1.3 * GB)))))))))

SEED_CHAIN = ["<module>", "main", "<interpreter trampoline>", "EngineCoreProc.run_engine_core", "EngineCore.__init__",
              "EngineCore._initialize_kv_caches", "Executor.initialize_from_config", "<interpreter trampoline>",
              "Worker.initialize_from_config", "GPUModelRunner.initialize_kv_cache", "GPUModelRunner._allocate_kv_cache_tensors"]


def result_of(tree, **kw):
    return hotspots.report(hotspots.parse_frame(frame(tree)), **kw)


def test_vllm_kv_cache_is_the_top_self_allocator():
    result = result_of(VLLM)
    top = result["topSelf"][0]
    assert top["function"] == "GPUModelRunner._allocate_kv_cache_tensors"
    assert top["self"] == int(55.1 * GB) and hotspots.human(top["self"], "bytes") == "55.1 GiB"
    assert top["stack"] == SEED_CHAIN
    assert top["total"] == int(55.1 * GB) + 300_000_000
    assert result["total"] == int(55.1 * GB) + int(14.2 * GB) + int(1.3 * GB) + 300_000_000
    assert top["selfPercent"] == round(100 * int(55.1 * GB) / result["total"], 2)
    assert [e["function"] for e in result["topSelf"][:3]] == [
        "GPUModelRunner._allocate_kv_cache_tensors", "DefaultModelLoader.load_weights", "CUDAGraphRunner.capture"]


def test_orchestrators_are_wide_with_zero_self():
    orchestrators = result_of(VLLM)["orchestrators"]
    assert "EngineCore.__init__" in orchestrators and "main" in orchestrators
    assert "GPUModelRunner._allocate_kv_cache_tensors" not in orchestrators
    assert "Worker.compile_or_warm_up_model" not in orchestrators  # 1.3 GB of 70.9: under 10 %


def test_top_bounds_every_list_orchestrators_too():
    """Issue 12 item 8: --top N bounds each list, the widest first (the orchestrators used to be unbounded)."""
    unbounded = result_of(VLLM, top=100)
    assert len(unbounded["orchestrators"]) > 2
    bounded = result_of(VLLM, top=2)
    assert bounded["orchestrators"] == unbounded["orchestrators"][:2]
    assert len(bounded["topSelf"]) == len(bounded["topTotal"]) == 2


def test_hide_trampolines_folds_them_out_of_the_chain():
    result = result_of(VLLM, hide_trampolines=True)
    assert result["topSelf"][0]["stack"] == [f for f in SEED_CHAIN if f != "<interpreter trampoline>"]
    assert "<interpreter trampoline>" not in result["orchestrators"]
    assert "<interpreter trampoline>" not in [e["function"] for e in result["topTotal"]]
    assert "<interpreter trampoline>" in result_of(VLLM)["orchestrators"]


def test_recursion_is_not_double_counted():
    tree = T("total", 0, T("main", 0, T("walk", 1, T("walk", 2, T("walk", 4, T("leaf", 8))))))
    result = result_of(tree)
    walk = next(e for e in result["topTotal"] if e["function"] == "walk")
    assert walk == {"function": "walk", "total": 15, "self": 7}
    assert next(e for e in result["topSelf"] if e["function"] == "walk")["self"] == 7


def test_same_function_in_two_places_adds_up_and_reports_the_heaviest_chain():
    tree = T("total", 0, T("a", 0, T("alloc", 3)), T("b", 0, T("alloc", 5)))
    entry = result_of(tree)["topSelf"][0]
    assert entry["function"] == "alloc" and entry["self"] == 8 and entry["total"] == 8
    assert entry["stack"] == ["b", "alloc"]


def test_enum_labels_and_extra_fields():
    parsed = hotspots.parse_frame(frame(VLLM, enum=True, extra=True))
    assert hotspots.report(parsed) == result_of(VLLM)


def test_empty_profile():
    empty = frame(T("total", 0))
    result = hotspots.report(hotspots.parse_frame(empty))
    assert result == {"unit": "bytes", "total": 0, "truncated": {"total": 0, "percent": 0.0, "nodes": 0},
                      "topSelf": [], "topTotal": [], "orchestrators": []}
    nothing = {"schema": frame(T("total", 0))["schema"], "data": {"values": [[], [], [], []]}}
    assert hotspots.report(hotspots.parse_frame(nothing))["total"] == 0
    assert "No allocations" in hotspots.render(result)


def test_ties_are_broken_by_name():
    tree = T("total", 0, T("main", 0, T("b_alloc", 5), T("a_alloc", 5), T("c_alloc", 5)))
    assert [e["function"] for e in result_of(tree)["topSelf"]] == ["a_alloc", "b_alloc", "c_alloc"]
    assert [e["function"] for e in result_of(tree, top=2)["topSelf"]] == ["a_alloc", "b_alloc"]


@pytest.mark.parametrize("mutate,message", [
    (lambda f: f["data"]["values"][0].__setitem__(2, 3), "levels may only go one deeper"),
    (lambda f: f["data"]["values"][1].pop(), "field lengths differ"),
    (lambda f: f["data"]["values"][2].__setitem__(1, -1), "negative value or self"),
    (lambda f: f["data"]["values"][0].__setitem__(0, 1), "the first row must be the root"),
    (lambda f: f["schema"]["fields"].pop(2), "the frame has no field 'self'"),
    (lambda f: f["data"]["values"][1].__setitem__(1, float("inf")), "must be whole numbers"),
    (lambda f: f["data"]["values"][2].__setitem__(2, 2.5), "must be whole numbers"),
    (lambda f: f["data"]["values"][2].__setitem__(2, True), "must be whole numbers"),
])
def test_malformed_frames_are_rejected(mutate, message):
    bad = frame(T("total", 0, T("main", 0, T("alloc", 5))))
    mutate(bad)
    with pytest.raises(hotspots.FrameError, match=message):
        hotspots.parse_frame(bad)


def test_enum_out_of_range_is_rejected():
    bad = frame(T("total", 0, T("main", 1)), enum=True)
    bad["data"]["values"][3][1] = 9
    with pytest.raises(hotspots.FrameError, match="outside config.type.enum.text"):
        hotspots.parse_frame(bad)


def test_grafana_error_in_the_response():
    with pytest.raises(hotspots.FrameError, match="Grafana answered with an error: plugin unavailable"):
        hotspots.find_frame({"results": {"A": {"error": "plugin unavailable", "status": 500}}})


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "flamegraph.hotspots", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


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


#: Grafana's answer to GET /api/datasources/uid/{uid}/resources/profileTypes: [{"id", "label"}], the label
#: "name - sample type" (grafana/grafana pkg/tsdb/grafana-pyroscope-datasource/pyroscopeClient.go ProfileType).
CPU_TYPE = {"id": "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "label": "process_cpu - cpu"}
DASHBOARD_TYPE = {"id": "process_cpu:malloc:bytes::", "label": "process_cpu - malloc"}
GADGET_054_TYPE = {"id": "process_cpu:malloc:bytes:process_cuda:bytes", "label": "process_cpu - malloc"}


def stack_rules(types=(DASHBOARD_TYPE,), tree=None):
    return [{"match": ["rest", "--method", "get", "/resources/profileTypes?start="], "responses": [{"json": list(types)}]},
            {"match": ["rest", "--method", "post", "/api/ds/query"], "responses": [{"json": response(tree or VLLM)}]}]


def stack_cli(tmp_path, *args, types=(DASHBOARD_TYPE,)):
    outputs = run("dev").outputs
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    done = cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), *args,
               env=fake_az_env(tmp_path, stack_rules(types)))
    return done, outputs


def test_query_sent_through_az_rest(tmp_path):
    done, outputs = stack_cli(tmp_path, "--namespace", "ml-inference", "--pod", "vllm-.*", "--since", "30m", "--json",
                              types=(CPU_TYPE, DASHBOARD_TYPE))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["topSelf"][0]["function"] == "GPUModelRunner._allocate_kv_cache_tensors"
    assert json.loads(done.stdout)["profileType"] == "process_cpu:malloc:bytes::"
    assert json.loads(done.stdout)["alsoHeld"] == []
    types, call = calls_in(tmp_path)
    # First the profile types Pyroscope holds over the query's range (start and end in milliseconds) ...
    url = types["argv"][types["argv"].index("--url") + 1]
    assert url.startswith(f"{outputs['grafanaEndpoint']}/api/datasources/uid/local-pyroscope/resources/profileTypes?start=")
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
        "it); this report reads process_cpu:malloc:bytes:: only, --profile-type process_cpu:malloc:bytes:process_cuda:bytes "
        "reads that part.")
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
    assert done.stderr.strip() == ("error: several malloc:bytes profile types (process_cpu:malloc:bytes:process_cuda:bytes, "
                                   "process_cuda:malloc:bytes:process_cuda:bytes): pick one with --profile-type")
    given = tmp_path / "given"
    given.mkdir()
    done, _ = stack_cli(given, "--profile-type", "process_cuda:malloc:bytes:process_cuda:bytes", "--json", types=())
    assert done.returncode == 0, done.stderr
    (call,) = calls_in(given)
    assert call["body"]["queries"][0]["profileTypeId"] == "process_cuda:malloc:bytes:process_cuda:bytes"


def test_dashboard_type_wins_when_both_are_held_and_sample_type_picks_another():
    held = ["process_cpu:malloc:bytes:process_cuda:bytes", "process_cpu:malloc:bytes::",
            "memory:alloc_space:bytes:space:bytes", "not-an-id"]
    assert hotspots.pick_profile_type(held) == "process_cpu:malloc:bytes::"
    assert hotspots.pick_profile_type(held, "alloc_space") == "memory:alloc_space:bytes:space:bytes"
    assert hotspots.pick_profile_type(held, "alloc_space:bytes") == "memory:alloc_space:bytes:space:bytes"
    with pytest.raises(hotspots.FrameError, match="no alloc_space:count profile"):
        hotspots.pick_profile_type(held, "alloc_space:count")


def test_the_stacks_configured_id_is_preferred_when_held_and_the_default_is_unchanged():
    """pick_profile_type's ``preferred``: the ID the stack's dashboard asks for (dashboardProfileType), before the
    published panel's; without it, as before."""
    held = ["process_cpu:malloc:bytes::", "process_cpu:malloc:bytes:process_cuda:bytes"]
    assert hotspots.pick_profile_type(held) == "process_cpu:malloc:bytes::"
    assert hotspots.pick_profile_type(held, preferred="process_cpu:malloc:bytes:process_cuda:bytes") == held[1]
    assert hotspots.pick_profile_type(held[:1], preferred=held[1]) == held[0]  # not held: the usual choice
    # A preferred ID of another sample type does not change what --sample-type picks.
    assert hotspots.pick_profile_type([*held, CPU_TYPE["id"]], "cpu", preferred=held[1]) == CPU_TYPE["id"]


def test_the_dashboards_id_comes_from_the_outputs_with_the_published_one_for_older_stacks():
    outputs = run("dev", {"dashboardProfileType": GADGET_054_TYPE["id"]}).outputs
    assert hotspots.dashboard_profile_type(outputs) == GADGET_054_TYPE["id"]
    assert hotspots.dashboard_profile_type(run("dev").outputs) == hotspots.PROFILE_TYPE
    older = {**outputs, "dashboardDefinition": {k: v for k, v in outputs["dashboardDefinition"].items() if k != "profileType"}}
    assert hotspots.dashboard_profile_type(older) == hotspots.PROFILE_TYPE
    assert hotspots.dashboard_profile_type({}) == hotspots.PROFILE_TYPE
    assert hotspots.dashboard_profile_type({"dashboardDefinition": {"profileType": "[secret]"}}) == hotspots.PROFILE_TYPE


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
    (["--profile-type", "process_cpu:malloc:bytes::", "--sample-type", "malloc"], "--sample-type: --profile-type already"),
])
def test_bad_profile_type_is_one_line(tmp_path, args, message):
    done, _ = stack_cli(tmp_path, *args)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {message}") and len(done.stderr.splitlines()) == 1
    assert not calls_in(tmp_path)


def test_profile_type_is_for_stack_only(tmp_path):
    done = cli("--from-file", str(ROOT / "examples" / "flamegraph-frame.json"), "--profile-type", "process_cpu:malloc:bytes::")
    assert done.returncode == 2 and done.stderr.startswith("error: --profile-type: shapes the query --stack sends")


@pytest.mark.parametrize("args", [["--sample-type", "cpu"],
                                  ["--profile-type", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"]])
def test_review_a_type_asked_for_by_hand_is_not_called_the_gpu_memory(tmp_path, args):
    """Review rev-21a. With --sample-type cpu (or --profile-type naming the CPU ID) the report reads CPU time, and
    Pyroscope holds the GPU memory under the dashboard's own ID as well; yet the first line says "Pyroscope holds the
    GPU memory under this ID" and tells the user to pick the CPU ID in the GPU panel. In grafana/pyroscope v1.15.0
    (38a40a93) pkg/ingester/otlp/convert.go ``newProfileBuilder`` the CPU ID is the one whose OTLP type is
    samples:count:cpu:nanoseconds (renamed cpu:nanoseconds, ``__name__`` process_cpu), a different series from the
    gadget's malloc:bytes (pkg/phlaredb/labels/labels.go ``CreateProfileLabels``: one ``__profile_type__`` per
    sample type); grafana/grafana 041993ff pyroscopeClient.go ``ProfileTypes`` labels it "process_cpu - cpu"."""
    done, _ = stack_cli(tmp_path, *args, types=(CPU_TYPE, DASHBOARD_TYPE))
    assert done.returncode == 0, done.stderr
    assert calls_in(tmp_path)[-1]["body"]["queries"][0]["profileTypeId"] == "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    assert "holds the GPU memory under this ID" not in done.stdout
    assert "dashboardProfileType" not in done.stdout


def test_review_baseline_range_reads_the_id_each_range_holds(monkeypatch, capsys):
    """Review rev-21a. --baseline FROM..TO looks the profile type up once, over now-FROM..now, and sends that one ID
    for both ranges. Across a gadget upgrade (inspektor-gadget 7eeb981e, first in v0.54.0: PeriodType set from
    ``profiles.name``) the two ranges hold different IDs: grafana/pyroscope v1.15.0 (38a40a93)
    pkg/phlaredb/labels/labels.go ``CreateProfileLabels`` puts the period type into ``__profile_type__``, so
    process_cpu:malloc:bytes:: holds only the baseline's part and process_cpu:malloc:bytes:process_cuda:bytes only the
    current one. The union lookup holds both, pick_profile_type takes the dashboard's, and the current range is
    queried under an ID that holds nothing there: the diff reports everything as shrunk (and --profile-type with the
    other ID empties the baseline instead). Each flame-graph query must ask for an ID held in its own range (or the
    command must say it cannot compare them)."""
    old, new = DASHBOARD_TYPE["id"], GADGET_054_TYPE["id"]
    upgrade = 90 * 60  # the gadget was upgraded 90 minutes ago

    def held_in(start_back, end_back):  # seconds back from now
        return ([old] if start_back > upgrade else []) + ([new] if end_back < upgrade else [])

    queries = []

    class FakeGrafana:
        dashboard_profile_type = hotspots.PROFILE_TYPE  # what StackQuery reads from the outputs

        def __init__(self, stack, outputs_file):
            pass

        def profile_types(self, since, until=None):
            return held_in(hotspots._seconds(since), hotspots._seconds(until) if until else 0)

        def flame_graph(self, body_args):
            start = hotspots._seconds(body_args["since"])
            end = hotspots._seconds(body_args["until"]) if body_args.get("until") else 0
            queries.append((body_args["profile_type"], held_in(start, end)))
            return response(VLLM if body_args["profile_type"] in held_in(start, end) else T("total", 0))

    monkeypatch.setattr(hotspots, "StackQuery", FakeGrafana)
    code = hotspots.main(["--stack", "dev", "--since", "1h", "--baseline", "3h..2h", "--json"])
    capsys.readouterr()
    asked_unheld = [(asked, held) for asked, held in queries if asked not in held]
    assert code == 2 or not asked_unheld, f"queried an ID its range does not hold: {asked_unheld}"


def test_query_matches_the_dashboard_panel():
    from tests.support import reference

    dashboard = json.loads(reference("grafana-dashboards/AdvancedGPUObservability.json").read_text())
    target = next(p for p in dashboard["panels"] if p["type"] == "flamegraph")["targets"][0]
    sent = hotspots.query_body("uid", None, None, "1h")["queries"][0]
    for key in ("queryType", "profileTypeId", "groupBy", "spanSelector"):
        assert sent[key] == target[key], key
    assert target["labelSelector"] == '{k8s_namespace=~"${namespace:regex}",k8s_podName=~"${pod:regex}"}'
    assert sent["labelSelector"] == '{k8s_namespace=~".*",k8s_podName=~".*"}'


def test_units_follow_grafana():
    assert hotspots.human(int(55.1 * 1024 ** 3), "bytes") == "55.1 GiB"
    assert hotspots.human(55_100_000_000, "decbytes") == "55.1 GB"
    assert hotspots.human(512, "bytes") == "512 B" and hotspots.human(3, "samples") == "3 samples"


def test_very_deep_stacks():
    """Thousands of frames deep (a fault found in review: the recursive walk hit Python's limit)."""
    depth = 3000  # total, then f0 f1 f2 f0 f1 f2 ... (recursion through three functions), then the leaf
    labels = ["total"] + [f"f{i % 3}" for i in range(depth)] + ["leaf"]
    deep = frame(T("total", 0))
    deep["data"]["values"] = [list(range(depth + 2)), [7] * (depth + 2), [0] * (depth + 1) + [7], labels]
    result = hotspots.report(hotspots.parse_frame(deep))
    assert result["topSelf"][0]["function"] == "leaf" and len(result["topSelf"][0]["stack"]) == depth + 1
    assert {e["function"]: e["total"] for e in result["topTotal"]}["f0"] == 7  # counted once, not 1000 times


# --- the SVG flame graph ------------------------------------------------------------------------------


SVG = "{http://www.w3.org/2000/svg}"
EXAMPLE = ROOT / "examples" / "flamegraph-frame.json"
EXAMPLE_SVG = ROOT / "docs" / "flamegraph-example.svg"
EXAMPLE_TOP = 3  # docs/flamegraphs.md's command: --top 3 --svg docs/flamegraph-example.svg


def example_profile():
    return hotspots.parse_frame(hotspots.find_frame(json.loads(EXAMPLE.read_text(encoding="utf-8"))))


def drawn(document: bytes) -> list[dict]:
    """The frames of an SVG flame graph, in document order: title, x, y, width, fill, text (or None)."""
    frames = []
    for group in ET.fromstring(document).iter(f"{SVG}g"):
        if group.get("class") != "frame":
            continue
        rect, text = group.find(f"{SVG}rect"), group.find(f"{SVG}text")
        frames.append({"title": group.find(f"{SVG}title").text, "x": float(rect.get("x")), "y": float(rect.get("y")),
                       "width": float(rect.get("width")), "fill": rect.get("fill"),
                       "text": None if text is None else text.text})
    return frames


def test_example_frame_is_the_vllm_story():
    profile = example_profile()
    assert 30 <= len(profile.nodes) <= 80 and profile.unit == "bytes"
    top = hotspots.report(profile, 3)["topSelf"]
    assert [e["function"] for e in top] == [
        "GPUModelRunner._allocate_kv_cache_tensors", "LlamaMLP.__init__", "LlamaAttention.__init__"]
    assert hotspots.human(top[0]["self"], "bytes") == "55.1 GiB"
    assert top[0]["stack"] == ["<unknown>", "<interpreter trampoline>", "<module>", "EngineCoreProc.run_engine_core",
                               "EngineCore.__init__", "EngineCore._initialize_kv_caches", "Worker.initialize_from_config",
                               "GPUModelRunner.initialize_kv_cache", "GPUModelRunner._allocate_kv_cache_tensors"]
    assert {"_compile_fx_inner", "CUDAGraphWrapper.__call__", "0x7f3a9c2d1e40"} <= {n.label for n in profile.nodes}


def test_svg_parses_and_states_the_root_total():
    document = hotspots.flame_svg(hotspots.parse_frame(frame(VLLM)))
    svg = ET.fromstring(document)
    assert svg.tag == f"{SVG}svg" and svg.get("width") == str(hotspots.SVG_WIDTH)
    heading = "GPU memory allocations: 70.9 GiB in all"
    assert svg.find(f"{SVG}title").text == heading
    assert heading in [t.text for t in svg.iter(f"{SVG}text")]
    assert not [e for e in svg.iter() if e.tag in (f"{SVG}script", f"{SVG}image", f"{SVG}a")]  # self-contained
    assert document == hotspots.flame_svg(hotspots.parse_frame(frame(VLLM, enum=True, extra=True)))  # deterministic


@pytest.mark.parametrize("source", ["vllm", "example"])
def test_svg_widths_are_proportional_to_totals(source):
    profile = hotspots.parse_frame(frame(VLLM)) if source == "vllm" else example_profile()
    frames = drawn(hotspots.flame_svg(profile))
    assert len(frames) == len(profile.nodes)  # all wide enough to draw, in nested-set order
    box = {id(node): f for node, f in zip(profile.nodes, frames)}
    root = box[id(profile.root)]
    assert root["width"] == hotspots.SVG_WIDTH - 2 * hotspots.SVG_MARGIN and root["x"] == hotspots.SVG_MARGIN
    for node in profile.nodes[1:]:
        child, parent = box[id(node)], box[id(node.parent)]
        assert child["width"] == pytest.approx(parent["width"] * node.value / node.parent.value, abs=0.0101), node.label
        assert child["y"] == parent["y"] + hotspots.ROW
        assert parent["x"] - 0.01 <= child["x"] and child["x"] + child["width"] <= parent["x"] + parent["width"] + 0.02
    for node in profile.nodes:  # callees left-aligned under their caller, one after the other
        left = box[id(node)]["x"]
        for callee in node.children:
            assert box[id(callee)]["x"] == pytest.approx(left, abs=0.0101)
            left += box[id(callee)]["width"]


def test_svg_every_frame_has_a_title_with_self_and_total():
    profile = example_profile()
    total = profile.total
    for node, f in zip(profile.nodes, drawn(hotspots.flame_svg(profile))):
        assert f["title"].split("\n") == [
            node.label,
            f"self {hotspots.human(node.self, 'bytes')} ({100 * node.self / total:.1f} %)",
            f"total {hotspots.human(node.value, 'bytes')} ({100 * node.value / total:.1f} %)"]
    kv = next(f for f in drawn(hotspots.flame_svg(profile)) if f["title"].startswith("GPUModelRunner._allocate_kv"))
    assert kv["title"] == "GPUModelRunner._allocate_kv_cache_tensors\nself 55.1 GiB (74.9 %)\ntotal 55.1 GiB (74.9 %)"


def test_svg_highlights_the_top_self_allocators_and_only_they():
    # alloc recurses: only its frames with self are highlighted; b_alloc is third and left out with top=2
    tree = T("total", 0, T("main", 0, T("alloc", 0, T("alloc", 50)), T("b_alloc", 10), T("a_alloc", 30)))
    profile = hotspots.parse_frame(frame(tree))
    document = hotspots.flame_svg(profile, top=2)
    frames = drawn(document)
    lit = [f["title"].split("\n")[0] + ("" if "self 0 B" in f["title"] else "+self")
           for f in frames if f["fill"] == hotspots.HIGHLIGHT_FILL]
    assert lit == ["alloc+self", "a_alloc+self"]
    legend = [t.text for t in ET.fromstring(document).iter(f"{SVG}text") if t.text and t.text[:3] in ("1. ", "2. ", "3. ")]
    assert legend == ["1. alloc: self 50 B (55.6 %), total 50 B", "2. a_alloc: self 30 B (33.3 %), total 30 B"]
    example = drawn(hotspots.flame_svg(example_profile(), top=EXAMPLE_TOP))
    assert {f["title"].split("\n")[0] for f in example if f["fill"] == hotspots.HIGHLIGHT_FILL} == {
        "GPUModelRunner._allocate_kv_cache_tensors", "LlamaMLP.__init__", "LlamaAttention.__init__"}
    assert sum(f["fill"] == hotspots.HIGHLIGHT_FILL for f in example) == EXAMPLE_TOP


def test_fit_label():
    def width(chars):  # exactly `chars` characters, and a hair more against float rounding
        return 2 * hotspots.TEXT_PAD + chars * hotspots.CHAR_WIDTH + 1e-9

    assert hotspots.fit_label("LlamaMLP.__init__", width(17)) == "LlamaMLP.__init__"
    assert hotspots.fit_label("LlamaMLP.__init__", width(17) - 0.01) == "LlamaMLP.__init…"
    assert hotspots.fit_label("LlamaMLP.__init__", width(3)) == "Ll…"
    assert hotspots.fit_label("LlamaMLP.__init__", width(3) - 0.01) == ""
    assert hotspots.fit_label("ab", width(2)) == "ab" and hotspots.fit_label("ab", 0) == ""


def test_svg_text_never_overflows_its_box():
    # DejaVu Sans Mono, the first monospace font named, advances 1233/2048 em; Menlo the same, Consolas less
    assert hotspots.CHAR_WIDTH >= 1233 / 2048 * hotspots.FONT_SIZE
    long = "VeryLongModuleName.SomeClassWithALongName.a_method_with_a_long_name"
    tree = T("total", 0, T(long, 0, *[T(f"{long}_{i}", 2 ** i) for i in range(12)]))
    for document in (hotspots.flame_svg(hotspots.parse_frame(frame(tree))), hotspots.flame_svg(example_profile())):
        frames = drawn(document)
        assert any(f["text"] and f["text"].endswith("…") for f in frames) and any(f["text"] is None for f in frames)
        for f in frames:
            label = f["title"].split("\n")[0]
            room = int((f["width"] - 2 * hotspots.TEXT_PAD) // hotspots.CHAR_WIDTH)
            if f["text"] is None:
                assert room < min(3, len(label)), label
                continue
            assert len(f["text"]) * hotspots.CHAR_WIDTH + 2 * hotspots.TEXT_PAD <= f["width"], label
            assert f["text"] == label or (f["text"].endswith("…") and label.startswith(f["text"][:-1]))
        right = hotspots.SVG_WIDTH - hotspots.SVG_MARGIN
        for text in ET.fromstring(document).iter(f"{SVG}text"):  # the legend lines too
            if text.get("font-family") == hotspots.MONOSPACE:
                assert float(text.get("x")) + len(text.text) * hotspots.CHAR_WIDTH <= right, text.text


def test_svg_leaves_out_frames_too_narrow_to_see():
    tree = T("total", 0, T("main", 0, T("big", 10 ** 9), T("tiny", 0, T("tinier", 10 ** 4))))
    profile = hotspots.parse_frame(frame(tree))
    titles = [f["title"].split("\n")[0] for f in drawn(hotspots.flame_svg(profile))]
    assert titles == ["total", "main", "big"]  # tiny is 0.01 px wide, under MIN_FRAME_WIDTH, and so is its callee


def test_svg_of_an_empty_profile():
    svg = ET.fromstring(hotspots.flame_svg(hotspots.parse_frame(frame(T("total", 0)))))
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert texts[0] == "GPU memory allocations: 0 B in all" and texts[1].startswith("No allocations in this profile")
    assert not drawn(ET.tostring(svg))


def test_svg_rejects_callees_wider_than_their_caller():
    bad = frame(T("total", 0, T("main", 0, T("a", 5), T("b", 5))))
    bad["data"]["values"][1][1] = 7  # main's total below its callees' 10
    with pytest.raises(hotspots.FrameError, match="'main': its callees' totals add up to more than its own total"):
        hotspots.flame_svg(hotspots.parse_frame(bad))


def test_svg_from_the_example_file_end_to_end(tmp_path):
    out = tmp_path / "flame.svg"
    done = cli("--from-file", str(EXAMPLE), "--top", str(EXAMPLE_TOP), "--svg", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GPU memory allocations: 73.6 GiB in all\n") and done.stderr == ""
    assert out.read_bytes() == hotspots.flame_svg(example_profile(), EXAMPLE_TOP)
    assert len(drawn(out.read_bytes())) == len(example_profile().nodes)


def test_committed_example_svg_is_what_the_tool_draws():
    """docs/flamegraph-example.svg cannot go stale: re-render it with docs/flamegraphs.md's command when this fails."""
    assert EXAMPLE_SVG.read_bytes() == hotspots.flame_svg(example_profile(), EXAMPLE_TOP)


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


# --- truncated stacks: Pyroscope's 'other' nodes (issue 21) ---------------------------------------------------

# Three stacks the node limit cut (16, 17 and 15 GiB, under three different callers) beside real allocators (30, 14).
TRUNCATED_TREE = T("total", 0,
    T("main", 0,
      T("Engine.load", 0, T("load_weights", 30 * GB), T("other", 16 * GB)),
      T("Engine.warm_up", 0, T("capture", 14 * GB), T("other", 17 * GB)),
      T("other", 15 * GB)))


def test_other_is_never_ranked_nor_merged():
    result = result_of(TRUNCATED_TREE)
    assert [e["function"] for e in result["topSelf"]] == ["load_weights", "capture"]
    assert "other" not in [e["function"] for e in result["topTotal"]] + result["orchestrators"]
    assert all("other" not in e["stack"] for e in result["topSelf"])
    assert result["truncated"] == {"total": 48 * GB, "percent": round(100 * 48 / 92, 2), "nodes": 3}
    assert result["topSelf"][0]["selfPercent"] == round(100 * 30 / 92, 2)  # of everything, the cut stacks included


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
    assert hotspots.truncation_lines(result_of(small)["truncated"], "bytes") == [
        "Truncated stacks: 1 B (1.0 %) in 1 'other' node, what the node limit (8192) folded; not a function, not ranked."]
    assert hotspots.truncation_lines(result_of(VLLM)["truncated"], "bytes") == []


def test_max_nodes_is_sent_only_when_given():
    assert "maxNodes" not in hotspots.query_body("uid", None, None, "1h")["queries"][0]  # as Grafana: Pyroscope's default
    body = hotspots.query_body("uid", None, None, "3h", until="2h", max_nodes=65536)
    assert body["queries"][0]["maxNodes"] == 65536 and (body["from"], body["to"]) == ("now-3h", "now-2h")
    assert hotspots.MAX_NODES_DEFAULT == 8192 and hotspots.MAX_NODES_MAX == 1048576


def test_other_frames_are_grey_in_the_svg():
    frames = drawn(hotspots.flame_svg(hotspots.parse_frame(frame(TRUNCATED_TREE))))
    assert {f["fill"] for f in frames if f["title"].startswith("other\n")} == {hotspots.QUIET_FILL}


# --- Pyroscope's own formats: the seed-000 frame as pprof and as render JSON --------------------------------------

from flamegraph import formats as profiles  # noqa: E402

EXAMPLE_PPROF = ROOT / "examples" / "flamegraph-profile.pb.gz"
EXAMPLE_RENDER = ROOT / "examples" / "flamegraph-render.json"
EXAMPLE_AFTER = ROOT / "examples" / "flamegraph-kv-halved.pb.gz"
EXAMPLE_DIFF_SVG = ROOT / "docs" / "flamegraph-diff.svg"
KV = "GPUModelRunner._allocate_kv_cache_tensors"


def kv_halved(profile):
    """The example with the KV-cache allocation halved (``--gpu-memory-utilization`` lowered): its self halves and
    every caller's total drops by as much."""
    for node in profile.nodes:
        if node.label == KV and node.self:
            cut = node.self - node.self // 2
            node.self -= cut
            while node is not None:
                node.value -= cut
                node = node.parent
    return profile


def test_committed_examples_are_the_frame_in_the_other_formats():
    """examples/: the same profile as pprof and as render JSON, written with the real protobuf library; and the
    KV-halved 'after' profile. Regenerate with the expressions below when this fails."""
    assert gzip_payload(EXAMPLE_PPROF) == profiles.decode(profiles.to_pprof(example_profile()))
    assert json.loads(EXAMPLE_RENDER.read_text()) == profiles.to_render(example_profile())
    assert gzip_payload(EXAMPLE_AFTER) == profiles.decode(profiles.to_pprof(kv_halved(example_profile())))


def gzip_payload(path):
    return profiles.decode(path.read_bytes())


@pytest.mark.parametrize("path", [EXAMPLE, EXAMPLE_PPROF, EXAMPLE_RENDER], ids=["frame", "pprof", "render"])
def test_the_same_report_from_each_format(path):
    expected = hotspots.report(example_profile(), 5)
    profile, kind = profiles.load(path.read_bytes())
    assert kind == {EXAMPLE: "frame", EXAMPLE_PPROF: "pprof", EXAMPLE_RENDER: "render"}[path]
    assert hotspots.report(profile, 5) == expected
    assert [(n.label, n.level, n.value, n.self) for n in profile.nodes] == [
        (n.label, n.level, n.value, n.self) for n in example_profile().nodes]
    done = cli("--from-file", str(path), "--top", "2", "--hide-trampolines")
    assert done.returncode == 0 and done.stdout == cli("--from-file", str(EXAMPLE), "--top", "2", "--hide-trampolines").stdout


def test_pprof_read_as_the_library_writes_it():
    """Built here with the protobuf classes directly: shared stacks add up, inlined lines expand caller first, a
    location without lines is its address, sample types and units as declared, the GPU-memory type by default."""
    pb = profiles._pb2()
    message = pb.Profile(string_table=["", "alloc_objects", "count", "malloc", "bytes", "main", "alloc", "inlined"])
    message.sample_type.add(type=1, unit=2)
    message.sample_type.add(type=3, unit=4)
    message.function.add(id=1, name=5)
    message.function.add(id=2, name=6)
    message.function.add(id=3, name=7)
    message.location.add(id=10).line.add(function_id=1)
    loc = message.location.add(id=20)
    loc.line.add(function_id=3)  # inlined into alloc: listed first
    loc.line.add(function_id=2)
    message.location.add(id=30, address=0x7F3A9C2D1E40)
    message.sample.add(location_id=[20, 10], value=[1, 100])
    message.sample.add(location_id=[20, 10], value=[2, 50])
    message.sample.add(location_id=[30, 20, 10], value=[1, 7])
    data = message.SerializeToString()
    profile, _ = profiles.load(data)
    assert profile.unit == "bytes" and profile.sample_type == "malloc:bytes"
    assert [(n.label, n.level, n.value, n.self) for n in profile.nodes] == [
        ("total", 0, 157, 0), ("main", 1, 157, 0), ("alloc", 2, 157, 0), ("inlined", 3, 157, 150),
        ("0x7f3a9c2d1e40", 4, 7, 7)]
    counts, _ = profiles.load(data, "alloc_objects")
    assert counts.unit == "count" and counts.total == 4 and counts.sample_type == "alloc_objects:count"
    assert profiles.load(data, "alloc_objects:count")[0].total == 4
    with pytest.raises(hotspots.FrameError, match="--sample-type inuse_space: the profile declares alloc_objects:count, malloc:bytes"):
        profiles.load(data, "inuse_space")
    message.sample_type[1].type = 1  # two count types, neither the GPU-memory one: the reader asks
    message.sample_type[1].unit = 2
    with pytest.raises(hotspots.FrameError, match="pick one of alloc_objects:count, alloc_objects:count with --sample-type"):
        profiles.load(message.SerializeToString())


def test_render_json_as_pyroscope_lays_it_out():
    """Offsets delta-encoded per level, a node's callees after its self (pkg/model/flamegraph.go)."""
    tree = T("total", 0, T("main", 2, T("a", 3), T("b", 5)))
    document = profiles.to_render(hotspots.parse_frame(frame(tree)))
    assert document["flamebearer"] == {"names": ["total", "main", "a", "b"], "numTicks": 10, "maxSelf": 5,
                                       "levels": [[0, 10, 0, 0], [0, 10, 2, 1], [2, 3, 3, 2, 0, 5, 5, 3]]}
    assert document["metadata"]["format"] == "single" and document["metadata"]["units"] == "bytes"
    back = profiles.from_render(document)
    assert [(n.label, n.level, n.value, n.self) for n in back.nodes] == [
        ("total", 0, 10, 0), ("main", 1, 10, 2), ("a", 2, 3, 3), ("b", 2, 5, 5)]


# --- before and after -------------------------------------------------------------------------------------------


def test_halving_the_kv_cache_is_the_top_shrink():
    result = hotspots.diff_report(example_profile(), kv_halved(example_profile()), 3)
    top = result["shrank"][0]
    assert top["function"] == KV
    before = int(55.1 * GB)
    assert top["self"]["baseline"] == pytest.approx(before, rel=1e-3)
    assert top["self"]["change"] == -(top["self"]["baseline"] - top["self"]["baseline"] // 2)
    assert top["total"]["change"] == top["self"]["change"] and len(result["shrank"]) == 1 and result["grew"] == []
    assert result["total"]["change"] == top["self"]["change"]
    assert set(top) == {"function", "self", "total"} and set(top["self"]) == {"baseline", "current", "change"}


def test_diff_lists_growth_first_then_shrinkage():
    before = hotspots.parse_frame(frame(T("total", 0, T("main", 0, T("a", 10), T("b", 10), T("c", 10)))))
    after = hotspots.parse_frame(frame(T("total", 0, T("main", 0, T("a", 40), T("b", 5), T("d", 20)))))
    result = hotspots.diff_report(before, after)
    assert [(e["function"], e["self"]["change"]) for e in result["grew"]] == [("a", 30), ("d", 20)]
    assert [(e["function"], e["self"]["change"]) for e in result["shrank"]] == [("c", -10), ("b", -5)]
    assert result["total"] == {"baseline": 30, "current": 65, "change": 35}
    text = hotspots.render_diff(result)
    assert text.splitlines()[0] == "GPU memory allocations, before -> after: 30 B -> 65 B (+35 B)"
    assert "   1. a  self 10 B -> 40 B (+30 B), total 10 B -> 40 B (+30 B)" in text
    assert "   1. c  self 10 B -> 0 B (-10 B), total 10 B -> 0 B (-10 B)" in text


def test_diff_colours_follow_grafanas_rule():
    grey, green, red = "#948e8e", "#00aa00", "#c80000"
    assert hotspots.diff_fill(10, 10, 100, 100) == grey  # the same share
    assert hotspots.diff_fill(10, 20, 100, 200) == grey  # twice as much of twice the total: the same share
    assert hotspots.diff_fill(10, 0, 100, 100) == green  # gone: -100 %
    assert hotspots.diff_fill(10, 20, 100, 100) == red  # doubled: +100 %
    assert hotspots.diff_fill(0, 20, 100, 100) == "#ff0000"  # new: d3 extrapolates, channels clamp
    assert hotspots.diff_fill(10, 15, 100, 100) == "#ae4747"  # +50 %: half way from grey to red
    assert hotspots.diff_fill(10, 5, 100, 100) == "#4a9c47"  # -50 %
    assert hotspots.diff_fill(10, 10, 0, 100) == grey  # one side empty: neutral


def test_diff_svg_colours_and_widths():
    document = hotspots.diff_svg(example_profile(), kv_halved(example_profile()))
    frames = drawn(document)
    kv = next(f for f in frames if f["title"].startswith(KV + "\n"))
    r, g, b = (int(kv["fill"][i:i + 2], 16) for i in (1, 3, 5))
    assert g > r and g > b  # green: its share shrank
    load = next(f for f in frames if f["title"].startswith("LlamaMLP.__init__\n"))
    r, g, b = (int(load["fill"][i:i + 2], 16) for i in (1, 3, 5))
    assert r > g  # unchanged amount, larger share of a smaller total: red, as Pyroscope shows it
    assert frames[0]["width"] == hotspots.SVG_WIDTH - 2 * hotspots.SVG_MARGIN
    assert "change: total -27.5 GiB, self -27.5 GiB" in kv["title"]


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
    assert end - start == 3600 * 1000 and b_end - b_start == 3600 * 1000 and 2 * 3600 * 1000 - 5000 < end - b_end <= 2 * 3600 * 1000
    bodies = [current["body"], baseline["body"]]
    assert [(b["from"], b["to"], b["queries"][0]["maxNodes"], b["queries"][0]["profileTypeId"]) for b in bodies] == [
        ("now-1h", "now", 65536, "process_cpu:malloc:bytes::"), ("now-3h", "now-2h", 65536, "process_cpu:malloc:bytes::")]


# --- bad files: one line, exit 2 ---------------------------------------------------------------------------------


def _pprof_with(sample_type):
    pb = profiles._pb2()
    message = pb.Profile(string_table=["", *sample_type, "f"])
    message.sample_type.add(type=1, unit=2)
    message.function.add(id=1, name=3)
    message.location.add(id=1).line.add(function_id=1)
    message.sample.add(location_id=[1], value=[5])
    return message.SerializeToString()


@pytest.mark.parametrize("content,message", [
    (lambda: profiles.to_pprof(example_profile())[:200], "the gzip stream ends early (a truncated download?)"),
    (lambda: b"\x1f\x8b" + b"\x00" * 40, "not a valid gzip stream"),
    (lambda: b"\xff\xff\xff\xff garbage", "not a pprof profile (protobuf: Error parsing message"),
    (lambda: b"\x0a\x03abc", "not a pprof profile (protobuf:"),
    (lambda: b"", "empty file: expected a Grafana frame, a Pyroscope render JSON or a pprof profile"),
    (lambda: profiles.gzip.compress(b""), "empty profile: no sample types and no samples"),
    (lambda: profiles._pb2().Profile(string_table=["x"], sample_type=[{"type": 0, "unit": 0}]).SerializeToString(),
     "string_table must start with the empty string"),
    (lambda: json.dumps({"flamebearer": {"names": ["total"], "levels": [[0, 1, 1, 0]]},
                         "metadata": {"format": "double"}}).encode(), "render format 'double'"),
    (lambda: json.dumps({"flamebearer": {"names": ["total", "a"], "levels": [[0, 5, 0, 0], [3, 5, 5, 1]]},
                         "metadata": {"format": "single"}}).encode(), "under no node of level 0"),
])
def test_bad_files_are_one_line(tmp_path, content, message):
    path = tmp_path / "profile.pb.gz"
    path.write_bytes(content())
    done = cli("--from-file", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {path}: ")
    assert message in done.stderr, done.stderr


def test_mismatched_sample_types_are_one_line(tmp_path):
    (tmp_path / "now.pb").write_bytes(_pprof_with(["malloc", "bytes"]))
    (tmp_path / "then.pb").write_bytes(_pprof_with(["malloc", "count"]))
    done = cli("--from-file", str(tmp_path / "now.pb"), "--baseline", str(tmp_path / "then.pb"), "--sample-type", "malloc")
    assert done.returncode == 2 and done.stderr == (
        f"error: --baseline {tmp_path / 'then.pb'}: its unit 'count' differs from the current profile's 'bytes'\n")
    (tmp_path / "then.pb").write_bytes(_pprof_with(["free", "bytes"]))
    done = cli("--from-file", str(tmp_path / "now.pb"), "--baseline", str(tmp_path / "then.pb"))
    assert done.returncode == 2 and done.stderr == (
        f"error: --baseline {tmp_path / 'then.pb'}: its sample type free:bytes differs from the current profile's malloc:bytes\n")
    done = cli("--from-file", str(tmp_path / "now.pb"), "--baseline", "2h..1h")
    assert done.returncode == 2 and done.stderr == ("error: --baseline: expected a profile file (got '2h..1h': no such file; "
                                                  "a time range needs --stack)\n")
    done = cli("--from-file", str(tmp_path / "now.pb"), "--max-nodes", "100")
    assert done.returncode == 2 and done.stderr.startswith("error: --max-nodes: shapes the query --stack sends")


def test_outputs_file_is_for_stack_only(tmp_path):
    done = cli("--from-file", str(EXAMPLE), "--outputs-file", str(tmp_path / "nope.json"))
    assert done.returncode == 2 and done.stderr == (
        "error: --outputs-file: gives --stack the stack's outputs; --from-file reads a saved profile and needs none\n")


def test_an_empty_side_of_a_comparison_is_one_line(tmp_path):
    """A profile with sample types and no samples reads as empty; as either side of --baseline it would make every
    function grow from 0 (or shrink to 0), so the comparison stops with one line naming that side."""
    empty = profiles._pb2().Profile(string_table=["", "malloc", "bytes"])
    empty.sample_type.add(type=1, unit=2)
    (tmp_path / "empty.pb").write_bytes(empty.SerializeToString())
    alone = cli("--from-file", str(tmp_path / "empty.pb"))
    assert alone.returncode == 0 and "No allocations in this profile" in alone.stdout
    done = cli("--from-file", str(EXAMPLE_PPROF), "--baseline", str(tmp_path / "empty.pb"))
    assert done.returncode == 2 and done.stderr == (
        f"error: --baseline {tmp_path / 'empty.pb'}: no samples (an empty time range, or an empty export?); nothing to compare\n")
    done = cli("--from-file", str(tmp_path / "empty.pb"), "--baseline", str(EXAMPLE_PPROF))
    assert done.returncode == 2 and done.stderr.startswith(f"error: {tmp_path / 'empty.pb'}: no samples")


def test_pprof_outside_the_venv_is_one_line(monkeypatch):
    """Without the protobuf package (the system python, not the project's venv) a pprof file is one line."""
    import builtins

    real_import = builtins.__import__

    def no_protobuf(name, *args, **kwargs):
        if name.startswith("google.protobuf") or name == "flamegraph.pprof" or name.startswith("flamegraph.pprof."):
            raise ImportError(f"No module named {name.split('.')[0]!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_protobuf)
    monkeypatch.delitem(sys.modules, "flamegraph.pprof.profile_pb2", raising=False)
    with pytest.raises(hotspots.FrameError, match=r"^reading pprof needs the protobuf package .*: run in the project's venv"):
        profiles._pb2()


def test_a_file_of_another_sample_type_is_not_called_gpu_memory(tmp_path):
    (tmp_path / "cpu.pb").write_bytes(_pprof_with(["cpu", "nanoseconds"]))
    done = cli("--from-file", str(tmp_path / "cpu.pb"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Profile cpu:nanoseconds: 5 nanoseconds in all"
