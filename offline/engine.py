"""The offline engine: how ``pulumi up``, ``preview``, ``destroy`` and ``refresh`` turn a program and a state into steps.

SIMULATED: a reading of pulumi/pulumi v3.230.0 (commit ae2e269861eabd2b692984e7286bec78777ba352), kept to what
this stack relies on, and held to the engine's own tests: every rule here is exercised by a case ported from
``pkg/engine/lifecycletest`` in ``tests/test_upstream_lifecycle.py`` (listed in docs/offline.md, "Upstream lifecycle
cases"). The product's offline diff (:mod:`offline.diff`) runs on this engine, so what the ported cases prove
is what reviewers read.

Sources, all at v3.230.0:

- ``pkg/resource/deploy/step_generator.go``: ``generateURN`` (duplicate URNs), ``continueStepsFromImport`` (the four
  cases: re-creating a resource deleted for a dependent's delete-before-replace, external, update or replace,
  create; untargeted resources become sames or skipped creates), ``diff`` (``--replace``, ``replaceWith``, a changed
  provider reference, then the provider's ``Diff``), ``diffResource`` (an unknown diff result compares inputs),
  ``applyReplaceOnChanges``, ``continueStepsFromDiff`` (protect, the delete-before-replace option over the
  provider's wish, ``calculateDependentReplacements`` then ``findResourcesReplacedWith``, deleted in reverse),
  ``GenerateDeletes`` (pending deletes, unseen olds, pending replacements, targets, all marked deleted before any
  runs; untargeted olds get same steps), ``ScheduleDeletes`` (dependents first), ``shouldTriggerReplace``
  (replacement triggers), ``validateSteps`` (a targeted step depending on a skipped create), ``isTargetedForUpdate``,
  ``GenerateRefreshes``.
- ``pkg/resource/deploy/step.go``: ``DeleteStep.Apply`` (protected deletes refused unless replacing; nothing is
  deleted for ``retainOnDelete``, for external resources, or when the ``deletedWith`` target is deleted in the same
  run), ``CreateStep`` (a create-first replacement marks the old resource for deletion), the delete of a
  delete-before-replace marking the old ``pendingReplacement``, ``RefreshStep.Apply`` (components, providers and
  resources pending replacement are not read).
- ``pkg/resource/deploy/deployment_executor.go``: ``handleSingleEvent`` (a failed registration cancels the
  operation), ``checkTargets``, ``performPostSteps`` (the deletes of what a refused delete depends on are skipped),
  ``rebuildBaseState`` and ``undangleParentResources`` (after a refresh); ``step_executor.go``
  ``cancelDueToError`` (a refused protected delete does not stop the others); ``source_eval.go``
  ``inheritFromParent``.
- ``sdk/go/common/resource/properties_path.go``: ``ParsePropertyPath`` and ``PropertyPath.Contains``, with which
  ``applyReplaceOnChanges`` matches replaceOnChanges paths against the changed keys and detailed-diff paths.
- ``pkg/resource/graph/dependency_graph.go``: ``DependingOn`` (a linear scan of the state, which is in
  topological order), ``DependenciesOf``, ``TransitiveDependenciesOf``.
- ``pkg/resource/deploy/snapshot.go``: ``VerifyIntegrity`` (dependencies, parents, ``deletedWith`` and
  ``replaceWith`` must name an earlier resource; one URN twice only when all but one are pending deletion).

What it does not model: the detailed diff ``diffResource`` builds from the object diff when a provider's ``Diff``
answers unknown (``NewDetailedDiffFromObjectDiff``): the inputs are compared by top-level key only, so there a nested
replaceOnChanges path matches nothing (the providers of this stack's plans answer with their paths); aliases, imports, reads, views, hooks, plans (``--plan``), ``--exclude``, glob targets,
``destroy --run-program``, the provider's ``Check`` (inputs are taken as given) and the inputs a ``Read`` returns,
provider previews (at preview ``Create``/``Update`` are not called: outputs are the inputs, as for a provider without
preview support), secret and output wrappers, the migration of snapshots without provider references
(``addDefaultProviders``), parallel execution (steps of one registration run in order, registrations one at a time,
deletes in dependency order with ties broken by state order), and the snapshot manager's exact ordering of the
state it writes (survivors follow the new resources).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Optional

UNKNOWN = "[unknown]"
STACK_TYPE = "pulumi:pulumi:Stack"
SOURCE = "pulumi/pulumi v3.230.0"


class EngineError(Exception):
    """The engine stopped the operation (``result.BailErrorf`` upstream); ``str()`` is its message."""


class ProviderError(Exception):
    """A provider call failed; the step fails and the operation stops after it."""


@dataclass
class State:
    """One resource in the state (``resource.State``): ``provider`` is a reference ``<provider urn>::<id>``."""

    urn: str
    type: str
    custom: bool = True
    id: str = ""
    inputs: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    parent: Optional[str] = None
    provider: Optional[str] = None
    dependencies: list = field(default_factory=list)
    property_dependencies: dict = field(default_factory=dict)
    protect: bool = False
    retain_on_delete: bool = False
    deleted_with: Optional[str] = None
    replace_with: list = field(default_factory=list)
    replace_on_changes: list = field(default_factory=list)
    ignore_changes: list = field(default_factory=list)
    replacement_trigger: Any = None
    delete: bool = False
    pending_replacement: bool = False
    external: bool = False
    taint: bool = False

    def all_dependencies(self) -> list[tuple[str, str]]:
        """``(kind, urn)`` pairs as ``State.GetAllDependencies`` lists them (the provider apart)."""
        deps = [("parent", self.parent)] if self.parent else []
        deps += [("dependency", u) for u in self.dependencies if u]
        deps += [("property", u) for us in self.property_dependencies.values() for u in us if u]
        deps += [("deletedWith", self.deleted_with)] if self.deleted_with else []
        deps += [("replaceWith", u) for u in self.replace_with if u]
        return deps

    @property
    def provider_urn(self) -> Optional[str]:
        return self.provider.rsplit("::", 1)[0] if self.provider else None

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass
class DiffResult:
    """``plugin.DiffResult``: ``changes`` None (unknown: the engine compares inputs), True (some) or False (none)."""

    changes: Optional[bool] = None
    replace_keys: list = field(default_factory=list)
    delete_before_replace: bool = False
    changed_keys: list = field(default_factory=list)

    @property
    def replace(self) -> bool:
        return bool(self.replace_keys)


@dataclass
class Provider:
    """A provider as ``deploytest.Provider`` fakes one: each callable may be None for the default.

    ``diff(urn, old: State, new_inputs, preview) -> DiffResult`` (default: unknown, so inputs are compared);
    ``diff_config(urn, old_inputs, new_inputs) -> DiffResult`` for the provider resource itself;
    ``create(urn, inputs, preview) -> (id, outputs)`` (default: a fresh id, outputs = inputs);
    ``update(urn, old: State, new_inputs, preview) -> outputs``; ``delete(old: State) -> None``;
    ``read(old: State) -> outputs or None`` (None: the resource is gone). Raise ProviderError to fail a call.
    """

    diff: Optional[Callable[..., DiffResult]] = None
    diff_config: Optional[Callable[..., DiffResult]] = None
    create: Optional[Callable[..., tuple[str, dict]]] = None
    update: Optional[Callable[..., dict]] = None
    delete: Optional[Callable[..., None]] = None
    read: Optional[Callable[..., Optional[dict]]] = None


@dataclass(frozen=True)
class Step:
    """One step as the engine reports it: ``op`` is the engine's name (``same``, ``create``, ``update``, ``replace``,
    ``create-replacement``, ``delete``, ``delete-replaced``, ``read``, ``refresh``, ``remove-pending-replace``)
    and ``keys`` the replace keys where they apply. ``note`` says why the step sits where it does."""

    op: str
    urn: str
    keys: tuple = ()
    note: str = ""

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass
class Registered:
    """What ``RegisterResource`` answers the program: the URN, the ID (empty in preview for new resources) and the
    outputs."""

    urn: str
    id: str
    outputs: dict


@dataclass
class Result:
    """One operation: ``steps`` in the order run, ``snapshot`` the state written after it, ``error`` the message the
    operation stopped with (None when it succeeded), ``diagnostics`` the errors reported without stopping (a preview
    goes on to show everything)."""

    steps: list[Step]
    snapshot: list[State]
    error: Optional[str] = None
    diagnostics: list[str] = field(default_factory=list)

    def ops(self, *kinds: str) -> list[tuple[str, str]]:
        """``(op, resource name)`` of the steps, only of ``kinds`` when given."""
        return [(s.op, s.name) for s in self.steps if not kinds or s.op in kinds]

    def state(self, name_or_urn: str) -> list[State]:
        """The states of one resource (by name or URN) in the written snapshot."""
        return [s for s in self.snapshot if name_or_urn in (s.urn, s.name)]


def default_urn(stack: str, project: str, type_: str, name: str, parent: Optional[str]) -> str:
    """``resource.NewURN``: the parent's type chain (none under the stack) ``$`` the type, then the name."""
    chain = type_
    if parent and parent.split("::")[2] != STACK_TYPE:
        chain = parent.split("::")[2] + "$" + type_
    return f"urn:pulumi:{stack}::{project}::{chain}::{name}"


def contains_unknown(value: Any) -> bool:
    if value == UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_unknown(v) for v in value)
    return False


def _package(type_: str) -> str:
    return type_.split(":")[2] if type_.startswith("pulumi:providers:") else type_.split(":")[0]


def is_provider(type_: str) -> bool:
    return type_.startswith("pulumi:providers:")


class _Bail(Exception):
    pass


# --- property paths ---------------------------------------------------------------------------------------------
# pulumi/pulumi v3.230.0 sdk/go/common/resource/properties_path.go: ``parsePropertyPath`` (not strict, as
# ``ParsePropertyPath``) and ``PropertyPath.Contains``, which ``applyReplaceOnChanges`` (pkg/resource/deploy/
# step_generator.go) applies to every replaceOnChanges path against every changed key and detailed-diff path.

class PropertyPathError(ValueError):
    """``ParsePropertyPath``'s error; ``str()`` is upstream's message."""


def parse_property_path(path: str) -> tuple:
    """``ParsePropertyPath``: the path's elements, ``str`` for names and quoted keys (``*`` and ``["*"]`` both give
    ``"*"``), ``int`` for indices. As upstream, loose: a name runs to the next ``.`` or ``[`` whatever its characters,
    and ``.`` before ``[`` is tolerated."""
    elements: list = []
    if path.startswith("."):
        raise PropertyPathError("expected property path to start with a name or index")
    while path:
        if path[0] == ".":
            path = path[1:]
            if not path:
                raise PropertyPathError("expected property path to end with a name or index")
        elif path[0] == "[":
            if len(path) > 1 and path[1] == '"':
                key, i = [], 2
                while True:
                    if i >= len(path):
                        raise PropertyPathError("missing closing quote in property name")
                    if path[i] == '"':
                        i += 1
                        break
                    if path[i] == "\\" and i + 1 < len(path) and path[i + 1] == '"':
                        key.append('"')
                        i += 2
                    else:
                        key.append(path[i])
                        i += 1
                if i >= len(path) or path[i] != "]":
                    raise PropertyPathError("missing closing bracket in property access")
                element, path = "".join(key), path[i:]
            else:
                rbracket = path.find("]")
                if rbracket == -1:
                    raise PropertyPathError("missing closing bracket in array index")
                segment = path[1:rbracket]
                if segment == "*":
                    element = "*"
                elif re.fullmatch(r"[+-]?[0-9]+", segment):  # strconv.ParseInt(segment, 10, 0)
                    element = int(segment)
                else:
                    raise PropertyPathError(f'invalid array index: strconv.ParseInt: parsing "{segment}": invalid syntax')
                path = path[rbracket:]
            elements.append(element)
            path = path[1:]
        else:
            end = next((i for i, c in enumerate(path) if c in ".["), len(path))
            elements.append(path[:end])
            path = path[end:]
    return tuple(elements)


def path_contains(listed: tuple, other: tuple) -> bool:
    """``PropertyPath.Contains``: ``listed``'s elements are a prefix of ``other``'s, a ``"*"`` in ``listed`` matching
    any one element (a name or an index) at its level."""
    if len(other) < len(listed):
        return False
    for mine, theirs in zip(listed, other):
        if isinstance(mine, int):
            if not isinstance(theirs, int) or theirs != mine:
                return False
        elif mine != "*" and (not isinstance(theirs, str) or theirs != mine):
            return False
    return True


def replace_on_changes_keys(changed: Iterable[str], replace_on_changes: Iterable[str]) -> list[str]:
    """``applyReplaceOnChanges``: the entries of ``changed`` (the provider's changed keys, which are top-level, and its
    detailed-diff paths, which the offline :class:`DiffResult` keeps together in ``changed_keys``) that a
    replaceOnChanges path contains. Without detailed-diff paths only the top-level keys are there, so only a listed
    path of one element (or ``*``) can match. A listed path that does not parse is an error (upstream returns it); a
    changed entry that does not parse is skipped (upstream skips a changed key so)."""
    listed = [parse_property_path(p) for p in replace_on_changes]
    found = []
    for key in changed:
        try:
            path = parse_property_path(key)
        except PropertyPathError:
            continue
        if any(path_contains(p, path) for p in listed):
            found.append(key)
    return found


class Engine:
    """Runs operations for one stack. ``providers``: package name (``pkgA``, ``azure-native``) -> :class:`Provider`.
    The state is a list of :class:`State` in topological order, as the engine writes it."""

    def __init__(self, providers: Mapping[str, Provider], stack: str = "test", project: str = "test") -> None:
        self.providers = dict(providers)
        self.stack, self.project = stack, project
        self._ids = 0

    # --- operations -----------------------------------------------------------------------------------------------

    def update(self, program: Callable[["Monitor"], None], snapshot: Iterable[State] = (), *, preview: bool = False,
               targets: Iterable[str] = (), target_dependents: bool = False, replace: Iterable[str] = (),
               refresh: bool = False) -> Result:
        """``pulumi up`` (``preview=True``: ``pulumi preview``) of ``program`` over ``snapshot``. ``targets``:
        ``--target`` URNs; ``replace``: ``--replace`` URNs; ``refresh``: ``--refresh`` (each resource is read
        before it is diffed; one that is gone is created again)."""
        olds = [copy.deepcopy(s) for s in snapshot]
        run = _Run(self, olds, preview, set(targets), target_dependents, set(replace))
        if refresh:
            gone = run.refresh_all()
            run.olds = run.rebuild_base_state(gone)
            run.rebuild()
        return run.execute(program)

    def destroy(self, snapshot: Iterable[State], *, preview: bool = False, targets: Iterable[str] = (),
                target_dependents: bool = False) -> Result:
        """``pulumi destroy`` (without ``--run-program``): every resource, or the ``targets`` (and with
        ``target_dependents`` what depends on them), deleted dependents first."""
        olds = [copy.deepcopy(s) for s in snapshot]
        run = _Run(self, olds, preview, set(targets), target_dependents, set())
        return run.execute(None)

    def refresh(self, snapshot: Iterable[State], *, preview: bool = False, targets: Iterable[str] = (),
                target_dependents: bool = False) -> Result:
        """``pulumi refresh`` (``targets``: ``--target`` URNs, the only resources refreshed, with
        ``target_dependents`` what depends on them too): each custom resource read; one the provider says is gone
        leaves the state, and the dependencies of the others on it are dropped (``TestRefreshDeleteDependencies``)."""
        olds = [copy.deepcopy(s) for s in snapshot]
        run = _Run(self, olds, preview, set(targets), target_dependents, set())
        gone = run.refresh_all()
        kept = run.rebuild_base_state(gone)
        return Result(run.steps, kept if not preview else [copy.deepcopy(s) for s in snapshot], None, run.diagnostics)

    def new_id(self, prefix: str = "id") -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"

    def provider_for(self, type_: str) -> Provider:
        return self.providers.get(_package(type_), Provider())


class Monitor:
    """What the program registers resources with (the resource monitor). ``register`` returns :class:`Registered`."""

    def __init__(self, run: "_Run") -> None:
        self._run = run

    def register(self, type_: str, name: str, custom: bool = True, *, inputs: Optional[dict] = None,
                 parent: Optional[str] = None, provider: Optional[str] = None, dependencies: Iterable[str] = (),
                 property_dependencies: Optional[Mapping[str, list]] = None, protect: Optional[bool] = None,
                 retain_on_delete: Optional[bool] = None, delete_before_replace: Optional[bool] = None,
                 deleted_with: Optional[str] = None, replace_with: Iterable[str] = (),
                 replace_on_changes: Iterable[str] = (), ignore_changes: Iterable[str] = (),
                 replacement_trigger: Any = None, urn: Optional[str] = None) -> Registered:
        """Register a resource. ``provider``: an explicit provider's URN (default: the package's default provider,
        registered on first use). ``urn`` overrides the computed URN (the offline diff replays recorded URNs)."""
        try:
            return self._run.register(dict(
                type=type_, name=name, custom=custom, inputs=copy.deepcopy(inputs or {}), parent=parent,
                provider=provider, dependencies=list(dependencies),
                property_dependencies=dict(property_dependencies or {}), protect=protect,
                retain_on_delete=retain_on_delete, delete_before_replace=delete_before_replace,
                deleted_with=deleted_with, replace_with=list(replace_with), replace_on_changes=list(replace_on_changes),
                ignore_changes=list(ignore_changes), replacement_trigger=replacement_trigger, urn=urn))
        except (_Bail, EngineError, ProviderError) as failure:
            # deploymentExecutor.handleSingleEvent: a failed registration cancels the operation, even when the
            # program catches the error it is answered with.
            self._run.failure = self._run.failure or failure
            raise


class _Run:
    """One operation's step generator and executor."""

    def __init__(self, engine: Engine, olds: list[State], preview: bool, targets: set[str],
                 target_dependents: bool, replace_targets: set[str]) -> None:
        self.engine, self.olds, self.preview = engine, olds, preview
        self.original = copy.deepcopy(olds)  # what a preview hands back: it writes nothing
        self.targets, self.target_dependents, self.replace_targets = targets, target_dependents, replace_targets
        self.targets_actual: set[str] = set()
        self.steps: list[Step] = []
        self.diagnostics: list[str] = []
        self.news: dict[str, State] = {}
        self.new_order: list[str] = []
        self.urns: set[str] = set()
        self.creates, self.sames, self.updates, self.replaces, self.deletes = set(), set(), set(), set(), set()
        self.skipped_creates: set[str] = set()
        self.pending_deletes: set[int] = set()  # id() of old states already deleted by a delete-first chain
        self.done: set[int] = set()  # id() of old states this run is done with (``markDone``): they leave the state
        self.provider_ids: dict[str, str] = {}  # provider URN -> its id in this run
        self.saw_error = False
        self.refused: list[State] = []  # protected resources whose delete was refused (deleteProtectedError)
        self.goals: dict[str, dict] = {}  # URN -> its registration, for its children to inherit from
        self.failure: Optional[Exception] = None  # the first failed registration
        self.carried: list[State] = []  # untargeted resources GenerateDeletes carries over with a same step
        self.rebuild()

    def rebuild(self) -> None:
        self.old_by_urn = {s.urn: s for s in self.olds if not s.delete}
        self.index = {id(s): i for i, s in enumerate(self.olds)}

    # --- registration -------------------------------------------------------------------------------------------

    def execute(self, program: Optional[Callable[[Monitor], None]]) -> Result:
        error = None
        try:
            if program is not None:
                program(Monitor(self))
                if self.failure is not None:
                    raise self.failure
            # deploymentExecutor.checkTargets, before the deletes: a --target naming nothing in the stack.
            unknown = [t for t in sorted(self.targets) if t not in self.urns and all(s.urn != t for s in self.olds)]
            self.diagnostics += [f"Target '{t}' could not be found in the stack." for t in unknown]
            self.generate_deletes(destroy=program is None)
            if self.saw_error and not self.preview:
                raise _Bail("; ".join(self.diagnostics))
            if unknown:
                raise _Bail("one or more targets could not be found in the stack")
        except (_Bail, EngineError, ProviderError) as failure:
            error = str(failure)
        snapshot = self.snapshot()
        if error is None and not self.preview:
            problem = verify_integrity(snapshot)
            if problem:
                error = f"snapshot integrity failure: {problem}"
        if error is None and self.saw_error:
            error = "; ".join(self.diagnostics)
        return Result(self.steps, snapshot, error, self.diagnostics)

    def _default_provider(self, type_: str) -> str:
        package = _package(type_)
        urn = default_urn(self.engine.stack, self.engine.project, f"pulumi:providers:{package}", "default", None)
        if urn not in self.news:
            self.register(dict(type=f"pulumi:providers:{package}", name="default", custom=True, inputs={},
                               parent=None, provider=None, dependencies=[], property_dependencies={}, protect=None,
                               retain_on_delete=None, delete_before_replace=None, deleted_with=None, replace_with=[],
                               replace_on_changes=[], ignore_changes=[], replacement_trigger=None, urn=urn,
                               default=True))
        return urn

    def register(self, goal: dict) -> Registered:
        parent_goal = self.goals.get(goal["parent"]) if goal["parent"] else None
        if parent_goal is not None:  # resmon.RegisterResource: inheritFromParent (the provider: custom children only)
            goal = dict(goal, deleted_with=goal["deleted_with"] or parent_goal["deleted_with"],
                        protect=parent_goal["protect"] if goal["protect"] is None else goal["protect"],
                        retain_on_delete=(parent_goal["retain_on_delete"] if goal["retain_on_delete"] is None
                                          else goal["retain_on_delete"]))
            inherited = parent_goal["provider"]
            if (goal["provider"] is None and goal["custom"] and inherited
                    and _package(inherited.split("::")[2].split("$")[-1]) == _package(goal["type"])):
                goal["provider"] = inherited
        type_ = goal["type"]
        provider_urn = goal["provider"]
        if goal["custom"] and not is_provider(type_) and provider_urn is None and not type_.startswith("pulumi:pulumi:"):
            provider_urn = self._default_provider(type_)
        parent = goal["parent"]
        if parent is None and type_ != STACK_TYPE and not goal.get("default"):
            parent = next((u for u, s in self.news.items() if s.type == STACK_TYPE), None)
        urn = goal["urn"] or default_urn(self.engine.stack, self.engine.project, type_, goal["name"], parent)
        if urn in self.urns:  # generateURN
            raise _Bail(f"Duplicate resource URN '{urn}'; try giving it a unique name")
        self.urns.add(urn)
        self.goals[urn] = goal
        reference = f"{provider_urn}::{self.provider_ids.get(provider_urn, UNKNOWN)}" if provider_urn else None
        new = State(urn=urn, type=type_, custom=goal["custom"], inputs=goal["inputs"], parent=parent,
                    provider=reference, dependencies=goal["dependencies"],
                    property_dependencies=goal["property_dependencies"], protect=bool(goal["protect"]),
                    retain_on_delete=bool(goal["retain_on_delete"]), deleted_with=goal["deleted_with"],
                    replace_with=goal["replace_with"], replace_on_changes=goal["replace_on_changes"],
                    ignore_changes=goal["ignore_changes"], replacement_trigger=goal["replacement_trigger"])
        old = self.old_by_urn.get(urn)
        if old is not None and new.ignore_changes:  # continueStepsFromImport: processIgnoreChanges before Check/Diff
            new.inputs = process_ignore_changes(new.inputs, old.inputs, new.ignore_changes)
        steps = self.generate(goal, new, old)
        if steps and steps[0][0] != "skipped-create":  # validateSteps: every step's new state, not only creates
            self.check_targeted_dependencies(steps[0][1] if steps[0][0] == "same-untargeted" else new)
        result = None
        for step in steps:
            result = self.apply(step, new) or result
        state = self.news.get(urn, new)
        if is_provider(type_) and state.id:
            self.provider_ids[urn] = state.id
        return Registered(urn, state.id, copy.deepcopy(state.outputs))

    def is_targeted(self, state: State) -> bool:
        """``isIncludedInOperation``: no ``--target`` means everything; else the targets, and with
        ``--target-dependents`` what depends on a target actually operated on. Providers and the stack always."""
        if not self.targets or is_provider(state.type) or state.type == STACK_TYPE:
            return True
        return self.is_targeted_for_update(state)

    def is_targeted_for_update(self, state: State) -> bool:
        """``isTargetedForUpdate``: a ``--target``, or with ``--target-dependents`` a dependent of a target actually
        operated on. Providers and the stack are operated on without being targeted for update."""
        if state.urn in self.targets:
            return True
        if not self.target_dependents:
            return False
        deps = [u for _, u in state.all_dependencies()] + ([state.provider_urn] if state.provider else [])
        return any(u in self.targets_actual for u in deps)

    def generate(self, goal: dict, new: State, old: Optional[State]) -> list[tuple]:
        """The steps for one registration (``continueStepsFromImport`` and ``continueStepsFromDiff``)."""
        urn = new.urn
        targeted = self.is_targeted(new)
        if urn in self.deletes and old is not None:  # Case 1: re-creating a resource deleted for a dependent's DBR
            self.deletes.discard(urn)
            self.replaces.add(urn)
            return [("replace", old, ("dependent",)),
                    ("create-replacement", old, (), "deleted earlier for a delete-first replacement", False)]
        if old is not None and old.external:  # Case 2
            self.creates.add(urn)
            return [("create-replacement", old, (), "", True), ("replace", old, ())]
        if targeted and self.targets and self.is_targeted_for_update(new):
            self.targets_actual.add(urn)
        if old is not None:  # Case 3
            if not targeted:
                self.sames.add(urn)
                return self.dependency_sames(old)
            return self.steps_from_diff(goal, new, old)
        if not targeted:  # Case 4, not targeted: a skipped create
            self.sames.add(urn)
            self.skipped_creates.add(urn)
            return [("skipped-create",)]
        self.creates.add(urn)
        return [("create",)]

    def dependency_sames(self, old: State) -> list[tuple]:
        """``getDependencySteps``: an untargeted resource keeps its old state, and so, first, does each of its
        dependencies (parent, dependencies, property dependencies, deletedWith, replaceWith) that has no step yet,
        depth first, so the state written stays in dependency order. One that is pending deletion is skipped."""
        if old.delete:
            return []
        self.urns.add(old.urn)
        self.sames.add(old.urn)
        steps: list[tuple] = []
        for kind, dep in old.all_dependencies():
            if self.has_generated_step(dep):
                continue
            dep_old = self.old_by_urn.get(dep)
            if dep_old is None:
                raise _Bail(f"{kind} {dep} of untargeted resource {old.urn} has no old state")
            steps += self.dependency_sames(dep_old)
        return steps + [("same-untargeted", old)]

    def has_generated_step(self, urn: str) -> bool:
        """``hasGeneratedStep``: a create, same, update, delete or replace of ``urn`` in this run."""
        return any(urn in group for group in (self.creates, self.sames, self.updates, self.deletes, self.replaces))

    def check_targeted_dependencies(self, new: State) -> None:
        """``validateSteps``: a targeted step that depends on a skipped create is an error."""
        if not self.targets and not self.replace_targets:
            return
        deps = [u for _, u in new.all_dependencies()] + ([new.provider_urn] if new.provider else [])
        for dep in deps:
            if dep in self.skipped_creates:
                message = (f"Resource '{new.urn}' depends on '{dep}' which was was not specified in --target list "
                           "and will not be created")
                self.diagnostics.append(message)
                self.saw_error = True
                if not self.preview:
                    raise _Bail("untargeted create")
                self.skipped_creates.discard(dep)

    def diff(self, goal: dict, new: State, old: State) -> DiffResult:
        """``stepGenerator.diff``: ``--replace`` (or a tainted resource), a ``replaceWith`` target being replaced, a
        changed provider reference whose new provider's ``DiffConfig`` replaces, then the provider's ``Diff``."""
        if new.urn in self.replace_targets or old.taint:
            return DiffResult(True, ["id"])
        for target in new.replace_with:
            if target in self.replaces:
                return DiffResult(True, ["replaceWith"])
        if old.provider != new.provider:
            if not old.provider or not new.provider:
                return DiffResult(True, ["provider"])
            old_p, new_p = self.old_by_urn.get(old.provider_urn), self.news.get(new.provider_urn)
            if old_p is not None and new_p is not None:
                verdict = self.config_diff(old_p, new_p)
                if verdict.replace:
                    return DiffResult(True, ["provider"])
        if not new.custom:
            return DiffResult(old.inputs != new.inputs)
        provider = self.engine.provider_for(new.type)
        if is_provider(new.type):
            result = self.config_diff(old, new)
        elif provider.diff is not None:
            result = provider.diff(new.urn, old, new.inputs, self.preview)
        else:
            result = DiffResult()
        if result.changes is None:  # diffResource: an unknown answer compares the inputs
            changed = sorted(k for k in set(old.inputs) | set(new.inputs)
                             if k not in new.ignore_changes and old.inputs.get(k) != new.inputs.get(k))
            result = replace(result, changes=bool(changed), changed_keys=changed)
        return result

    def config_diff(self, old: State, new: State) -> DiffResult:
        provider = self.engine.provider_for(new.type)
        if provider.diff_config is not None:
            return provider.diff_config(new.urn, old.inputs, new.inputs)
        return DiffResult(old.inputs != new.inputs)

    def steps_from_diff(self, goal: dict, new: State, old: State) -> list[tuple]:
        urn = new.urn
        if not self.preview and contains_unknown(new.replacement_trigger):
            self.diagnostics.append(f"replacement trigger contains unknowns for {urn}")
            self.saw_error = True
            raise _Bail(f"replacement trigger contains unknowns for {urn}")
        trigger = _should_trigger_replace(new.replacement_trigger, old.replacement_trigger)
        result = DiffResult(True) if trigger else self.diff(goal, new, old)
        if result.changes and new.replace_on_changes:  # applyReplaceOnChanges
            extra = self.replace_on_changes(urn, result.changed_keys, new.replace_on_changes)
            result = replace(result, replace_keys=sorted(set(result.replace_keys) | set(extra)))
        if not (result.changes or old.pending_replacement):
            self.sames.add(urn)
            return [("same", old)]
        if not (result.replace or trigger or old.pending_replacement):
            self.updates.add(urn)
            return [("update", old)]
        if new.protect and old.protect:
            message = (f'unable to replace resource "{urn}"\nas it is currently marked for protection. To unprotect '
                       "the resource, remove the `protect` flag from the resource in your Pulumi program and run "
                       "`pulumi up`")
            self.diagnostics.append(message)
            self.saw_error = True
            if not self.preview:
                raise _Bail(message)
        self.replaces.add(urn)
        keys = tuple(result.replace_keys)
        delete_first = result.delete_before_replace
        if goal["delete_before_replace"] is not None:
            delete_first = bool(goal["delete_before_replace"])
        if not delete_first:
            return [("create-replacement", old, keys, "create-first: the old one is deleted after every create and update", True),
                    ("replace", old, keys)]
        steps: list[tuple] = []
        chain = self.dependent_replacements(old) + self.replaced_with(urn)
        for dependent, dep_keys, why in reversed(chain):
            if id(dependent) in self.pending_deletes:
                continue
            if not dependent.delete and dependent.protect:
                message = (f'unable to replace resource "{dependent.urn}" as part of replacing "{urn}" as it is '
                           "currently marked for protection. To unprotect the resource, remove the `protect` flag "
                           "from the resource in your Pulumi program and run `pulumi up`, or use the command:\n"
                           f"`pulumi state unprotect '{dependent.urn}'`")  # continueStepsFromDiff's message
                self.diagnostics.append(message)
                self.saw_error = True
                raise _Bail(message)
            if dependent.delete:  # already pending deletion: a plain DeleteStep (continueStepsFromDiff)
                steps.append(("delete-pending", dependent, dep_keys, f"{why}; a pending delete, deleted before {old.name}"))
            else:
                steps.append(("delete-replaced", dependent, dep_keys, f"{why}; deleted before {old.name}"))
            self.deletes.add(dependent.urn)
            self.pending_deletes.add(id(dependent))
        if not old.pending_replacement:
            steps.append(("delete-replaced", old, keys, "delete-first replacement", "pending"))
        steps += [("replace", old, keys), ("create-replacement", old, keys, "delete-first: created after its delete", False)]
        return steps

    def replace_on_changes(self, urn: str, changed: Iterable[str], listed: Iterable[str]) -> list[str]:
        """:func:`replace_on_changes_keys`; a listed path that does not parse fails the operation, as upstream."""
        try:
            return replace_on_changes_keys(changed, listed)
        except PropertyPathError as error:
            self.diagnostics.append(f"{urn}: replaceOnChanges: {error}")
            self.saw_error = True
            raise _Bail(str(error)) from error

    def dependent_replacements(self, root: State) -> list[tuple[State, tuple, str]]:
        """``calculateDependentReplacements``: the state's dependents of ``root`` (``DependingOn``, skipping what is
        already registered) that would be replaced: their provider is in the set, or their provider's ``Diff`` with
        the inputs that depend on the set made unknown asks for a replacement."""
        if id(root) not in self.index:
            return []
        impossible = self.creates | self.sames | self.updates | self.deletes | self.replaces
        replace_set = {root.urn}
        chain: list[tuple[State, tuple, str]] = []
        for candidate in self.depending_on(root, impossible):
            if not candidate.custom or candidate.external:
                continue
            if candidate.provider and candidate.provider_urn in replace_set:
                chain.append((candidate, (), f"its provider {candidate.provider_urn.rsplit('::', 1)[-1]} is replaced"))
                replace_set.add(candidate.urn)
                continue
            inputs, hit = {}, False
            for key, value in candidate.inputs.items():
                if any(dep in replace_set for dep in candidate.property_dependencies.get(key, [])):
                    hit, value = True, UNKNOWN
                inputs[key] = value
            if not hit:
                continue
            provider = self.engine.provider_for(candidate.type)
            if is_provider(candidate.type):
                verdict = self.config_diff(candidate, replace(candidate, inputs=inputs))
            elif provider.diff is not None:
                verdict = provider.diff(candidate.urn, candidate, inputs, True)
            else:
                verdict = DiffResult()
            if verdict.changes is not False and candidate.replace_on_changes:
                changed = verdict.changed_keys or [k for k in inputs if inputs[k] != candidate.inputs.get(k)]
                extra = self.replace_on_changes(candidate.urn, changed, candidate.replace_on_changes)
                verdict = replace(verdict, replace_keys=sorted(set(verdict.replace_keys) | set(extra)))
            if verdict.replace:
                chain.append((candidate, tuple(verdict.replace_keys),
                              f"its inputs {', '.join(verdict.replace_keys)} come from a replaced resource and would replace it"))
                replace_set.add(candidate.urn)
        return chain

    def replaced_with(self, urn: str) -> list[tuple[State, tuple, str]]:
        """``findResourcesReplacedWith``: the registered and the old resources whose ``replaceWith`` names ``urn``
        (upstream walks Go maps, in no fixed order; here registration order, then state order)."""
        found, seen = [], set()
        for state in list(self.news.values()) + [s for s in self.olds if not s.delete]:
            if state.urn not in seen and urn in state.replace_with:
                found.append((state, (), f"its replaceWith names {urn.rsplit('::', 1)[-1]}"))
                seen.add(state.urn)
        return found

    def depending_on(self, root: State, ignore: set[str]) -> list[State]:
        """``DependencyGraph.DependingOn`` (includeChildren false) over the old state."""
        found, members = [], {root.urn}
        for candidate in self.olds[self.index[id(root)] + 1:]:
            if candidate.urn in ignore:
                continue
            deps = [u for kind, u in candidate.all_dependencies() if kind != "parent"]
            if any(u in members for u in deps) or (candidate.provider and candidate.provider_urn in members):
                found.append(candidate)
                members.add(candidate.urn)
        return found

    # --- execution ----------------------------------------------------------------------------------------------

    def record(self, op: str, urn: str, keys: tuple = (), note: str = "") -> None:
        self.steps.append(Step(op, urn, tuple(keys), note))

    def apply(self, step: tuple, new: State) -> Optional[State]:
        kind = step[0]
        provider = self.engine.provider_for(new.type)
        if kind in ("same", "same-untargeted"):
            old = step[1]
            state = copy.deepcopy(old) if kind == "same-untargeted" else replace(
                copy.deepcopy(new), id=old.id, outputs=copy.deepcopy(old.outputs))
            if kind == "same" and not new.custom:
                state.outputs = copy.deepcopy(old.outputs)
            self._finish(state, old)
            self.record("same", state.urn, note="not targeted" if kind == "same-untargeted" else "")
            return state
        if kind == "skipped-create":
            self.record("same", new.urn, note="skipped create: not targeted")
            return None
        if kind == "create":
            state = self._create(new, provider)
            self._finish(state, None)
            self.record("create", new.urn)
            return state
        if kind == "update":
            old = step[1]
            outputs = dict(new.inputs)
            # A provider resource is updated by the engine's registry (providers.Registry.Update: the new inputs), not the plugin.
            if new.custom and not self.preview and provider.update is not None and not is_provider(new.type):
                try:
                    outputs = provider.update(new.urn, old, new.inputs, self.preview)
                except ProviderError as failure:
                    self.record("update", new.urn, note=f"failed: {failure}")
                    raise
            state = replace(copy.deepcopy(new), id=old.id, outputs=outputs)
            self._finish(state, old)
            self.record("update", new.urn)
            return state
        if kind == "replace":
            self.record("replace", new.urn, step[2])
            return None
        if kind == "create-replacement":
            old = step[1]
            try:
                state = self._create(new, provider)
            except ProviderError:
                self.record("create-replacement", new.urn, step[2], "failed")
                raise
            if step[4]:  # NewCreateReplacementStep(..., pendingDelete): the old one is deleted at the end
                old.delete = True
            elif old.pending_replacement and not self.preview:
                self.done.add(id(old))  # createSnapshotMutation.End: the pending replacement is flushed
            self._finish(state, None)
            self.record("create-replacement", new.urn, step[2], step[3])
            return state
        if kind == "delete-pending":
            self.delete(step[1], replacing=False, note=step[3])
            return None
        if kind == "delete-replaced":
            victim = step[1]
            self.delete(victim, replacing=True, note=step[3] if len(step) > 3 else "", pending_replace=True)
            return None
        raise AssertionError(kind)

    def _create(self, new: State, provider: Provider) -> State:
        state = copy.deepcopy(new)
        if not new.custom:
            state.outputs = {}
            return state
        if self.preview:
            state.id = ""
            if is_provider(new.type):
                state.id = UNKNOWN
            state.outputs = dict(new.inputs)
            return state
        if is_provider(new.type):  # the engine's provider registry makes the id (a UUID), not the plugin
            state.id, state.outputs = self.engine.new_id("provider"), dict(new.inputs)
        elif provider.create is not None:
            state.id, state.outputs = provider.create(new.urn, new.inputs, False)
        else:
            state.id, state.outputs = self.engine.new_id(), dict(new.inputs)
        return state

    def _finish(self, state: State, old: Optional[State]) -> None:
        if old is not None:
            self.done.add(id(old))
        self.news[state.urn] = state
        self.new_order.append(state.urn)

    def delete(self, victim: State, replacing: bool, note: str = "", pending_replace: bool = False) -> None:
        """``DeleteStep.Apply``: refuse a protected resource unless replacing; call the provider's Delete unless in
        preview, external, ``retainOnDelete``, or its ``deletedWith`` target is deleted in this run. The delete of a
        delete-first replacement (``pending_replace``) keeps the old state, marked ``pendingReplacement``, until its
        replacement is created (``deleteSnapshotMutation.End``)."""
        op = "delete-replaced" if replacing else "delete"
        if not replacing and victim.protect:
            # stepExecutor.cancelDueToError: a deleteProtectedError never cancels the operation, so every refused
            # delete is reported (in preview too); performPostSteps skips the deletes of what it depends on.
            self.record(op, victim.urn, note="refused: protected")
            self.diagnostics.append(f'resource "{victim.urn}" cannot be deleted\nbecause it is protected. To '
                                    "unprotect the resource, either remove the `protect` flag from the resource in "
                                    "your Pulumi program and run `pulumi up`, or use the command:\n"
                                    f"`pulumi state unprotect '{victim.urn}'`")
            self.saw_error = True
            self.refused.append(victim)
            return
        why = note
        if not self.preview and victim.custom and not victim.external and not is_provider(victim.type):
            if victim.retain_on_delete:
                why = (why + "; " if why else "") + "retainOnDelete: left in the cloud, only dropped from the state"
            elif victim.deleted_with and victim.deleted_with in self.deletes:
                why = (why + "; " if why else "") + f"deleted with {victim.deleted_with.rsplit('::', 1)[-1]}"
            else:
                provider = self.engine.provider_for(victim.type)
                if provider.delete is not None:
                    try:
                        provider.delete(victim)
                    except ProviderError as failure:
                        self.record(op, victim.urn, note=f"failed: {failure}")
                        raise
        if pending_replace:  # DeleteStep.Apply sets it once the delete is done, in a preview as well
            victim.pending_replacement = True
        elif not self.preview:
            self.done.add(id(victim))
        self.record(op, victim.urn, note=why)

    def refresh_all(self) -> set[int]:
        """``GenerateRefreshes`` and ``RefreshStep.Apply``: a refresh step for every resource (only the ``--target``s
        when given), pending deletes included; components, providers and resources pending replacement are not read
        (they never change). The id() of those the provider says are gone."""
        gone = set()
        for state in self.olds:
            if self.targets and state.urn not in self.targets:
                # deploymentExecutor.refresh: with --target-dependents, what depends on a target (its children
                # included) is refreshed and becomes a target in turn.
                if not (self.target_dependents and any(u in self.targets for _, u in state.all_dependencies())):
                    continue
                self.targets.add(state.urn)
            if not state.custom or is_provider(state.type) or state.pending_replacement:
                self.record("refresh", state.urn)
                continue
            provider = self.engine.provider_for(state.type)
            outputs = provider.read(state) if provider.read is not None else state.outputs
            self.record("refresh", state.urn, note="gone: dropped from the state" if outputs is None else "")
            if outputs is None:
                gone.add(id(state))
            else:  # RefreshStep.Apply reads in a preview too; the program sees what it read
                state.outputs = outputs
        return gone

    def rebuild_base_state(self, gone: set[int]) -> list[State]:
        """``rebuildBaseState``: the state without what a refresh found gone. A dependency, property dependency,
        ``deletedWith`` or ``replaceWith`` on a URN that no resource *earlier* in the state still holds is dropped
        (a pending-delete copy still holds it); a parent gone is replaced as ``undangleParentResources`` does."""
        kept, referenceable = [], set()
        for state in self.olds:
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

    def generate_deletes(self, destroy: bool) -> None:
        """``GenerateDeletes`` and ``ScheduleDeletes``: olds marked for deletion (create-first replacements) and olds
        the program did not register (all of them for ``destroy``), dependents first; untargeted olds get a same
        step."""
        if destroy:
            allowed = self.destroy_targets()
        elif self.targets:  # determineAllowedResourcesToDeleteFromTargets: the targets and all that depends on them
            allowed = self.target_closure()
        else:
            allowed = {state.urn for state in self.olds}
        victims: list[tuple[State, str, str]] = []
        for state in self.olds:
            if id(state) in self.done:
                continue
            untargeted = state.urn not in allowed
            if untargeted:
                # An untargeted resource not operated on: a SameStep of it, run before the deletes.
                if state.urn not in self.sames | self.updates | self.replaces:
                    self.record("same", state.urn, note="not targeted")
                    if not self.preview:
                        self.carried.append(copy.deepcopy(state))
                        self.done.add(id(state))
                continue
            if state.delete:
                if id(state) in self.pending_deletes:
                    continue
                victims.append((state, "delete-replaced", "old resource of a create-first replacement"))
            elif destroy or not self.is_operated_on(state.urn):
                if state.pending_replacement:
                    victims.append((state, "remove-pending-replace", "removed from the program while pending replacement"))
                else:
                    victims.append((state, "delete", "removed from the program" if not destroy else "destroy"))
        if self.targets and not destroy and not self.target_dependents:
            # GenerateDeletes: deleting what --target does not name is refused (diagnostic 2014); an update stops
            # before any delete runs, a preview reports it and goes on.
            stray = [state.urn for state, op, _ in victims if op == "delete" and state.urn not in self.targets]
            for urn in stray:
                self.diagnostics.append(f"Resource '{urn}' will be destroyed but was not specified in --target list.\n"
                                        "Either include resource in --target list or pass --target-dependents to proceed.")
                self.saw_error = True
            if stray and not self.preview:
                raise _Bail("delete untargeted resource")
        # GenerateDeletes marks each of them in sg.deletes before any runs: a deletedWith target among them skips
        # its dependents' provider Delete (isDeletedWith), whatever the order.
        self.deletes.update(state.urn for state, _, _ in victims)
        for state, op, note in self.schedule(victims):
            if any(id(state) in self.transitive_dependencies(r) for r in self.refused):
                continue  # performPostSteps: a dependency of a refused delete is not deleted
            if op == "remove-pending-replace":
                if not self.preview:
                    self.done.add(id(state))
                self.record(op, state.urn, note=note)
            else:
                self.delete(state, replacing=(op == "delete-replaced"), note=note)

    def is_operated_on(self, urn: str) -> bool:
        """``isOperatedOn``: a same, update, replace (or read/refresh) this run; deliberately not a delete, so a
        member of a delete-first chain the program no longer registers still gets its step here."""
        return urn in self.sames or urn in self.updates or urn in self.replaces

    def transitive_dependencies(self, root: State) -> set[int]:
        """``DependencyGraph.TransitiveDependenciesOf`` over the old state: ``id()`` of what ``root`` depends on,
        directly or not, parents' dependencies included. A URN held by a live and a pending-delete copy names the
        live one, or the pending-delete one from a resource pending deletion."""
        pending = {s.urn: s for s in self.olds if s.delete}
        live = {s.urn: s for s in self.olds if not s.delete}

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

    def target_closure(self) -> set[str]:
        """``getTargetDependents``: the targets and, transitively, what depends on them in the old state (children,
        dependencies of any kind, the provider), whatever ``--target-dependents`` says."""
        closure = {state.urn for state in self.olds if state.urn in self.targets}
        changed = True
        while changed:
            changed = False
            for state in self.olds:
                if state.urn not in closure and any(u in closure for u in _dependencies_of(state)):
                    closure.add(state.urn)
                    changed = True
        return closure

    def destroy_targets(self) -> set[str]:
        urns = [s.urn for s in self.olds]
        if not self.targets:
            return set(urns)
        allowed = set(self.targets)
        if self.target_dependents:
            for state in self.olds:
                deps = [u for _, u in state.all_dependencies()] + ([state.provider_urn] if state.provider else [])
                if any(u in allowed for u in deps):
                    allowed.add(state.urn)
        else:
            for state in self.olds:
                if state.urn in allowed:
                    continue
                deps = [u for _, u in state.all_dependencies()] + ([state.provider_urn] if state.provider else [])
                if any(u in allowed for u in deps):
                    raise _Bail(f"Cannot delete the targets: resource '{state.urn}' depends on them and is not "
                                "targeted (use --target-dependents)")
        return allowed

    def schedule(self, victims: list[tuple[State, str, str]]) -> list[tuple[State, str, str]]:
        """``ScheduleDeletes``: layers built from the roots (a condemned resource whose dependencies, parent and
        provider included (``DependenciesOf``), are no longer condemned), then reversed, so dependents go first.
        Upstream a layer runs in parallel; here in reverse state order."""
        condemned = list(victims)
        layers: list[list[tuple[State, str, str]]] = []
        while condemned:
            urns = {v[0].urn for v in condemned}
            layer = [v for v in condemned if not (set(_dependencies_of(v[0])) & (urns - {v[0].urn}))]
            if not layer:  # a valid state has no cycle; keep going in reverse state order
                layer = condemned[:]
            layer.sort(key=lambda v: -self.index.get(id(v[0]), -1))
            layers.append(layer)
            condemned = [v for v in condemned if all(v is not w for w in layer)]
        return [victim for layer in reversed(layers) for victim in layer]

    def snapshot(self) -> list[State]:
        """``SnapshotManager.Snap``: the resources this run wrote, in the order they completed (the untargeted ones
        GenerateDeletes carries over after the registered ones), then the old resources not done with (pending
        deletes, pending replacements, refused deletes) in their old order. A preview writes nothing."""
        if self.preview:
            return [copy.deepcopy(s) for s in self.original]
        written = [self.news[u] for u in self.new_order if u in self.news and id(self.news[u]) not in self.done]
        return written + self.carried + [s for s in self.olds if id(s) not in self.done]


def process_ignore_changes(inputs: dict, old_inputs: dict, paths: Iterable[str]) -> dict:
    """``processIgnoreChanges``: each ignored property path (``key`` or ``key.sub``) takes its old value (absent when
    it was absent); a path that runs through something missing on either side is left as it is
    (``PropertyPath.Reset``)."""
    result = copy.deepcopy(inputs)
    for path in paths:
        keys = path.split(".")
        old_parent, new_parent = old_inputs, result
        for key in keys[:-1]:
            if not (isinstance(old_parent, dict) and isinstance(new_parent, dict) and key in old_parent and key in new_parent):
                old_parent = new_parent = None
                break
            old_parent, new_parent = old_parent[key], new_parent[key]
        if not isinstance(old_parent, dict) or not isinstance(new_parent, dict):
            continue
        last = keys[-1]
        if last in old_parent:
            new_parent[last] = copy.deepcopy(old_parent[last])
        else:
            new_parent.pop(last, None)
    return result


def _dependencies_of(state: State) -> list[str]:
    return [u for _, u in state.all_dependencies()] + ([state.provider_urn] if state.provider else [])


def _should_trigger_replace(new: Any, old: Any) -> bool:
    """``shouldTriggerReplace``: an unknown on either side triggers; a null on either side does not."""
    if contains_unknown(old) or contains_unknown(new):
        return True
    if old is None or new is None:
        return False
    return json.dumps(new, sort_keys=True) != json.dumps(old, sort_keys=True)


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
