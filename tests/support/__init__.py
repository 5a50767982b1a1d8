"""What the tests share: the project's paths, the reference artefacts and the resource types many tests name.

The stand-ins live beside this module: ``fake_az`` (the scripted ``az``), ``fake_world`` (a world the steps act on),
``fake_cluster`` (a Kubernetes API), ``scenarios`` (the step scripts under the stand-in ``az``), ``lifecycle`` (a
deployment driven through the offline engine), ``oci_registry`` (a local OCI registry for Helm).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Upstream artefacts (chart, dashboard, Pulumi's project schema), kept with the project: vendored, or fetched by
#: .ci/fetch-reference (URL and pinned digest, tests/reference/fetch.json). tests/reference/README.md lists them.
REFERENCE = ROOT / "tests" / "reference"

EXTENSION = "azure-native:kubernetesconfiguration:Extension"
RELEASE = "kubernetes:helm.sh/v3:Release"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def reference(relative: str) -> Path:
    """Path of a reference artefact. A missing one fails the test (never a skip): run the set-up step."""
    path = REFERENCE / relative
    if not path.exists():
        import pytest  # here, not at the top: the stand-in plugins and `az` import this package and never fail a test

        pytest.fail(f"reference artefact missing: {path}; run .ci/fetch-reference (the tests' set-up)")
    return path
