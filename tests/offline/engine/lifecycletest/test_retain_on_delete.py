"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/retain_on_delete_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import DiffResult, Engine
from tests.support.deploytest import TYP, deploytest


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
