"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/refresh_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

import copy
import itertools

import pytest

from offline.engine import Engine, Result, State, verify_integrity
from tests.support.deploytest import DEFAULT_PROVIDER, TYP, add_default_providers, deploytest, names, run_plan, urn


def refresh_plan(engine: Engine, snapshot, **options) -> Result:
    """``lt.TestPlan.Run`` of a Refresh step: the refresh preview, then the refresh."""
    preview = engine.refresh(snapshot, preview=True, **options)
    assert preview.error is None, preview.error
    result = engine.refresh(snapshot, **options)
    assert result.error is None, result.error
    return result


def test_TestRefreshWithDelete():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshWithDelete, pulumi/pulumi v3.230.0 (ae2e2698). Upstream
    runs it with parallelism 1 and 4; the offline engine runs steps one at a time."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None)})

    def program(monitor):
        monitor.register(TYP, "resA", True)

    snap = run_plan(engine, program, []).snapshot
    snap = refresh_plan(engine, snap).snapshot
    assert len(snap) == 1
    assert snap[0].urn == DEFAULT_PROVIDER


def test_TestRefreshDeleteDependencies():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeleteDependencies (validateRefreshDeleteCombination over
    every subset of targets), pulumi/pulumi v3.230.0 (ae2e2698)."""
    res_names = ["resA", "resB", "resC"]
    urn_a, urn_b, urn_c = (urn(TYP, n) for n in res_names)
    by_name = dict(zip(res_names, (urn_a, urn_b, urn_c)))
    subsets = [()] + [c for k in range(1, 4) for c in itertools.combinations(res_names, k)]
    for targets in subsets:
        refresh_targets = [by_name[n] for n in targets]

        def new_resource(urn_, id_, delete, *deps):
            return State(urn=urn_, type=TYP, id=id_, delete=delete, dependencies=list(deps))

        old_resources = [
            new_resource(urn_a, "0", False),
            new_resource(urn_b, "1", False, urn_a),
            new_resource(urn_c, "2", False, urn_a, urn_b),
            new_resource(urn_a, "3", True),
            new_resource(urn_a, "4", True),
            new_resource(urn_c, "5", True, urn_a, urn_b),
        ]
        old = add_default_providers(copy.deepcopy(old_resources))
        provider_ref = old[1].provider
        for r in old_resources:  # setProviderRef
            r.provider = provider_ref

        def read(state):
            return None if state.id in ("0", "4") else state.outputs

        engine = Engine({"pkgA": deploytest(read=read)})
        result = refresh_plan(engine, old, targets=refresh_targets)
        for step in result.steps:
            if refresh_targets:
                assert step.urn in refresh_targets, f"Refreshed a resource that wasn't a target: {step.urn}"
            assert step.op == "refresh"

        for r in result.snapshot:
            if r.urn == DEFAULT_PROVIDER:
                continue
            assert r.urn in (urn_a, urn_b, urn_c), f"unexpected resource {r.urn}"
            if not refresh_targets or urn_a in refresh_targets:
                # A::0 was deleted, so we see the impact downstream.
                if r.id == "1":
                    assert r.urn == urn_b and r.dependencies == []
                elif r.id == "2":
                    assert r.urn == urn_c and r.dependencies == [urn_b]
                elif r.id == "3":
                    assert r == old_resources[3]
                elif r.id == "5":
                    # A::4 was deleted but A::3 is still referenceable by C::5.
                    assert r == old_resources[5]
                else:
                    pytest.fail(f"Unexpected changed resource when refreshing {refresh_targets}: {r.urn}::{r.id}")
            else:
                assert r == old_resources[int(r.id)]


def test_TestRefreshDeletePropertyDependencies():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeletePropertyDependencies, pulumi/pulumi v3.230.0
    (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None if old.name == "resA" else {})})

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, property_dependencies={"propB1": [a.urn]})

    snap = run_plan(engine, program, []).snapshot
    assert names(snap) == ["default", "resA", "resB"]
    assert snap[2].property_dependencies["propB1"][0].endswith("::resA")
    assert verify_integrity(snap) is None

    snap = refresh_plan(engine, snap).snapshot
    assert names(snap) == ["default", "resB"]
    assert not snap[1].property_dependencies
    assert verify_integrity(snap) is None


def test_TestRefreshDeleteDeletedWith():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeleteDeletedWith, pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None if old.name == "resA" else {})})

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, deleted_with=a.urn)

    snap = run_plan(engine, program, []).snapshot
    assert names(snap) == ["default", "resA", "resB"]
    assert snap[2].deleted_with.endswith("::resA")
    assert verify_integrity(snap) is None

    snap = refresh_plan(engine, snap).snapshot
    assert names(snap) == ["default", "resB"]
    assert not snap[1].deleted_with
    assert verify_integrity(snap) is None


def test_TestRefreshUpdateWithDeletedResource():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshUpdateWithDeletedResource (``up --refresh``),
    pulumi/pulumi v3.230.0 (ae2e2698)."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None)})
    old = add_default_providers([State(urn=urn(TYP, "resA"), type=TYP, id="myid")])
    result = run_plan(engine, lambda monitor: None, old, refresh=True)
    assert result.snapshot == []


def test_TestRefreshDeleteParent():
    """pkg/engine/lifecycletest/refresh_test.go, TestRefreshDeleteParent, pulumi/pulumi v3.230.0 (ae2e2698). The
    framework verifies the integrity of every state written; so does this port."""
    engine = Engine({"pkgA": deploytest(read=lambda old: None if old.name == "resA" else {})})

    def program(monitor):
        a = monitor.register(TYP, "resA", True)
        monitor.register(TYP, "resB", True, parent=a.urn)

    result = engine.update(program, [])
    assert result.error is None
    assert len(result.snapshot) == 3
    result = engine.refresh(result.snapshot)
    assert result.error is None
    assert len(result.snapshot) == 2
    assert verify_integrity(result.snapshot) is None
