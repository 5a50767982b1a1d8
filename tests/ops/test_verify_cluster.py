"""ops/verify_cluster.py: the disk and DaemonSet verdicts from the workspace's series, and the cause read from
events (the whole verify run with the stand-in az and kubectl: tests/ops/test_verify.py)."""

from __future__ import annotations

import pytest

from ops import verify_cluster

GIB = 2**30


def test_no_pyroscope_volume_in_the_metrics_is_said_and_not_failed():
    ok, detail, _ = verify_cluster.disk({"used": {}, "size": {}})
    assert ok and detail.startswith("no Pyroscope volume in the workspace's kubelet metrics")


def test_each_ingester_volume_is_measured_and_the_full_ones_named():
    found = {"used": {"data-pyroscope-ingester-0": 10 * GIB, "data-pyroscope-ingester-1": 60 * GIB},
             "size": {"data-pyroscope-ingester-0": 64 * GIB, "data-pyroscope-ingester-1": 64 * GIB}}
    ok, detail, hint = verify_cluster.disk(found)
    assert not ok and "data-pyroscope-ingester-0 10.0 GiB of 64.0 GiB (16%)" in detail
    assert hint.startswith("data-pyroscope-ingester-1 at 80% or more")


@pytest.mark.parametrize("message,advice", [
    ('Error creating: pods "gadget-x" is forbidden: violates PodSecurity "baseline:latest": privileged',
     "Pod Security admission refuses the gadget pods"),
    ("Error creating: pods \"gadget-x\" is forbidden: ValidatingAdmissionPolicy 'no-privileged' with binding "
     "'no-privileged' denied request: privileged containers are not allowed", "an admission policy refuses"),
])
def test_an_admission_denial_is_named(message, advice):
    events = [{"type": "Warning", "reason": "FailedCreate", "message": message,
               "involvedObject": {"kind": "DaemonSet", "name": "gadget"}}]
    said, hint = verify_cluster.cause(events, "gadget")
    assert said == f"FailedCreate: {message}" and hint.startswith(advice)


def test_a_scheduling_failure_of_a_gadget_pod_is_the_cause_and_other_objects_events_are_not():
    events = [{"type": "Warning", "reason": "FailedScheduling", "lastTimestamp": "2026-12-05T10:00:00Z",
               "message": "0/3 nodes are available: 3 node(s) had untolerated taint {sku: gpu}.",
               "involvedObject": {"kind": "Pod", "name": "gadget-7xk2p"}},
              {"type": "Warning", "reason": "BackOff", "message": "Back-off restarting failed container",
               "involvedObject": {"kind": "Pod", "name": "pyroscope-0"}}]
    said, hint = verify_cluster.cause(events, "gadget")
    assert said.startswith("FailedScheduling: 0/3 nodes") and "pyroscope" not in said
    assert hint.startswith("the scheduler cannot place the gadget pods")


def test_all_ready_passes_without_reading_events():
    def events():
        raise AssertionError("no events are read when every pod is ready")

    assert verify_cluster.daemonsets({"desired": {"gadget": 2}, "ready": {"gadget": 2}}, events) == (
        True, "gadget 2 of 2 ready", "")


def test_a_nan_sample_is_no_value_and_no_crash(monkeypatch):
    """Grafana sends NaN and ±Inf as null (with entities): verify crashed on float(None) (a review finding)."""
    answer = {"results": {"used": {"frames": [{"schema": {"fields": [
        {"name": "Time", "type": "time"},
        {"name": "Value", "type": "number", "labels": {"persistentvolumeclaim": "data-pyroscope-0"}}]},
        "data": {"values": [[1], [None]], "entities": [None, {"NaN": [0]}]}}]}}}
    monkeypatch.setattr(verify_cluster, "rest", lambda *args, **kwargs: answer)
    assert verify_cluster.series("https://g", "uid", "aks")["used"] == {}
