"""flamegraph.analysis: self and total per function, the leaf-first ranking, truncation and comparison."""

from __future__ import annotations

import pytest

from flamegraph.analysis import diff_report, function_totals, report, without
from flamegraph.formats import parse_frame
from flamegraph.text import human, render, render_diff
from tests.support.flamegraphs import (
    GB,
    KV,
    SEED_CHAIN,
    TRUNCATED_TREE,
    VLLM,
    T,
    example_profile,
    frame,
    kv_halved,
    result_of,
)


def test_vllm_kv_cache_is_the_top_self_allocator():
    result = result_of(VLLM)
    top = result["topSelf"][0]
    assert top["function"] == "GPUModelRunner._allocate_kv_cache_tensors"
    assert top["self"] == int(55.1 * GB) and human(top["self"], "bytes") == "55.1 GiB"
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
    """--top N bounds each list, the orchestrators too, the widest first."""
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


def test_empty_profile():
    empty = frame(T("total", 0))
    result = report(parse_frame(empty))
    assert result == {"unit": "bytes", "total": 0, "truncated": {"total": 0, "percent": 0.0, "nodes": 0},
                      "topSelf": [], "topTotal": [], "orchestrators": []}
    nothing = {"schema": frame(T("total", 0))["schema"], "data": {"values": [[], [], [], []]}}
    assert report(parse_frame(nothing))["total"] == 0
    assert "No allocations" in render(result)


def test_ties_are_broken_by_name():
    tree = T("total", 0, T("main", 0, T("b_alloc", 5), T("a_alloc", 5), T("c_alloc", 5)))
    assert [e["function"] for e in result_of(tree)["topSelf"]] == ["a_alloc", "b_alloc", "c_alloc"]
    assert [e["function"] for e in result_of(tree, top=2)["topSelf"]] == ["a_alloc", "b_alloc"]


def test_very_deep_stacks():
    """Thousands of frames deep: the walk is iterative, so Python's recursion limit is never reached."""
    depth = 3000  # total, then f0 f1 f2 f0 f1 f2 ... (recursion through three functions), then the leaf
    labels = ["total"] + [f"f{i % 3}" for i in range(depth)] + ["leaf"]
    deep = frame(T("total", 0))
    deep["data"]["values"] = [list(range(depth + 2)), [7] * (depth + 2), [0] * (depth + 1) + [7], labels]
    result = report(parse_frame(deep))
    assert result["topSelf"][0]["function"] == "leaf" and len(result["topSelf"][0]["stack"]) == depth + 1
    assert function_totals(parse_frame(deep))["f0"] == {"self": 0, "total": 7}  # counted once, not 1000 times
    assert result["topTotal"] == [{"function": "leaf", "total": 7, "self": 7}]  # f0, f1, f2 only carry it


def test_example_frame_is_the_vllm_story():
    profile = example_profile()
    assert 30 <= len(profile.nodes) <= 80 and profile.unit == "bytes"
    top = report(profile, 3)["topSelf"]
    assert [e["function"] for e in top] == [
        "GPUModelRunner._allocate_kv_cache_tensors", "LlamaMLP.__init__", "LlamaAttention.__init__"]
    assert human(top[0]["self"], "bytes") == "55.1 GiB"
    assert top[0]["stack"] == ["<unknown>", "<interpreter trampoline>", "<module>", "EngineCoreProc.run_engine_core",
                               "EngineCore.__init__", "EngineCore._initialize_kv_caches",
                               "Worker.initialize_from_config",
                               "GPUModelRunner.initialize_kv_cache", "GPUModelRunner._allocate_kv_cache_tensors"]
    assert {"_compile_fx_inner", "CUDAGraphWrapper.__call__", "0x7f3a9c2d1e40"} <= {n.label for n in profile.nodes}


def test_other_is_never_ranked_nor_merged():
    result = result_of(TRUNCATED_TREE)
    assert [e["function"] for e in result["topSelf"]] == ["load_weights", "capture"]
    assert "other" not in [e["function"] for e in result["topTotal"]] + result["orchestrators"]
    assert all("other" not in e["stack"] for e in result["topSelf"])
    assert result["truncated"] == {"total": 48 * GB, "percent": round(100 * 48 / 92, 2), "nodes": 3}
    assert result["topSelf"][0]["selfPercent"] == round(100 * 30 / 92, 2)  # of everything, the cut stacks included


def test_halving_the_kv_cache_is_the_top_shrink():
    result = diff_report(example_profile(), kv_halved(example_profile()), 3)
    top = result["shrank"][0]
    assert top["function"] == KV
    before = int(55.1 * GB)
    assert top["self"]["baseline"] == pytest.approx(before, rel=1e-3)
    assert top["self"]["change"] == -(top["self"]["baseline"] - top["self"]["baseline"] // 2)
    assert top["total"]["change"] == top["self"]["change"] and len(result["shrank"]) == 1 and result["grew"] == []
    assert result["total"]["change"] == top["self"]["change"]
    assert set(top) == {"function", "self", "total"} and set(top["self"]) == {"baseline", "current", "change"}


def test_diff_lists_growth_first_then_shrinkage():
    before = parse_frame(frame(T("total", 0, T("main", 0, T("a", 10), T("b", 10), T("c", 10)))))
    after = parse_frame(frame(T("total", 0, T("main", 0, T("a", 40), T("b", 5), T("d", 20)))))
    result = diff_report(before, after)
    assert [(e["function"], e["self"]["change"]) for e in result["grew"]] == [("a", 30), ("d", 20)]
    assert [(e["function"], e["self"]["change"]) for e in result["shrank"]] == [("c", -10), ("b", -5)]
    assert result["total"] == {"baseline": 30, "current": 65, "change": 35}
    text = render_diff(result)
    assert text.splitlines()[0] == "GPU memory allocations, before -> after: 30 B -> 65 B (+35 B)"
    assert "   1. a  self 10 B -> 40 B (+30 B), total 10 B -> 40 B (+30 B)" in text
    assert "   1. c  self 10 B -> 0 B (-10 B), total 10 B -> 0 B (-10 B)" in text


def test_without_folds_trampolines_into_their_callers():
    """A trampoline's callees become its caller's, merged with a callee of the same name; its self goes to the
    caller; totals hold, and the profile given is left as it was."""
    tree = T("total", 0, T("main", 1, T("<interpreter trampoline>", 2, T("load", 10), T("warm", 3)), T("load", 5),
                            T("<interpreter trampoline>", 0, T("<interpreter trampoline>", 0, T("run", 7)))))
    profile = parse_frame(frame(tree))
    before = [(n.label, n.level, n.value, n.self) for n in profile.nodes]
    folded = without(profile)
    assert [(n.label, n.level, n.value, n.self) for n in folded.nodes] == [
        ("total", 0, 28, 0), ("main", 1, 28, 3), ("load", 2, 15, 15), ("warm", 2, 3, 3), ("run", 2, 7, 7)]
    assert [n.parent.label for n in folded.nodes[1:]] == ["total", "main", "main", "main"]
    assert [(n.label, n.level, n.value, n.self) for n in profile.nodes] == before
    assert report(folded)["topSelf"] == report(folded, hide_trampolines=True)["topSelf"]
    assert without(parse_frame(frame(T("total", 0)))).total == 0


def test_other_is_not_an_allocator_even_when_it_is_the_widest_node():
    """grafana/grafana#109035 and grafana/grafana#125033: with maxNodes truncation the small contributors are folded
    into ``other``, which can become the biggest node and topped Grafana's TOP table. The report never ranks
    ``other``: the widest real allocator leads topSelf, and the cut is reported apart, in ``truncated`` and the text's
    own line."""
    tree = T("total", 0,
             T("main", 0,
               T("Engine.load", 0, T("load_weights", 20 * GB)),
               T("Engine.warm_up", 0, T("capture", 5 * GB)),
               T("other", 40 * GB)))
    result = result_of(tree)
    assert [e["function"] for e in result["topSelf"]] == ["load_weights", "capture"]
    assert "other" not in [e["function"] for e in result["topTotal"]] + result["orchestrators"]
    assert result["truncated"] == {"total": 40 * GB, "percent": round(100 * 40 / 65, 2), "nodes": 1}
    assert result["topSelf"][0]["selfPercent"] == round(100 * 20 / 65, 2)
    text = render(result)
    assert "Truncated stacks: 40.0 GiB (61.5 %) in 1 'other' node" in text and "not a function, not ranked" in text
    assert "1. other" not in text


def _top_total(result):
    return [e["function"] for e in result["topTotal"]]


def test_top_by_total_of_the_example_names_the_two_biggest_allocators():
    """The README's command (--top 2 --hide-trampolines on the vLLM example): "top by total" names allocators,
    not the frames that only carry the whole profile (<unknown>, <module>, the engine's entry frames, each 100 %)."""
    result = report(example_profile(), 2, hide_trampolines=True)
    assert _top_total(result) == [KV, "LlamaMLP.__init__"]
    assert [e["total"] for e in result["topTotal"]] == [int(55.1 * GB), 11_274_289_152]


def test_module_and_unknown_carrying_allocators_are_not_ranked_by_total():
    """<module> -> <unknown> -> three allocators: the two carriers hold 100 % each, yet the two widest allocators
    lead "top by total". <unknown> passes no callee most of its total, so only its name leaves it out. The carriers
    stay in the tree (the chains, the picture) and among the orchestrators."""
    tree = T("total", 0, T("<module>", 0, T("<unknown>", 0, T("alloc_a", 40), T("alloc_b", 35), T("alloc_c", 25))))
    result = result_of(tree, top=2)
    assert _top_total(result) == ["alloc_a", "alloc_b"]
    assert result["topSelf"][0]["stack"] == ["<module>", "<unknown>", "alloc_a"]
    assert result["orchestrators"] == ["<module>", "<unknown>"]


def test_a_frame_passing_most_of_its_total_to_one_callee_is_left_out_a_branching_one_kept():
    """main passes everything to Model.__init__: left out. Model.__init__ splits its 100 B over three callees, none
    holding most: it is where the memory branches, and ranks first. Loader.run passes 60 of its 70 B on to one
    callee: left out, as a 2-byte allocation of its own does not make it an allocator."""
    tree = T("total", 0,
             T("main", 0,
               T("Model.__init__", 0, T("mlp", 40), T("attention", 35), T("norm", 25)),
               T("Loader.run", 2, T("load_weights", 60), T("read", 8))))
    assert _top_total(result_of(tree, top=3)) == ["Model.__init__", "load_weights", "mlp"]


def test_an_allocator_with_allocating_callees_stays_ranked_by_total():
    """walk allocates 7 B itself across its recursion and its callee leaf 8 B: walk holds half of its total itself,
    so it is an allocator, ranked by its total (15, the recursion counted once), above leaf."""
    tree = T("total", 0, T("main", 0, T("walk", 1, T("walk", 2, T("walk", 4, T("leaf", 8))))))
    result = result_of(tree)
    assert result["topTotal"] == [{"function": "walk", "total": 15, "self": 7},
                                  {"function": "leaf", "total": 8, "self": 8}]


def test_hidden_trampolines_are_looked_through_for_a_frames_callees():
    """With --hide-trampolines the memory Model.build hands a trampoline is its callees' (as the picture folds
    them): none holds most of it, so Model.build is where it branches and ranks by total; shown, the trampoline is
    its only callee and takes the rank instead."""
    tree = T("total", 0, T("<module>", 0, T("Model.build", 0,
                                             T("<interpreter trampoline>", 0, T("a", 40), T("b", 35), T("c", 25)))))
    assert _top_total(result_of(tree, top=1, hide_trampolines=True)) == ["Model.build"]
    assert _top_total(result_of(tree, top=1)) == ["<interpreter trampoline>"]
