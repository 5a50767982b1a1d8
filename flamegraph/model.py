"""The flame-graph model every part of the reader shares: a call tree of :class:`Node` in a :class:`Profile`.

Owns: ``Node`` (label, level, total ``value``, ``self``, parent and children), ``Columns`` (the same tree as
parallel lists, what a pprof profile is read into), ``Profile`` (unit, root, the nodes in nested-set order or their
columns, the declared sample type and whether it was the profile's default), ``FrameError`` (one line saying
what is wrong with an input) and the names Pyroscope gives to frames that are not functions (``TRUNCATED``,
``TRAMPOLINE``) with the node limits.
Inputs and outputs: none (data only). Errors: ``FrameError`` is raised by the loaders, the analysis and the renderers.
Upstream: grafana/pyroscope v1.15.0 ``pkg/model/tree.go``; why these names and limits:
docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

from typing import Optional, Sequence

#: CPython's own frames between Python calls: overhead, not the user's code.
TRAMPOLINE = "<interpreter trampoline>"
#: Pyroscope's name for the nodes a query's node limit folds away (a real function named so cannot be told apart).
TRUNCATED = "other"
#: The node limit Pyroscope applies when the query sends none, and the most it allows.
MAX_NODES_DEFAULT = 8 << 10
MAX_NODES_MAX = 1 << 20


class FrameError(ValueError):
    """A response that is not a well-formed flame-graph frame (one line saying what is wrong)."""


class Node:
    """A flame-graph node: ``label`` at ``level`` (the root is 0), its total ``value`` and ``self``, its caller
    ``parent`` (None for the root) and its callees ``children`` in order."""

    __slots__ = ("label", "level", "value", "self", "parent", "children")

    def __init__(self, label: str, level: int, value: int, self_: int, parent: Optional["Node"] = None,
                 children: Optional[list["Node"]] = None):
        self.label, self.level, self.value, self.self = label, level, value, self_
        self.parent = parent
        self.children = children if children is not None else []

    def chain(self) -> list[str]:
        """Labels from the entry point (the root's child) down to this node."""
        labels, node = [], self
        while node is not None and node.level > 0:
            labels.append(node.label)
            node = node.parent
        return labels[::-1]


class Columns:
    """A call tree as parallel lists in nested-set order (a caller before its callees, callees in order, as
    Grafana's flame-graph frame lists them): node ``i`` is ``names[label[i]]`` at ``level[i]``, with its total
    ``value[i]`` and ``self[i]``, under ``parent[i]`` (an index before ``i``; -1 for the root, node 0)."""

    __slots__ = ("names", "label", "level", "value", "self", "parent")

    def __init__(self, names: list[str], label: Sequence[int], level: Sequence[int], value: Sequence[int],
                 self_: Sequence[int], parent: Sequence[int]):
        self.names, self.label, self.level, self.value, self.self, self.parent = (names, label, level, value, self_,
                                                                                  parent)


class Profile:
    """A flame graph of one sample type, held as :class:`Node` objects or as :class:`Columns`, whichever its loader
    built; the other is derived on first use. Reading ``nodes`` makes the nodes the profile's own (the columns are
    dropped, so changes to the nodes count); ``columns`` of a node-held profile is derived afresh each time."""

    __slots__ = ("unit", "sample_type", "default_sample_type", "pruned", "_root", "_nodes", "_columns")

    def __init__(self, unit: str, root: Optional[Node] = None, nodes: Optional[list[Node]] = None,
                 sample_type: Optional[str] = None, default_sample_type: bool = False, *,
                 columns: Optional[Columns] = None, pruned: str = ""):
        self.unit = unit
        self.pruned = pruned  # the pprof file's drop_frames/keep_frames as applied ("drop_frames=..."), or ""
        self.sample_type = sample_type  # "type:unit" as a pprof profile declares it; None for a frame (its unit only)
        self.default_sample_type = default_sample_type  # read as the pprof's default_sample_type (no GPU-memory type)
        self._root, self._nodes, self._columns = root, (nodes if nodes is not None else []), columns

    @property
    def nodes(self) -> list[Node]:
        if self._columns is not None:
            c, self._columns = self._columns, None
            self._nodes = []
            for i, (label, level, value, own, parent) in enumerate(zip(c.label, c.level, c.value, c.self, c.parent)):
                node = Node(c.names[label], level, value, own, self._nodes[parent] if parent >= 0 else None)
                if node.parent is not None:
                    node.parent.children.append(node)
                self._nodes.append(node)
            self._root = self._nodes[0] if self._nodes else None
        return self._nodes

    @property
    def root(self) -> Optional[Node]:
        return self.nodes[0] if self._columns is not None and self._columns.label else self._root

    @property
    def columns(self) -> Columns:
        if self._columns is not None:
            return self._columns
        names: list[str] = []
        index: dict[str, int] = {}
        where: dict[int, int] = {}
        c = Columns(names, [], [], [], [], [])
        for i, node in enumerate(self._nodes):
            if node.label not in index:
                index[node.label] = len(names)
                names.append(node.label)
            where[id(node)] = i
            c.label.append(index[node.label])
            c.level.append(node.level)
            c.value.append(node.value)
            c.self.append(node.self)
            c.parent.append(where[id(node.parent)] if node.parent is not None else -1)
        return c

    @property
    def total(self) -> int:
        if self._columns is not None:
            return self._columns.value[0] if self._columns.value else 0
        return self._root.value if self._root else 0
