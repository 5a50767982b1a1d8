"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/taint_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import DiffResult, Engine, State
from tests.support.deploytest import TYP, add_default_providers, deploytest, urn


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
