"""Who allocates the GPU memory: the flame-graph reading recipe as a command.

    python -m flamegraph.hotspots --stack NAME [--namespace NS] [--pod POD] [--since 1h] [--top N]
                             [--sample-type TYPE[:UNIT] | --profile-type ID]
                             [--hide-trampolines] [--json] [--svg FILE]
    python -m flamegraph.hotspots --from-file FILE [--sample-type TYPE[:UNIT]] [...]
                             [--baseline FILE | --baseline 3h..2h with --stack] [--max-nodes N with --stack]

FILE: a saved /api/ds/query response or frame, a Pyroscope render JSON, or a pprof profile (flamegraph.formats).
``other`` frames (Pyroscope's fold of what the node limit cut, :data:`TRUNCATED`) are never ranked; their share is
reported. ``--baseline`` compares two profiles (:func:`diff_report`, :func:`diff_svg`).

Queries Grafana's query API (``POST <grafanaEndpoint>/api/ds/query`` through ``az rest`` with the Azure
Managed Grafana audience) with the stack's Pyroscope datasource and the dashboard flame-graph panel's own
query (``queryType`` profile, label selector on ``k8s_namespace`` and ``k8s_podName``), its ``profileTypeId``
the GPU-memory profile type Pyroscope holds (:func:`pick_profile_type`: the one the stack's dashboard panel asks for,
:func:`dashboard_profile_type`, or the one another Inspektor Gadget version writes), or reads a saved response. Then
reads the flame graph the way the guide in docs/flamegraphs.md does: per function, *self* (what it allocated itself)
and *total* (with everything it called; a recursive function is counted once per stack), the widest self allocators
with their heaviest call chain from the entry point, the widest totals, and the wide orchestrators (total >= 10 % of
the root, no self), which are the path and not the cause. ``--svg FILE`` also writes the frame as a self-contained
SVG flame graph (``flame_svg``: width = total, self on hover, the ``--top`` self allocators highlighted).

Grafana's flame-graph data frame (the Pyroscope datasource's answer): fields ``level``, ``value`` (total),
``self`` and ``label`` in nested-set order (depth-first, a node's children right after it, one level
deeper); level 0 is the root ("total"). ``label`` is strings or an enum (integers indexing the field's
``config.type.enum.text``); other fields (``fileName``, ``line``) are ignored.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from cli import OneLineParser, exit_code
from stack import profile_types

#: The dashboard flame-graph panel's profile type (inspektor-gadget/grafana-dashboards 494542d8,
#: AdvancedGPUObservability.json). A Pyroscope profile type ID is ``name:sample type:sample unit:period type:period
#: unit`` (grafana/pyroscope v1.15.0 38a40a93 pkg/phlaredb/labels/labels.go ``CreateProfileLabels``). Pyroscope
#: v1.15.0 names an OTLP profile that is not a CPU one ``process_cpu`` ("guess", pkg/ingester/otlp/convert.go), and the
#: period type is what the exporter sends: none from Inspektor Gadget before v0.54.0, then the gadget's
#: ``profiles.name``, ``process_cuda`` for profile_cuda (inspektor-gadget 7eeb981e "otel-profiles: Add support for
#: profile name", pkg/operators/otel-profiles/otel-profiles.go). So the same GPU memory is stored as this ID or as
#: ``process_cpu:malloc:bytes:process_cuda:bytes`` (a gadget without ``profiles.name`` sends its datasource's name).
#: From Pyroscope v1.16.0 (f0368d1f8) the name is the period type: ``process_cuda:malloc:bytes:process_cuda:bytes``.
#: ``--stack`` asks Pyroscope which it holds (:func:`pick_profile_type`). The stack sets the ID its dashboard asks for
#: with config ``dashboardProfileType`` (this one by default), exported as ``dashboardDefinition.profileType``
#: (:func:`dashboard_profile_type`).
PROFILE_TYPE = profile_types.PUBLISHED
PROFILE_TYPE_ID = profile_types.ID
TRAMPOLINE = "<interpreter trampoline>"
#: Pyroscope's name for the nodes a query's node limit folds away: grafana/pyroscope v1.15.0 pkg/model/tree.go
#: (``truncatedNodeName = "other"``; ``MarshalTruncate`` sums a node's callees whose total is under the limit's
#: ``minValue`` into one ``other`` callee) and pkg/model/flamegraph.go (``NewFlameGraph``, the same rule for the
#: flame graph Grafana reads). A real function named ``other`` cannot be told from it.
TRUNCATED = "other"
#: The node limit when none is sent: Grafana's Pyroscope datasource sends the query's ``maxNodes`` only when the
#: panel sets one (grafana/grafana pkg/tsdb/grafana-pyroscope-datasource/query.go passes ``qm.MaxNodes``, nil
#: by default), and Pyroscope v1.15.0 then applies ``-querier.max-flamegraph-nodes-default`` = 8<<10, allowing up to
#: ``-querier.max-flamegraph-nodes-max`` = 1<<20 (pkg/validation/limits.go).
MAX_NODES_DEFAULT = 8 << 10
MAX_NODES_MAX = 1 << 20
TRUNCATED_HINT_SHARE = 0.05  # from this share of the total in ``other`` nodes on, the report says to raise the limit
ORCHESTRATOR_SHARE = 0.10
TITLE = "GPU memory allocations"
LEGEND = """Legend: self = memory the function allocated itself; total = with everything it called.
  Class.method / Class.__init__  a method (Python qualname); a bare name is a module-level function.
  <interpreter trampoline>       CPython's own frames between Python calls: overhead, not your code.
  0x7f3a9c2d1e40                 native or CUDA code without symbols (a driver or library frame).
  Start from the widest self allocator; wide frames with zero self only pass the memory on."""


class FrameError(ValueError):
    """A response that is not a well-formed flame-graph frame (one line saying what is wrong)."""


@dataclass(slots=True, eq=False)
class Node:
    label: str
    level: int
    value: int
    self: int
    parent: Optional["Node"] = None
    children: list["Node"] = field(default_factory=list)

    def chain(self) -> list[str]:
        """Labels from the entry point (the root's child) down to this node."""
        labels, node = [], self
        while node is not None and node.level > 0:
            labels.append(node.label)
            node = node.parent
        return labels[::-1]


@dataclass
class Profile:
    unit: str
    root: Optional[Node]
    nodes: list[Node]
    sample_type: Optional[str] = None  # "type:unit" as a pprof profile declares it; None for a frame (its unit only)

    @property
    def total(self) -> int:
        return self.root.value if self.root else 0


# --- the frame ---------------------------------------------------------------------------------------


def _field_values(frame: dict, name: str) -> Optional[tuple[dict, list]]:
    """(field spec, its values) of the field ``name`` in a data frame, None if it has no such field; FrameError
    when the frame is not shaped as one (``schema.fields`` objects, ``data.values`` lists)."""
    fields = (frame.get("schema") or {}).get("fields") or [] if isinstance(frame, dict) else None
    values = (frame.get("data") or {}).get("values") or [] if isinstance(frame, dict) else None
    if not isinstance(fields, list) or not all(isinstance(spec, dict) for spec in fields) or not isinstance(values, list):
        raise FrameError("a frame must be an object with schema.fields (objects) and data.values (lists)")
    for index, spec in enumerate(fields):
        if spec.get("name") == name:
            if index >= len(values) or not isinstance(values[index], list):
                raise FrameError(f"field {name!r} has no values")
            return spec, values[index]
    return None


def find_frame(response: Any) -> dict:
    """The flame-graph frame in a /api/ds/query response (or a bare frame)."""
    if isinstance(response, dict) and "schema" in response:
        return response
    results = (response or {}).get("results") if isinstance(response, dict) else None
    if not isinstance(results, dict):
        raise FrameError("not a Grafana query response: no 'results'")
    for ref, result in results.items():
        if not isinstance(result, dict) or not isinstance(result.get("frames") or [], list):
            raise FrameError(f"results.{ref}: expected an object with a list of frames")
        if result.get("error"):
            raise FrameError(f"Grafana answered with an error: {result['error']}")
        for frame in result.get("frames") or []:
            if _field_values(frame, "level") is not None:
                return frame
    raise FrameError("the response holds no flame-graph frame (fields level, value, self, label)")


def parse_frame(frame: dict) -> Profile:
    """Nodes of a flame-graph frame, parent-linked. Raises FrameError for a malformed frame."""
    columns = {}
    for name in ("level", "value", "self", "label"):
        found = _field_values(frame, name)
        if found is None:
            raise FrameError(f"the frame has no field {name!r}")
        columns[name] = found
    lengths = {name: len(values) for name, (_, values) in columns.items()}
    if len(set(lengths.values())) != 1:
        raise FrameError(f"field lengths differ: {lengths}")
    label_spec, labels = columns["label"]
    enum = (((label_spec.get("config") or {}).get("type") or {}).get("enum") or {}).get("text")
    if enum is not None:
        try:
            labels = [enum[int(i)] for i in labels]
        except (IndexError, ValueError, TypeError):
            raise FrameError("an enum label points outside config.type.enum.text") from None
    unit = ((columns["value"][0].get("config") or {}).get("unit")) or "bytes"
    nodes: list[Node] = []
    path: list[Node] = []
    for i, (level, value, own) in enumerate(zip(columns["level"][1], columns["value"][1], columns["self"][1])):
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x == int(x)
                   for x in (level, value, own)):
            raise FrameError(f"row {i}: level, value and self must be whole numbers (got {level!r}, {value!r}, {own!r})")
        level, value, own = int(level), int(value), int(own)
        if value < 0 or own < 0:
            raise FrameError(f"row {i} ({labels[i]!r}): negative value or self")
        if i == 0 and level != 0:
            raise FrameError("the first row must be the root, at level 0")
        if i > 0 and (level < 1 or level > len(path)):
            raise FrameError(f"row {i} ({labels[i]!r}): level {level} after level {len(path) - 1}; levels may only go one deeper")
        del path[level:]
        node = Node(str(labels[i]), level, value, own, path[-1] if path else None)
        if node.parent:
            node.parent.children.append(node)
        nodes.append(node)
        path.append(node)
    return Profile(unit, nodes[0] if nodes else None, nodes)


# --- the reading -------------------------------------------------------------------------------------


def function_totals(profile: Profile) -> dict[str, dict]:
    """label -> {"self", "total", "nodes"}: self summed over its nodes; total summed over its nodes that
    have no ancestor with the same label (a recursive call is inside its caller's total already). Pyroscope's
    ``other`` nodes (:data:`TRUNCATED`) are not functions and are left out: see :func:`truncated`."""
    stats: dict[str, dict] = {}
    on_path: dict[str, int] = {}
    # Depth-first without recursion (stacks run thousands of frames deep): (node, entering?)
    pending = [(child, True) for child in reversed(profile.root.children)] if profile.root else []
    while pending:
        node, entering = pending.pop()
        if not entering:
            on_path[node.label] -= 1
            continue
        if node.label == TRUNCATED:
            continue
        entry = stats.get(node.label)
        if entry is None:
            entry = stats[node.label] = {"self": 0, "total": 0, "nodes": []}
        entry["self"] += node.self
        entry["nodes"].append(node)
        depth = on_path.get(node.label, 0)
        if depth == 0:
            entry["total"] += node.value
        on_path[node.label] = depth + 1
        pending.append((node, False))
        pending.extend((child, True) for child in reversed(node.children))
    return stats


def truncated(profile: Profile) -> dict:
    """What the node limit folded away: the ``other`` nodes' count, their summed total and its share of the root.
    Each is a separate cut (under a different caller), so they are counted, never merged into one function."""
    cut = [node for node in profile.nodes if node.label == TRUNCATED and node.level > 0]
    amount = sum(node.value for node in cut)
    total = profile.total
    return {"total": amount, "percent": round(100.0 * amount / total, 2) if total else 0.0, "nodes": len(cut)}


def human(amount: int, unit: str) -> str:
    """As Grafana's flame graph shows the same unit: ``bytes`` in binary units (KiB, MiB, GiB: 1024-based,
    the unit the Pyroscope datasource sets for memory profiles), ``decbytes`` in decimal ones (kB, MB, GB);
    other units as plain numbers."""
    if unit not in ("bytes", "decbytes"):
        return f"{amount} {unit}"
    base, suffixes = (1024, ("B", "KiB", "MiB", "GiB", "TiB")) if unit == "bytes" else (1000, ("B", "kB", "MB", "GB", "TB"))
    value = float(amount)
    for suffix in suffixes:
        if abs(value) < base or suffix == suffixes[-1]:
            return f"{value:.0f} B" if suffix == "B" else f"{value:.1f} {suffix}"
        value /= base
    return f"{amount} B"


def report(profile: Profile, top: int = 10, hide_trampolines: bool = False) -> dict:
    """The report as the --json shape: unit, total, truncated (:func:`truncated`), topSelf, topTotal,
    orchestrators; each list holds at most ``top`` entries (the widest first). ``other`` nodes are in none."""
    stats = function_totals(profile)
    total = profile.total

    def chain(label: str) -> list[str]:
        heaviest = max(stats[label]["nodes"], key=lambda n: n.self)  # first of equals: nested-set order
        frames = heaviest.chain()
        return [f for f in frames if f != TRAMPOLINE] if hide_trampolines else frames

    shown = [l for l in stats if not (hide_trampolines and l == TRAMPOLINE)]
    by_self = sorted((l for l in shown if stats[l]["self"] > 0), key=lambda l: (-stats[l]["self"], l))[:top]
    by_total = sorted(shown, key=lambda l: (-stats[l]["total"], l))[:top]
    orchestrators = sorted(
        (l for l in shown if stats[l]["self"] == 0 and total and stats[l]["total"] >= ORCHESTRATOR_SHARE * total),
        key=lambda l: (-stats[l]["total"], l))[:top]
    return {
        "unit": profile.unit,
        "total": total,
        "truncated": truncated(profile),
        "topSelf": [{"function": l, "self": stats[l]["self"], "total": stats[l]["total"],
                     "selfPercent": round(100.0 * stats[l]["self"] / total, 2) if total else 0.0,
                     "stack": chain(l)} for l in by_self],
        "topTotal": [{"function": l, "total": stats[l]["total"], "self": stats[l]["self"]} for l in by_total],
        "orchestrators": orchestrators,
    }


def truncation_lines(cut: dict, unit: str, max_nodes: Optional[int] = None) -> list[str]:
    """The report's lines on ``other`` nodes: none without any; their share, and from TRUNCATED_HINT_SHARE on the
    hint to raise the node limit."""
    if not cut["nodes"]:
        return []
    limit = max_nodes or MAX_NODES_DEFAULT
    lines = [f"Truncated stacks: {human(cut['total'], unit)} ({cut['percent']:.1f} %) in {cut['nodes']} '{TRUNCATED}' "
             f"node{'s' if cut['nodes'] > 1 else ''}, what the node limit ({limit}) folded; not a function, not ranked."]
    if cut["percent"] >= 100 * TRUNCATED_HINT_SHARE:
        lines.append(f"  Raise the limit to see who allocates it: --max-nodes {min(4 * limit, MAX_NODES_MAX)} with --stack "
                     "(in Grafana, the query's Max Nodes), then save or export again.")
    return lines


def render(result: dict, title: str = TITLE, max_nodes: Optional[int] = None) -> str:
    unit, total = result["unit"], result["total"]
    lines = [f"{title}: {human(total, unit)} in all"]
    if not total:
        lines.append("No allocations in this profile (is a GPU workload running, and the time range right?).")
        return "\n".join(lines)
    lines += truncation_lines(result["truncated"], unit, max_nodes)
    lines += ["", "Top self allocators (start here):"]
    for i, entry in enumerate(result["topSelf"], 1):
        lines.append(f"  {i:>2}. {entry['function']}  self {human(entry['self'], unit)} ({entry['selfPercent']:.1f} %)"
                     f", total {human(entry['total'], unit)}")
        lines.append(f"      {' -> '.join(entry['stack'])}")
    lines += ["", "Top by total (self + callees):"]
    for i, entry in enumerate(result["topTotal"], 1):
        share = 100.0 * entry["total"] / total
        lines.append(f"  {i:>2}. {entry['function']}  total {human(entry['total'], unit)} ({share:.1f} %), self {human(entry['self'], unit)}")
    lines += ["", "Orchestrators (wide, zero self: the path, not the cause):"]
    lines += [f"  - {name}" for name in result["orchestrators"]] or ["  (none)"]
    lines += ["", LEGEND]
    return "\n".join(lines)


# --- before and after ----------------------------------------------------------------------------------


def _signed(amount: int, unit: str) -> str:
    return ("+" if amount > 0 else "-" if amount < 0 else "±") + human(abs(amount), unit)


def check_comparable(baseline: Profile, current: Profile) -> None:
    """FrameError unless the two profiles measure the same thing: the same unit, and the same sample type where
    both declare one (pprof)."""
    if baseline.unit != current.unit:
        raise FrameError(f"--baseline: its unit {baseline.unit!r} differs from the current profile's {current.unit!r}")
    if baseline.sample_type and current.sample_type and baseline.sample_type != current.sample_type:
        raise FrameError(f"--baseline: its sample type {baseline.sample_type} differs from the current profile's "
                         f"{current.sample_type}")


def diff_report(baseline: Profile, current: Profile, top: int = 10) -> dict:
    """Per function, self and total before (``baseline``) and after (``current``) and the change (after - before),
    in absolute amounts: ``grew`` (self grew, the largest growth first), ``shrank`` (self shrank, the largest shrink
    first), each at most ``top``; functions whose self did not change (callers) are left out. Ties: the total's
    change, then the name. ``other`` nodes are in neither list; each side's :func:`truncated` is reported."""
    check_comparable(baseline, current)
    before, after = function_totals(baseline), function_totals(current)
    zero = {"self": 0, "total": 0}
    entries = []
    for label in sorted(set(before) | set(after)):
        b, a = before.get(label, zero), after.get(label, zero)
        entries.append({"function": label,
                        "self": {"baseline": b["self"], "current": a["self"], "change": a["self"] - b["self"]},
                        "total": {"baseline": b["total"], "current": a["total"], "change": a["total"] - b["total"]}})
    grew = sorted((e for e in entries if e["self"]["change"] > 0),
                  key=lambda e: (-e["self"]["change"], -e["total"]["change"], e["function"]))[:top]
    shrank = sorted((e for e in entries if e["self"]["change"] < 0),
                    key=lambda e: (e["self"]["change"], e["total"]["change"], e["function"]))[:top]
    return {"unit": current.unit,
            "total": {"baseline": baseline.total, "current": current.total, "change": current.total - baseline.total},
            "truncated": {"baseline": truncated(baseline), "current": truncated(current)},
            "grew": grew, "shrank": shrank}


def render_diff(result: dict, title: str = TITLE, max_nodes: Optional[int] = None) -> str:
    unit, total = result["unit"], result["total"]
    lines = [f"{title}, before -> after: {human(total['baseline'], unit)} -> {human(total['current'], unit)} "
             f"({_signed(total['change'], unit)})"]
    for side in ("baseline", "current"):
        lines += [f"{side.capitalize()}: {line}" for line in truncation_lines(result["truncated"][side], unit, max_nodes)]
    for key, heading in (("grew", "Grew (self, the largest growth first):"), ("shrank", "Shrank (self, the largest shrink first):")):
        lines += ["", heading]
        for i, e in enumerate(result[key], 1):
            lines.append(f"  {i:>2}. {e['function']}  self {human(e['self']['baseline'], unit)} -> "
                         f"{human(e['self']['current'], unit)} ({_signed(e['self']['change'], unit)}), total "
                         f"{human(e['total']['baseline'], unit)} -> {human(e['total']['current'], unit)} "
                         f"({_signed(e['total']['change'], unit)})")
        if not result[key]:
            lines.append("  (none)")
    return "\n".join(lines)


# --- the picture -------------------------------------------------------------------------------------

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
    return f"#{215 + (h & 0xFF) * 40 // 255:02x}{90 + (h >> 8 & 0xFF) * 130 // 255:02x}{40 + (h >> 16 & 0xFF) * 40 // 255:02x}"


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
        ET.SubElement(group, "title").text = (f"{node.label}\nself {human(node.self, unit)} ({_share(node.self, total)})"
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
            + (f"; '{TRUNCATED}': stacks the node limit cut." if any(n.label == TRUNCATED for n, _, _ in frames) else "."))
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

#: Pyroscope's diff colours as Grafana's flame graph draws them (grafana/grafana
#: packages/grafana-flamegraph/src/FlameGraph/colors.ts at 0f89bfb93c93557ace179f5729e9f09214279c3c,
#: ``getBarColorByDiff``, default scheme): a linear scale from -100 % (shrank: green) through 0 (grey) to +100 % (grew:
#: red) of the change in the node's *share* of its side's total.
DIFF_COLOURS = ((0, 170, 0), (148, 142, 142), (200, 0, 0))


def diff_fill(ticks_left: int, ticks_right: int, total_left: int, total_right: int) -> str:
    """``getBarColorByDiff`` in Python: each side's share in percent rounded to 0.01, diff = (right - left) / left
    * 100, through d3's ``scaleLinear().domain([-100, 0, 100])`` over DIFF_COLOURS (not clamped: d3 extrapolates,
    the RGB channels are then clamped to 0..255 and rounded, as d3's colour output does); a side with no total at
    all gives the neutral colour."""
    if not total_left or not total_right:
        r, g, b = DIFF_COLOURS[1]
        return f"#{r:02x}{g:02x}{b:02x}"
    left = round(10000 * ticks_left / total_left) / 100
    right = round(10000 * ticks_right / total_right) / 100
    diff = (right - left) / left * 100 if left else math.inf if right else math.nan
    if math.isnan(diff):
        diff = 0.0
    low, high, t = (DIFF_COLOURS[0], DIFF_COLOURS[1], (diff + 100) / 100) if diff < 0 else (DIFF_COLOURS[1], DIFF_COLOURS[2], diff / 100)

    def channel(a: int, b: int) -> int:
        value = a + (b - a) * t if b != a else a
        return round(max(0.0, min(255.0, value)))

    return "#" + "".join(f"{channel(a, b):02x}" for a, b in zip(low, high))


@dataclass(slots=True, eq=False)
class DiffNode:
    """A node of the merged tree: the same call path in both profiles. ``value`` (the drawn width) is the two
    totals added, as Grafana's diff flame graph sizes a bar (left + right ticks)."""
    label: str
    level: int
    parent: Optional["DiffNode"] = None
    children: list["DiffNode"] = field(default_factory=list)
    total: tuple = (0, 0)  # (baseline, current)
    self: tuple = (0, 0)

    @property
    def value(self) -> int:
        return self.total[0] + self.total[1]


def merge(baseline: Profile, current: Profile) -> list[DiffNode]:
    """The merged tree in nested-set order: the baseline's callees first, then the ones only the current has."""
    root = DiffNode("total", 0)
    by_path: dict[tuple[int, str], DiffNode] = {}
    for side, profile in enumerate((baseline, current)):
        where: dict[int, DiffNode] = {}
        for node in profile.nodes:
            if node.parent is None:
                merged = root
            else:
                parent = where[id(node.parent)]
                merged = by_path.get((id(parent), node.label))
                if merged is None:
                    merged = by_path[(id(parent), node.label)] = DiffNode(node.label, parent.level + 1, parent)
                    parent.children.append(merged)
            where[id(node)] = merged
            total, own = list(merged.total), list(merged.self)
            total[side] += node.value
            own[side] += node.self
            merged.total, merged.self = tuple(total), tuple(own)
    order, pending = [], [root]
    while pending:
        node = pending.pop()
        order.append(node)
        pending.extend(reversed(node.children))
    return order


def diff_svg(baseline: Profile, current: Profile, title: str = TITLE) -> bytes:
    """Both profiles as one SVG flame graph, as Pyroscope's diff view draws them: the merged call tree, a frame's
    width the baseline's and the current total added, its colour :func:`diff_fill` of the change in its share
    (red grew, green shrank, grey the same; a path only the current has is full red, one only the baseline has full
    green). Hover: both totals and selfs and the change. Otherwise laid out as :func:`flame_svg`."""
    check_comparable(baseline, current)
    unit = current.unit
    nodes = merge(baseline, current)
    left_total, right_total = baseline.total, current.total
    heading = (f"{title}, before -> after: {human(left_total, unit)} -> {human(right_total, unit)} "
               f"({_signed(right_total - left_total, unit)})")
    graph_width = SVG_WIDTH - 2 * SVG_MARGIN
    graph_top = 56
    everything = left_total + right_total
    frames = _layout(nodes, everything, graph_width) if everything else []
    depth = max((node.level for node, _, _ in frames), default=-1) + 1
    legend_top = graph_top + depth * ROW + 24
    height = legend_top + 3 * 18 + 6
    svg = _svg_page(height, heading,
                    "Width: before + after. Colour: the change in a frame's share of its side's total, as Pyroscope's diff view.")
    graph = ET.SubElement(svg, "g", {"font-family": MONOSPACE, "font-size": str(FONT_SIZE)})
    for node, x, width in frames:
        (b_total, a_total), (b_self, a_self) = node.total, node.self
        group = ET.SubElement(graph, "g", {"class": "frame"})
        ET.SubElement(group, "title").text = (
            f"{node.label}\nbefore: total {human(b_total, unit)}, self {human(b_self, unit)}"
            f"\nafter: total {human(a_total, unit)}, self {human(a_self, unit)}"
            f"\nchange: total {_signed(a_total - b_total, unit)}, self {_signed(a_self - b_self, unit)}")
        y = graph_top + node.level * ROW
        ET.SubElement(group, "rect", {"x": _px(x), "y": str(y), "width": _px(width), "height": str(ROW - 1), "rx": "2",
                                      "fill": diff_fill(b_total, a_total, left_total, right_total)})
        label = fit_label(node.label, float(_px(width)))
        if label:
            ET.SubElement(group, "text", {"x": _px(x + TEXT_PAD), "y": str(y + 12), "fill": "#ffffff"}).text = label
    legend = ET.SubElement(svg, "g", {"font-size": "12", "fill": "#111111"})
    for row, (rgb, text) in enumerate(zip(DIFF_COLOURS, ("shrank (-100 % of its share or more: green)",
                                                         "unchanged share", "grew (+100 % or more, or new: red)"))):
        y = legend_top + row * 18
        ET.SubElement(legend, "rect", {"x": str(SVG_MARGIN), "y": str(y - 11), "width": "12", "height": "12", "rx": "2",
                                       "fill": "#" + "".join(f"{c:02x}" for c in rgb)})
        ET.SubElement(legend, "text", {"x": str(SVG_MARGIN + 18), "y": str(y)}).text = text
    ET.indent(svg)
    return ET.tostring(svg, encoding="utf-8", xml_declaration=True) + b"\n"


# --- the query ---------------------------------------------------------------------------------------

#: What --namespace and --pod name (Kubernetes API conventions, "Object Names and IDs": a namespace is an RFC 1123
#: label, at most 63 characters; a pod name an RFC 1123 subdomain, at most 253), and what a regex over them may hold.
NAMESPACE = ("namespace", 63, r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", "lowercase letters, digits and '-'", "ml-.*")
POD = ("pod name", 253, r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*",
       "lowercase letters, digits, '-' and '.'", "vllm-.*")
#: Regex syntax a label matcher takes (Pyroscope's =~ is Go's RE2, fully anchored): no lookaround, no backreference.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")


def selector_problem(value: str, what: tuple) -> str:
    """Why ``value`` cannot select Kubernetes objects of kind ``what`` (:data:`NAMESPACE`, :data:`POD`) in the
    flame-graph query (``k8s_namespace=~"..."``), or ``""``. Without regex syntax it must be a valid name (a typo
    would match nothing, silently); with it, a regex RE2 accepts."""
    kind, longest, pattern, allowed, example = what
    if not re.search(r"[\\.*+?()\[\]{}|^$]", value.replace(".", "") if kind == "pod name" else value):
        if len(value) <= longest and re.fullmatch(pattern, value):
            return ""
        return (f"expected a {kind} (up to {longest} {allowed}, starting and ending with a letter or digit) or a regex "
                f"over them such as '{example}' (got {value!r})")
    try:
        re.compile(value)
    except re.error as error:
        return f"not a valid regular expression ({error}); expected a {kind} or a regex such as '{example}' (got {value!r})"
    if _NOT_RE2.search(value):
        return f"lookarounds and backreferences are not RE2, which Pyroscope's label matcher uses (got {value!r})"
    return ""



def _regex_value(text: Optional[str]) -> str:
    return (text or ".*").replace("\\", "\\\\").replace('"', '\\"')


def query_body(uid: str, namespace: Optional[str], pod: Optional[str], since: str, until: Optional[str] = None,
               max_nodes: Optional[int] = None, profile_type: str = PROFILE_TYPE) -> dict:
    """The /api/ds/query body: the dashboard panel's target with its variables filled in; from now-``since`` to
    now-``until`` (or now); ``maxNodes`` only when given (as Grafana sends it only when the panel sets it);
    ``profile_type`` the panel's unless Pyroscope holds the GPU memory under another ID."""
    selector = f'{{k8s_namespace=~"{_regex_value(namespace)}",k8s_podName=~"{_regex_value(pod)}"}}'
    body = {
        "from": f"now-{since}",
        "to": f"now-{until}" if until else "now",
        "queries": [{
            "refId": "A",
            "datasource": {"type": "grafana-pyroscope-datasource", "uid": uid},
            "queryType": "profile",
            "profileTypeId": profile_type,
            "labelSelector": selector,
            "groupBy": [],
            "spanSelector": [],
        }],
    }
    if max_nodes is not None:
        body["queries"][0]["maxNodes"] = max_nodes
    return body


def matching_profile_types(available: Sequence[str], sample_type: Optional[str] = None) -> list[str]:
    """The well-formed IDs in ``available`` whose sample type (and unit, when given) is ``sample_type``
    (``TYPE[:UNIT]``, default ``malloc:bytes``), in their order."""
    kind, _, unit = (sample_type or "malloc:bytes").partition(":")
    return [i for i in available if PROFILE_TYPE_ID.fullmatch(i) and i.split(":")[1] == kind
            and (not unit or i.split(":")[2] == unit)]


def pick_profile_type(available: Sequence[str], sample_type: Optional[str] = None, preferred: Optional[str] = None) -> str:
    """The profile type ID ``--stack`` queries, among the IDs Pyroscope holds (``available``, the datasource's
    ``profileTypes`` resource). ``sample_type``: ``TYPE[:UNIT]`` (``--sample-type``), default Inspektor Gadget's GPU
    memory ``malloc:bytes``. Of the IDs with that sample type (and unit): ``preferred`` when held (the ID the stack's
    dashboard panel asks for, :func:`dashboard_profile_type`), else the published panel's :data:`PROFILE_TYPE` when
    held, else the only one. FrameError, one line, when none or several match (naming them and ``--profile-type``)."""
    kind, _, unit = (sample_type or "malloc:bytes").partition(":")
    matches = matching_profile_types(available, sample_type)
    held = ", ".join(available) or "none"
    for wanted in (preferred, PROFILE_TYPE):
        if wanted and wanted in matches:
            return wanted
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise FrameError(f"Pyroscope holds no {kind}{':' + unit if unit else ''} profile in this time range (it holds: "
                         f"{held}); is a GPU workload running, or pick one with --sample-type or --profile-type")
    raise FrameError(f"several {kind}{':' + unit if unit else ''} profile types ({', '.join(matches)}): "
                     "pick one with --profile-type")


def profile_types_url(grafana: str, uid: str, since_seconds: int, until_seconds: int = 0) -> str:
    """``GET /api/datasources/uid/{uid}/resources/profileTypes?start=&end=`` over now-``since_seconds`` to
    now-``until_seconds``, in milliseconds. The range is always sent: Grafana reads ``start``/``end`` (grafana/grafana
    PR 77523, 2023); without them Grafanas before PR 110277 (2025) pass 0 and 0, for which Pyroscope v1.15.0 answers
    from the ingesters' head block only (api/querier/v1/querier.proto ``ProfileTypesRequest``: "If missing or zero,
    only the ingesters will be queried"), and later ones ask now-1h..now+1h (instance.go @ 3e9248b7
    ``profileTypes``)."""
    now = int(time.time() * 1000)
    return (f"{grafana}/api/datasources/uid/{uid}/resources/profileTypes"
            f"?start={now - since_seconds * 1000}&end={now - until_seconds * 1000}")


def dashboard_profile_type(outputs: dict) -> str:
    """The profile type ID the stack's dashboard flame graph asks for, from its outputs: ``dashboardDefinition.
    profileType`` (config ``dashboardProfileType``, which the dashboard step sets in the panel), or :data:`PROFILE_TYPE`
    for the outputs of a stack from before that key (it uploaded the published dashboard's ID unchanged) or one that
    exports no well-formed ID there."""
    definition = outputs.get("dashboardDefinition")
    asked = definition.get("profileType") if isinstance(definition, dict) else None
    return asked if isinstance(asked, str) and PROFILE_TYPE_ID.fullmatch(asked) else PROFILE_TYPE


class StackQuery:
    """Grafana's API for the stack's Pyroscope datasource, through ``az rest`` (outputs read once);
    ``dashboard_profile_type``: the ID the stack's dashboard asks for (:func:`dashboard_profile_type`)."""

    def __init__(self, stack: str, outputs_file: Optional[str]):
        from ops.verify import read_outputs

        self.outputs = read_outputs(stack, outputs_file, needed=("grafanaEndpoint", "pyroscopeDatasourceUid"))
        self.grafana = self.outputs["grafanaEndpoint"].rstrip("/")
        self.uid = self.outputs["pyroscopeDatasourceUid"]
        self.dashboard_profile_type = dashboard_profile_type(self.outputs)

    def _rest(self, method: str, url: str, body: Optional[dict] = None) -> Any:
        from steps.azcli import AzError, rest

        try:
            return rest(method, url, body)
        except AzError as error:
            if error.kind == "missing":  # no az on PATH: say what to install
                raise ValueError(error.last_line) from None
            # A secret Grafana name is in the endpoint: the error line says it masked (ops.verify.StackOutputs).
            raise FrameError(self.outputs.mask(f"querying Grafana failed: {error.last_line}")) from None

    def profile_types(self, since: str, until: Optional[str] = None) -> list[str]:
        """The profile type IDs Pyroscope holds from now-``since`` to now-``until`` (or now): :func:`profile_types_url`;
        the answer is ``[{"id", "label"}]`` (grafana/grafana 041993ff pkg/tsdb/grafana-pyroscope-datasource/
        pyroscopeClient.go ``ProfileType``)."""
        answer = self._rest("get", profile_types_url(self.grafana, self.uid, _seconds(since), _seconds(until) if until else 0))
        if not isinstance(answer, list):
            raise FrameError("Grafana's profileTypes answer is not a list")
        return [t["id"] for t in answer if isinstance(t, dict) and isinstance(t.get("id"), str)]

    def flame_graph(self, body_args: dict) -> Any:
        return self._rest("post", f"{self.grafana}/api/ds/query", query_body(self.uid, **body_args))


DURATION = re.compile(r"[1-9]\d*[smhdw]")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _seconds(duration: str) -> int:
    return int(duration[:-1]) * _UNITS[duration[-1]]


def read_file(path: str, sample_type: Optional[str], flag: str = "--from-file") -> Profile:
    """A saved profile in any of the three formats (:func:`flamegraph.formats.load`); FrameError names the file."""
    from flamegraph import formats as profiles

    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise FrameError(f"{flag}: cannot read {path}: {error.strerror or error}") from None
    try:
        return profiles.load(data, sample_type)[0]
    except FrameError as error:
        raise FrameError(f"{path}: {error}") from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m flamegraph.hotspots", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="query the deployed stack's Grafana (outputs from `pulumi stack output`)")
    source.add_argument("--from-file", metavar="FILE", help="read a saved profile: a Grafana /api/ds/query response "
                        "(or a bare frame), a Pyroscope render JSON, or a pprof profile (.pb.gz or .pb)")
    parser.add_argument("--outputs-file", metavar="FILE", help="with --stack: outputs saved with `pulumi stack output --json`")
    parser.add_argument("--namespace", help="with --stack: a namespace, or a regex over namespaces such as 'ml-.*' "
                        "(default: all)")
    parser.add_argument("--pod", help="with --stack: a pod name, or a regex over pod names such as 'vllm-.*' (default: all)")
    parser.add_argument("--since", help="with --stack: time range back from now: 30m, 1h, 2d ... (default 1h)")
    parser.add_argument("--max-nodes", type=int, help=f"with --stack: the query's node limit (default: Grafana's, none "
                        f"sent, so Pyroscope's {MAX_NODES_DEFAULT}; at most {MAX_NODES_MAX}); the rest folds into '{TRUNCATED}'")
    parser.add_argument("--sample-type", metavar="TYPE[:UNIT]", help="the sample type to read: of a pprof profile, or "
                        "with --stack of the profile types Pyroscope holds (default malloc:bytes, Inspektor Gadget's GPU "
                        "memory; of a pprof profile declaring one type, that one)")
    parser.add_argument("--profile-type", metavar="ID", help="with --stack: the Pyroscope profile type ID to query, "
                        "name:type:unit:periodType:periodUnit (default: the GPU-memory one Pyroscope holds, the one the "
                        f"stack's dashboard asks for when held: dashboardProfileType, {PROFILE_TYPE} unless set)")
    parser.add_argument("--baseline", metavar="FILE|FROM..TO", help="compare with a baseline: a second file (any format), "
                        "or with --stack a second time range back from now such as 2h..1h; lists who grew and shrank")
    parser.add_argument("--top", type=int, default=10, help="how many functions per list (default 10)")
    parser.add_argument("--hide-trampolines", action="store_true", help=f"fold {TRAMPOLINE} frames out of the chains and lists")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--svg", metavar="FILE", help="also write the flame graph as a self-contained SVG (the --top "
                        "self allocators highlighted; with --baseline, coloured by growth and shrinkage)")
    args = parser.parse_or_report(argv)
    if args is None:
        return 2

    def bad(message: str) -> int:
        print(f"error: {message}", file=sys.stderr)
        return 2

    if args.since is not None and not DURATION.fullmatch(args.since):
        return bad(f"--since: expected a duration such as 30m, 1h or 2d (got {args.since!r})")
    for flag, value, what in (("--namespace", args.namespace, NAMESPACE), ("--pod", args.pod, POD)):
        problem = selector_problem(value, what) if value is not None else ""
        if problem:
            return bad(f"{flag}: {problem}")
    ignored = [flag for flag, value in (("--namespace", args.namespace), ("--pod", args.pod), ("--since", args.since),
                                        ("--max-nodes", args.max_nodes), ("--profile-type", args.profile_type))
               if value is not None]
    if args.from_file and args.outputs_file:
        return bad("--outputs-file: gives --stack the stack's outputs; --from-file reads a saved profile and needs none")
    if args.from_file and ignored:
        return bad(f"{ignored[0]}: shapes the query --stack sends to Grafana; a --from-file profile is read as it "
                   "was saved (save it with that setting instead)")
    if args.top < 1:
        return bad(f"--top: expected a positive number (got {args.top})")
    if args.max_nodes is not None and not 1 <= args.max_nodes <= MAX_NODES_MAX:
        return bad(f"--max-nodes: expected 1 to {MAX_NODES_MAX}, Pyroscope's -querier.max-flamegraph-nodes-max (got {args.max_nodes})")
    if args.profile_type is not None and not PROFILE_TYPE_ID.fullmatch(args.profile_type):
        return bad(f"--profile-type: expected a Pyroscope profile type ID name:type:unit:periodType:periodUnit such as "
                   f"{PROFILE_TYPE} (got {args.profile_type!r})")
    if args.profile_type and args.sample_type:
        return bad("--sample-type: --profile-type already names the sample type; give one of them")
    window = re.fullmatch(r"([1-9]\d*[smhdw])\.\.([1-9]\d*[smhdw])", args.baseline or "")
    if args.baseline is not None and not Path(args.baseline).exists():
        if not (args.stack and window):
            return bad(f"--baseline: expected a profile file{' or a time range such as 2h..1h' if args.stack else ''} "
                       f"(got {args.baseline!r}: no such file{'; a time range needs --stack' if window else ''})")
        if _seconds(window.group(1)) <= _seconds(window.group(2)):
            return bad(f"--baseline: FROM..TO counts back from now, so FROM must be further back (got {args.baseline!r})")
    try:
        profile_type, also_held, baseline_type, asked = None, [], None, PROFILE_TYPE
        if args.from_file:
            profile = read_file(args.from_file, args.sample_type)
        else:
            grafana = StackQuery(args.stack, args.outputs_file)
            asked = grafana.dashboard_profile_type

            def choose(since: str, until: Optional[str] = None) -> tuple[str, list[str]]:
                """The ID to query over a range, and the other IDs of the same sample type held in it (the gadget
                changed version in it, and each ID holds its own part). Each range is looked up on its own: across
                an upgrade the baseline's and the current range's IDs differ."""
                if args.profile_type:
                    return args.profile_type, []
                held = grafana.profile_types(since, until)
                chosen = pick_profile_type(held, args.sample_type, asked)
                return chosen, [i for i in matching_profile_types(held, args.sample_type) if i != chosen]

            since = args.since or "1h"
            profile_type, also_held = choose(since)
            query = {"namespace": args.namespace, "pod": args.pod, "max_nodes": args.max_nodes}
            profile = parse_frame(find_frame(grafana.flame_graph({**query, "since": since, "profile_type": profile_type})))
        baseline = None
        if args.baseline is not None:
            if Path(args.baseline).exists():
                baseline = read_file(args.baseline, args.sample_type, "--baseline")
            else:
                baseline_type, _ = choose(window.group(1), window.group(2))
                baseline = parse_frame(find_frame(grafana.flame_graph({
                    **query, "since": window.group(1), "until": window.group(2), "profile_type": baseline_type})))
        kind = (profile_type.split(":")[1:3] if profile_type else (profile.sample_type or "").split(":"))
        title = TITLE if kind in (["malloc", "bytes"], [""]) else f"Profile {profile_type or profile.sample_type}"
        try:
            if baseline is None:
                result = report(profile, args.top, args.hide_trampolines)
                picture = flame_svg(profile, args.top, title) if args.svg else None
            else:
                # An empty side compares with nothing: every function would read as grown from, or shrunk to, 0.
                for side, name in ((baseline, f"--baseline {args.baseline}"), (profile, args.from_file or f"--since {since}")):
                    if not side.total:
                        raise FrameError(f"{name}: no samples (an empty time range, or an empty export?); nothing to compare")
                try:
                    result = diff_report(baseline, profile, args.top)
                except FrameError as error:  # name the baseline file it is about
                    if Path(args.baseline).exists() and str(error).startswith("--baseline: "):
                        raise FrameError(f"--baseline {args.baseline}: {str(error)[len('--baseline: '):]}") from None
                    raise
                picture = diff_svg(baseline, profile, title) if args.svg else None
        except FrameError as error:  # name the file it is in
            raise FrameError(f"{args.from_file}: {error}" if args.from_file and not str(error).startswith("--")
                             and not str(error).startswith(args.from_file) else str(error)) from None
    except ValueError as error:  # FrameError, OutputsError: one line
        return bad(str(error))
    if profile_type is not None:
        result["profileType"] = profile_type
        result["alsoHeld"] = also_held
        if baseline_type is not None:
            result["baselineProfileType"] = baseline_type
    if picture is not None:
        try:
            Path(args.svg).write_bytes(picture)
        except OSError as error:
            return bad(f"--svg: cannot write {args.svg}: {error.strerror or error}")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        if profile_type not in (None, asked) and title == TITLE and not args.profile_type:
            print(f"Profile type {profile_type}: Pyroscope holds the GPU memory under this ID; the dashboard's flame "
                  f"graph asks for {asked} (`pulumi config set dashboardProfileType {profile_type} && pulumi up` "
                  "makes it ask for this one).")
        if also_held:
            print(f"Also held in this range: {', '.join(also_held)} (another Inspektor Gadget version wrote it); this "
                  f"report reads {profile_type} only, --profile-type {also_held[0]} reads that part.")
        if baseline_type not in (None, profile_type):
            print(f"The baseline range holds it as {baseline_type} (Inspektor Gadget changed version between the "
                  "ranges): each range is read under its own ID.")
        print(render(result, title, max_nodes=args.max_nodes) if baseline is None
              else render_diff(result, title, max_nodes=args.max_nodes))
    return 0


if __name__ == "__main__":
    # Run the module as flamegraph.hotspots, not as __main__: flamegraph.formats raises flamegraph.hotspots.FrameError.
    from flamegraph import hotspots

    sys.exit(exit_code(hotspots.main))
