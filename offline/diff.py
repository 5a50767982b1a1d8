"""Offline preview diff: what ``pulumi preview --diff`` would say about going from one plan to another.

Owns: :func:`preview` (the head evaluated as a preview sees it, repeated until the set of created and replaced
resources is stable), :func:`compute` -> :class:`Diff` (per resource by URN: ``create``, ``update`` with each changed
input path, ``replace`` with its order and reasons, ``delete``, ``same``; ``order``, the engine's actions for
``pulumi up``, :func:`engine_order`, run on :mod:`offline.engine`; its text is :mod:`offline.diff_text`). AN OFFLINE
ESTIMATE from the engine's and providers' rules (:mod:`offline.replacement`). Input: a base plan JSON and the head.
Output: a :class:`Diff`. Errors: ``ValueError`` for a base the engine would refuse (:mod:`offline.plan_state`);
``KeyError``/``ValueError`` for a step asked by a name that names none or several.
Research: docs/decisions/offline-diff.md.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/step_generator.go
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from offline import consequences, deployed_world, engine, plan_state, replacement
from offline.program import AtUp
from offline.wire import SECRET, UNKNOWN, join_path

OPS = ("create", "update", "replace", "delete", "same", "read")
#: types the engine reads (``ReadResource``) rather than creates
READS = ("pulumi:pulumi:StackReference",)
LABEL = ("OFFLINE ESTIMATE from the engine's and providers' rules (offline/replacement.py), with canned Azure "
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
    ``to_json()``: ``{"summary", "steps"}`` as ``offline.plan --diff-against --json`` prints it."""

    steps: list[Step]
    order: list[Action]
    errors: list[str] = field(default_factory=list)
    #: what a reviewer must know before reading the counts (a base plan of another stack, ...)
    warnings: list[str] = field(default_factory=list)
    #: URNs replaced in this preview only because a value is unknown in it; with the canned answers the engine,
    #: rerun with every value known (as ``pulumi up`` diffs each resource again once its inputs are known), keeps them
    preview_only: list[str] = field(default_factory=list)
    #: head URN -> the base URN it takes through an alias (the state moves it there; nothing is created or deleted)
    aliases: dict[str, str] = field(default_factory=dict)

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
        return {"summary": self.summary, "steps": [s.to_json() for s in self.steps],
                "order": [{"kind": a.kind, "urn": a.urn, "note": a.note} for a in self.order],
                "previewOnly": self.preview_only, "warnings": self.warnings, "errors": self.errors}


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


# --- the engine run ---------------------------------------------------------------------------------------------


def _option(value: Any) -> Optional[bool]:
    """The plan JSON keeps ``deleteBeforeReplace`` as a bool, so ``false`` is read as "not set" (docs/offline.md D2)."""
    return True if value else None


class _Model:
    """The base as a state, the head as a program, and a :class:`engine.Provider` per package that diffs as
    :mod:`offline.replacement` says. ``forced``: URN -> ``delete-first``/``create-first`` to impose an order
    (:func:`engine_order`)."""

    def __init__(self, base: Mapping, head: Mapping, property_dependencies: Optional[Mapping] = None,
                 forced: Optional[Mapping[str, str]] = None) -> None:
        refused = plan_state.problem(base)
        if refused:
            raise ValueError(f"the base plan: {plan_state.REFUSED}: {refused}")
        self.base, self.head = base, head
        self.base_by = {r["urn"]: r for r in base["resources"]}
        self.head_by = {r["urn"]: r for r in head["resources"]}
        self.base_fp, self.head_fp = base.get("secretFingerprints", {}), head.get("secretFingerprints", {})
        #: Fingerprints are keyed per machine (offline/replacement.py fingerprint): a base plan keyed otherwise
        #: (another machine, or an older unkeyed plan) is read as one without fingerprints.
        self.other_key = bool(self.base_fp) and base.get("secretFingerprintKey") != head.get("secretFingerprintKey")
        if self.other_key:
            self.base_fp = {}
        self.head_deps = dict(property_dependencies or {})
        for r in head["resources"]:
            self.head_deps.setdefault(r["urn"], r.get("propertyDependencies") or {})
        self.forced = dict(forced or {})
        self.aliases: dict[str, str] = {}  # head URN -> base URN, once the engine ran (``run``)
        self.engine: Optional[engine.Engine] = None

    def old_urn(self, urn: str) -> str:
        """The base URN of head resource ``urn``: its own, or the one it took through an alias (as the engine
        running has found it so far)."""
        return (self.engine.aliases if self.engine is not None else self.aliases).get(urn, urn)

    def base_property_dependencies(self, resource: Mapping) -> dict:
        """A base plan from before ``propertyDependencies`` was written: the head's, for the same URN."""
        if "propertyDependencies" in resource:
            return resource["propertyDependencies"]
        return self.head_deps.get(resource["urn"], {})

    def snapshot(self) -> list[engine.State]:
        """The base plan as ``pulumi up`` left it: every resource in create order, ids stand-ins."""
        return plan_state.states(self.base, self.base_property_dependencies)

    def program(self, monitor: engine.Monitor) -> None:
        for urn in self.head["createOrder"]:
            r = self.head_by[urn]
            dbr = _option(r["options"].get("deleteBeforeReplace"))
            if urn in self.forced:
                dbr = self.forced[urn] == "delete-first"
            monitor.register(r["type"], r["name"], r["custom"], urn=urn, inputs=r["inputs"], parent=r["parent"],
                             provider=r.get("provider"), dependencies=r["dependencies"],
                             property_dependencies=self.head_deps.get(urn, {}),
                             protect=r["options"].get("protect"), retain_on_delete=r["options"].get("retainOnDelete"),
                             delete_before_replace=dbr, replace_with=r["options"].get("replaceWith") or [],
                             ignore_changes=r["options"].get("ignoreChanges") or [],
                             replace_on_changes=r["options"].get("replaceOnChanges") or [],
                             aliases=r["options"].get("aliases") or [])

    def diffs(self, urn: str, old_inputs: Mapping, new_inputs: Mapping, ignore: Iterable[str] = ()) -> list[dict]:
        """The field diffs, without those under an ``ignoreChanges`` path (the engine keeps the old value there)."""
        ignored = [engine.parse_property_path(path) for path in ignore]
        return [d for d in input_diffs(old_inputs, new_inputs, "", self.base_fp.get(self.old_urn(urn), {}),
                                       self.head_fp.get(urn, {}))
                if not any(engine.path_contains(path, engine.parse_property_path(d["path"])) for path in ignored)]

    def providers(self) -> dict[str, engine.Provider]:
        """One provider per package; its ``Diff`` asks for a replacement on the paths its rule names (delete-first
        when the rule says the provider asks it), its ``DiffConfig`` is the rule's ``config_diff``."""
        def diff(urn, old, new_inputs, preview):
            rule = replacement.rule_for(old.type)
            changed = [d for d in self.diffs(urn, old.inputs, new_inputs) if not _same_location(old.type, d)]
            keys = sorted({_top(d["path"]) for d in changed if rule is not None and rule.forces(d["path"])})
            # The changed keys as the provider's detailed diff names them too (pulumi-kubernetes writes full property
            # paths), which the engine matches against replaceOnChanges (applyReplaceOnChanges).
            return engine.DiffResult(bool(changed), keys, bool(keys) and rule is not None and rule.delete_first,
                                     sorted({_top(d["path"]) for d in changed} | {d["path"] for d in changed}))

        def diff_config(urn, old_inputs, new_inputs):
            rule = replacement.rule_for(urn.split("::")[2].split("$")[-1])
            if rule is None or rule.config_diff is None:
                return engine.DiffResult(bool(self.diffs(urn, old_inputs, new_inputs)))
            verdict = rule.config_diff(old_inputs, new_inputs, self.base_fp.get(self.old_urn(urn), {}),
                                       self.head_fp.get(urn, {}))
            return engine.DiffResult(bool(self.diffs(urn, old_inputs, new_inputs)) or bool(verdict.replace_keys),
                                     sorted(verdict.replace_keys))

        packages = {engine.package_of(r["type"]) for plan in (self.base, self.head) for r in plan["resources"]}
        return {package: engine.Provider(diff=diff, diff_config=diff_config) for package in packages}

    def run(self, replace_targets: Iterable[str] = ()) -> engine.Result:
        project, stack = self.head.get("project", "project"), self.head.get("stack", "stack")
        offline = self.engine = engine.Engine(self.providers(), stack=stack, project=project)
        result = offline.update(self.program, self.snapshot(), preview=True, replace=replace_targets)
        self.engine, self.aliases = None, dict(result.aliases)
        self.base_by.update({new: self.base_by[old] for new, old in self.aliases.items() if old in self.base_by})
        self.base_fp.update({new: self.base_fp[old] for new, old in self.aliases.items() if old in self.base_fp})
        return result


def _same_location(type_: str, diff: dict) -> bool:
    """azure-native drops a top-level ``location`` change between spellings of one region ("East US", "eastus"):
    ``applyAzureSpecificDiff`` compares them lowercased without spaces (provider/pkg/provider/diff.go @ 03707ff7)."""
    if not type_.startswith("azure-native:") or diff["path"] != "location":
        return False

    def norm(v):
        return v.lower().replace(" ", "") if isinstance(v, str) else v

    return diff["old"] is not None and diff["new"] is not None and norm(diff["old"]) == norm(diff["new"])


# --- from the engine's steps to the reviewer's -------------------------------------------------------------------


def _ops(result: engine.Result) -> dict[str, tuple[str, Optional[str], tuple]]:
    """URN -> (op, replace order, replace keys) from the engine's steps."""
    found: dict[str, tuple[str, Optional[str], tuple]] = {}
    deleted_first: set[str] = set()
    for step in result.steps:
        if step.op == "delete-replaced" and step.urn not in found:
            deleted_first.add(step.urn)
        elif step.op == "replace":
            found[step.urn] = ("replace", "delete-first" if step.urn in deleted_first else "create-first", step.keys)
        elif step.op in ("create", "update", "delete") and step.urn not in found:
            found[step.urn] = (step.op, None, ())
        elif step.op == "same" and step.urn not in found:
            found[step.urn] = ("same", None, ())
    return found


def _chain_note(result: engine.Result, urn: str) -> str:
    return next((s.note for s in result.steps if s.op == "delete-replaced" and s.urn == urn and s.note), "")


def _chain_reason(note: str) -> str:
    """A resource the engine deleted before a delete-first replacement and re-creates when the program registers it
    (the engine's note: ``<why>; deleted before <root>``)."""
    why, _, root = note.partition("; deleted before ")
    if why.startswith("its replaceWith names "):
        cause, source = f"replaceWith: {why[len('its replaceWith names '):]} is replaced", "findResourcesReplacedWith"
    elif why.startswith("its provider "):
        cause, source = why[len("its "):], "calculateDependentReplacements"
    else:
        cause, source = why.replace("its inputs ", "inputs ", 1), "calculateDependentReplacements"
    return (f"{cause}; the engine deletes it before "
            f"{root or 'a delete-first replacement'} is deleted and re-creates it "
            f"when the program registers it ({source}, {replacement.ENGINE})")


def decide(base: Mapping, head: Mapping, replace_targets: Iterable[str] = (),
           property_dependencies: Optional[Mapping[str, Mapping[str, list]]] = None,
           known_head: Optional[Mapping] = None) -> list[Step]:
    """The step of every resource, head create order first, then the base's removed resources, as the offline
    engine (:mod:`offline.engine`) runs the head over the base.

    ``base``/``head``: plan JSON (``offline.plan --json``). ``replace_targets``: URNs given to ``--replace``.
    ``property_dependencies``: head URN -> input key -> URNs (default: the plan JSON's ``propertyDependencies``).
    ``known_head``: the head with every value known (canned), to say when an unknown is unchanged after all.
    """
    return compute(base, head, replace_targets, property_dependencies, known_head).steps


def _reasons(model: _Model, result: engine.Result, urn: str, op: str, order: Optional[str], keys: tuple,
             diffs: list[dict], steps: Mapping[str, "Step"], known_by: Mapping) -> list[str]:
    new, old = model.head_by[urn], model.base_by.get(urn)
    rule = replacement.rule_for(new["type"])
    reasons: list[str] = []
    by_provider = False
    if op == "replace":
        if "dependent" in keys:
            reasons.append(_chain_reason(_chain_note(result, urn)))
            return reasons + [f"delete-first: it goes in the delete-first chain of "
                              f"{_chain_note(result, urn).partition('; deleted before ')[2] or 'another resource'}, "
                              "whatever its own options"] + _unknown_notes(urn, diffs, steps, model.head_deps, old,
                                                                           known_by.get(urn))
        elif "id" in keys:
            reasons.append("--replace: replacement requested on the command line "
                           f"(ReplaceKeys [id], {replacement.ENGINE})")
        elif "replaceWith" in keys:
            targets = [t for t in new["options"].get("replaceWith") or [] if steps.get(t) and steps[t].op == "replace"]
            reasons += [f"replaceWith: {_name(t)} is replaced ({replacement.ENGINE})" for t in targets]
        elif "provider" in keys:
            reasons += _provider_reasons(model, new, old)
        elif rule is not None and rule.config_diff is not None and old is not None:  # a provider: its DiffConfig
            by_provider = True
            verdict = rule.config_diff(old["inputs"], new["inputs"], model.base_fp.get(urn, {}),
                                       model.head_fp.get(urn, {}))
            reasons += [f"{key}: {why} ({rule.source})" for key, why in verdict.replace_keys.items()]
        else:
            by_provider = any("." not in key and "[" not in key for key in keys)
            reasons += [f"{d['path']}: {rule.forces(d['path'])} ({rule.source})" for d in diffs
                        if rule is not None and rule.forces(d["path"]) and _top(d["path"]) in keys]
            reasons += [f"{d['path']}: listed in replaceOnChanges ({replacement.ENGINE} applyReplaceOnChanges)"
                        for d in diffs if d["path"] in keys]
        reasons += _order_reason(order, by_provider, rule, new)
    if op in ("replace", "update"):
        reasons += _unknown_notes(urn, diffs, steps, model.head_deps, old, known_by.get(urn))
        why = ("its fingerprints are keyed on another machine or by an older offline.plan; "
               "plan base and head on one machine"
               if model.other_key else "a plan from before secretFingerprints")
        reasons += [f"{d['path']}: the base plan has no fingerprint for this secret ({why}), "
                    "so it is shown as changed" for d in diffs
                    if d["old"] == SECRET and d["path"] not in model.base_fp.get(urn, {})]
    return reasons


def _provider_reasons(model: _Model, new: Mapping, old: Optional[Mapping]) -> list[str]:
    """Why a changed provider reference replaces: the new provider's ``DiffConfig`` (``providerChanged``)."""
    urn = new.get("provider")
    before, after = model.base_by.get((old or {}).get("provider") or ""), model.head_by.get(urn or "")
    rule = replacement.rule_for(after["type"]) if after else None
    if before is None or after is None or rule is None or rule.config_diff is None:
        return [f"provider reference changed to {_name(urn or '')} ({replacement.ENGINE})"]
    verdict = rule.config_diff(before["inputs"], after["inputs"], model.base_fp.get(before["urn"], {}),
                               model.head_fp.get(urn, {}))
    return [f"provider {_name(urn)} is replaced and its DiffConfig asks for it: {why} ({replacement.ENGINE})"
            for why in verdict.replace_keys.values()] or [f"provider {_name(urn)} is replaced ({replacement.ENGINE})"]


def _order_reason(order: str, by_provider: bool, rule, new) -> list[str]:
    if new["options"].get("deleteBeforeReplace"):
        asks = by_provider and rule is not None and rule.delete_first
        also = " (the provider's diff asks delete-first too)" if asks else ""
        return [f"{order}: deleteBeforeReplace option is set{also}"]
    if by_provider and rule is not None and rule.delete_first:
        return [f"{order}: the provider's diff asks delete-before-replace for a named resource ({rule.source})"]
    if by_provider:
        return [f"{order}: the provider's diff does not ask delete-before-replace "
                f"({rule.source if rule else 'no rule'})"]
    return [f"{order}: the engine takes the order from the deleteBeforeReplace option alone, which is "
            f"not set ({replacement.ENGINE})"]


_SETTLED = "; with the canned answers it is unchanged, so `pulumi up` may find nothing to do here"


def _unknown_notes(urn, diffs, steps, property_dependencies, old, known) -> list[str]:
    notes = []
    for diff in diffs:
        if diff["new"] != UNKNOWN and not (isinstance(diff["new"], list) and UNKNOWN in diff["new"]):
            continue
        key = _top(diff["path"])
        causes = sorted({d.rsplit("::", 1)[-1] for d in property_dependencies.get(urn, {}).get(key, [])
                         if steps.get(d) and steps[d].op in ("create", "replace")})
        settled = known is not None and old is not None and known["inputs"].get(key) == old["inputs"].get(key)
        tail = _SETTLED if settled else ""
        notes.append(f"{diff['path']} is unknown during preview (it comes from "
                     f"{', '.join(causes) or 'a step run in this update'}){tail}")
    return notes


_ACTION = {"create": "create", "update": "update", "create-replacement": "create-replacement", "delete": "delete",
           "delete-replaced": "delete"}


def _actions(result: engine.Result) -> list[Action]:
    """The engine's steps that do something, in the order it runs them, each with why it sits there."""
    actions = []
    for step in result.steps:
        kind = _ACTION.get(step.op)
        if kind is None:
            continue
        note = step.note
        if step.op == "delete" and note in ("removed from the program", "destroy"):
            note = "removed from the program"
        actions.append(Action(kind, step.urn, note))
    return actions


# --- the engine's order -----------------------------------------------------------------------------------------


def engine_order(steps: Sequence[Step], base: Mapping, head: Mapping,
                 property_dependencies: Optional[Mapping[str, Mapping[str, list]]] = None) -> list[Action]:
    """The actions ``pulumi up`` runs for these steps, each replacement in the order its step says (used to play a
    replacement in the order the program does not choose): the offline engine run with every replaced resource
    given to ``--replace`` and its ``deleteBeforeReplace`` option set to that order."""
    forced = {s.urn: s.replace_order for s in steps if s.op == "replace" and s.replace_order}
    model = _Model(base, head, property_dependencies, forced)
    return _actions(model.run(forced))


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


# --- putting it together ----------------------------------------------------------------------------------------


def compute(base: Mapping, head: Mapping, replace_targets: Iterable[str] = (),
            property_dependencies: Optional[Mapping[str, Mapping[str, list]]] = None,
            known_head: Optional[Mapping] = None) -> Diff:
    """The Diff from ``base`` to ``head`` (plan JSON): the offline engine (:mod:`offline.engine`) previews the
    head over the base; ``steps`` per resource with reasons and field diffs, ``order`` the engine's actions,
    ``errors`` what the engine refused. Arguments as for :func:`decide`."""
    model = _Model(base, head, property_dependencies)
    result = model.run(replace_targets)
    ops = _ops(result)
    known_by = {r["urn"]: r for r in (known_head or head)["resources"]}
    steps: dict[str, Step] = {}
    for urn in head["createOrder"]:
        new, old = model.head_by[urn], model.base_by.get(urn)
        op, order, keys = ops.get(urn, ("same", None, ()))
        if old is None:
            if new["type"] in READS:  # a read (ReadResource), shown as such and counted apart by a real preview
                steps[urn] = Step(urn, new["type"], "read",
                                  reasons=["a read of another stack's outputs; creates nothing"])
            else:
                steps[urn] = Step(urn, new["type"], "create", reasons=["not in the base plan"])
            continue
        diffs = model.diffs(urn, old["inputs"], new["inputs"], new["options"].get("ignoreChanges") or [])
        step = Step(urn, new["type"], op, order, [], diffs if op in ("update", "replace") else [])
        steps[urn] = step
        step.reasons = _reasons(model, result, urn, op, order, keys, diffs, steps, known_by)
        if op == "same" and diffs:  # the provider found nothing to change where the inputs differ
            step.diffs = []
    warnings = _warnings(base, head)
    same_stack = not any("no URN is shared" in w for w in warnings)
    taken = set(result.aliases.values())
    for urn in base["destroyOrder"]:
        if urn not in model.head_by and urn not in taken:
            steps[urn] = Step(urn, model.base_by[urn]["type"], "delete",
                              reasons=["not in the new program"
                                       + (_removed_because(urn, base, head) if same_stack else "")])
    errors = list(result.diagnostics) or ([result.error] if result.error else [])
    errors += _retained_collisions(steps.values(), model) + consequences.refusals(steps.values(), base, head)
    return Diff(list(steps.values()), _actions(result), errors,
                warnings + consequences.warnings(steps.values(), base, head), aliases=dict(result.aliases))


def _retained_collisions(steps: Iterable[Step], model: _Model) -> list[str]:
    """A replaced resource that keeps its name and was recorded ``retainOnDelete``: the engine skips the provider's
    Delete even inside a replacement (pulumi/pulumi v3.230.0 ``pkg/resource/deploy/step.go`` ``DeleteStep.Apply``), so
    the old one is still there when azure-native creates the new one under the same name, and its create refuses
    ("cannot create already existing resource"; docs/offline.md D4)."""
    found = []
    for step in steps:
        old, new = model.base_by.get(step.urn), model.head_by.get(step.urn)
        rule = replacement.rule_for(step.type)
        if step.op != "replace" or old is None or new is None or not old["options"].get("retainOnDelete"):
            continue
        if rule is None or not rule.delete_first:  # only named resources (azure-native) collide on their name
            continue
        renamed = [k for k, why in rule.replace_on.items() if why.startswith("a path parameter")
                   and old["inputs"].get(k) != new["inputs"].get(k)]
        if not renamed:
            found.append(f"{step.name}: replacing it will fail: it is retainOnDelete, so its old copy is not deleted "
                         "and azure-native refuses to create one with the same name (cannot create already existing "
                         "resource)")
    return found


#: resource name (prefix) -> the settings that decide whether the program registers it
EXISTENCE = {
    "grafana-datasources-monitoring-data-reader": ("assignMonitoringDataReader", "multiCluster"),
    "managed-grafana": ("createGrafana",),
    "monitor-workspace": ("createMonitorWorkspace",),
}


def _removed_because(urn: str, base: Mapping, head: Mapping) -> str:
    """The settings behind a removal: those that decide whether the resource exists (:data:`EXISTENCE`) with their
    values before and after and what Pulumi.yaml says of them, else every setting that changed."""
    old, new = base.get("config"), head.get("config")
    if old is None or new is None:
        return ""
    project = head.get("project", "")
    name = _name(urn)
    keys = next((keys for prefix, keys in EXISTENCE.items() if name.startswith(prefix)), None)
    changed = sorted(k.split(":", 1)[1] for k in set(old) | set(new)
                     if k.startswith(project + ":") and old.get(k) != new.get(k))
    shown = list(keys) if keys else changed
    if not shown:
        return ""
    parts = []
    for key in shown:
        before, after = old.get(f"{project}:{key}"), new.get(f"{project}:{key}")
        value = f"{before} -> {after}" if before != after else f"{after} (unchanged)"
        parts.append(f"{key}: {value}" + (f" ({_describe(key)})" if keys else ""))
    return "; settings: " + "; ".join(parts)


def _describe(key: str) -> str:
    """The first sentences of the key's description in Pulumi.yaml."""
    import yaml  # local: only the diff's text needs it
    project = yaml.safe_load((Path(__file__).resolve().parents[1] / "Pulumi.yaml").read_text())
    text = str(((project.get("config") or {}).get(key) or {}).get("description", ""))
    return text if len(text) <= 240 else text[:240].rsplit(" ", 1)[0] + " ..."


def _warnings(base: Mapping, head: Mapping) -> list[str]:
    found = []
    for field_, fix in (("project", "plan the base from the same project"),
                        ("stack", "plan the base with the same --stack")):
        if base.get(field_) and head.get(field_) and base[field_] != head[field_]:
            found.append(f"the base plan is of {field_} '{base[field_]}' and the head of '{head[field_]}': no URN is "
                         f"shared, so every resource shows as deleted and created; {fix}")
    missing = [key for key in ("secretFingerprints", "config") if key not in base]
    if base.get("resources") and "propertyDependencies" not in base["resources"][0]:
        missing += ["propertyDependencies"]
    if base.get("secretFingerprints") and base.get("secretFingerprintKey") != head.get("secretFingerprintKey"):
        found.append("the base plan's secret fingerprints were keyed on another machine (or by an older, unkeyed "
                     "offline.plan): secrets show as changed; plan base and head on the same machine for an exact diff")
    if missing:
        found.append("the base plan comes from an older offline.plan (no "
                     f"{', '.join(missing)}): secrets show as changed, "
                     "removals name no setting, and delete-first chains use the head's dependencies; re-plan the base "
                     "with this version for an exact diff")
    return found


def preview(base: Mapping, evaluate, replace_targets: Iterable[str] = (), rounds: int = 6) -> tuple[Diff, Any]:
    """Evaluate the head as a preview sees it and diff it against ``base``.

    ``evaluate(pending)`` runs the program with the URNs in ``pending`` treated as being created or replaced and
    returns its :class:`offline.program.Plan`, in the canned world the base left
    (:func:`offline.deployed_world.deployed`). Inputs come from that run; the dependency graph and order from
    the run with every value known (an unknown invoke result carries no dependencies in the SDK, but the engine
    runs ``up`` with the full graph). Repeats until the created/replaced set is stable (at most ``rounds`` times;
    RuntimeError past that).

    Then the same for ``pulumi up`` (docs/offline.md D12), which diffs each resource again once what it reads is
    known: ``pending`` as :class:`offline.program.AtUp`, so the outputs of what ``up`` creates or replaces
    are new (unknown here), but invokes are answered (a lookup finds what exists). Its order is the Diff's ``order``;
    replacements of the preview that it does not make are ``preview_only``.
    Returns (Diff, the head Plan with every value known)."""
    targets = list(replace_targets)
    # The head runs in the world the base left: what it deployed answers the program's reads before it registers
    # anything (the PLS it made, whose id a preview may use: components/grafana_private_link.py).
    with deployed_world.deployed(base):
        known = evaluate(frozenset())
        known_json, dependencies = known.to_json(), known.property_dependencies()
        diff = _settle(base, evaluate, known, known_json, dependencies, targets, rounds, frozenset)
        at_up = _settle(base, evaluate, known, known_json, dependencies, targets, rounds, AtUp)
    ops = {s.urn: s.op for s in at_up.steps}
    diff.preview_only = [s.urn for s in diff.steps if s.op == "replace" and ops.get(s.urn) != "replace"]
    diff.order = at_up.order
    diff.warnings += consequences.endpoint_warnings({s.name for s in at_up.steps if s.op == "replace"}, diff.warnings)
    for step in diff.steps:  # "may find nothing to do" only where the up estimate indeed does nothing
        if ops.get(step.urn, step.op) == step.op and step.urn not in diff.preview_only:
            step.reasons = [r.split(_SETTLED, 1)[0] for r in step.reasons]
    return diff, known


#: Types whose preview of an update answers every output that is not an input unknown, as of a create: pulumi-command
#: v1.2.1 (``Command.Update`` returns the old outputs, which pulumi-go-provider v1.3.0 marks computed when an input they
#: depend on, by default all, that the old state had changed: :func:`_outputs_unknown`).
UNKNOWN_WHEN_UPDATED = frozenset({"command:local:Command"})


def _outputs_unknown(step: Step, base: Mapping) -> bool:
    """An update of a :data:`UNKNOWN_WHEN_UPDATED` type whose outputs a preview answers unknown: one that changes or
    removes an input the base has (pulumi-go-provider v1.3.0 ``markComputed``: an input added where the old state had
    none leaves the outputs known)."""
    if step.op != "update" or step.type not in UNKNOWN_WHEN_UPDATED:
        return False
    old = next((r["inputs"] for r in base["resources"] if r["urn"] == step.urn), {})
    return any(_top(d["path"]) in old for d in step.diffs)


def _settle(base, evaluate, known, known_json, dependencies, targets, rounds, wrap) -> Diff:
    head, pending = known_json, wrap()
    for _ in range(rounds):
        diff = compute(base, head, targets, dependencies, known_json)
        now = wrap(s.urn for s in diff.steps if _custom(known, s.urn) and (
            s.op in ("create", "replace") or (wrap is not AtUp and _outputs_unknown(s, base))))
        if now == pending:
            return diff
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
