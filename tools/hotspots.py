"""Who allocates the GPU memory: the flame-graph reading recipe as a command.

    python -m tools.hotspots --stack NAME [--namespace NS] [--pod POD] [--since 1h] [--top N]
                             [--hide-trampolines] [--json] [--svg FILE]
    python -m tools.hotspots --from-file RESPONSE.json [...]

Queries Grafana's query API (``POST <grafanaEndpoint>/api/ds/query`` through ``az rest`` with the Azure
Managed Grafana audience) with the stack's Pyroscope datasource and the dashboard flame-graph panel's own
query (``queryType`` profile, ``profileTypeId`` ``process_cpu:malloc:bytes::``, label selector on
``k8s_namespace`` and ``k8s_podName``), or reads a saved response. Then reads the flame graph the way the
guide in docs/flamegraphs.md does: per function, *self* (what it allocated itself) and *total* (with everything it
called; a recursive function is counted once per stack), the widest self allocators with their heaviest
call chain from the entry point, the widest totals, and the wide orchestrators (total >= 10 % of the root,
no self), which are the path and not the cause. ``--svg FILE`` also writes the frame as a self-contained
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
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from tools.cli import OneLineParser, exit_code

PROFILE_TYPE = "process_cpu:malloc:bytes::"
TRAMPOLINE = "<interpreter trampoline>"
ORCHESTRATOR_SHARE = 0.10
TITLE = "GPU memory allocations"
LEGEND = """Legend: self = memory the function allocated itself; total = with everything it called.
  Class.method / Class.__init__  a method (Python qualname); a bare name is a module-level function.
  <interpreter trampoline>       CPython's own frames between Python calls: overhead, not your code.
  0x7f3a9c2d1e40                 native or CUDA code without symbols (a driver or library frame).
  Start from the widest self allocator; wide frames with zero self only pass the memory on."""


class FrameError(ValueError):
    """A response that is not a well-formed flame-graph frame (one line saying what is wrong)."""


@dataclass
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
    have no ancestor with the same label (a recursive call is inside its caller's total already)."""
    stats: dict[str, dict] = {}
    on_path: dict[str, int] = {}
    # Depth-first without recursion (stacks run thousands of frames deep): (node, entering?)
    pending = [(child, True) for child in reversed(profile.root.children)] if profile.root else []
    while pending:
        node, entering = pending.pop()
        if not entering:
            on_path[node.label] -= 1
            continue
        entry = stats.setdefault(node.label, {"self": 0, "total": 0, "nodes": []})
        entry["self"] += node.self
        entry["nodes"].append(node)
        if on_path.get(node.label, 0) == 0:
            entry["total"] += node.value
        on_path[node.label] = on_path.get(node.label, 0) + 1
        pending.append((node, False))
        pending.extend((child, True) for child in reversed(node.children))
    return stats


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
    """The report as the --json shape: unit, total, topSelf, topTotal, orchestrators; each list holds at most
    ``top`` entries (the widest first)."""
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
        "topSelf": [{"function": l, "self": stats[l]["self"], "total": stats[l]["total"],
                     "selfPercent": round(100.0 * stats[l]["self"] / total, 2) if total else 0.0,
                     "stack": chain(l)} for l in by_self],
        "topTotal": [{"function": l, "total": stats[l]["total"], "self": stats[l]["self"]} for l in by_total],
        "orchestrators": orchestrators,
    }


def render(result: dict, title: str = TITLE) -> str:
    unit, total = result["unit"], result["total"]
    lines = [f"{title}: {human(total, unit)} in all"]
    if not total:
        lines.append("No allocations in this profile (is a GPU workload running, and the time range right?).")
        return "\n".join(lines)
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
    frames: list[tuple[Node, float, float]] = []  # (node, x, width) in nested-set order
    offsets: dict[int, int] = {}  # id(node) -> its left edge, in the profile's unit from the root's left edge
    used: dict[int, int] = {}  # id(node) -> what its callees laid out so far take of it
    for node in profile.nodes if total else []:
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
    depth = max((node.level for node, _, _ in frames), default=-1) + 1
    ranked = report(profile, top)["topSelf"] if total else []
    highlighted = {entry["function"] for entry in ranked}
    legend_top = graph_top + depth * ROW + 24
    height = legend_top + (len(ranked) + 1) * 18 + 6 if ranked else graph_top + depth * ROW + 10

    svg = ET.Element("svg", {"xmlns": SVG_NS, "width": str(SVG_WIDTH), "height": str(height),
                             "viewBox": f"0 0 {SVG_WIDTH} {height}", "font-family": SANS})
    ET.SubElement(svg, "title").text = heading
    ET.SubElement(svg, "style").text = (".frame rect { stroke: #ffffff; stroke-width: 1; }"  # a line between boxes
                                        " .frame:hover rect { stroke: #111111; }"
                                        " .frame text { pointer-events: none; }")
    ET.SubElement(svg, "rect", {"width": "100%", "height": "100%", "fill": "#ffffff"})
    ET.SubElement(svg, "text", {"x": str(SVG_MARGIN), "y": "24", "font-size": "17", "font-weight": "bold",
                                "fill": "#111111"}).text = heading
    ET.SubElement(svg, "text", {"x": str(SVG_MARGIN), "y": "44", "font-size": "12", "fill": "#555555"}).text = (
        "Callers above callees; a frame's width is its total (self + callees). Hover a frame for its self and total."
        if frames else "No allocations in this profile (is a GPU workload running, and the time range right?).")
    graph = ET.SubElement(svg, "g", {"font-family": MONOSPACE, "font-size": str(FONT_SIZE)})
    for node, x, width in frames:
        top_self = node.label in highlighted and node.self > 0
        fill = HIGHLIGHT_FILL if top_self else QUIET_FILL if node.level == 0 or node.label == TRAMPOLINE else _warm_fill(node.label)
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
            f"Top {len(ranked)} self allocators, highlighted: start here. Grey: the root and CPython's trampolines.")
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


def query_body(uid: str, namespace: Optional[str], pod: Optional[str], since: str) -> dict:
    """The /api/ds/query body: the dashboard panel's target with its variables filled in."""
    selector = f'{{k8s_namespace=~"{_regex_value(namespace)}",k8s_podName=~"{_regex_value(pod)}"}}'
    return {
        "from": f"now-{since}",
        "to": "now",
        "queries": [{
            "refId": "A",
            "datasource": {"type": "grafana-pyroscope-datasource", "uid": uid},
            "queryType": "profile",
            "profileTypeId": PROFILE_TYPE,
            "labelSelector": selector,
            "groupBy": [],
            "spanSelector": [],
        }],
    }


def fetch(stack: str, outputs_file: Optional[str], body_args: dict) -> Any:
    from tools.verify import read_outputs

    outputs = read_outputs(stack, outputs_file, needed=("grafanaEndpoint", "pyroscopeDatasourceUid"))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from azcli import AzError, rest

    body = query_body(outputs["pyroscopeDatasourceUid"], **body_args)
    try:
        return rest("post", f"{outputs['grafanaEndpoint'].rstrip('/')}/api/ds/query", body)
    except AzError as error:
        if error.kind == "missing":  # no az on PATH: say what to install
            raise ValueError(error.last_line) from None
        # A secret Grafana name is in the endpoint: the error line says it masked (tools.verify.StackOutputs).
        raise FrameError(outputs.mask(f"querying Grafana failed: {error.last_line}")) from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m tools.hotspots", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="query the deployed stack's Grafana (outputs from `pulumi stack output`)")
    source.add_argument("--from-file", metavar="FILE", help="read a saved /api/ds/query response (or a bare frame)")
    parser.add_argument("--outputs-file", metavar="FILE", help="with --stack: outputs saved with `pulumi stack output --json`")
    parser.add_argument("--namespace", help="with --stack: a namespace, or a regex over namespaces such as 'ml-.*' "
                        "(default: all)")
    parser.add_argument("--pod", help="with --stack: a pod name, or a regex over pod names such as 'vllm-.*' (default: all)")
    parser.add_argument("--since", help="with --stack: time range back from now: 30m, 1h, 2d ... (default 1h)")
    parser.add_argument("--top", type=int, default=10, help="how many functions per list (default 10)")
    parser.add_argument("--hide-trampolines", action="store_true", help=f"fold {TRAMPOLINE} frames out of the chains and lists")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--svg", metavar="FILE", help="also write the flame graph as a self-contained SVG (the --top "
                        "self allocators highlighted; hover a frame for self and total)")
    args = parser.parse_or_report(argv)
    if args is None:
        return 2
    if args.since is not None and not re.fullmatch(r"[1-9]\d*[smhdw]", args.since):
        print(f"error: --since: expected a duration such as 30m, 1h or 2d (got {args.since!r})", file=sys.stderr)
        return 2
    for flag, value, what in (("--namespace", args.namespace, NAMESPACE), ("--pod", args.pod, POD)):
        problem = selector_problem(value, what) if value is not None else ""
        if problem:
            print(f"error: {flag}: {problem}", file=sys.stderr)
            return 2
    ignored = [flag for flag, value in (("--namespace", args.namespace), ("--pod", args.pod), ("--since", args.since))
               if value is not None]
    if args.from_file and ignored:
        print(f"error: {ignored[0]}: narrows the query --stack sends to Grafana; a --from-file response is read as it "
              "was saved (save it with that filter instead)", file=sys.stderr)
        return 2
    if args.top < 1:
        print(f"error: --top: expected a positive number (got {args.top})", file=sys.stderr)
        return 2
    try:
        if args.from_file:
            try:
                response = json.loads(Path(args.from_file).read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise FrameError(f"--from-file: cannot read {args.from_file}: {error}") from None
        else:
            response = fetch(args.stack, args.outputs_file,
                             {"namespace": args.namespace, "pod": args.pod, "since": args.since or "1h"})
        try:
            profile = parse_frame(find_frame(response))
            result = report(profile, args.top, args.hide_trampolines)
            picture = flame_svg(profile, args.top) if args.svg else None
        except FrameError as error:  # name the file it is in
            raise FrameError(f"{args.from_file}: {error}" if args.from_file else str(error)) from None
    except ValueError as error:  # FrameError, OutputsError: one line
        print(f"error: {error}", file=sys.stderr)
        return 2
    if picture is not None:
        try:
            Path(args.svg).write_bytes(picture)
        except OSError as error:
            print(f"error: --svg: cannot write {args.svg}: {error.strerror or error}", file=sys.stderr)
            return 2
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
