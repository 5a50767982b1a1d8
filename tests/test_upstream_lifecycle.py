"""Cases ported from pulumi/pulumi v3.230.0 (commit ae2e269861eabd2b692984e7286bec78777ba352)
``pkg/engine/lifecycletest`` onto the offline engine (:mod:`offline.engine`): the same program, the same
provider fakes, the same sequence of operations and the same assertions on steps, provider calls and the state
written. docs/offline.md, "Upstream lifecycle cases", lists them with what each proves for this stack and the cases
not modelled. The cases of HEAD's ``deleted_with_replace_test.go`` (behaviour added in v3.251.0) run HEAD's programs
and assert what v3.230.0 does instead.

How the Go test framework is translated:

- ``deploytest.Provider``: :func:`deploytest` gives a :class:`Provider` whose unset callables behave as deploytest's
  do (``Create``: a fresh UUID and *no* outputs; ``Diff``/``DiffConfig``: an unknown answer, so the engine compares
  inputs; ``Read``: the state as it is; ``Update``: the new inputs; ``Delete``: success).
- ``plugin.DiffResult{}`` is ``DiffResult()`` (changes unknown); ``Changes: DiffSome`` is ``changes=True``,
  ``DiffNone`` is ``changes=False``; a ``ReplaceKeys`` without ``Changes`` keeps ``changes=None``: the engine then
  compares inputs and replaces only when some input changed (``diffResource``).
- ``lt.TestPlan.Run`` runs a preview first, which must succeed (or fail, for ``ExpectFailure``, and then the update
  is not run): :func:`run_plan`. ``lt.TestOp(...).RunStep`` runs the operation alone.
- ``SuccessfulSteps(entries)`` is :func:`successful`: the steps the engine ran, without those that failed.
- ``deploytest.ResourceMonitor`` takes a provider *reference* ``urn::id``; the offline monitor takes the provider's URN
  and looks the id up. A ``--target`` glob is given as the one URN it matches in that test.
- Upstream loads a snapshot whose custom resources name no provider by prepending a default provider
  (``deployment.go`` ``addDefaultProviders``); the snapshots built by hand in the Go tests rely on it, the offline
  engine takes states as recorded (all with providers), so :func:`add_default_providers` does it here.
- The offline monitor parents a resource registered without a parent to the stack (the Python SDK does that);
  ``deploytest``'s monitor does not. No case below depends on it.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from typing import Callable, Iterable, Optional

import pytest

from offline.engine import (UNKNOWN, DiffResult, Engine, Provider, ProviderError, Result, State,
                                  verify_integrity)

COMMIT = "ae2e269861eabd2b692984e7286bec78777ba352"
TYP = "pkgA:m:typA"
PROV_TYPE = "pulumi:providers:pkgA"
DEFAULT_PROVIDER = "urn:pulumi:test::test::pulumi:providers:pkgA::default"


def urn(type_: str, name: str, stack: str = "test", project: str = "test") -> str:
    return f"urn:pulumi:{stack}::{project}::{type_}::{name}"


def deploytest(diff=None, diff_config=None, create=None, update=None, delete=None, read=None) -> Provider:
    """``deploytest.Provider`` with its defaults for the callables left unset (``CreateF`` nil: a new UUID and an
    empty property map)."""
    return Provider(diff=diff, diff_config=diff_config,
                    create=create or (lambda _urn, _inputs, _preview: (str(uuid.uuid4()), {})),
                    update=update, delete=delete, read=read)


def successful(result: Result) -> list[tuple[str, str]]:
    """``SuccessfulSteps``: ``(op, urn)`` of the steps that did not fail."""
    return [(s.op, s.urn) for s in result.steps if not s.note.startswith(("failed", "refused"))]


def run_plan(engine: Engine, program, snapshot=(), *, expect_failure: bool = False, skip_preview: bool = False,
             **options) -> Optional[Result]:
    """``lt.TestPlan.Run`` with one step: a preview (its error asserted), then the update unless a failure was
    expected (the framework stops after the failed preview). Returns the update's result."""
    if not skip_preview:
        preview = engine.update(program, snapshot, preview=True, **options)
        if expect_failure:
            assert preview.error, "the preview was expected to fail"
            return None
        assert preview.error is None, preview.error
    result = engine.update(program, snapshot, **options)
    if expect_failure:
        assert result.error
    else:
        assert result.error is None, result.error
    return result


def names(snapshot: Iterable[State]) -> list[str]:
    return [s.name for s in snapshot]


def add_default_providers(resources: list[State], stack: str = "test", project: str = "test") -> list[State]:
    """``deployment.go`` ``addDefaultProviders``: each custom, non-provider resource that names no provider gets its
    package's default provider (a new UUID, the package config as inputs and outputs), prepended to the state."""
    prepend, refs = [], {}
    for res in resources:
        if res.type.startswith("pulumi:providers:") or not res.custom or res.provider:
            continue
        package = res.type.split(":")[0]
        if package not in refs:
            provider_urn = urn(f"pulumi:providers:{package}", "default", stack, project)
            provider_id = str(uuid.uuid4())
            prepend.append(State(urn=provider_urn, type=f"pulumi:providers:{package}", id=provider_id))
            refs[package] = f"{provider_urn}::{provider_id}"
        res.provider = refs[package]
    return prepend + resources


# --- delete_before_replace_test.go: generateComplexTestDependencyGraph ----------------------------------------------

COMPLEX_NAMES = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L"]


def complex_graph():
    """``generateComplexTestDependencyGraph``: A, C and D are pkgA providers; the old state (``newResource``: an
    input ``"foo"`` per property dependency key) and the program that registers all twelve again.

    ::

                     A
            _________|_________
            B        C        D
                  ___|___  ___|___
                  E  F  G  H  I  J
                     |__|
                     K  L
    """
    urns = {n: urn(PROV_TYPE if n in "ACD" else TYP, n) for n in COMPLEX_NAMES}

    def new_resource(name, id_, provider="", deps=(), prop_deps=None, outputs=None):
        prop_deps = prop_deps or {}
        return State(urn=urns[name], type=urns[name].split("::")[2], id=id_, provider=provider or None,
                     inputs={k: "foo" for k in prop_deps}, outputs=dict(outputs or {}),
                     dependencies=[urns[d] for d in deps],
                     property_dependencies={k: [urns[d] for d in v] for k, v in prop_deps.items()})

    old = [
        new_resource("A", "0", outputs={"A": "foo"}),
        new_resource("B", "1", provider=urns["A"] + "::0"),
        new_resource("C", "2", deps=["A"], prop_deps={"A": ["A"]}, outputs={"A": "bar"}),
        new_resource("D", "3", deps=["A"], prop_deps={"B": ["A"]}),
        new_resource("E", "4", provider=urns["C"] + "::2"),
        new_resource("F", "5", deps=["C"], prop_deps={"A": ["C"]}),
        new_resource("G", "6", deps=["C"], prop_deps={"B": ["C"]}),
        new_resource("H", "4", provider=urns["D"] + "::3"),
        new_resource("I", "5", deps=["D"], prop_deps={"A": ["D"]}),
        new_resource("J", "6", deps=["D"], prop_deps={"B": ["D"]}),
        new_resource("K", "7", deps=["F", "G"], prop_deps={"A": ["F", "G"]}),
        new_resource("L", "8", deps=["F", "G"], prop_deps={"B": ["F", "G"]}),
    ]
    assert verify_integrity(old) is None

    def program(monitor):
        def register(name, provider=None, inputs=None):
            type_ = urns[name].split("::")[2]
            return monitor.register(type_, name, True, provider=provider, inputs=inputs or {})

        register("A", inputs={"A": "bar"})
        register("B", provider=urns["A"])
        register("C")
        register("D")
        register("E", provider=urns["C"])
        register("F")
        register("G")
        register("H", provider=urns["D"])
        register("I")
        register("J")
        register("K")
        register("L")

    return urns, old, program


def changed_a_diff(urn_, old: State, new_inputs, preview):
    """The graph tests' DiffF: ``ReplaceKeys [A]`` (changes unknown) when ``A`` differs from the old output."""
    if old.outputs.get("A") != new_inputs.get("A"):
        return DiffResult(replace_keys=["A"])
    return DiffResult()


# --- retain_on_delete_test.go ---------------------------------------------------------------------------------------

def test_TestRetainOnDelete():
    """pkg/engine/lifecycletest/retain_on_delete_test.go, TestRetainOnDelete, pulumi/pulumi v3.230.0 (ae2e2698)."""
    counter = {"id": 0}
    deletes = []

    def diff(_urn, old, new_inputs, _preview):
        if old.outputs.get("foo") != new_inputs.get("foo"):
            return DiffResult(True, ["foo"])
        return DiffResult()

    def create(_urn, inputs, _preview):
        resource_id = f"created-id-{counter['id']}"
        counter["id"] += 1
        return resource_id, dict(inputs)

    engine = Engine({"pkgA": deploytest(diff=diff, create=create, delete=lambda old: deletes.append(old.urn))})
    state = {"ins": {"foo": "bar"}, "create": True}

    def program(monitor):
        if state["create"]:
            monitor.register(TYP, "resA", True, inputs=state["ins"], retain_on_delete=True)

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 2
    assert result.snapshot[1].id == "created-id-0"

    # A replace: no provider Delete, a new id.
    state["ins"] = {"foo": "baz"}
    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert len(result.snapshot) == 2
    assert result.snapshot[1].id == "created-id-1"

    # A delete: still no provider Delete.
    state["create"] = False
    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert len(result.snapshot) == 0
    assert deletes == [], "Delete was called"


# --- delete_before_replace_test.go ----------------------------------------------------------------------------------

def test_TestDeleteBeforeReplace():
    """pkg/engine/lifecycletest/delete_before_replace_test.go, TestDeleteBeforeReplace, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    urns, old, program = complex_graph()

    def diff_config(urn, old_inputs, new_inputs):
        # Upstream compares req.OldOutputs; the offline DiffConfig gets the old inputs. For this graph both give the
        # same verdicts (A: {} and {"A": "foo"} both differ from "bar"; C: {"A": "foo"} and {"A": "bar"} both differ
        # from an unknown; D has no "A" either way).
        if old_inputs.get("A") != new_inputs.get("A"):
            return DiffResult(replace_keys=["A"], delete_before_replace=True)
        return DiffResult()

    engine = Engine({"pkgA": deploytest(diff=changed_a_diff, diff_config=diff_config)})
    result = run_plan(engine, program, add_default_providers(old), skip_preview=True)
    replaced = {u for op, u in successful(result) if op == "replace"}
    assert replaced == {urns[n] for n in "ABCEFK"}


def test_TestExplicitDeleteBeforeReplace():
    """pkg/engine/lifecycletest/delete_before_replace_test.go, TestExplicitDeleteBeforeReplace, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    dbr_diff = {"value": False}

    def diff(_urn, old, new_inputs, _preview):
        if old.outputs.get("A") != new_inputs.get("A"):
            return DiffResult(replace_keys=["A"], delete_before_replace=dbr_diff["value"])
        return DiffResult()

    engine = Engine({"pkgA": deploytest(diff=diff)})
    res_type = "pkgA:index:typ"
    inputs_a, inputs_b = {"A": "foo"}, {"A": "foo"}
    dbr_a = {"value": None}
    prov_urn, urn_a, urn_b = urn(PROV_TYPE, "provA"), urn(res_type, "resA"), urn(res_type, "resB")

    def program(monitor):
        prov = monitor.register(PROV_TYPE, "provA", True)
        a = monitor.register(res_type, "resA", True, provider=prov.urn, inputs=inputs_a,
                             delete_before_replace=dbr_a["value"])
        monitor.register(res_type, "resB", True, provider=prov.urn, inputs=inputs_b, dependencies=[a.urn],
                         property_dependencies={"A": [a.urn]})

    snap = run_plan(engine, program, []).snapshot

    def unordered(result, expected):
        actual = successful(result)
        assert len(actual) == len(expected)
        for step in expected:
            assert step in actual, (step, actual)

    # resA.A changes: only resA is replaced, create-before-delete.
    inputs_a["A"] = "bar"
    result = run_plan(engine, program, snap)
    unordered(result, [("same", prov_urn), ("create-replacement", urn_a), ("replace", urn_a), ("same", urn_b),
                       ("delete-replaced", urn_a)])

    # resA asks delete-before-replace and resA.A changes: resA and resB are replaced, delete-before-replace.
    dbr_a["value"], inputs_a["A"] = True, "baz"
    result = run_plan(engine, program, result.snapshot)
    assert successful(result) == [("same", prov_urn), ("delete-replaced", urn_b), ("delete-replaced", urn_a),
                                  ("replace", urn_a), ("create-replacement", urn_a), ("replace", urn_b),
                                  ("create-replacement", urn_b)]

    # resB.A changes: only resB is replaced, create-before-delete.
    inputs_b["A"] = "qux"
    result = run_plan(engine, program, result.snapshot)
    assert successful(result) == [("same", prov_urn), ("same", urn_a), ("create-replacement", urn_b),
                                  ("replace", urn_b), ("delete-replaced", urn_b)]

    # resA no longer asks delete-before-replace: only resA is replaced, create-before-delete.
    dbr_a["value"], inputs_a["A"] = None, "zam"
    result = run_plan(engine, program, result.snapshot)
    unordered(result, [("same", prov_urn), ("create-replacement", urn_a), ("replace", urn_a), ("same", urn_b),
                       ("delete-replaced", urn_a)])

    # The provider's diff asks delete-before-replace: resA and resB are replaced, delete-before-replace.
    dbr_diff["value"], inputs_a["A"] = True, "foo"
    result = run_plan(engine, program, result.snapshot)
    assert successful(result) == [("same", prov_urn), ("delete-replaced", urn_b), ("delete-replaced", urn_a),
                                  ("replace", urn_a), ("create-replacement", urn_a), ("replace", urn_b),
                                  ("create-replacement", urn_b)]

    # resA's option disables delete-before-replace over the provider's wish: only resA, create-before-delete.
    dbr_a["value"], inputs_a["A"] = False, "bar"
    result = run_plan(engine, program, result.snapshot)
    unordered(result, [("same", prov_urn), ("create-replacement", urn_a), ("replace", urn_a), ("same", urn_b),
                       ("delete-replaced", urn_a)])


def dbr_a_or_update_b(_urn, old, new_inputs, _preview):
    """DiffF of TestDependencyChangeDBR and TestDBRProtect."""
    if old.outputs.get("A") != new_inputs.get("A"):
        return DiffResult(replace_keys=["A"], delete_before_replace=True)
    if old.outputs.get("B") != new_inputs.get("B"):
        return DiffResult(True)
    return DiffResult()


def created_id(_urn, inputs, _preview):
    return "created-id", dict(inputs)


def test_TestDependencyChangeDBR():
    """pkg/engine/lifecycletest/delete_before_replace_test.go, TestDependencyChangeDBR, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(diff=dbr_a_or_update_b, create=created_id)})
    res_type = "pkgA:index:typ"
    inputs_a, inputs_b = {"A": "foo"}, {"A": "foo"}

    def program(monitor):
        a = monitor.register(res_type, "resA", True, inputs=inputs_a)
        monitor.register(res_type, "resB", True, inputs=inputs_b, dependencies=[a.urn],
                         property_dependencies={"A": [a.urn]})

    snap = run_plan(engine, program, []).snapshot

    inputs_a["A"] = "bar"

    def program2(monitor):
        monitor.register(res_type, "resB", True, inputs=inputs_b)
        monitor.register(res_type, "resA", True, inputs=inputs_a)

    result = run_plan(engine, program2, snap)
    assert len(result.steps) > 0
    urn_b = urn(res_type, "resB")
    ops_b = [s.op for s in result.steps if s.urn == urn_b]
    assert "same" in ops_b
    assert "delete" not in ops_b and "delete-replaced" not in ops_b


def test_TestDBRProtect():
    """pkg/engine/lifecycletest/delete_before_replace_test.go, TestDBRProtect, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(diff=dbr_a_or_update_b, create=created_id)})
    res_type = "pkgA:index:typ"
    inputs_a, inputs_b = {"A": "foo"}, {"A": "foo"}

    def program(monitor):
        a = monitor.register(res_type, "resA", True, inputs=inputs_a)
        monitor.register(res_type, "resB", True, inputs=inputs_b, dependencies=[a.urn],
                         property_dependencies={"A": [a.urn]}, protect=True)

    first = engine.update(program, [])
    assert first.error is None
    snap = first.snapshot
    assert len(snap) == 3

    # Replacing A would replace the protected B: an error.
    inputs_a["A"] = "bar"
    result = engine.update(program, snap)
    assert 'unable to replace resource "urn:pulumi:test::test::pkgA:index:typ::resB" as part of replacing ' \
           '"urn:pulumi:test::test::pkgA:index:typ::resA" as it is currently marked for protection.' in result.error

    # Unprotect B in the first snapshot and try again.
    assert snap[2].protect is True
    snap[2].protect = False
    result = engine.update(program, snap)
    assert result.error is None
    assert len(result.snapshot) == 3


def test_TestDBRReplaceOnChanges():
    """pkg/engine/lifecycletest/delete_before_replace_test.go, TestDBRReplaceOnChanges, pulumi/pulumi v3.230.0
    (ae2e2698)."""

    def diff(urn_, _old, _new_inputs, _preview):
        if urn_.endswith("::resA"):
            return DiffResult(replace_keys=["value"], delete_before_replace=True)
        return DiffResult()

    engine = Engine({"pkgA": deploytest(diff=diff, create=created_id)})
    inputs_a = {"value": "foo"}

    def program(monitor):
        a = monitor.register("pkgA:index:typA", "resA", True, inputs=inputs_a)
        monitor.register("pkgA:index:typA", "resB", True, inputs={"value": a.outputs.get("value")},
                         dependencies=[a.urn], property_dependencies={"value": [a.urn]},
                         replace_on_changes=["value"])

    first = engine.update(program, [])
    assert first.error is None and len(first.snapshot) == 3

    inputs_a["value"] = "bar"
    result = engine.update(program, first.snapshot)
    assert result.error is None
    a_deleted = b_deleted = False
    for op, urn_ in successful(result):
        if urn_.endswith("::resA") and op == "delete-replaced":
            a_deleted = True
        if urn_.endswith("::resB") and op == "delete-replaced":
            assert not a_deleted, "resA should not have been deleted yet"
            b_deleted = True
    assert a_deleted, "resA should have been deleted"
    assert b_deleted, "resB should have been deleted"
    assert len(result.snapshot) == 3


# --- replace_with_test.go -------------------------------------------------------------------------------------------

def tracking_provider(delete_before_replace: bool = False):
    """The replace_with tests' provider: replace on ``foo``, creates numbered ``created-id-N``, calls recorded."""
    calls = {"created": [], "deleted": []}

    def diff(_urn, old, new_inputs, _preview):
        if old.outputs.get("foo") != new_inputs.get("foo"):
            return DiffResult(True, ["foo"], delete_before_replace=delete_before_replace)
        return DiffResult()

    def create(urn_, inputs, _preview):
        calls["created"].append(urn_)
        return f"created-id-{len(calls['created'])}", dict(inputs)

    return deploytest(diff=diff, create=create, delete=lambda old: calls["deleted"].append(old.urn)), calls


def replace_with_case(delete_before_replace: bool):
    provider, calls = tracking_provider(delete_before_replace)
    engine = Engine({"pkgA": provider})
    ins = {"foo": "bar"}

    def program(monitor):
        a = monitor.register(TYP, "resA", True, inputs=ins)
        monitor.register(TYP, "resB", True, inputs={"fixed": "property"}, replace_with=[a.urn])

    result = engine.update(program, [])
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 3
    created, deleted = calls["created"], calls["deleted"]
    assert len(created) == 2
    assert created[0] == snap[1].urn and created[1] == snap[2].urn
    assert snap[1].id == "created-id-1" and snap[2].id == "created-id-2"
    assert len(deleted) == 0

    # Changing A replaces A and therefore B.
    ins["foo"] = "baz"
    result = engine.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert len(created) == 4
    assert created[0] == snap[1].urn and created[1] == snap[2].urn
    assert snap[1].id == "created-id-3" and snap[2].id == "created-id-4"
    assert len(deleted) == 2
    assert created[0] in deleted and created[1] in deleted


def test_TestReplaceWith():
    """pkg/engine/lifecycletest/replace_with_test.go, TestReplaceWith, pulumi/pulumi v3.230.0 (ae2e2698)."""
    replace_with_case(delete_before_replace=False)


def test_TestReplaceWithDeleteBeforeReplace():
    """pkg/engine/lifecycletest/replace_with_test.go, TestReplaceWithDeleteBeforeReplace, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    replace_with_case(delete_before_replace=True)


def test_TestReplaceWithAndDeletedWith():
    """pkg/engine/lifecycletest/replace_with_test.go, TestReplaceWithAndDeletedWith, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    provider, calls = tracking_provider()
    engine = Engine({"pkgA": provider})
    inputs = {"foo": "bar"}
    runs = {"n": 0}

    def program(monitor):
        urn_b = None
        if runs["n"] == 0:
            urn_b = monitor.register(TYP, "resB", True, inputs={}).urn
        urn_c = monitor.register(TYP, "resC", True, inputs=inputs).urn
        monitor.register(TYP, "resA", True, inputs={}, replace_with=[urn_c],
                         deleted_with=urn_b if runs["n"] == 0 else None)
        runs["n"] += 1

    result = engine.update(program, [])
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 4
    assert [s.id for s in snap[1:]] == ["created-id-1", "created-id-2", "created-id-3"]  # B, C, A
    assert snap[3].deleted_with == snap[1].urn
    assert snap[2].urn in snap[3].replace_with

    # Replace C; B is gone from the program, so old A is deleted with B.
    inputs["foo"] = "baz"
    calls["created"].clear()
    calls["deleted"].clear()
    result = engine.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 3
    assert snap[1].id == "created-id-1" and snap[2].id == "created-id-2"
    created, deleted = calls["created"], calls["deleted"]
    assert len(created) == 2
    assert sorted(u.rsplit("::", 1)[-1] for u in created) == ["resA", "resC"]
    assert len(deleted) == 2
    assert sorted(u.rsplit("::", 1)[-1] for u in deleted) == ["resB", "resC"]


# --- replacement_trigger_test.go ------------------------------------------------------------------------------------

def trigger_engine():
    return Engine({"pkgA": deploytest(create=lambda _urn, inputs, _preview: ("id123", dict(inputs)))})


def resa_ops(result: Result) -> list[str]:
    return [s.op for s in result.steps if s.name == "resA"]


def test_TestReplacementTrigger():
    """pkg/engine/lifecycletest/replacement_trigger_test.go, TestReplacementTrigger, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = trigger_engine()
    value = {"v": "first"}

    def program(monitor):
        monitor.register(TYP, "resA", True, inputs={"foo": "bar"}, replacement_trigger=value["v"])

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 2 and result.snapshot[1].name == "resA"

    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert all(op == "same" for op in resa_ops(result))
    assert len(result.snapshot) == 2 and result.snapshot[1].name == "resA"

    value["v"] = "second"
    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert "replace" in resa_ops(result)
    assert len(result.snapshot) == 2 and result.snapshot[1].name == "resA"


def test_TestReplacementTriggerWithComputed():
    """pkg/engine/lifecycletest/replacement_trigger_test.go, TestReplacementTriggerWithComputed, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = trigger_engine()

    def program(monitor):
        monitor.register(TYP, "resA", True, inputs={"foo": "bar"}, replacement_trigger=UNKNOWN)

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 2 and result.snapshot[1].name == "resA"
    snap = result.snapshot

    # An unknown trigger at preview: a replace.
    preview = engine.update(program, snap, preview=True)
    assert preview.error is None
    assert "replace" in resa_ops(preview)

    # An unknown trigger in an update: the error diagnostic, and the state kept.
    result = engine.update(program, snap)
    assert any("replacement trigger contains unknowns for urn:pulumi:test::test::pkgA:m:typA::resA" in d
               for d in result.diagnostics), "expected matching diag event"
    assert len(result.snapshot) == 2 and result.snapshot[1].name == "resA"


# --- protect_test.go ------------------------------------------------------------------------------------------------

def test_TestMultipleProtectedDeletes():
    """pkg/engine/lifecycletest/protect_test.go, TestMultipleProtectedDeletes, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(create=lambda _urn, _inputs, _preview: ("id", {}))})
    creating = {"value": True}

    def program(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        if creating["value"]:
            monitor.register(TYP, "resA", True, protect=True)
            monitor.register(TYP, "resB", True, protect=True)

    result = engine.update(program, [])
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 4
    assert snap[0].type == "pulumi:pulumi:Stack"

    creating["value"] = False

    def validate(result):
        assert any('resA" cannot be deleted' in d for d in result.diagnostics), "did not see resA"
        assert any('resB" cannot be deleted' in d for d in result.diagnostics), "did not see resB"

    preview = engine.update(program, snap, preview=True)
    validate(preview)
    assert preview.error

    result = engine.update(program, snap)
    validate(result)
    assert result.error


def test_TestProtectInheritance():
    """pkg/engine/lifecycletest/protect_test.go, TestProtectInheritance, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})

    def program(monitor):
        parent = monitor.register("my_component", "parent", False, protect=True)
        monitor.register(TYP, "resA", True, parent=parent.urn)
        monitor.register(TYP, "resB", True, parent=parent.urn, protect=False)

    result = engine.update(program, [])
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 4
    assert [snap[0].name, snap[2].name, snap[3].name] == ["parent", "resA", "resB"]
    assert snap[0].protect and snap[2].protect and not snap[3].protect
    assert snap[2].parent == snap[0].urn and snap[3].parent == snap[0].urn


def test_TestProtectedDeleteChainsWithDuplicateDeletedResources():
    """pkg/engine/lifecycletest/protect_test.go, TestProtectedDeleteChainsWithDuplicateDeletedResources, pulumi/pulumi
    v3.230.0 (ae2e2698)."""
    typ = "pkgA:modA:typA"

    def program(monitor):
        a = monitor.register(typ, "resA", True)
        monitor.register(typ, "resB", True, protect=True, dependencies=[a.urn])

    # Setup 1: A, and B (protected) depending on A.
    setup1 = Engine({"pkgA": deploytest()}, stack="test-stack", project="test-project").update(program, [])
    assert setup1.error is None

    # Setup 2: replace A create-before-delete and fail the delete of the old A: two copies of A, the old one pending
    # deletion.
    def diff(urn_, _old, _new_inputs, _preview):
        if urn_.endswith("::resA"):
            return DiffResult(True, ["__replace"])
        return DiffResult()

    def delete(old):
        if old.name == "resA":
            raise ProviderError("delete error")

    setup2 = Engine({"pkgA": deploytest(diff=diff, delete=delete)}, stack="test-stack",
                    project="test-project").update(program, setup1.snapshot)
    assert "delete error" in setup2.error

    # Act: destroy. B's delete is refused (protected); A's (the live copy) is abandoned with it.
    engine = Engine({"pkgA": deploytest(), "pkg-gWXu": deploytest()}, stack="test-stack", project="test-project")
    result = engine.destroy(setup2.snapshot)
    assert 'resource "urn:pulumi:test-stack::test-project::pkgA:modA:typA::resB" cannot be deleted' in result.error
    snap = result.snapshot
    assert len(snap) == 3
    assert snap[1].name == "resA"
    assert snap[2].name == "resB"


# --- pending_replace_test.go ----------------------------------------------------------------------------------------

def replace_a_dbr(urn_, _old, _new_inputs, _preview):
    if urn_.endswith("::resA"):
        return DiffResult(True, ["key"], delete_before_replace=True)
    return DiffResult()


def test_TestPendingReplaceFailureDoesNotViolateSnapshotIntegrity():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceFailureDoesNotViolateSnapshotIntegrity,
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    calls = {"diffs": set(), "deletes": set(), "creates": set()}
    suffix = {"value": "created-id"}

    def replacing_a_diff(urn_, _old, _new_inputs, _preview):
        calls["diffs"].add(urn_.rsplit("::", 1)[-1])
        if urn_.endswith("::resA"):
            return DiffResult(True, ["key"], delete_before_replace=True)
        if urn_.endswith("::resB"):
            return DiffResult(True)
        return DiffResult()

    def throwing_delete(old):
        calls["deletes"].add(old.name)
        if old.name == "resA":
            raise ProviderError("interrupt replace")

    def tracking_delete(old):
        calls["deletes"].add(old.name)

    def tracking_create(urn_, inputs, _preview):
        calls["creates"].add(urn_.rsplit("::", 1)[-1])
        return f"{urn_.rsplit('::', 1)[-1]}-{suffix['value']}", dict(inputs)

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, dependencies=[a.urn])

    up = Engine({"pkgA": deploytest()}).update(program, [])
    assert up.error is None
    assert names(up.snapshot) == ["default", "resA", "resB"]

    replace = Engine({"pkgA": deploytest(diff=replacing_a_diff, delete=throwing_delete)}).update(program, up.snapshot)
    assert "interrupt replace" in replace.error
    snap = replace.snapshot
    assert len(snap) == 3
    assert snap[0].name == "default"
    assert snap[1].name == "resA"
    assert "resA" in calls["diffs"], "Diff should be called on resA"
    assert "resA" in calls["deletes"], "Delete should be called on resA as part of replacement of resA"
    assert not snap[1].pending_replacement, "resA should not be pending replacement following a failed deletion"
    assert snap[2].name == "resB"

    calls = {"diffs": set(), "deletes": set(), "creates": set()}
    suffix["value"] = "replaced-id"
    retry = Engine({"pkgA": deploytest(diff=replacing_a_diff, delete=tracking_delete, create=tracking_create)})
    result = retry.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 3
    assert snap[0].name == "default"
    assert "resA" in calls["diffs"]
    assert "resA" in calls["deletes"], "Delete should be called as part of replacement of resA"
    assert "resA" in calls["creates"], "Create should be called as part of replacement of resA"
    assert snap[1].id == "resA-replaced-id"
    assert snap[2].name == "resB"
    assert "resB" in calls["diffs"], "Diff should be called on resB"


def interrupted_dbr():
    """Operations 1 and 2 of the TestPendingReplaceResume* cases: create resA, then replace it delete-before-replace
    and fail the create. Returns the snapshot (resA pending replacement) and the call record."""
    calls = {"delete": False, "create": False}

    def tracked_delete(_old):
        calls["delete"] = True

    def throwing_create(_urn, _inputs, _preview):
        calls["create"] = True
        raise ProviderError("interrupt replace")

    def program(monitor):
        monitor.register(TYP, "resA", True)

    up = Engine({"pkgA": deploytest()}).update(program, [])
    assert up.error is None
    assert names(up.snapshot) == ["default", "resA"]

    replace = Engine({"pkgA": deploytest(diff=replace_a_dbr, delete=tracked_delete, create=throwing_create)})
    result = replace.update(program, up.snapshot)
    assert "interrupt replace" in result.error
    assert names(result.snapshot) == ["default", "resA"]
    assert calls["delete"], "Delete should be called as part of replacement"
    assert result.snapshot[1].pending_replacement
    return program, result.snapshot


def resume_provider(calls, diff=replace_a_dbr):
    def tracked_delete(_old):
        calls["delete"] = True

    def tracked_create(_urn, inputs, _preview):
        calls["create"] = True
        return "created-id", dict(inputs)

    return deploytest(diff=diff, delete=tracked_delete, create=tracked_create)


def test_TestPendingReplaceResumeWithSameGoals():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithSameGoals, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    program, snap = interrupted_dbr()
    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls)}).update(program, snap)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA"]
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (same goals)"
    assert calls["create"], "Create should be called when resuming a replacement (same goals)"
    assert not result.snapshot[1].pending_replacement


def test_TestPendingReplaceResumeWithSameGoalsRefreshRunProgram():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithSameGoalsRefreshRunProgram,
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    program, snap = interrupted_dbr()
    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls)}).update(program, snap, refresh=True)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA"]
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (same goals)"
    assert calls["create"], "Create should be called when resuming a replacement (same goals)"
    assert not result.snapshot[1].pending_replacement


def test_TestPendingReplaceResumeWithDeletedGoals():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithDeletedGoals, pulumi/pulumi
    v3.230.0 (ae2e2698)."""
    _program, snap = interrupted_dbr()
    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls)}).update(lambda monitor: None, snap)
    assert result.error is None
    assert len(result.snapshot) == 0
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (deleted goals)"
    assert not calls["create"], "Create shouldn't be called when resuming a replacement (deleted goals)"


def test_TestPendingReplaceResumeWithUpdatedGoals():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithUpdatedGoals, pulumi/pulumi
    v3.230.0 (ae2e2698)."""
    program, snap = interrupted_dbr()

    def non_replace_diff(urn_, _old, _new_inputs, _preview):
        if urn_.endswith("::resA"):
            return DiffResult(True, delete_before_replace=True)
        return DiffResult()

    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls, non_replace_diff)}).update(program, snap)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA"]
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (updated goals)"
    assert calls["create"], "Create should be called when resuming a replacement (updated goals)"
    assert not result.snapshot[1].pending_replacement


def test_TestInteruptedPendingReplace():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestInteruptedPendingReplace, pulumi/pulumi v3.230.0
    (ae2e2698)."""

    def program(monitor):
        a = monitor.register(TYP, "resA", True, delete_before_replace=True)
        monitor.register(TYP, "resB", True, dependencies=[a.urn])

    def diff(urn_, _old, _new_inputs, _preview):
        if urn_.endswith("::resA"):
            return DiffResult(True, ["key"])
        return DiffResult(False)

    def failing_create(urn_, _inputs, _preview):
        if urn_.endswith("::resA"):
            raise ProviderError("interrupt replace")
        return "", {}

    up = Engine({"pkgA": deploytest()}).update(program, [])
    assert up.error is None
    assert names(up.snapshot) == ["default", "resA", "resB"]

    failing = Engine({"pkgA": deploytest(diff=diff, create=failing_create)})
    replace = failing.update(program, up.snapshot)
    assert "interrupt replace" in replace.error
    assert names(replace.snapshot) == ["default", "resA", "resB"]
    assert replace.snapshot[1].pending_replacement

    # Resume with the create failing again.
    second = failing.update(program, replace.snapshot)
    assert "interrupt replace" in second.error
    assert names(second.snapshot) == ["default", "resA", "resB"]
    assert second.snapshot[1].pending_replacement

    # Resume with the create succeeding.
    ok = Engine({"pkgA": deploytest(diff=diff, create=lambda _urn, inputs, _preview: ("created-id", dict(inputs)))})
    result = ok.update(program, second.snapshot)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA", "resB"]
    assert not result.snapshot[1].pending_replacement


# --- step_generator_test.go -----------------------------------------------------------------------------------------

def test_TestDuplicateURN():
    """pkg/engine/lifecycletest/step_generator_test.go, TestDuplicateURN, pulumi/pulumi v3.230.0 (ae2e2698). The
    ReadResource half is not modelled (the offline engine has no reads)."""
    engine = Engine({"pkgA": deploytest()})
    seen = []

    def program(monitor):
        monitor.register(TYP, "resA", True)
        try:
            monitor.register(TYP, "resA", True)
        except Exception as error:  # the monitor answers the second registration with an error
            seen.append(str(error))

    result = engine.update(program, [])
    assert seen and "Duplicate resource URN" in seen[0]
    assert result.error


# --- refresh_test.go ------------------------------------------------------------------------------------------------

def refresh_plan(engine: Engine, snapshot, **options) -> Result:
    """``lt.TestPlan.Run`` of a Refresh step: the refresh preview, then the refresh."""
    preview = engine.refresh(snapshot, preview=True, **options)
    assert preview.error is None, preview.error
    result = engine.refresh(snapshot, **options)
    assert result.error is None, result.error
    return result


def test_TestRefreshWithDelete():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshWithDelete, pulumi/pulumi v3.230.0 (ae2e2698). Upstream
    runs it with parallelism 1 and 4; the offline engine runs steps one at a time."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None)})

    def program(monitor):
        monitor.register(TYP, "resA", True)

    snap = run_plan(engine, program, []).snapshot
    snap = refresh_plan(engine, snap).snapshot
    assert len(snap) == 1
    assert snap[0].urn == DEFAULT_PROVIDER


def test_TestRefreshDeleteDependencies():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeleteDependencies (validateRefreshDeleteCombination over
    every subset of targets), pulumi/pulumi v3.230.0 (ae2e2698)."""
    res_names = ["resA", "resB", "resC"]
    urn_a, urn_b, urn_c = (urn(TYP, n) for n in res_names)
    by_name = dict(zip(res_names, (urn_a, urn_b, urn_c)))
    subsets = [()] + [c for k in range(1, 4) for c in itertools.combinations(res_names, k)]
    for targets in subsets:
        refresh_targets = [by_name[n] for n in targets]

        def new_resource(urn_, id_, delete, *deps):
            return State(urn=urn_, type=TYP, id=id_, delete=delete, dependencies=list(deps))

        old_resources = [
            new_resource(urn_a, "0", False),
            new_resource(urn_b, "1", False, urn_a),
            new_resource(urn_c, "2", False, urn_a, urn_b),
            new_resource(urn_a, "3", True),
            new_resource(urn_a, "4", True),
            new_resource(urn_c, "5", True, urn_a, urn_b),
        ]
        old = add_default_providers(copy.deepcopy(old_resources))
        provider_ref = old[1].provider
        for r in old_resources:  # setProviderRef
            r.provider = provider_ref

        def read(state):
            return None if state.id in ("0", "4") else state.outputs

        engine = Engine({"pkgA": deploytest(read=read)})
        result = refresh_plan(engine, old, targets=refresh_targets)
        for step in result.steps:
            if refresh_targets:
                assert step.urn in refresh_targets, f"Refreshed a resource that wasn't a target: {step.urn}"
            assert step.op == "refresh"

        for r in result.snapshot:
            if r.urn == DEFAULT_PROVIDER:
                continue
            assert r.urn in (urn_a, urn_b, urn_c), f"unexpected resource {r.urn}"
            if not refresh_targets or urn_a in refresh_targets:
                # A::0 was deleted, so we see the impact downstream.
                if r.id == "1":
                    assert r.urn == urn_b and r.dependencies == []
                elif r.id == "2":
                    assert r.urn == urn_c and r.dependencies == [urn_b]
                elif r.id == "3":
                    assert r == old_resources[3]
                elif r.id == "5":
                    # A::4 was deleted but A::3 is still referenceable by C::5.
                    assert r == old_resources[5]
                else:
                    pytest.fail(f"Unexpected changed resource when refreshing {refresh_targets}: {r.urn}::{r.id}")
            else:
                assert r == old_resources[int(r.id)]


def test_TestRefreshDeletePropertyDependencies():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeletePropertyDependencies, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None if old.name == "resA" else {})})

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, property_dependencies={"propB1": [a.urn]})

    snap = run_plan(engine, program, []).snapshot
    assert names(snap) == ["default", "resA", "resB"]
    assert snap[2].property_dependencies["propB1"][0].endswith("::resA")
    assert verify_integrity(snap) is None

    snap = refresh_plan(engine, snap).snapshot
    assert names(snap) == ["default", "resB"]
    assert not snap[1].property_dependencies
    assert verify_integrity(snap) is None


def test_TestRefreshDeleteDeletedWith():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeleteDeletedWith, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None if old.name == "resA" else {})})

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, deleted_with=a.urn)

    snap = run_plan(engine, program, []).snapshot
    assert names(snap) == ["default", "resA", "resB"]
    assert snap[2].deleted_with.endswith("::resA")
    assert verify_integrity(snap) is None

    snap = refresh_plan(engine, snap).snapshot
    assert names(snap) == ["default", "resB"]
    assert not snap[1].deleted_with
    assert verify_integrity(snap) is None


def test_TestRefreshUpdateWithDeletedResource():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshUpdateWithDeletedResource (``up --refresh``),
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None)})
    old = add_default_providers([State(urn=urn(TYP, "resA"), type=TYP, id="myid")])
    result = run_plan(engine, lambda monitor: None, old, refresh=True)
    assert result.snapshot == []


def test_TestRefreshDeleteParent():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeleteParent, pulumi/pulumi v3.230.0 (ae2e2698). The
    framework verifies the integrity of every state written; so does this port."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None if old.name == "resA" else {})})

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, parent=a.urn)

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 3
    result = engine.refresh(result.snapshot)
    assert result.error is None
    assert len(result.snapshot) == 2
    assert verify_integrity(result.snapshot) is None


# --- target_test.go -------------------------------------------------------------------------------------------------

def test_TestRefreshTargetChildren():
    """pkg/engine/lifecycletest/target_test.go, TestRefreshTargetChildren, pulumi/pulumi v3.230.0 (ae2e2698)."""
    calls = {"count": 0}

    def read(_old):
        calls["count"] += 1
        return {"count": float(calls["count"])}

    engine = Engine({"pkgA": deploytest(read=read)})

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        b = monitor.register(TYP, "resB", True, parent=a.urn)
        c = monitor.register(TYP, "resC", True, parent=b.urn)
        monitor.register(TYP, "resD", True, parent=c.urn)

    result = engine.update(program, [])
    assert result.error is None
    a = "urn:pulumi:test::test::pkgA:m:typA::resA"
    b = "urn:pulumi:test::test::pkgA:m:typA$pkgA:m:typA::resB"
    c = "urn:pulumi:test::test::pkgA:m:typA$pkgA:m:typA$pkgA:m:typA::resC"
    d = "urn:pulumi:test::test::pkgA:m:typA$pkgA:m:typA$pkgA:m:typA$pkgA:m:typA::resD"
    snap = result.snapshot
    assert [r.urn for r in snap[1:]] == [a, b, c, d]

    result = engine.refresh(snap, targets=[b], target_dependents=True)
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 5
    assert [r.urn for r in snap[1:]] == [a, b, c, d]
    assert snap[1].outputs.get("count") is None
    assert snap[2].outputs.get("count") is not None
    assert snap[3].outputs.get("count") is not None
    assert snap[4].outputs.get("count") is not None
    assert calls["count"] == 3


def small_subsets(items, most=3):
    return [c for k in range(1, most + 1) for c in itertools.combinations(items, k)]


def destroy_specific_targets(targets, target_dependents: bool, validate: Callable = lambda urns, deleted: None):
    """``destroySpecificTargets`` over the complex graph."""
    urns, old, _program = complex_graph()
    engine = Engine({"pkgA": deploytest(diff=changed_a_diff, diff_config=lambda urn, o, n: DiffResult())})
    destroy_targets = [urns[t] for t in targets]
    snapshot = add_default_providers(copy.deepcopy(old))

    preview = engine.destroy(snapshot, preview=True, targets=destroy_targets, target_dependents=target_dependents)
    if not target_dependents:  # ExpectFailure: the preview fails and the destroy is not run
        assert preview.error
        return
    assert preview.error is None, preview.error
    result = engine.destroy(snapshot, targets=destroy_targets, target_dependents=target_dependents)
    assert result.error is None, result.error
    assert len(result.steps) > 0
    deleted, samed = set(), set()
    for op, urn_ in successful(result):
        if op == "delete":
            deleted.add(urn_)
        else:
            assert op == "same"
            samed.add(urn_)
    for target in destroy_targets:
        assert target in deleted
    for res in old:
        if res.urn not in deleted:
            assert res.urn in samed
    validate(urns, deleted)


def test_TestDestroyTarget():
    """pkg/engine/lifecycletest/target_test.go, TestDestroyTarget, pulumi/pulumi v3.230.0 (ae2e2698)."""
    for subset in small_subsets(COMPLEX_NAMES):
        destroy_specific_targets(subset, True)

    def everything(urns, deleted):
        assert deleted == set(urns.values())

    destroy_specific_targets(["A"], True, everything)
    destroy_specific_targets(["A"], False)


def update_specific_targets(targets, target_dependents: bool):
    """``updateSpecificTargets`` over the complex graph (literal targets; the glob targets are not modelled)."""
    urns, old, program = complex_graph()

    def update(_urn, old_state, _new_inputs, _preview):
        outputs = dict(old_state.outputs)
        outputs["output_prop"] = 42
        return outputs

    engine = Engine({"pkgA": deploytest(diff=lambda *_: DiffResult(True), update=update)})
    update_targets = [urns[t] for t in targets]
    result = run_plan(engine, program, add_default_providers(copy.deepcopy(old)), targets=update_targets,
                      target_dependents=target_dependents)
    assert len(result.steps) > 0
    updated, sames = set(), set()
    for op, urn_ in successful(result):
        if op == "update":
            updated.add(urn_)
        elif op == "same":
            sames.add(urn_)
        else:
            pytest.fail(f"Got a step that wasn't a same/update: {op}")
    for target in update_targets:
        assert target in updated
    if not target_dependents:
        for target in update_targets:
            assert target.rsplit("::", 1)[-1] in targets
    else:
        assert any(u.rsplit("::", 1)[-1] not in targets for u in updated), sorted(updated)
    for target in update_targets:
        assert target not in sames


def test_TestUpdateTarget():
    """pkg/engine/lifecycletest/target_test.go, TestUpdateTarget, pulumi/pulumi v3.230.0 (ae2e2698). The two glob
    targets (``**C**``, ``**providers:pkgA**``) are not modelled."""
    for subset in small_subsets(COMPLEX_NAMES):
        update_specific_targets(subset, False)
    update_specific_targets(["A"], False)

    # updateInvalidTarget: a target that is not in the stack fails the preview (ExpectFailure).
    urns, old, program = complex_graph()
    engine = Engine({"pkgA": deploytest(diff=lambda *_: DiffResult(True))})
    run_plan(engine, program, add_default_providers(copy.deepcopy(old)), targets=["foo"], expect_failure=True)

    update_specific_targets(["C"], True)


def create_resa(monitor):
    monitor.register(TYP, "resA", True)


def test_TestCreateDuringTargetedUpdate_CreateMentionedAsTarget():
    """pkg/engine/lifecycletest/target_test.go, TestCreateDuringTargetedUpdate_CreateMentionedAsTarget, pulumi/pulumi
    v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})
    snap1 = run_plan(engine, create_resa, []).snapshot

    def program2(monitor):
        monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True)

    res_a, res_b = urn(TYP, "resA"), urn(TYP, "resB")
    result = run_plan(engine, program2, snap1, targets=[res_a, res_b])
    assert len(result.steps) > 0
    for op, urn_ in successful(result):
        if urn_ == res_a:
            assert op == "same"
        elif urn_ == res_b:
            assert op == "create"


def test_TestCreateDuringTargetedUpdate_UntargetedCreateNotReferenced():
    """pkg/engine/lifecycletest/target_test.go, TestCreateDuringTargetedUpdate_UntargetedCreateNotReferenced,
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})
    snap1 = run_plan(engine, create_resa, []).snapshot

    def program2(monitor):
        monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True)

    result = run_plan(engine, program2, snap1, targets=[urn(TYP, "resA")])
    assert len(result.steps) > 0
    assert all(op == "same" for op, _ in successful(result))


def untargeted_create_referenced(options: dict, diff=None):
    """The TestCreateDuringTargetedUpdate_UntargetedCreateReferencedBy* cases: b exists; the program adds a and makes
    b refer to it (``options``); ``--target **b**`` (only b's URN matches) fails with "untargeted create"."""
    def before(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        monitor.register(TYP, "b", True)

    snap = Engine({"pkgA": deploytest()}).update(before, [])
    assert snap.error is None
    returned = []

    def after(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        a = monitor.register(TYP, "a", True)
        monitor.register(TYP, "b", True, **{k: (v(a.urn)) for k, v in options.items()})
        returned.append("b")  # "RegisterResource should not return"

    result = Engine({"pkgA": deploytest(diff=diff)}).update(after, snap.snapshot, targets=[urn(TYP, "b")])
    assert result.error and "untargeted create" in result.error
    assert not returned, "RegisterResource should not return"


def diff_b_changed(urn_, _old, _new_inputs, _preview):
    return DiffResult(True) if urn_.endswith("::b") else DiffResult()


def test_TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByChangedTarget():
    """pkg/engine/lifecycletest/target_test.go,
    TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByChangedTarget, pulumi/pulumi v3.230.0 (ae2e2698)."""
    untargeted_create_referenced({"dependencies": lambda a: [a]}, diff=diff_b_changed)


def test_TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByUnchangedTarget():
    """pkg/engine/lifecycletest/target_test.go,
    TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByUnchangedTarget, pulumi/pulumi v3.230.0 (ae2e2698)."""
    untargeted_create_referenced({"dependencies": lambda a: [a]})


def test_TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByTargetPropertyDependency():
    """pkg/engine/lifecycletest/target_test.go,
    TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByTargetPropertyDependency, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    untargeted_create_referenced({"property_dependencies": lambda a: {"prop": [a]}}, diff=diff_b_changed)


def test_TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByTargetDeletedWith():
    """pkg/engine/lifecycletest/target_test.go,
    TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByTargetDeletedWith, pulumi/pulumi v3.230.0 (ae2e2698)."""
    untargeted_create_referenced({"deleted_with": lambda a: a}, diff=diff_b_changed)


def test_TestCreateDuringTargetedUpdate_UntargetedProviderReferencedByTarget():
    """pkg/engine/lifecycletest/target_test.go, TestCreateDuringTargetedUpdate_UntargetedProviderReferencedByTarget,
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})

    def program(monitor):
        prov = monitor.register(PROV_TYPE, "provA", True)
        monitor.register(TYP, "resA", True, provider=prov.urn)

    run_plan(engine, program, [], targets=[urn(TYP, "resA")])


def test_TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByUntargetedCreate():
    """pkg/engine/lifecycletest/target_test.go,
    TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByUntargetedCreate, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})
    snap1 = run_plan(engine, create_resa, []).snapshot
    res_a, res_b = urn(TYP, "resA"), urn(TYP, "resB")

    def program2(monitor):
        monitor.register(TYP, "resB", True)
        monitor.register(TYP, "resC", True, dependencies=[res_b])
        monitor.register(TYP, "resA", True)

    result = run_plan(engine, program2, snap1, targets=[res_a])
    assert len(result.steps) > 0
    assert all(op == "same" for op, _ in successful(result))


def test_TestReplaceSpecificTargets():
    """pkg/engine/lifecycletest/target_test.go, TestReplaceSpecificTargets, pulumi/pulumi v3.230.0 (ae2e2698)."""
    urns, old, program = complex_graph()
    engine = Engine({"pkgA": deploytest(diff=lambda *_: DiffResult(False), create=created_id)})
    replace_targets = [urns["F"], urns["B"], urns["G"]]
    result = run_plan(engine, program, add_default_providers(copy.deepcopy(old)), replace=replace_targets)
    assert len(result.steps) > 0
    replaced = {u for op, u in successful(result) if op == "replace"}
    sames = {u for op, u in successful(result) if op == "same"}
    for target in replace_targets:
        assert target in replaced
        assert target not in sames


def test_TestTargetedCreateDefaultProvider():
    """pkg/engine/lifecycletest/target_test.go, TestTargetedCreateDefaultProvider, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})
    result = engine.update(create_resa, [], targets=["urn:pulumi:test::test::pkgA:m:typA::resA"])
    assert result.error is None
    assert any(r.urn == DEFAULT_PROVIDER for r in result.snapshot)


def test_TestTargetDependents():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDependents, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})

    def program(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True)

    targets = ["urn:pulumi:test::test::pkgA:m:typA::resA"]
    result = engine.update(program, [], targets=targets, target_dependents=False)
    assert result.error is None
    assert len(result.snapshot) == 3  # stack, provider, resA

    result = engine.update(program, [], targets=targets, target_dependents=True)
    assert result.error is None
    assert len(result.snapshot) == 3  # still only stack, provider, resA


# --- pending_delete_test.go -----------------------------------------------------------------------------------------

def two_copies_of_resa() -> list[State]:
    """The pending_delete tests' old state: resA live (ID 1) and an older resA pending deletion (ID 0)."""
    res_urn = urn(TYP, "resA")
    return add_default_providers([State(urn=res_urn, type=TYP, id="1"),
                                  State(urn=res_urn, type=TYP, id="0", delete=True)])


def assert_both_copies_deleted(result: Result, deleted_ids: list[str]):
    """The pending_delete tests' Validate: one successful delete (or delete-replaced) of resA for each ID. The
    journal's ``Step.Old().ID`` is read here through the provider's Delete calls, one per such step."""
    res_urn = urn(TYP, "resA")
    steps = [op for op, u in successful(result) if u == res_urn and op in ("delete", "delete-replaced")]
    assert len(steps) == 2
    assert sorted(deleted_ids) == ["0", "1"]


def test_TestDestroyWithPendingDelete():
    """pkg/engine/lifecycletest/pending_delete_test.go, TestDestroyWithPendingDelete (an update with an empty program),
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    deleted_ids = []
    engine = Engine({"pkgA": deploytest(delete=lambda old: deleted_ids.append(old.id))})
    result = run_plan(engine, lambda monitor: None, two_copies_of_resa())
    assert_both_copies_deleted(result, deleted_ids)


def test_TestUpdateWithPendingDelete():
    """pkg/engine/lifecycletest/pending_delete_test.go, TestUpdateWithPendingDelete (a destroy), pulumi/pulumi v3.230.0
    (ae2e2698)."""
    deleted_ids = []
    engine = Engine({"pkgA": deploytest(delete=lambda old: deleted_ids.append(old.id))})
    snapshot = two_copies_of_resa()
    assert engine.destroy(snapshot, preview=True).error is None
    result = engine.destroy(snapshot)
    assert result.error is None
    assert_both_copies_deleted(result, deleted_ids)


def test_TestDestroyWithUntargetedPendingDelete():
    """pkg/engine/lifecycletest/pending_delete_test.go, TestDestroyWithUntargetedPendingDelete, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})
    res_a, res_b = urn(TYP, "resA"), urn(TYP, "resB")
    old = [State(urn=res_a, type=TYP, custom=False), State(urn=res_b, type=TYP, custom=False, delete=True)]
    assert engine.destroy(old, preview=True, targets=[res_a]).error is None
    result = engine.destroy(old, targets=[res_a])
    assert result.error is None
    # resB was not targeted, so it remains.
    assert len(result.snapshot) == 1
    assert result.snapshot[0].urn == res_b
    assert result.snapshot[0].delete is True


# --- taint_test.go --------------------------------------------------------------------------------------------------

def test_TestTaintReplacement():
    """pkg/engine/lifecycletest/taint_test.go, TestTaintReplacement, pulumi/pulumi v3.230.0 (ae2e2698)."""
    counter, deletes = {"id": 0}, []

    def create(_urn, inputs, _preview):
        counter["id"] += 1
        return str(counter["id"]), dict(inputs)

    def delete(old):
        deletes.append(old.id)
        assert old.id == "1", "should be deleting the original resource"

    engine = Engine({"pkgA": deploytest(create=create, delete=delete)})

    def program(monitor):
        monitor.register(TYP, "resA", True, inputs={"foo": "bar"})

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 2
    res_a = next(r for r in result.snapshot if r.name == "resA")
    assert res_a.id == "1"
    res_a.taint = True

    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert len(result.snapshot) == 2
    new_a = next(r for r in result.snapshot if r.name == "resA")
    assert new_a.id == "2"
    assert not new_a.taint, "taint should be cleared after replacement"
    assert len(deletes) == 1, "delete should have been called for the tainted resource"


def test_TestTaintMultipleResources():
    """pkg/engine/lifecycletest/taint_test.go, TestTaintMultipleResources, pulumi/pulumi v3.230.0 (ae2e2698)."""
    create_ids, deletes = {}, []

    def create(urn_, inputs, _preview):
        name = urn_.rsplit("::", 1)[-1]
        create_ids[name] = create_ids.get(name, 0) + 1
        return f"{name}-v{create_ids[name]}", dict(inputs)

    def delete(old):
        deletes.append(old.id)
        assert old.id in ("resA-v1", "resC-v1"), "should be deleting a tainted resource"

    engine = Engine({"pkgA": deploytest(create=create, delete=delete)})

    def program(monitor):
        for name in ("resA", "resB", "resC"):
            monitor.register(TYP, name, True, inputs={"name": name})

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 4
    for r in result.snapshot:
        if r.name in ("resA", "resC"):
            r.taint = True

    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert len(result.snapshot) == 4
    replaced = 0
    for r in result.snapshot:
        assert not r.taint, "all taints should be cleared"
        if r.name == "resA":
            assert r.id == "resA-v2"
            replaced += 1
        elif r.name == "resB":
            assert r.id == "resB-v1"
        elif r.name == "resC":
            assert r.id == "resC-v2"
            replaced += 1
    assert replaced == 2
    assert len(deletes) == 2


def test_TestTaintWithPendingDelete():
    """pkg/engine/lifecycletest/taint_test.go, TestTaintWithPendingDelete, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(create=lambda _urn, inputs, _preview: ("new-id", dict(inputs)),
                                        delete=lambda old: None)})
    res_urn = urn(TYP, "resA")
    old = add_default_providers([
        State(urn=res_urn, type=TYP, id="current-id", inputs={"foo": "bar"}, outputs={"foo": "bar"}, taint=True),
        State(urn=res_urn, type=TYP, id="old-id", inputs={"foo": "old"}, outputs={"foo": "old"}, delete=True,
              taint=True),
    ])

    def program(monitor):
        monitor.register(TYP, "resA", True, inputs={"foo": "bar"})

    result = engine.update(program, old)
    assert result.error is None
    finals = [r for r in result.snapshot if r.urn == res_urn]
    assert len(finals) == 1, "should have exactly one resource with this URN"
    assert finals[0].id == "new-id", "resource should be replaced"
    assert not finals[0].taint, "taint should be cleared after replacement"
    assert not finals[0].delete, "resource should not be marked for deletion"


def test_TestTaintNoChanges():
    """pkg/engine/lifecycletest/taint_test.go, TestTaintNoChanges, pulumi/pulumi v3.230.0 (ae2e2698)."""
    counter, deletes = {"id": 0}, []

    def create(_urn, inputs, _preview):
        counter["id"] += 1
        return f"id-{counter['id']}", dict(inputs)

    engine = Engine({"pkgA": deploytest(create=create, delete=lambda old: deletes.append(old.id),
                                        diff=lambda *_: DiffResult(False))})

    def program(monitor):
        monitor.register(TYP, "resA", True, inputs={"foo": "bar"})

    result = engine.update(program, [])
    assert result.error is None
    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert len(deletes) == 0, "no replacement should occur without taint"
    res_a = next(r for r in result.snapshot if r.name == "resA")
    assert res_a.id == "id-1"
    res_a.taint = True

    result = engine.update(program, result.snapshot)
    assert result.error is None
    assert len(deletes) == 1, "replacement should occur due to taint"
    new_a = next(r for r in result.snapshot if r.name == "resA")
    assert not new_a.taint, "taint should be cleared after replacement"
    assert new_a.id == "id-2", "resource should have new ID"


# --- HEAD deleted_with_replace_test.go: behaviour added in v3.251.0, recorded as v3.230.0 behaves ---------------------
#
# pulumi/pulumi HEAD (1b5949891b3cefcb9974752b24a5ecef0acc86c8) replaces a resource whose deletedWith names a resource
# being replaced. v3.230.0's calculateDependentReplacements only replaces a dependent whose *inputs* depend on the
# replaced resource (a deletedWith edge makes it a dependent, not a replacement), and its diff never looks at
# deletedWith. These tests run the HEAD programs and assert what v3.230.0 does instead; where HEAD's assertion
# differs the comment gives it.

HEAD = "1b5949891b3cefcb9974752b24a5ecef0acc86c8"


def deleted_with_program(ins, link=lambda: True, chain=False, protect=None):
    def program(monitor):
        t = monitor.register(TYP, "resT", True, inputs=ins)
        d = monitor.register(TYP, "resD", True, inputs={"fixed": "property"},
                             deleted_with=t.urn if link() else None, protect=protect)
        if chain:
            monitor.register(TYP, "resD2", True, inputs={"fixed2": "property"}, deleted_with=d.urn)
    return program


def test_TestDeletedWithDependentReplacedOnDeleteBeforeReplace():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithDependentReplacedOnDeleteBeforeReplace,
    pulumi/pulumi HEAD (1b594989; v3.251.0 behaviour): recorded as v3.230.0 (ae2e2698) behaves."""
    provider, calls = tracking_provider(delete_before_replace=True)
    engine = Engine({"pkgA": provider})
    ins = {"foo": "bar"}
    program = deleted_with_program(ins)
    snap = engine.update(program, []).snapshot
    assert len(snap) == 3 and len(calls["created"]) == 2 and len(calls["deleted"]) == 0
    urn_t, urn_d = snap[1].urn, snap[2].urn

    ins["foo"] = "baz"
    result = engine.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 3 and snap[1].urn == urn_t and snap[2].urn == urn_d
    assert len(calls["created"]) == 3  # HEAD: 4 (resD replaced too)
    assert snap[1].id == "created-id-3"
    assert snap[2].id == "created-id-2"  # HEAD: "created-id-4"
    assert calls["deleted"] == [urn_t]


def test_TestDeletedWithTransitiveChain():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithTransitiveChain, pulumi/pulumi HEAD
    (1b594989; v3.251.0 behaviour): recorded as v3.230.0 (ae2e2698) behaves."""
    provider, calls = tracking_provider(delete_before_replace=True)
    engine = Engine({"pkgA": provider})
    ins = {"foo": "bar"}
    program = deleted_with_program(ins, chain=True)
    snap = engine.update(program, []).snapshot
    assert len(snap) == 4 and len(calls["created"]) == 3 and len(calls["deleted"]) == 0
    urn_t, urn_d, urn_d2 = (r.urn for r in snap[1:])

    ins["foo"] = "baz"
    result = engine.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert [r.urn for r in snap[1:]] == [urn_t, urn_d, urn_d2]
    assert len(calls["created"]) == 4  # HEAD: 6
    assert [r.id for r in snap[1:]] == ["created-id-4", "created-id-2", "created-id-3"]  # HEAD: -4, -5, -6
    assert calls["deleted"] == [urn_t]


def test_TestDeletedWithDependentReplacedOnCreateBeforeDelete():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithDependentReplacedOnCreateBeforeDelete,
    pulumi/pulumi HEAD (1b594989; v3.251.0 behaviour): recorded as v3.230.0 (ae2e2698) behaves."""
    provider, calls = tracking_provider(delete_before_replace=False)
    engine = Engine({"pkgA": provider})
    ins = {"foo": "bar"}
    program = deleted_with_program(ins)
    snap = engine.update(program, []).snapshot
    assert len(snap) == 3 and len(calls["created"]) == 2
    urn_t, urn_d = snap[1].urn, snap[2].urn

    ins["foo"] = "baz"
    result = engine.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 3 and snap[1].urn == urn_t and snap[2].urn == urn_d
    assert len(calls["created"]) == 3  # HEAD: 4
    assert snap[1].id == "created-id-3"
    assert snap[2].id == "created-id-2"  # HEAD: "created-id-4"
    assert calls["deleted"] == [urn_t]  # as HEAD: resT deleted, resD not


def test_TestDeletedWithAddedSameStepAsReplace():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithAddedSameStepAsReplace, pulumi/pulumi HEAD
    (1b594989; v3.251.0 behaviour): recorded as v3.230.0 (ae2e2698) behaves."""
    provider, calls = tracking_provider(delete_before_replace=True)
    engine = Engine({"pkgA": provider})
    ins, link = {"foo": "bar"}, {"value": False}
    program = deleted_with_program(ins, link=lambda: link["value"])
    snap = engine.update(program, []).snapshot
    assert len(snap) == 3 and len(calls["created"]) == 2
    urn_t, urn_d = snap[1].urn, snap[2].urn

    link["value"], ins["foo"] = True, "baz"
    result = engine.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 3 and snap[1].urn == urn_t and snap[2].urn == urn_d
    assert len(calls["created"]) == 3  # HEAD: 4
    assert snap[1].id == "created-id-3"
    assert snap[2].id == "created-id-2"  # HEAD: "created-id-4"
    assert snap[2].deleted_with == urn_t  # as HEAD


def test_TestDeletedWithTargetedDestroy():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithTargetedDestroy, pulumi/pulumi HEAD
    (1b594989): v3.230.0 (ae2e2698) already behaves as HEAD asserts."""
    provider, calls = tracking_provider()
    engine = Engine({"pkgA": provider})

    def program(monitor):
        t = monitor.register(TYP, "resT", True)
        monitor.register(TYP, "resD", True, deleted_with=t.urn)

    snap = engine.update(program, []).snapshot
    assert len(snap) == 3
    urn_provider, urn_t, urn_d = (r.urn for r in snap)

    result = engine.destroy(snap, targets=[urn_t], target_dependents=True)
    assert result.error is None
    assert len(result.snapshot) == 1  # only the untargeted default provider survives
    assert result.snapshot[0].urn == urn_provider
    assert calls["deleted"] == [urn_t]
    assert urn_d not in calls["deleted"]


def test_TestDeletedWithProtectedDependentBlocksReplace():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithProtectedDependentBlocksReplace,
    pulumi/pulumi HEAD (1b594989; v3.251.0 behaviour): recorded as v3.230.0 (ae2e2698) behaves."""
    engine = Engine({"pkgA": deploytest(diff=tracking_provider(True)[0].diff, create=created_id)})
    ins = {"foo": "bar"}
    program = deleted_with_program(ins, protect=True)
    snap = engine.update(program, []).snapshot
    assert len(snap) == 3

    ins["foo"] = "baz"
    result = engine.update(program, snap)
    assert result.error is None  # HEAD: an error, "marked for protection"
    assert not any("marked for protection" in d for d in result.diagnostics)


# --- target_test.go: targeted destroys ------------------------------------------------------------------------------

COMPONENT_NAMES = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N"]


def parented_graph():
    """``generateParentedTestDependencyGraph``: components A, B, D, E, F; custom resources C, G..N. Children: A > D, I;
    D > G, H; B > E, F; E > J, K; F > L, M. Dependencies: I on G, K on H, N on H."""
    component, custom = "pkgA:index:Component", "pkgA:index:Resource"
    parents = {"D": "A", "E": "B", "F": "B", "G": "D", "H": "D", "I": "A", "J": "E", "K": "E", "L": "F", "M": "F"}
    urns: dict[str, str] = {}
    for n in COMPONENT_NAMES:
        type_ = component if n in "ABDEF" else custom
        parent = urns.get(parents.get(n, ""))
        chain = f"{parent.split('::')[2]}${type_}" if parent else type_
        urns[n] = urn(chain, n)
    ids = {"C": "2", "G": "6", "H": "7", "I": "8", "J": "9", "K": "10", "L": "11", "M": "12", "N": "13"}
    deps = {"I": ["G"], "K": ["H"], "N": ["H"]}
    old = [State(urn=urns[n], type=component if n in "ABDEF" else custom, custom=n not in "ABDEF", id=ids.get(n, ""),
                 parent=urns.get(parents.get(n, "")), inputs={"A": "foo"} if n in deps else {},
                 dependencies=[urns[d] for d in deps.get(n, [])],
                 property_dependencies={"A": [urns[d] for d in deps[n]]} if n in deps else {})
           for n in COMPONENT_NAMES]
    return urns, old


def test_TestDestroyTargetWithChildren():
    """pkg/engine/lifecycletest/target_test.go, TestDestroyTargetWithChildren, pulumi/pulumi v3.230.0 (ae2e2698)."""
    urns, old = parented_graph()

    def destroy(targets, target_dependents, expected=None):
        engine = Engine({"pkgA": deploytest(diff=changed_a_diff)})
        snapshot = add_default_providers(copy.deepcopy(old))
        destroy_targets = [urns[t] for t in targets]
        preview = engine.destroy(snapshot, preview=True, targets=destroy_targets, target_dependents=target_dependents)
        if not target_dependents:  # ExpectFailure: the preview fails and the destroy is not run
            assert preview.error
            return
        assert preview.error is None
        result = engine.destroy(snapshot, targets=destroy_targets, target_dependents=target_dependents)
        assert result.error is None
        assert len(result.steps) > 0
        deleted = set()
        for op, urn_ in successful(result):
            if op == "delete":
                deleted.add(urn_)
            else:
                assert op == "same"
        for target in destroy_targets:
            assert target in deleted
        assert deleted == {urns[n] for n in expected}

    destroy(["A"], True, "ADGHIKN")
    destroy(["A"], False)
    destroy(["B"], False)


def targeted_destroy_case(child: bool, delete=None):
    """The TestTargetDestroy* programs: resA, and resB depending on it (or its child)."""
    engine = Engine({"pkgA": deploytest(create=created_id, delete=delete)})
    res_a = urn(TYP, "resA")
    res_b = urn(f"{TYP}${TYP}", "resB") if child else urn(TYP, "resB")

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        if child:
            monitor.register(TYP, "resB", True, parent=a.urn)
        else:
            monitor.register(TYP, "resB", True, dependencies=[a.urn])

    def validate(snap):
        assert verify_integrity(snap) is None
        assert len(snap) == 3
        assert snap[1].urn == res_a
        assert snap[2].urn == res_b

    result = engine.update(program, [])
    assert result.error is None
    validate(result.snapshot)
    return engine, result.snapshot, res_a, res_b, validate


def test_TestTargetDestroyDependencyErrors():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDestroyDependencyErrors, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine, snap, res_a, _res_b, validate = targeted_destroy_case(child=False)
    result = engine.destroy(snap, targets=[res_a])
    assert result.error  # the dependent is neither a target nor --target-dependents
    validate(result.snapshot)


def test_TestTargetDestroyChildErrors():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDestroyChildErrors, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine, snap, res_a, _res_b, validate = targeted_destroy_case(child=True)
    result = engine.destroy(snap, targets=[res_a])
    assert result.error  # the child is neither a target nor --target-dependents
    validate(result.snapshot)


def test_TestTargetDestroyDeleteFails():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDestroyDeleteFails, pulumi/pulumi v3.230.0 (ae2e2698)."""

    def failing_delete(_old):
        raise ProviderError("can't delete")

    engine = Engine({"pkgA": deploytest(create=created_id, delete=failing_delete)})
    res_a = urn(TYP, "resA")

    def validate(snap):
        assert verify_integrity(snap) is None
        assert len(snap) == 2
        assert snap[1].urn == res_a

    result = engine.update(create_resa, [])
    assert result.error is None
    validate(result.snapshot)
    result = engine.destroy(result.snapshot, targets=[res_a])
    assert result.error
    validate(result.snapshot)


def failing_delete_of(expected_urn):
    def delete(old):
        assert old.urn == expected_urn
        raise ProviderError("can't delete")
    return delete


def test_TestTargetDestroyDependencyDeleteFails():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDestroyDependencyDeleteFails, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine, original, res_a, res_b, validate = targeted_destroy_case(
        child=False, delete=failing_delete_of(urn(TYP, "resB")))
    result = engine.destroy(original, targets=[res_a], target_dependents=True)
    assert result.error
    validate(result.snapshot)
    result = engine.destroy(original, targets=[res_a, res_b])
    assert result.error
    validate(result.snapshot)


def test_TestTargetDestroyChildDeleteFails():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDestroyChildDeleteFails, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine, original, res_a, res_b, validate = targeted_destroy_case(
        child=True, delete=failing_delete_of(urn(f"{TYP}${TYP}", "resB")))
    result = engine.destroy(original, targets=[res_a], target_dependents=True)
    assert result.error
    validate(result.snapshot)
    result = engine.destroy(original, targets=[res_a, res_b])
    assert result.error
    validate(result.snapshot)


def test_TestTargetDependentsExplicitProvider():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDependentsExplicitProvider, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})

    def program(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        prov = monitor.register(PROV_TYPE, "provider", True)
        monitor.register(TYP, "resA", True, provider=prov.urn)
        monitor.register(TYP, "resB", True, provider=prov.urn)

    targets = ["urn:pulumi:test::test::pulumi:providers:pkgA::provider"]
    result = engine.update(program, [], targets=targets, target_dependents=False)
    assert result.error is None
    assert len(result.snapshot) == 2  # stack, provider

    result = engine.update(program, [], targets=targets, target_dependents=True)
    assert result.error is None
    assert len(result.snapshot) == 4  # stack, provider, resA, resB


def test_TestTargetDependentsSiblingResources():
    """pkg/engine/lifecycletest/target_test.go, TestTargetDependentsSiblingResources, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = Engine({"pkgA": deploytest()})

    def program(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        x = monitor.register(TYP, "implicitX", True)
        monitor.register(TYP, "implicitY", True)
        monitor.register(TYP, "implicitZ", True, parent=x.urn)
        prov = monitor.register(PROV_TYPE, "provider", True)
        x = monitor.register(TYP, "explicitX", True, provider=prov.urn)
        monitor.register(TYP, "explicitY", True, provider=prov.urn)
        monitor.register(TYP, "explicitZ", True, parent=x.urn)

    targets = ["urn:pulumi:test::test::pkgA:m:typA::implicitX", "urn:pulumi:test::test::pkgA:m:typA::explicitX"]
    result = engine.update(program, [], targets=targets, target_dependents=False)
    assert result.error is None
    assert len(result.snapshot) == 5  # the stack, the two providers and the two X resources

    result = engine.update(program, [], targets=targets, target_dependents=True)
    assert result.error is None
    assert len(result.snapshot) == 7  # and the two Z resources


def test_TestTargetUntargetedParent():
    """pkg/engine/lifecycletest/target_test.go, TestTargetUntargetedParent, pulumi/pulumi v3.230.0 (ae2e2698). The
    target ``**child**`` is given as the one URN it matches."""
    engine = Engine({"pkgA": deploytest()})
    inputs = {}
    child = "urn:pulumi:test::test::component$pkgA:m:typA::child"
    returned = []

    def program(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        parent = monitor.register("component", "parent", False)
        monitor.register(TYP, "child", True, parent=parent.urn, inputs=inputs)
        returned.append(True)

    # target update: the parent is carried over with a same step.
    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 4
    inputs["foo"] = "bar"
    result = engine.update(program, result.snapshot, targets=[child])
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 4
    assert snap[1].name == "parent"
    assert snap[3].parent == snap[1].urn

    # target create: the parent would have to be created.
    returned.clear()
    result = engine.update(program, [], targets=[child])
    assert result.error and "untargeted create" in result.error
    assert not returned, "RegisterResource should not return"
    assert len(result.snapshot) == 2
    assert result.snapshot[0].type == "pulumi:pulumi:Stack"
    assert result.snapshot[1].type == "pulumi:providers:pkgA"


def test_TestDependencyUnreleatedToTargetUpdatedSucceeds():
    """pkg/engine/lifecycletest/target_test.go, TestDependencyUnreleatedToTargetUpdatedSucceeds, pulumi/pulumi v3.230.0
    (ae2e2698). The target ``**target**`` is given as the one URN it matches."""
    engine = Engine({"pkgA": deploytest()})
    inputs = {}

    def program(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        monitor.register(TYP, "target", True, inputs=inputs)
        monitor.register(TYP, "unrelated", True, inputs=inputs)

    def program2(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        monitor.register(TYP, "target", True, inputs=inputs)
        dep = monitor.register(TYP, "dep", True, inputs=inputs)
        monitor.register(TYP, "unrelated", True, dependencies=[dep.urn], inputs=inputs)

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 4

    inputs = {"foo": "bar"}
    result = engine.update(program2, result.snapshot, targets=[urn(TYP, "target")])
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 4
    assert snap[3].name == "unrelated"
    assert not snap[2].dependencies


def test_TestTargetUntargetedParentWithUpdatedDependency():
    """pkg/engine/lifecycletest/target_test.go, TestTargetUntargetedParentWithUpdatedDependency, pulumi/pulumi v3.230.0
    (ae2e2698). The target ``**child**`` is given as the one URN it matches."""
    engine = Engine({"pkgA": deploytest()})
    state = {"inputs": {}}
    child = "urn:pulumi:test::test::component$pkgA:m:typA::child"
    returned = []

    def program(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        monitor.register(TYP, "newResource", True)
        parent = monitor.register("component", "parent", False)
        monitor.register(TYP, "child", True, parent=parent.urn, inputs=state["inputs"])
        returned.append(True)

    def program2(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        new = monitor.register(TYP, "newResource", True)
        parent = monitor.register("component", "parent", False, dependencies=[new.urn], inputs=state["inputs"])
        monitor.register(TYP, "child", True, parent=parent.urn, inputs=state["inputs"])

    # target update
    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 5
    state["inputs"] = {"foo": "bar"}
    result = engine.update(program2, result.snapshot, targets=[child])
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 5
    assert snap[3].name == "parent"
    assert snap[4].parent == snap[3].urn
    assert not snap[3].dependencies

    # target create
    returned.clear()
    result = engine.update(program, [], targets=[child])
    assert result.error and "untargeted create" in result.error
    assert not returned, "RegisterResource should not return"
    assert len(result.snapshot) == 2
    assert result.snapshot[0].type == "pulumi:pulumi:Stack"
    assert result.snapshot[1].type == "pulumi:providers:pkgA"



def _chain_options(kind: str, upon: str) -> dict:
    if kind == "dependencies":
        return {"dependencies": [upon]}
    if kind == "property dependencies":
        return {"inputs": {"prop": "x"}, "property_dependencies": {"prop": [upon]}}
    return {"deleted_with": upon}


@pytest.mark.parametrize("removed", ["bottom", "middle", "entirety"])
@pytest.mark.parametrize("kind", ["dependencies", "property dependencies", "deleted with"])
def test_TestUntargetedDependencyChainsArePreserved(kind, removed):
    """pulumi/pulumi v3.230.0 (ae2e2698) ``pkg/engine/lifecycletest/target_test.go``
    TestUntargetedDependencyChainsArePreserved, subtests "dependencies", "property dependencies" and "deleted with",
    each "deleting the bottom / middle / entirety of a dependency chain": A, B on A, C on B and an unrelated TARGET;
    A, B or both leave the program; an update targeting TARGET succeeds and writes a state that passes
    VerifyIntegrity (getDependencySteps keeps each untargeted dependency before what depends on it)."""
    engine = Engine({"pkgA": deploytest()})

    def before(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        a = monitor.register("pkgA:m:typA", "a")
        b = monitor.register("pkgA:m:typA", "b", **_chain_options(kind, a.urn))
        monitor.register("pkgA:m:typA", "c", **_chain_options(kind, b.urn))
        monitor.register("pkgA:m:typA", "target")

    def after(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        if removed == "middle":
            monitor.register("pkgA:m:typA", "a")
        if removed == "bottom":
            b = monitor.register("pkgA:m:typA", "b")
            monitor.register("pkgA:m:typA", "c", **_chain_options(kind, b.urn))
        else:
            monitor.register("pkgA:m:typA", "c")
        monitor.register("pkgA:m:typA", "target")

    snap = engine.update(before).snapshot
    target = next(s.urn for s in snap if s.name == "target")
    result = engine.update(after, snap, targets=[target])
    assert result.error is None, result.error
    assert verify_integrity(result.snapshot) is None
