"""The Python locks (docs/dependencies.md): made by pip-compile with hashes, every range of its requirements file locked
at a version inside it, the runtime, development and policy locks agreeing, the tests running the locked set; and the
plugin versions the locked SDKs imply, as docs/dependencies.md states them."""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support import ROOT

#: lock -> the requirements file it is compiled from. requirements-dev.txt includes requirements.txt (`-r`), so the
#: development lock holds the runtime set at the runtime lock's versions plus the tools.
VENV_LOCKS = {"requirements.lock": "requirements.txt", "requirements-dev.lock": "requirements-dev.txt",
              "policy/requirements.lock": "policy/requirements.txt"}
#: The real Azure CLI's lock (.ci/run and pr.yml install it into a venv of its own, .azcli, hashes required): made
#: and checked as the others, but not held to their versions (azure-cli pins its own dependencies exactly).
LOCKS = {**VENV_LOCKS, ".ci/azure-cli.lock": ".ci/azure-cli.txt"}


def ranges(path: Path, include: bool = True) -> dict[str, Requirement]:
    """name -> requirement of a requirements file; with ``include``, those of the files it includes (``-r``) too."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            if include:
                found.update(ranges(path.parent / line[3:].strip()))
        elif line:
            requirement = Requirement(line)
            found[canonicalize_name(requirement.name)] = requirement
    return found


def locked(path: Path) -> dict[str, dict]:
    """name -> {"version", "hashes", "via"} of a pip-compile output."""
    entries, current = {}, None
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?: \\)?$", line)
        if match:
            current = entries.setdefault(canonicalize_name(match.group(1)),
                                         {"version": match.group(2), "hashes": [], "via": []})
        elif current and (found := re.match(r"^\s+--hash=sha256:([0-9a-f]{64})", line)):
            current["hashes"].append(found.group(1))
        elif current and (found := re.match(r"^\s+#\s+(?:via\s+)?(-r \S+|[A-Za-z0-9._-]+)$", line)):
            current["via"].append(found.group(1))
        elif line and not line.startswith((" ", "#")):
            raise AssertionError(f"{path.name}: unexpected line {line!r}")
    return entries


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_is_pip_compiles_with_hashes_of_its_requirements(lock):
    text = (ROOT / lock).read_text()
    header = re.search(r"^#    (pip-compile .*)$", text, re.M)
    assert header, "the header with the command that made the lock (the bot re-runs it)"
    command = header.group(1).split()
    assert "--generate-hashes" in command and "--allow-unsafe" in command
    assert f"--output-file={Path(lock).name}" in command and command[-1] == Path(LOCKS[lock]).name
    entries = locked(ROOT / lock)
    assert entries
    for name, entry in entries.items():
        assert entry["hashes"], f"{lock}: {name} has no --hash (pip install --require-hashes would refuse the set)"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_range_is_locked_inside_it_and_nothing_else_is_top_level(lock):
    contract, entries = ranges(ROOT / LOCKS[lock]), locked(ROOT / lock)
    for name, requirement in contract.items():
        assert name in entries, f"{lock}: {requirement} is not locked"
        version = entries[name]["version"]
        assert requirement.specifier.contains(Version(version), prereleases=True), (
            f"{lock}: {name}=={version} is outside {LOCKS[lock]}'s {requirement.specifier}")
    source = ROOT / LOCKS[lock]
    files = {f"-r {source.name}"} | {line.strip() for line in source.read_text().splitlines() if line.startswith("-r ")}
    top_level = {name for name, entry in entries.items() if files & set(entry["via"])}
    assert top_level == set(contract), (top_level ^ set(contract))


def test_the_development_set_is_the_runtime_set_plus_the_tools():
    """requirements-dev.txt includes requirements.txt and adds only tools: nothing `pulumi up` needs is only there."""
    runtime, development = ranges(ROOT / "requirements.txt"), ranges(ROOT / "requirements-dev.txt", include=False)
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert not set(runtime) & set(development), set(runtime) & set(development)
    assert {"pytest", "ruff", "pulumi-policy"} <= set(development)
    assert str(development["ruff"].specifier).startswith("=="), "ruff pinned exactly: a new release adds findings"


def test_the_locks_agree_on_what_they_share():
    """The policy pack and the tests run the SDK the program's lock holds (one pulumi, one pulumi-policy, one
    protobuf...): every package two locks share is at one version."""
    locks = {lock: locked(ROOT / lock) for lock in VENV_LOCKS}
    for first in locks:
        for second in locks:
            differ = {name: (locks[first][name]["version"], locks[second][name]["version"])
                      for name in set(locks[first]) & set(locks[second])
                      if locks[first][name]["version"] != locks[second][name]["version"]}
            assert not differ, (first, second, differ)
    assert set(locks["requirements.lock"]) <= set(locks["requirements-dev.lock"])
    assert {"pulumi", "pulumi-policy"} <= set(locks["policy/requirements.lock"])


def test_the_tests_run_the_locked_set():
    """What CI tests is what deploys: every top-level requirement is installed at its locked version (reinstall with
    the README's set-up command when this fails)."""
    entries = locked(ROOT / "requirements-dev.lock")
    installed = {}
    for name in ranges(ROOT / "requirements-dev.txt"):
        try:
            installed[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed[name] = "(not installed)"
    assert {name: entries[name]["version"] for name in installed} == installed


def documented_plugins() -> dict[str, tuple[str, str]]:
    """docs/dependencies.md's table: SDK -> (locked version, 'resource <name> <version>' or 'none')."""
    text = (ROOT / "docs" / "dependencies.md").read_text(encoding="utf-8")
    section = text.split("## The provider plugins a locked set implies", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (pulumi-[\w-]+) (\S+) \| (resource [\w-]+ \S+|none)[^|]*\|$", section, re.M)
    return {canonicalize_name(sdk): (version, plugin) for sdk, version, plugin in rows}


def test_the_plugin_table_matches_the_lock_and_the_installed_sdks():
    """The plugin each locked SDK makes the engine install: the `name` and `version` of its pulumi-plugin.json, none
    when `resource` is false (pulumi/pulumi v3.230.0 sdk/python/cmd/pulumi-language-python/main.go,
    packageDependencyFromPluginJSON)."""
    table, entries = documented_plugins(), locked(ROOT / "requirements-dev.lock")
    sdks = {name for name in ranges(ROOT / "requirements-dev.txt") if name.startswith("pulumi-")}
    assert set(table) == sdks, set(table) ^ sdks
    for sdk, (version, plugin) in table.items():
        assert version == entries[sdk]["version"], (sdk, version, entries[sdk]["version"])
        files = [f for f in metadata.files(sdk) if f.name == "pulumi-plugin.json"]
        assert len(files) == 1, sdk
        declared = json.loads(files[0].read_text())
        expected = f"resource {declared['name']} {declared['version']}" if declared.get("resource") else "none"
        assert plugin == expected, (sdk, plugin, expected)
