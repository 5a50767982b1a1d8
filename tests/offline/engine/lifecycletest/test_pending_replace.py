"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/pending_replace_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import DiffResult, Engine, ProviderError
from tests.support.deploytest import TYP, deploytest, names


def replace_a_dbr(urn_, _old, _new_inputs, _preview):
    if urn_.endswith("::resA"):
        return DiffResult(True, ["key"], delete_before_replace=True)
    return DiffResult()


def test_TestPendingReplaceFailureDoesNotViolateSnapshotIntegrity():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceFailureDoesNotViolateSnapshotIntegrity,
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    calls = {"diffs": set(), "deletes": set(), "creates": set()}
    suffix = {"value": "created-id"}

    def replacing_a_diff(urn_, _old, _new_inputs, _preview):
        calls["diffs"].add(urn_.rsplit("::", 1)[-1])
        if urn_.endswith("::resA"):
            return DiffResult(True, ["key"], delete_before_replace=True)
        if urn_.endswith("::resB"):
            return DiffResult(True)
        return DiffResult()

    def throwing_delete(old):
        calls["deletes"].add(old.name)
        if old.name == "resA":
            raise ProviderError("interrupt replace")

    def tracking_delete(old):
        calls["deletes"].add(old.name)

    def tracking_create(urn_, inputs, _preview):
        calls["creates"].add(urn_.rsplit("::", 1)[-1])
        return f"{urn_.rsplit('::', 1)[-1]}-{suffix['value']}", dict(inputs)

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, dependencies=[a.urn])

    up = Engine({"pkgA": deploytest()}).update(program, [])
    assert up.error is None
    assert names(up.snapshot) == ["default", "resA", "resB"]

    replace = Engine({"pkgA": deploytest(diff=replacing_a_diff, delete=throwing_delete)}).update(program, up.snapshot)
    assert "interrupt replace" in replace.error
    snap = replace.snapshot
    assert len(snap) == 3
    assert snap[0].name == "default"
    assert snap[1].name == "resA"
    assert "resA" in calls["diffs"], "Diff should be called on resA"
    assert "resA" in calls["deletes"], "Delete should be called on resA as part of replacement of resA"
    assert not snap[1].pending_replacement, "resA should not be pending replacement following a failed deletion"
    assert snap[2].name == "resB"

    calls = {"diffs": set(), "deletes": set(), "creates": set()}
    suffix["value"] = "replaced-id"
    retry = Engine({"pkgA": deploytest(diff=replacing_a_diff, delete=tracking_delete, create=tracking_create)})
    result = retry.update(program, snap)
    assert result.error is None
    snap = result.snapshot
    assert len(snap) == 3
    assert snap[0].name == "default"
    assert "resA" in calls["diffs"]
    assert "resA" in calls["deletes"], "Delete should be called as part of replacement of resA"
    assert "resA" in calls["creates"], "Create should be called as part of replacement of resA"
    assert snap[1].id == "resA-replaced-id"
    assert snap[2].name == "resB"
    assert "resB" in calls["diffs"], "Diff should be called on resB"


def interrupted_dbr():
    """Operations 1 and 2 of the TestPendingReplaceResume* cases: create resA, then replace it delete-before-replace
    and fail the create. Returns the snapshot (resA pending replacement) and the call record."""
    calls = {"delete": False, "create": False}

    def tracked_delete(_old):
        calls["delete"] = True

    def throwing_create(_urn, _inputs, _preview):
        calls["create"] = True
        raise ProviderError("interrupt replace")

    def program(monitor):
        monitor.register(TYP, "resA", True)

    up = Engine({"pkgA": deploytest()}).update(program, [])
    assert up.error is None
    assert names(up.snapshot) == ["default", "resA"]

    replace = Engine({"pkgA": deploytest(diff=replace_a_dbr, delete=tracked_delete, create=throwing_create)})
    result = replace.update(program, up.snapshot)
    assert "interrupt replace" in result.error
    assert names(result.snapshot) == ["default", "resA"]
    assert calls["delete"], "Delete should be called as part of replacement"
    assert result.snapshot[1].pending_replacement
    return program, result.snapshot


def resume_provider(calls, diff=replace_a_dbr):
    def tracked_delete(_old):
        calls["delete"] = True

    def tracked_create(_urn, inputs, _preview):
        calls["create"] = True
        return "created-id", dict(inputs)

    return deploytest(diff=diff, delete=tracked_delete, create=tracked_create)


def test_TestPendingReplaceResumeWithSameGoals():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithSameGoals, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    program, snap = interrupted_dbr()
    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls)}).update(program, snap)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA"]
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (same goals)"
    assert calls["create"], "Create should be called when resuming a replacement (same goals)"
    assert not result.snapshot[1].pending_replacement


def test_TestPendingReplaceResumeWithSameGoalsRefreshRunProgram():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithSameGoalsRefreshRunProgram,
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    program, snap = interrupted_dbr()
    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls)}).update(program, snap, refresh=True)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA"]
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (same goals)"
    assert calls["create"], "Create should be called when resuming a replacement (same goals)"
    assert not result.snapshot[1].pending_replacement


def test_TestPendingReplaceResumeWithDeletedGoals():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithDeletedGoals, pulumi/pulumi
    v3.230.0 (ae2e2698)."""
    _program, snap = interrupted_dbr()
    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls)}).update(lambda monitor: None, snap)
    assert result.error is None
    assert len(result.snapshot) == 0
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (deleted goals)"
    assert not calls["create"], "Create shouldn't be called when resuming a replacement (deleted goals)"


def test_TestPendingReplaceResumeWithUpdatedGoals():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceResumeWithUpdatedGoals, pulumi/pulumi
    v3.230.0 (ae2e2698)."""
    program, snap = interrupted_dbr()

    def non_replace_diff(urn_, _old, _new_inputs, _preview):
        if urn_.endswith("::resA"):
            return DiffResult(True, delete_before_replace=True)
        return DiffResult()

    calls = {"delete": False, "create": False}
    result = Engine({"pkgA": resume_provider(calls, non_replace_diff)}).update(program, snap)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA"]
    assert not calls["delete"], "Delete shouldn't be called a second time when resuming a replacement (updated goals)"
    assert calls["create"], "Create should be called when resuming a replacement (updated goals)"
    assert not result.snapshot[1].pending_replacement


def test_TestInteruptedPendingReplace():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestInteruptedPendingReplace, pulumi/pulumi v3.230.0
    (ae2e2698)."""

    def program(monitor):
        a = monitor.register(TYP, "resA", True, delete_before_replace=True)
        monitor.register(TYP, "resB", True, dependencies=[a.urn])

    def diff(urn_, _old, _new_inputs, _preview):
        if urn_.endswith("::resA"):
            return DiffResult(True, ["key"])
        return DiffResult(False)

    def failing_create(urn_, _inputs, _preview):
        if urn_.endswith("::resA"):
            raise ProviderError("interrupt replace")
        return "", {}

    up = Engine({"pkgA": deploytest()}).update(program, [])
    assert up.error is None
    assert names(up.snapshot) == ["default", "resA", "resB"]

    failing = Engine({"pkgA": deploytest(diff=diff, create=failing_create)})
    replace = failing.update(program, up.snapshot)
    assert "interrupt replace" in replace.error
    assert names(replace.snapshot) == ["default", "resA", "resB"]
    assert replace.snapshot[1].pending_replacement

    # Resume with the create failing again.
    second = failing.update(program, replace.snapshot)
    assert "interrupt replace" in second.error
    assert names(second.snapshot) == ["default", "resA", "resB"]
    assert second.snapshot[1].pending_replacement

    # Resume with the create succeeding.
    ok = Engine({"pkgA": deploytest(diff=diff, create=lambda _urn, inputs, _preview: ("created-id", dict(inputs)))})
    result = ok.update(program, second.snapshot)
    assert result.error is None
    assert names(result.snapshot) == ["default", "resA", "resB"]
    assert not result.snapshot[1].pending_replacement


def dependent_chain_program(inputs_a, expect_error=None):
    """The TestPendingReplaceDependent* program: resA (delete-first) and resB, whose input ``A`` depends on resA."""

    def program(monitor):
        a = monitor.register(TYP, "resA", True, inputs=dict(inputs_a), delete_before_replace=True)
        monitor.register(TYP, "resB", True, inputs={"A": "value"}, dependencies=[a.urn],
                         property_dependencies={"A": [a.urn]})
    return program


def replace_on_a_changed(_urn, old, new_inputs, _preview):
    if old.outputs.get("A") != new_inputs.get("A"):
        return DiffResult(True, ["A"])
    return DiffResult()


def tracking(calls, fail_delete=None, fail_create=None):
    """The cases' provider: Diff replaces on ``A``; Delete and Create record the name, and fail for the one given."""

    def delete(old):
        calls["deletes"].add(old.name)
        if old.name == fail_delete:
            raise ProviderError("interrupt replace")

    def create(urn_, inputs, _preview):
        name = urn_.rsplit("::", 1)[-1]
        calls["creates"].add(name)
        if name == fail_create:
            raise ProviderError("interrupt replace")
        return f"{name}-created-id", dict(inputs)

    return deploytest(diff=replace_on_a_changed, delete=delete, create=create)


def interrupted_chain(**fail: str):
    """The dependent chain deployed, then its replacement (resA's input changed) interrupted where ``fail`` says
    (``tracking``'s ``fail_delete``/``fail_create``): the program, the snapshot left and the calls made."""
    inputs_a = {"A": "foo"}
    program = dependent_chain_program(inputs_a)
    up = Engine({"pkgA": deploytest()}).update(program, [])
    assert up.error is None and len(up.snapshot) == 3

    inputs_a["A"] = "bar"
    calls = {"deletes": set(), "creates": set()}
    replace = Engine({"pkgA": tracking(calls, **fail)}).update(program, up.snapshot)
    assert "interrupt replace" in replace.error
    return program, replace.snapshot, calls


def test_TestPendingReplaceDependentDeleteNotRetried():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceDependentDeleteNotRetried, pulumi/pulumi
    v3.277.0 (v3.264.0, pulumi/pulumi#24588): a delete-first chain interrupted after resB's delete and before
    resA's leaves resB pending replacement; the retry deletes and re-creates resA and re-creates resB without
    calling resB's Delete again."""
    program, snap, calls = interrupted_chain(fail_delete="resA")
    assert names(snap) == ["default", "resA", "resB"]
    assert not snap[1].pending_replacement
    assert snap[2].pending_replacement
    assert "resB" in calls["deletes"], "Delete should be called on resB as part of replacement of resA"

    calls = {"deletes": set(), "creates": set()}
    result = Engine({"pkgA": tracking(calls)}).update(program, snap)
    assert result.error is None
    assert "resA" in calls["deletes"], "Delete should be called on resA when the replacement is retried"
    assert "resB" not in calls["deletes"], "Delete shouldn't be called again on resB, which is pending replacement"
    assert "resA" in calls["creates"], "Create should be called on resA when the replacement is retried"
    assert "resB" in calls["creates"], "Create should be called on resB when the replacement is retried"
    snap = result.snapshot
    assert names(snap) == ["default", "resA", "resB"]
    assert not snap[1].pending_replacement and not snap[2].pending_replacement


def test_TestPendingReplaceDependentResumeAfterReplacement():
    """pkg/engine/lifecycletest/pending_replace_test.go, TestPendingReplaceDependentResumeAfterReplacement,
    pulumi/pulumi v3.277.0 (v3.264.0, pulumi/pulumi#24588): a chain interrupted at resB's create, after resA was
    replaced, resumes by creating resB only: no Delete of either, no Create of resA."""
    program, snap, calls = interrupted_chain(fail_create="resB")
    assert names(snap) == ["default", "resA", "resB"]
    assert snap[1].id == "resA-created-id" and not snap[1].pending_replacement
    assert snap[2].pending_replacement

    calls = {"deletes": set(), "creates": set()}
    result = Engine({"pkgA": tracking(calls)}).update(program, snap)
    assert result.error is None
    assert "resA" not in calls["deletes"], "Delete shouldn't be called on resA, which was already replaced"
    assert "resB" not in calls["deletes"], "Delete shouldn't be called again on resB, which is pending replacement"
    assert "resA" not in calls["creates"], "Create shouldn't be called on resA, which was already replaced"
    assert "resB" in calls["creates"], "Create should be called on resB when the replacement is resumed"
    snap = result.snapshot
    assert names(snap) == ["default", "resA", "resB"]
    assert not snap[1].pending_replacement and not snap[2].pending_replacement and not snap[2].delete
