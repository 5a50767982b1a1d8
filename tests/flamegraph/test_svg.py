"""flamegraph.svg: the SVG flame graph and the before-and-after picture."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from flamegraph.formats import parse_frame
from flamegraph.model import FrameError
from flamegraph.svg import (
    CHAR_WIDTH,
    DEFAULT_PALETTE,
    FONT_SIZE,
    HIGHLIGHT_FILL,
    MONOSPACE,
    PALETTES,
    QUIET_FILL,
    ROW,
    SVG_MARGIN,
    SVG_WIDTH,
    TEXT_PAD,
    diff_fill,
    diff_svg,
    fit_label,
    flame_svg,
    text_fill,
)
from flamegraph.text import human
from tests.support.flamegraphs import (
    EXAMPLE_SVG,
    EXAMPLE_TOP,
    KV,
    SVG,
    TRUNCATED_TREE,
    VLLM,
    T,
    drawn,
    example_profile,
    frame,
    kv_halved,
)


def test_svg_parses_and_states_the_root_total():
    document = flame_svg(parse_frame(frame(VLLM)))
    svg = ET.fromstring(document)
    assert svg.tag == f"{SVG}svg" and svg.get("width") == str(SVG_WIDTH)
    heading = "GPU memory allocations: 70.9 GiB in all"
    assert svg.find(f"{SVG}title").text == heading
    assert heading in [t.text for t in svg.iter(f"{SVG}text")]
    assert not [e for e in svg.iter() if e.tag in (f"{SVG}script", f"{SVG}image", f"{SVG}a")]  # self-contained
    assert document == flame_svg(parse_frame(frame(VLLM, enum=True, extra=True)))  # deterministic


@pytest.mark.parametrize("source", ["vllm", "example"])
def test_svg_widths_are_proportional_to_totals(source):
    profile = parse_frame(frame(VLLM)) if source == "vllm" else example_profile()
    frames = drawn(flame_svg(profile))
    assert len(frames) == len(profile.nodes)  # all wide enough to draw, in nested-set order
    box = {id(node): f for node, f in zip(profile.nodes, frames)}
    root = box[id(profile.root)]
    assert root["width"] == SVG_WIDTH - 2 * SVG_MARGIN and root["x"] == SVG_MARGIN
    for node in profile.nodes[1:]:
        child, parent = box[id(node)], box[id(node.parent)]
        assert child["width"] == pytest.approx(parent["width"] * node.value / node.parent.value, abs=0.0101), node.label
        assert child["y"] == parent["y"] + ROW
        assert parent["x"] - 0.01 <= child["x"] and child["x"] + child["width"] <= parent["x"] + parent["width"] + 0.02
    for node in profile.nodes:  # callees left-aligned under their caller, one after the other
        left = box[id(node)]["x"]
        for callee in node.children:
            assert box[id(callee)]["x"] == pytest.approx(left, abs=0.0101)
            left += box[id(callee)]["width"]


def test_svg_every_frame_has_a_title_with_self_and_total():
    profile = example_profile()
    total = profile.total
    for node, f in zip(profile.nodes, drawn(flame_svg(profile))):
        assert f["title"].split("\n") == [
            node.label,
            f"self {human(node.self, 'bytes')} ({100 * node.self / total:.1f} %)",
            f"total {human(node.value, 'bytes')} ({100 * node.value / total:.1f} %)"]
    kv = next(f for f in drawn(flame_svg(profile)) if f["title"].startswith("GPUModelRunner._allocate_kv"))
    assert kv["title"] == "GPUModelRunner._allocate_kv_cache_tensors\nself 55.1 GiB (74.9 %)\ntotal 55.1 GiB (74.9 %)"


def test_svg_highlights_the_top_self_allocators_and_only_they():
    # alloc recurses: only its frames with self are highlighted; b_alloc is third and left out with top=2
    tree = T("total", 0, T("main", 0, T("alloc", 0, T("alloc", 50)), T("b_alloc", 10), T("a_alloc", 30)))
    profile = parse_frame(frame(tree))
    document = flame_svg(profile, top=2)
    frames = drawn(document)
    lit = [f["title"].split("\n")[0] + ("" if "self 0 B" in f["title"] else "+self")
           for f in frames if f["fill"] == HIGHLIGHT_FILL]
    assert lit == ["alloc+self", "a_alloc+self"]
    legend = [t.text for t in ET.fromstring(document).iter(f"{SVG}text")
              if t.text and t.text[:3] in ("1. ", "2. ", "3. ")]
    assert legend == ["1. alloc: self 50 B (55.6 %), total 50 B", "2. a_alloc: self 30 B (33.3 %), total 30 B"]
    example = drawn(flame_svg(example_profile(), top=EXAMPLE_TOP))
    assert {f["title"].split("\n")[0] for f in example if f["fill"] == HIGHLIGHT_FILL} == {
        "GPUModelRunner._allocate_kv_cache_tensors", "LlamaMLP.__init__", "LlamaAttention.__init__"}
    assert sum(f["fill"] == HIGHLIGHT_FILL for f in example) == EXAMPLE_TOP


def test_fit_label():
    def width(chars):  # exactly `chars` characters, and a hair more against float rounding
        return 2 * TEXT_PAD + chars * CHAR_WIDTH + 1e-9

    assert fit_label("LlamaMLP.__init__", width(17)) == "LlamaMLP.__init__"
    assert fit_label("LlamaMLP.__init__", width(17) - 0.01) == "LlamaMLP.__init…"
    assert fit_label("LlamaMLP.__init__", width(3)) == "Ll…"
    assert fit_label("LlamaMLP.__init__", width(3) - 0.01) == ""
    assert fit_label("ab", width(2)) == "ab" and fit_label("ab", 0) == ""


def test_svg_text_never_overflows_its_box():
    # DejaVu Sans Mono, the first monospace font named, advances 1233/2048 em; Menlo the same, Consolas less
    assert CHAR_WIDTH >= 1233 / 2048 * FONT_SIZE
    long = "VeryLongModuleName.SomeClassWithALongName.a_method_with_a_long_name"
    tree = T("total", 0, T(long, 0, *[T(f"{long}_{i}", 2 ** i) for i in range(12)]))
    for document in (flame_svg(parse_frame(frame(tree))), flame_svg(example_profile())):
        frames = drawn(document)
        assert any(f["text"] and f["text"].endswith("…") for f in frames) and any(f["text"] is None for f in frames)
        for f in frames:
            label = f["title"].split("\n")[0]
            room = int((f["width"] - 2 * TEXT_PAD) // CHAR_WIDTH)
            if f["text"] is None:
                assert room < min(3, len(label)), label
                continue
            assert len(f["text"]) * CHAR_WIDTH + 2 * TEXT_PAD <= f["width"], label
            assert f["text"] == label or (f["text"].endswith("…") and label.startswith(f["text"][:-1]))
        right = SVG_WIDTH - SVG_MARGIN
        for text in ET.fromstring(document).iter(f"{SVG}text"):  # the legend lines too
            if text.get("font-family") == MONOSPACE:
                assert float(text.get("x")) + len(text.text) * CHAR_WIDTH <= right, text.text


def test_svg_leaves_out_frames_too_narrow_to_see():
    tree = T("total", 0, T("main", 0, T("big", 10 ** 9), T("tiny", 0, T("tinier", 10 ** 4))))
    profile = parse_frame(frame(tree))
    titles = [f["title"].split("\n")[0] for f in drawn(flame_svg(profile))]
    assert titles == ["total", "main", "big"]  # tiny is 0.01 px wide, under MIN_FRAME_WIDTH, and so is its callee


def test_svg_of_an_empty_profile():
    svg = ET.fromstring(flame_svg(parse_frame(frame(T("total", 0)))))
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert texts[0] == "GPU memory allocations: 0 B in all" and texts[1].startswith("No allocations in this profile")
    assert not drawn(ET.tostring(svg))


def test_svg_rejects_callees_wider_than_their_caller():
    bad = frame(T("total", 0, T("main", 0, T("a", 5), T("b", 5))))
    bad["data"]["values"][1][1] = 7  # main's total below its callees' 10
    with pytest.raises(FrameError, match="'main': its callees' totals add up to more than its own total"):
        flame_svg(parse_frame(bad))


def test_committed_example_svg_is_what_the_tool_draws():
    """docs/flamegraph-example.svg cannot go stale: re-render it with docs/flamegraphs.md's command when this fails."""
    assert EXAMPLE_SVG.read_bytes() == flame_svg(example_profile(), EXAMPLE_TOP)


def test_other_frames_are_grey_in_the_svg():
    frames = drawn(flame_svg(parse_frame(frame(TRUNCATED_TREE))))
    assert {f["fill"] for f in frames if f["title"].startswith("other\n")} == {QUIET_FILL}


def test_diff_colours_follow_grafanas_rule():
    grey, green, red = "#948e8e", "#00aa00", "#c80000"
    assert diff_fill(10, 10, 100, 100, "classic") == grey  # the same share
    assert diff_fill(10, 20, 100, 200, "classic") == grey  # twice as much of twice the total: the same share
    assert diff_fill(10, 0, 100, 100, "classic") == green  # gone: -100 %
    assert diff_fill(10, 20, 100, 100, "classic") == red  # doubled: +100 %
    assert diff_fill(0, 20, 100, 100, "classic") == "#ff0000"  # new: d3 extrapolates, channels clamp
    assert diff_fill(10, 15, 100, 100, "classic") == "#ae4747"  # +50 %: half way from grey to red
    assert diff_fill(10, 5, 100, 100, "classic") == "#4a9c47"  # -50 %
    assert diff_fill(10, 10, 0, 100, "classic") == grey  # one side empty: neutral


def test_the_default_diff_palette_is_blue_to_orange():
    """Okabe and Ito's blue and orange around the same grey, on the same scale: the default, not red and green."""
    assert DEFAULT_PALETTE == "blue-orange" and PALETTES["blue-orange"][1] == PALETTES["classic"][1]
    assert diff_fill(10, 0, 100, 100) == "#0072b2"  # gone: Okabe-Ito blue
    assert diff_fill(10, 20, 100, 100) == "#e69f00"  # doubled: Okabe-Ito orange
    assert diff_fill(10, 10, 100, 100) == diff_fill(10, 20, 100, 200) == "#948e8e"
    assert diff_fill(10, 15, 100, 100) == "#bd9747"  # +50 %: half way to orange, 150.5 rounded up as d3 rounds
    assert diff_fill(0, 20, 100, 100) == diff_fill(10, 30, 100, 100) == "#e69f00"  # new, tripled: full orange


def test_labels_contrast_with_their_fill():
    assert [text_fill(f) for f in ("#0072b2", "#948e8e", "#e69f00", "#c80000", "#00aa00")] == [
        "#ffffff", "#111111", "#111111", "#ffffff", "#111111"]


def _legend(document: bytes) -> list[str]:
    svg = ET.fromstring(document)
    return [t.text for t in svg.iter(f"{SVG}text") if t.text and t.get("font-size") is None
            and t.get("fill") is None and t.get("x") == str(SVG_MARGIN + 18)]


def test_diff_svg_says_its_colour_is_the_share_and_hovers_the_bytes():
    """Halving the KV cache leaves the weights' bytes as they were, but their share of a smaller total rises: the
    frame is coloured (orange), so the legend names the measure and the hover gives the bytes, which held."""
    document = diff_svg(example_profile(), kv_halved(example_profile()))
    frames = drawn(document)
    kv = next(f for f in frames if f["title"].startswith(KV + "\n"))
    r, g, b = (int(kv["fill"][i:i + 2], 16) for i in (1, 3, 5))
    assert b > r and b > g  # blue: its share shrank
    assert kv["title"].split("\n")[1:] == [
        "total 55.1 GiB → 27.5 GiB (-27.5 GiB)", "self 55.1 GiB → 27.5 GiB (-27.5 GiB)",
        "share of its side's total 74.89 % → 59.86 % (-20.1 %): the colour"]
    weights = next(f for f in frames if f["title"].startswith("LlamaMLP.__init__\n"))
    r, g, b = (int(weights["fill"][i:i + 2], 16) for i in (1, 3, 5))
    assert r > g > b  # orange: the same bytes, a larger share of a smaller total
    assert weights["title"].split("\n")[1:3] == ["total 10.5 GiB → 10.5 GiB (±0 B)", "self 10.5 GiB → 10.5 GiB (±0 B)"]
    assert weights["title"].endswith("(+59.9 %): the colour")
    assert frames[0]["width"] == SVG_WIDTH - 2 * SVG_MARGIN
    assert frames[0]["title"].endswith("share of its side's total 100.00 % → 100.00 % (±0 %): the colour")
    legend = _legend(document)
    assert legend == ["blue: its share of its side's total fell (-100 %, full blue: gone)",
                      "grey: the same share of its side's total (its bytes may still have changed: hover)",
                      "orange: its share of its side's total rose (+100 % or more, or new: full orange)"]
    assert not [t for t in legend if "grew" in t or "shrank" in t]
    subtitle = [t.text for t in ET.fromstring(document).iter(f"{SVG}text")][1]
    assert "share of its side's total" in subtitle and "not of its bytes" in subtitle


def test_diff_svg_in_the_classic_palette():
    document = diff_svg(example_profile(), kv_halved(example_profile()), palette="classic")
    frames = drawn(document)
    kv = next(f for f in frames if f["title"].startswith(KV + "\n"))
    r, g, b = (int(kv["fill"][i:i + 2], 16) for i in (1, 3, 5))
    assert g > r and g > b  # green: its share shrank
    assert _legend(document)[0].startswith("green: its share") and _legend(document)[2].startswith("red: its share")
    new = drawn(diff_svg(parse_frame(frame(T("total", 0, T("a", 5)))),
                         parse_frame(frame(T("total", 0, T("a", 5), T("b", 5))))))
    assert next(f for f in new if f["title"].startswith("b\n"))["title"].endswith("0.00 % → 50.00 % (new): the colour")
