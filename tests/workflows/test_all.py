"""What every workflow holds: actions pinned by commit SHA, one Pulumi CLI version, no stored secret but the
Pulumi tokens, locks installed with hashes; and each job that runs pulumi: backend, policy-pack virtualenv,
kubelogin (checksum pinned), token warm-up. SIMULATED: GitHub Actions."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from tests.support import ROOT
from tests.support.workflows import (
    PULUMI_RUNS,
    WORKFLOW_FILES,
    WORKFLOWS,
    index,
    load,
    run_step,
    runs,
    steps,
    uses,
)


@pytest.mark.parametrize("name", WORKFLOW_FILES)
def test_every_action_is_pinned_by_commit_sha(name):
    text = (WORKFLOWS / name).read_text()
    pins = [(ref, comment) for ref, comment in re.findall(r"uses:\s*(\S+)(.*)", text)
            if not ref.startswith("./.github/workflows/")]  # a reusable workflow of this repository, same commit
    assert pins
    for ref, comment in pins:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref
        assert re.search(r"#\s*v\d", comment), f"{ref}: say which version the SHA is"


def test_every_pulumi_step_installs_the_one_cli_version_the_readme_states():
    """The README states one exact Pulumi CLI version, the one docs/offline.md says the offline engine models, and
    every pulumi/actions step pins it with ``pulumi-version``. Without the input the action keeps any ``pulumi`` on
    the runner's PATH: an unset input reads as '', which semver takes as '*' (pulumi/actions v7.0.0 ``src/config.ts``
    ``makeConfig``: ``getInput('pulumi-version') ?? '^3'``; ``src/libs/pulumi-cli.ts`` ``downloadCli``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.findall(r"\*\*Pulumi CLI v?([\w.+-]+)\*\*", readme)
    assert len(stated) == 1 and re.fullmatch(r"\d+\.\d+\.\d+", stated[0]), stated
    version = stated[0]
    assert f"pulumi/pulumi `v{version}`" in (ROOT / "docs" / "offline.md").read_text(encoding="utf-8")
    pinned = []
    for name in WORKFLOW_FILES:
        for job in load(name)["jobs"].values():
            for step in steps(job):
                if step.get("uses", "").startswith("pulumi/actions@"):
                    pinned.append((name, str((step.get("with") or {}).get("pulumi-version"))))
    assert len(pinned) >= 3 and all(value == version for _, value in pinned), pinned


@pytest.mark.parametrize("name", WORKFLOW_FILES)
def test_no_stored_secret_and_least_privilege(name):
    """Azure sign-in is OIDC and the azblob/Key Vault backend rides on it; Pulumi Cloud is reached by OIDC too. So no
    workflow reads a stored secret (a repository or organization secret of the same name would be forwarded to any job
    that reads it), passes one to a called workflow, or requests an organization (admin) Pulumi token."""
    text = (WORKFLOWS / name).read_text()
    assert re.findall(r"secrets\s*[.\[]", text, re.I) == [], "no stored secret"
    assert "access_token:organization" not in text, "no Pulumi organization token"
    document = load(name)
    for job in document["jobs"].values():
        assert "secrets" not in job, "nothing passed on to a called workflow"
    on = document.get("on")
    assert not (isinstance(on, dict) and (on.get("workflow_call") or {}).get("secrets")), "no secret from a caller"
    assert document["permissions"] == {"contents": "read"}
    for job in document["jobs"].values():
        if any(s.get("uses", "").startswith("azure/login@") for s in steps(job)):
            assert job["permissions"]["id-token"] == "write"
            assert not {"client-secret", "creds"} & set(uses(job, "azure/login")["with"])


PULUMI_JOBS = [("pr.yml", "preview"), ("deploy-stacks.yml", "cluster")]


def runs_pulumi(job: dict) -> bool:
    """A job that runs pulumi preview/up/destroy/refresh (through pulumi/actions) or ops.verify."""
    actions = [s for s in steps(job) if s.get("uses", "").startswith("pulumi/actions@")]
    return any(s["with"].get("command") in {"preview", "up", "update", "destroy", "refresh"} for s in actions) or any(
        command in runs(job) for command in PULUMI_RUNS)


def pulumi_step(job: dict) -> dict:
    """The step that runs pulumi: pulumi/actions with a command, else the ops.fleet script (whose pulumi commands
    all pass ``--policy-pack policy``, tests/ops/test_fleet.py)."""
    actions = [s for s in steps(job) if s.get("uses", "").startswith("pulumi/actions@") and "command" in s["with"]]
    return actions[0] if actions else run_step(job, "-m ops.fleet ")


@pytest.mark.parametrize("name,job_name", PULUMI_JOBS)
def test_policy_pack_virtualenv_is_created_before_pulumi(name, job_name):
    """policy/PulumiPolicy.yaml names a virtualenv that the CLI does not create for a local --policy-pack
    path: the job creates exactly that one, from the pack's lock (hashes required), before the pulumi step."""
    job = load(name)["jobs"][job_name]
    pulumi = pulumi_step(job)
    pack = pulumi["with"]["policyPacks"] if "uses" in pulumi else "policy"
    venv = yaml.safe_load((ROOT / pack / "PulumiPolicy.yaml").read_text())["runtime"]["options"]["virtualenv"]
    assert (ROOT / pack / "requirements.lock").is_file()
    step = run_step(job, f"python3 -m venv {pack}/{venv}")
    assert step["run"] == (f"python3 -m venv {pack}/{venv} && "
                           f"{pack}/{venv}/bin/pip install --require-hashes -r {pack}/requirements.lock")
    assert index(job, step) < index(job, pulumi)


#: The variable naming each workflow's Pulumi token scope (docs/platform.md, "Pulumi Cloud tokens").
TOKEN_SCOPES = {"pr.yml": "PULUMI_PREVIEW_SCOPE", "deploy-stacks.yml": "PULUMI_PRODUCTION_SCOPE",
                "drift.yml": "PULUMI_DRIFT_SCOPE"}


@pytest.mark.parametrize("name,job_name", PULUMI_JOBS)
def test_backend_is_chosen_before_anything_else_and_handed_to_pulumi(name, job_name):
    job = load(name)["jobs"][job_name]
    backend = run_step(job, ".ci/pulumi_backend.sh")
    assert backend["id"] == "backend" and backend["run"] == "bash .ci/pulumi_backend.sh"
    for variable in ("PULUMI_ORGANIZATION", "PULUMI_BACKEND_URL", "PULUMI_SECRETS_PROVIDER", "AZURE_STORAGE_ACCOUNT"):
        assert backend["env"][variable] == "${{ vars.%s }}" % variable
    cloud = uses(job, "pulumi/auth-actions")
    assert cloud["id"] == "pulumi-cloud" and cloud["if"] == "steps.backend.outputs.kind == 'cloud-oidc'"
    assert cloud["with"]["organization"] == "${{ vars.PULUMI_ORGANIZATION }}"
    # A team token (or a personal one, editions without teams) of the job's own scope; never the organization's
    # (admin), and never a stored token: the backend step refuses a missing scope in one line.
    variable = TOKEN_SCOPES[name]
    assert cloud["with"]["scope"] == "${{ vars.%s }}" % variable
    assert cloud["with"]["requested-token-type"] == (
        "${{ startsWith(vars.%s, 'user:') && 'urn:pulumi:token-type:access_token:personal' || "
        "'urn:pulumi:token-type:access_token:team' }}" % variable)
    assert backend["env"]["PULUMI_TOKEN_SCOPE"] == "${{ vars.%s }}" % variable
    assert backend["env"]["PULUMI_TOKEN_SCOPE_VARIABLE"] == variable
    assert int(cloud["with"]["token-expiration"]) >= job["timeout-minutes"] * 60, "the Pulumi token outlives the job"
    pulumi = pulumi_step(job)
    if "uses" in pulumi:  # the action logs in itself; a script's pulumi reads PULUMI_BACKEND_URL (the backend step)
        assert pulumi["with"]["cloud-url"] == "${{ steps.backend.outputs.cloud-url }}"
        assert pulumi["with"]["secrets-provider"] == "${{ steps.backend.outputs.secrets-provider }}"
    assert pulumi["env"]["PULUMI_ACCESS_TOKEN"] == "${{ steps.pulumi-cloud.outputs.pulumi-access-token }}"
    assert job["permissions"]["id-token"] == "write"  # Pulumi's OIDC exchange as well as Azure's
    setup, login = uses(job, "actions/setup-python"), uses(job, "azure/login")
    assert index(job, backend) < index(job, setup) < index(job, login) < index(job, cloud) < index(job, pulumi)
    # pulumi/auth-actions exports the token to every later step: after it, nothing installs or downloads code.
    for step in steps(job)[index(job, cloud) + 1:]:
        assert not re.search(r"pip install|curl |npm |apt-get", step.get("run", "")), step
        assert not step.get("uses", "").startswith(("actions/setup-", "azure/")), step


@pytest.mark.parametrize("name", ["pr.yml", "deploy-stacks.yml", "drift.yml"])
def test_every_job_running_pulumi_or_verify_gets_kubelogin_and_warm_tokens_after_login(name):
    checked = 0
    for job in load(name)["jobs"].values():
        if not runs_pulumi(job):
            assert not any("use-kubelogin" in s.get("uses", "") for s in steps(job))
            continue
        checked += 1
        login, kubelogin = uses(job, "azure/login"), run_step(job, "kubelogin-linux-amd64.zip")
        warm = run_step(job, ".ci/warm_tokens.sh")
        assert warm["run"] == "bash .ci/warm_tokens.sh"
        users = [i for i, s in enumerate(steps(job))
                 if s.get("uses", "").startswith("pulumi/actions@") or any(c in s.get("run", "") for c in PULUMI_RUNS)]
        assert index(job, login) < index(job, kubelogin) < min(users)
        assert index(job, login) < index(job, warm) < min(users)
        # nothing slow between the login and the warm-up: the federated assertion lives for minutes
        between = steps(job)[index(job, login) + 1:index(job, warm)]
        assert between == [kubelogin], [s.get("name") or s.get("uses") for s in between]
    assert checked == (2 if name == "deploy-stacks.yml" else 1)


KUBELOGIN_URL = "https://github.com/Azure/kubelogin/releases/download/$KUBELOGIN_VERSION/kubelogin-linux-amd64.zip"


def kubelogin_steps() -> list[dict]:
    return [s for name in ("pr.yml", "deploy-stacks.yml", "drift.yml") for job in load(name)["jobs"].values()
            for s in steps(job) if s.get("name") == "Install kubelogin"]


def test_kubelogin_checksum_is_pinned_in_the_workflow():
    """azure/use-kubelogin takes no expected checksum and reads the .sha256 of the same release as the zip
    (Azure/use-kubelogin action.yml, src/release.ts): the workflows pin the zip's sha256 themselves."""
    found = kubelogin_steps()
    assert len(found) == 4
    for step in found:
        assert "uses" not in step
        assert re.fullmatch(r"v\d+\.\d+\.\d+", step["env"]["KUBELOGIN_VERSION"]), "pin the kubelogin release"
        assert re.fullmatch(r"[0-9a-f]{64}", step["env"]["KUBELOGIN_SHA256"]), "pin the zip's sha256"
        assert KUBELOGIN_URL in step["run"] and ".sha256" not in step["run"]
        assert 'echo "$KUBELOGIN_SHA256  $RUNNER_TEMP/kubelogin.zip" | sha256sum --check --strict -' in step["run"]
        lines = step["run"].splitlines()
        check = next(i for i, line in enumerate(lines) if "sha256sum --check" in line)
        assert all("kubelogin.zip" not in line for line in lines[:check] if "unzip" in line or "install" in line)
    assert len({(s["env"]["KUBELOGIN_VERSION"],
                 s["env"]["KUBELOGIN_SHA256"]) for s in found}) == 1, "one pin everywhere"
    assert ("v0.2.19", "ebaeff02aa899c5cae6a2b954b64fc02738185319df2570f7dc053451efa4b2f") == (
        found[0]["env"]["KUBELOGIN_VERSION"], found[0]["env"]["KUBELOGIN_SHA256"])


def test_kubelogin_step_refuses_a_zip_that_does_not_match(tmp_path):
    """The step's script, run with curl answering a local zip: installed when its sha256 is the pinned one,
    refused (nothing installed) otherwise."""
    import hashlib
    import zipfile

    step = kubelogin_steps()[0]
    archive = tmp_path / "asset.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("bin/linux_amd64/kubelogin", "#!/bin/sh\necho kubelogin\n")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "curl").write_text(f'#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\ncp {archive} "$2"\n')
    (fake / "curl").chmod(0o755)

    def run(sha: str, name: str):
        temp = tmp_path / name
        temp.mkdir()
        env = {"PATH": f"{fake}:/usr/bin:/bin", "RUNNER_TEMP": str(temp), "GITHUB_PATH": str(temp / "path"),
               "KUBELOGIN_VERSION": step["env"]["KUBELOGIN_VERSION"], "KUBELOGIN_SHA256": sha}
        result = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], env=env, capture_output=True, text=True)
        return result, temp

    good, temp = run(hashlib.sha256(archive.read_bytes()).hexdigest(), "good")
    assert good.returncode == 0, good.stderr
    assert (temp / "bin" / "kubelogin").is_file() and (temp / "path").read_text().strip() == str(temp / "bin")
    bad, temp = run(step["env"]["KUBELOGIN_SHA256"], "bad")
    assert bad.returncode != 0 and not (temp / "bin" / "kubelogin").exists()


@pytest.mark.parametrize("name", WORKFLOW_FILES)
def test_every_python_environment_is_installed_from_a_lock_with_hashes(name):
    """Every `pip install` in a workflow installs a lock with --require-hashes: never the ranges of a requirements.txt
    (what CI tested is what deploys), except the azure-cli parser check's own venv."""
    for job in load(name)["jobs"].values():
        for line in runs(job).splitlines():
            if "pip install" not in line or ".azcli/bin/pip" in line:
                continue
            assert re.search(r"pip install --require-hashes -r (policy/)?requirements(-dev)?\.lock\b", line), line
            assert "requirements.txt" not in line, line


def test_the_docs_name_exactly_the_token_scopes_the_workflows_use():
    """The Pulumi scope variables of docs/platform.md and docs/security.md are the workflows' (TOKEN_SCOPES)."""
    for doc in ("platform.md", "security.md"):
        named = set(re.findall(r"PULUMI_[A-Z]+_SCOPE", (ROOT / "docs" / doc).read_text(encoding="utf-8")))
        assert named == set(TOKEN_SCOPES.values()), (doc, named)
