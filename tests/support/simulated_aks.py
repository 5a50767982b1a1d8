"""One AKS cluster as the end-to-end tests see it (docs/real-engine.md): a real control plane
(tests/support/control_plane.py), the simulated Azure around it (a world file, tests/support/fake_world.py) and its
cloud side (tests/support/aks_cloud.py). :func:`aks_cluster` starts all three and stops them, also when the test
fails; :meth:`Aks.workspace` is a real-engine workspace (tests/support/real_engine.py) on that world."""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from offline import canned
from tests.support import aks_cloud, control_plane, fake_world, real_engine, reference
from tests.support.lifecycle import DASHBOARD_URL

#: The dev stack's cluster (Pulumi.dev.yaml): resource group and name.
DEV_CLUSTER = ("rg-aks-gpu-dev", "aks-gpu-dev")


@dataclass(frozen=True)
class Chart:
    reference: str  # oci://127.0.0.1:<port>/grafana/helm-charts/pyroscope
    ca_bundle: Path  # the system's CAs and the registry's: SSL_CERT_FILE for the CLI and its plugins


@dataclass
class Aks:
    cp: control_plane.ControlPlane
    cloud: aks_cloud.AksCloud
    world_path: Path

    def world(self) -> dict:
        return json.loads(self.world_path.read_text())

    def workspace(self, folder: Path, tools: real_engine.Tools, chart: Chart,
                  project: Optional[Path] = None) -> real_engine.Workspace:
        return real_engine.Workspace(folder, tools, self.world_path, {
            "SSL_CERT_FILE": str(chart.ca_bundle), "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "2"},
            project=project)


def new_world(path: Path, cp: control_plane.ControlPlane, clusters: list[tuple[str, str]],
              downloads: Optional[dict] = None) -> None:
    """The simulated Azure: the pinned dashboard (and ``downloads``: URL -> file) downloadable, kubelogin's token for
    AKS's server application, and each cluster's API server (the control plane's)."""
    world = fake_world.empty()
    world["downloads"] = {DASHBOARD_URL: str(reference("grafana-dashboards/AdvancedGPUObservability.json")),
                          **(downloads or {})}
    world["tokens"] = {canned.AKS_SERVER_ID: cp.user_token}
    ca = base64.b64encode(cp.ca_file.read_bytes()).decode()
    world["clusters"] = {canned.cluster_id(rg, name).lower(): {"server": cp.server, "ca": ca,
                                                               "admin_token": cp.admin_token}
                         for rg, name in clusters}
    path.write_text(json.dumps(world, indent=1, sort_keys=True))


def node_resource_group(rg: str, name: str, location: str = "eastus2") -> str:
    return canned.managed_cluster({"resourceGroupName": rg, "resourceName": name}, location)["nodeResourceGroup"]


@contextlib.contextmanager
def aks_fleet(folder: Path, tools: real_engine.Tools, clusters: list[tuple[str, str]]) -> Iterator[list[Aks]]:
    """Several clusters in one simulated Azure (one world, ``folder``/world.json): each its control plane and its
    cloud-side loop."""
    token = secrets.token_hex(24)  # one Entra ID token for AKS's server application, which every cluster accepts
    with contextlib.ExitStack() as stack:
        planes = [stack.enter_context(control_plane.ControlPlane(tools.bin, tools.kwok_stages, token))
                  for _ in clusters]
        world_path = folder / "world.json"
        new_world(world_path, planes[0], [])
        world = json.loads(world_path.read_text())
        for cp, (rg, name) in zip(planes, clusters):
            world["clusters"][canned.cluster_id(rg, name).lower()] = {
                "server": cp.server, "ca": base64.b64encode(cp.ca_file.read_bytes()).decode(),
                "admin_token": cp.admin_token}
        world_path.write_text(json.dumps(world, indent=1, sort_keys=True))
        fleet = []
        for cp, (rg, name) in zip(planes, clusters):
            cloud = stack.enter_context(aks_cloud.AksCloud(cp, str(world_path), canned.cluster_id(rg, name),
                                                           node_resource_group(rg, name)))
            fleet.append(Aks(cp, cloud, world_path))
        yield fleet
        for cp in planes:
            cp.check_alive()


@contextlib.contextmanager
def aks_cluster(folder: Path, tools: real_engine.Tools, downloads: Optional[dict] = None,
                cluster: tuple[str, str] = DEV_CLUSTER) -> Iterator[Aks]:
    """A control plane (reused from this process's last test when it resets clean: control_plane.reused), the world
    (``folder``/world.json) and the cloud-side loop for ``cluster``."""
    with control_plane.reused(tools.bin, tools.kwok_stages) as cp:
        world_path = folder / "world.json"
        new_world(world_path, cp, [cluster], downloads)
        rg, name = cluster
        with aks_cloud.AksCloud(cp, str(world_path), canned.cluster_id(rg, name),
                                node_resource_group(rg, name)) as cloud:
            yield Aks(cp, cloud, world_path)
            cp.check_alive()
