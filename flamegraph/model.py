"""The flame-graph model every part of the reader shares: a call tree of :class:`Node` in a :class:`Profile`.

Owns: ``Node`` (label, level, total ``value``, ``self``, parent and children), ``Profile`` (unit, root, the nodes in
nested-set order, the declared sample type and whether it was the profile's default), ``FrameError`` (one line saying
what is wrong with an input) and the names Pyroscope gives to frames that are not functions (``TRUNCATED``,
``TRAMPOLINE``) with the node limits.
Inputs and outputs: none (data only). Errors: ``FrameError`` is raised by the loaders, the analysis and the renderers.
Upstream: grafana/pyroscope v1.15.0 ``pkg/model/tree.go``; why these names and limits:
docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

#: CPython's own frames between Python calls: overhead, not the user's code.
TRAMPOLINE = "<interpreter trampoline>"
#: Pyroscope's name for the nodes a query's node limit folds away (a real function named so cannot be told apart).
TRUNCATED = "other"
#: The node limit Pyroscope applies when the query sends none, and the most it allows.
MAX_NODES_DEFAULT = 8 << 10
MAX_NODES_MAX = 1 << 20


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
    default_sample_type: bool = False  # read as the pprof profile's default_sample_type (it has no GPU-memory type)

    @property
    def total(self) -> int:
        return self.root.value if self.root else 0
