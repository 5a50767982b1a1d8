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


def _kubectl_serving(tmp_path, pods: list, metrics: dict, monkeypatch):
    """A stand-in kubectl (KUBECTL) answering ``get pods ... -o json`` with ``pods`` and ``get --raw
    /api/v1/namespaces/gadget/pods/<name>:4040/proxy/metrics`` with ``metrics[name]``."""
    import json
    import sys

    (tmp_path / "pods.json").write_text(json.dumps({"items": pods}))
    for name, text in metrics.items():
        (tmp_path / f"{name}.metrics").write_text(text)
    script = tmp_path / "kubectl"
    script.write_text(f"#!{sys.executable}\nimport sys, re\nargs = sys.argv[1:]\n"
                      f"open({str(tmp_path / 'calls')!r}, 'a').write(' '.join(args) + '\\n')\n"
                      "raw = args[args.index('--raw') + 1] if '--raw' in args else None\n"
                      f"name = re.search(r'pods/([^:]+):4040/proxy/metrics$', raw).group(1) if raw else None\n"
                      f"print(open({str(tmp_path)!r} + ('/' + name + '.metrics' if name else '/pods.json')).read())\n")
    script.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(script))


def _pod(name: str, component: str, rate: str = "4", burst: str = "2") -> dict:
    return {"metadata": {"name": name, "labels": {"app.kubernetes.io/name": "pyroscope",
                                                  "app.kubernetes.io/component": component}},
            "spec": {"containers": [{"name": "pyroscope", "args": [
                "-target=" + component, f"-distributor.ingestion-rate-limit-mb={rate}",
                f"-distributor.ingestion-burst-size-mb={burst}"]}]}}


def test_profiles_dropped_at_the_rate_limit_name_the_limit_and_the_key(tmp_path, monkeypatch):
    """grafana/pyroscope PR #4401 and #2344: past the per-tenant ingestion rate the distributor answers 429 and counts
    ``pyroscope_discarded_samples_total{reason="rate_limited"}``, while everything reports healthy. A fleet of 64 GPU
    nodes pushing into Pyroscope's 4 MB/s default, through the stand-in distributor (tests/support/pyroscope_server.py),
    is what the check reads."""
    from tests.support.pyroscope_server import RateLimiter

    limiter = RateLimiter({})
    for second in range(60):
        for node in range(64):
            if (second + node) % 15 == 0:  # each node pushes 1.5 MB every 15 s, staggered
                limiter.allow("anonymous", second, int(1.5 * 2**20))
    assert limiter.discarded["anonymous"] > 0
    _kubectl_serving(tmp_path, [_pod("pyroscope-0", "all")], {"pyroscope-0": limiter.metrics()}, monkeypatch)
    ok, detail, hint = verify_cluster.ingestion("aks-gpu-dev")
    assert not ok
    assert detail == (f"profiles discarded since Pyroscope started: {limiter.discarded['anonymous']} rate_limited; "
                      "ingestion limit 4 MB/s, burst 2 MB")
    assert "`pulumi config set pyroscopeIngestionRateMb 8 && pulumi up`" in hint


def test_the_distributors_are_read_in_microservices_mode_and_nothing_dropped_passes(tmp_path, monkeypatch):
    counter = ('# TYPE pyroscope_discarded_samples_total counter\n'
               'pyroscope_discarded_samples_total{reason="rate_limited",tenant="anonymous"} 0\n')
    pods = [_pod("pyroscope-distributor-a", "distributor", "32", "32"), _pod("pyroscope-ingester-0", "ingester")]
    _kubectl_serving(tmp_path, pods, {"pyroscope-distributor-a": counter}, monkeypatch)
    assert verify_cluster.ingestion("c") == (
        True, "no profiles discarded since Pyroscope started; ingestion limit 32 MB/s, burst 32 MB", "")
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["--context c -n gadget get pods -l app.kubernetes.io/name=pyroscope -o json",
                     "--context c get --raw /api/v1/namespaces/gadget/pods/pyroscope-distributor-a:4040/proxy/metrics"]


def test_metrics_that_cannot_be_read_are_said_not_failed(monkeypatch):
    monkeypatch.setenv("KUBECTL", "/nonexistent/kubectl")
    ok, detail, _ = verify_cluster.ingestion("c")
    assert ok and detail.startswith("not checked: Pyroscope's metrics could not be read (kubectl did not run")
