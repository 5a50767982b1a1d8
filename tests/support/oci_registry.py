"""A read-only OCI registry on 127.0.0.1 (plain HTTP) for real Helm to pull charts from, in tests.

STAND-IN for ghcr.io: the pull side of the OCI Distribution Spec (opencontainers/distribution-spec ``spec.md``:
``GET/HEAD /v2/<name>/manifests/<reference>`` by tag or digest, ``GET /v2/<name>/blobs/<digest>``,
``GET /v2/<name>/tags/list``), with a Helm chart stored as Helm stores one (helm/helm ``pkg/registry/constants.go``:
config ``application/vnd.cncf.helm.config.v1+json`` holding Chart.yaml as JSON, one layer
``application/vnd.cncf.helm.chart.content.v1.tar+gzip``, the .tgz). No auth, no push: a test stores manifests and
moves tags itself (``tags[...] = digest``), which is how a re-pushed tag looks to a client.
"""

from __future__ import annotations

import hashlib
import io
import json
import ssl
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

import yaml

MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Registry:
    """``with Registry() as r``: ``r.host`` (``127.0.0.1:<port>``), ``r.push_chart(repository, tgz)`` -> manifest
    digest, ``r.tags[repository][tag] = digest``. ``tls``: (certificate file, key file) to serve HTTPS, as ghcr.io
    does, for a client that has no plain-HTTP switch (pulumi-kubernetes' Helm)."""

    def __init__(self, tls: Optional[tuple[str, str]] = None) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, bytes] = {}
        self.tags: dict[str, dict[str, str]] = {}
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, code: int, body: bytes = b"", content_type: str = "application/json",
                      digest: str = "") -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                if digest:
                    self.send_header("Docker-Content-Digest", digest)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path.rstrip("/") == "/v2":
                    return self._send(200, b"{}")
                for repository, tags in registry.tags.items():
                    prefix = f"/v2/{repository}/"
                    if not path.startswith(prefix):
                        continue
                    kind, _, reference = path[len(prefix):].partition("/")
                    if kind == "manifests":
                        digest = tags.get(reference, reference)
                        if digest in registry.manifests:
                            return self._send(200, registry.manifests[digest], MANIFEST, digest)
                    elif kind == "blobs" and reference in registry.blobs:
                        return self._send(200, registry.blobs[reference], "application/octet-stream", reference)
                    elif kind == "tags" and reference == "list":
                        return self._send(200, json.dumps({"name": repository, "tags": sorted(tags)}).encode())
                self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not found"}]}')

            do_HEAD = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.host = f"127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "Registry":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def push_chart(self, repository: str, tgz: bytes, tag: str = "") -> str:
        """Store chart archive ``tgz`` in ``repository`` (tagged ``tag`` if given); its manifest digest."""
        with tarfile.open(fileobj=io.BytesIO(tgz)) as archive:
            chart_yaml = next(m for m in archive.getmembers()
                              if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml"))
            metadata = yaml.safe_load(archive.extractfile(chart_yaml))  # type: ignore[arg-type]
        config = json.dumps(metadata).encode()
        self.blobs[sha256(config)] = config
        self.blobs[sha256(tgz)] = tgz
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": MANIFEST,
            "config": {"mediaType": "application/vnd.cncf.helm.config.v1+json", "digest": sha256(config),
                       "size": len(config)},
            "layers": [{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "digest": sha256(tgz),
                        "size": len(tgz)}],
        }).encode()
        digest = sha256(manifest)
        self.manifests[digest] = manifest
        self.tags.setdefault(repository, {})
        if tag:
            self.tags[repository][tag] = digest
        return digest


def with_extra_template(tgz: bytes, name: str, text: str) -> bytes:
    """Chart archive ``tgz`` with one more template (``<chart>/templates/<name>``): the same chart name and version,
    other content, as a re-pushed tag would carry."""
    source = tarfile.open(fileobj=io.BytesIO(tgz))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as target:
        chart = ""
        for member in source.getmembers():
            chart = chart or member.name.split("/", 1)[0]
            target.addfile(member, source.extractfile(member) if member.isfile() else None)
        extra = tarfile.TarInfo(f"{chart}/templates/{name}")
        extra.size = len(text.encode())
        target.addfile(extra, io.BytesIO(text.encode()))
    return out.getvalue()


def with_version(tgz: bytes, version: str) -> bytes:
    """Chart archive ``tgz`` as the release ``version`` of the same chart (its Chart.yaml's ``version``), as a patch
    release that changed nothing else would be."""
    source = tarfile.open(fileobj=io.BytesIO(tgz))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read() if member.isfile() else None
            if member.isfile() and member.name.count("/") == 1 and member.name.endswith("/Chart.yaml"):
                chart = yaml.safe_load(data)
                chart["version"] = version
                data = yaml.safe_dump(chart, sort_keys=False).encode()
                member.size = len(data)
            target.addfile(member, io.BytesIO(data) if data is not None else None)
    return out.getvalue()
