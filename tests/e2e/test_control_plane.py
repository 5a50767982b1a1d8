"""A control plane handed from one test to the next (tests/support/control_plane.py ``reused``): only when its reset
brings the API back to what a fresh start shows; otherwise the next test gets a new one and the old one is stopped."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import ROOT, control_plane, latency

MERGE = {"Content-Type": "application/merge-patch+json"}


def leave_things_behind(cp) -> None:
    """What a test can leave: a namespace with objects (and an event) in it, an object in kube-system, a cluster-scoped
    object, and a volume held by a finalizer no controller here removes."""
    api, server = cp.api(), cp.server
    for path, body in (("/api/v1/namespaces", {"metadata": {"name": "gadget"}}),
                       ("/api/v1/namespaces/gadget/configmaps", {"metadata": {"name": "left"}}),
                       ("/api/v1/namespaces/gadget/events", {
                           "metadata": {"name": "left"}, "reason": "Left", "message": "left by the last test",
                           "involvedObject": {"kind": "ConfigMap", "namespace": "gadget", "name": "left"}}),
                       ("/api/v1/namespaces/kube-system/configmaps", {"metadata": {"name": "left"}}),
                       ("/apis/rbac.authorization.k8s.io/v1/clusterroles", {"metadata": {"name": "left"}, "rules": []}),
                       ("/api/v1/persistentvolumes", {
                           "metadata": {"name": "left", "finalizers": ["example.com/hold"]},
                           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                    "hostPath": {"path": "/left"}}})):
        api.post(f"{server}{path}", json=body, timeout=10).raise_for_status()


def test_what_a_test_left_is_deleted_and_the_plane_is_handed_to_the_next(engine_tools):
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
        first, fresh = cp, set(cp._fresh[0])
        leave_things_behind(cp)
        assert set(cp._objects()) > fresh
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
        assert cp is first
        assert set(cp._objects()) == fresh
        for path in ("/api/v1/namespaces/gadget", "/api/v1/namespaces/kube-system/configmaps/left",
                     "/apis/rbac.authorization.k8s.io/v1/clusterroles/left", "/api/v1/persistentvolumes/left"):
            assert cp.get(path) is None, path
        assert cp.get("/api/v1/namespaces/gadget/events")["items"] == [], "an event outlived its namespace"


def test_a_changed_seeded_object_gets_the_next_test_a_new_plane(engine_tools):
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
        first = cp
        cp.api().patch(f"{cp.server}/api/v1/nodes/aks-gpu-00000000", json={"spec": {"unschedulable": True}},
                       headers=MERGE, timeout=10).raise_for_status()
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
        assert cp is not first and not first.processes
        assert not cp.get("/api/v1/nodes/aks-gpu-00000000")["spec"].get("unschedulable")


def test_a_failed_test_stops_its_plane(engine_tools):
    with pytest.raises(RuntimeError):
        with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
            failed = cp
            raise RuntimeError("the test failed")
    assert not failed.processes and not failed.folder.exists()
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
        assert cp is not failed


def test_another_latency_factor_gets_another_plane(engine_tools, monkeypatch):
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
        plain = cp
    monkeypatch.setenv(latency.SCALE_ENV, "0.01")
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as cp:
        assert cp is not plain
        assert not plain.processes, "a plane for another factor idles on"


INNER = '''
from pathlib import Path
import os

def test_first(aks):
    Path(os.environ["PLANES"], "first").write_text(str(aks.cp.folder))
    assert os.environ["FIRST"] == "pass"

def test_second(aks):
    Path(os.environ["PLANES"], "second").write_text(str(aks.cp.folder))
'''


@pytest.mark.parametrize("first", ["pass", "fail"])
def test_a_test_that_fails_outside_the_with_does_not_hand_its_plane_on(first, tmp_path, engine_tools):
    """The ``aks`` fixture's test fails after the fixture has yielded: pytest raises nothing into a yield fixture
    (pytest-dev/pytest#230: the fixture reads the test's reports, one per phase, so the teardown's passed report
    does not hide the call's failure, cloudflare/workers-py#260): the plane is stopped, not handed to the next test.
    ``engine_tools`` first: the inner tests wait for the tools (a cold build outlasts the timeout), and it orders this
    test with the other engine tests (tests/conftest.py)."""
    (tmp_path / "test_inner.py").write_text(INNER)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "tests.e2e.conftest",
                           "-c", str(ROOT / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")],
                          cwd=ROOT, env={**os.environ, "PLANES": str(tmp_path), "FIRST": first},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == (0 if first == "pass" else 1), done.stdout[-2000:] + done.stderr[-2000:]
    same = (tmp_path / "first").read_text() == (tmp_path / "second").read_text()
    assert same == (first == "pass")
