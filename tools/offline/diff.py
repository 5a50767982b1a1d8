"""Offline preview diff: what ``pulumi preview --diff`` would say about going from one plan to another.

AN OFFLINE ESTIMATE from the engine's and the providers' rules (:mod:`tools.offline.replacement`), not the cloud's answer:
the base is an earlier ``python -m tools.plan --json`` (another commit or config), the head is evaluated here.
Per resource (matched by URN): ``create``, ``update`` (each changed input path, old -> new; secrets as
``[secret]``, compared by fingerprint), ``replace`` with its order and reasons, ``delete`` or ``same``.

The head is evaluated as a preview sees it (:func:`preview`): resources being created or replaced have no ID and
unknown outputs, so inputs derived from them, and invokes that depend on them, are ``[unknown]``; that can turn
more steps into replacements (a create-only input that is unknown), so the evaluation repeats until the set of
created and replaced resources is stable. Values known in preview are the canned answers (tools/offline/canned.py).

:func:`compute` -> :class:`Diff`: ``steps`` (head create order, then deleted resources in the base's destroy
order) and ``order``, the actions the engine would run for ``pulumi up`` (:func:`engine_order`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from tools.offline import replacement
from tools.offline.mock_engine import SECRET, UNKNOWN, join_path

OPS = ("create", "update", "replace", "delete", "same")
LABEL = ("OFFLINE ESTIMATE from the engine's and providers' rules (tools/offline/replacement.py), with canned Azure "
         "answers; not the cloud's answer. A real `pulumi preview --diff` reads the live state.")
_ABSENT = object()


@dataclass
class Step:
    """One resource's predicted operation. ``replace_order``: ``delete-first``/``create-first`` for a replacement,
    else None. ``diffs``: ``{"path", "old", "new"}`` (``old``/``new`` None when absent)."""

    urn: str
    type: str
    op: str
    replace_order: Optional[str] = None
    reasons: list[str] = field(default_factory=list)
    diffs: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]

    def to_json(self) -> dict:
        return {"urn": self.urn, "type": self.type, "op": self.op, "replaceOrder": self.replace_order,
                "reasons": self.reasons, "diffs": self.diffs}


@dataclass(frozen=True)
class Action:
    """One thing the engine does: ``kind`` is ``create``, ``update``, ``delete`` (a removed resource, or the old
    one of a replacement) or ``create-replacement``; ``note`` says why it comes there."""

    kind: str
    urn: str
    note: str = ""


@dataclass
class Diff:
    """``steps``: one per resource (head create order, then the base's deleted resources in its destroy order);
    ``order``: the :class:`Action` list ``pulumi up`` would run. ``summary``: op -> count over ``steps``;
    ``to_json()``: ``{"summary", "steps"}`` as ``tools.plan --diff-against --json`` prints it."""

    steps: list[Step]
    order: list[Action]

    @property
    def summary(self) -> dict[str, int]:
        return {op: sum(1 for s in self.steps if s.op == op) for op in OPS}

    def step(self, urn_or_name: str) -> Step:
        """The step for a URN or a resource name (KeyError if none, ValueError if the name is ambiguous)."""
        found = [s for s in self.steps if urn_or_name in (s.urn, s.name)]
        if not found:
            raise KeyError(urn_or_name)
        if len(found) > 1:
            raise ValueError(f"{urn_or_name} names {len(found)} resources; give the URN")
        return found[0]

    def to_json(self) -> dict:
        return {"summary": self.summary, "steps": [s.to_json() for s in self.steps]}


# --- input diffs ----------------------------------------------------------------------------------------------


def input_diffs(old: Any, new: Any, path: str, old_fp: Mapping[str, str], new_fp: Mapping[str, str]) -> list[dict]:
    """Changed paths between two input values. A ``[secret]`` on either side is compared by fingerprint (changed
    when either fingerprint is missing); ``[unknown]`` differs from any known value."""
    if old is _ABSENT or new is _ABSENT:
        return [{"path": path, "old": None if old is _ABSENT else old, "new": None if new is _ABSENT else new}]
    if SECRET in (old, new):
        same = old == new == SECRET and old_fp.get(path) is not None and old_fp.get(path) == new_fp.get(path)
        return [] if same else [{"path": path, "old": old, "new": new}]
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[dict] = []
        for key in sorted(set(old) | set(new)):
            found += input_diffs(old.get(key, _ABSENT), new.get(key, _ABSENT), join_path(path, key), old_fp, new_fp)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for index, (a, b) in enumerate(zip(old, new)):
            found += input_diffs(a, b, join_path(path, index), old_fp, new_fp)
        return found
    return [] if old == new else [{"path": path, "old": old, "new": new}]


def _top(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


# --- the decision per resource ----------------------------------------------------------------------------------


def decide(base: Mapping, head: Mapping, replace_targets: Iterable[str] = (),
           property_dependencies: Optional[Mapping[str, Mapping[str, list]]] = None,
           known_head: Optional[Mapping] = None) -> list[Step]:
    """The step of every resource, head create order first, then the base's removed resources.

    ``base``/``head``: plan JSON (``tools.plan --json``). ``replace_targets``: URNs given to ``--replace``.
    ``property_dependencies``: head URN -> input key -> URNs (for the "unknown in preview" reason).
    ``known_head``: the head with every value known (canned), to say when an unknown is unchanged after all.
    """
    base_by = {r["urn"]: r for r in base["resources"]}
    head_by = {r["urn"]: r for r in head["resources"]}
    known_by = {r["urn"]: r for r in (known_head or head)["resources"]}
    base_fp, head_fp = base.get("secretFingerprints", {}), head.get("secretFingerprints", {})
    targets = set(replace_targets)
    steps: dict[str, Step] = {}
    for urn in head["createOrder"]:
        new, old = head_by[urn], base_by.get(urn)
        if old is None:
            steps[urn] = Step(urn, new["type"], "create", reasons=["not in the base plan"])
            continue
        ignored = set(new["options"].get("ignoreChanges") or [])
        diffs = [d for d in input_diffs(old["inputs"], new["inputs"], "", base_fp.get(urn, {}), head_fp.get(urn, {}))
                 if _top(d["path"]) not in ignored]
        rule = replacement.rule_for(new["type"])
        engine: list[str] = []  # replacements the engine decides before asking the provider
        if urn in targets:
            engine.append(f"--replace: replacement requested on the command line (ReplaceKeys [id], {replacement.ENGINE})")
        for target in new["options"].get("replaceWith") or []:
            if steps.get(target) and steps[target].op == "replace":
                engine.append(f"replaceWith: {target.rsplit('::', 1)[-1]} is replaced ({replacement.ENGINE})")
        engine += _provider_replaced(old, new, steps, base_by, head_by, base_fp, head_fp)
        provider: list[str] = []  # replacements the provider's own diff asks for
        if not engine and diffs and new["custom"] and rule is not None:
            if rule.config_diff is not None:
                verdict = rule.config_diff(old["inputs"], new["inputs"], base_fp.get(urn, {}), head_fp.get(urn, {}))
                provider = [f"{key}: {why} ({rule.source})" for key, why in verdict.replace_keys.items()]
            else:
                provider = [f"{d['path']}: {rule.forces(d['path'])} ({rule.source})"
                            for d in diffs if rule.forces(d["path"])]
        unknown = _unknown_notes(urn, diffs, steps, property_dependencies or {}, old, known_by.get(urn))
        unknown += [f"{d['path']}: the base plan has no fingerprint for this secret (a plan from before secretFingerprints), "
                    "so it is shown as changed" for d in diffs if d["old"] == SECRET and d["path"] not in base_fp.get(urn, {})]
        if engine or provider:
            order = replacement.order(bool(provider), rule, bool(new["options"].get("deleteBeforeReplace")))
            steps[urn] = Step(urn, new["type"], "replace", order, engine + provider + _order_reason(order, bool(provider), rule, new) + unknown, diffs)
        elif diffs:
            steps[urn] = Step(urn, new["type"], "update", reasons=unknown, diffs=diffs)
        else:
            steps[urn] = Step(urn, new["type"], "same")
    for urn in base["destroyOrder"]:
        if urn not in head_by:
            steps[urn] = Step(urn, base_by[urn]["type"], "delete", reasons=["not in the new program"])
    return list(steps.values())


def _provider_replaced(old, new, steps, base_by, head_by, base_fp, head_fp) -> list[str]:
    """The engine's providerChanged: a resource whose provider reference changes (a new provider URN, or the same
    one replaced) is replaced when the new provider's DiffConfig of old vs new provider inputs asks for it."""
    urn = new.get("provider")
    if not urn or not new["custom"]:
        return []
    moved = urn != old.get("provider")
    if not moved and not (steps.get(urn) and steps[urn].op == "replace"):
        return []
    before, after = base_by.get(old.get("provider") or ""), head_by.get(urn)
    rule = replacement.rule_for(after["type"]) if after else None
    if before is None or after is None or rule is None or rule.config_diff is None:
        return [f"provider reference changed to {urn.rsplit('::', 1)[-1]} ({replacement.ENGINE})"] if moved else []
    verdict = rule.config_diff(before["inputs"], after["inputs"], base_fp.get(before["urn"], {}), head_fp.get(urn, {}))
    return [f"provider {urn.rsplit('::', 1)[-1]} is replaced and its DiffConfig asks for it: {why} ({replacement.ENGINE})"
            for why in verdict.replace_keys.values()]


def _order_reason(order: str, by_provider: bool, rule, new) -> list[str]:
    if new["options"].get("deleteBeforeReplace"):
        also = " (the provider's diff asks delete-first too)" if by_provider and rule is not None and rule.delete_first else ""
        return [f"{order}: deleteBeforeReplace option is set{also}"]
    if by_provider and rule is not None and rule.delete_first:
        return [f"{order}: the provider's diff asks delete-before-replace for a named resource ({rule.source})"]
    if by_provider:
        return [f"{order}: the provider's diff does not ask delete-before-replace ({rule.source if rule else 'no rule'})"]
    return [f"{order}: the engine takes the order from the deleteBeforeReplace option alone, which is not set ({replacement.ENGINE})"]


def _unknown_notes(urn, diffs, steps, property_dependencies, old, known) -> list[str]:
    notes = []
    for diff in diffs:
        if diff["new"] != UNKNOWN and not (isinstance(diff["new"], list) and UNKNOWN in diff["new"]):
            continue
        key = _top(diff["path"])
        causes = sorted({d.rsplit("::", 1)[-1] for d in property_dependencies.get(urn, {}).get(key, [])
                         if steps.get(d) and steps[d].op in ("create", "replace")})
        settled = known is not None and known["inputs"].get(key) == old["inputs"].get(key)
        tail = "; with the canned answers it is unchanged, so `pulumi up` may find nothing to do here" if settled else ""
        notes.append(f"{diff['path']} is unknown during preview (it comes from {', '.join(causes) or 'a step run in this update'}){tail}")
    return notes


# --- the engine's order -----------------------------------------------------------------------------------------


def engine_order(steps: Sequence[Step], base: Mapping, head: Mapping,
                 property_dependencies: Optional[Mapping[str, Mapping[str, list]]] = None) -> list[Action]:
    """The actions ``pulumi up`` runs for these steps: creates, updates and replacements in head create order (a
    delete-first replacement of X is preceded by the deletion of what must go before X, see
    :mod:`tools.offline.replacement`), then the deletes of removed resources and of create-first replacements' old
    resources, in the base's destroy order."""
    by_urn = {s.urn: s for s in steps}
    head_by = {r["urn"]: r for r in head["resources"]}
    destroy_position = {urn: i for i, urn in enumerate(base["destroyOrder"])}
    in_base = {r["urn"] for r in base["resources"]}
    deleted: dict[str, str] = {}  # urn -> the delete-first root it went before
    actions: list[Action] = []
    for urn in head["createOrder"]:
        step = by_urn[urn]
        if step.op in ("create", "update"):
            actions.append(Action(step.op, urn))
        elif step.op == "replace":
            if urn in deleted:
                actions.append(Action("create-replacement", urn, f"deleted earlier, before {_name(deleted[urn])}"))
                continue
            if step.replace_order == "delete-first":
                # Only what exists can be deleted first (the engine looks for them among the old resources,
                # findResourcesReplacedWith in step_generator.go); a dependent the base lacks is just created.
                first = _delete_first_chain(urn, by_urn, head_by, property_dependencies or {}) & in_base
                for dependent in sorted(first - set(deleted), key=lambda u: destroy_position.get(u, -1)):
                    deleted[dependent] = urn
                    actions.append(Action("delete", dependent, f"replaced; must go before {_name(urn)} is deleted"))
                deleted[urn] = urn
                actions.append(Action("delete", urn, "delete-first replacement"))
            actions.append(Action("create-replacement", urn))
    for urn in base["destroyOrder"]:
        step = by_urn.get(urn)
        if step and step.op == "delete":
            actions.append(Action("delete", urn, "removed from the program"))
        elif step and step.op == "replace" and urn not in deleted:
            actions.append(Action("delete", urn, "old resource of a create-first replacement"))
    return actions


def _delete_first_chain(root: str, by_urn, head_by, property_dependencies) -> set[str]:
    """What the engine deletes before a delete-first root: resources whose replaceWith names it, and replaced
    custom resources whose inputs depend on it (transitively)."""
    chain = {u for u, r in head_by.items() if root in (r["options"].get("replaceWith") or [])}
    frontier = [root]
    while frontier:
        current = frontier.pop()
        for urn, keys in property_dependencies.items():
            if urn in chain or urn == root or not head_by.get(urn, {}).get("custom"):
                continue
            if any(current in deps for deps in keys.values()) and by_urn.get(urn) and by_urn[urn].op == "replace":
                chain.add(urn)
                frontier.append(urn)
    return chain


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


# --- putting it together ----------------------------------------------------------------------------------------


def compute(base: Mapping, head: Mapping, replace_targets: Iterable[str] = (),
            property_dependencies: Optional[Mapping[str, Mapping[str, list]]] = None,
            known_head: Optional[Mapping] = None) -> Diff:
    """The Diff from ``base`` to ``head`` (plan JSON); arguments as for :func:`decide`."""
    steps = decide(base, head, replace_targets, property_dependencies, known_head)
    return Diff(steps, engine_order(steps, base, head, property_dependencies))


def preview(base: Mapping, evaluate, replace_targets: Iterable[str] = (), rounds: int = 6) -> tuple[Diff, Any]:
    """Evaluate the head as a preview sees it and diff it against ``base``.

    ``evaluate(pending)`` runs the program with the URNs in ``pending`` treated as being created or replaced and
    returns its :class:`tools.offline.mock_engine.Plan`. Inputs come from that run; the dependency graph and order from
    the run with every value known (an unknown invoke result carries no dependencies in the SDK, but the engine
    runs ``up`` with the full graph). Repeats until the created/replaced set is stable (at most ``rounds`` times;
    RuntimeError past that). Returns (Diff, the head Plan with every value known)."""
    targets = list(replace_targets)
    known = evaluate(frozenset())
    known_json, dependencies = known.to_json(), known.property_dependencies()
    head, pending = known_json, frozenset()
    for _ in range(rounds):
        diff = compute(base, head, targets, dependencies, known_json)
        now = frozenset(s.urn for s in diff.steps if s.op in ("create", "replace") and _custom(known, s.urn))
        if now == pending:
            return diff, known
        pending = now
        previewed = evaluate(pending).to_json()
        inputs = {r["urn"]: r["inputs"] for r in previewed["resources"]}
        head = {**known_json, "secretFingerprints": previewed["secretFingerprints"],
                "resources": [{**r, "inputs": inputs.get(r["urn"], r["inputs"])} for r in known_json["resources"]]}
    raise RuntimeError(f"the preview did not settle after {rounds} rounds")


def _custom(plan, urn: str) -> bool:
    try:
        return plan.get(urn).custom
    except KeyError:
        return False


# --- text --------------------------------------------------------------------------------------------------------

_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-", "same": " "}


def summary_line(diff: Diff) -> str:
    """Pulumi's words: ``+ 1 to create, ~ 2 to update, +-1 to replace, - 0 to delete, 14 unchanged``."""
    n = diff.summary
    return (f"+ {n['create']} to create, ~ {n['update']} to update, +-{n['replace']} to replace, "
            f"- {n['delete']} to delete, {n['same']} unchanged")


def _values(old: Any, new: Any, width: int = 120) -> tuple[str, str]:
    """Both sides as JSON text; long ones cut to a window around where they first differ."""
    texts = ["(absent)" if v is None else json.dumps(v, sort_keys=True) for v in (old, new)]
    if max(len(t) for t in texts) <= width:
        return texts[0], texts[1]
    first = next((i for i, (a, b) in enumerate(zip(*texts)) if a != b), min(len(t) for t in texts))
    start = max(0, first - width // 3)
    return tuple(("..." if start else "") + t[start:start + width] + ("..." if len(t) > start + width else "") for t in texts)


def render_text(diff: Diff, title: str) -> str:
    """The PR-comment text: label, summary, replacements first (order and reasons), then updates, creates and
    deletes with their field diffs, then the engine's order."""
    lines = [title, LABEL, "", "Resources: " + summary_line(diff)]
    groups = (("Replacements", "replace"), ("Updates", "update"), ("Creates", "create"), ("Deletes", "delete"))
    for heading, op in groups:
        chosen = [s for s in diff.steps if s.op == op]
        if not chosen:
            continue
        lines += ["", f"{heading}:"]
        for step in chosen:
            order = f" ({step.replace_order})" if step.replace_order else ""
            lines.append(f" {_SYMBOL[op]:<2} {step.type}  {step.name}  {op}{order}")
            lines += [f"       because {reason}" for reason in step.reasons if op in ("replace", "update", "delete")]
            lines += ["       ~ {}: {} => {}".format(d["path"], *_values(d["old"], d["new"])) for d in step.diffs]
    lines += ["", "Engine order (pulumi up):"]
    if not diff.order:
        lines.append("    (nothing to do)")
    for i, action in enumerate(diff.order, 1):
        note = f"  ({action.note})" if action.note else ""
        lines.append(f"  {i:>3}. {action.kind:<18} {_name(action.urn)}{note}")
    return "\n".join(lines)
