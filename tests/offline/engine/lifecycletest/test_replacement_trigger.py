"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/replacement_trigger_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import UNKNOWN, Engine, Result
from tests.support.deploytest import TYP, deploytest


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
