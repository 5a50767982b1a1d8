"""STAND-IN for what AKS's cloud side does to a real API server's objects (tests/support/control_plane.py), in the
simulated world the stand-in ``az`` and azure-native plugin share (tests/support/fake_world.py). SIMULATED: no Azure.

:class:`AksCloud` is a loop (a thread, every :data:`PERIOD` seconds) that plays:

- the cloud provider's service controller (kubernetes-sigs/cloud-provider-azure ``pkg/provider/azure_loadbalancer.go``
  ``EnsureLoadBalancer``/``EnsureLoadBalancerDeleted``, driven by k8s.io/cloud-provider's service controller): a
  LoadBalancer Service gets the finalizer ``service.kubernetes.io/load-balancer-cleanup``, a frontend on the cluster's
  internal load balancer and, once the private link service of its ``azure-pls-*`` annotations is reconciled
  (fake_world ``ensure_service_pls``: made, its NAT IPs by ``ip-address-count``, a rename refused), its address in
  ``status.loadBalancer.ingress``; a refusal is a Warning event ``SyncLoadBalancerFailed`` on the Service and no new
  address. A Service deleted, or no longer a LoadBalancer, has its PLS deleted with its connections
  (``delete_service_pls``), then the finalizer removed;
- the Azure Disk CSI driver's external provisioner and resizer: a claim of a ``disk.csi.azure.com`` class, once the
  scheduler picked its node (``volume.kubernetes.io/selected-node``), gets a bound PersistentVolume and a disk in
  ``world["disks"]``; a larger request grows both; a Released volume (reclaim policy Delete) is deleted with its disk.

Errors are kept in :attr:`AksCloud.errors` (a test asserts there are none) and never stop the loop.
"""

from __future__ import annotations

import threading
import time
from typing import Optional

import requests

from offline import canned
from tests.support import fake_world, latency

PERIOD = 0.3
ANNOTATION = "service.beta.kubernetes.io/"
FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
DISK_DRIVER = "disk.csi.azure.com"
MERGE = {"Content-Type": "application/merge-patch+json"}


def quantity_bytes(quantity: str) -> int:
    from stack_config.rules import quantity_value

    return int(quantity_value(quantity))


class AksCloud:
    """``with AksCloud(control_plane, world_path, cluster_id, node_resource_group)``."""

    def __init__(self, control_plane, world_path: str, cluster_id: str, node_resource_group: str) -> None:
        self.cp = control_plane
        self.world_path = world_path
        self.cluster_id = cluster_id
        self.node_rg = node_resource_group
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aks-cloud", daemon=True)
        self._api: Optional[requests.Session] = None
        self._due: dict[str, tuple[float, dict]] = {}  # Service uid -> (when its reconcile is done, its annotations)

    def __enter__(self) -> "AksCloud":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        self._api = self.cp.api()
        while not self._stop.is_set():
            try:
                self.reconcile()
            except Exception as error:  # noqa: BLE001  (kept for the test to report; the loop goes on)
                message = f"{type(error).__name__}: {error}"
                if not self.errors or self.errors[-1] != message:
                    self.errors.append(message)
            self._stop.wait(PERIOD)

    # --- the API ---
    def _get(self, path: str) -> list[dict]:
        response = self._api.get(f"{self.cp.server}{path}", timeout=10)
        response.raise_for_status()
        return response.json().get("items", [])

    def _patch(self, path: str, body: dict, gone_or_going: tuple = (404,)) -> None:
        response = self._api.patch(f"{self.cp.server}{path}", json=body, headers=MERGE, timeout=10)
        if response.status_code not in gone_or_going:  # gone meanwhile: nothing left to do
            response.raise_for_status()

    def _exists_undeleted(self, path: str) -> bool:
        response = self._api.get(f"{self.cp.server}{path}", timeout=10)
        return response.status_code == 200 and not response.json()["metadata"].get("deletionTimestamp")

    def reconcile(self) -> None:
        self.reconcile_services()
        self.reconcile_volumes()

    # --- the service controller ---
    def reconcile_services(self) -> None:
        services = self._get("/api/v1/services")
        seen = set()
        for service in services:
            meta, spec = service["metadata"], service.get("spec") or {}
            key = fake_world.release_key(self.cluster_id, meta["namespace"], meta["name"])
            path = f"/api/v1/namespaces/{meta['namespace']}/services/{meta['name']}"
            wants_lb = spec.get("type") == "LoadBalancer" and not meta.get("deletionTimestamp")
            if wants_lb:
                seen.add(key)
                if FINALIZER not in (meta.get("finalizers") or []):
                    # 422: deleted since the list was read ("no new finalizers can be added if the object is being
                    # deleted"); the next pass sees its deletionTimestamp, as the service controller's next sync does.
                    self._patch(path, {"metadata": {"finalizers": [*(meta.get("finalizers") or []), FINALIZER]}},
                                gone_or_going=(404, 422))
                    if not self._exists_undeleted(path):
                        continue
                self._ensure(service, key, path)
            elif FINALIZER in (meta.get("finalizers") or []):
                self._release(key, service)
                # 422: its finalizers changed since the list was read (the patch would add back one removed
                # meanwhile); the next pass reads it again and retries, as the service controller's next sync does.
                self._patch(path, {"metadata": {"finalizers": [f for f in meta["finalizers"] if f != FINALIZER]}},
                            gone_or_going=(404, 422))
        with fake_world.locked(self.world_path) as world:
            prefix = self.cluster_id.lower() + "|"
            stale = [k for k in world.setdefault("services", {}) if k.startswith(prefix) and k not in seen]
        for key in stale:
            self._release(key, None)

    def _ensure(self, service: dict, key: str, path: str) -> None:
        meta = service["metadata"]
        annotations = meta.get("annotations") or {}
        if not self._reconciled(meta["uid"], annotations):
            return
        error = None
        with fake_world.locked(self.world_path) as world:
            frontend = world["services"].setdefault(key, fake_world.new_frontend(self.cluster_id, self.node_rg))
            addresses = world.setdefault("frontend_addresses", {})
            address = addresses.setdefault(frontend, f"10.224.1.{10 + len(addresses)}")
            before = world.setdefault("service_annotations", {}).get(key)
            if annotations.get(ANNOTATION + "azure-pls-create") == "true" and before != annotations:
                group = annotations.get(ANNOTATION + "azure-pls-resource-group") or self.node_rg
                error = fake_world.ensure_service_pls(
                    world, f"{meta['namespace']}/{meta['name']}", frontend, group,
                    annotations.get(ANNOTATION + "azure-pls-name") or f"pls-{frontend.rsplit('/', 1)[-1]}",
                    (annotations.get(ANNOTATION + "azure-pls-visibility") or "").split(), canned.SUBSCRIPTION_ID,
                    int(annotations.get(ANNOTATION + "azure-pls-ip-configuration-ip-address-count") or 1),
                    canned.pls_subnet(annotations))
            if error is None:
                world["service_annotations"][key] = annotations
        if error:
            self._event(service, error)
            return
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if [i.get("ip") for i in ingress] != [address]:
            self._patch(path + "/status", {"status": {"loadBalancer": {"ingress": [{"ip": address,
                                                                                   "ipMode": "VIP"}]}}})

    def _reconciled(self, uid: str, annotations: dict) -> bool:
        """Whether Azure's time for this Service's reconcile has passed (tests/support/latency.py; at once without a
        factor): a new Service's load balancer frontend and PLS (``load_balancer_frontend``; the PLS is made in the
        same reconcile, before the address is written), a changed one's PLS update (``pls_update``)."""
        due = self._due.get(uid)
        if due is None or due[1] != annotations:
            wait = latency.seconds("events", "pls_update" if due else "load_balancer_frontend")
            due = self._due[uid] = (time.monotonic() + wait, annotations)
        return time.monotonic() >= due[0]

    def _release(self, key: str, service: Optional[dict]) -> None:
        with fake_world.locked(self.world_path) as world:
            frontend = world.setdefault("services", {}).pop(key, None)
            old = world.setdefault("service_annotations", {}).pop(key, None) or {}
            if frontend:
                group = old.get(ANNOTATION + "azure-pls-resource-group") or self.node_rg
                fake_world.delete_service_pls(world, frontend, group, canned.SUBSCRIPTION_ID)

    def _event(self, service: dict, message: str) -> None:
        meta = service["metadata"]
        name = f"{meta['name']}.{time.time_ns():x}"
        event = {"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "SyncLoadBalancerFailed",
                 "message": f"Error syncing load balancer: failed to ensure load balancer: {message}",
                 "metadata": {"name": name, "namespace": meta["namespace"]},
                 "involvedObject": {"kind": "Service", "apiVersion": "v1", "namespace": meta["namespace"],
                                    "name": meta["name"], "uid": meta.get("uid")},
                 "source": {"component": "service-controller"}, "count": 1}
        existing = [e for e in self._get(f"/api/v1/namespaces/{meta['namespace']}/events")
                    if (e.get("involvedObject") or {}).get("uid") == meta.get("uid")
                    and e.get("message") == event["message"]]
        if not existing:
            self._api.post(f"{self.cp.server}/api/v1/namespaces/{meta['namespace']}/events", json=event,
                           timeout=10).raise_for_status()

    # --- the Azure Disk CSI driver ---
    def reconcile_volumes(self) -> None:
        classes = {c["metadata"]["name"]: c for c in self._get("/apis/storage.k8s.io/v1/storageclasses")}
        volumes = self._get("/api/v1/persistentvolumes")
        by_claim = {(v["spec"].get("claimRef") or {}).get("uid"): v for v in volumes}
        for claim in self._get("/api/v1/persistentvolumeclaims"):
            meta, spec = claim["metadata"], claim["spec"]
            storage_class = classes.get(spec.get("storageClassName") or "")
            if not storage_class or storage_class.get("provisioner") != DISK_DRIVER or meta.get("deletionTimestamp"):
                continue
            request = spec["resources"]["requests"]["storage"]
            volume = by_claim.get(meta["uid"])
            if volume is None and (meta.get("annotations") or {}).get(SELECTED_NODE):
                self._provision(claim, request, storage_class.get("reclaimPolicy") or "Delete")
            elif volume is not None and quantity_bytes(volume["spec"]["capacity"]["storage"]) < quantity_bytes(request):
                self._expand(claim, volume, request)
        for volume in volumes:
            csi = volume["spec"].get("csi") or {}
            if (csi.get("driver") == DISK_DRIVER and (volume.get("status") or {}).get("phase") == "Released"
                    and volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete"):
                with fake_world.locked(self.world_path) as world:
                    world.setdefault("disks", {}).pop(csi["volumeHandle"], None)
                self._api.delete(f"{self.cp.server}/api/v1/persistentvolumes/{volume['metadata']['name']}",
                                 timeout=10)

    def _disk_id(self, name: str) -> str:
        return (f"/subscriptions/{canned.SUBSCRIPTION_ID}/resourceGroups/{self.node_rg}/providers/Microsoft.Compute"
                f"/disks/{name}")

    def _provision(self, claim: dict, request: str, reclaim: str) -> None:
        meta, spec = claim["metadata"], claim["spec"]
        name = f"pvc-{meta['uid']}"
        disk = self._disk_id(name)
        with fake_world.locked(self.world_path) as world:
            world.setdefault("disks", {})[disk] = {"size": request, "claim": f"{meta['namespace']}/{meta['name']}",
                                                   "class": spec.get("storageClassName")}
        volume = {"apiVersion": "v1", "kind": "PersistentVolume",
                  "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": DISK_DRIVER}},
                  "spec": {"capacity": {"storage": request}, "accessModes": spec.get("accessModes") or
                           ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": reclaim,
                           "storageClassName": spec.get("storageClassName"),
                           "volumeMode": spec.get("volumeMode") or "Filesystem",
                           "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                        "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
                           "csi": {"driver": DISK_DRIVER, "volumeHandle": disk, "fsType": "ext4"}}}
        response = self._api.post(f"{self.cp.server}/api/v1/persistentvolumes", json=volume, timeout=10)
        if response.status_code != 409:
            response.raise_for_status()

    def _expand(self, claim: dict, volume: dict, request: str) -> None:
        meta = claim["metadata"]
        self._patch(f"/api/v1/persistentvolumes/{volume['metadata']['name']}",
                    {"spec": {"capacity": {"storage": request}}})
        self._patch(f"/api/v1/namespaces/{meta['namespace']}/persistentvolumeclaims/{meta['name']}/status",
                    {"status": {"capacity": {"storage": request}, "conditions": None}})
        with fake_world.locked(self.world_path) as world:
            disk = world.setdefault("disks", {}).get(volume["spec"]["csi"]["volumeHandle"])
            if disk is not None:
                disk["size"] = request
