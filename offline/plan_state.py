"""A plan JSON as the state ``pulumi up`` would have left it, and the checks the engine makes before using a state.

Owns: :func:`states` (a plan's resources as :class:`~offline.engine.State`, in its ``createOrder``) and
:func:`problem` (the first reason the engine would refuse that state, or None). A base plan for
``--diff-against`` may be hand-edited or stitched together; the real engine refuses a snapshot that fails its
integrity check ("snapshot integrity failure; refusing to use it"), so the diff refuses such a base with the same
words instead of guessing. Input: a plan as ``python -m offline.plan --json`` writes it (``options.deletedWith`` is
read when present, as the state's ``deletedWith``). Output: states, or a one-line problem. Errors: none raised.
Research: docs/decisions/offline-diff.md ("A base the engine would refuse").
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/snapshot.go (``VerifyIntegrity``)
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional

from offline import engine

#: The fields of a plan's resource the diff reads; ``VerifyIntegrity`` itself requires ``urn`` and ``type``.
REQUIRED = ("type", "name", "custom", "inputs", "parent", "dependencies", "options")
REFUSED = "snapshot integrity failure; refusing to use it"


def _stand_in_id(urn: str) -> str:
    return f"base:{urn.rsplit('::', 1)[-1]}"


def states(plan: Mapping, property_dependencies: Optional[Callable[[Mapping], dict]] = None) -> list[engine.State]:
    """The plan's resources in ``createOrder``, ids stand-ins (``base:<name>``), provider references
    ``<provider urn>::base:<name>``. ``property_dependencies(resource)``: what to use for each resource's
    (default: its own ``propertyDependencies``). The plan must have passed :func:`problem`."""
    by_urn = {r["urn"]: r for r in plan["resources"]}
    found = []
    for urn in plan["createOrder"]:
        r = by_urn[urn]
        options = r["options"]
        found.append(engine.State(
            urn=urn, type=r["type"], custom=r["custom"], id=_stand_in_id(urn) if r["custom"] else "",
            inputs=r["inputs"], outputs=r["inputs"], parent=r["parent"],
            provider=f"{r['provider']}::{_stand_in_id(r['provider'])}" if r.get("provider") else None,
            dependencies=list(r["dependencies"]),
            property_dependencies=(property_dependencies(r) if property_dependencies
                                   else r.get("propertyDependencies") or {}),
            protect=bool(options.get("protect")), retain_on_delete=bool(options.get("retainOnDelete")),
            deleted_with=options.get("deletedWith") or None, replace_with=list(options.get("replaceWith") or []),
            ignore_changes=list(options.get("ignoreChanges") or [])))
    return found


def problem(plan: Mapping) -> Optional[str]:
    """The first thing that makes ``plan`` no state the engine would use, as one line, or None: a resource without a
    field the diff reads, a ``createOrder`` or ``destroyOrder`` that does not name each resource once, then
    ``VerifyIntegrity``'s checks over the states in ``createOrder`` (an empty type; a parent, dependency, property
    dependency, ``deletedWith``, ``replaceWith`` or provider naming a resource the plan does not hold, or holds only
    after it), and last a URN held twice (a plan holds no pending deletes), as the engine checks duplicates last."""
    resources = plan.get("resources")
    if not isinstance(resources, list):
        return "'resources' is not a list"
    held: dict[str, int] = {}
    duplicate = None
    for index, r in enumerate(resources):
        if not isinstance(r, dict) or not isinstance(r.get("urn"), str) or not r["urn"]:
            return f"resource at index {index} missing required 'urn' field"
        # 'type' may be empty here: the engine's own check names it, in createOrder, below.
        missing = next((key for key in REQUIRED if key not in r), None)
        if missing:
            return f"resource '{r['urn']}' missing required '{missing}' field"
        wrong = _wrong_shape(r)
        if wrong:
            return f"resource '{r['urn']}' has {wrong}"
        if r["urn"] in held and duplicate is None:
            duplicate = r["urn"]  # reported after the per-resource checks, as VerifyIntegrity does
        held[r["urn"]] = index
    for order in ("createOrder", "destroyOrder"):
        listed = plan.get(order)
        if not isinstance(listed, list):
            return f"'{order}' is not a list"
        counted: set[str] = set()
        for urn in listed:
            if urn not in held:
                return f"{order} names {urn}, which no resource in the plan holds"
            if urn in counted:
                return f"{order} names {urn} twice"
            counted.add(urn)
        absent = next((urn for urn in held if urn not in counted), None)
        if absent:
            return f"resource {absent} is missing from {order}"
    found = engine.verify_integrity(states(plan))
    if found and " refers to unknown provider " in found:  # the plan's provider URN, without the stand-in id
        found = found.rsplit("::", 1)[0]
    if found is None and duplicate is not None:
        return f"duplicate resource {duplicate} (not marked for deletion)"
    return found


def _wrong_shape(r: Mapping) -> Optional[str]:
    """A reference field that is not the shape the state holds (a URN, a list of them, a map of lists of them)."""
    def urns(value) -> bool:
        return isinstance(value, list) and all(isinstance(u, str) for u in value)

    if not isinstance(r["options"], dict):
        return "'options' that is not an object"
    for key, value in (("parent", r["parent"]), ("provider", r.get("provider")),
                       ("options.deletedWith", r["options"].get("deletedWith"))):
        if value is not None and not isinstance(value, str):
            return f"'{key}' that is not a URN"
    if not urns(r["dependencies"]) or not urns(r["options"].get("replaceWith") or []):
        return "'dependencies' or 'options.replaceWith' that is not a list of URNs"
    deps = r.get("propertyDependencies") or {}
    if not isinstance(deps, dict) or not all(urns(v) for v in deps.values()):
        return "'propertyDependencies' that is not a map of property to a list of URNs"
    return None
