"""pulumi/pulumi v3.259.0 ``pkg/engine/lifecycletest/alias_test.go`` (``TestAliases``, ``TestDuplicatesDueToAliases``)
and ``step_generator.go`` ``providerChanged`` ported onto the offline engine (:mod:`offline.engine`): each registration
with its alias specs over the previous snapshot, and the steps the real engine takes (a rename, a retype, a new parent
or none are the same resource; an alias taken twice or a URN already taken as an alias is refused; a custom resource
that becomes a component is replaced whatever its aliases)."""

from __future__ import annotations

import pytest

from offline.engine import DiffResult, Engine, Provider

S = "urn:pulumi:test::test::"


def _diff(_urn, old, new_inputs, _preview):
    changed = sorted(k for k in set(old.inputs) | set(new_inputs) if old.inputs.get(k) != new_inputs.get(k))
    forced = ["forcesReplacement"] if old.inputs.get("forcesReplacement") != new_inputs.get("forcesReplacement") else []
    return DiffResult(bool(changed), forced, False, changed)


ENGINE = Engine({"pkgA": Provider(diff=_diff)})


def R(type_: str, name: str, **options) -> dict:
    return dict(type=type_, name=name, **options)


def up(snapshot, resources):
    def program(monitor):
        def register(items):
            for r in items:
                monitor.register(r["type"], r["name"], r.get("custom", True), inputs=r.get("inputs", {}),
                                 parent=r.get("parent"), dependencies=r.get("deps", []),
                                 delete_before_replace=r.get("dbr"), aliases=r.get("aliases", []))
        register(resources)
    result = ENGINE.update(program, snapshot or [])
    ops = {op for op, name in result.ops() if not name.startswith("default")}
    return result, ops


def test_TestAliases_renames_and_retypes_are_the_same_resource():
    """alias_test.go TestAliases: names, types and both, by spec or by URN, in any order of aliases."""
    result, _ = up(None, [R("pkgA:index:t1", "n1")])
    for resources in ([R("pkgA:index:t1", "n2", aliases=[{"name": "n1"}])],
                      [R("pkgA:index:t1", "n3", aliases=[{"name": "n2"}, {"name": "n1"}])],
                      [R("pkgA:index:t1", "n1", aliases=[{"urn": S + "pkgA:index:t1::n3"}])],
                      [R("pkgA:index:t2", "n1", aliases=[{"type": "pkgA:index:t1"}])],
                      [R("pkgA:othermod:t3", "n1", aliases=[{"type": "pkgA:index:t1"}, {"type": "pkgA:index:t2"}])]):
        result, ops = up(result.snapshot, resources)
        assert result.error is None and ops == {"same"}, (resources, ops)
    result, ops = up(result.snapshot, [R("pkgA:index:t4", "n2", inputs={"x": 42},
                                         aliases=[{"type": "pkgA:othermod:t3", "name": "n1"}])])
    assert ops == {"update"}
    result, ops = up(result.snapshot, [R("pkgA:index:t5", "n3", inputs={"x": 42, "forcesReplacement": 1},
                                         aliases=[{"type": "pkgA:index:t4", "name": "n2"}])])
    assert ops == {"replace", "create-replacement", "delete-replaced"}


def test_TestAliases_children_follow_their_parents_alias():
    """alias_test.go TestAliases ("n1-new-sub"): a renamed parent renames its children's old URNs (a child named after
    its parent keeps that prefix), two levels down; and a child given a parent (``noParent``) or losing one
    (``parentUrn``) is the same resource."""
    result, _ = up(None, [R("pkgA:index:t1", "n1"), R("pkgA:index:t2", "n1-sub", parent=S + "pkgA:index:t1::n1"),
                          R("pkgA:index:t3", "n1-sub-sub", parent=S + "pkgA:index:t1$pkgA:index:t2::n1-sub")])
    result, ops = up(result.snapshot, [
        R("pkgA:index:t1-new", "n1-new", aliases=[{"type": "pkgA:index:t1", "name": "n1"}]),
        R("pkgA:index:t2", "n1-new-sub", parent=S + "pkgA:index:t1-new::n1-new"),
        R("pkgA:index:t3", "n1-new-sub-sub", parent=S + "pkgA:index:t1-new$pkgA:index:t2::n1-new-sub")])
    assert result.error is None and ops == {"same"}, ops
    result, _ = up(None, [R("pkgA:index:t1", "one"), R("pkgA:index:t2", "two")])
    result, ops = up(result.snapshot, [R("pkgA:index:t1", "one"),
                                       R("pkgA:index:t2", "two", parent=S + "pkgA:index:t1::one",
                                         aliases=[{"noParent": True}])])
    assert ops == {"same"}, ops
    result, ops = up(result.snapshot, [R("pkgA:index:t1", "one"),
                                       R("pkgA:index:t2", "two", aliases=[{"parentUrn": S + "pkgA:index:t1::one"}])])
    assert ops == {"same"}, ops


def test_a_name_holding_colons_renames_with_its_parent():
    """``URN.Name()`` is everything after the type: a name holding ``::`` keeps its parent's renamed prefix."""
    result, _ = up(None, [R("pkgA:index:t1", "a::app", custom=False),
                          R("pkgA:index:t2", "a::app-fn", parent=S + "pkgA:index:t1::a::app")])
    result, ops = up(result.snapshot, [R("pkgA:index:t1", "a::newapp", custom=False, aliases=[{"name": "a::app"}]),
                                       R("pkgA:index:t2", "a::newapp-fn", parent=S + "pkgA:index:t1::a::newapp")])
    assert result.error is None and ops == {"same"}, ops


@pytest.mark.parametrize("resources", [
    # Two resources claiming one old state through aliases.
    [R("pkgA:index:t1", "n2", aliases=[{"name": "n1"}]), R("pkgA:index:t2", "n3", aliases=[{"type": "pkgA:index:t1",
                                                                                           "name": "n1"}])],
    # TestDuplicatesDueToAliases case 2: a URN registered after another resource took it as its alias.
    [R("pkgA:index:t1", "n2", aliases=[{"name": "n1"}]), R("pkgA:index:t1", "n1")],
], ids=["alias-taken-twice", "urn-taken-as-alias"])
def test_TestDuplicatesDueToAliases_are_refused(resources):
    result, _ = up(None, [R("pkgA:index:t1", "n1")])
    result, _ = up(result.snapshot, resources)
    assert result.error is not None and "Duplicate resource" in result.error, result.error


def test_a_custom_resource_that_becomes_a_component_is_replaced_whatever_its_alias():
    """``providerChanged``: an old or new side without a provider is a change, before any alias is looked at."""
    result, _ = up(None, [R("pkgA:m:typA", "resA")])
    result, ops = up(result.snapshot, [R("prog::myType", "resA", custom=False, aliases=[{"type": "pkgA:m:typA"}])])
    assert "same" not in {op for op, name in result.ops() if name == "resA"}, result.ops()
