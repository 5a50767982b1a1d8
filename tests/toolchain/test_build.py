"""toolchain/build's Go settings: no cgo, no DWARF, and the compiler's garbage collection held back to a share of the
free memory (the cgroup's limit counts) unless the caller set its own. A ``go`` on ``PATH`` that records its environment
and stops the build at its first call shows what the script exports; ``go version -m`` shows what the built tools were
built with."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT, real_engine

FAKE_GO = """#!/bin/sh
env | grep -E '^(GOGC|GOMEMLIMIT|CGO_ENABLED|GOFLAGS)=' > "$RECORD"
exit 3
"""


def exported(tmp_path, **env: str) -> dict[str, str]:
    """What toolchain/build exports to its first ``go`` call, ``env`` added to a caller's environment without any Go
    memory setting."""
    (tmp_path / "bin").mkdir()
    go = tmp_path / "bin" / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    record = tmp_path / "record"
    base = {k: v for k, v in os.environ.items() if k not in ("GOGC", "GOMEMLIMIT", "GOFLAGS")}
    done = subprocess.run([str(ROOT / "toolchain" / "build"), str(tmp_path / "out")], capture_output=True, text=True,
                          env={**base, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "RECORD": str(record),
                               **env}, timeout=60)
    assert done.returncode != 0 and record.exists(), done.stderr
    return dict(line.split("=", 1) for line in record.read_text().splitlines())


def free_mib() -> int:
    """MemAvailable, or the cgroup's memory limit if lower (as the script reads them)."""
    free = 0
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            free = int(line.split()[1]) // 1024
    for limit_file in (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")):
        limit = limit_file.read_text().strip() if limit_file.exists() else ""
        if limit.isdigit():
            free = min(free, int(limit) // 1048576)
    return free


def test_the_compiler_collects_garbage_only_near_its_share_of_the_free_memory(tmp_path):
    """The share is per process and counts the ``go`` command beside its ``-p`` compiles, each inheriting the limit
    (windmill-labs/windmill#10666: a per-process cap alone bounds nothing), and the cgroup's limit where lower than
    MemAvailable; a small share keeps Go's defaults (DataDog/datadog-agent#51213: 3-4 GiB compiles on a 4 GiB host)."""
    env = exported(tmp_path)
    assert env["CGO_ENABLED"] == "0"
    assert env["GOFLAGS"].split() == ["-buildvcs=false", "-gcflags=all=-dwarf=false"]
    share = free_mib() // (2 * (len(os.sched_getaffinity(0)) + 1))
    if share < 1024:  # a small share: Go's own defaults, or (MemAvailable moves between the reads) the floor's share
        near_floor = share >= 900 and env.get("GOGC") == "off" and env.get("GOMEMLIMIT", "").startswith("10")
        assert near_floor or ("GOGC" not in env and "GOMEMLIMIT" not in env), (share, env)
        return
    assert env["GOGC"] == "off"
    limit = int(env["GOMEMLIMIT"].removesuffix("MiB"))
    assert 1024 <= limit <= 3072
    assert abs(limit - min(share, 3072)) <= 256, (limit, share)  # MemAvailable moves between the two reads


@pytest.mark.parametrize("setting", [{"GOGC": "200"}, {"GOMEMLIMIT": "1GiB"}])
def test_a_go_memory_setting_of_the_callers_is_kept(tmp_path, setting):
    env = exported(tmp_path, **setting)
    assert {k: env.get(k) for k in ("GOGC", "GOMEMLIMIT")} == {"GOGC": setting.get("GOGC"),
                                                                "GOMEMLIMIT": setting.get("GOMEMLIMIT")}


@pytest.mark.engine
def test_the_tools_are_built_without_cgo_or_dwarf():
    engine_tools = real_engine.tools()
    for name in ("pulumi", "pulumi-resource-kubernetes", "kube-apiserver", "kwok"):
        info = subprocess.run(["go", "version", "-m", str(engine_tools.bin / name)], capture_output=True, text=True,
                              check=True).stdout
        assert "build\tCGO_ENABLED=0" in info, name
        assert "build\t-gcflags=all=-dwarf=false" in info, name
