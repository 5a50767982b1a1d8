"""What every workflow holds: actions pinned by commit SHA, one Pulumi CLI version, no stored secret but the
Pulumi tokens, locks installed with hashes; and each job that runs pulumi: backend, policy-pack virtualenv,
kubelogin (checksum pinned), token warm-up. SIMULATED: GitHub Actions."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from tests.support import ROOT
from tests.support.workflows import (
    AFTER_SIGN_IN_ACTIONS,
    NO_ACQUISITION,
    PULUMI_RUNS,
    WORKFLOW_FILES,
    WORKFLOWS,
    binaries_problems,
    code_after_sign_in,
    index,
    load,
    run_step,
    runs_pulumi,
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


def test_the_one_cli_version_the_readme_states_is_the_one_the_jobs_install():
    """The README states one exact Pulumi CLI version, the one its install command fetches, docs/offline.md says the
    offline engine models, the end-to-end tests build (toolchain/pulumi/go.mod: pkg/v3 and sdk/v3, released together),
    and deploy/binaries.json locks it (ops/binaries.py reads it from the README). No workflow installs the CLI any other
    way: pulumi/actions resolves the version against another repository's default branch and checks no checksum
    (docs/decisions/pinned-binaries.md)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.findall(r"\*\*Pulumi CLI v?([\w.+-]+)\*\*", readme)
    assert len(stated) == 1 and re.fullmatch(r"\d+\.\d+\.\d+", stated[0]), stated
    version = stated[0]
    assert re.findall(r"get\.pulumi\.com \| sh -s -- --version (\d[\w.+-]*)", readme) == [version]
    built = re.findall(r"^\s*github\.com/pulumi/pulumi/(pkg|sdk)/v3 v(\S+)(?: // indirect)?\s*$",
                       (ROOT / "toolchain" / "pulumi" / "go.mod").read_text(), re.M)
    assert sorted(built) == [("pkg", version), ("sdk", version)], built
    assert f"pulumi/pulumi `v{version}`" in (ROOT / "docs" / "offline.md").read_text(encoding="utf-8")
    lock = json.loads((ROOT / "deploy" / "binaries.json").read_text())["binaries"]
    assert [(e["name"], e["version"]) for e in lock if e["kind"] == "cli"] == [("pulumi", version)]
    for name in WORKFLOW_FILES:
        assert "pulumi/actions@" not in (WORKFLOWS / name).read_text(), name


def test_every_job_that_runs_pulumi_installs_the_locked_binaries_before_sign_in_and_fetches_no_plugin():
    """The CLI and the provider plugins come from deploy/binaries.json, each tarball checked against its sha256 before
    it is unpacked or run (ops/binaries.py), in a step after setup-python and before the first sign-in; and the job
    sets PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true, so the engine's own plugin download, which no workflow line
    shows, is refused ("plugin <name> <version> not installed": pulumi/pulumi v3.230.0 pkg/engine/plugins.go,
    sdk/go/common/env/env.go) instead of running after the sign-in. No job that signs in uses pulumi/actions."""
    checked = [(name, job_name) for name, job_name, job in all_jobs() if runs_pulumi(job)]
    assert sorted(checked) == [("deploy-stacks.yml", "cluster"), ("deploy-stacks.yml", "grafana"),
                               ("drift.yml", "check"), ("pr.yml", "preview")]
    found = [finding for name, job_name, job in all_jobs() for finding in binaries_problems(name, job_name, job)]
    assert found == []


def _moved_after_login(job: dict) -> list:
    rest = [s for s in job["steps"] if "-m ops.binaries" not in s.get("run", "")]
    login = next(i for i, s in enumerate(rest) if s.get("uses", "").startswith("azure/login@"))
    return [*rest[:login + 1], run_step(job, "-m ops.binaries"), *rest[login + 1:]]


def _moved_before_python(job: dict) -> list:
    rest = [s for s in job["steps"] if "-m ops.binaries" not in s.get("run", "")]
    return [run_step(job, "-m ops.binaries"), *rest]


#: Ways around the locked binaries, each as a change to a job that runs pulumi: (steps, env) from the job.
AROUND_THE_LOCK = {
    "install after the sign-in": (_moved_after_login, None),
    "install before setup-python": (_moved_before_python, None),
    "no install": (lambda job: [s for s in job["steps"] if "-m ops.binaries" not in s.get("run", "")], None),
    "pulumi/actions before the sign-in": (
        lambda job: [{"uses": "pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d",
                      "with": {"pulumi-version": "3.230.0"}}, *job["steps"]], None),
    "acquisition left on": (None, lambda env: {k: v for k, v in env.items() if k != NO_ACQUISITION}),
    "acquisition set false": (None, lambda env: {**env, NO_ACQUISITION: "false"}),
    "a step turning acquisition on": (
        lambda job: [*job["steps"], {"name": "late", "run": "pulumi up", "env": {NO_ACQUISITION: "false"}}], None),
    "$GITHUB_ENV turning acquisition on": (
        lambda job: [*job["steps"], {"name": "late", "run": f'echo "{NO_ACQUISITION}=0" >> "$GITHUB_ENV"'}], None),
}


@pytest.mark.parametrize("case", sorted(AROUND_THE_LOCK))
def test_the_binaries_check_refuses_every_way_around_the_lock(case):
    """Each change, made to each job that runs pulumi, is refused in a line naming the workflow and the job."""
    change_steps, change_env = AROUND_THE_LOCK[case]
    checked = 0
    for name, job_name, job in all_jobs():
        if not runs_pulumi(job):
            continue
        checked += 1
        mutated = {**job, "steps": change_steps(job) if change_steps else job["steps"],
                   "env": change_env(job.get("env") or {}) if change_env else job.get("env")}
        found = binaries_problems(name, job_name, mutated)
        assert found and all(f.startswith(f"{name} job {job_name}") for f in found), (case, name, job_name, found)
    assert checked == 4


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


def pulumi_step(job: dict) -> dict:
    """The step that runs pulumi: the preview's own `pulumi preview` (it passes ``--policy-pack policy``), else the
    ops.fleet script (whose pulumi commands all pass it too, tests/ops/test_fleet.py)."""
    previews = [s for s in steps(job) if "pulumi preview --stack" in s.get("run", "")]
    if previews:
        assert len(previews) == 1 and "--policy-pack policy" in previews[0]["run"], previews
        return previews[0]
    return run_step(job, "-m ops.fleet ")


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
    # pulumi/auth-actions exports the token to every later step: what may run after it, test_nothing_but_the_allow_list.


@pytest.mark.parametrize("name", ["pr.yml", "deploy-stacks.yml", "drift.yml"])
def test_every_job_running_pulumi_or_verify_gets_kubelogin_before_login_and_warm_tokens_right_after(name):
    """kubelogin (its zip's sha256 checked) and the Pulumi CLI are installed before the Azure sign-in, nothing is
    downloaded after it (test_nothing_but_the_allow_list_runs_after_sign_in), and the token warm-up is the very
    next step: the federated assertion az signed in with lives for minutes and cannot be renewed."""
    checked = 0
    for job in load(name)["jobs"].values():
        if not runs_pulumi(job):
            assert not any("use-kubelogin" in s.get("uses", "") for s in steps(job))
            continue
        checked += 1
        login, kubelogin = uses(job, "azure/login"), run_step(job, "kubelogin-linux-amd64.zip")
        cli, warm = run_step(job, "-m ops.binaries --install"), run_step(job, ".ci/warm_tokens.sh")
        assert warm["run"] == "bash .ci/warm_tokens.sh"
        users = [i for i, s in enumerate(steps(job)) if any(c in s.get("run", "") for c in PULUMI_RUNS)]
        assert max(index(job, kubelogin), index(job, cli)) < index(job, login) < index(job, warm) < min(users)
        assert index(job, warm) == index(job, login) + 1, "the warm-up right after the login"
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


LOCK_INSTALL = re.compile(r"pip install (--quiet )?(--disable-pip-version-check )?--require-hashes "
                          r"-r (?P<lock>(policy/)?requirements(-dev)?\.lock|\.ci/azure-cli\.lock)(\s|$)")


@pytest.mark.parametrize("name", [*WORKFLOW_FILES, "../../.ci/run"])
def test_every_python_environment_is_installed_from_a_lock_with_hashes(name):
    """Every `pip install` in a workflow or in .ci/run installs a lock with --require-hashes, the Azure CLI's venv
    too (.ci/azure-cli.lock): never a range (what CI tested is what deploys, and nothing unhashed sits beside a token
    that can write). Each lock it names pins every package with == and hashes (pip then refuses anything else)."""
    text = (WORKFLOWS / name).read_text()
    lines = [line for line in text.splitlines() if "pip install" in line and not line.lstrip().startswith("#")]
    for line in lines:
        match = LOCK_INSTALL.search(line)
        assert match, line
        lock = ROOT / match["lock"]
        entries = [entry for entry in lock.read_text().split("\n") if entry and not entry.startswith((" ", "#"))]
        assert entries and all(re.fullmatch(r"[A-Za-z0-9._-]+==\S+ \\", entry) for entry in entries), lock
    if name == "pr.yml" or name.endswith(".ci/run"):
        assert any(".azcli/bin/pip install" in line and ".ci/azure-cli.lock" in line for line in lines), name


def test_the_docs_name_exactly_the_token_scopes_the_workflows_use():
    """The Pulumi scope variables of docs/platform.md and docs/security.md are the workflows' (TOKEN_SCOPES)."""
    for doc in ("platform.md", "security.md"):
        named = set(re.findall(r"PULUMI_[A-Z]+_SCOPE", (ROOT / "docs" / doc).read_text(encoding="utf-8")))
        assert named == set(TOKEN_SCOPES.values()), (doc, named)


def all_jobs() -> list[tuple[str, str, dict]]:
    return [(path.name, job_name, job) for path in sorted(WORKFLOWS.glob("*.y*ml"))
            for job_name, job in load(path.name)["jobs"].items()]


def test_nothing_but_the_allow_list_runs_after_sign_in():
    """From a job's first sign-in (azure/login, pulumi/auth-actions) on, a credential sits beside every step: nothing
    then fetches or installs code. An allow-list (tests/support/workflows.py): the Pulumi sign-in and the artifact
    upload as actions; as commands this repository's scripts and modules, pulumi on the program, az and kubectl
    without what installs code, and shell words that move what is already there. The kubelogin and Pulumi CLI
    installs come before the sign-in."""
    found = [finding for name, job_name, job in all_jobs() for finding in code_after_sign_in(name, job_name, job)]
    assert found == []


#: Ways to fetch or run code that is not the repository's, each as one step added after a job's sign-in.
FETCHES = {
    "wget": ({"run": "wget -q https://example.com/tool"}, "wget"),
    "curl piped to a shell": ({"run": "curl -fsSL https://example.com/install.sh | bash"}, "curl"),
    "gh release download": ({"run": "gh release download v1.0.0 --repo o/tool"}, "gh release download"),
    "go install": ({"run": "go install example.com/tool@latest"}, "go install"),
    "go get": ({"run": "go get example.com/module"}, "go get"),
    "uv": ({"run": "uv tool install tool"}, "uv tool install"),
    "uvx": ({"run": "uvx tool"}, "uvx"),
    "pipx": ({"run": "pipx run tool"}, "pipx"),
    "npx": ({"run": "npx tool"}, "npx"),
    "npm": ({"run": "npm ci"}, "npm ci"),
    "docker pull": ({"run": "docker pull alpine:3"}, "docker pull"),
    "apt-get under sudo": ({"run": "sudo apt-get install -y tool"}, "sudo apt-get"),
    "pip": ({"run": ".venv/bin/pip install tool"}, "pip install"),
    "python -m pip": ({"run": "python3 -m pip install tool"}, "-m pip"),
    "a script from elsewhere": ({"run": "python3 /tmp/tool.py"}, "/tmp/tool.py"),
    "pulumi plugin install": ({"run": "pulumi plugin install resource azure-native v3.29.0"}, "plugin install"),
    "pulumi plugin install --file": ({"run": "pulumi plugin install resource command v1.2.1 --file /tmp/p.tar.gz"},
                                     "plugin install"),
    "ops.binaries": ({"run": 'python3 -m ops.binaries --install "$RUNNER_TEMP/pulumi"'}, "ops.binaries"),
    "pulumi install": ({"run": "pulumi install"}, "pulumi install"),
    "pulumi package add": ({"run": "pulumi package add terraform-provider hashicorp/random"}, "package add"),
    "pulumi new": ({"run": "pulumi new azure-python --yes"}, "pulumi new"),
    "az extension add": ({"run": "az extension add --name aks-preview"}, "extension add"),
    "az upgrade": ({"run": "az upgrade --yes"}, "az upgrade"),
    "az dynamic extension install": ({"run": "az config set extension.dynamic_install_allow_preview=true"},
                                     "dynamic_install"),
    "a command substitution": ({"run": 'token="$(curl -fsSL https://example.com/x)"'}, "curl"),
    "bash -c": ({"run": 'bash -c "wget https://example.com/x"'}, "bash -c"),
    "a line continuation": ({"run": "echo start && \\\n  wget https://example.com/x"}, "wget"),
    "a python run block": ({"shell": "python", "run": "import urllib.request"}, "python run block"),
    "actions/setup-node": ({"uses": "actions/setup-node@49933ea5288caeca8642d1e84afbd3f7d6820020"},
                           "actions/setup-node"),
    "azure/setup-kubectl": ({"uses": "azure/setup-kubectl@776406bce94f63e41d621b960d78ee25c8b76ede"},
                            "azure/setup-kubectl"),
    "pulumi/actions": ({"uses": "pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d",
                        "with": {"pulumi-version": "3.230.0"}}, "pulumi/actions"),
    "a local action": ({"uses": "./.github/actions/tool"}, "./.github/actions/tool"),
    "a container action": ({"uses": "docker://alpine:3"}, "docker://alpine"),
}


@pytest.mark.parametrize("case", sorted(FETCHES))
def test_the_allow_list_refuses_every_way_to_fetch_code_after_sign_in(case):
    """Each form (an installer the old deny-list named or not), added as a step right after the sign-in of each job
    that signs in, is refused in a line naming the workflow, the job, the step and the command."""
    form, command = FETCHES[case]
    step = {"name": f"Added: {case}", **form}
    checked = 0
    for name, job_name, job in all_jobs():
        signs_in = [i for i, s in enumerate(job.get("steps", []))
                    if s.get("uses", "").split("@")[0] in ("azure/login", "pulumi/auth-actions")]
        if not signs_in:
            continue
        checked += 1
        mutated = {**job, "steps": [*job["steps"][:signs_in[0] + 1], step, *job["steps"][signs_in[0] + 1:]]}
        found = [f for f in code_after_sign_in(name, job_name, mutated) if f"step 'Added: {case}'" in f]
        assert found, f"{name} job {job_name}: {case} not caught"
        assert all(f.startswith(f"{name} job {job_name} step 'Added: {case}': ") for f in found), found
        assert any(command in f.split(": ", 1)[1] for f in found), (command, found)
    assert checked == 4  # pr.yml preview, deploy-stacks.yml cluster and grafana, drift.yml check


@pytest.mark.parametrize("run", [
    "bash .ci/warm_tokens.sh",
    'python3 -m ops.fleet cluster --stacks "$STACKS" --grafana "$GRAFANA" --out "$RUNNER_TEMP/fleet"',
    '.venv/bin/python -m ops.verify --stack "$STACK" --drift --json > drift-result/report.json 2> error.txt',
    'pulumi preview --stack "$STACK" --diff --policy-pack policy > preview.txt 2>&1',
    'pulumi stack output --json --stack "$STACK" | jq .grafanaUrl',
    "az account show --output none && kubectl get pods -n gadget",
    'set +e\ncode=$?\necho "CODE=$code" >> "$GITHUB_ENV"\ntest "$code" -le 1\nif [ -f a ]; then cat a; fi',
])
def test_the_allow_list_lets_the_jobs_own_commands_run(run):
    job = {"steps": [{"uses": "azure/login@a457da9ea143d694b1b9c7c869ebb04ebe844ef5"},
                     {"name": "own", "run": run},
                     {"uses": f"{AFTER_SIGN_IN_ACTIONS[1]}@ea165f8d65b6e75b540449e92b4886f43607fa02"}]}
    assert code_after_sign_in("x.yml", "j", job) == []


def test_every_checkout_leaves_no_token_in_the_clone():
    """actions/checkout writes the job's GITHUB_TOKEN into .git/config unless told not to (actions/checkout v4.2.2
    action.yml: persist-credentials, default true), where every later step, the pull request's code among them, can
    read it. No workflow needs git to authenticate after the checkout."""
    checkouts = [(name, job_name, step) for name, job_name, job in all_jobs() for step in steps(job)
                 if step.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) >= 9
    for name, job_name, step in checkouts:
        assert (step.get("with") or {}).get("persist-credentials") is False, (name, job_name)


def granted(document: dict, job: dict) -> dict:
    """A job's GITHUB_TOKEN scopes: its own permissions, else the workflow's; write-all grants every scope."""
    permissions = job.get("permissions", document.get("permissions"))
    if isinstance(permissions, str):
        return {"pull-requests": "write", "contents": "write", "issues": "write"} if permissions == "write-all" else {}
    return permissions or {}


def test_no_job_that_checks_out_code_can_write_to_pull_requests():
    """A job that checks the repository out runs that code (in pr.yml, the pull request's): it never holds
    pull-requests: write. The comments are posted by jobs of their own, which check nothing out and run no command:
    they download what the job that planned handed over and post it."""
    writers = []
    for name, job_name, job in all_jobs():
        document = load(name)
        checks_out = any(s.get("uses", "").startswith("actions/checkout@") for s in steps(job))
        if granted(document, job).get("pull-requests") == "write":
            writers.append((name, job_name))
            assert not checks_out, f"{name} job {job_name} checks code out and can write to pull requests"
            assert not any("run" in s for s in steps(job)), f"{name} job {job_name} runs commands"
            assert {s["uses"].split("@")[0] for s in steps(job)} <= {"actions/download-artifact",
                                                                      "actions/github-script"}, (name, job_name)
            assert granted(document, job) == {"pull-requests": "write"}, (name, job_name)
    assert sorted(writers) == [("pr.yml", "comment"), ("pr.yml", "preview-comment")]
