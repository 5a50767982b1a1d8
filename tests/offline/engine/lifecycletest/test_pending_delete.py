"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/pending_delete_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import Engine, Result, State
from tests.support.deploytest import TYP, add_default_providers, deploytest, run_plan, successful, urn


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
