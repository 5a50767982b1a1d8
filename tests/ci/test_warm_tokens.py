""".ci/warm_tokens.sh, against the stand-in az (tests/support/fake_az.py): the audiences it warms, no token
printed, one line naming the audience that fails. SIMULATED: Azure."""

from __future__ import annotations

import re
import subprocess
import time

from tests.support import ROOT
from tests.support.real_az import parse_check, reached_the_service
from tests.support.workflows import (
    AZBLOB,
    KEY_VAULT,
)

GRAFANA_AUDIENCE = "ce34e7e5-485f-4d76-964f-b3d2b16d1e4f"
AKS_AUDIENCE = "6dae42f8-4368-4678-94ff-3960e28e3630"
ARM_AUDIENCE = "https://management.core.windows.net/"  # az's own ARM scope (azure/cli/core/util.py)


TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.SIMULATED-ACCESS-TOKEN.c2lnbmF0dXJl"


def token_answer() -> dict:
    """`az account get-access-token` as azure-cli 2.91 answers it (the token included, as az prints it),
    valid for 74.5 more minutes."""
    return {"json": {"accessToken": TOKEN, "expiresOn": "2026-12-01 10:14:07.000000",
                     "expires_on": int(time.time()) + 4470,
                     "subscription": "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73",
                     "tenant": "72f988bf-86f1-41af-91ab-2d7cd011db47",
                     "tokenType": "Bearer"}}


def run_warm(tmp_path, rules: list, **variables):
    from tests.support.scenarios import calls_in, fake_az_env

    env = {**fake_az_env(tmp_path, rules), **variables}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "warm_tokens.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    return done, [call["argv"] for call in calls_in(tmp_path)]


def resources(calls: list[list[str]]) -> list[str]:
    return [argv[argv.index("--resource") + 1] for argv in calls]


def any_token() -> list:
    return [{"match": ["account", "get-access-token"], "responses": [token_answer()]}]


def test_warm_tokens_requests_exactly_the_three_audiences_and_prints_no_token(tmp_path):
    done, calls = run_warm(tmp_path, any_token())
    assert done.returncode == 0, done.stderr
    assert sorted(resources(calls)) == sorted([GRAFANA_AUDIENCE, AKS_AUDIENCE, ARM_AUDIENCE])
    for argv in calls:
        assert argv == ["account", "get-access-token", "--resource", argv[3], "--query", "expires_on", "--output",
                        "tsv"]
    assert TOKEN not in done.stdout + done.stderr and "SIMULATED-ACCESS-TOKEN" not in done.stdout + done.stderr
    assert done.stdout == ""
    assert len(re.findall(r"cached, valid for 7[34] more minutes", done.stderr)) == 3, done.stderr


def test_warm_tokens_adds_storage_and_key_vault_for_self_managed_state(tmp_path):
    done, calls = run_warm(tmp_path, any_token(), PULUMI_BACKEND_URL=AZBLOB, PULUMI_SECRETS_PROVIDER=KEY_VAULT)
    assert done.returncode == 0, done.stderr
    # azidentity's AzureCLICredential passes the scope minus "/.default": no trailing slash for these two
    assert sorted(resources(calls)) == sorted([GRAFANA_AUDIENCE, AKS_AUDIENCE, ARM_AUDIENCE,
                                               "https://storage.azure.com", "https://vault.azure.net"])
    assert TOKEN not in done.stdout + done.stderr


def test_warm_tokens_fails_in_one_line_naming_the_audience(tmp_path):
    expired = {"exit": 1, "stderr": "ERROR: AADSTS700024: Client assertion is not within its valid time range. "
                                    "Current time: 2026-12-01T09:12:30Z, assertion valid from 2026-12-01T08:59:03Z, "
                                    "expiry time of assertion 2026-12-01T09:04:03Z. Trace ID: "
                                    "6c1f0a52-1b0e-4c8a-9a61-1f3e0d2a7700"}
    rules = [{"match": ["account", "get-access-token", AKS_AUDIENCE], "responses": [expired]}, *any_token()]
    done, calls = run_warm(tmp_path, rules)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("warm-tokens: error: no access token for AKS"), done.stderr
    assert AKS_AUDIENCE in errors[0] and "AADSTS700024" in errors[0] and "azure/login" in errors[0]
    assert resources(calls)[-1] == AKS_AUDIENCE, "stops at the first audience that fails"
    assert TOKEN not in done.stdout + done.stderr


def test_warm_token_command_lines_parse_in_the_real_cli(real_az, tmp_path):
    """Each warm-up command line, run through the real azure-cli without a login, gets as far as the login
    check (a misspelt flag would fail earlier). Skips without the real CLI, as tests/steps/test_azcli.py does."""
    _, calls = run_warm(tmp_path / "fake", any_token(), PULUMI_BACKEND_URL=AZBLOB, PULUMI_SECRETS_PROVIDER=KEY_VAULT)
    assert len(calls) == 5
    for argv in calls:
        done = parse_check(real_az, argv, tmp_path)
        assert reached_the_service(argv, done), f"az {' '.join(argv)}\n{done.stderr}"
