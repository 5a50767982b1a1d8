"""A real Kubernetes control plane on loopback for the end-to-end tests: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok (fake nodes whose pods become Ready), the binaries toolchain/build makes.

:class:`ControlPlane` (a context manager) starts them in a temporary folder (mode 0700, its keys 0600) on free
127.0.0.1 ports, with a CA and certificates made by ``openssl``, a service-account key pair, and static tokens
(``--token-auth-file``): one for the components and the tests (``admin_token``), and :attr:`ControlPlane.user_token`,
the token the stand-in ``az`` hands kubelogin for the AKS server application, so the stack's Entra ID kubeconfig
reaches this API server as AKS's does. Both are in ``system:masters``. Only the test run gets in
(docs/decisions/test-servers.md): the API server takes no anonymous request and authorizes with Node and RBAC; etcd
speaks TLS only to a client with the API server's client certificate, its peer listener is a unix socket in the
folder, and no component serves metrics or debug endpoints of its own; every process dies with the test process
(tests/support/processes.py). It registers two AKS-like nodes (agent pools ``system`` and ``gpu``, the GPU one
tainted as AKS taints GPU pools) and AKS's built-in storage classes. :meth:`ControlPlane.api` is a ``requests``
session on the API server. A component that fails to start, or exits, raises with its last log lines; ``__exit__``
stops every process and removes the folder, also when the test failed. Who writes what the cloud does (load balancer
addresses, disks, the private link service): tests/support/aks_cloud.py.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import requests
import yaml

from tests.support import latency, processes

#: The service CIDR AKS's canned cluster has (offline/canned.py ``managed_cluster``), and its pod CIDR.
SERVICE_CIDR = "10.0.0.0/16"
POD_CIDR = "192.168.0.1/24"
#: AKS's built-in Azure Disk classes (kubectl get storageclass on a 1.3x cluster): the provisioner, binding on the
#: pod's node, expandable, deleted with the claim.
STORAGE_CLASSES = {"managed-csi": "StandardSSD_LRS", "managed-csi-premium": "Premium_LRS", "default": "StandardSSD_LRS",
                   "managed": "StandardSSD_LRS", "managed-premium": "Premium_LRS"}
DISK_PROVISIONER = "disk.csi.azure.com"
#: AKS's GPU pool taint (MicrosoftDocs/azure-aks-docs articles/aks/gpu-cluster.md: ``sku=gpu:NoSchedule``).
GPU_TAINT = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
#: A node's size: room for microservices mode's components (about 14 vCPU of requests) on the system pool.
NODE_SIZE = {"cpu": "32", "memory": "128Gi", "pods": "250"}
START_TIMEOUT = 180.0  # under a loaded CI machine the API server has taken over a minute
LOG_TAIL = 30
#: The namespaces a fresh API server has; a reset deletes every other.
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
#: Kinds whose objects come and go on their own (records, heartbeats): not compared by a reset.
TRANSIENT_KINDS = {"events", "events.k8s.io/events", "coordination.k8s.io/leases"}
#: Their collections in a namespace (events.k8s.io's are the same objects as the core ones).
TRANSIENT_PATHS = ("/api/v1/namespaces/{namespace}/events",
                   "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases")
#: Objects the controllers keep in every namespace: not compared by a reset.
PER_NAMESPACE = {("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt")}
RESET_WAIT = 30.0  # seconds a reset waits for what it deleted to be gone


class ControlPlaneError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _sign(folder: Path, name: str, subject: str, extensions: str) -> None:
    """``name.key`` and ``name.crt``, signed by ``ca.crt``."""
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", subject, cwd=folder)
    (folder / f"{name}.ext").write_text(extensions)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=folder)


def _private(folder: Path) -> None:
    """The folder and every file in it readable by the user alone."""
    folder.chmod(0o700)
    for path in folder.iterdir():
        if path.is_file():
            path.chmod(0o600)


def make_certificates(folder: Path) -> None:
    """``ca.crt``/``ca.key``, the API server's ``server.crt``/``server.key`` (127.0.0.1, localhost), and the
    service-account key pair ``sa.key``/``sa.pub``; the folder and its files the user's alone."""
    old = os.umask(0o077)
    try:
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days",
                 "2", "-subj", "/CN=e2e-ca", cwd=folder)
        _sign(folder, "server", "/CN=kube-apiserver",
              "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n")
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=folder)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=folder)
    finally:
        os.umask(old)
    _private(folder)


def make_etcd_certificates(folder: Path) -> None:
    """etcd's serving ``etcd.crt``/``etcd.key`` (127.0.0.1) and the API server's client ``etcd-client.crt``/``.key``,
    by ``ca.crt`` (:func:`make_certificates` first)."""
    old = os.umask(0o077)
    try:
        _sign(folder, "etcd", "/CN=etcd", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        _sign(folder, "etcd-client", "/CN=kube-apiserver-etcd-client", "extendedKeyUsage=clientAuth\n")
    finally:
        os.umask(old)
    _private(folder)


_KEYS: list[Path] = []  # the folder holding this process's certificates and keys, once made


def _keys_into(folder: Path) -> None:
    """:func:`make_certificates` and :func:`make_etcd_certificates` into ``folder``: made once per process and
    copied (five RSA keys cost seconds of CPU at each start; each control plane keeps its own folder, ports and
    tokens)."""
    if not _KEYS or not _KEYS[0].is_dir():
        cache = Path(tempfile.mkdtemp(prefix="e2e-keys-"))
        atexit.register(shutil.rmtree, cache, True)
        make_certificates(cache)
        make_etcd_certificates(cache)
        _KEYS[:] = [cache]
    for path in _KEYS[0].iterdir():
        if path.is_file():
            shutil.copy2(path, folder / path.name)
    _private(folder)


class ControlPlane:
    """``with ControlPlane(bin_dir, stages) as cp``: ``cp.server``, ``cp.ca_file``, ``cp.admin_token``,
    ``cp.user_token``, ``cp.api()``."""

    def __init__(self, bin_dir: Path, kwok_stages: Path, user_token: Optional[str] = None) -> None:
        self.bin_dir = bin_dir
        self.kwok_stages = kwok_stages
        self.folder = Path(tempfile.mkdtemp(prefix="e2e-control-plane-"))
        self.admin_token = secrets.token_hex(16)
        self.user_token = user_token or secrets.token_hex(24)
        self.processes: dict[str, processes.Guarded] = {}
        self.server = ""
        self._fresh: tuple[set, dict] = (set(), {})  # what the API shows right after the start (reset compares)
        self.kept = True  # False: :func:`reused` stops it rather than hand it to the next test (a test failed on it)

    # --- lifecycle ---
    def __enter__(self) -> "ControlPlane":
        for attempt in (1, 2):  # a port taken between free_port() and the bind: once more, on new ports
            try:
                self.start()
                return self
            except ControlPlaneError:
                self.stop()
                if attempt == 2:
                    raise
                self.folder = Path(tempfile.mkdtemp(prefix="e2e-control-plane-"))
            except BaseException:
                self.stop()
                raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        f = self.folder
        _keys_into(f)
        (f / "tokens.csv").write_text(f'{self.admin_token},e2e-admin,e2e-admin,"system:masters"\n'
                                      f'{self.user_token},aks-user,aks-user,"system:masters"\n')
        (f / "tokens.csv").chmod(0o600)
        etcd_port, api_port = free_port(), free_port()
        self.server = f"https://127.0.0.1:{api_port}"
        # A single member's peer listener serves no one; a unix socket in the 0700 folder (etcd takes unix://HOST:PORT,
        # the file HOST:PORT in its working directory, the folder) keeps it off the network.
        self._spawn("etcd", ["--name", "e2e", "--data-dir", str(f / "etcd"),
                             "--listen-client-urls", f"https://127.0.0.1:{etcd_port}",
                             "--advertise-client-urls", f"https://127.0.0.1:{etcd_port}",
                             "--cert-file", str(f / "etcd.crt"), "--key-file", str(f / "etcd.key"),
                             "--client-cert-auth", "--trusted-ca-file", str(f / "ca.crt"),
                             "--listen-peer-urls", "unix://etcd-peer:1", "--initial-advertise-peer-urls", "unix://etcd-peer:1",
                             "--initial-cluster", "e2e=unix://etcd-peer:1", "--unsafe-no-fsync"])
        self._spawn("kube-apiserver", [
            f"--etcd-servers=https://127.0.0.1:{etcd_port}", f"--etcd-cafile={f / 'ca.crt'}",
            f"--etcd-certfile={f / 'etcd-client.crt'}", f"--etcd-keyfile={f / 'etcd-client.key'}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1", f"--secure-port={api_port}", f"--cert-dir={f / 'certs'}",
            f"--tls-cert-file={f / 'server.crt'}", f"--tls-private-key-file={f / 'server.key'}",
            f"--client-ca-file={f / 'ca.crt'}", f"--token-auth-file={f / 'tokens.csv'}", "--anonymous-auth=false",
            "--authorization-mode=Node,RBAC", f"--service-account-key-file={f / 'sa.pub'}",
            f"--service-account-signing-key-file={f / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=true",
            "--endpoint-reconciler-type=none", "--enable-priority-and-fairness=false", "--profiling=false"])
        self.kubeconfig = f / "admin.kubeconfig"
        self.kubeconfig.touch(mode=0o600)
        self.kubeconfig.write_text(yaml.safe_dump(self.admin_kubeconfig()))
        self._wait_ready()
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={self.kubeconfig}", f"--service-account-private-key-file={f / 'sa.key'}",
            f"--root-ca-file={f / 'ca.crt'}", "--leader-elect=false", "--secure-port=0",
            "--use-service-account-credentials=false", "--profiling=false"])
        self._spawn("kube-scheduler", [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
                                       "--secure-port=0", "--profiling=false"])
        # No --server-address: kwok then serves nothing (its exec, logs and port-forward server stays off).
        stages = latency.kwok_stages(self.kwok_stages, f)  # pods Ready after the Helm release's time, given a factor
        self._spawn("kwok", [f"--kubeconfig={self.kubeconfig}", f"--config={stages}",
                             "--manage-all-nodes=true", f"--cidr={POD_CIDR}", "--node-ip=10.224.0.4",
                             "--node-lease-duration-seconds=40"])
        self._seed()
        self._fresh = (set(self._objects()), self._fingerprint())

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            process = self.processes[name]
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- processes ---
    def _spawn(self, name: str, args: list[str]) -> None:
        binary = self.bin_dir / name
        log = open(os.open(self.folder / f"{name}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")
        self.processes[name] = processes.popen([str(binary), *args], stdout=log, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, cwd=self.folder)
        log.close()

    def tail(self, name: str, lines: int = LOG_TAIL) -> str:
        path = self.folder / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        """Raise, with its last log lines, if a component has exited."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise ControlPlaneError(f"{name} exited with {process.returncode}; its last log lines:\n"
                                        f"{self.tail(name)}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            self.check_alive()
            try:
                if self.api().get(f"{self.server}/readyz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"kube-apiserver not ready within {START_TIMEOUT:.0f} s; its last log lines:\n"
                                        f"{self.tail('kube-apiserver')}\netcd:\n{self.tail('etcd')}")
            time.sleep(0.3)

    # --- access ---
    @property
    def ca_file(self) -> Path:
        return self.folder / "ca.crt"

    def api(self, token: Optional[str] = None) -> requests.Session:
        session = requests.Session()
        session.trust_env = False  # REQUESTS_CA_BUNDLE would win over ``verify``; loopback takes no proxy
        session.headers["Authorization"] = f"Bearer {token or self.admin_token}"
        session.verify = str(self.ca_file)
        return session

    def admin_kubeconfig(self) -> dict:
        import base64

        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        return {"apiVersion": "v1", "kind": "Config", "current-context": "e2e",
                "clusters": [{"name": "e2e", "cluster": {"server": self.server, "certificate-authority-data": ca}}],
                "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
                "users": [{"name": "admin", "user": {"token": self.admin_token}}]}

    def get(self, path: str) -> Optional[dict]:
        """GET ``path`` of the API; None on 404."""
        response = self.api().get(f"{self.server}{path}", timeout=10)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()

    # --- reuse by the next test (:func:`reused`) ---
    def _objects(self) -> dict[tuple[str, str, str], str]:
        """(kind, namespace, name) -> API path of every object the API lists, but :data:`TRANSIENT_KINDS` and
        :data:`PER_NAMESPACE`; kinds read from discovery each time (a test may add a custom resource definition)."""
        api, found = self.api(), {}
        versions = [("", "/api/v1")] + [(g["name"], f"/apis/{g['preferredVersion']['groupVersion']}")
                                        for g in api.get(f"{self.server}/apis", timeout=10).json()["groups"]]
        for group, base in versions:
            for kind in api.get(f"{self.server}{base}", timeout=10).json()["resources"]:
                key = f"{group}/{kind['name']}" if group else kind["name"]
                if "/" in kind["name"] or not {"list", "delete"} <= set(kind["verbs"]) or key in TRANSIENT_KINDS:
                    continue
                listed = api.get(f"{self.server}{base}/{kind['name']}", timeout=30)
                listed.raise_for_status()
                for item in listed.json()["items"]:
                    namespace, name = item["metadata"].get("namespace", ""), item["metadata"]["name"]
                    if (key, name) not in PER_NAMESPACE:
                        where = f"{base}/namespaces/{namespace}" if namespace else base
                        found[(key, namespace, name)] = f"{where}/{kind['name']}/{name}"
        return found

    def _fingerprint(self) -> dict:
        """What a test could change in place of the seeded objects: the nodes' labels, taints (but the node
        controllers' own ``node.kubernetes.io/`` ones) and cordon; the storage classes as a whole."""
        nodes = {n["metadata"]["name"]: (n["metadata"].get("labels"), n["spec"].get("unschedulable"),
                                         [t for t in n["spec"].get("taints") or []
                                          if not t["key"].startswith("node.kubernetes.io/")])
                 for n in self.get("/api/v1/nodes")["items"]}
        classes = {c["metadata"]["name"]: ({k: v for k, v in c.items() if k != "metadata"},
                                           c["metadata"].get("annotations"), c["metadata"].get("labels"))
                   for c in self.get("/apis/storage.k8s.io/v1/storageclasses")["items"]}
        return {"nodes": nodes, "storageclasses": classes}

    def reset(self) -> bool:
        """Delete what the last test left: every namespace but :data:`SYSTEM_NAMESPACES` with all it holds, and each
        other object a fresh start did not have; finalizers dropped (no controller here removes a load balancer's or
        a disk's once the test's cloud side has stopped). True when the API then shows what it showed right after
        the start, within :data:`RESET_WAIT`; False when it does not (an object left, a seeded one gone or changed, a
        component down): start a new one then."""
        try:
            self.check_alive()
            api, fresh = self.api(), self._fresh[0]
            merge = {"Content-Type": "application/merge-patch+json"}
            extra = {k: path for k, path in self._objects().items() if k not in fresh}
            namespaces = {name for (kind, _, name) in extra if kind == "namespaces"}
            # A namespace is emptied here, not by the namespace controller, which starts five seconds after the
            # deletion and waits out each pod's grace period: terminating first (nothing new is made in it), then
            # its pods at once, its other objects (the controllers' per-namespace ones too), and it is finalized.
            for namespace in namespaces:
                api.delete(f"{self.server}/api/v1/namespaces/{namespace}", timeout=10)
                api.delete(f"{self.server}/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": 0},
                           timeout=10)
                for kind in TRANSIENT_PATHS:  # not compared, but not left for the namespace's next holder
                    api.delete(f"{self.server}{kind.format(namespace=namespace)}", timeout=10)
            inside = [path for (_, namespace, _), path in extra.items() if namespace in namespaces] + [
                f"/api/v1/namespaces/{namespace}/{kind}/{name}" for namespace in namespaces
                for kind, name in PER_NAMESPACE]
            others = [path for (kind, namespace, _), path in extra.items()
                      if kind != "namespaces" and namespace not in namespaces]
            for path in inside + others:
                api.delete(f"{self.server}{path}", timeout=10)
                api.patch(f"{self.server}{path}", json={"metadata": {"finalizers": None}}, headers=merge,
                          timeout=10)
            for namespace in namespaces:
                api.put(f"{self.server}/api/v1/namespaces/{namespace}/finalize", timeout=10, json={
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace},
                    "spec": {"finalizers": []}})
            pending = [f"/api/v1/namespaces/{namespace}" for namespace in namespaces] + others
            deadline = time.monotonic() + RESET_WAIT
            while pending and time.monotonic() < deadline:
                pending = [path for path in pending if api.get(f"{self.server}{path}", timeout=10).status_code != 404]
                if pending:
                    time.sleep(0.5)
            return not pending and set(self._objects()) == fresh and self._fingerprint() == self._fresh[1]
        except (requests.RequestException, ControlPlaneError, KeyError, TypeError, ValueError):
            return False

    # --- what AKS has before the stack runs ---
    def _seed(self) -> None:
        api = self.api()
        for name, pool, taints in (("aks-system-00000000", "system", []),
                                   ("aks-gpu-00000000", "gpu", [GPU_TAINT])):
            node = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                                 "labels": {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                            "kubernetes.io/hostname": name, "kubernetes.azure.com/agentpool": pool,
                                            "agentpool": pool, "type": "kwok"}},
                    "spec": {"taints": taints},
                    "status": {"allocatable": NODE_SIZE, "capacity": NODE_SIZE}}
            api.post(f"{self.server}/api/v1/nodes", json=node, timeout=10).raise_for_status()
        for name, sku in STORAGE_CLASSES.items():
            storage_class = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                             "metadata": {"name": name, **({"annotations": {
                                 "storageclass.kubernetes.io/is-default-class": "true"}} if name == "default" else {})},
                             "provisioner": DISK_PROVISIONER, "parameters": {"skuname": sku},
                             "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer",
                             "allowVolumeExpansion": True}
            api.post(f"{self.server}/apis/storage.k8s.io/v1/storageclasses", json=storage_class,
                     timeout=10).raise_for_status()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._nodes_ready():
            self.check_alive()
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"kwok did not make the nodes Ready within {START_TIMEOUT:.0f} s:\n"
                                        f"{self.tail('kwok')}")
            time.sleep(0.3)

    def _nodes_ready(self) -> bool:
        nodes = (self.get("/api/v1/nodes") or {}).get("items", [])
        return len(nodes) == 2 and all(
            any(c.get("type") == "Ready" and c.get("status") == "True" for c in (n.get("status") or {}).get(
                "conditions", [])) for n in nodes)


_POOL: dict[tuple, list[ControlPlane]] = {}
_POOL_LOCK = threading.Lock()


def _stop_pool() -> None:
    with _POOL_LOCK:
        for planes in _POOL.values():
            for cp in planes:
                cp.stop()
        _POOL.clear()


atexit.register(_stop_pool)


@contextlib.contextmanager
def reused(bin_dir: Path, kwok_stages: Path) -> Iterator[ControlPlane]:
    """``with reused(bin_dir, stages) as cp``: a :class:`ControlPlane` for one test (or one thread of one), taken
    from those this process's earlier tests left, when :meth:`ControlPlane.reset` brings it back to a fresh start's
    state, else started anew; given back after a test that passed, stopped after one that failed (an exception
    through the ``with``, or ``kept`` set False: a fixture's test fails outside it). Starting one costs
    seconds of CPU (the API server's), about a tenth of a deploy test's. Same tools, kwok stages and latency factor
    only; the user token is the plane's own (:func:`tests.support.simulated_aks.aks_fleet` starts its own)."""
    key = (str(bin_dir), str(kwok_stages), os.environ.get(latency.SCALE_ENV, ""))
    with _POOL_LOCK:  # planes for other tools or factors idle on (a few percent of a core each): stopped
        others = [plane for other, planes in _POOL.items() if other != key for plane in planes]
        for other in [other for other in _POOL if other != key]:
            del _POOL[other]
    for plane in others:
        plane.stop()
    cp = None
    while cp is None:
        with _POOL_LOCK:
            cp = (_POOL.get(key) or [None]).pop()
        if cp is None:
            break
        if not cp.reset():
            cp.stop()
            cp = None
    if cp is None:
        cp = ControlPlane(bin_dir, kwok_stages).__enter__()
    try:
        yield cp
    except BaseException:
        cp.stop()
        raise
    if not cp.kept:
        cp.stop()
        return
    with _POOL_LOCK:
        _POOL.setdefault(key, []).append(cp)
