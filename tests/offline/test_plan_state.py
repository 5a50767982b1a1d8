"""A base plan the engine would refuse: each dangling or misplaced reference, a duplicate URN and an order that does not
name each resource once is refused in one line, in the words of pulumi/pulumi v3.230.0
``pkg/resource/deploy/snapshot.go`` ``VerifyIntegrity``; the diff refuses it instead of failing on a URN it cannot
find, and ``offline.plan --diff-against`` exits 2 before it runs the program."""

from __future__ import annotations

import copy
import json

import pytest

from offline import diff as plan_diff
from offline import plan as plan_tool
from offline import plan_state
from offline.program import run
from tests.support import K8S_PROVIDER, RELEASE

GONE = "urn:pulumi:dev::aks-gpu-observability::azure-native:resources:ResourceGroup::gone"
GROUP = GONE.replace("::gone", "::rg")
GONE_PROVIDER = f"urn:pulumi:dev::aks-gpu-observability::{K8S_PROVIDER}::gone"


@pytest.fixture(scope="module")
def base():
    return run("dev").to_json()


def _release(plan: dict) -> dict:
    return next(r for r in plan["resources"] if r["type"] == RELEASE)


def _edited(base: dict, edit) -> dict:
    plan = copy.deepcopy(base)
    edit(plan, _release(plan))
    return plan


def _later(plan: dict, release: dict) -> None:
    """The release made to depend on the last resource created, which comes after it."""
    release["dependencies"].append(plan["createOrder"][-1])


def _group_as_provider(plan: dict, release: dict) -> None:
    """The release's provider reference names a resource group the plan holds before it: not a provider."""
    plan["resources"].append({**copy.deepcopy(release), "urn": GROUP, "type": "azure-native:resources:ResourceGroup",
                              "provider": None, "parent": None, "dependencies": [], "propertyDependencies": {},
                              "options": {}})
    plan["createOrder"].insert(0, GROUP)
    plan["destroyOrder"].append(GROUP)
    release["provider"] = GROUP


# kind -> (edit, the problem; {urn} the release's URN, {gone} a URN the plan does not hold, {last} the last created)
DANGLING = {
    "parent": (lambda p, r: r.update(parent=GONE), "child resource {urn} refers to missing parent {gone}"),
    "dependency": (lambda p, r: r["dependencies"].append(GONE),
                   "resource {urn}'s dependency {gone} refers to missing resource"),
    "property-dependency": (lambda p, r: r["propertyDependencies"].update(values=[GONE]),
                            "resource {urn}'s property dependency {gone} (from property values) refers to missing "
                            "resource"),
    "deleted-with": (lambda p, r: r["options"].update(deletedWith=GONE),
                     "resource {urn} is specified as being deleted with {gone}, which is missing"),
    "replace-with": (lambda p, r: r["options"].update(replaceWith=[GONE]),
                     "resource {urn} is specified as being replaced with {gone}, which is missing"),
    "provider": (lambda p, r: r.update(provider=GONE_PROVIDER),
                 "resource {urn} refers to unknown provider " + GONE_PROVIDER),
    # providers.ParseReference refuses a reference whose URN is no provider's before it is looked up.
    "provider-not-a-provider": (_group_as_provider, "failed to parse provider reference for resource {urn}: invalid "
                                                    "module in type: expected 'pulumi:providers', got "
                                                    "'azure-native:resources'"),
    "dependency-after-it": (_later, "resource {urn}'s dependency {last} comes after it"),
    "duplicate": (lambda p, r: p["resources"].append(copy.deepcopy(r)), "duplicate resource {urn} (not marked for "
                                                                        "deletion)"),
    "create-order-names-none": (lambda p, r: p["createOrder"].append(GONE),
                                "createOrder names {gone}, which no resource in the plan holds"),
    "destroy-order-names-none": (lambda p, r: p["destroyOrder"].append(GONE),
                                 "destroyOrder names {gone}, which no resource in the plan holds"),
    "resource-removed": (lambda p, r: p["resources"].remove(r),
                         "createOrder names {urn}, which no resource in the plan holds"),
    "missing-from-destroy-order": (lambda p, r: p["destroyOrder"].remove(r["urn"]),
                                   "resource {urn} is missing from destroyOrder"),
    "no-inputs": (lambda p, r: r.pop("inputs"), "resource '{urn}' missing required 'inputs' field"),
    "string-dependencies": (lambda p, r: r.update(dependencies=GONE),
                            "resource '{urn}' has 'dependencies' or 'options.replaceWith' that is not a list of URNs"),
}


@pytest.mark.parametrize("kind", DANGLING)
def test_a_base_the_engine_refuses_is_named_in_one_line(kind, base):
    edit, words = DANGLING[kind]
    plan = _edited(base, edit)
    release = _release(base)
    expected = words.format(urn=release["urn"], gone=GONE, last=base["createOrder"][-1])
    assert plan_state.problem(plan) == expected
    with pytest.raises(ValueError) as refused:
        plan_diff.compute(plan, base)
    assert str(refused.value) == f"the base plan: snapshot integrity failure; refusing to use it: {expected}"


def test_a_plan_as_offline_plan_writes_it_passes(base):
    assert plan_state.problem(base) is None
    assert [s.urn for s in plan_state.states(base)] == base["createOrder"]


def test_a_resource_without_a_urn_is_named_by_its_index(base):
    plan = copy.deepcopy(base)
    del plan["resources"][3]["urn"]
    assert plan_state.problem(plan) == "resource at index 3 missing required 'urn' field"


@pytest.mark.parametrize("kind", ["dependency", "provider", "duplicate", "resource-removed"])
def test_diff_against_a_refused_base_exits_2_with_one_line(kind, base, tmp_path, capsys, monkeypatch):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(_edited(base, DANGLING[kind][0])))
    ran = []
    monkeypatch.setattr(plan_tool, "run", lambda *a, **k: ran.append(a))
    assert plan_tool.main(["--stack", "dev", "--diff-against", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --diff-against: {path}: snapshot integrity failure; refusing to use it: ")
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert ran == []  # refused before the program runs
