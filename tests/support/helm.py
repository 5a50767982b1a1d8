"""Real Helm for the tests: ``HELM_BIN`` (else ``.tools/helm``, else ``helm`` on PATH) and Helm 3.18.0
(``HELM_318_BIN``, else ``.tools/helm-3.18.0``). Without one a test skips naming what is missing, unless
``REQUIRE_HELM=1`` (CI), where it fails."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.support import ROOT, processes


def helm() -> str:
    found = os.environ.get("HELM_BIN") or (str(ROOT / ".tools" / "helm") if (ROOT / ".tools" / "helm").exists()
                                           else shutil.which("helm"))
    if not found:
        message = "no Helm: run .ci/install-helm (or set HELM_BIN)"
        if os.environ.get("REQUIRE_HELM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def helm_318() -> str:
    """Helm 3.18.0 (``.ci/install-helm .tools 3.18.0``): the first Helm with helm/helm ``c18844175`` (ORAS v2), whose
    ``pkg/registry/client.go`` ``ValidateReference`` is the same as v3.20.2's, the Helm current pulumi-kubernetes
    links."""
    found = os.environ.get("HELM_318_BIN") or (
        str(ROOT / ".tools" / "helm-3.18.0") if (ROOT / ".tools" / "helm-3.18.0").exists() else None)
    if not found:
        message = "no Helm 3.18.0: run .ci/install-helm .tools 3.18.0 (or set HELM_318_BIN)"
        if os.environ.get("REQUIRE_HELM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def helm_version(binary: str) -> str:
    return processes.run([binary, "version", "--template", "{{.Version}}"], capture_output=True, text=True,
                         timeout=30).stdout


def helm_env(tmp_path) -> dict:
    return {**os.environ, "HELM_CACHE_HOME": str(tmp_path / "cache"), "HELM_CONFIG_HOME": str(tmp_path / "config"),
            "HELM_DATA_HOME": str(tmp_path / "data")}


def render_values(tmp_path, values: dict, extra_values: dict | None = None, name: str = "pyroscope",
                  namespace: str = "gadget") -> list[dict]:
    """``helm template`` of the reference chart 1.15.0 with ``values`` (and ``extra_values`` over them): the
    rendered documents."""
    import yaml

    from tests.support import reference

    tmp_path.mkdir(parents=True, exist_ok=True)
    files = [tmp_path / "values.yaml"]
    files[0].write_text(yaml.safe_dump(values))
    if extra_values:
        files.append(tmp_path / "extra.yaml")
        files[1].write_text(yaml.safe_dump(extra_values))
    chart = reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz")
    done = processes.run([helm(), "template", name, str(chart), "-n", namespace,
                          *[arg for path in files for arg in ("-f", str(path))]],
                         capture_output=True, text=True, env=helm_env(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def workloads(docs: list[dict], component: str | None = None) -> list[dict]:
    """The Deployments and StatefulSets, or the one of ``component`` (``app.kubernetes.io/component``)."""
    found = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    if component is None:
        return found
    return [d for d in found if (d["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == component]


def data_volume(docs: list[dict], component: str) -> str:
    """How the workload of ``component`` gets volume ``data``: emptyDir, claim or volumeClaimTemplate."""
    (workload,) = workloads(docs, component)
    if any(t["metadata"]["name"] == "data" for t in workload["spec"].get("volumeClaimTemplates") or []):
        return "volumeClaimTemplate"
    (volume,) = [v for v in workload["spec"]["template"]["spec"]["volumes"] if v["name"] == "data"]
    return "emptyDir" if "emptyDir" in volume else "claim"


def container_args(docs: list[dict], component: str) -> list[str]:
    (workload,) = workloads(docs, component)
    return workload["spec"]["template"]["spec"]["containers"][0]["args"]
