"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/target_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

import copy
import itertools
from typing import Callable, Optional

import pytest

from offline.engine import DiffResult, Engine, ProviderError, State, verify_integrity
from tests.support.deploytest import (
    COMPLEX_NAMES,
    DEFAULT_PROVIDER,
    PROV_TYPE,
    TYP,
    add_default_providers,
    changed_a_diff,
    complex_graph,
    created_id,
    deploytest,
    run_plan,
    successful,
    urn,
)


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


def untargeted_create_referenced(options: dict, diff=None, skipped: Optional[list] = None):
    """The TestCreateDuringTargetedUpdate_UntargetedCreateReferencedBy* cases: b exists; the program adds a and makes
    b refer to it (``options``); ``--target **b**`` (only b's URN matches) fails with "untargeted create". ``skipped``
    collects what a's registration answered (its create is skipped)."""
    def before(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        monitor.register(TYP, "b", True)

    snap = Engine({"pkgA": deploytest()}).update(before, [])
    assert snap.error is None
    returned = []

    def after(monitor):
        monitor.register("pulumi:pulumi:Stack", "test", False)
        a = monitor.register(TYP, "a", True)
        if skipped is not None:
            skipped.append(a)
        monitor.register(TYP, "b", True, **{k: (v(a.urn)) for k, v in options.items()})
        returned.append("b")  # "RegisterResource should not return"

    result = Engine({"pkgA": deploytest(diff=diff)}).update(after, snap.snapshot, targets=[urn(TYP, "b")])
    assert result.error and "untargeted create" in result.error
    assert not returned, "RegisterResource should not return"


def diff_b_changed(urn_, _old, _new_inputs, _preview):
    return DiffResult(True) if urn_.endswith("::b") else DiffResult()


def test_TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByChangedTarget():
    """pkg/engine/lifecycletest/target_test.go,
    TestCreateDuringTargetedUpdate_UntargetedCreateReferencedByChangedTarget, pulumi/pulumi v3.230.0 (ae2e2698); and
    v3.277.0's added assertion: the skipped create of a answers the program with unknown outputs (v3.256.0)."""
    skipped: list = []
    untargeted_create_referenced({"dependencies": lambda a: [a]}, diff=diff_b_changed, skipped=skipped)
    assert [r.unknown for r in skipped] == [True]


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
