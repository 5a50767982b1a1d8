"""ops/binaries.py against a local release server: --lock records each tarball's sha256 as the release's checksums
file lists it, --install checks every tarball before anything is unpacked or run and installs each plugin from its
checked file; the committed lock pins the README's CLI and requirements.lock's SDKs."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import socket
import sys
import tarfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ops import binaries
from tests.support import ROOT

VERSIONS = {"pulumi": "3.277.0", "azure-native": "3.29.0", "kubernetes": "4.34.2", "command": "1.2.1"}


class Release:
    """A local HTTP server answering the lock's URL paths from ``files`` (path -> bytes); ``requests`` lists the paths
    asked for."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        release = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                release.requests.append(self.path)
                body = release.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def put(self, url: str, body: bytes) -> None:
        self.files[urllib.parse.urlsplit(url).path] = body

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def release(monkeypatch):
    served = Release()
    monkeypatch.setenv(binaries.ORIGIN_ENV, served.origin)
    yield served
    served.close()


def tarball(members: dict[str, tuple[bytes, int]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, (data, mode) in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def recorder(log: Path) -> bytes:
    """A stand-in ``pulumi`` that appends its arguments, the sha256 of its --file and its update-check switch."""
    return (f"#!{sys.executable}\nimport hashlib, json, os, sys\nargs = sys.argv[1:]\n"
            "file = args[args.index('--file') + 1] if '--file' in args else None\n"
            "digest = hashlib.sha256(open(file, 'rb').read()).hexdigest() if file else None\n"
            f"with open({str(log)!r}, 'a') as out:\n"
            "    out.write(json.dumps({'args': args, 'file_sha256': digest,\n"
            "                          'skip_update_check': os.environ.get('PULUMI_SKIP_UPDATE_CHECK')}) + '\\n')\n"
            ).encode()


def project(tmp_path: Path) -> Path:
    """A copy of the files the versions come from (README.md, requirements.lock) and an empty deploy/."""
    root = tmp_path / "project"
    (root / "deploy").mkdir(parents=True)
    for name in ("README.md", "requirements.lock"):
        shutil.copy(ROOT / name, root / name)
    return root


def site(tmp_path: Path, **declared: str) -> list[str]:
    """A site-packages folder whose SDKs declare the plugin versions given (default: requirements.lock's)."""
    folder = tmp_path / "site"
    for name in binaries.PLUGINS:
        package = folder / ("pulumi_" + name.replace("-", "_"))
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        version = declared.get(name.replace("-", "_"), VERSIONS[name])
        (package / "pulumi-plugin.json").write_text(json.dumps({"resource": True, "name": name, "version": version}))
    return [str(folder)]


def publish(release: Release, cli: bytes, plugins: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Serve the CLI's and each plugin's tarball at the lock's URLs, each with its release's checksums file."""
    built = {"pulumi": cli}
    for name in binaries.PLUGINS:
        built[name] = (plugins or {}).get(name) or tarball(
            {f"pulumi-resource-{name}": (f"#!/bin/sh\necho {name}\n".encode(), 0o755)})
    for name, body in built.items():
        entry = binaries.entry_for(name, VERSIONS[name], "")
        release.put(entry["url"], body)
        filename = entry["url"].rsplit("/", 1)[1]
        release.put(entry["checksums_url"], (f"{'0' * 64}  other-file.tar.gz\n"
                                             f"{hashlib.sha256(body).hexdigest()}  {filename}\n").encode())
    return built


def cli_tarball(log: Path) -> bytes:
    return tarball({"pulumi/pulumi": (recorder(log), 0o755),
                    "pulumi/pulumi-language-python": (b"#!/bin/sh\nexit 0\n", 0o755)})


def write_lock(root: Path, built: dict[str, bytes], **overrides) -> None:
    entries = []
    for name, body in built.items():
        entry = binaries.entry_for(name, VERSIONS[name], "test")
        entry["sha256"] = hashlib.sha256(body).hexdigest()
        entry.update(overrides.get(name.replace("-", "_"), {}))
        entries.append(entry)
    (root / binaries.LOCK).write_text(json.dumps({"comment": "test", "binaries": entries}))


@pytest.fixture
def decoy(tmp_path, monkeypatch) -> Path:
    """A `pulumi` first on PATH (GitHub's runners ship one): it must never be the one that installs."""
    folder, log = tmp_path / "path", tmp_path / "decoy.log"
    folder.mkdir()
    (folder / "pulumi").write_bytes(recorder(log))
    (folder / "pulumi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


# --- --lock ------------------------------------------------------------------------------------------------------


def test_lock_records_the_sha256_each_release_lists(tmp_path, release, capsys):
    """--lock downloads each tarball and its release's checksums file and writes the lock: the real URLs (not the
    test origin), the README's CLI and requirements.lock's SDK versions with where each is stated, and each
    tarball's sha256, the one its checksums file lists."""
    root = project(tmp_path)
    built = publish(release, cli_tarball(tmp_path / "unused.log"))
    binaries.lock(root, search=site(tmp_path))
    written = json.loads((root / binaries.LOCK).read_text())["binaries"]
    assert [(e["name"], e["kind"], e["version"]) for e in written] == [
        ("pulumi", "cli", "3.277.0"), ("azure-native", "resource", "3.29.0"), ("kubernetes", "resource", "4.34.2"),
        ("command", "resource", "1.2.1")]
    for entry in written:
        assert entry["sha256"] == hashlib.sha256(built[entry["name"]]).hexdigest()
        assert entry["url"].startswith("https://") and entry["checksums_url"].startswith("https://")
        assert urllib.parse.urlsplit(entry["url"]).path in release.requests
        assert urllib.parse.urlsplit(entry["checksums_url"]).path in release.requests
    assert written[0]["version_from"] == "README.md: **Pulumi CLI v3.277.0**"
    assert written[1]["version_from"] == "requirements.lock: pulumi-azure-native==3.29.0"
    assert written[0]["url"] == "https://get.pulumi.com/releases/sdk/pulumi-v3.277.0-linux-x64.tar.gz"
    assert written[3]["checksums_url"] == (
        "https://github.com/pulumi/pulumi-command/releases/download/v1.2.1/pulumi-command_1.2.1_checksums.txt")
    assert "wrote deploy/binaries.json" in capsys.readouterr().out


@pytest.mark.parametrize("listed", ["other", "missing"])
def test_lock_refuses_a_tarball_its_checksums_file_does_not_vouch_for(tmp_path, release, listed):
    """A tarball whose sha256 its release's checksums file lists otherwise, or not at all, is not locked: one line
    naming the file, and no lock written."""
    root = project(tmp_path)
    publish(release, cli_tarball(tmp_path / "unused.log"))
    entry = binaries.entry_for("kubernetes", "4.34.2", "")
    filename = entry["url"].rsplit("/", 1)[1]
    release.put(entry["checksums_url"], f"{'ab' * 32}  {filename if listed == 'other' else 'x.tar.gz'}\n".encode())
    with pytest.raises(binaries.Refused) as refused:
        binaries.lock(root, search=site(tmp_path))
    message = str(refused.value)
    assert "\n" not in message and (filename in message) and entry["checksums_url"] in message
    assert not (root / binaries.LOCK).exists()


@pytest.mark.parametrize("tampered", [False, True], ids=["matches", "differs"])
def test_lock_cross_checks_a_release_that_lists_sha1(tmp_path, release, tampered):
    """A release whose checksums file was written by ``shasum`` (SHA-1, 40 hex digits; azure-native's release
    Makefile in its v2 era) is cross-checked with SHA-1, and the lock still records the tarball's sha256; a SHA-1 that
    differs is refused in one line."""
    root = project(tmp_path)
    built = publish(release, cli_tarball(tmp_path / "unused.log"))
    entry = binaries.entry_for("azure-native", "3.29.0", "")
    filename = entry["url"].rsplit("/", 1)[1]
    sha1 = hashlib.sha1(built["azure-native"], usedforsecurity=False).hexdigest()
    release.put(entry["checksums_url"], f"{'0' * 40 if tampered else sha1}  {filename}\n".encode())
    if tampered:
        with pytest.raises(binaries.Refused) as refused:
            binaries.lock(root, search=site(tmp_path))
        assert "\n" not in str(refused.value) and "sha1" in str(refused.value) and filename in str(refused.value)
        assert not (root / binaries.LOCK).exists()
        return
    binaries.lock(root, search=site(tmp_path))
    written = {e["name"]: e for e in json.loads((root / binaries.LOCK).read_text())["binaries"]}
    assert written["azure-native"]["sha256"] == hashlib.sha256(built["azure-native"]).hexdigest()


def test_lock_refuses_a_plugin_version_the_installed_sdk_does_not_declare(tmp_path, release):
    """The engine asks for the version the SDK's pulumi-plugin.json declares: --lock refuses, before any download,
    when it is not requirements.lock's version of that SDK."""
    root = project(tmp_path)
    publish(release, cli_tarball(tmp_path / "unused.log"))
    with pytest.raises(binaries.Refused) as refused:
        binaries.lock(root, search=site(tmp_path, azure_native="3.28.0"))
    assert str(refused.value).startswith("requirements.lock: pulumi-azure-native==3.29.0, but the installed SDK "
                                         "declares plugin azure-native 3.28.0")
    assert release.requests == [] and not (root / binaries.LOCK).exists()


# --- --install ---------------------------------------------------------------------------------------------------


def test_install_refuses_a_lock_without_sha256_in_one_line(tmp_path, release, decoy, capsys):
    """The committed state (sha256 null): the job stops in one line saying what to run, before any download."""
    root = project(tmp_path)
    shutil.copy(ROOT / binaries.LOCK, root / binaries.LOCK)
    target = tmp_path / "bin"
    with pytest.raises(SystemExit) as exit_:
        binaries.main(["--install", str(target)], root=root)
    assert exit_.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        "binaries: error: deploy/binaries.json has no sha256 for pulumi 3.277.0: run python -m ops.binaries --lock "
        "on a machine with network and commit the lock (docs/platform.md)"]
    assert release.requests == [] and not target.exists() and not decoy.exists()


@pytest.mark.parametrize("tampered", ["pulumi", "command"])
def test_install_refuses_a_tampered_tarball_before_unpacking_or_running_anything(tmp_path, release, decoy, tampered):
    """A tarball whose sha256 is not the lock's, the CLI's or the last plugin's: refused naming it, with no file
    in DIR and no pulumi run (neither the one on PATH nor the archive's). pulumi/pulumi#9483: the CLI unpacks and runs
    a downloaded plugin with no verification; pulumi/docs#5507: get.pulumi.com once served different bytes by
    location, which this refuses rather than runs."""
    root, log = project(tmp_path), tmp_path / "pulumi.log"
    built = publish(release, cli_tarball(log))
    write_lock(root, built)
    entry = binaries.entry_for(tampered, VERSIONS[tampered], "")
    release.put(entry["url"], built[tampered] + b"\0")
    target = tmp_path / "bin"
    with pytest.raises(binaries.Refused) as refused:
        binaries.install(target, root)
    assert str(refused.value).startswith(entry["url"].rsplit("/", 1)[1] + ": sha256 ")
    assert not target.exists() and not log.exists() and not decoy.exists()


def test_install_refuses_a_version_its_source_no_longer_states(tmp_path, release, decoy):
    """requirements.lock moved a plugin (a bump) and the lock was not made again: one line, nothing downloaded."""
    root = project(tmp_path)
    built = publish(release, cli_tarball(tmp_path / "pulumi.log"))
    write_lock(root, built, kubernetes={"version": "4.34.1"})
    with pytest.raises(binaries.Refused) as refused:
        binaries.install(tmp_path / "bin", root)
    assert str(refused.value).startswith("deploy/binaries.json pins kubernetes 4.34.1, but requirements.lock: "
                                         "pulumi-kubernetes==4.34.2: run python -m ops.binaries --lock")
    assert release.requests == []


def test_install_puts_the_cli_in_dir_and_installs_each_plugin_from_its_checked_file(tmp_path, release, decoy):
    """On good files: DIR holds the archive's pulumi/ folder, and DIR's pulumi (not the one on PATH) installs each
    plugin from the very file that was checked, by version, with --file and --reinstall, without update check."""
    root, log = project(tmp_path), tmp_path / "pulumi.log"
    built = publish(release, cli_tarball(log))
    write_lock(root, built)
    target = tmp_path / "bin"
    binaries.install(target, root)
    assert sorted(p.name for p in target.iterdir()) == ["pulumi", "pulumi-language-python"]
    assert os.access(target / "pulumi", os.X_OK)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [call["args"][:6] for call in calls] == [
        ["plugin", "install", "resource", name, f"v{VERSIONS[name]}", "--file"] for name in binaries.PLUGINS]
    assert all(call["args"][7:] == ["--reinstall"] for call in calls)
    assert [call["file_sha256"] for call in calls] == [hashlib.sha256(built[n]).hexdigest() for n in binaries.PLUGINS]
    assert {call["skip_update_check"] for call in calls} == {"true"}
    assert not decoy.exists()


@pytest.mark.parametrize("member", [
    tarfile.TarInfo("pulumi/../../escaped"), tarfile.TarInfo("elsewhere/pulumi"), tarfile.TarInfo("pulumi/link")])
def test_install_unpacks_nothing_from_a_cli_archive_with_a_member_outside_its_folder(tmp_path, release, member):
    """Even a locked archive is unpacked only as regular files under pulumi/: a path out of it or a link is refused
    before any file is written."""
    root = project(tmp_path)
    if member.name.endswith("link"):
        member.type, member.linkname = tarfile.SYMTYPE, "/etc/passwd"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.addfile(tarfile.TarInfo("pulumi/pulumi"), io.BytesIO(b""))
        if member.isfile():
            member.size = 1
        archive.addfile(member, io.BytesIO(b"x"))
    built = publish(release, buffer.getvalue())
    write_lock(root, built)
    with pytest.raises(binaries.Refused) as refused:
        binaries.install(tmp_path / "bin", root)
    assert f"unexpected member {member.name!r}" in str(refused.value)
    assert not (tmp_path / "bin").exists() and not (tmp_path / "escaped").exists()


@pytest.mark.engine  # the real CLI: with the end-to-end tests (tests/conftest.py orders them)
def test_the_real_cli_installs_each_plugin_from_its_file_offline(tmp_path, release, monkeypatch):
    """The real Pulumi CLI v3.277.0 (toolchain/build) takes the command --install runs: each plugin lands in
    PULUMI_HOME from its file, and the CLI opens no connection (its proxy, a listener here, sees none; pulumi/pulumi
    v3.277.0 pkg/cmd/pulumi/plugin/plugin_install.go: with --file no resolution and no download)."""
    from tests.support.real_engine import tools

    real = tools().bin / "pulumi"
    wrapper = tarball({"pulumi/pulumi": (f"#!/bin/sh\nexec '{real}' \"$@\"\n".encode(), 0o755)})
    root = project(tmp_path)
    built = publish(release, wrapper)
    write_lock(root, built)
    proxy = socket.socket()
    proxy.bind(("127.0.0.1", 0))
    proxy.listen(8)
    proxy.settimeout(0.5)
    home = tmp_path / "pulumi-home"
    monkeypatch.setenv("PULUMI_HOME", str(home))
    for variable in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.getsockname()[1]}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    try:
        binaries.install(tmp_path / "bin", root)
        with pytest.raises(socket.timeout):
            proxy.accept()
    finally:
        proxy.close()
    for name in binaries.PLUGINS:
        installed = home / "plugins" / f"resource-{name}-v{VERSIONS[name]}" / f"pulumi-resource-{name}"
        assert installed.read_text() == f"#!/bin/sh\necho {name}\n", installed


# --- the committed lock and the set-up ---------------------------------------------------------------------------


def test_the_committed_lock_pins_the_readme_cli_and_the_locked_sdks():
    """deploy/binaries.json's versions are the ones the program needs, read from where they are stated (the README's
    CLI, requirements.lock's SDKs), at the URLs their names and versions make; each sha256 is 64 hex digits or, not
    locked yet, null. A lock bump without `--lock` fails here, naming what to run."""
    entries = binaries.read_lock(ROOT)
    stated = binaries.sources(ROOT)
    for entry in entries:
        assert entry["version"] == stated[entry["name"]][0], (
            f"{entry['name']}: {stated[entry['name']][1]}; run python -m ops.binaries --lock and commit the lock")
        assert entry["version_from"] == stated[entry["name"]][1]
        expected = binaries.entry_for(entry["name"], entry["version"], entry["version_from"])
        assert {k: v for k, v in entry.items() if k != "sha256"} == {k: v for k, v in expected.items()
                                                                        if k != "sha256"}
        assert entry["sha256"] is None or re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])
    assert [e["name"] for e in entries] == ["pulumi", *binaries.PLUGINS]


def test_the_installed_sdks_declare_the_plugin_versions_the_lock_pins():
    """The venv's SDKs (installed from the lock) ask the engine for exactly the plugins deploy/binaries.json pins."""
    for entry in binaries.read_lock(ROOT)[1:]:
        assert binaries.declared_plugin_version(entry["name"]) == entry["version"]


def test_the_set_up_locks_the_binaries_before_the_variables_switch_the_jobs_on():
    """docs/platform.md's set-up has the lock step (what to run, what to commit, what stops until then), before the
    last step, whose variables switch the deploy on."""
    text = (ROOT / "docs" / "platform.md").read_text(encoding="utf-8").split("**Set-up, in order**", 1)[1]
    steps = re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |\n\n\| \||\Z)", text, re.M | re.S)
    locking = [int(n) for n, body in steps if "python -m ops.binaries --lock" in body]
    assert len(locking) == 1 and locking[0] < int(steps[-1][0]) and "gh variable set AZURE_CLIENT_ID" in steps[-1][1]
    body = " ".join(dict(steps)[str(locking[0])].split())
    assert "deploy/binaries.json" in body and "stop in one line" in body


@pytest.mark.parametrize("argv,expected", [
    ([], "error: one of the arguments --lock --install is required"),
    (["--install", ""], "error: --install: expected a folder for the CLI, got ''"),
    (["--lock", "--install", "bin"], "error: argument --install: not allowed with argument --lock"),
])
def test_a_bad_command_line_is_one_line(argv, expected, capsys):
    assert binaries.main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [expected]


def test_install_runs_on_a_bare_python(tmp_path):
    """The jobs run it with setup-python's python3, not the project's venv: the standard library (and the repository's
    cli module) is all it imports. Against the committed lock it stops in its one line, exit 1."""
    import subprocess

    bare = getattr(sys, "_base_executable", sys.executable)
    done = subprocess.run([bare, "-E", "-s", "-m", "ops.binaries", "--install", str(tmp_path / "bin")], cwd=ROOT,
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "binaries: error: deploy/binaries.json has no sha256 for pulumi 3.277.0: run python -m ops.binaries --lock "
        "on a machine with network and commit the lock (docs/platform.md)"]
