#!/usr/bin/env python3
"""The pinned Pulumi binaries: the CLI and the provider plugins the program loads, each checked against the sha256
its lock, ``deploy/binaries.json``, records, before anything of it is unpacked or run.

Usage: ``.venv/bin/python -m ops.binaries --lock`` (a machine with network; review and commit the lock) or
``python3 -m ops.binaries --install DIR`` (CI, before any sign-in; standard library only).
``--lock``: the CLI at the README's version, each plugin at its SDK's version in requirements.lock (refused unless the
installed SDK's ``pulumi-plugin.json`` declares that version, the one the engine asks for); downloads each tarball
and its release's checksums file, refuses a tarball the file does not list or lists with another sha256, and
writes the lock. ``--install DIR``: refuses a lock entry without sha256, or whose version its source no longer
states; downloads every tarball and checks every sha256 first, then unpacks the CLI into DIR and installs each plugin
with ``DIR/pulumi plugin install resource NAME vVERSION --file TARBALL --reinstall`` (no network).
``OPS_BINARIES_ORIGIN`` (tests): ``scheme://host`` that replaces every URL's. Errors: one line, ``binaries: error:
...`` and exit 1, or for a bad command line ``error: ...`` and exit 2.
Why, and the upstream files read: docs/decisions/pinned-binaries.md.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Optional, Sequence

from cli import OneLineParser, UsageError

ROOT = Path(__file__).resolve().parents[1]
LOCK = Path("deploy") / "binaries.json"
ORIGIN_ENV = "OPS_BINARIES_ORIGIN"
HEX = re.compile(r"[0-9a-f]{64}")
#: The CLI: get.pulumi.com/releases/sdk holds what the release's GitHub assets hold, its checksums file among them
#: (pulumi/pulumi v3.230.0 .goreleaser.yml archive name, .github/workflows/sign.yml, release.yml job s3-blobs).
CLI = {
    "name": "pulumi", "kind": "cli",
    "url": "https://get.pulumi.com/releases/sdk/pulumi-v{version}-linux-x64.tar.gz",
    "checksums_url": "https://get.pulumi.com/releases/sdk/pulumi-{version}-checksums.txt",
}
#: The plugins: the release asset the CLI itself tries first (pulumi/pulumi v3.230.0
#: sdk/go/common/workspace/plugins.go, githubSource.Download, standardAssetName) and goreleaser's default checksums
#: file of that release (the providers' .goreleaser.yml set no checksum name).
PLUGINS = ("azure-native", "kubernetes", "command")
PLUGIN = {
    "kind": "resource",
    "url": "https://github.com/pulumi/pulumi-{name}/releases/download/v{version}/"
           "pulumi-resource-{name}-v{version}-linux-amd64.tar.gz",
    "checksums_url": "https://github.com/pulumi/pulumi-{name}/releases/download/v{version}/"
                     "pulumi-{name}_{version}_checksums.txt",
}
COMMENT = ("Written by `python -m ops.binaries --lock` and reviewed in a pull request (docs/decisions/"
           "pinned-binaries.md). sha256 null: not locked yet; the jobs that run pulumi stop in one line until it is.")


class Refused(Exception):
    """A one-line reason to stop."""


def fail(message: str) -> "NoReturn":  # noqa: F821
    print(f"binaries: error: {message}", file=sys.stderr)
    raise SystemExit(1)


# --- where each version comes from ------------------------------------------------------------------------------


def readme_cli_version(root: Path) -> str:
    found = re.findall(r"\*\*Pulumi CLI v(\d+\.\d+\.\d+)\*\*", (root / "README.md").read_text(encoding="utf-8"))
    if len(found) != 1:
        raise Refused(f"README.md: expected one '**Pulumi CLI v<x.y.z>**', found {len(found)}")
    return found[0]


def locked_sdk_version(root: Path, name: str) -> str:
    found = re.findall(rf"^pulumi-{re.escape(name)}==(\S+)", (root / "requirements.lock").read_text(), re.M)
    if len(found) != 1:
        raise Refused(f"requirements.lock: expected one 'pulumi-{name}==<version>', found {len(found)}")
    return found[0]


def sources(root: Path) -> dict[str, tuple[str, str]]:
    """name -> (version, where it is stated), for the CLI and each plugin."""
    cli = readme_cli_version(root)
    stated = {"pulumi": (cli, f"README.md: **Pulumi CLI v{cli}**")}
    for name in PLUGINS:
        version = locked_sdk_version(root, name)
        stated[name] = (version, f"requirements.lock: pulumi-{name}=={version}")
    return stated


def declared_plugin_version(name: str, search: Optional[Sequence[str]] = None) -> str:
    """The plugin version the installed SDK declares (its pulumi-plugin.json), which the engine asks for."""
    module = "pulumi_" + name.replace("-", "_")
    spec = importlib.machinery.PathFinder.find_spec(module, list(search) if search is not None else None)
    if spec is None or not spec.submodule_search_locations:
        raise Refused(f"{module} is not installed: run --lock with the project's venv "
                      "(.venv/bin/python, set up from the README)")
    declared = Path(list(spec.submodule_search_locations)[0]) / "pulumi-plugin.json"
    try:
        return json.loads(declared.read_text())["version"]
    except (OSError, ValueError, KeyError) as error:
        raise Refused(f"{declared}: no plugin version ({error})") from None


def entry_for(name: str, version: str, version_from: str) -> dict:
    template = CLI if name == "pulumi" else {"name": name, **PLUGIN}
    fields = {"name": name, "version": version}
    return {"name": name, "kind": template["kind"], "version": version, "version_from": version_from,
            "url": template["url"].format(**fields), "checksums_url": template["checksums_url"].format(**fields),
            "sha256": None}


# --- downloads ---------------------------------------------------------------------------------------------------


def located(url: str) -> str:
    """``url`` with the scheme and host of OPS_BINARIES_ORIGIN when it is set (tests)."""
    origin = os.environ.get(ORIGIN_ENV)
    if not origin:
        return url
    base = urllib.parse.urlsplit(origin)
    if base.scheme not in ("http", "https") or not base.netloc:
        raise Refused(f"{ORIGIN_ENV}: expected scheme://host[:port], got {origin!r}")
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(scheme=base.scheme, netloc=base.netloc))


def download(url: str, target: Path, attempts: int = 3) -> str:
    """Write ``url`` to ``target``; its sha256 (hex)."""
    source = located(url)
    for attempt in range(1, attempts + 1):
        digest = hashlib.sha256()
        try:
            with urllib.request.urlopen(source, timeout=60) as response, target.open("wb") as out:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            return digest.hexdigest()
        except urllib.error.HTTPError as error:
            if error.code < 500 or attempt == attempts:
                raise Refused(f"{source}: HTTP {error.code}") from None
        except (urllib.error.URLError, OSError) as error:
            if attempt == attempts:
                raise Refused(f"{source}: {getattr(error, 'reason', error)}") from None
        time.sleep(2 ** attempt)
    raise AssertionError("unreachable")


#: Digest lengths a checksums file may list, by algorithm: ``sha256sum`` (goreleaser, the CLI's release) and
#: ``shasum``'s default SHA-1, which azure-native's release Makefile ran in its v2 era (its newest stored copy).
DIGESTS = {64: "sha256", 40: "sha1"}


def listed_digest(checksums: str, filename: str, where: str) -> tuple[str, str]:
    """(algorithm, hex digest) a ``sha256sum``/``shasum``-style checksums file lists for ``filename``."""
    listed = [line.split()[0].lower() for line in checksums.splitlines()
              if len(line.split()) == 2 and line.split()[1].lstrip("*") == filename]
    if len(listed) != 1 or not re.fullmatch(r"[0-9a-f]+", listed[0]) or len(listed[0]) not in DIGESTS:
        raise Refused(f"{where} lists no sha256 (or SHA-1) for {filename}")
    return DIGESTS[len(listed[0])], listed[0]


# --- --lock -----------------------------------------------------------------------------------------------------


def lock(root: Path = ROOT, search: Optional[Sequence[str]] = None) -> list[dict]:
    """Download each binary and its checksums file, cross-check, and write the lock; the entries written."""
    entries = []
    for name, (version, version_from) in sources(root).items():
        if name != "pulumi":
            declared = declared_plugin_version(name, search)
            if declared != version:
                raise Refused(f"{version_from}, but the installed SDK declares plugin {name} {declared} "
                              "(pulumi-plugin.json): install the lock (pip install --require-hashes -r "
                              "requirements-dev.lock) and run --lock again")
        entries.append(entry_for(name, version, version_from))
    with tempfile.TemporaryDirectory() as scratch:
        for entry in entries:
            filename = PurePosixPath(urllib.parse.urlsplit(entry["url"]).path).name
            sha256 = download(entry["url"], Path(scratch) / filename)
            checksums = Path(scratch) / "checksums.txt"
            download(entry["checksums_url"], checksums)
            algorithm, listed = listed_digest(checksums.read_text(errors="replace"), filename, entry["checksums_url"])
            ours = sha256 if algorithm == "sha256" else hashlib.new(algorithm, (Path(scratch) / filename).read_bytes(),
                                                                    usedforsecurity=False).hexdigest()
            if listed != ours:
                raise Refused(f"{filename}: {algorithm} {ours}, but {entry['checksums_url']} lists {listed}")
            entry["sha256"] = sha256
            print(f"{entry['name']} {entry['version']}: {sha256} (as {entry['checksums_url']} lists)")
    path = root / LOCK
    path.write_text(json.dumps({"comment": COMMENT, "binaries": entries}, indent=2) + "\n")
    print(f"wrote {LOCK}: review it and commit it")
    return entries


# --- --install --------------------------------------------------------------------------------------------------


def read_lock(root: Path) -> list[dict]:
    path = root / LOCK
    try:
        entries = json.loads(path.read_text())["binaries"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise Refused(f"{LOCK}: expected {{\"binaries\": [...]}} ({error})") from None
    names = [entry.get("name") for entry in entries if isinstance(entry, dict)]
    if names != ["pulumi", *PLUGINS]:
        raise Refused(f"{LOCK}: expected the entries {['pulumi', *PLUGINS]}, found {names}")
    for entry in entries:
        sha256 = entry.get("sha256")
        if sha256 is not None and not (isinstance(sha256, str) and HEX.fullmatch(sha256)):
            raise Refused(f"{LOCK}: {entry['name']} sha256: expected 64 lowercase hex digits or null")
    return entries


def check_lock(root: Path, entries: list[dict]) -> None:
    """Each entry locked, at the version its source states, from the URL its name and version make."""
    stated = sources(root)
    for entry in entries:
        name, version = entry["name"], entry.get("version")
        if entry.get("sha256") is None:
            raise Refused(f"{LOCK} has no sha256 for {name} {version}: run python -m ops.binaries --lock on a "
                          "machine with network and commit the lock (docs/platform.md)")
        if version != stated[name][0]:
            raise Refused(f"{LOCK} pins {name} {version}, but {stated[name][1]}: run python -m ops.binaries "
                          "--lock on a machine with network and commit the lock (docs/platform.md)")
        expected = entry_for(name, version, "")
        for key in ("kind", "url", "checksums_url"):
            if entry.get(key) != expected[key]:
                raise Refused(f"{LOCK}: {name} {key}: expected {expected[key]!r}")


def unpack_cli(tarball: Path, target: Path) -> None:
    """The CLI archive's ``pulumi/`` folder into ``target``: regular files and folders only, none outside it."""
    with tarfile.open(tarball, "r:gz") as archive:
        members = archive.getmembers()
        for member in members:
            parts = PurePosixPath(member.name).parts
            if not (member.isfile() or member.isdir()) or not parts or parts[0] != "pulumi" or ".." in parts \
                    or PurePosixPath(member.name).is_absolute():
                raise Refused(f"{tarball.name}: unexpected member {member.name!r} (expected files under pulumi/)")
        target.mkdir(parents=True, exist_ok=True)
        for member in members:
            inside = target.joinpath(*PurePosixPath(member.name).parts[1:])
            if member.isdir():
                inside.mkdir(parents=True, exist_ok=True)
                continue
            inside.parent.mkdir(parents=True, exist_ok=True)
            with archive.extractfile(member) as data, inside.open("wb") as out:
                shutil.copyfileobj(data, out)
            inside.chmod(member.mode & 0o755)


def install(target: Path, root: Path = ROOT) -> None:
    entries = read_lock(root)
    check_lock(root, entries)
    with tempfile.TemporaryDirectory() as scratch:
        files = {}
        for entry in entries:  # every sha256 checked before anything is unpacked or run
            filename = PurePosixPath(urllib.parse.urlsplit(entry["url"]).path).name
            files[entry["name"]] = Path(scratch) / filename
            sha256 = download(entry["url"], files[entry["name"]])
            if sha256 != entry["sha256"]:
                raise Refused(f"{filename}: sha256 {sha256}, but {LOCK} pins {entry['sha256']}; nothing installed")
        unpack_cli(files["pulumi"], target)
        cli = target / "pulumi"
        if not cli.is_file():
            raise Refused(f"{files['pulumi'].name} holds no pulumi/pulumi")
        # No update check: nothing but the checked files, and no request, while installing.
        env = {**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"}
        for entry in entries[1:]:
            # --reinstall: a plugin of that version already in PULUMI_HOME (a self-hosted runner's) is replaced by
            # the checked file, not kept.
            command = [str(cli), "plugin", "install", entry["kind"], entry["name"], f"v{entry['version']}",
                       "--file", str(files[entry["name"]]), "--reinstall"]
            done = subprocess.run(command, env=env)
            if done.returncode != 0:
                raise Refused(f"pulumi plugin install {entry['kind']} {entry['name']} v{entry['version']} --file "
                              f"{files[entry['name']].name}: exit {done.returncode}")
            print(f"installed {entry['name']} {entry['version']} ({entry['sha256']})")
    print(f"installed pulumi {entries[0]['version']} in {target}")


def main(argv: Optional[Sequence[str]] = None, root: Path = ROOT) -> int:
    parser = OneLineParser(prog="python -m ops.binaries", description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--lock", action="store_true", help="download, cross-check and write deploy/binaries.json")
    action.add_argument("--install", metavar="DIR", help="check and install the locked binaries; the CLI into DIR")
    try:
        args = parser.parse_args(argv)
        if args.install is not None and not args.install.strip():
            raise UsageError("--install: expected a folder for the CLI, got ''")
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        if args.lock:
            lock(root)
        else:
            install(Path(args.install), root)
    except Refused as refused:
        fail(str(refused))
    return 0


if __name__ == "__main__":
    sys.exit(main())
