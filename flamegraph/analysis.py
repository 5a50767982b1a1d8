"""Reading a flame graph: per function *self* and *total*, the leaf-first ranking, truncation, and comparison.

Owns: :func:`function_totals` (a recursive function counted once per stack), :func:`truncated` (what the node limit
folded into ``other``), :func:`without` (frames of one name folded into their callers, ``--hide-trampolines``),
:func:`report` (the ``--json`` shape: topSelf with each one's heaviest chain from the entry point, topTotal,
orchestrators), :func:`diff_report` and :func:`merge` (two profiles compared per function and per call path).
Inputs: :class:`flamegraph.model.Profile`. Outputs: plain dicts (JSON-ready) and merged trees. Errors:
``FrameError`` when two profiles measure different things. The reading recipe is docs/flamegraphs.md; why it reads
this way: docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

from heapq import nsmallest
from itertools import count, islice
from typing import Optional

from flamegraph.model import TRAMPOLINE, TRUNCATED, Columns, FrameError, Node, Profile

#: From this share of the root's total on, a function with no self is an orchestrator: the path, not the cause.
ORCHESTRATOR_SHARE = 0.10
#: "Top by total" leaves out a carrier: a function allocating under OWN_SHARE of its total itself that hands more
#: than CARRIED_SHARE of it to one callee per call, or is named in CARRIER_NAMES (they name no code).
CARRIED_SHARE = 0.5
OWN_SHARE = 0.10
CARRIER_NAMES = frozenset({"<module>", "<unknown>"})


def _totals(c: Columns, callees: bool = False, hidden: int = -1) -> dict[int, list[int]]:
    """label index -> [self, total, heaviest node, carried]: self summed over the label's nodes; total summed over
    its nodes with no ancestor of the same label (its outermost calls); the heaviest is its node of most self (the
    first of equals, in nested-set order). With ``callees``, carried sums over its outermost calls what each one's
    largest callee holds: a callee of another label, frames of label ``hidden`` looked through (their callees are
    their caller's); else 0. Pyroscope's ``other`` nodes (:data:`TRUNCATED`) and what is below them are left out,
    never a callee. One pass over the columns in nested-set order, with the current path's labels counted."""
    stats: dict[int, list[int]] = {}  # label -> [self, total, heaviest node, its self, carried]
    on_path = [0] * len(c.names)
    path: list[int] = []  # labels of the current path, level 1 first
    best: list[int] = []  # per path position: its largest callee so far (with ``callees``)

    def leave(start: int) -> None:  # the path's nodes from ``start`` on are done
        for position in range(len(path) - 1, start - 1, -1):
            gone = path[position]
            on_path[gone] -= 1
            if callees and not on_path[gone]:  # an outermost call: its largest callee counts
                stats[gone][4] += best[position]
        del path[start:], best[start:]

    cut = {i for i, name in enumerate(c.names) if name == TRUNCATED}
    skip = depth = 0  # skip: below this level (an ``other`` node's), nodes are skipped; depth: len(path)
    rest = (islice(column, 1, None) for column in (c.level, c.label, c.self, c.value))
    for i, level, label, own, value in zip(count(1), *rest):
        if skip:
            if level > skip:
                continue
            skip = 0
        if level <= depth:  # back up the path: to a sibling (one label off) or further
            if level == depth:  # a sibling: one node done
                gone = path.pop()
                on_path[gone] -= 1
                if callees:
                    carried = best.pop()
                    if not on_path[gone]:
                        stats[gone][4] += carried
            else:
                leave(level - 1)
        depth = level
        if label in cut:
            skip = level
            depth -= 1
            continue
        entry = stats.get(label)
        if entry is None:
            entry = stats[label] = [own, 0, i, own, 0]
        else:
            entry[0] += own
            if own > entry[3]:
                entry[2], entry[3] = i, own
        if not on_path[label]:
            entry[1] += value
        if callees:
            if label != hidden:
                up = depth - 2  # the caller's position, looking through hidden frames
                while up >= 0 and path[up] == hidden:
                    up -= 1
                if up >= 0 and path[up] != label and value > best[up]:
                    best[up] = value
            best.append(0)
        on_path[label] += 1
        path.append(label)
    if callees:
        leave(0)
    return {label: [entry[0], entry[1], entry[2], entry[4]] for label, entry in stats.items()}


def function_totals(profile: Profile) -> dict[str, dict]:
    """label -> {"self", "total"}: self summed over its nodes; total summed over its nodes that have no ancestor
    with the same label (a recursive call is inside its caller's total already). Pyroscope's ``other`` nodes
    (:data:`TRUNCATED`) are not functions and are left out: see :func:`truncated`."""
    c = profile.columns
    return {c.names[label]: {"self": own, "total": total} for label, (own, total, _, _) in _totals(c).items()}


def _truncated(c: Columns) -> dict:
    cut = {i for i, name in enumerate(c.names) if name == TRUNCATED}
    values = [value for label, value in zip(islice(c.label, 1, None), islice(c.value, 1, None)) if label in cut] \
        if cut else []
    total = c.value[0] if c.value else 0
    amount = sum(values)
    return {"total": amount, "percent": round(100.0 * amount / total, 2) if total else 0.0, "nodes": len(values)}


def truncated(profile: Profile) -> dict:
    """What the node limit folded away: the ``other`` nodes' count, their summed total and its share of the root.
    Each is a separate cut (under a different caller), so they are counted, never merged into one function."""
    return _truncated(profile.columns)


def without(profile: Profile, label: str = TRAMPOLINE) -> Profile:
    """A copy of ``profile`` with every ``label`` frame folded into its caller: its callees become the caller's
    (merged with a callee of the same name, as a tree merges stacks), its self the caller's self; each remaining
    frame keeps its total, and the root its value. ``profile`` is not changed. What ``--hide-trampolines`` draws."""
    if profile.root is None:
        return profile
    root = Node(profile.root.label, 0, profile.root.value, profile.root.self)
    into: dict[int, Node] = {id(profile.root): root}  # id(original) -> the node it is now part of
    child_of: dict[tuple[int, str], Node] = {}  # (id(new parent), label) -> the new callee
    for node in profile.nodes[1:]:  # nested-set order: a caller before its callees
        parent = into[id(node.parent)]
        if node.label == label:  # its total is in its caller's already
            parent.self += node.self
            into[id(node)] = parent
            continue
        merged = child_of.get((id(parent), node.label))
        if merged is None:
            merged = child_of[(id(parent), node.label)] = Node(node.label, parent.level + 1, 0, 0, parent)
            parent.children.append(merged)
        merged.value += node.value
        merged.self += node.self
        into[id(node)] = merged
    order, pending = [], [root]
    while pending:
        node = pending.pop()
        order.append(node)
        pending.extend(reversed(node.children))
    return Profile(profile.unit, root, order, profile.sample_type, profile.default_sample_type)


def report(profile: Profile, top: int = 10, hide_trampolines: bool = False) -> dict:
    """The report as the --json shape: unit, total, truncated (:func:`truncated`), topSelf, topTotal,
    orchestrators; each list holds at most ``top`` entries (the widest first). ``other`` nodes are in none.
    topTotal leaves out the carriers (:func:`carries`), which only pass the memory on: they stay in the chains, the
    orchestrators and the picture. With ``hide_trampolines``, trampolines are in no list, and a carrier's callees are
    read through them."""
    c = profile.columns
    hidden = c.names.index(TRAMPOLINE) if hide_trampolines and TRAMPOLINE in c.names else -1
    by_label = _totals(c, callees=True, hidden=hidden)
    stats = {c.names[label]: entry for label, entry in by_label.items()}
    total = c.value[0] if c.value else 0

    def chain(label: str) -> list[str]:
        frames, node = [], stats[label][2]
        while node > 0:
            frames.append(c.names[c.label[node]])
            node = c.parent[node]
        frames.reverse()
        return [f for f in frames if f != TRAMPOLINE] if hide_trampolines else frames

    shown = [(name, entry) for name, entry in stats.items() if not (hide_trampolines and name == TRAMPOLINE)]
    by_self = [name for _, name in nsmallest(top, ((-e[0], name) for name, e in shown if e[0] > 0))]
    by_total = [name for _, name in nsmallest(top, ((-e[1], name) for name, e in shown
                                                    if not carries(name, e[0], e[1], e[3])))]
    orchestrators = [name for _, name in nsmallest(top, (
        (-e[1], name) for name, e in shown if e[0] == 0 and total and e[1] >= ORCHESTRATOR_SHARE * total))]
    return {
        "unit": profile.unit,
        "total": total,
        "truncated": _truncated(c),
        "topSelf": [{"function": name, "self": stats[name][0], "total": stats[name][1],
                     "selfPercent": round(100.0 * stats[name][0] / total, 2) if total else 0.0,
                     "stack": chain(name)} for name in by_self],
        "topTotal": [{"function": name, "total": stats[name][1], "self": stats[name][0]} for name in by_total],
        "orchestrators": orchestrators,
    }


def carries(name: str, own: int, total: int, carried: int) -> bool:
    """True for a carrier, left out of "top by total": a function that allocates under OWN_SHARE of its ``total``
    itself (``own``) and hands more than CARRIED_SHARE of it to one callee per call (``carried``: at each outermost
    call, what its largest callee holds, summed), or is named ``<module>`` or ``<unknown>``. Its total then says
    little more than its callees' (or its name names no code); frames where the memory branches (no callee holding
    most of it) or is allocated stay ranked."""
    if own >= OWN_SHARE * total:
        return False
    return name in CARRIER_NAMES or carried > CARRIED_SHARE * total


# --- before and after ----------------------------------------------------------------------------------


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


class DiffNode:
    """A node of the merged tree: the same call path in both profiles. ``value`` (the drawn width) is the two
    totals added, as Grafana's diff flame graph sizes a bar (left + right ticks)."""

    __slots__ = ("label", "level", "parent", "children", "total", "self")

    def __init__(self, label: str, level: int, parent: Optional["DiffNode"] = None):
        self.label, self.level, self.parent = label, level, parent
        self.children: list[DiffNode] = []
        self.total: tuple = (0, 0)  # (baseline, current)
        self.self: tuple = (0, 0)

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


