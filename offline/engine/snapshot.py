"""The state an operation writes, and the checks it must pass.

Owns: :func:`verify_integrity` (``Snapshot.VerifyIntegrity``) and :func:`rebuild_base_state` (what a refresh leaves:
``rebuildBaseState``, ``undangleParentResources``). Input: a state (a list of
:class:`~offline.engine.resource.State` in topological order); output: the first problem, or the rebuilt state.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/snapshot.go
"""

from __future__ import annotations

from typing import Optional

from offline.engine.resource import State


def rebuild_base_state(olds: list[State], gone: set[int]) -> list[State]:
    """``rebuildBaseState``: the state without what a refresh found gone. A dependency, property dependency,
    ``deletedWith`` or ``replaceWith`` on a URN that no resource *earlier* in the state still holds is dropped
    (a pending-delete copy still holds it); a parent gone is replaced as ``undangleParentResources`` does."""
    kept, referenceable = [], set()
    for state in olds:
        if id(state) in gone:
            continue
        if state.dependencies:
            state.dependencies = [u for u in state.dependencies if u in referenceable]
        if state.property_dependencies:
            state.property_dependencies = {k: [u for u in us if u in referenceable]
                                           for k, us in state.property_dependencies.items()
                                           if any(u in referenceable for u in us)}
        if state.deleted_with and state.deleted_with not in referenceable:
            state.deleted_with = None
        if any(u not in referenceable for u in state.replace_with):
            state.replace_with = []
        kept.append(state)
        referenceable.add(state.urn)
    available: dict[str, Optional[str]] = {}
    for state in kept:  # undangleParentResources
        if state.parent and state.parent not in referenceable:
            state.parent = available.get(state.parent)
        available[state.urn] = state.parent
    return kept


def verify_integrity(snapshot: list[State]) -> Optional[str]:
    """``Snapshot.VerifyIntegrity``: the first problem, or None. Each dependency, parent, ``deletedWith`` and
    ``replaceWith`` must name a resource earlier in the state; a URN may appear twice only when all but one of its
    states are pending deletion."""
    seen: dict[str, list[State]] = {}
    for position, state in enumerate(snapshot):
        for kind, urn in state.all_dependencies():
            if urn in seen:
                continue
            after = any(other.urn == urn for other in snapshot[position + 1:])
            what = {"parent": f"child resource {state.urn} refers to missing parent {urn}",
                    "dependency": f"resource {state.urn}'s dependency {urn} refers to missing resource",
                    "property": f"resource {state.urn}'s property dependency {urn} refers to missing resource",
                    "deletedWith": f"resource {state.urn} is specified as being deleted with {urn}, which is missing",
                    "replaceWith": f"resource {state.urn} is specified as being replaced with {urn}, which is missing"}
            if after:
                return f"resource {state.urn}'s {kind} {urn} comes after it"
            return what[kind]
        seen.setdefault(state.urn, []).append(state)
    for urn, states in seen.items():
        deletes = sum(1 for s in states if s.delete)
        if len(states) > 1 and deletes not in (len(states) - 1, len(states)):
            return f"duplicate resource {urn} (not marked for deletion)"
    return None
