"""The SVG renderer of the flame-graph reader: ``--svg FILE``, one profile or a comparison, as a self-contained file.

Owns: :func:`flame_svg` (an icicle as Grafana's panel draws it: width = total, self on hover, the top self
allocators highlighted), :func:`diff_svg` (the merged tree of two profiles coloured as Pyroscope's diff view,
:func:`diff_fill` over PALETTES), :func:`fit_label`. Inputs: :class:`flamegraph.model.Profile`. Outputs: UTF-8 SVG
bytes, the same for the same profile. Errors: ``FrameError`` when a frame's callees add up to more than its own total.
Upstream: grafana/grafana ``packages/grafana-flamegraph/src/FlameGraph/colors.ts`` and ``FlameGraphTooltip.tsx``;
why: docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

import math
import zlib
from typing import TYPE_CHECKING, Any, Sequence

from flamegraph.analysis import check_comparable, merge, report
from flamegraph.model import TRAMPOLINE, TRUNCATED, FrameError, Profile
from flamegraph.text import TITLE, human, signed

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

SVG_NS = "http://www.w3.org/2000/svg"
SVG_WIDTH = 1200  # px, the whole picture; the graph spans it less SVG_MARGIN on each side
SVG_MARGIN = 10  # px
ROW = 18  # px per stack level; a frame is ROW - 1 high (one pixel between levels)
FONT_SIZE = 11  # px, frame and legend labels, monospace
CHAR_WIDTH = 0.62 * FONT_SIZE  # px per character, with slack over monospace advances (DejaVu Sans Mono, Menlo 0.60 em)
TEXT_PAD = 3  # px between a box's edges and its text
MIN_FRAME_WIDTH = 0.1  # px: narrower frames, and so their callees, are left out (as flamegraph.pl does)
HIGHLIGHT_FILL = "#1d4ed8"  # the top self allocators: blue among warm colours
QUIET_FILL = "#d4d4d8"  # the root and CPython's trampolines: not your code
MONOSPACE = "'DejaVu Sans Mono', Menlo, Consolas, monospace"
SANS = "'DejaVu Sans', Helvetica, Arial, sans-serif"


def _px(value: float) -> str:
    """A coordinate as SVG text: rounded to 0.01 px, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def fit_label(text: str, width: float) -> str:
    """``text`` as it fits a box ``width`` px wide (TEXT_PAD each side, CHAR_WIDTH per character): whole,
    cut with a trailing '…', or '' when fewer than three characters would fit."""
    room = int((width - 2 * TEXT_PAD) // CHAR_WIDTH)
    if room >= len(text):
        return text
    return text[:room - 1] + "…" if room >= 3 else ""


def _warm_fill(label: str) -> str:
    """A warm colour (red to yellow) picked by the name, stable across runs (CRC-32, not hash())."""
    h = zlib.crc32(label.encode("utf-8"))
    red, green = 215 + (h & 0xFF) * 40 // 255, 90 + (h >> 8 & 0xFF) * 130 // 255
    blue = 40 + (h >> 16 & 0xFF) * 40 // 255
    return f"#{red:02x}{green:02x}{blue:02x}"


def _share(amount: int, total: int) -> str:
    return f"{100.0 * amount / total:.1f} %"


def _layout(nodes: Sequence, total: int, graph_width: float) -> list[tuple[Any, float, float]]:
    """(node, x, width) in nested-set order: callees left-aligned under their caller one after the other, a width
    proportional to the node's ``value`` of ``total``; frames under MIN_FRAME_WIDTH px left out with their callees.
    FrameError when a frame's callees add up to more than its own total."""
    frames: list[tuple[Any, float, float]] = []
    offsets: dict[int, int] = {}  # id(node) -> its left edge, in the profile's unit from the root's left edge
    used: dict[int, int] = {}  # id(node) -> what its callees laid out so far take of it
    for node in nodes:
        if node.parent is None:
            offset = 0
        elif id(node.parent) not in offsets:
            continue  # the parent was too narrow to draw
        else:
            offset = offsets[id(node.parent)] + used[id(node.parent)]
            used[id(node.parent)] += node.value
            if used[id(node.parent)] > node.parent.value:
                raise FrameError(f"{node.parent.label!r}: its callees' totals add up to more than its own total")
        width = graph_width * node.value / total
        if width < MIN_FRAME_WIDTH:
            continue
        offsets[id(node)], used[id(node)] = offset, 0
        frames.append((node, SVG_MARGIN + graph_width * offset / total, width))
    return frames


def _svg_page(height: int, heading: str, subtitle: str) -> ET.Element:
    """A white SVG page of :data:`SVG_WIDTH` x ``height`` with ``heading`` (also its title) and ``subtitle``; frames get
    a line between boxes and a darker one on hover."""
    import xml.etree.ElementTree as ET  # loaded when a picture is drawn

    svg = ET.Element("svg", {"xmlns": SVG_NS, "width": str(SVG_WIDTH), "height": str(height),
                             "viewBox": f"0 0 {SVG_WIDTH} {height}", "font-family": SANS})
    ET.SubElement(svg, "title").text = heading
    ET.SubElement(svg, "style").text = (".frame rect { stroke: #ffffff; stroke-width: 1; }"  # a line between boxes
                                        " .frame:hover rect { stroke: #111111; }"
                                        " .frame text { pointer-events: none; }")
    ET.SubElement(svg, "rect", {"width": "100%", "height": "100%", "fill": "#ffffff"})
    ET.SubElement(svg, "text", {"x": str(SVG_MARGIN), "y": "24", "font-size": "17", "font-weight": "bold",
                                "fill": "#111111"}).text = heading
    ET.SubElement(svg, "text", {"x": str(SVG_MARGIN), "y": "44", "font-size": "12", "fill": "#555555"}).text = subtitle
    return svg


def flame_svg(profile: Profile, top: int = 10, title: str = TITLE) -> bytes:
    """The profile as a self-contained SVG flame graph: UTF-8 bytes, the same for the same profile.

    Drawn as Grafana's panel draws it, an icicle: the root ("total") on top, each function's callees below
    it, left-aligned in frame order, its own self the rest of its width. Width SVG_WIDTH px; a frame's width
    is proportional to its total (the root spans SVG_WIDTH - 2 * SVG_MARGIN); x and width are rounded to
    0.01 px. Each frame is a ``<g class="frame">`` holding a ``<title>`` (shown on hover: the name, then self
    and total in the profile's unit as ``human`` writes them, each with its share of the root), a ``<rect>``
    and, where at least three characters fit, a ``<text>`` cut to the box (``fit_label``). Frames narrower
    than MIN_FRAME_WIDTH px are left out with their callees. The frames with self > 0 of report()'s ``top``
    self allocators are filled HIGHLIGHT_FILL, and a legend below the graph ranks those functions; the root
    and ``<interpreter trampoline>`` frames are grey, the others warm colours picked by name. The heading
    states the root total. An empty profile gives the heading and a "no allocations" line. Raises
    FrameError when a frame's callees add up to more than its own total (they could not fit under it).
    """
    import xml.etree.ElementTree as ET  # loaded when a picture is drawn

    total, unit = profile.total, profile.unit
    heading = f"{title}: {human(total, unit)} in all"
    graph_width = SVG_WIDTH - 2 * SVG_MARGIN
    graph_top = 56
    frames = _layout(profile.nodes, total, graph_width) if total else []
    depth = max((node.level for node, _, _ in frames), default=-1) + 1
    ranked = report(profile, top)["topSelf"] if total else []
    highlighted = {entry["function"] for entry in ranked}
    legend_top = graph_top + depth * ROW + 24
    height = legend_top + (len(ranked) + 1) * 18 + 6 if ranked else graph_top + depth * ROW + 10

    svg = _svg_page(height, heading, (
        "Callers above callees; a frame's width is its total (self + callees). Hover a frame for its self and total."
        if frames else "No allocations in this profile (is a GPU workload running, and the time range right?)."))
    graph = ET.SubElement(svg, "g", {"font-family": MONOSPACE, "font-size": str(FONT_SIZE)})
    for node, x, width in frames:
        top_self = node.label in highlighted and node.self > 0
        fill = (HIGHLIGHT_FILL if top_self else QUIET_FILL if node.level == 0 or node.label in (TRAMPOLINE, TRUNCATED)
                else _warm_fill(node.label))
        group = ET.SubElement(graph, "g", {"class": "frame"})
        ET.SubElement(group, "title").text = (f"{node.label}\nself {human(node.self, unit)} "
                                              f"({_share(node.self, total)})"
                                              f"\ntotal {human(node.value, unit)} ({_share(node.value, total)})")
        y = graph_top + node.level * ROW
        ET.SubElement(group, "rect", {"x": _px(x), "y": str(y), "width": _px(width), "height": str(ROW - 1),
                                      "rx": "2", "fill": fill})
        label = fit_label(node.label, float(_px(width)))
        if label:
            ET.SubElement(group, "text", {"x": _px(x + TEXT_PAD), "y": str(y + 12),
                                          "fill": "#ffffff" if top_self else "#1a1a1a"}).text = label
    if ranked:
        legend = ET.SubElement(svg, "g", {"font-size": "12", "fill": "#111111"})
        ET.SubElement(legend, "text", {"x": str(SVG_MARGIN), "y": str(legend_top)}).text = (
            f"Top {len(ranked)} self allocators, highlighted: start here. Grey: the root and CPython's trampolines"
            + (f"; '{TRUNCATED}': stacks the node limit cut."
               if any(n.label == TRUNCATED for n, _, _ in frames) else "."))
        for rank, entry in enumerate(ranked, 1):
            y = legend_top + rank * 18
            ET.SubElement(legend, "rect", {"x": str(SVG_MARGIN), "y": str(y - 11), "width": "12", "height": "12",
                                           "rx": "2", "fill": HIGHLIGHT_FILL})
            line = (f"{rank}. {entry['function']}: self {human(entry['self'], unit)} ({_share(entry['self'], total)}),"
                    f" total {human(entry['total'], unit)}")
            ET.SubElement(legend, "text", {"x": str(SVG_MARGIN + 18), "y": str(y), "font-family": MONOSPACE}).text = (
                fit_label(line, graph_width - 18))
    ET.indent(svg)
    return ET.tostring(svg, encoding="utf-8", xml_declaration=True) + b"\n"


# --- the before-and-after picture -----------------------------------------------------------------------

#: Diff colours (shrank, the same, grew), the ends and middle of one linear scale. ``blue-orange``, the default: Okabe
#: and Ito's blue and orange (Color Universal Design, 2008), told apart with every common colour-vision deficiency,
#: around Grafana's grey; ``classic``: Pyroscope's green-grey-red as Grafana's flame graph draws it. Sources:
#: docs/decisions/flamegraph-reading.md.
PALETTES = {"blue-orange": ((0, 114, 178), (148, 142, 142), (230, 159, 0)),
            "classic": ((0, 170, 0), (148, 142, 142), (200, 0, 0))}
DEFAULT_PALETTE = "blue-orange"
#: Palettes whose scale runs on past -100 and +100 % as d3's unclamped scale does (Grafana's red deepens to #ff0000);
#: the others stop at their ends, as extrapolating blue-orange would leave orange for yellow.
EXTRAPOLATED = {"classic"}
#: What the legend calls each end of a palette.
PALETTE_NAMES = {"blue-orange": ("blue", "orange"), "classic": ("green", "red")}


def _hex(rgb: Sequence[int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def share_change(ticks_left: int, ticks_right: int, total_left: int, total_right: int) -> tuple[float, float, float]:
    """(share before, share after, change) in percent, as Grafana's diff tooltip and colour compute them: each side's
    share of its own total rounded to 0.01, change = (after - before) / before * 100 (inf for a path only the
    current has, nan when both shares are 0)."""
    left = round(10000 * ticks_left / total_left) / 100 if total_left else 0.0
    right = round(10000 * ticks_right / total_right) / 100 if total_right else 0.0
    return left, right, (right - left) / left * 100 if left else math.inf if right else math.nan


def diff_fill(ticks_left: int, ticks_right: int, total_left: int, total_right: int,
              palette: str = DEFAULT_PALETTE) -> str:
    """``getBarColorByDiff`` in Python over ``PALETTES[palette]``: :func:`share_change`'s change through d3's
    ``scaleLinear().domain([-100, 0, 100])`` (for EXTRAPOLATED palettes not clamped: d3 extrapolates, the RGB channels
    are then clamped to 0..255; the others stop at -100 and +100 %), rounded half up as d3's colour output rounds; a
    side with no total at all gives the neutral colour."""
    low, middle, high = PALETTES[palette]
    if not total_left or not total_right:
        return _hex(middle)
    diff = share_change(ticks_left, ticks_right, total_left, total_right)[2]
    if math.isnan(diff):
        diff = 0.0
    if palette not in EXTRAPOLATED:
        diff = max(-100.0, min(100.0, diff))
    if diff < 0:
        start, end, t = low, middle, (diff + 100) / 100
    else:
        start, end, t = middle, high, diff / 100

    def channel(a: int, b: int) -> int:
        value = a + (b - a) * t if b != a else a
        return math.floor(max(0.0, min(255.0, value)) + 0.5)  # JavaScript's Math.round: halves up, not to even

    return _hex([channel(a, b) for a, b in zip(start, end)])


def _luminance(fill: str) -> float:
    """WCAG 2's relative luminance of a ``#rrggbb`` colour."""
    def linear(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(fill[i:i + 2], 16)) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_fill(fill: str) -> str:
    """White or near-black (#111111), whichever contrasts more with ``fill`` (WCAG 2 contrast ratio): orange and
    grey frames take dark text, blue and red ones white."""
    light = _luminance(fill) + 0.05
    return "#ffffff" if 1.05 / light >= light / (_luminance("#111111") + 0.05) else "#111111"


def _percent(value: float) -> str:
    return "new" if math.isinf(value) else "±0 %" if not value or math.isnan(value) else f"{value:+.1f} %"


def diff_svg(baseline: Profile, current: Profile, title: str = TITLE, palette: str = DEFAULT_PALETTE) -> bytes:
    """Both profiles as one SVG flame graph, as Pyroscope's diff view draws them: the merged call tree, a frame's
    width the baseline's and the current total added, its colour :func:`diff_fill` (``palette``, a key of PALETTES)
    of the change in its *share of its side's total*, not of its bytes: a frame whose bytes held takes a colour when
    the total moved, and the legend says so. Hover (the ``<title>``): total and self in bytes before -> after with
    the difference, then the share before -> after with its change (what the colour shows). Labels white or dark,
    whichever reads better on the fill. Otherwise laid out as :func:`flame_svg`; FrameError as :func:`flame_svg`,
    or when the two measure different things."""
    import xml.etree.ElementTree as ET  # loaded when a picture is drawn

    check_comparable(baseline, current)
    unit = current.unit
    nodes = merge(baseline, current)
    left_total, right_total = baseline.total, current.total
    heading = (f"{title}, before -> after: {human(left_total, unit)} -> {human(right_total, unit)} "
               f"({signed(right_total - left_total, unit)})")
    graph_width = SVG_WIDTH - 2 * SVG_MARGIN
    graph_top = 56
    everything = left_total + right_total
    frames = _layout(nodes, everything, graph_width) if everything else []
    depth = max((node.level for node, _, _ in frames), default=-1) + 1
    legend_top = graph_top + depth * ROW + 24
    height = legend_top + 3 * 18 + 6
    svg = _svg_page(height, heading,
                    "Width: before + after. Colour: the change in a frame's share of its side's total (as Pyroscope's "
                    "diff view), not of its bytes: hover for those.")
    graph = ET.SubElement(svg, "g", {"font-family": MONOSPACE, "font-size": str(FONT_SIZE)})
    for node, x, width in frames:
        (b_total, a_total), (b_self, a_self) = node.total, node.self
        before, after, change = share_change(b_total, a_total, left_total, right_total)
        group = ET.SubElement(graph, "g", {"class": "frame"})
        ET.SubElement(group, "title").text = (
            f"{node.label}"
            f"\ntotal {human(b_total, unit)} → {human(a_total, unit)} ({signed(a_total - b_total, unit)})"
            f"\nself {human(b_self, unit)} → {human(a_self, unit)} ({signed(a_self - b_self, unit)})"
            f"\nshare of its side's total {before:.2f} % → {after:.2f} % ({_percent(change)}): the colour")
        y = graph_top + node.level * ROW
        fill = diff_fill(b_total, a_total, left_total, right_total, palette)
        ET.SubElement(group, "rect", {"x": _px(x), "y": str(y), "width": _px(width), "height": str(ROW - 1), "rx": "2",
                                      "fill": fill})
        label = fit_label(node.label, float(_px(width)))
        if label:
            ET.SubElement(group, "text", {"x": _px(x + TEXT_PAD), "y": str(y + 12),
                                          "fill": text_fill(fill)}).text = label
    legend = ET.SubElement(svg, "g", {"font-size": "12", "fill": "#111111"})
    low, high = PALETTE_NAMES[palette]
    for row, (rgb, text) in enumerate(zip(PALETTES[palette], (
            f"{low}: its share of its side's total fell (-100 %, full {low}: gone)",
            "grey: the same share of its side's total (its bytes may still have changed: hover)",
            f"{high}: its share of its side's total rose (+100 % or more, or new: full {high})"))):
        y = legend_top + row * 18
        ET.SubElement(legend, "rect", {"x": str(SVG_MARGIN), "y": str(y - 11), "width": "12", "height": "12", "rx": "2",
                                       "fill": _hex(rgb)})
        ET.SubElement(legend, "text", {"x": str(SVG_MARGIN + 18), "y": str(y)}).text = text
    ET.indent(svg)
    return ET.tostring(svg, encoding="utf-8", xml_declaration=True) + b"\n"
