"""What ops.verify reads of the cluster itself: Pyroscope's disk and ingestion and the gadget DaemonSet, with causes.

Owns :func:`series` (one Grafana ``POST /api/ds/query`` of the stack's Prometheus datasource, the Azure Monitor
workspace, for the kubelet's volume stats and kube-state-metrics' DaemonSet status in namespace ``gadget`` of this
cluster: the metrics add-on scrapes both by default and labels every series ``cluster``, the cluster's name, unless
its settings give a ``cluster_alias``),
:func:`disk` (used against the claim's size per volume; from :data:`DISK_WARN` a failure naming the retention and
size keys: single-binary head blocks can fill a disk, grafana/pyroscope#4418) and :func:`daemonsets` (ready pods
against the nodes the DaemonSet should run on; when fewer, the cause from the Warning events of the DaemonSet and its
pods, read with ``kubectl``, which names an admission policy that refuses the privileged gadget pods while the
extension still reports Succeeded) and :func:`ingestion` (Pyroscope's discarded-samples counter, read through the API
server's pod proxy: profiles dropped at the ingestion limit name the limit and the key that raises it). Each returns
``(ok, detail, next step)``. Errors: AzError from the query; a kubectl
that is missing or fails is said in the detail. Upstream: grafana/grafana ``pkg/api/ds_query.go``; Inspektor Gadget's
troubleshooting guide (Azure Policy); docs/decisions/stack-verification.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Callable, Optional

from steps.azcli import rest

NAMESPACE = "gadget"
#: Used share of a Pyroscope volume from which verify fails the disk check.
DISK_WARN = 0.80
#: refId -> PromQL, ``{cluster}`` filled in; Pyroscope's claims are data-pyroscope-0 or data-pyroscope-ingester-<n>.
QUERIES = {
    "used": 'max by (persistentvolumeclaim) (kubelet_volume_stats_used_bytes{{cluster="{cluster}",namespace="gadget",'
            'persistentvolumeclaim=~"data-pyroscope.*"}})',
    "size": 'max by (persistentvolumeclaim) (kubelet_volume_stats_capacity_bytes{{cluster="{cluster}",'
            'namespace="gadget",persistentvolumeclaim=~"data-pyroscope.*"}})',
    "desired": 'max by (daemonset) (kube_daemonset_status_desired_number_scheduled{{cluster="{cluster}",'
               'namespace="gadget"}})',
    "ready": 'max by (daemonset) (kube_daemonset_status_number_ready{{cluster="{cluster}",namespace="gadget"}})',
}
_LABEL = {"used": "persistentvolumeclaim", "size": "persistentvolumeclaim", "desired": "daemonset",
          "ready": "daemonset"}


def series(grafana: str, prometheus_uid: str, cluster: str) -> dict[str, dict[str, float]]:
    """refId of :data:`QUERIES` -> {claim or DaemonSet name: the latest value}, one instant query each."""
    body = {"from": "now-10m", "to": "now",
            "queries": [{"refId": ref, "datasource": {"uid": prometheus_uid}, "expr": expr.format(cluster=cluster),
                         "instant": True, "range": False} for ref, expr in QUERIES.items()]}
    answer = rest("post", f"{grafana}/api/ds/query", body) or {}
    found: dict[str, dict[str, float]] = {ref: {} for ref in QUERIES}
    for ref, result in (answer.get("results") or {}).items():
        for frame in result.get("frames") or []:
            fields = (frame.get("schema") or {}).get("fields") or []
            values = (frame.get("data") or {}).get("values") or []
            for index, field in enumerate(fields):
                name = (field.get("labels") or {}).get(_LABEL.get(ref, ""))
                # NaN and ±Inf come as null (the frame's entities say which): no value to read.
                if (field.get("type") == "number" and name and index < len(values) and values[index]
                        and values[index][-1] is not None):
                    found.setdefault(ref, {})[name] = float(values[index][-1])
    return found


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def disk(found: dict[str, dict[str, float]]) -> tuple[bool, str, str]:
    """Each Pyroscope volume's use of its size; failing from :data:`DISK_WARN`."""
    used, size = found.get("used") or {}, found.get("size") or {}
    claims = sorted(set(used) & set(size))
    if not claims:
        return True, ("no Pyroscope volume in the workspace's kubelet metrics (persistence off, or the metrics "
                      "add-on does not scrape the kubelet)"), ""
    shares = {c: used[c] / size[c] for c in claims if size[c]}
    detail = "; ".join(f"{c} {_gib(used[c])} of {_gib(size[c])} ({shares.get(c, 0):.0%})" for c in claims)
    full = [c for c, share in shares.items() if share >= DISK_WARN]
    if not full:
        return True, detail, ""
    return False, detail, (f"{', '.join(full)} at {DISK_WARN:.0%} or more: Pyroscope's blocks fill its volume until "
                           "retention deletes them, and a full disk stops ingestion; lower pyroscopeRetention or raise "
                           "pyroscopeStorageSize (a claim grows in place), then `pulumi up` (docs/sizing.md)")


def kubectl_events(context: str) -> tuple[Optional[list], str]:
    """The namespace's events (``kubectl --context <context> -n gadget get events -o json``), or (None, why not)."""
    command = [os.environ.get("KUBECTL", "kubectl"), "--context", context, "-n", NAMESPACE, "get", "events", "-o",
               "json"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"kubectl did not run ({error})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"kubectl failed: {last[:200]}"
    try:
        return json.loads(done.stdout).get("items") or [], ""
    except ValueError:
        return None, "kubectl printed no JSON"


#: Event messages that say an admission check refused a pod, and what to do about each kind.
ADMISSION = (
    (re.compile(r'admission webhook "[^"]*gatekeeper[^"]*" denied the request'),
     "Azure Policy (Gatekeeper) refuses the gadget pods, which run privileged as Inspektor Gadget must, while the "
     "extension still reports Succeeded: exclude namespace gadget in that policy assignment (its excludedNamespaces "
     "parameter)"),
    (re.compile(r"violates PodSecurity"),
     "Pod Security admission refuses the gadget pods, which run privileged: namespace gadget must allow the privileged "
     "level (label pod-security.kubernetes.io/enforce=privileged)"),
    (re.compile(r"denied (the )?request|ValidatingAdmissionPolicy .* denied"),
     "an admission policy refuses the gadget pods, which run privileged, while the extension still reports Succeeded: "
     "exempt namespace gadget from it"),
)


def _when(event: dict) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or (event.get("metadata") or {}).get(
        "creationTimestamp") or "")


def cause(events: list, daemonset: str) -> tuple[str, str]:
    """(the latest Warning events of the DaemonSet and its pods, one line; what to do), from ``kubectl`` events."""
    own = [e for e in events if e.get("type") == "Warning"
           and (e.get("involvedObject") or {}).get("kind") in ("DaemonSet", "Pod")
           and str((e.get("involvedObject") or {}).get("name", "")).startswith(daemonset)]
    own.sort(key=_when, reverse=True)
    seen, lines = set(), []
    for event in own:
        key = (event.get("reason"), event.get("message"))
        if key not in seen:
            seen.add(key)
            lines.append(f"{event.get('reason')}: {str(event.get('message', '')).strip()[:300]}")
    if not lines:
        return "no Warning event names a cause", "`kubectl -n gadget describe daemonset " + daemonset + "` and its pods"
    text = " | ".join(lines[:3])
    advice = next((what for pattern, what in ADMISSION if pattern.search(text)), None)
    if advice is None and "FailedScheduling" in text:
        advice = "the scheduler cannot place the gadget pods on some nodes: see the taints and resources it names"
    return text, advice or "the events above name the cause"


def daemonsets(found: dict[str, dict[str, float]], events: Callable[[], tuple[Optional[list], str]]
               ) -> tuple[bool, str, str]:
    """Ready pods against desired per DaemonSet of namespace gadget; when fewer, the cause from the events."""
    desired, ready = found.get("desired") or {}, found.get("ready") or {}
    if not desired:
        return False, "no DaemonSet of namespace gadget in the workspace's kube-state-metrics", (
            "the extension has not deployed Inspektor Gadget (see the extension's check above), or the metrics add-on "
            "does not scrape kube-state-metrics")
    short = {name: (int(ready.get(name, 0)), int(want)) for name, want in desired.items() if ready.get(name, 0) < want}
    detail = "; ".join(f"{n} {int(ready.get(n, 0))} of {int(w)} ready" for n, w in sorted(desired.items()))
    if not short:
        return True, detail, ""
    items, why_not = events()
    name = sorted(short)[0]
    if items is None:
        return False, detail, (f"the cause is in `kubectl -n gadget get events` ({why_not}; verify reads the context "
                               "named --kube-context)")
    said, advice = cause(items, name)
    return False, f"{detail}; {said}", advice


#: Pyroscope's pods that count discarded pushes: the single binary's, or the distributors in microservices mode
#: (chart 1.15.0's ``app.kubernetes.io/component`` label), and the port their metrics are on (``http2``, 4040).
INGESTING = ("all", "distributor")
METRICS_PORT = 4040
#: Pyroscope's flag for each ingestion limit, and the stack's key that sets it.
LIMIT_KEYS = {"distributor.ingestion-rate-limit-mb": "pyroscopeIngestionRateMb",
              "distributor.ingestion-burst-size-mb": "pyroscopeIngestionBurstMb"}


def _kubectl(context: str, *args: str) -> tuple[Optional[str], str]:
    command = [os.environ.get("KUBECTL", "kubectl"), "--context", context, *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"kubectl did not run ({error})"
    if done.returncode != 0:
        return None, f"kubectl failed: {(done.stderr.strip().splitlines() or ['no output'])[-1][:200]}"
    return done.stdout, ""


def pyroscope_pods(context: str) -> tuple[Optional[list], str]:
    """(Pyroscope's pods in namespace gadget, every component, as ``kubectl get pods -o json`` lists them; why they
    could not be read)."""
    listed, why = _kubectl(context, "-n", NAMESPACE, "get", "pods", "-l", "app.kubernetes.io/name=pyroscope", "-o",
                           "json")
    if listed is None:
        return None, why
    try:
        return [pod for pod in json.loads(listed).get("items") or [] if isinstance(pod, dict)], ""
    except (ValueError, AttributeError):
        return None, "kubectl printed no JSON"


def discarded(context: str, seen: Optional[dict] = None) -> tuple[Optional[dict], dict[str, str], str]:
    """(discarded profiles since the pods started, by reason; the ingestion limits the pods run with, flag -> value;
    why it could not be read). Reads Pyroscope's ``/metrics`` through the API server's pod proxy (``kubectl get
    --raw``; the RBAC ``pods/proxy`` get) and its counter ``pyroscope_discarded_samples_total{reason,tenant}``
    (grafana/pyroscope ``pkg/validation/validate.go``@v1.15.0) with prometheus_client's text parser. ``seen``, when
    given, keeps :func:`pyroscope_pods`' answer under ``pods`` for ops.versions."""
    from prometheus_client.parser import text_string_to_metric_families

    listed, why = pyroscope_pods(context)
    if seen is not None:
        seen["pods"] = (listed, why)
    if listed is None:
        return None, {}, why
    pods = [pod for pod in listed
            if (pod.get("metadata", {}).get("labels") or {}).get("app.kubernetes.io/component") in INGESTING]
    limits: dict[str, str] = {}
    counts: dict[str, float] = {}
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            for arg in container.get("args") or []:
                flag, _, value = str(arg).lstrip("-").partition("=")
                if flag in LIMIT_KEYS:
                    limits[flag] = value
        name = pod["metadata"]["name"]
        text, why = _kubectl(context, "get", "--raw",
                             f"/api/v1/namespaces/{NAMESPACE}/pods/{name}:{METRICS_PORT}/proxy/metrics")
        if text is None:
            return None, limits, why
        for family in text_string_to_metric_families(text):
            if family.name == "pyroscope_discarded_samples":
                for sample in family.samples:
                    if sample.name.endswith("_total"):
                        reason = sample.labels.get("reason", "")
                        counts[reason] = counts.get(reason, 0) + sample.value
    return counts, limits, ""


def ingestion(context: str, seen: Optional[dict] = None) -> tuple[bool, str, str]:
    """The verdict on :func:`discarded` (``seen``: passed on): profiles dropped at the rate limit name the limit and
    the key to raise."""
    counts, limits, why = discarded(context, seen)
    rate = limits.get("distributor.ingestion-rate-limit-mb", "4 (Pyroscope's default)")
    burst = limits.get("distributor.ingestion-burst-size-mb", "2 (Pyroscope's default)")
    if counts is None:  # said, not failed: from where verify runs the cluster may not be readable at all
        return True, (f"not checked: Pyroscope's metrics could not be read ({why}; verify reads the context named "
                      "--kube-context); `kubectl -n gadget logs -l app.kubernetes.io/name=pyroscope | grep 'push rate "
                      "limit'` shows dropped pushes"), ""
    dropped = {reason: int(n) for reason, n in sorted(counts.items()) if n}
    detail = f"ingestion limit {rate} MB/s, burst {burst} MB"
    if not dropped:
        return True, f"no profiles discarded since Pyroscope started; {detail}", ""
    said = ", ".join(f"{n} {reason}" for reason, n in dropped.items())
    if "rate_limited" in dropped:
        try:
            higher = str(min(1024, 2 * int(float(str(rate).split()[0]))))  # the key's largest value
        except ValueError:
            higher = "<MB per second>"
        return False, f"profiles discarded since Pyroscope started: {said}; {detail}", (
            f"the exporters push more than the ingestion limit (-distributor.ingestion-rate-limit-mb): `pulumi config "
            f"set pyroscopeIngestionRateMb {higher} && pulumi up` (and pyroscopeIngestionBurstMb if one push is larger "
            "than the burst; docs/sizing.md)")
    return False, f"profiles discarded since Pyroscope started: {said}; {detail}", (
        "Pyroscope refused them as invalid (the reason says which limit: grafana/pyroscope pkg/validation); "
        "`kubectl -n gadget logs -l app.kubernetes.io/name=pyroscope` shows each")
