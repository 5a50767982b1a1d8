"""The reference artefacts kept with the project (tests/reference/README.md): the vendored ones are the pinned
upstream bytes, the fetched ones are in place and pass their pinned digests, and .ci/fetch-reference takes a file
from its cache, the offline source or the URL, and refuses one that fails its digest wherever it came from."""

from __future__ import annotations

import functools
import hashlib
import http.server
import importlib.machinery
import importlib.util
import json
import subprocess
import sys
import threading

import pytest

from tests.support import REFERENCE, ROOT
from tests.support.scenarios import DASHBOARD_SHA256

SCRIPT = ROOT / ".ci" / "fetch-reference"
MANIFEST = json.loads((REFERENCE / "fetch.json").read_text())

#: Vendored files: path -> sha256 of the upstream bytes (tests/reference/README.md).
VENDORED = {
    "grafana-dashboards/AdvancedGPUObservability.json": DASHBOARD_SHA256,
    "pulumi/project.json": "c0fad1c65b9940f2889af0fb05e31314c0a080ba6966504919004c5cbc776b17",
    "LICENSE-Apache-2.0.txt": "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4",
}


def fetcher():
    loader = importlib.machinery.SourceFileLoader("fetch_reference", str(SCRIPT))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_vendored_files_are_the_pinned_upstream_bytes_and_named_in_the_notice():
    notice = (REFERENCE / "README.md").read_text(encoding="utf-8")
    for path, digest in VENDORED.items():
        assert hashlib.sha256((REFERENCE / path).read_bytes()).hexdigest() == digest, path
        assert f"`{path}`" in notice or path.startswith("LICENSE"), path
    assert "Apache-2.0" in notice and "AGPL-3.0" in notice
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    fetched_dirs = {f"tests/reference/{entry['path'].split('/')[0]}/" for entry in MANIFEST["files"]}
    assert fetched_dirs <= set(ignored), "fetched artefacts stay out of git"
    assert not any(path.startswith(tuple(fetched_dirs)) for path in (f"tests/reference/{p}" for p in VENDORED))


def test_the_schema_is_the_pinned_clis():
    """The vendored project schema is the one of the Pulumi CLI every workflow pins (README, pulumi-version)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (version,) = set(__import__("re").findall(r"\*\*Pulumi CLI v([\d.]+)\*\*", readme))
    assert f"tag `v{version}`" in (REFERENCE / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("entry", MANIFEST["files"], ids=[e["path"] for e in MANIFEST["files"]])
def test_every_fetched_artefact_is_in_place_and_passes_its_pinned_digest(entry):
    module = fetcher()
    (kind,) = [k for k in module.DIGESTS if k in entry]
    path = REFERENCE / entry["path"]
    assert path.is_file(), f"{path}: run .ci/fetch-reference (the tests' set-up)"
    assert module.digest_of(kind, path.read_bytes()) == entry[kind]
    assert entry["url"].startswith("https://") and "licence" in entry


def test_tar_digest_is_of_the_members_not_the_packaging(tmp_path):
    """The same files packaged again (other timestamps) pass; one changed byte in one file fails."""
    import io
    import tarfile

    module = fetcher()

    def pack(files, mtime):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size, info.mtime = len(data), mtime
                tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    files = {"chart/Chart.yaml": b"name: chart\n", "chart/values.yaml": b"a: 1\n"}
    first, again = pack(files, 0), pack(dict(reversed(files.items())), 1796021346)
    assert first != again and module.tar_sha256(first) == module.tar_sha256(again)
    assert module.tar_sha256(pack({**files, "chart/values.yaml": b"a: 2\n"}, 0)) != module.tar_sha256(first)


@pytest.fixture
def server(tmp_path):
    """A local HTTP server for the URL path of the script: (base URL, directory it serves)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    httpd.shutdown()


def run(tmp_path, manifest, *args):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"files": manifest}))
    return subprocess.run([sys.executable, str(SCRIPT), "--manifest", str(path), "--dest", str(tmp_path / "dest"),
                           "--cache", str(tmp_path / "cache"), *args], capture_output=True, text=True, timeout=120)


def test_fetch_from_the_url_then_the_cache_and_refuse_a_mismatch(tmp_path, server):
    base, served = server
    good, bad = b"the artefact\n", b"another artefact\n"
    (served / "a.txt").write_bytes(good)
    entry = {"path": "x/a.txt", "url": f"{base}/a.txt", "sha256": hashlib.sha256(good).hexdigest()}
    done = run(tmp_path, [entry], "--source", str(tmp_path / "none"))
    assert done.returncode == 0 and "from http://127.0.0.1" in done.stdout, done.stderr
    assert (tmp_path / "dest" / "x" / "a.txt").read_bytes() == good

    (tmp_path / "dest" / "x" / "a.txt").unlink()
    (served / "a.txt").unlink()  # the URL is gone: the cache serves it
    done = run(tmp_path, [entry], "--source", str(tmp_path / "none"))
    assert done.returncode == 0 and "(from cache)" in done.stdout, done.stderr

    (served / "b.txt").write_bytes(bad)  # a URL that answers other bytes is refused, nothing written
    wrong = {"path": "x/b.txt", "url": f"{base}/b.txt", "sha256": hashlib.sha256(b"what was pinned\n").hexdigest()}
    done = run(tmp_path, [wrong], "--source", str(tmp_path / "none"))
    assert done.returncode == 1 and "refused" in done.stderr and not (tmp_path / "dest" / "x" / "b.txt").exists()


def test_the_offline_source_is_checked_like_the_url(tmp_path):
    """A local copy of the artefacts (here a temporary one) supplies the same bytes offline; another file there is
    refused, a tampered cache entry is dropped, and --offline never reaches the URL."""
    source = tmp_path / "source"
    (source / "x").mkdir(parents=True)
    (source / "x" / "a.txt").write_bytes(b"the artefact\n")
    entry = {"path": "x/a.txt", "url": "https://example.invalid/a.txt",
             "sha256": hashlib.sha256(b"the artefact\n").hexdigest()}
    done = run(tmp_path, [entry], "--source", str(source), "--offline")
    assert done.returncode == 0 and f"(from {source})" in done.stdout, done.stderr

    cached = tmp_path / "cache" / f"sha256-{entry['sha256']}"
    cached.write_bytes(b"tampered\n")
    (tmp_path / "dest" / "x" / "a.txt").unlink()
    done = run(tmp_path, [entry], "--source", str(source), "--offline")
    assert done.returncode == 0 and f"(from {source})" in done.stdout and cached.read_bytes() == b"the artefact\n"

    (source / "x" / "a.txt").write_bytes(b"tampered\n")
    cached.unlink()
    (tmp_path / "dest" / "x" / "a.txt").unlink()
    done = run(tmp_path, [entry], "--source", str(source), "--offline")
    assert done.returncode == 1 and "refused" in done.stderr and not (tmp_path / "dest" / "x" / "a.txt").exists()
    done = run(tmp_path, [entry], "--source", str(tmp_path / "none"), "--offline")
    assert done.returncode == 1 and "--offline" in done.stderr


def test_without_a_source_or_network_one_line_says_what_is_missing_and_where_it_looked(tmp_path):
    """A newcomer's run without internet or a copy printed six warnings and two errors and never named the folder it
    had looked in: now a first line names the sources in order, and one error line the files and the way out."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on: the URL fails at once
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    entries = [{"path": f"x/{n}.txt", "url": f"http://127.0.0.1:{port}/{n}.txt", "sha256": "0" * 64} for n in "ab"]
    done = run(tmp_path, entries, "--source", str(tmp_path / "none"))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [f"reference artefacts: 2 files, looked for in the cache {tmp_path / 'cache'}, "
                                        f"then in {tmp_path / 'none'} (no such folder), then at their pinned URLs"]
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: 2 reference file(s) missing (x/a.txt, x/b.txt): not in the cache or ")
    assert "their URLs failed (" in line and line.endswith("set AKS_GPU_OBS_REFERENCE_SOURCE (or --source) to a copy "
                                                           "of the files (tests/reference/README.md)")
