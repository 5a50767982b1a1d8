"""Fixtures of the end-to-end tests: the real tools (toolchain/build), a TLS OCI registry holding the reference
Pyroscope chart, and per test a control plane, the simulated world and the cloud-side loop (docs/real-engine.md)."""

from __future__ import annotations

import base64
import json
import ssl
from dataclasses import dataclass
from pathlib import Path

import pytest

from offline import canned
from tests.support import aks_cloud, control_plane, fake_world, real_engine, reference
from tests.support.lifecycle import DASHBOARD_URL
from tests.support.oci_registry import Registry

CHART_REPOSITORY = "grafana/helm-charts/pyroscope"
#: The dev stack's cluster (Pulumi.dev.yaml) and the node resource group AKS gives it.
DEV_CLUSTER = ("rg-aks-gpu-dev", "aks-gpu-dev")


@pytest.fixture(scope="session")
def engine_tools() -> real_engine.Tools:
    return real_engine.tools()


@dataclass(frozen=True)
class Chart:
    reference: str  # oci://127.0.0.1:<port>/grafana/helm-charts/pyroscope
    ca_bundle: Path  # the system's CAs and the registry's: SSL_CERT_FILE for the CLI and its plugins


@pytest.fixture(scope="session")
def chart(tmp_path_factory, engine_tools) -> Chart:
    """Pyroscope chart 1.15.0 (the reference artefact) served over HTTPS on loopback, as ghcr.io serves it."""
    folder = tmp_path_factory.mktemp("registry")
    control_plane.make_certificates(folder)
    bundle = folder / "ca-bundle.crt"
    system = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    bundle.write_bytes((system.read_bytes() if system.exists() else b"") + (folder / "ca.crt").read_bytes())
    with Registry(tls=(str(folder / "server.crt"), str(folder / "server.key"))) as registry:
        registry.push_chart(CHART_REPOSITORY, reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz").read_bytes(),
                            tag="1.15.0")
        yield Chart(f"oci://{registry.host}/{CHART_REPOSITORY}", bundle)


@dataclass
class Aks:
    """One AKS cluster as the tests see it: a real API server, the simulated Azure around it, its cloud side."""

    cp: control_plane.ControlPlane
    cloud: aks_cloud.AksCloud
    world_path: Path

    def world(self) -> dict:
        return json.loads(self.world_path.read_text())

    def workspace(self, folder: Path, tools: real_engine.Tools, chart: Chart) -> real_engine.Workspace:
        return real_engine.Workspace(folder, tools, self.world_path, {
            "SSL_CERT_FILE": str(chart.ca_bundle), "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "2"})


def new_world(tmp: Path, cp: control_plane.ControlPlane, clusters: list[tuple[str, str]]) -> Path:
    """The simulated Azure: the pinned dashboard downloadable, kubelogin's token for AKS's server application, and each
    cluster's API server (the control plane's)."""
    world = fake_world.empty()
    world["downloads"] = {DASHBOARD_URL: str(reference("grafana-dashboards/AdvancedGPUObservability.json"))}
    world["tokens"] = {canned.AKS_SERVER_ID: cp.user_token}
    ca = base64.b64encode(cp.ca_file.read_bytes()).decode()
    world["clusters"] = {canned.cluster_id(rg, name).lower(): {"server": cp.server, "ca": ca,
                                                               "admin_token": cp.admin_token}
                         for rg, name in clusters}
    path = tmp / "world.json"
    path.write_text(json.dumps(world, indent=1, sort_keys=True))
    return path


@pytest.fixture
def aks(tmp_path, engine_tools):
    """The dev stack's cluster: a control plane, the world, the cloud-side loop; all stopped after the test."""
    with control_plane.ControlPlane(engine_tools.bin, engine_tools.kwok_stages) as cp:
        world_path = new_world(tmp_path, cp, [DEV_CLUSTER])
        rg, name = DEV_CLUSTER
        node_rg = canned.managed_cluster({"resourceGroupName": rg, "resourceName": name},
                                         "eastus2")["nodeResourceGroup"]
        with aks_cloud.AksCloud(cp, str(world_path), canned.cluster_id(rg, name), node_rg) as cloud:
            yield Aks(cp, cloud, world_path)
            cp.check_alive()
