"""Every az command line the step scripts emit, checked against the real azure-cli parser.

The scenarios (tests/support/scenarios.py) run under the stand-in az and log each command line; here each
distinct line runs through the real Azure CLI with an empty config directory and no login. A well-formed
line gets as far as "Please run 'az login'"; a misspelt subcommand, flag or enum value fails earlier with a
parse error. So a typo fails here, not on a user's subscription. No Azure call is made.

The real CLI: AZURE_CLI_BIN, else `az` on PATH. Without one the test skips (naming what is missing),
unless REQUIRE_AZURE_CLI=1 (CI), where it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.support.scenarios import ROOT, calls_in

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


@pytest.fixture(scope="module")
def emitted(scenario_results, tmp_path_factory) -> list[list[str]]:
    """Distinct az command lines from all scenarios and from ops.verify, one per shape (subcommand words,
    method, flag names)."""
    from tests.test_verify import rules, verify

    _, verify_calls = verify(tmp_path_factory.mktemp("verify"), rules())
    hotspots_dir = tmp_path_factory.mktemp("hotspots")
    from tests import test_hotspots

    test_hotspots.test_query_sent_through_az_rest(hotspots_dir)
    verify_calls += calls_in(hotspots_dir)
    by_shape: dict[tuple, list[str]] = {}
    for calls in [r.calls for r in scenario_results.values()] + [verify_calls]:
        for call in calls:
            argv = call["argv"]
            words = tuple(a for i, a in enumerate(argv) if not a.startswith("-") and (i == 0 or not argv[i - 1].startswith("-")))
            method = (argv[argv.index("--method") + 1],) if "--method" in argv else ()
            shape = words + method + tuple(a for a in argv if a.startswith("--"))
            by_shape.setdefault(shape, argv)
    return list(by_shape.values())


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


def test_every_python_call_shape_is_exercised(emitted):
    """The Python steps call az only through steps/azcli.py: rest with each method and the Grafana
    audience, and the token-less download. Each shape appears among the emitted lines."""
    rest = [a for a in emitted if a[0] == "rest"]
    for method in ("get", "post", "put", "delete"):
        assert any(a[a.index("--method") + 1] == method and "--resource" in a for a in rest), method
    assert any("--body" in a for a in rest)
    assert any("--skip-authorization-header" in a and "--output-file" in a for a in rest)


def test_every_call_site_is_exercised(emitted):
    """Each `az <words>` call site in steps/*.sh (an az the script runs: after `$(`, `! ` or at the start
    of a command, not advice inside a message) appears among the lines the scenarios emitted."""
    sites = set()
    for path in ROOT.glob("steps/*.sh"):  # the Python steps: test_every_python_call_shape_is_exercised
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
        for match in re.finditer(r"(?:\$\(|! |^\s*)az ((?:[a-z][\w-]* )+)(?:--method (\w+))?", code, re.M):
            words = match.group(1).split()
            sites.add(tuple(words + ([match.group(2)] if match.group(2) else [])))
    assert sites, "no az call sites found"
    for site in sites:
        assert any(argv[: len(site)] == list(site) or
                   (site[0] == "rest" and argv[0] == "rest" and site[-1] == argv[argv.index("--method") + 1])
                   for argv in emitted), site


def test_emitted_command_lines_parse_in_the_real_cli(real_az, emitted, tmp_path):
    assert len(emitted) >= 4
    for argv in emitted:
        done = parse_check(real_az, argv, tmp_path)
        assert reached_the_service(argv, done), f"az {' '.join(argv)}\n{done.stderr}"


@pytest.mark.parametrize("mutation", [
    ("--connection-status", "--conection-status"),
    ("Approved", "Bogus"),
    ("private-link-service", "private-link-services"),
    ("--method", "--methd"),
])
def test_the_check_catches_a_typo(real_az, emitted, tmp_path, mutation):
    old, new = mutation
    for argv in [a for a in emitted if old in a]:
        broken = [new if arg == old else arg for arg in argv]
        done = parse_check(real_az, broken, tmp_path)
        assert not reached_the_service(argv, done) and done.returncode != 0, done.stderr


SAMPLE_ID = "/subscriptions/3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73/resourceGroups/rg-sample/providers/Microsoft.Monitor/accounts/amw-sample"


def advice_commands() -> list[str]:
    """The az commands the stack's error messages tell users to run: `az ...` in components/*.py and existing/*.py, and
    (az ...) in the scripts' messages. Placeholders (<...>, {...}, ${...}) get sample values."""
    found = []
    for path in sorted([*ROOT.glob("components/*.py"), *ROOT.glob("existing/*.py")]):
        found += re.findall(r"(?<!`)`(az [^`]+)`(?!`)", path.read_text())  # messages, not ``docstrings``
    for path in sorted(ROOT.glob("steps/*.sh")):
        for line in path.read_text().splitlines():
            if "die " in line or "log " in line:
                found += re.findall(r"\((az [^)]+)\)", line)
    commands = []
    for text in found:
        # A command split over two literals of an implicit concatenation: `"... -g {rg} "` then `f"-n {name} ..."`.
        text = re.sub(r'"\s*\n\s*[rRfFbB]{0,2}"', "", text)
        text = re.sub(r"<[^>]+>|\$\{[^}]+\}|\{[^}]*\bid\}", SAMPLE_ID, text)
        text = re.sub(r"\{[^}]+\}", "sample", text.replace('" "', " ").replace('"', ""))
        commands.append(" ".join(text.split()))
    return commands


def test_advice_in_error_messages_is_valid_az(real_az, tmp_path):
    commands = advice_commands()
    assert len(commands) >= 4, commands
    for command in commands:
        argv = command.split()[1:]
        done = parse_check(real_az, argv, tmp_path)
        assert reached_the_service(argv, done), f"{command}\n{done.stderr}"


def docs_commands() -> list[str]:
    """The az command lines docs/teardown.md tells users to run (lines of its code blocks), placeholders filled as in
    :func:`advice_commands`."""
    text = (ROOT / "docs" / "teardown.md").read_text()
    return [" ".join(re.sub(r"<[^>]+>", "sample", line).split()) for line in
            (l.strip() for l in text.splitlines()) if line.startswith("az ")]


def test_commands_in_the_teardown_docs_are_valid_az(real_az, tmp_path):
    commands = docs_commands()
    assert any(c.startswith("az network private-link-service delete ") for c in commands), commands
    for command in commands:
        argv = command.split()[1:]
        done = parse_check(real_az, argv, tmp_path)
        assert reached_the_service(argv, done), f"{command}\n{done.stderr}"
