"""The text report of the flame-graph reader: what ``python -m flamegraph.hotspots`` prints without ``--json``.

Owns: :func:`human` (amounts in the unit as Grafana's flame graph shows it), :func:`render` (one profile: the
widest self allocators with their chains, the widest totals, the orchestrators, the legend), :func:`render_diff`
(before and after, with DIFF_NOTE on what its amounts and the picture's colours are), :func:`truncation_lines` (the
share the node limit folded and the hint to raise it), ``TITLE``.
Inputs: the dicts of :mod:`flamegraph.analysis`. Outputs: strings. Errors: none. Why it reads so:
docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

from typing import Optional

from flamegraph.model import MAX_NODES_DEFAULT, MAX_NODES_MAX, TRUNCATED

TITLE = "GPU memory allocations"
TRUNCATED_HINT_SHARE = 0.05  # from this share of the total in ``other`` nodes on, the report says to raise the limit
LEGEND = """Legend: self = memory the function allocated itself; total = with everything it called.
  Class.method / Class.__init__  a method (Python qualname); a bare name is a module-level function.
  <interpreter trampoline>       CPython's own frames between Python calls: overhead, not your code.
  0x7f3a9c2d1e40                 native or CUDA code without symbols (a driver or library frame);
  00007f3a9c2d1e40 [libcuda.so]  the same from a pprof file, as pprof -addresses names it (the binary or <unknown>).
  Start from the widest self allocator; wide frames with zero self only pass the memory on."""
#: What one byte of Inspektor Gadget's GPU-memory profile is (docs/decisions/flamegraph-reading.md, "What a byte is").
BYTES_NOTE = ("  Bytes: requested from the CUDA driver in the profile's time range, summed; frees are not subtracted "
              "(not held now).")
DIFF_NOTE = """Amounts: before -> after (the change), per function. The --svg picture colours a frame by the change
in its share of its side's total, as Pyroscope's diff view does, not by its bytes: a frame whose bytes held is
coloured when the total moved (hover it for its bytes)."""


def human(amount: int, unit: str) -> str:
    """As Grafana's flame graph shows the same unit: ``bytes`` in binary units (KiB, MiB, GiB: 1024-based,
    the unit the Pyroscope datasource sets for memory profiles), ``decbytes`` in decimal ones (kB, MB, GB);
    other units as plain numbers."""
    if unit not in ("bytes", "decbytes"):
        return f"{amount} {unit}"
    base, suffixes = ((1024, ("B", "KiB", "MiB", "GiB", "TiB")) if unit == "bytes"
                      else (1000, ("B", "kB", "MB", "GB", "TB")))
    value = float(amount)
    for suffix in suffixes:
        if abs(value) < base or suffix == suffixes[-1]:
            return f"{value:.0f} B" if suffix == "B" else f"{value:.1f} {suffix}"
        value /= base
    return f"{amount} B"


def signed(amount: int, unit: str) -> str:
    """A change as ``+1.0 GiB``, ``-1.0 GiB`` or ``±0 B``."""
    return ("+" if amount > 0 else "-" if amount < 0 else "±") + human(abs(amount), unit)


def truncation_lines(cut: dict, unit: str, max_nodes: Optional[int] = None) -> list[str]:
    """The report's lines on ``other`` nodes: none without any; their share, and from TRUNCATED_HINT_SHARE on the
    hint to raise the node limit."""
    if not cut["nodes"]:
        return []
    limit = max_nodes or MAX_NODES_DEFAULT
    lines = [f"Truncated stacks: {human(cut['total'], unit)} ({cut['percent']:.1f} %) in {cut['nodes']} "
             f"'{TRUNCATED}' node{'s' if cut['nodes'] > 1 else ''}, what the node limit ({limit}) folded; "
             "not a function, not ranked."]
    if cut["percent"] >= 100 * TRUNCATED_HINT_SHARE:
        lines.append(f"  Raise the limit to see who allocates it: --max-nodes {min(4 * limit, MAX_NODES_MAX)} with "
                     "--stack (in Grafana, the query's Max Nodes), then save or export again.")
    return lines


def render(result: dict, title: str = TITLE, max_nodes: Optional[int] = None, gpu_memory: bool = True) -> str:
    """One profile's report: the title with the total, the truncation lines, the top self allocators with their
    chains, the top by total (carriers left out by :func:`flamegraph.analysis.report`), the orchestrators and the
    legend, which with ``gpu_memory`` (Inspektor Gadget's malloc:bytes) says what a byte is (BYTES_NOTE)."""
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
    lines += ["", "Top by total (self + callees; frames passing most of it to one callee left out):"]
    for i, entry in enumerate(result["topTotal"], 1):
        share = 100.0 * entry["total"] / total
        lines.append(f"  {i:>2}. {entry['function']}  total {human(entry['total'], unit)} ({share:.1f} %), "
                     f"self {human(entry['self'], unit)}")
    lines += ["", "Orchestrators (wide, zero self: the path, not the cause):"]
    lines += [f"  - {name}" for name in result["orchestrators"]] or ["  (none)"]
    head, rest = LEGEND.split("\n", 1)
    lines += ["", head, *([BYTES_NOTE] if gpu_memory else []), rest]
    return "\n".join(lines)


def render_diff(result: dict, title: str = TITLE, max_nodes: Optional[int] = None) -> str:
    unit, total = result["unit"], result["total"]
    lines = [f"{title}, before -> after: {human(total['baseline'], unit)} -> {human(total['current'], unit)} "
             f"({signed(total['change'], unit)})"]
    for side in ("baseline", "current"):
        lines += [f"{side.capitalize()}: {line}"
                  for line in truncation_lines(result["truncated"][side], unit, max_nodes)]
    for key, heading in (("grew", "Grew (self, the largest growth first):"),
                         ("shrank", "Shrank (self, the largest shrink first):")):
        lines += ["", heading]
        for i, e in enumerate(result[key], 1):
            lines.append(f"  {i:>2}. {e['function']}  self {human(e['self']['baseline'], unit)} -> "
                         f"{human(e['self']['current'], unit)} ({signed(e['self']['change'], unit)}), total "
                         f"{human(e['total']['baseline'], unit)} -> {human(e['total']['current'], unit)} "
                         f"({signed(e['total']['change'], unit)})")
        if not result[key]:
            lines.append("  (none)")
    lines += ["", DIFF_NOTE]
    return "\n".join(lines)


def render_by(result: dict, title: str = TITLE, max_nodes: Optional[int] = None) -> str:
    """``--by``: per value of the label (the widest first) its total and share, its truncation lines and its top
    self allocators; the chains and the picture are one value's (``--by NAME=VALUE``)."""
    values, by = result["values"], result["by"]
    unit = values[0]["unit"] if values else "bytes"
    everything = sum(entry["total"] for entry in values)
    lines = [f"{title} by {by} ({result['label']}): {len(values)} value{'s' if len(values) != 1 else ''}, "
             f"{human(everything, unit)} in all"]
    for entry in values:
        share = 100.0 * entry["total"] / everything if everything else 0.0
        lines += ["", f"{by} {entry['value'] or '(no label)'}: {human(entry['total'], unit)} ({share:.1f} %)"]
        lines += [f"  {line}" for line in truncation_lines(entry["truncated"], unit, max_nodes)]
        for i, e in enumerate(entry["topSelf"], 1):
            lines.append(f"  {i:>2}. {e['function']}  self {human(e['self'], unit)} ({e['selfPercent']:.1f} % of "
                         f"this {by}'s), total {human(e['total'], unit)}")
        if not entry["topSelf"]:
            lines.append("  (no allocations)")
    lines += ["", f"One {by}'s whole report (chains, totals, orchestrators, a --svg picture): --by {by}=VALUE."]
    return "\n".join(lines)
