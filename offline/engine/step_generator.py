"""The step generator: which steps a registration, the deletes and the targets give.

Owns: :class:`StepGenerator`, the half of an operation that turns each registration into steps
(``continueStepsFromImport``, ``diff``, ``continueStepsFromDiff`` with delete-first chains, ``replaceWith`` and
``deletedWith`` cascades, replacement triggers, ``--target``/``--replace``) and schedules the deletes
(``GenerateDeletes``, ``ScheduleDeletes``); :func:`process_ignore_changes`. Input: the goal dicts
:class:`~offline.engine.deployment.Monitor` builds. Output: step tuples the step executor applies. Errors: ``Bail``
(the operation stops) and diagnostics.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/step_generator.go, with v3.277.0's
changes to it: the ``deletedWith`` cascade (v3.260.0), a skipped create answered unknown (v3.256.0), a resource
pending replacement not deleted again (v3.264.0). Decision records: docs/decisions/offline-engine.md,
docs/decisions/engine-version.md.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any, Iterable, Optional

from offline.engine.graph import dependencies_of, depending_on, transitive_dependencies
from offline.engine.property_path import PropertyPathError, replace_on_changes_keys
from offline.engine.resource import (
    STACK_TYPE,
    UNKNOWN,
    Bail,
    DiffResult,
    Registered,
    State,
    contains_unknown,
    default_urn,
    is_provider,
    package_of,
)


class StepGenerator:
    """Mixed into :class:`~offline.engine.deployment.Deployment`, which holds the operation's state (``olds``,
    ``news``, the step sets, ``targets``...) and the executor's ``apply``/``delete``."""

    def _default_provider(self, type_: str) -> str:
        package = package_of(type_)
        urn = default_urn(self.engine.stack, self.engine.project, f"pulumi:providers:{package}", "default", None)
        if urn not in self.news:
            self.register(dict(type=f"pulumi:providers:{package}", name="default", custom=True, inputs={},
                               parent=None, provider=None, dependencies=[], property_dependencies={}, protect=None,
                               retain_on_delete=None, delete_before_replace=None, deleted_with=None, replace_with=[],
                               replace_on_changes=[], ignore_changes=[], replacement_trigger=None, urn=urn,
                               aliases=[], default=True))
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
                    and package_of(inherited.split("::")[2].split("$")[-1]) == package_of(goal["type"])):
                goal["provider"] = inherited
        type_ = goal["type"]
        provider_urn = goal["provider"]
        if (goal["custom"] and not is_provider(type_) and provider_urn is None
                and not type_.startswith("pulumi:pulumi:")):
            provider_urn = self._default_provider(type_)
        parent = goal["parent"]
        if parent is None and type_ != STACK_TYPE and not goal.get("default"):
            parent = next((u for u, s in self.news.items() if s.type == STACK_TYPE), None)
        urn = goal["urn"] or default_urn(self.engine.stack, self.engine.project, type_, goal["name"], parent)
        if urn in self.urns:  # generateURN
            raise Bail(f"Duplicate resource URN '{urn}'; try giving it a unique name")
        self.urns.add(urn)
        self.goals[urn] = goal
        reference = f"{provider_urn}::{self.provider_ids.get(provider_urn, UNKNOWN)}" if provider_urn else None
        new = State(urn=urn, type=type_, custom=goal["custom"], inputs=goal["inputs"], parent=parent,
                    provider=reference, dependencies=goal["dependencies"],
                    property_dependencies=goal["property_dependencies"], protect=bool(goal["protect"]),
                    retain_on_delete=bool(goal["retain_on_delete"]), deleted_with=goal["deleted_with"],
                    replace_with=goal["replace_with"], replace_on_changes=goal["replace_on_changes"],
                    ignore_changes=goal["ignore_changes"], replacement_trigger=goal["replacement_trigger"])
        old = self.old_resource(urn, goal["name"], type_, parent, goal.get("aliases") or [])
        # continueStepsFromImport: processIgnoreChanges before Check/Diff; but Check gets the program's own inputs
        # (goal.Properties) for a resource re-created after a delete-first chain deleted it, or targeted by
        # --replace (``recreating || ... || isTargetedReplace``), so the ignored paths take the new values there.
        fresh = old is not None and (id(old) in self.pending_deletes or urn in self.replace_targets or old.taint)
        if old is not None and new.ignore_changes and not fresh:
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
        # SameStep.Apply answers a skipped create with Unknown (v3.256.0, pulumi/pulumi#24108).
        skipped = bool(steps) and steps[0][0] == "skipped-create"
        return Registered(urn, state.id, copy.deepcopy(state.outputs), unknown=skipped)

    def old_resource(self, urn: str, name: str, type_: str, parent: Optional[str],
                     aliases: list[dict]) -> Optional[State]:
        """``getOldResource``: the old state under ``urn``, else under the first of its aliases that has one (that
        old URN is then this resource's: not deleted, its provider reference matched)."""
        if urn in self.aliased:  # an earlier resource took this URN as its alias (error 2016)
            raise Bail(f"Duplicate resource URN '{urn}' conflicting with alias on resource with URN "
                       f"'{self.aliased[urn]}'")
        for candidate in [urn] + self.generate_aliases(name, type_, parent, aliases):
            old = self.old_by_urn.get(candidate)
            if old is None:
                continue
            if candidate != urn:
                if candidate in self.urns or candidate in self.aliased:
                    raise Bail(f"Duplicate resource alias '{candidate}' applied to resource with URN '{urn}'")
                self.aliased[candidate] = urn
                self.alias_of[urn] = candidate
            return old
        return None

    def generate_aliases(self, name: str, type_: str, parent: Optional[str], aliases: list[dict]) -> list[str]:
        """``generateAliases``: each alias spec collapsed to a URN, then the aliases the parent's alias gives (the
        child's name keeps a prefix that was the parent's name, renamed with it)."""
        result: list[str] = []

        def add(alias: str) -> None:
            if alias not in result:
                result.append(alias)

        collapsed = [self.collapse_alias(name, type_, parent, alias) for alias in aliases]
        for alias in collapsed:
            add(alias)
        parent_alias = self.alias_of.get(parent) if parent else None
        if parent_alias is not None:
            add(self.inherited_child_alias(type_, name, _urn_name(parent), parent_alias))
            for alias in collapsed:
                add(self.inherited_child_alias(alias.split("::")[2].split("$")[-1], _urn_name(alias),
                                               _urn_name(parent), parent_alias))
        return result

    def collapse_alias(self, name: str, type_: str, parent: Optional[str], alias: dict) -> str:
        """``collapseAliasToUrn``: an alias spec as the URN it names (unset parts: the resource's own; a parent that
        was itself aliased: its old URN; no parent, or the stack: none)."""
        if alias.get("urn"):
            return alias["urn"]
        alias_parent = alias.get("parentUrn") or ""
        if not alias_parent:
            alias_parent = parent or ""
        else:
            alias_parent = self.alias_of.get(alias_parent, alias_parent)
        if alias.get("noParent") or (alias_parent and alias_parent.split("::")[2].split("$")[-1] == STACK_TYPE):
            alias_parent = ""
        # ``resource.CreateURN``: under a parent, the parent's stack and project (an alias's own are ignored).
        stack = alias.get("stack") or self.engine.stack if not alias_parent else alias_parent.split("::")[0][11:]
        project = alias.get("project") or self.engine.project if not alias_parent else alias_parent.split("::")[1]
        return default_urn(stack, project, alias.get("type") or type_, alias.get("name") or name,
                           alias_parent or None)

    def inherited_child_alias(self, child_type: str, child_name: str, parent_name: str, parent_alias: str) -> str:
        """``inheritedChildAlias``: the child's URN under its parent's old URN."""
        alias_name = child_name
        if child_name.startswith(parent_name):
            alias_name = _urn_name(parent_alias) + child_name[len(parent_name):]
        chain = parent_alias.split("::")[2]
        return f"urn:pulumi:{self.engine.stack}::{self.engine.project}::{chain}${child_type}::{alias_name}"

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
                raise Bail(f"{kind} {dep} of untargeted resource {old.urn} has no old state")
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
                    raise Bail("untargeted create")
                self.skipped_creates.discard(dep)

    def diff(self, goal: dict, new: State, old: State) -> DiffResult:
        """``stepGenerator.diff``: ``--replace`` (or a tainted resource), a ``replaceWith`` target being replaced, the
        ``deletedWith`` target being replaced (v3.260.0: deleting it deletes this one too), a changed provider
        reference whose new provider's ``DiffConfig`` replaces, then the provider's ``Diff``."""
        if new.urn in self.replace_targets or old.taint:
            return DiffResult(True, ["id"])
        for target in new.replace_with:
            if target in self.replaces:
                return DiffResult(True, ["replaceWith"])
        if new.deleted_with and new.deleted_with in self.replaces:
            return DiffResult(True, ["deletedWith"])
        if old.provider != new.provider:
            if not old.provider or not new.provider:  # providerChanged: a component became custom, or back
                return DiffResult(True, ["provider"])
        if old.provider != new.provider and self.aliased.get(old.provider_urn) != new.provider_urn:
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
            raise Bail(f"replacement trigger contains unknowns for {urn}")
        trigger = should_trigger_replace(new.replacement_trigger, old.replacement_trigger)
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
                raise Bail(message)
        self.replaces.add(urn)
        keys = tuple(result.replace_keys)
        delete_first = result.delete_before_replace
        if goal["delete_before_replace"] is not None:
            delete_first = bool(goal["delete_before_replace"])
        if not delete_first:
            if old.pending_replacement:  # v3.264.0: its delete already ran; only the replacement is created
                return [("replace", old, keys),
                        ("create-replacement", old, keys, "pending replacement: its delete already ran", False)]
            return [("create-replacement", old, keys,
                     "create-first: the old one is deleted after every create and update", True),
                    ("replace", old, keys)]
        steps: list[tuple] = []
        chain = self.dependent_replacements(old) + self.cascade_replacements(urn)
        for dependent, dep_keys, why in reversed(chain):
            if id(dependent) in self.pending_deletes:
                continue
            if dependent.pending_replacement:  # v3.264.0: an interrupted run already deleted it; it is re-created
                continue
            if not dependent.delete and dependent.protect:
                message = (f'unable to replace resource "{dependent.urn}" as part of replacing "{urn}" as it is '
                           "currently marked for protection. To unprotect the resource, remove the `protect` flag "
                           "from the resource in your Pulumi program and run `pulumi up`, or use the command:\n"
                           f"`pulumi state unprotect '{dependent.urn}'`")  # continueStepsFromDiff's message
                self.diagnostics.append(message)
                self.saw_error = True
                raise Bail(message)
            if dependent.delete:  # already pending deletion: a plain DeleteStep (continueStepsFromDiff)
                steps.append(("delete-pending", dependent, dep_keys,
                              f"{why}; a pending delete, deleted before {old.name}"))
            else:
                steps.append(("delete-replaced", dependent, dep_keys, f"{why}; deleted before {old.name}"))
            self.deletes.add(dependent.urn)
            self.pending_deletes.add(id(dependent))
        if not old.pending_replacement:
            # v3.260.0: marked deleted before any of the chain runs, so a dependent deleted with it skips its
            # provider Delete (isDeletedWith).
            self.deletes.add(old.urn)
            steps.append(("delete-replaced", old, keys, "delete-first replacement", "pending"))
        steps += [("replace", old, keys),
                  ("create-replacement", old, keys, "delete-first: created after its delete", False)]
        return steps

    def replace_on_changes(self, urn: str, changed: Iterable[str], listed: Iterable[str]) -> list[str]:
        """:func:`replace_on_changes_keys`; a listed path that does not parse fails the operation, as upstream."""
        try:
            return replace_on_changes_keys(changed, listed)
        except PropertyPathError as error:
            self.diagnostics.append(f"{urn}: replaceOnChanges: {error}")
            self.saw_error = True
            raise Bail(str(error)) from error

    def dependent_replacements(self, root: State) -> list[tuple[State, tuple, str]]:
        """``calculateDependentReplacements``: the state's dependents of ``root`` (``DependingOn``, skipping what is
        already registered) that would be replaced: their provider is in the set, their ``deletedWith`` is
        (v3.260.0), or their provider's ``Diff`` with the inputs that depend on the set made unknown asks for a
        replacement."""
        if id(root) not in self.index:
            return []
        impossible = self.creates | self.sames | self.updates | self.deletes | self.replaces
        replace_set = {root.urn}
        chain: list[tuple[State, tuple, str]] = []
        for candidate in depending_on(self.olds, self.index, root, impossible):
            if not candidate.custom or candidate.external:
                continue
            if candidate.provider and candidate.provider_urn in replace_set:
                chain.append((candidate, (), f"its provider {candidate.provider_urn.rsplit('::', 1)[-1]} is replaced"))
                replace_set.add(candidate.urn)
                continue
            if candidate.deleted_with and candidate.deleted_with in replace_set:
                chain.append((candidate, (), f"it is deleted with {candidate.deleted_with.rsplit('::', 1)[-1]}, "
                                             "which is replaced"))
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
                              f"its inputs {', '.join(verdict.replace_keys)} come from a replaced resource and "
                              "would replace it"))
                replace_set.add(candidate.urn)
        return chain

    def cascade_replacements(self, urn: str) -> list[tuple[State, tuple, str]]:
        """``findDependentCascadeReplacements`` (``findResourcesReplacedWith`` before v3.260.0): the registered and
        the old resources whose ``replaceWith`` names ``urn`` or whose ``deletedWith`` is ``urn`` (upstream walks Go
        maps, in no fixed order; here registration order, then state order)."""
        found, seen = [], set()
        for state in list(self.news.values()) + [s for s in self.olds if not s.delete]:
            if state.urn in seen:
                continue
            if urn in state.replace_with:
                found.append((state, (), f"its replaceWith names {urn.rsplit('::', 1)[-1]}"))
            elif state.deleted_with == urn:
                found.append((state, (), f"it is deleted with {urn.rsplit('::', 1)[-1]}"))
            else:
                continue
            seen.add(state.urn)
        return found

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
                if state.pending_replacement:  # v3.264.0: a state an older CLI wrote; its delete already ran
                    victims.append((state, "remove-pending-replace", "pending deletion and already deleted"))
                    continue
                victims.append((state, "delete-replaced", "old resource of a create-first replacement"))
            elif state.urn in self.aliased and not destroy:  # taken by a new resource through an alias
                continue
            elif destroy or not self.is_operated_on(state.urn):
                if state.pending_replacement:
                    victims.append((state, "remove-pending-replace",
                                    "removed from the program while pending replacement"))
                else:
                    victims.append((state, "delete", "removed from the program" if not destroy else "destroy"))
        if self.targets and not destroy and not self.target_dependents:
            # GenerateDeletes: deleting what --target does not name is refused (diagnostic 2014); an update stops
            # before any delete runs, a preview reports it and goes on.
            stray = [state.urn for state, op, _ in victims if op == "delete" and state.urn not in self.targets]
            for urn in stray:
                self.diagnostics.append(f"Resource '{urn}' will be destroyed but was not specified in --target list.\n"
                                        "Either include resource in --target list or pass --target-dependents "
                                        "to proceed.")
                self.saw_error = True
            if stray and not self.preview:
                raise Bail("delete untargeted resource")
        # GenerateDeletes marks each of them in sg.deletes before any runs: a deletedWith target among them skips
        # its dependents' provider Delete (isDeletedWith), whatever the order.
        self.deletes.update(state.urn for state, _, _ in victims)
        for state, op, note in self.schedule(victims):
            if any(id(state) in transitive_dependencies(self.olds, r) for r in self.refused):
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

    def target_closure(self) -> set[str]:
        """``getTargetDependents``: the targets and, transitively, what depends on them in the old state (children,
        dependencies of any kind, the provider), whatever ``--target-dependents`` says."""
        closure = {state.urn for state in self.olds if state.urn in self.targets}
        changed = True
        while changed:
            changed = False
            for state in self.olds:
                if state.urn not in closure and any(u in closure for u in dependencies_of(state)):
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
                    raise Bail(f"Cannot delete the targets: resource '{state.urn}' depends on them and is not "
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
            layer = [v for v in condemned if not (set(dependencies_of(v[0])) & (urns - {v[0].urn}))]
            if not layer:  # a valid state has no cycle; keep going in reverse state order
                layer = condemned[:]
            layer.sort(key=lambda v: -self.index.get(id(v[0]), -1))
            layers.append(layer)
            condemned = [v for v in condemned if all(v is not w for w in layer)]
        return [victim for layer in reversed(layers) for victim in layer]


def process_ignore_changes(inputs: dict, old_inputs: dict, paths: Iterable[str]) -> dict:
    """``processIgnoreChanges``: each ignored property path (``key`` or ``key.sub``) takes its old value (absent when
    it was absent); a path that runs through something missing on either side is left as it is
    (``PropertyPath.Reset``)."""
    result = copy.deepcopy(inputs)
    for path in paths:
        keys = path.split(".")
        old_parent, new_parent = old_inputs, result
        for key in keys[:-1]:
            if not (isinstance(old_parent, dict) and isinstance(new_parent, dict)
                    and key in old_parent and key in new_parent):
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



def should_trigger_replace(new: Any, old: Any) -> bool:
    """``shouldTriggerReplace``: an unknown on either side triggers; a null on either side does not."""
    if contains_unknown(old) or contains_unknown(new):
        return True
    if old is None or new is None:
        return False
    return json.dumps(new, sort_keys=True) != json.dumps(old, sort_keys=True)


def _urn_name(urn: str) -> str:
    """``URN.Name()``: everything after the type (a name may hold ``::``)."""
    return urn.split("::", 3)[3]
