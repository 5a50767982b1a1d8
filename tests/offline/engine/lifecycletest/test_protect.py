"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/protect_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import DiffResult, Engine, ProviderError
from tests.support.deploytest import TYP, deploytest


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
