"""The engine's entry points: ``pulumi up``, ``preview``, ``destroy`` and ``refresh`` over a state.

Owns: :class:`Engine` (the operations), :class:`Monitor` (what a program registers with) and :class:`Deployment`
(one operation: ``deploymentExecutor``'s loop over the program's registrations, ``checkTargets``, the deletes, the
refresh, the snapshot written). Input: a program (a callable taking a :class:`Monitor`), a state, providers; output:
a :class:`~offline.engine.resource.Result`. Errors: a failed operation is ``Result.error``, never an exception.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/deployment_executor.go
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Mapping, Optional

from offline.engine.resource import (
    Bail,
    EngineError,
    Provider,
    ProviderError,
    Registered,
    Result,
    State,
    Step,
    is_provider,
    package_of,
)
from offline.engine.snapshot import rebuild_base_state, verify_integrity
from offline.engine.step_executor import StepExecutor
from offline.engine.step_generator import StepGenerator


class Engine:
    """Runs operations for one stack. ``providers``: package name (``pkgA``, ``azure-native``) -> :class:`Provider`.
    The state is a list of :class:`State` in topological order, as the engine writes it."""

    def __init__(self, providers: Mapping[str, Provider], stack: str = "test", project: str = "test") -> None:
        self.providers = dict(providers)
        self.stack, self.project = stack, project
        self._ids = 0
        #: new URN -> the old URN it took through an alias, in the operation running (providers' diffs read it)
        self.aliases: dict[str, str] = {}

    # --- operations -----------------------------------------------------------------------------------------------

    def update(self, program: Callable[["Monitor"], None], snapshot: Iterable[State] = (), *, preview: bool = False,
               targets: Iterable[str] = (), target_dependents: bool = False, replace: Iterable[str] = (),
               refresh: bool = False) -> Result:
        """``pulumi up`` (``preview=True``: ``pulumi preview``) of ``program`` over ``snapshot``. ``targets``:
        ``--target`` URNs; ``replace``: ``--replace`` URNs; ``refresh``: ``--refresh`` (each resource is read
        before it is diffed; one that is gone is created again)."""
        olds = [copy.deepcopy(s) for s in snapshot]
        run = Deployment(self, olds, preview, set(targets), target_dependents, set(replace))
        self.aliases = run.alias_of
        if refresh:
            gone = run.refresh_all()
            run.olds = rebuild_base_state(run.olds, gone)
            run.rebuild()
        return run.execute(program)

    def destroy(self, snapshot: Iterable[State], *, preview: bool = False, targets: Iterable[str] = (),
                target_dependents: bool = False) -> Result:
        """``pulumi destroy`` (without ``--run-program``): every resource, or the ``targets`` (and with
        ``target_dependents`` what depends on them), deleted dependents first."""
        olds = [copy.deepcopy(s) for s in snapshot]
        run = Deployment(self, olds, preview, set(targets), target_dependents, set())
        return run.execute(None)

    def refresh(self, snapshot: Iterable[State], *, preview: bool = False, targets: Iterable[str] = (),
                target_dependents: bool = False) -> Result:
        """``pulumi refresh`` (``targets``: ``--target`` URNs, the only resources refreshed, with
        ``target_dependents`` what depends on them too): each custom resource read; one the provider says is gone
        leaves the state, and the dependencies of the others on it are dropped (``TestRefreshDeleteDependencies``)."""
        olds = [copy.deepcopy(s) for s in snapshot]
        run = Deployment(self, olds, preview, set(targets), target_dependents, set())
        gone = run.refresh_all()
        kept = rebuild_base_state(run.olds, gone)
        return Result(run.steps, kept if not preview else [copy.deepcopy(s) for s in snapshot], None, run.diagnostics)

    def new_id(self, prefix: str = "id") -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"

    def provider_for(self, type_: str) -> Provider:
        return self.providers.get(package_of(type_), Provider())


class Monitor:
    """What the program registers resources with (the resource monitor). ``register`` returns :class:`Registered`."""

    def __init__(self, run: "Deployment") -> None:
        self._run = run

    def register(self, type_: str, name: str, custom: bool = True, *, inputs: Optional[dict] = None,
                 parent: Optional[str] = None, provider: Optional[str] = None, dependencies: Iterable[str] = (),
                 property_dependencies: Optional[Mapping[str, list]] = None, protect: Optional[bool] = None,
                 retain_on_delete: Optional[bool] = None, delete_before_replace: Optional[bool] = None,
                 deleted_with: Optional[str] = None, replace_with: Iterable[str] = (),
                 replace_on_changes: Iterable[str] = (), ignore_changes: Iterable[str] = (),
                 replacement_trigger: Any = None, urn: Optional[str] = None,
                 aliases: Iterable[Mapping] = ()) -> Registered:
        """Register a resource. ``provider``: an explicit provider's URN (default: the package's default provider,
        registered on first use). ``urn`` overrides the computed URN (the offline diff replays recorded URNs).
        ``aliases``: alias specs as the SDK sends them (``urn``, or ``name``/``type``/``parentUrn``/``noParent``)."""
        try:
            return self._run.register(dict(
                type=type_, name=name, custom=custom, inputs=copy.deepcopy(inputs or {}), parent=parent,
                provider=provider, dependencies=list(dependencies),
                property_dependencies=dict(property_dependencies or {}), protect=protect,
                retain_on_delete=retain_on_delete, delete_before_replace=delete_before_replace,
                deleted_with=deleted_with, replace_with=list(replace_with), replace_on_changes=list(replace_on_changes),
                ignore_changes=list(ignore_changes), replacement_trigger=replacement_trigger, urn=urn,
                aliases=[dict(a) for a in aliases]))
        except (Bail, EngineError, ProviderError) as failure:
            # deploymentExecutor.handleSingleEvent: a failed registration cancels the operation, even when the
            # program catches the error it is answered with.
            self._run.failure = self._run.failure or failure
            raise


class Deployment(StepGenerator, StepExecutor):
    """One operation: its state, the step generator and executor it mixes in, and the deployment executor's loop
    (``deploymentExecutor.Execute``, ``refresh``)."""

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
        self.aliased: dict[str, str] = {}  # an old URN a new resource took through an alias -> the new URN
        self.alias_of: dict[str, str] = {}  # a new URN -> the old URN it took (``sg.aliases``)
        self.rebuild()

    def rebuild(self) -> None:
        self.old_by_urn = {s.urn: s for s in self.olds if not s.delete}
        self.index = {id(s): i for i, s in enumerate(self.olds)}

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
                raise Bail("; ".join(self.diagnostics))
            if unknown:
                raise Bail("one or more targets could not be found in the stack")
        except (Bail, EngineError, ProviderError) as failure:
            error = str(failure)
        snapshot = self.snapshot()
        if error is None and not self.preview:
            problem = verify_integrity(snapshot)
            if problem:
                error = f"snapshot integrity failure: {problem}"
        if error is None and self.saw_error:
            error = "; ".join(self.diagnostics)
        return Result(self.steps, snapshot, error, self.diagnostics, dict(self.alias_of))

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

    def snapshot(self) -> list[State]:
        """``SnapshotManager.Snap``: the resources this run wrote, in the order they completed (the untargeted ones
        GenerateDeletes carries over after the registered ones), then the old resources not done with (pending
        deletes, pending replacements, refused deletes) in their old order. A preview writes nothing."""
        if self.preview:
            return [copy.deepcopy(s) for s in self.original]
        written = [self.news[u] for u in self.new_order if u in self.news and id(self.news[u]) not in self.done]
        return written + self.carried + [s for s in self.olds if id(s) not in self.done]
