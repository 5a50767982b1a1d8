"""offline/consequences.py: the warnings and refusals of a day-two change, from plan JSON and steps as the diff makes
them (the diff itself, end to end: tests/offline/test_diff.py)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import pytest

from offline import consequences
from offline.program import run


@dataclass
class Step:
    name: str
    op: str
    type: str
    diffs: list = field(default_factory=list)


CLAIM = consequences.CLAIM


@pytest.fixture(scope="module")
def plans():
    return {"single": run("dev").to_json(), "micro": run("dev", {"pyroscopeMode": "microservices"}).to_json()}


def _sized(plan: dict, size: str) -> dict:
    plan = copy.deepcopy(plan)
    for r in plan["resources"]:
        if r["type"] == CLAIM:
            r["inputs"]["spec"]["resources"]["requests"]["storage"] = size
    return plan


@pytest.mark.parametrize("after, refused", [("32Gi", True), ("64Gi", False), ("1Ti", False), ("65536Mi", False)])
def test_only_a_smaller_claim_is_refused(plans, after, refused):
    """64Gi -> 32Gi is refused; the same size written another way (65536Mi) and a larger one are not."""
    steps = [Step("pyroscope-data-0", "update", CLAIM)]
    found = consequences.refusals(steps, plans["single"], _sized(plans["single"], after))
    assert bool(found) == refused, found
    if refused:
        assert found[0].startswith("pyroscopeStorageSize: 32Gi is smaller than claim data-pyroscope-0's 64Gi")


def test_a_new_class_says_what_is_lost_per_mode(plans):
    """Single binary: every stored profile goes with the disk; microservices: the ingesters flush to the container."""
    class_change = [{"path": "spec.storageClassName", "old": "managed-csi", "new": "managed-csi"}]
    single = consequences.warnings([Step("pyroscope-data-0", "replace", CLAIM, class_change)], plans["single"],
                                   plans["single"])
    micro = consequences.warnings([Step("pyroscope-ingester-data-0", "replace", CLAIM, class_change)],
                                  plans["micro"], plans["micro"])
    assert single == [consequences.NEW_CLASS.format(name="pyroscope-data-0", claim="data-pyroscope-0",
                                                    lost=": every stored profile", new="managed-csi")]
    assert "no profile is lost" in micro[0] and "data-pyroscope-ingester-0" in micro[0]


def test_the_private_link_move_is_said_only_for_a_base_whose_chart_service_had_the_pls(plans):
    created = [Step("pyroscope-private-link", "create", consequences.SERVICE)]
    assert consequences.warnings(created, plans["single"], plans["single"]) == []
    old = copy.deepcopy(plans["single"])
    release = next(r for r in old["resources"] if r["name"] == "pyroscope-release")
    release["inputs"]["values"]["pyroscope"]["service"]["annotations"] = {consequences.PLS_CREATE: "true"}
    assert consequences.warnings(created, old, plans["single"]) == [consequences.PRIVATE_LINK_MOVE]


@pytest.mark.parametrize("old, new, expected", [
    (False, True, consequences.PERSISTENCE_ON), (True, False, consequences.PERSISTENCE_OFF)])
def test_persistence_turned_on_or_off(plans, old, new, expected):
    diffs = [{"path": "values.pyroscope.persistence.enabled", "old": old, "new": new}]
    steps = [Step("pyroscope-release", "replace", "kubernetes:helm.sh/v3:Release", diffs)]
    assert consequences.warnings(steps, plans["single"], plans["single"]) == [expected]


@pytest.mark.parametrize("op, done", [("delete", "deleted"), ("replace", "replaced")])
def test_a_profile_store_deleted_or_replaced_says_the_profiles_go(plans, op, done):
    """A failing input found once: pyroscopeStorageAccount set on a stack that had created its account deleted the
    account and its container, every profile in them, with no warning."""
    steps = [Step("pyroscope-storage-account", op, "azure-native:storage:StorageAccount"),
             Step("pyroscope-storage-container", op, "azure-native:storage:BlobContainer")]
    found = consequences.warnings(steps, plans["micro"], plans["micro"])
    assert found == [consequences.STORE_LOST.format(name=s.name, what=consequences.PROFILE_STORES[s.type], done=done)
                     for s in steps]
    assert all("every profile in them" in line for line in found)


def test_an_upgrade_that_also_changes_the_volume_is_refused(plans):
    """A failing input found once: upgrading from a version whose StatefulSet made the claim, with a new class and a
    smaller size in the same `pulumi up`, diffed clean; the adopting create would be refused by the API server."""
    import json

    from tests.support import ROOT

    base = json.loads((ROOT / "tests" / "data" / "plan-dev-before-private-link-service.json").read_text())
    head = copy.deepcopy(plans["single"])
    claim = next(r for r in head["resources"] if r["name"] == "pyroscope-data-0")
    claim["inputs"]["spec"]["storageClassName"] = "managed-csi-premium"
    claim["inputs"]["spec"]["resources"]["requests"]["storage"] = "32Gi"
    (line,) = consequences.refusals([Step("pyroscope-data-0", "create", CLAIM)], base, head)
    assert line.startswith("pyroscopeStorageClass, pyroscopeStorageSize: claim data-pyroscope-0, which the StatefulSet "
                           "made, is adopted as it is (64Gi on managed-csi)")
    assert consequences.refusals([Step("pyroscope-data-0", "create", CLAIM)], base, plans["single"]) == []


@pytest.mark.parametrize("old, new, expected", [
    ("1.15.0", "2.0.0", consequences.MAJOR_UP.format(old=1, new=2, below="; from 1.15.0, move to chart 1.21.0 (image "
                                                                        "1.21.1) first, the release its 2.0 notes "
                                                                        "start from")),
    ("1.21.0", "2.0.0", consequences.MAJOR_UP.format(old=1, new=2, below="")),
    ("2.0.0", "1.21.0", consequences.MAJOR_DOWN.format(old=2, new=1)),
    ("1.15.0", "1.21.0", None),
])
def test_a_move_across_pyroscope_majors_is_said(plans, old, new, expected):
    steps = [Step("pyroscope-release", "update", "kubernetes:helm.sh/v3:Release",
                  [{"path": "version", "old": old, "new": new}])]
    assert consequences.warnings(steps, plans["single"], plans["single"]) == ([expected] if expected else [])
