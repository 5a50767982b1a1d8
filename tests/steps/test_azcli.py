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

import pytest

from tests.support.flamegraphs import query_through_az_rest
from tests.support.real_az import parse_check, reached_the_service
from tests.support.scenarios import ROOT, calls_in


@pytest.fixture(scope="module")
def emitted(scenario_results, tmp_path_factory) -> list[list[str]]:
    """Distinct az command lines from all scenarios and from ops.verify, one per shape (subcommand words,
    method, flag names)."""
    from tests.support.verify_runs import rules, verify  # runs the dev plan: only when the fixture is used

    _, verify_calls = verify(tmp_path_factory.mktemp("verify"), rules())
    hotspots_dir = tmp_path_factory.mktemp("hotspots")
    query_through_az_rest(hotspots_dir)
    verify_calls += calls_in(hotspots_dir)
    by_shape: dict[tuple, list[str]] = {}
    for calls in [r.calls for r in scenario_results.values()] + [verify_calls]:
        for call in calls:
            argv = call["argv"]
            words = tuple(a for i, a in enumerate(argv)
                          if not a.startswith("-") and (i == 0 or not argv[i - 1].startswith("-")))
            method = (argv[argv.index("--method") + 1],) if "--method" in argv else ()
            shape = words + method + tuple(a for a in argv if a.startswith("--"))
            by_shape.setdefault(shape, argv)
    return list(by_shape.values())


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


SAMPLE_ID = ("/subscriptions/3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73/resourceGroups/rg-sample"
             "/providers/Microsoft.Monitor/accounts/amw-sample")


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
    text = re.sub(r"\\\n\s*", " ", (ROOT / "docs" / "teardown.md").read_text())  # a continued line joined
    return [" ".join(re.sub(r"<[^>]+>", "sample", line).split()) for line in
            (raw.strip() for raw in text.splitlines()) if line.startswith("az ")]


def test_commands_in_the_teardown_docs_are_valid_az(real_az, tmp_path):
    commands = docs_commands()
    assert any(c.startswith("az network private-link-service delete ") for c in commands), commands
    for command in commands:
        argv = command.split()[1:]
        done = parse_check(real_az, argv, tmp_path)
        assert reached_the_service(argv, done), f"{command}\n{done.stderr}"


def test_python_retries_count_from_each_attempt_start(monkeypatch):
    """steps/azcli.py Step.retry keeps the same schedule for what it waits out (a role propagating)."""
    from steps import azcli

    clock = {"now": 0.0}
    starts = []
    monkeypatch.setattr(azcli.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(azcli.time, "sleep", lambda s: clock.__setitem__("now", clock["now"] + s))
    monkeypatch.delenv("POLL_INITIAL_SECONDS", raising=False)
    monkeypatch.delenv("POLL_MAX_SECONDS", raising=False)
    monkeypatch.setenv("RETRY_FORBIDDEN", "true")

    def call():
        starts.append(clock["now"])
        clock["now"] += 1.5  # the call itself
        if len(starts) < 5:
            raise azcli.AzError(["az"], "ERROR: Forbidden({})")
        return "ok"

    assert azcli.Step("t").retry("reading", call, timeout=60) == "ok"
    assert starts == [0.0, 3.0, 9.0, 15.0, 21.0]


def test_the_workspace_check_uses_the_stacks_api_version():
    """steps/azcli.py falls back to its own copy of the Microsoft.Dashboard API version (the scripts import
    nothing from components/); it must be the one the stack passes as API_VERSION."""

    from steps import azcli
    from steps.command import DASHBOARD_API_VERSION
    assert azcli.DASHBOARD_API_VERSION == DASHBOARD_API_VERSION


def test_what_az_runs_never_sees_the_pulumi_login(monkeypatch, tmp_path):
    """pulumi/pulumi#23589: the Pulumi Cloud login every plugin gets from CLI 3.247.0 on (and a stack's passphrase)
    does not reach ``az``, nor what it runs, from a Python step or the program."""
    from steps import azcli

    fake = tmp_path / "az"
    fake.write_text("#!/bin/sh\nenv\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    for name in azcli.DEPLOY_CREDENTIALS:
        monkeypatch.setenv(name, "pul-0123456789abcdef")
    monkeypatch.setenv("GRAFANA_ID", "kept")
    names = {line.split("=", 1)[0] for line in azcli.az("account", "show").splitlines()}
    assert names & set(azcli.DEPLOY_CREDENTIALS) == set()
    assert "GRAFANA_ID" in names
