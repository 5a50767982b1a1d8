"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/replace_with_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import Engine
from tests.support.deploytest import TYP, tracking_provider


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
