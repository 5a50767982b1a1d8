""".ci/pulumi_backend.sh, run here with each combination of variables: Pulumi Cloud by OIDC (a team or personal
scope, no stored token), or azblob with Key Vault; a misconfiguration is one line naming what to set."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support import ROOT
from tests.support.workflows import (
    AZBLOB,
    KEY_VAULT,
)


def run_backend(tmp_path, stack_file: str | None = None, **variables):
    """Run the backend script from ``tmp_path`` (the checkout) with only ``variables`` set; returns the
    process, the GITHUB_OUTPUT pairs and the GITHUB_ENV pairs it wrote."""
    outputs, environment = tmp_path / "github_output", tmp_path / "github_env"
    if stack_file is not None:
        (tmp_path / "Pulumi.dev.yaml").write_text(stack_file)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8", "STACK": "dev",
           "GITHUB_OUTPUT": str(outputs), "GITHUB_ENV": str(environment), **variables}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "pulumi_backend.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)

    def pairs(path):
        return dict(line.split("=", 1) for line in path.read_text().splitlines()) if path.exists() else {}

    return done, pairs(outputs), pairs(environment)


def test_backend_pulumi_cloud_by_oidc(tmp_path):
    done, outputs, environment = run_backend(tmp_path, PULUMI_ORGANIZATION="acme", PULUMI_TOKEN_SCOPE="team:deployers")
    assert done.returncode == 0, done.stderr
    assert outputs == {"kind": "cloud-oidc", "cloud-url": "", "secrets-provider": ""}
    assert environment == {}


@pytest.mark.parametrize("scope", ["team:deployers", "user:ci-bot"])
def test_backend_pulumi_cloud_takes_a_team_or_personal_scope(tmp_path, scope):
    done, outputs, _ = run_backend(tmp_path, PULUMI_ORGANIZATION="acme", PULUMI_TOKEN_SCOPE=scope)
    assert done.returncode == 0 and outputs["kind"] == "cloud-oidc", done.stderr


def test_backend_never_takes_a_stored_pulumi_token(tmp_path):
    """A stored token (the old PULUMI_ACCESS_TOKEN secret) is no backend: Pulumi Cloud is reached only by OIDC."""
    done, outputs, _ = run_backend(tmp_path, HAS_PULUMI_ACCESS_TOKEN="true", PULUMI_ACCESS_TOKEN="pul-0123")
    assert done.returncode == 1 and outputs == {}
    assert "PULUMI_ORGANIZATION" in done.stderr and "PULUMI_ACCESS_TOKEN" not in done.stderr


def test_backend_azblob_with_key_vault(tmp_path):
    done, outputs, environment = run_backend(
        tmp_path, f"secretsprovider: {KEY_VAULT}\nencryptedkey: c29tZS13cmFwcGVkLWtleQ==\nconfig: {{}}\n",
        PULUMI_BACKEND_URL=AZBLOB, PULUMI_SECRETS_PROVIDER=KEY_VAULT)
    assert done.returncode == 0, done.stderr
    assert outputs == {"kind": "azblob", "cloud-url": AZBLOB, "secrets-provider": KEY_VAULT}
    assert environment == {"PULUMI_BACKEND_URL": AZBLOB, "PULUMI_SECRETS_PROVIDER": KEY_VAULT}


def test_backend_azblob_with_the_account_in_a_variable(tmp_path):
    done, outputs, environment = run_backend(
        tmp_path, f"secretsprovider: '{KEY_VAULT}'\n", PULUMI_BACKEND_URL="azblob://pulumi-state",
        PULUMI_SECRETS_PROVIDER=KEY_VAULT, AZURE_STORAGE_ACCOUNT="stplatformstate")
    assert done.returncode == 0, done.stderr
    assert outputs["kind"] == "azblob" and environment["AZURE_STORAGE_ACCOUNT"] == "stplatformstate"


@pytest.mark.parametrize("stack_file,variables,names", [
    pytest.param(None, {}, ["PULUMI_ORGANIZATION", "PULUMI_BACKEND_URL", "PULUMI_SECRETS_PROVIDER"],
                 id="nothing-configured"),
    pytest.param(None, {"PULUMI_SECRETS_PROVIDER": KEY_VAULT}, ["PULUMI_ORGANIZATION"], id="secrets-provider-alone"),
    pytest.param(None, {"PULUMI_ORGANIZATION": "acme", "PULUMI_TOKEN_SCOPE_VARIABLE": "PULUMI_PRODUCTION_SCOPE"},
                 ["PULUMI_PRODUCTION_SCOPE", "team:<team>", "user:<login>", "organization token"],
                 id="cloud-without-scope"),
    pytest.param(None, {"PULUMI_ORGANIZATION": "acme", "PULUMI_TOKEN_SCOPE": "acme"},
                 ["PULUMI_TOKEN_SCOPE", "'acme'"], id="cloud-with-an-organization-scope"),
    pytest.param(f"secretsprovider: {KEY_VAULT}\n", {"PULUMI_BACKEND_URL": AZBLOB},
                 ["PULUMI_SECRETS_PROVIDER", "azurekeyvault://"], id="azblob-without-secrets-provider"),
    pytest.param("config: {}\n", {"PULUMI_BACKEND_URL": AZBLOB, "PULUMI_SECRETS_PROVIDER": "passphrase"},
                 ["PULUMI_SECRETS_PROVIDER", "azurekeyvault://"], id="azblob-with-passphrase"),
    pytest.param(None, {"PULUMI_BACKEND_URL": "azblob://pulumi-state", "PULUMI_SECRETS_PROVIDER": KEY_VAULT},
                 ["storage_account", "AZURE_STORAGE_ACCOUNT"], id="azblob-without-storage-account"),
    pytest.param(None, {"PULUMI_BACKEND_URL": AZBLOB, "PULUMI_SECRETS_PROVIDER": KEY_VAULT},
                 ["Pulumi.dev.yaml", "pulumi stack init dev --secrets-provider"], id="no-stack-file"),
    pytest.param("config: {}\n", {"PULUMI_BACKEND_URL": AZBLOB, "PULUMI_SECRETS_PROVIDER": KEY_VAULT},
                 ["Pulumi.dev.yaml names no secretsprovider", "pulumi stack change-secrets-provider"],
                 id="stack-file-without-secrets-provider"),
    pytest.param("secretsprovider: azurekeyvault://kv-other.vault.azure.net/keys/pulumi\n",
                 {"PULUMI_BACKEND_URL": AZBLOB, "PULUMI_SECRETS_PROVIDER": KEY_VAULT},
                 ["PULUMI_SECRETS_PROVIDER", "kv-other"], id="stack-file-names-another-key"),
    pytest.param(None, {"PULUMI_BACKEND_URL": "s3://pulumi-state", "PULUMI_ORGANIZATION": "acme"},
                 ["PULUMI_BACKEND_URL", "'s3://'"], id="unsupported-scheme"),
])
def test_backend_misconfiguration_is_one_line_naming_what_to_set(tmp_path, stack_file, variables, names):
    done, outputs, environment = run_backend(tmp_path, stack_file, **variables)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pulumi-backend: error: "), done.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert outputs == {} and environment == {}, "nothing handed on after an error"
