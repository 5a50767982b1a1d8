"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/delete_before_replace_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import DiffResult, Engine
from tests.support.deploytest import (
    PROV_TYPE,
    add_default_providers,
    changed_a_diff,
    complex_graph,
    created_id,
    deploytest,
    run_plan,
    successful,
    urn,
)


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
