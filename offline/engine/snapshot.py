"""The state an operation writes, and the checks it must pass.

Owns: :func:`verify_integrity` (``Snapshot.VerifyIntegrity``) and :func:`rebuild_base_state` (what a refresh leaves:
``rebuildBaseState``, ``undangleParentResources``). Input: a state (a list of
:class:`~offline.engine.resource.State` in topological order); output: the first problem, or the rebuilt state.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/snapshot.go
"""

from __future__ import annotations

from typing import Optional

from offline.engine.resource import State, is_provider


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


#: Each reference kind's two refusals in ``VerifyIntegrity``: named resource later in the state, or nowhere in it.
_REFUSALS = {
    "parent": ("child resource {urn}'s parent {dep} comes after it",
               "child resource {urn} refers to missing parent {dep}"),
    "dependency": ("resource {urn}'s dependency {dep} comes after it",
                   "resource {urn}'s dependency {dep} refers to missing resource"),
    "property": ("resource {urn}'s property dependency {dep} (from property {key}) comes after it",
                 "resource {urn}'s property dependency {dep} (from property {key}) refers to missing resource"),
    "deletedWith": ("resource {urn} is specified as being deleted with {dep}, which comes after it",
                    "resource {urn} is specified as being deleted with {dep}, which is missing"),
    "replaceWith": ("resource {urn} is specified as being replaced with {dep}, which comes after it",
                    "resource {urn} is specified as being replaced with {dep}, which is missing"),
}


def _references(state: State) -> list[tuple[str, str, str]]:
    """``(kind, urn, property key)`` in ``GetAllDependencies``' order (the provider apart)."""
    refs = [("parent", state.parent, "")] if state.parent else []
    refs += [("dependency", u, "") for u in state.dependencies if u]
    refs += [("property", u, key) for key, us in state.property_dependencies.items() for u in us if u]
    refs += [("deletedWith", state.deleted_with, "")] if state.deleted_with else []
    refs += [("replaceWith", u, "") for u in state.replace_with if u]
    return refs


def verify_integrity(snapshot: list[State]) -> Optional[str]:
    """``Snapshot.VerifyIntegrity``: the first problem, in its words, or None. A resource's provider reference
    (``<urn>::<id>``) must name a provider earlier in the state (unless the resource is pending replacement); each
    parent, dependency, property dependency, ``deletedWith`` and ``replaceWith`` a resource earlier in the state
    ("comes after it" when it is later, "missing" when it is nowhere); a URN may appear twice only when all but one
    of its states are pending deletion."""
    seen: dict[str, list[State]] = {}
    providers: set[str] = set()
    for position, state in enumerate(snapshot):
        if is_provider(state.type):
            providers.add(f"{state.urn}::{state.id}")
        if state.provider and state.provider not in providers and not state.pending_replacement:
            return f"resource {state.urn} refers to unknown provider {state.provider}"
        for kind, urn, key in _references(state):
            if urn in seen:
                continue
            later = any(other.urn == urn for other in snapshot[position + 1:])
            return _REFUSALS[kind][0 if later else 1].format(urn=state.urn, dep=urn, key=key)
        seen.setdefault(state.urn, []).append(state)
    for urn, states in seen.items():
        deletes = sum(1 for s in states if s.delete)
        if len(states) > 1 and deletes not in (len(states) - 1, len(states)):
            return f"duplicate resource {urn} (not marked for deletion)"
    return None
