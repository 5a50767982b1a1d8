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


#: ``plugin.UnknownStringValue``: the id a provider reference takes when its provider has none yet.
UNKNOWN_ID = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def _provider_urn_problem(urn: str) -> Optional[str]:
    """``providers.validateURN``: why ``urn`` cannot name a provider, in its words, or None."""
    parts = urn.split("::")
    if not urn.startswith("urn:pulumi:") or len(parts) < 4:
        return f"{urn} is not a valid URN"
    type_token = parts[2].rsplit("$", 1)[-1]
    module, _, name = type_token.rpartition(":")
    if module != "pulumi:providers":
        return f"invalid module in type: expected 'pulumi:providers', got '{module}'"
    if not name:
        return "provider URNs must specify a type name"
    return None


def _parse_reference(reference: str) -> tuple[Optional[str], Optional[str]]:
    """``providers.ParseReference``: (the reference, None), or (None, why it is none), in its words."""
    if "::" not in reference:
        return None, f"expected '::' in provider reference '{reference}'"
    urn = reference.rsplit("::", 1)[0]
    why = _provider_urn_problem(urn)
    return (None, why) if why else (reference, None)


def verify_integrity(snapshot: list[State]) -> Optional[str]:
    """``Snapshot.VerifyIntegrity``: the first problem, in its words and order, or None. Per state, in order: a URN and
    a type; no id on a non-custom resource; a provider's own reference (``<urn>::<id>``, the unknown id when it has
    none) must parse; a resource's provider reference must parse and name a provider earlier in the state (unless the
    resource is pending replacement); each parent, dependency, property dependency, ``deletedWith`` and
    ``replaceWith`` a resource earlier in the state ("comes after it" when later, "missing" when nowhere). Then a URN
    may appear twice only when all, or all but one, of its states are pending deletion. Upstream walks maps for
    property dependencies and duplicates, so which of several bad entries it names varies; this names the first."""
    seen: dict[str, list[State]] = {}
    providers: set[str] = set()
    for position, state in enumerate(snapshot):
        if not state.urn:
            return f"resource at index {position} missing required 'urn' field"
        if not state.type:
            return f"resource '{state.urn}' missing required 'type' field"
        if not state.custom and state.id:
            return f"resource '{state.urn}' has 'custom false but non-empty ID"
        if is_provider(state.type):
            why = _provider_urn_problem(state.urn)
            if why:
                return f"provider {state.urn} is not referenceable: {why}"
            providers.add(f"{state.urn}::{state.id or UNKNOWN_ID}")
        if state.provider:
            reference, why = _parse_reference(state.provider)
            if why:
                return f"failed to parse provider reference for resource {state.urn}: {why}"
            if reference not in providers and not state.pending_replacement:
                return f"resource {state.urn} refers to unknown provider {reference}"
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
