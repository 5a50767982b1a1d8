"""Real Helm for the tests: ``HELM_BIN`` (else ``.tools/helm``, else ``helm`` on PATH) and Helm 3.18.0
(``HELM_318_BIN``, else ``.tools/helm-3.18.0``). Without one a test skips naming what is missing, unless
``REQUIRE_HELM=1`` (CI), where it fails."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.support import ROOT


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
    return subprocess.run([binary, "version", "--template", "{{.Version}}"], capture_output=True, text=True,
                          timeout=30).stdout


def helm_env(tmp_path) -> dict:
    return {**os.environ, "HELM_CACHE_HOME": str(tmp_path / "cache"), "HELM_CONFIG_HOME": str(tmp_path / "config"),
            "HELM_DATA_HOME": str(tmp_path / "data")}
