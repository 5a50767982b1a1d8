"""pulumi/pulumi v3.277.0 ``pkg/engine/lifecycletest/deleted_with_replace_test.go`` on the offline engine
(:mod:`offline.engine`): a resource whose ``deletedWith`` names a resource being replaced is replaced too (v3.260.0,
pulumi/pulumi#23818; before it the dependent stayed in the state while the cloud deleted it with its target). The
cases are read at commit 1b5949891b3cefcb9974752b24a5ecef0acc86c8 (the change's merge; the module cache's v3.277.0
copy asserts the same): the same programs, provider fakes, operations and assertions.
"""

from __future__ import annotations

from offline.engine import Engine
from tests.support.deploytest import TYP, created_id, deploytest, tracking_provider

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
    pulumi/pulumi v3.277.0 (commit 1b594989): resD, deleted with resT, is replaced with it though its own inputs do
    not change; only resT's Delete is called (the cloud deletes resD with it)."""
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
    assert len(calls["created"]) == 4
    assert snap[1].id == "created-id-3"
    assert snap[2].id == "created-id-4"
    assert calls["deleted"] == [urn_t]


def test_TestDeletedWithTransitiveChain():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithTransitiveChain, pulumi/pulumi v3.277.0
    (commit 1b594989): a chain resT <- resD <- resD2 of ``deletedWith`` replaces as a whole; only resT's Delete is
    called."""
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
    assert len(calls["created"]) == 6
    assert [r.id for r in snap[1:]] == ["created-id-4", "created-id-5", "created-id-6"]
    assert calls["deleted"] == [urn_t]


def test_TestDeletedWithDependentReplacedOnCreateBeforeDelete():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithDependentReplacedOnCreateBeforeDelete,
    pulumi/pulumi v3.277.0 (commit 1b594989): the cascade holds for a create-first replacement of resT too (the diff
    sees resT replaced); old resD's Delete is skipped, as resT's delete takes it."""
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
    assert len(calls["created"]) == 4
    assert snap[1].id == "created-id-3"
    assert snap[2].id == "created-id-4"
    assert calls["deleted"] == [urn_t]


def test_TestDeletedWithAddedSameStepAsReplace():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithAddedSameStepAsReplace, pulumi/pulumi
    v3.277.0 (commit 1b594989): a ``deletedWith`` added in the run that replaces its target replaces the
    dependent (the diff reads the new link, not the old state's)."""
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
    assert len(calls["created"]) == 4
    assert snap[1].id == "created-id-3"
    assert snap[2].id == "created-id-4"
    assert snap[2].deleted_with == urn_t


def test_TestDeletedWithTargetedDestroy():
    """pkg/engine/lifecycletest/deleted_with_replace_test.go, TestDeletedWithTargetedDestroy, pulumi/pulumi v3.277.0
    (the case as at commit 1b594989; v3.230.0, ae2e2698, already behaved so)."""
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
    pulumi/pulumi v3.277.0 (commit 1b594989): a protected resource deleted with resT stops resT's delete-first
    replacement, with the delete-first chain's protection error."""
    engine = Engine({"pkgA": deploytest(diff=tracking_provider(True)[0].diff, create=created_id)})
    ins = {"foo": "bar"}
    program = deleted_with_program(ins, protect=True)
    snap = engine.update(program, []).snapshot
    assert len(snap) == 3

    ins["foo"] = "baz"
    result = engine.update(program, snap)
    assert result.error is not None and "marked for protection" in result.error
