"""tools.hotspots: flame-graph frames built from small trees, the report, and the query it sends."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.scenarios import calls_in, fake_az_env
from tools import hotspots
from tools.mock_engine import run

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
    assert result == {"unit": "bytes", "total": 0, "topSelf": [], "topTotal": [], "orchestrators": []}
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
    return subprocess.run([sys.executable, "-m", "tools.hotspots", *args], cwd=ROOT, capture_output=True, text=True,
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
    assert set(as_json) == {"unit", "total", "topSelf", "topTotal", "orchestrators"}
    assert set(as_json["topSelf"][0]) == {"function", "self", "total", "selfPercent", "stack"}
    assert set(as_json["topTotal"][0]) == {"function", "total", "self"}
    assert isinstance(as_json["topSelf"][0]["selfPercent"], float)


def test_bad_input_is_one_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{}")
    done = cli("--from-file", str(path))
    assert done.returncode == 2 and done.stderr.strip() == "error: not a Grafana query response: no 'results'"
    assert cli("--from-file", str(path), "--since", "yesterday").stderr.startswith("error: --since:")


def test_query_sent_through_az_rest(tmp_path):
    outputs = run("dev").outputs
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    rules = [{"match": ["rest", "--method", "post", "/api/ds/query"], "responses": [{"json": response(VLLM)}]}]
    env = fake_az_env(tmp_path, rules)
    done = cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), "--namespace", "ml-inference",
               "--pod", "vllm-.*", "--since", "30m", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["topSelf"][0]["function"] == "GPUModelRunner._allocate_kv_cache_tensors"
    (call,) = calls_in(tmp_path)
    argv = call["argv"]
    assert argv[argv.index("--url") + 1] == f"{outputs['grafanaEndpoint']}/api/ds/query"
    assert argv[argv.index("--resource") + 1] == "ce34e7e5-485f-4d76-964f-b3d2b16d1e4f"
    assert call["body"] == {
        "from": "now-30m", "to": "now",
        "queries": [{"refId": "A", "datasource": {"type": "grafana-pyroscope-datasource", "uid": "local-pyroscope"},
                     "queryType": "profile", "profileTypeId": "process_cpu:malloc:bytes::",
                     "labelSelector": '{k8s_namespace=~"ml-inference",k8s_podName=~"vllm-.*"}',
                     "groupBy": [], "spanSelector": []}]}


def test_query_matches_the_dashboard_panel():
    from tests.conftest import reference

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
