"""offline/engine/step_generator.py: delete-first chains, pending deletes, ignoreChanges, replaceOnChanges, targets,
run on the engine directly (pulumi/pulumi v3.230.0 ``pkg/resource/deploy/step_generator.go``).
"""

from __future__ import annotations

import pytest

from offline import engine


def test_a_provider_resource_is_updated_by_the_registry_not_by_the_plugin():
    """pulumi/pulumi v3.230.0 ``pkg/resource/deploy/providers/registry.go`` (``Registry.Update``): a changed provider
    resource is updated by the engine's registry, which returns the new inputs; the plugin's Update is never called
    for it."""
    calls = []
    offline = engine.Engine({"pkgA": engine.Provider(update=lambda urn, old, new,
                                                     preview: calls.append(urn) or dict(new))})
    config = {"region": "a"}

    def program(monitor):
        monitor.register("pulumi:providers:pkgA", "prov", inputs=dict(config))

    first = offline.update(program)
    config["region"] = "b"
    second = offline.update(program, first.snapshot)
    assert second.error is None and ("update", "prov") in second.ops()
    assert calls == [] and second.state("prov")[0].outputs == {"region": "b"}


T_A = "pkgA:m:typA"


def _replace_on_k(urn, old, new_inputs, preview):
    changed = sorted(k for k in set(old.inputs) | set(new_inputs) if old.inputs.get(k) != new_inputs.get(k))
    return engine.DiffResult(bool(changed), [k for k in changed if k == "k"], False, changed)


def test_a_chain_member_the_program_dropped_leaves_the_state_in_the_same_run():
    """step.go DeleteStep.Apply marks a delete-first chain member pendingReplacement (in a preview too); when the
    program no longer registers it, GenerateDeletes gives it a RemovePendingReplaceStep (isOperatedOn ignores
    sg.deletes), so it leaves the state in this run and the next run has nothing to do."""
    offline = engine.Engine({"pkgA": engine.Provider(diff=_replace_on_k)})
    value = {"k": "1"}

    def before(monitor):
        a = monitor.register(T_A, "a", inputs=dict(value))
        monitor.register(T_A, "b", inputs={"k": a.outputs["k"]}, property_dependencies={"k": [a.urn]})

    def after(monitor):
        monitor.register(T_A, "a", inputs=dict(value), delete_before_replace=True)

    first = offline.update(before)
    value["k"] = "2"
    for preview in (True, False):
        result = offline.update(after, first.snapshot, preview=preview)
        assert ("remove-pending-replace", "b") in result.ops(), result.ops()
    assert [s.name for s in result.snapshot] == ["default", "a"]
    assert offline.update(after, result.snapshot).ops() == [("same", "default"), ("same", "a")]


def test_a_pending_delete_copy_in_a_chain_is_deleted_once():
    """continueStepsFromDiff: a dependent already pending deletion gets a plain DeleteStep, which takes it out of the
    state (deleteSnapshotMutation.End); the next run does not delete it again."""
    deleted = []
    offline = engine.Engine({"pkgA": engine.Provider(diff=_replace_on_k,
                                                     delete=lambda old: deleted.append((old.name, old.id)))})
    p = "urn:pulumi:test::test::pulumi:providers:pkgA::default"
    a, b = "urn:pulumi:test::test::pkgA:m:typA::a", "urn:pulumi:test::test::pkgA:m:typA::b"
    state = [engine.State(p, "pulumi:providers:pkgA", id="p0"),
             engine.State(a, T_A, id="a1", inputs={"k": "1"}, outputs={"k": "1"}, provider=f"{p}::p0"),
             engine.State(b, T_A, id="b1", inputs={"k": "1"}, provider=f"{p}::p0", property_dependencies={"k": [a]},
                          delete=True),
             engine.State(b, T_A, id="b2", inputs={"k": "1"}, provider=f"{p}::p0", property_dependencies={"k": [a]})]

    def program(monitor):
        first = monitor.register(T_A, "a", inputs={"k": "2"}, delete_before_replace=True)
        monitor.register(T_A, "b", inputs={"k": first.outputs["k"]}, property_dependencies={"k": [first.urn]})

    result = offline.update(program, state)
    assert result.error is None and ("b", "b1") in deleted
    assert [(s.name, s.delete) for s in result.snapshot if s.name == "b"] == [("b", False)]
    deleted.clear()
    offline.update(program, result.snapshot)
    assert ("b", "b1") not in deleted


def test_ignore_changes_keep_the_old_value_before_the_diff():
    """continueStepsFromImport: processIgnoreChanges puts the old value back before Check and Diff, so an ignored
    input that changed is a same, and the state keeps the old value."""
    offline = engine.Engine({"pkgA": engine.Provider(diff=_replace_on_k)})
    value = {"k": "1"}

    def program(monitor):
        monitor.register(T_A, "a", inputs=dict(value), ignore_changes=["k"])

    first = offline.update(program)
    value["k"] = "2"
    second = offline.update(program, first.snapshot)
    assert second.ops() == [("same", "default"), ("same", "a")]
    assert second.state("a")[0].inputs == {"k": "1"}


def _replaced_for_a_changed_path(listed: str, detailed_key: str) -> bool:
    """Run the offline engine: a resource whose provider reports ``detailed_key`` changed (with its top-level key
    ``values``), with ``listed`` in replaceOnChanges; True when the preview replaces it."""
    inputs = {"values": {"v": 1}}

    def diff(_urn, old, new_inputs, _preview):
        changed = old.inputs != new_inputs
        return engine.DiffResult(changed, [], False, ["values", detailed_key] if changed else [])

    offline = engine.Engine({"pkgA": engine.Provider(diff=diff, create=lambda _u, i, _p: ("id", dict(i)))})

    def program(monitor):
        monitor.register("pkgA:index:typ", "res", True, inputs=dict(inputs), replace_on_changes=[listed])

    first = offline.update(program, [])
    assert first.error is None
    inputs["values"] = {"v": 2}
    second = offline.update(program, first.snapshot, preview=True)
    assert second.error is None
    return any(s.op == "replace" for s in second.steps)


@pytest.mark.parametrize("listed, detailed_key", [
    # resource.PropertyPath.Contains (pulumi/pulumi v3.230.0 sdk/go/common/resource/properties_path.go): the listed
    # path's segments are a prefix of the changed path's, whatever the spelling.
    ("values.pyroscope.tolerations", "values.pyroscope.tolerations[0]"),  # an index below the listed path
    ('values.pyroscope.service.annotations', 'values.pyroscope.service.annotations["a.b/c"]'),  # a quoted key below
    ('values["pyroscope"].persistence', "values.pyroscope.persistence.size"),  # the same path, bracket spelling
    ("values.*.persistence", "values.pyroscope.persistence.size"),  # "*" matches one segment at its level
    ("values.pyroscope.tolerations[*].key", "values.pyroscope.tolerations[1].key"),  # "*" matches an index too
])
def test_replace_on_changes_matches_as_property_path_contains(listed, detailed_key):
    """pulumi/pulumi v3.230.0 pkg/resource/deploy/step_generator.go applyReplaceOnChanges parses both sides with
    resource.ParsePropertyPath and replaces when ``replaceOnChangePath.Contains(diffPath)``: an index or quoted key
    directly below the listed path, a bracket spelling of the same path, and a ``*`` at any level all match (a
    string-prefix match missed each)."""
    assert _replaced_for_a_changed_path(listed, detailed_key)


@pytest.mark.parametrize("listed, detailed_key", [
    ("values.pyroscope.persistence", "values.pyroscope.service.port"),  # a sibling
    ("values.pyroscope.persistence", "values.pyroscope.persistenceX"),  # a longer name is another key
    ("values.pyroscope.persistence.size", "values.pyroscope.persistence"),  # the changed path is above the listed one
    ("values.pyroscope.tolerations[0]", "values.pyroscope.tolerations[1]"),  # another index
    ("values.*.persistence", "values.pyroscope.service.port"),
])
def test_replace_on_changes_leaves_paths_it_does_not_contain(listed, detailed_key):
    """The other half of PropertyPath.Contains: a path outside the listed one is an update, and the harness above
    sees a replacement only when there is one. A dotted path below the listed one matched before the port too."""
    assert _replaced_for_a_changed_path("values.pyroscope.persistence", "values.pyroscope.persistence.size")
    assert not _replaced_for_a_changed_path(listed, detailed_key)


def test_replace_on_changes_without_a_detailed_diff_sees_top_level_keys_only():
    """applyReplaceOnChanges without detailed-diff paths has only the changed keys, which are top-level: ``values``
    is contained by ``values`` and ``*`` but not by ``values.pyroscope.persistence`` (Contains needs the changed path
    at least as long), so a nested listed path replaces nothing there (pulumi/pulumi v3.230.0 step_generator.go,
    properties_path.go; step_generator_test.go TestApplyReplaceOnChangesEmptyDetailedDiff for the top-level case)."""
    assert engine.replace_on_changes_keys(["values"], ["values"]) == ["values"]
    assert engine.replace_on_changes_keys(["values"], ["*"]) == ["values"]
    assert engine.replace_on_changes_keys(["values"], ["values.pyroscope.persistence"]) == []


def test_a_replace_on_changes_path_that_does_not_parse_fails_the_operation():
    """applyReplaceOnChanges returns ParsePropertyPath's error for a listed path, and the step generator fails the
    operation with it (step_generator.go @ v3.230.0)."""
    offline = engine.Engine({"pkgA": engine.Provider(diff=_replace_on_k)})
    value = {"k": "1"}

    def program(monitor):
        monitor.register(T_A, "a", inputs=dict(value), replace_on_changes=["k["])

    first = offline.update(program)
    value["k"] = "2"
    second = offline.update(program, first.snapshot)
    assert second.error is not None and "missing closing bracket in array index" in " ".join(second.diagnostics)


def test_a_targeted_update_refuses_to_delete_an_untargeted_dependent():
    """GenerateDeletes: the resources a targeted update may delete are the targets and what depends on them
    (getTargetDependents); deleting one the --target list does not name is diagnostic 2014, which stops an update
    before any delete and fails a preview."""
    offline = engine.Engine({})

    def before(monitor):
        a = monitor.register(T_A, "a")
        monitor.register(T_A, "b", dependencies=[a.urn])

    def after(monitor):
        monitor.register(T_A, "a")

    first = offline.update(before)
    a_urn = first.state("a")[0].urn
    for preview in (True, False):
        result = offline.update(after, first.snapshot, preview=preview, targets=[a_urn])
        assert result.error and any("will be destroyed but was not specified in --target list" in d
                                    for d in result.diagnostics)
    assert [s.name for s in result.snapshot] == ["default", "a", "b"]
    assert ("delete", "b") in offline.update(after, first.snapshot, targets=[a_urn], target_dependents=True).ops()


# --- Aliases: pulumi/pulumi v3.259.0 pkg/engine/lifecycletest/alias_test.go (TestAliases, TestDuplicatesDueToAliases)
# and step_generator.go (getOldResource, generateAliases, collapseAliasToUrn, inheritedChildAlias, providerChanged).

U = "urn:pulumi:test::test::"


def _alias_diff(_urn, old, new_inputs, _preview):
    changed = sorted(k for k in set(old.inputs) | set(new_inputs) if old.inputs.get(k) != new_inputs.get(k))
    forced = ["forcesReplacement"] if old.inputs.get("forcesReplacement") != new_inputs.get("forcesReplacement") else []
    return engine.DiffResult(bool(changed), forced, False, changed)


_ALIAS_ENGINE = engine.Engine({"pkgA": engine.Provider(diff=_alias_diff)})


def _r(type_: str, name: str, **options) -> dict:
    return dict(type=type_, name=name, **options)


def _up(snapshot, resources):
    def program(monitor):
        def register(items):
            for r in items:
                monitor.register(r["type"], r["name"], r.get("custom", True), inputs=r.get("inputs", {}),
                                 parent=r.get("parent"), dependencies=r.get("deps", []),
                                 delete_before_replace=r.get("dbr"), aliases=r.get("aliases", []))
        register(resources)
    result = _ALIAS_ENGINE.update(program, snapshot or [])
    ops = {op for op, name in result.ops() if not name.startswith("default")}
    return result, ops


def test_aliases_renames_and_retypes_are_the_same_resource():
    """alias_test.go TestAliases: names, types and both, by spec or by URN, in any order of aliases."""
    result, _ = _up(None, [_r("pkgA:index:t1", "n1")])
    for resources in ([_r("pkgA:index:t1", "n2", aliases=[{"name": "n1"}])],
                      [_r("pkgA:index:t1", "n3", aliases=[{"name": "n2"}, {"name": "n1"}])],
                      [_r("pkgA:index:t1", "n1", aliases=[{"urn": U + "pkgA:index:t1::n3"}])],
                      [_r("pkgA:index:t2", "n1", aliases=[{"type": "pkgA:index:t1"}])],
                      [_r("pkgA:othermod:t3", "n1", aliases=[{"type": "pkgA:index:t1"}, {"type": "pkgA:index:t2"}])]):
        result, ops = _up(result.snapshot, resources)
        assert result.error is None and ops == {"same"}, (resources, ops)
    result, ops = _up(result.snapshot, [_r("pkgA:index:t4", "n2", inputs={"x": 42},
                                         aliases=[{"type": "pkgA:othermod:t3", "name": "n1"}])])
    assert ops == {"update"}
    result, ops = _up(result.snapshot, [_r("pkgA:index:t5", "n3", inputs={"x": 42, "forcesReplacement": 1},
                                         aliases=[{"type": "pkgA:index:t4", "name": "n2"}])])
    assert ops == {"replace", "create-replacement", "delete-replaced"}


def test_aliases_children_follow_their_parents_alias():
    """alias_test.go TestAliases ("n1-new-sub"): a renamed parent renames its children's old URNs (a child named after
    its parent keeps that prefix), two levels down; and a child given a parent (``noParent``) or losing one
    (``parentUrn``) is the same resource."""
    result, _ = _up(None, [_r("pkgA:index:t1", "n1"), _r("pkgA:index:t2", "n1-sub", parent=U + "pkgA:index:t1::n1"),
                          _r("pkgA:index:t3", "n1-sub-sub", parent=U + "pkgA:index:t1$pkgA:index:t2::n1-sub")])
    result, ops = _up(result.snapshot, [
        _r("pkgA:index:t1-new", "n1-new", aliases=[{"type": "pkgA:index:t1", "name": "n1"}]),
        _r("pkgA:index:t2", "n1-new-sub", parent=U + "pkgA:index:t1-new::n1-new"),
        _r("pkgA:index:t3", "n1-new-sub-sub", parent=U + "pkgA:index:t1-new$pkgA:index:t2::n1-new-sub")])
    assert result.error is None and ops == {"same"}, ops
    result, _ = _up(None, [_r("pkgA:index:t1", "one"), _r("pkgA:index:t2", "two")])
    result, ops = _up(result.snapshot, [_r("pkgA:index:t1", "one"),
                                       _r("pkgA:index:t2", "two", parent=U + "pkgA:index:t1::one",
                                         aliases=[{"noParent": True}])])
    assert ops == {"same"}, ops
    result, ops = _up(result.snapshot, [_r("pkgA:index:t1", "one"),
                                       _r("pkgA:index:t2", "two", aliases=[{"parentUrn": U + "pkgA:index:t1::one"}])])
    assert ops == {"same"}, ops


def test_a_name_holding_colons_renames_with_its_parent():
    """``URN.Name()`` is everything after the type: a name holding ``::`` keeps its parent's renamed prefix."""
    result, _ = _up(None, [_r("pkgA:index:t1", "a::app", custom=False),
                          _r("pkgA:index:t2", "a::app-fn", parent=U + "pkgA:index:t1::a::app")])
    result, ops = _up(result.snapshot, [_r("pkgA:index:t1", "a::newapp", custom=False, aliases=[{"name": "a::app"}]),
                                       _r("pkgA:index:t2", "a::newapp-fn", parent=U + "pkgA:index:t1::a::newapp")])
    assert result.error is None and ops == {"same"}, ops


@pytest.mark.parametrize("resources", [
    # Two resources claiming one old state through aliases.
    [_r("pkgA:index:t1", "n2", aliases=[{"name": "n1"}]), _r("pkgA:index:t2", "n3", aliases=[{"type": "pkgA:index:t1",
                                                                                           "name": "n1"}])],
    # TestDuplicatesDueToAliases case 2: a URN registered after another resource took it as its alias.
    [_r("pkgA:index:t1", "n2", aliases=[{"name": "n1"}]), _r("pkgA:index:t1", "n1")],
], ids=["alias-taken-twice", "urn-taken-as-alias"])
def test_duplicates_due_to_aliases_are_refused(resources):
    result, _ = _up(None, [_r("pkgA:index:t1", "n1")])
    result, _ = _up(result.snapshot, resources)
    assert result.error is not None and "Duplicate resource" in result.error, result.error


def test_a_custom_resource_that_becomes_a_component_is_replaced_whatever_its_alias():
    """``providerChanged``: an old or new side without a provider is a change, before any alias is looked at."""
    result, _ = _up(None, [_r("pkgA:m:typA", "resA")])
    result, ops = _up(result.snapshot, [_r("prog::myType", "resA", custom=False, aliases=[{"type": "pkgA:m:typA"}])])
    assert "same" not in {op for op, name in result.ops() if name == "resA"}, result.ops()
