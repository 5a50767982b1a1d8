"""Fixtures of the end-to-end tests (docs/real-engine.md): the real tools (toolchain/build), a TLS OCI registry holding
the reference Pyroscope chart, and per test the dev stack's cluster (tests/support/simulated_aks.py)."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest

from tests.support import control_plane, real_engine, reference
from tests.support.oci_registry import Registry, with_version
from tests.support.simulated_aks import Chart, aks_cluster

CHART_REPOSITORY = "grafana/helm-charts/pyroscope"


@pytest.fixture(scope="session")
def engine_tools() -> real_engine.Tools:
    return real_engine.tools()


@pytest.fixture(scope="session")
def chart(tmp_path_factory, engine_tools) -> Chart:
    """Pyroscope chart 1.15.0 (the reference artefact) served over HTTPS on loopback, as ghcr.io serves it; and as
    1.15.1, a patch release that changes nothing but its version (the day-two chart bump)."""
    folder = tmp_path_factory.mktemp("registry")
    control_plane.make_certificates(folder)
    bundle = folder / "ca-bundle.crt"
    system = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    bundle.write_bytes((system.read_bytes() if system.exists() else b"") + (folder / "ca.crt").read_bytes())
    with Registry(tls=(str(folder / "server.crt"), str(folder / "server.key"))) as registry:
        tgz = reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz").read_bytes()
        registry.push_chart(CHART_REPOSITORY, tgz, tag="1.15.0")
        registry.push_chart(CHART_REPOSITORY, with_version(tgz, "1.15.1"), tag="1.15.1")
        yield Chart(f"oci://{registry.host}/{CHART_REPOSITORY}", bundle)


#: Each phase's report on a test (setup, call), for a fixture to read whether its test failed.
REPORTS = pytest.StashKey[dict]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    item.stash.setdefault(REPORTS, {})[report.when] = report


@pytest.fixture
def aks(request, tmp_path, engine_tools):
    """The dev stack's cluster: a control plane, the world, the cloud-side loop; all stopped after the test, but the
    control plane when the test passed (the next test's, once reset: control_plane.reused)."""
    with aks_cluster(tmp_path, engine_tools) as cluster:
        yield cluster
        reports = request.node.stash.get(REPORTS, {})
        if any(report.failed for report in reports.values()):
            cluster.cp.kept = False


@pytest.fixture(scope="module")
def helm() -> str:
    """Real Helm (HELM_BIN), for a release made by hand; a missing one fails where REQUIRE_HELM=1 (CI)."""
    path = os.environ.get("HELM_BIN")
    if not path or not os.path.exists(path):
        message = "real Helm is not installed (HELM_BIN; .ci/install-helm .tools installs it)"
        if os.environ.get("REQUIRE_HELM") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path
