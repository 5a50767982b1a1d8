"""The step executor: applying a step to the providers and the state being written.

Owns: :class:`StepExecutor`, how each step runs (``SameStep``, ``CreateStep`` with a create-first replacement
marking the old resource for deletion, ``UpdateStep``, ``DeleteStep.Apply``: protected deletes refused unless
replacing, nothing deleted for ``retainOnDelete``, external resources or a ``deletedWith`` target deleted in the same
run; the delete of a delete-first replacement marking the old ``pendingReplacement``). Input: step tuples from the
step generator. Output: recorded :class:`~offline.engine.resource.Step`s and new states. Errors:
:class:`~offline.engine.resource.ProviderError` from a provider call, re-raised after the failed step is recorded.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/step.go
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Optional

from offline.engine.resource import UNKNOWN, Provider, ProviderError, State, Step, is_provider


class StepExecutor:
    """Mixed into :class:`~offline.engine.deployment.Deployment`, which holds ``engine``, ``preview``, ``steps``,
    ``news``, ``done``, ``deletes`` and the diagnostics."""

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
            # A provider resource is updated by the engine's registry (providers.Registry.Update: the new inputs),
            # not the plugin.
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
