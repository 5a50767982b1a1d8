""".ci/azure_relogin.sh with a stand-in curl (GitHub's token service) and az: both tokens are masked before any use,
the request token never reaches a command line, and az is signed in with the fresh ID token. SIMULATED: GitHub's
token service and Azure."""

from __future__ import annotations

import os
import shutil
import subprocess

from tests.support import ROOT

REQUEST_TOKEN = "ghs-SIMULATED-REQUEST-TOKEN"
ID_TOKEN = "eyJhbGciOiJSUzI1NiJ9.SIMULATED-ID-TOKEN.c2ln"

# Each stand-in prints one line to the script's stdout when it runs, so the log's order is the run's order.
CURL = """#!/usr/bin/env bash
printf 'CURL %s\\n' "$*" >> "$CALLS"
printf 'STDIN %s\\n' "$(cat)" >> "$CALLS"
echo "curl ran" >&2
printf '{"count": 1, "value": "%s"}' "$ID_TOKEN_ANSWER"
"""
AZ = """#!/usr/bin/env bash
printf 'AZ %s\\n' "$*" >> "$CALLS"
echo "AZ-RAN $1"
"""


def run_relogin(tmp_path, answer: str = ID_TOKEN):
    ci = tmp_path / ".ci"
    ci.mkdir()
    shutil.copy(ROOT / ".ci" / "azure_relogin.sh", ci / "azure_relogin.sh")
    (ci / "warm_tokens.sh").write_text("echo WARMED\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("curl", CURL), ("az", AZ)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls.log"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls), "ID_TOKEN_ANSWER": answer,
           "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.actions.example/oidc?api-version=2.0",
           "ACTIONS_ID_TOKEN_REQUEST_TOKEN": REQUEST_TOKEN, "ARM_CLIENT_ID": "11111111-2222-3333-4444-555555555555",
           "ARM_TENANT_ID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
           "ARM_SUBSCRIPTION_ID": "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"}
    done = subprocess.run(["bash", str(ci / "azure_relogin.sh")], env=env, capture_output=True, text=True,
                          timeout=30)
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_relogin_masks_both_tokens_before_it_uses_them(tmp_path):
    done, calls = run_relogin(tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == f"::add-mask::{REQUEST_TOKEN}", out
    assert out.index(f"::add-mask::{ID_TOKEN}") < out.index("AZ-RAN login"), out
    assert out[-1] == "WARMED"


def test_the_request_token_is_sent_as_a_header_on_stdin_never_on_a_command_line(tmp_path):
    done, calls = run_relogin(tmp_path)
    assert done.returncode == 0, done.stderr
    curl = [line for line in calls if line.startswith("CURL ")]
    assert len(curl) == 1 and REQUEST_TOKEN not in curl[0] and "-H @-" in curl[0], curl
    assert "audience=api://AzureADTokenExchange" in curl[0]
    assert f"STDIN Authorization: bearer {REQUEST_TOKEN}" in calls


def test_az_signs_in_with_the_fresh_id_token_then_selects_the_subscription(tmp_path):
    done, calls = run_relogin(tmp_path)
    az = [line.split(" ", 1)[1] for line in calls if line.startswith("AZ ")]
    assert az == ["login --service-principal --username 11111111-2222-3333-4444-555555555555 --tenant "
                  f"72f988bf-86f1-41af-91ab-2d7cd011db47 --federated-token {ID_TOKEN} --output none",
                  "account set --subscription 3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"]


def test_no_id_token_is_one_line_and_no_sign_in(tmp_path):
    done, calls = run_relogin(tmp_path, answer="")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "azure-relogin: error: GitHub's token service answered no ID token"
    assert not [line for line in calls if line.startswith("AZ ")]
