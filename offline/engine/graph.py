"""The dependency graph of a state, as the step generator walks it.

Owns: :func:`dependencies_of` (``DependenciesOf``), :func:`depending_on` (``DependingOn``: a linear scan of the
state, which is in topological order) and :func:`transitive_dependencies` (``TransitiveDependenciesOf``). Input: the
old state (a list of :class:`~offline.engine.resource.State`); output: states or their ``id()``. Upstream:
https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/graph/dependency_graph.go
"""

from __future__ import annotations

from typing import Optional

from offline.engine.resource import State


def dependencies_of(state: State) -> list[str]:
    return [u for _, u in state.all_dependencies()] + ([state.provider_urn] if state.provider else [])



def depending_on(olds: list[State], index: dict[int, int], root: State, ignore: set[str]) -> list[State]:
    """``DependencyGraph.DependingOn`` (includeChildren false) over the old state."""
    found, members = [], {root.urn}
    for candidate in olds[index[id(root)] + 1:]:
        if candidate.urn in ignore:
            continue
        deps = [u for kind, u in candidate.all_dependencies() if kind != "parent"]
        if any(u in members for u in deps) or (candidate.provider and candidate.provider_urn in members):
            found.append(candidate)
            members.add(candidate.urn)
    return found

# --- execution ----------------------------------------------------------------------------------------------


def transitive_dependencies(olds: list[State], root: State) -> set[int]:
    """``DependencyGraph.TransitiveDependenciesOf`` over the old state: ``id()`` of what ``root`` depends on,
    directly or not, parents' dependencies included. A URN held by a live and a pending-delete copy names the
    live one, or the pending-delete one from a resource pending deletion."""
    pending = {s.urn: s for s in olds if s.delete}
    live = {s.urn: s for s in olds if not s.delete}

    def lookup(source: State, urn: Optional[str]) -> Optional[State]:
        if urn in pending and urn in live:
            return pending[urn] if source.delete else live[urn]
        return pending.get(urn) or live.get(urn)

    marked: set[int] = set()

    def mark(state: State) -> None:  # markAsDependency
        while True:
            marked.add(id(state))
            deps = [u for kind, u in state.all_dependencies() if kind != "parent"]
            for urn in deps + ([state.provider_urn] if state.provider else []):
                found = lookup(state, urn)
                if found is not None and id(found) not in marked:
                    mark(found)
            parent = lookup(state, state.parent) if state.parent else None
            if parent is None or id(parent) in marked:
                break
            state = parent

    start = lookup(root, root.urn)
    if start is not None:
        mark(start)
    marked.discard(id(root))
    return marked
