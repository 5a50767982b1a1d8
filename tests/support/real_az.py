"""The real Azure CLI's parser as a check of az command lines: a well-formed line gets as far as the login check, a
misspelt subcommand, flag or enum value fails earlier. The CLI: AZURE_CLI_BIN, else az on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

LOGIN = "Please run 'az login' to setup account."


@pytest.fixture(scope="module")
def real_az():
    path = os.environ.get("AZURE_CLI_BIN") or shutil.which("az")
    if not path or not os.path.exists(path):
        message = "the real Azure CLI is not installed (set AZURE_CLI_BIN, or put azure-cli's az on PATH)"
        if os.environ.get("REQUIRE_AZURE_CLI") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


#: `az rest --skip-authorization-header` needs no login: it would fetch the URL. Such lines are pointed at a
#: closed loopback port instead, so the check sends nothing off this machine, and must fail connecting.
LOOPBACK = "https://127.0.0.1:9/dashboard.json"


def parse_check(az: str, argv: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "AZURE_CONFIG_DIR": str(tmp_path), "AZURE_CORE_COLLECT_TELEMETRY": "false",
           "AZURE_CORE_NO_COLOR": "true"}
    if "--skip-authorization-header" in argv:
        argv = [LOOPBACK if i and argv[i - 1] == "--url" else
                str(tmp_path / "out.json") if i and argv[i - 1] == "--output-file" else arg
                for i, arg in enumerate(argv)]
    return subprocess.run([az, *argv], env=env, capture_output=True, text=True, timeout=120)


def reached_the_service(argv: list[str], done: subprocess.CompletedProcess) -> bool:
    """Parsed: got as far as the login check, or (no-login lines) as far as connecting to loopback."""
    if "--skip-authorization-header" in argv:
        return "127.0.0.1" in done.stderr and "Connection refused" in done.stderr
    return LOGIN in done.stderr
