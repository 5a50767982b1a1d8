"""Azure's latencies for the stand-ins, from the deploy model's table (bench/latencies.yaml), scaled by one factor.

``AKS_GPU_OBS_LATENCY_SCALE=<factor>`` (a number >= 0): each simulated operation takes its table time times the
factor; unset, empty or 0: no delay at all (the table is not read). :func:`seconds` is an operation's scaled time,
``kind`` being the table's section (``resources``: a type token, its ``default`` for others; ``events``) and ``key``
its entry; an entry marked ``scaled: false`` is a constant of the engine's side (pulumi-kubernetes' Service settle),
which no stand-in plays. :func:`delay` sleeps that long. :func:`env` hands the setting on to the plugins and the
``az`` the CLI starts; :func:`kwok_stages` makes the pods' readiness (kwok's ``pod-ready`` stage) come the Helm
release's time after kwok sees the pod. What calls which entry: docs/decisions/benchmarks.md ("Deploy time against
the real engine"). A bad factor raises ValueError naming the variable.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Optional

SCALE_ENV = "AKS_GPU_OBS_LATENCY_SCALE"
TABLE = Path(__file__).resolve().parents[2] / "bench" / "latencies.yaml"
RELEASE = "kubernetes:helm.sh/v3:Release"


def scale() -> float:
    text = os.environ.get(SCALE_ENV, "").strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise ValueError(f"{SCALE_ENV} must be a number >= 0 (the factor on bench/latencies.yaml), not {text!r}")
    return value


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    import yaml  # here: the stand-in az imports this module on every call, mostly with no factor set

    return yaml.safe_load(TABLE.read_text())


def seconds(kind: str, key: Optional[str]) -> float:
    """The scaled time of ``key`` in section ``kind`` (0 when no factor is set, or no key)."""
    factor = scale()
    if not factor or key is None:
        return 0.0
    section = _table()[kind]
    entry = section.get(key, section.get("default", {"seconds": 0}))
    return float(entry["seconds"]) * factor if entry.get("scaled", True) else 0.0


def delay(kind: str, key: Optional[str]) -> float:
    """Sleep for :func:`seconds` of ``key``; returns the seconds slept."""
    wait = seconds(kind, key)
    if wait > 0:
        time.sleep(wait)
    return wait


def az_entry(argv: list[str]) -> tuple[str, Optional[str]]:
    """The table entry one ``az`` command line of the steps and the program costs: the approval's PUT
    (``approval_put``), a download (``dashboard_download``), a call to Grafana's HTTP API (``grafana_api_call``), a
    token from az's cache (kubelogin's, the steps') none (the table's figures include it), anything else one check
    (``poll_check``: an ARM read, or the refresh's POST, whose IP comes ``ip_after_refresh`` later:
    tests/support/fake_world.py)."""
    if argv[:1] == ["account"]:
        return "events", None
    if argv[:4] == ["network", "private-link-service", "connection", "update"]:
        return "events", "approval_put"
    if argv[:1] == ["rest"] and "--skip-authorization-header" in argv:
        return "events", "dashboard_download"
    url = next((argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in ("--url", "-u")), "")
    if argv[:1] == ["rest"] and url.startswith("https://") and "/api/" in url:
        return "events", "grafana_api_call"
    return "events", "poll_check"


def env() -> dict[str, str]:
    """The factor for a child's environment (empty when none is set)."""
    return {SCALE_ENV: os.environ[SCALE_ENV]} if scale() else {}


def kwok_stages(stages: Path, folder: Path) -> Path:
    """``stages`` itself, or (a factor set) a copy in ``folder`` whose ``pod-ready`` stage waits the Helm release's
    scaled time: kwok plays a stage that long after it sees the pod match (sigs.k8s.io/kwok v0.8.0
    ``pkg/kwok/controllers/pod_controller.go``, ``stage.Delay``), as a pulled image and a started container would."""
    wait = seconds("resources", RELEASE)
    if not wait:
        return stages
    import yaml

    documents = list(yaml.safe_load_all(stages.read_text()))
    for document in documents:
        if document and document["metadata"]["name"] == "pod-ready":
            document["spec"]["delay"] = {"durationMilliseconds": int(wait * 1000)}
    path = folder / "kwok-stages.yaml"
    path.write_text(yaml.safe_dump_all([d for d in documents if d], sort_keys=False))
    return path
