"""The GitHub Actions workflows: parsed, their job structure checked, every action pinned by commit SHA; and
the scripts they call (.ci/), run here: the backend choice with each combination of variables, the
token warm-up against the stand-in az (tests/support/fake_az.py). SIMULATED: GitHub Actions and Azure."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from tests.support import ROOT
from tests.support.real_az import parse_check, reached_the_service, real_az  # noqa: F401  (real_az: a fixture)

WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as True
    return document


def steps(job: dict) -> list[dict]:
    """A job's steps; none for a job that calls a reusable workflow (``uses:``)."""
    return job.get("steps", [])


def uses(job: dict, action: str) -> dict:
    """The job's one step using ``action``; for pulumi/actions, the one that runs a command when the job also has an
    install-only one (no command: pulumi/actions v7.0.0 src/main.ts)."""
    found = [s for s in steps(job) if s.get("uses", "").startswith(action + "@")]
    if action == "pulumi/actions" and len(found) > 1:
        found = [s for s in found if "command" in (s.get("with") or {})]
    assert len(found) == 1, (action, [s.get("uses") for s in steps(job)])
    return found[0]


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


WORKFLOW_FILES = ["pr.yml", "deploy.yml", "deploy-stacks.yml", "drift.yml"]
# The run steps that may get the Pulumi token: they run pulumi (or ops.verify, which reads stack outputs).
PULUMI_RUNS = ("-m ops.verify", "pulumi preview --json", "-m ops.fleet endpoints")


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
def test_only_stored_secret_is_the_pulumi_token_and_least_privilege(name):
    """Azure sign-in is OIDC and the azblob/Key Vault backend rides on it, so no Azure secret is stored. The
    one secret allowed is PULUMI_ACCESS_TOKEN, for teams on Pulumi Cloud without its OIDC trust set up (with
    PULUMI_ORGANIZATION the token comes from pulumi/auth-actions instead). Its value goes only into the
    environment of the steps that run pulumi; the backend step sees only whether it is set."""
    text = (WORKFLOWS / name).read_text()
    assert set(re.findall(r"secrets\.(\w+)", text)) <= {"PULUMI_ACCESS_TOKEN", "PULUMI_PREVIEW_ACCESS_TOKEN"}, (
        "no stored secret but the Pulumi tokens (production's, and the preview's read-only one)")
    document = load(name)
    for job in document["jobs"].values():
        for step in steps(job):
            if "secrets." not in yaml.safe_dump(step):
                continue
            if step.get("id") == "backend":
                assert step["env"]["HAS_PULUMI_ACCESS_TOKEN"] in (
                    "${{ secrets.PULUMI_ACCESS_TOKEN != '' }}", "${{ secrets.PULUMI_PREVIEW_ACCESS_TOKEN != '' }}")
            else:
                assert "secrets." not in yaml.safe_dump({k: v for k, v in step["env"].items() if k != "PULUMI_ACCESS_TOKEN"})
                assert "PULUMI_ACCESS_TOKEN" in step["env"] and "secrets." not in yaml.safe_dump(
                    {k: v for k, v in step.items() if k != "env"}), step
                assert any(command in step.get("run", "") for command in PULUMI_RUNS) or step.get(
                    "uses", "").startswith("pulumi/actions@"), step
    assert document["permissions"] == {"contents": "read"}
    for job in document["jobs"].values():
        if any(s.get("uses", "").startswith("azure/login@") for s in steps(job)):
            assert job["permissions"]["id-token"] == "write"
            assert not {"client-secret", "creds"} & set(uses(job, "azure/login")["with"])


def test_pull_request_workflow():
    pr = load("pr.yml")
    assert pr["on"] == {"pull_request": {"branches": ["main"]}}
    offline, preview = pr["jobs"]["offline"], pr["jobs"]["preview"]
    commands = runs(offline)
    assert ".venv/bin/pip install --require-hashes -r requirements-dev.lock" in commands
    assert ".ci/fetch-reference" in commands and ".venv/bin/python -m pytest -q" in commands and "REQUIRE_AZURE_CLI=1" in commands
    assert "-m offline.plan --stack \"$STACK\" --policy" in commands
    diff = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    assert diff["run"] == 'bash .ci/plan_diff.sh "$BASE_SHA" plan-diff'
    assert diff["env"] == {"BASE_SHA": "${{ github.event.pull_request.base.sha }}"}  # not spliced into the script
    assert uses(offline, "actions/checkout")["with"]["fetch-depth"] == 0, "the base commit must be in the clone"
    comment = uses(offline, "actions/github-script")
    assert "plan-diff/comment.md" in comment["with"]["script"] and offline["permissions"]["pull-requests"] == "write"
    assert "id-token" not in offline["permissions"], "the offline job needs no cloud credentials"
    assert preview["needs"] == "offline"
    assert "vars.AZURE_PREVIEW_CLIENT_ID != ''" in preview["if"]
    pulumi = uses(preview, "pulumi/actions")["with"]
    assert pulumi["command"] == "preview" and pulumi["diff"] is True and pulumi["policyPacks"] == "policy"
    assert pulumi["comment-on-pr"] is True
    login = steps(preview).index(uses(preview, "azure/login"))
    assert login < steps(preview).index(uses(preview, "pulumi/actions"))


def test_main_branch_deploy_workflow():
    """On main: one job per Grafana (from the stacks file), each running its stacks through deploy-stacks.yml."""
    deploy = load("deploy.yml")
    assert deploy["on"]["push"] == {"branches": ["main"]}
    rollout = deploy["jobs"]["rollout"]
    assert rollout["uses"] == "./.github/workflows/deploy-stacks.yml"
    assert deploy["concurrency"] == {"group": "deploy-production", "cancel-in-progress": False}
    called = load("deploy-stacks.yml")
    up = called["jobs"]["cluster"]
    pulumi = uses(up, "pulumi/actions")["with"]
    assert pulumi["command"] == "up" and pulumi["policyPacks"] == "policy" and pulumi["stack-name"] == "${{ env.STACK }}"
    assert up["environment"] == "production"
    assert "-m ops.verify --stack" in runs(up)


def test_only_the_grafana_providers_writes_are_serialized_and_everything_else_runs_in_parallel():
    """docs/fleet.md: the setup job groups the stacks file by Grafana; the rollout is a matrix over Grafanas (parallel,
    fail-fast off), each calling deploy-stacks.yml. There, job `cluster` is a matrix over that Grafana's stacks with no
    max-parallel and fail-fast off: each stack previews, classifies (ops/fleet.py classify) and runs `pulumi up`
    at once, excluding the conflicting resources and their dependents only when it has such a change. Job `plan` needs
    it (and runs when some stacks failed), job `grafana` (a matrix over the plan's chunks, one at a time: no
    concurrency group, whose single pending slot would drop stacks) runs the serialized phase for the stacks listed. One run at a time: a
    workflow-level group that never cancels a running rollout."""
    deploy = load("deploy.yml")
    setup, rollout = deploy["jobs"]["setup"], deploy["jobs"]["rollout"]
    assert run_step(setup, "-m ops.stack_matrix")["run"] == "python3 -m ops.stack_matrix deploy/stacks.json"
    assert setup["outputs"]["grafanas"] == "${{ steps.matrix.outputs.grafanas }}"
    assert rollout["needs"] == "setup" and rollout["strategy"]["fail-fast"] is False
    assert rollout["strategy"]["matrix"] == {"include": "${{ fromJSON(needs.setup.outputs.grafanas) }}"}
    assert "concurrency" not in rollout and deploy["concurrency"]["cancel-in-progress"] is False
    assert rollout["with"] == {"grafana": "${{ matrix.grafana }}", "stacks": "${{ toJSON(matrix.stacks) }}"}
    assert rollout["secrets"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}
    # actions: read for the called plan job's download-artifact (a called workflow's jobs get at most the caller's)
    assert rollout["permissions"] == {"contents": "read", "id-token": "write", "actions": "read"}
    called = load("deploy-stacks.yml")
    assert called["on"]["workflow_call"]["inputs"]["stacks"]["type"] == "string"
    assert list(called["jobs"]) == ["cluster", "plan", "grafana"]
    cluster, plan, grafana = (called["jobs"][n] for n in ("cluster", "plan", "grafana"))
    assert "max-parallel" not in cluster["strategy"] and cluster["strategy"]["fail-fast"] is False
    assert cluster["strategy"]["matrix"] == {"stack": "${{ fromJSON(inputs.stacks) }}"}
    assert cluster["env"]["STACK"] == "${{ matrix.stack }}" and "concurrency" not in cluster
    preview = run_step(cluster, "pulumi preview --json")
    classify = run_step(cluster, "-m ops.fleet classify \"$RUNNER_TEMP/preview.json\"")
    up = uses(cluster, "pulumi/actions")
    assert preview["continue-on-error"] is True and up["continue-on-error"] is True
    assert classify["env"] == {"OUTCOME": "${{ steps.preview.outcome }}"}
    assert up["if"] == "steps.classify.outputs.class == 'parallel' || steps.classify.outputs.class == 'grafana'"
    assert up["with"]["exclude"] == "${{ steps.classify.outputs.class == 'grafana' && steps.classify.outputs.exclude || '' }}"
    assert up["with"]["exclude-dependents"] == "${{ steps.classify.outputs.class == 'grafana' }}"
    upload = uses(cluster, "actions/upload-artifact")
    order = [index(cluster, x) for x in (preview, classify, up, run_step(cluster, "--outcome failure"), upload,
                                         run_step(cluster, "-m ops.verify"), run_step(cluster, "::error title=Stack $STACK failed"))]
    assert order == sorted(order)
    assert plan["needs"] == "cluster" and plan["if"] == "${{ !cancelled() }}" and "environment" not in plan
    assert uses(plan, "actions/download-artifact")["with"]["pattern"] == "fleet-*"
    assert plan["permissions"] == {"contents": "read", "actions": "read"}, "no id-token, no environment: no credential"
    assert run_step(plan, "-m ops.fleet plan")["env"] == {"STACKS": "${{ inputs.stacks }}"}
    assert plan["outputs"]["chunks"] == "${{ steps.plan.outputs.chunks }}"
    # The serialized phase: one job per chunk, one chunk at a time (max-parallel: 1), a failed chunk not cancelling
    # the next; no concurrency group (its single pending slot would drop chunks).
    assert grafana["needs"] == "plan" and "concurrency" not in grafana
    assert grafana["strategy"] == {"fail-fast": False, "max-parallel": 1,
                                   "matrix": {"chunk": "${{ fromJSON(needs.plan.outputs.chunks) }}"}}
    assert grafana["env"]["STACK"] == "${{ matrix.chunk.stacks[0] }}"
    assert "needs.plan.outputs.endpoints != '[]'" in grafana["if"]
    endpoints = run_step(grafana, "-m ops.fleet endpoints")
    assert endpoints["run"] == 'python3 -m ops.fleet endpoints --stacks "$STACKS" --whole "$WHOLE"'
    assert endpoints["env"]["STACKS"] == "${{ toJSON(matrix.chunk.stacks) }}"
    assert endpoints["env"]["WHOLE"] == "${{ toJSON(matrix.chunk.whole) }}"
    assert endpoints["env"]["FLEET_RELOGIN"] == "bash .ci/azure_relogin.sh"
    install = [s for s in steps(grafana) if s.get("uses", "").startswith("pulumi/actions@")]
    assert len(install) == 1 and "command" not in install[0]["with"] and index(grafana, install[0]) < index(grafana, endpoints)
    # The repository's stacks file yields one entry per Grafana, so one run puts at most one job in each group.
    done = subprocess.run([sys.executable, "ops/stack_matrix.py", "deploy/stacks.json"], cwd=ROOT,
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    grafanas = json.loads(done.stdout.split("=", 1)[1])
    assert len({g["grafana"] for g in grafanas}) == len(grafanas)
    assert {s for g in grafanas for s in g["stacks"]} == {e["stack"] for e in json.loads((ROOT / "deploy" / "stacks.json").read_text())["stacks"]}


# --- The jobs that run pulumi: backend, policy-pack virtualenv, kubelogin, token warm-up -------------------
PULUMI_JOBS = [("pr.yml", "preview"), ("deploy-stacks.yml", "cluster")]
GRAFANA_AUDIENCE = "ce34e7e5-485f-4d76-964f-b3d2b16d1e4f"
AKS_AUDIENCE = "6dae42f8-4368-4678-94ff-3960e28e3630"
ARM_AUDIENCE = "https://management.core.windows.net/"  # az's own ARM scope (azure/cli/core/util.py)


def index(job: dict, found: dict) -> int:
    return next(i for i, step in enumerate(steps(job)) if step is found)


def run_step(job: dict, command: str) -> dict:
    found = [s for s in steps(job) if command in s.get("run", "")]
    assert len(found) == 1, (command, [s.get("run") for s in steps(job)])
    return found[0]


def runs_pulumi(job: dict) -> bool:
    """A job that runs pulumi preview/up/destroy/refresh (through pulumi/actions) or ops.verify."""
    actions = [s for s in steps(job) if s.get("uses", "").startswith("pulumi/actions@")]
    return any(s["with"].get("command") in {"preview", "up", "update", "destroy", "refresh"} for s in actions) or any(
        command in runs(job) for command in PULUMI_RUNS)


@pytest.mark.parametrize("name,job_name", PULUMI_JOBS)
def test_policy_pack_virtualenv_is_created_before_pulumi(name, job_name):
    """policy/PulumiPolicy.yaml names a virtualenv that the CLI does not create for a local --policy-pack
    path: the job creates exactly that one, from the pack's lock (hashes required), before the pulumi step."""
    job = load(name)["jobs"][job_name]
    pulumi = uses(job, "pulumi/actions")
    pack = pulumi["with"]["policyPacks"]
    venv = yaml.safe_load((ROOT / pack / "PulumiPolicy.yaml").read_text())["runtime"]["options"]["virtualenv"]
    assert (ROOT / pack / "requirements.lock").is_file()
    step = run_step(job, f"python3 -m venv {pack}/{venv}")
    assert step["run"] == (f"python3 -m venv {pack}/{venv} && "
                           f"{pack}/{venv}/bin/pip install --require-hashes -r {pack}/requirements.lock")
    assert index(job, step) < index(job, pulumi)


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
    if job_name == "preview":  # a team or personal token, never the organization's (tests below)
        assert cloud["with"]["scope"] == "${{ vars.PULUMI_PREVIEW_SCOPE }}"
        secret = "PULUMI_PREVIEW_ACCESS_TOKEN"
    else:
        assert cloud["with"]["requested-token-type"] == "urn:pulumi:token-type:access_token:organization"
        secret = "PULUMI_ACCESS_TOKEN"
    assert int(cloud["with"]["token-expiration"]) >= job["timeout-minutes"] * 60, "the Pulumi token outlives the job"
    pulumi = uses(job, "pulumi/actions")
    assert pulumi["with"]["cloud-url"] == "${{ steps.backend.outputs.cloud-url }}"
    assert pulumi["with"]["secrets-provider"] == "${{ steps.backend.outputs.secrets-provider }}"
    assert pulumi["env"]["PULUMI_ACCESS_TOKEN"] == (
        "${{ steps.pulumi-cloud.outputs.pulumi-access-token || secrets.%s }}" % secret)
    assert job["permissions"]["id-token"] == "write"  # Pulumi's OIDC exchange as well as Azure's
    setup = uses(job, "actions/setup-python")
    assert index(job, backend) < index(job, cloud) < index(job, setup) < index(job, pulumi), "fail fast"


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
    assert len({(s["env"]["KUBELOGIN_VERSION"], s["env"]["KUBELOGIN_SHA256"]) for s in found}) == 1, "one pin everywhere"
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


def evaluate(expression: str, context: dict) -> bool:
    """A GitHub Actions `if:` made of `a == b` / `a != b` terms joined by `&&`; operands are context paths or
    quoted strings. Enough to run the workflows' fork conditions against a fork's and a branch's event."""
    def value(operand: str):
        operand = operand.strip()
        if operand.startswith("'"):
            return operand.strip("'")
        found = context
        for part in operand.split("."):
            found = found.get(part, "") if isinstance(found, dict) else ""
        return found

    results = []
    for term in expression.split("&&"):
        left, operator, right = re.fullmatch(r"\s*(\S+)\s*(==|!=)\s*(\S+)\s*", term).groups()
        results.append((value(left) == value(right)) == (operator == "=="))
    return all(results)


def event(head_repository: str) -> dict:
    return {"github": {"repository": "acme/aks-gpu-observability",
                       "event": {"pull_request": {"head": {"repo": {"full_name": head_repository}}}}},
            "vars": {"AZURE_PREVIEW_CLIENT_ID": "0b9f5c3e-8d1a-4a57-9c1e-2f6a7d4b3c21"}}


FORK, BRANCH = event("someone/aks-gpu-observability"), event("acme/aks-gpu-observability")


def test_a_fork_pull_request_gets_the_plan_in_the_summary_and_no_comment():
    """A fork's pull request runs with a read-only GITHUB_TOKEN: the comment step is skipped there (it would
    fail and turn the job red), the plan always goes to the job summary, and the credentialed preview job
    does not run."""
    pr = load("pr.yml")
    offline = pr["jobs"]["offline"]
    names = [s.get("name") for s in steps(offline) if s.get("name")]
    kept = ["Set up (the README's first command)", "Tests (the README's second command, with the real azure-cli parser check)",
            "Offline plan with the policy pack", "Comment the plan on the pull request", "Fail on a mandatory policy violation"]
    assert [n for n in names if n in kept] == kept, "the offline job keeps its steps and their names"
    summary = next(s for s in steps(offline) if s.get("name") == "Plan in the job summary")
    comment = uses(offline, "actions/github-script")
    plan = next(s for s in steps(offline) if s.get("name") == "Offline plan with the policy pack")
    assert "if" not in summary and "$GITHUB_STEP_SUMMARY" in summary["run"]
    assert "plan.txt" in summary["run"] and "plan-diff/comment.md" in summary["run"]
    diff = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    assert index(offline, plan) < index(offline, diff) < index(offline, summary) < index(offline, comment)
    assert evaluate(comment["if"], FORK) is False and evaluate(comment["if"], BRANCH) is True
    assert evaluate(pr["jobs"]["preview"]["if"], FORK) is False and evaluate(pr["jobs"]["preview"]["if"], BRANCH) is True


def test_the_condition_evaluator_reads_what_it_is_given():
    assert evaluate("vars.AZURE_PREVIEW_CLIENT_ID != ''", BRANCH) is True
    assert evaluate("vars.AZURE_PREVIEW_CLIENT_ID != ''", {"vars": {}}) is False
    assert evaluate("github.repository == 'acme/aks-gpu-observability'", FORK) is True


# --- .ci/pulumi_backend.sh, run here with each combination of variables ------------------------------
KEY_VAULT = "azurekeyvault://kv-platform.vault.azure.net/keys/pulumi"
AZBLOB = "azblob://pulumi-state?storage_account=stplatformstate"


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
    done, outputs, environment = run_backend(tmp_path, PULUMI_ORGANIZATION="acme", HAS_PULUMI_ACCESS_TOKEN="false")
    assert done.returncode == 0, done.stderr
    assert outputs == {"kind": "cloud-oidc", "cloud-url": "", "secrets-provider": ""}
    assert environment == {}


def test_backend_pulumi_cloud_by_token(tmp_path):
    done, outputs, environment = run_backend(tmp_path, HAS_PULUMI_ACCESS_TOKEN="true")
    assert done.returncode == 0, done.stderr
    assert outputs == {"kind": "cloud-token", "cloud-url": "", "secrets-provider": ""}
    assert environment == {}


def test_backend_oidc_wins_over_a_stored_token(tmp_path):
    done, outputs, _ = run_backend(tmp_path, PULUMI_ORGANIZATION="acme", HAS_PULUMI_ACCESS_TOKEN="true")
    assert done.returncode == 0 and outputs["kind"] == "cloud-oidc"


def test_backend_azblob_with_key_vault(tmp_path):
    done, outputs, environment = run_backend(
        tmp_path, f"secretsprovider: {KEY_VAULT}\nencryptedkey: c29tZS13cmFwcGVkLWtleQ==\nconfig: {{}}\n",
        PULUMI_BACKEND_URL=AZBLOB, PULUMI_SECRETS_PROVIDER=KEY_VAULT, HAS_PULUMI_ACCESS_TOKEN="false")
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
    pytest.param(None, {}, ["PULUMI_ORGANIZATION", "PULUMI_ACCESS_TOKEN", "PULUMI_BACKEND_URL", "PULUMI_SECRETS_PROVIDER"],
                 id="nothing-configured"),
    pytest.param(None, {"HAS_PULUMI_ACCESS_TOKEN": "false", "PULUMI_SECRETS_PROVIDER": KEY_VAULT},
                 ["PULUMI_ORGANIZATION", "PULUMI_ACCESS_TOKEN"], id="secrets-provider-alone"),
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


# --- .ci/warm_tokens.sh, against the stand-in az (tests/support/fake_az.py) ----------------------------------
TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.SIMULATED-ACCESS-TOKEN.c2lnbmF0dXJl"


def token_answer() -> dict:
    """`az account get-access-token` as azure-cli 2.91 answers it (the token included, as az prints it),
    valid for 74.5 more minutes."""
    return {"json": {"accessToken": TOKEN, "expiresOn": "2026-12-01 10:14:07.000000", "expires_on": int(time.time()) + 4470,
                     "subscription": "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73", "tenant": "72f988bf-86f1-41af-91ab-2d7cd011db47",
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
        assert argv == ["account", "get-access-token", "--resource", argv[3], "--query", "expires_on", "--output", "tsv"]
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
                                    "expiry time of assertion 2026-12-01T09:04:03Z. Trace ID: 6c1f0a52-1b0e-4c8a-9a61-1f3e0d2a7700"}
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


# --- .ci/plan_diff.sh, run here on two commits of a throwaway repository ------------------------------
GIT = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.test", "-c", "commit.gpgsign=false"]


def throwaway_repository(path):
    """A git repository holding this checkout's files (tracked and new, not ignored), committed once."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source, target = ROOT / name, path / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=path, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, check=True).stdout.strip()


def run_diff_step(repo, base_sha):
    """The workflow's own step (its run line and env, from pr.yml) with the base sha GitHub would give it."""
    offline = load("pr.yml")["jobs"]["offline"]
    step = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "LANG": "C.UTF-8", "STACK": offline["env"]["STACK"],
           "PYTHON": sys.executable,
           **{k: v.replace("${{ github.event.pull_request.base.sha }}", base_sha) for k, v in step["env"].items()}}
    return subprocess.run(["bash", "-c", step["run"]], cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def comment_body(repo):
    """The comment the workflow's github-script step would post, run in Node.js with stand-ins for the GitHub
    API (its script body, as in pr.yml); None when Node.js is not installed."""
    node = shutil.which("node")
    if node is None:
        return None
    script = uses(load("pr.yml")["jobs"]["offline"], "actions/github-script")["with"]["script"]
    harness = (
        "const posted = [];\n"
        "const github = { paginate: async () => [], rest: { issues: { listComments: null,"
        " createComment: async (a) => posted.push(a.body), updateComment: async (a) => posted.push(a.body) } } };\n"
        "const context = { repo: { owner: 'o', repo: 'r' }, issue: { number: 1 } };\n"
        f"(async () => {{\n{script}\n}})().then(() => process.stdout.write(posted[0]));\n")
    (repo / "comment.js").write_text(harness)
    done = subprocess.run([node, "comment.js"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_plan_diff_comments_the_change_between_two_commits(tmp_path):
    repo = tmp_path / "repo"
    base = throwaway_repository(repo)
    stack = repo / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("config:\n", "config:\n  aks-gpu-observability:managedPrivateEndpointName: pyro-mpe2\n", 1))
    subprocess.run([*GIT, "commit", "-qam", "head: rename the managed private endpoint"], cwd=repo, check=True)
    (repo / "plan.txt").write_text("the offline plan and policy report\n")
    done = run_diff_step(repo, base)
    assert done.returncode == 0, done.stderr
    comment = (repo / "plan-diff" / "comment.md").read_text()
    assert comment.startswith(f"### Offline preview diff (`dev`): base `{base[:12]}` -> head ")
    assert "**Resources: + 0 to create, ~ 1 to update, +-3 to replace, - 0 to delete, " in comment
    assert "OFFLINE ESTIMATE" in comment and "not the cloud's answer" in comment
    assert comment.index("Replacements:") < comment.index("Updates:") < comment.index("Engine order (pulumi up):")
    assert "grafana-private-link-mpe  replace (delete-first)" in comment
    assert '~ managedPrivateEndpointName: "pyroscope-mpe" => "pyro-mpe2"' in comment
    graph = comment.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert graph.startswith("graph TD") and "+- grafana-private-link-mpe (delete-first)" in graph
    assert re.search(r"^ +class r\d+ replace$", graph, re.M)
    diff = json.loads((repo / "plan-diff" / "diff.json").read_text())
    assert diff["summary"]["replace"] == 3
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True).stdout
    assert len(listed.splitlines()) == 1, "the base's worktree is removed"
    body = comment_body(repo)
    if body is not None:
        assert body.startswith("<!-- aks-gpu-observability-plan -->\n" + comment)
        assert "the offline plan and policy report" in body and len(body) <= 65536


def test_plan_diff_without_a_base_plan_shows_the_head_graph(tmp_path):
    repo = tmp_path / "repo"
    throwaway_repository(repo)
    (repo / "Pulumi.dev.yaml").rename(repo / "Pulumi.dev.yaml.kept")
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "a base without the dev stack"], cwd=repo, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "Pulumi.dev.yaml.kept").rename(repo / "Pulumi.dev.yaml")
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "head adds it"], cwd=repo, check=True)
    done = run_diff_step(repo, base)
    assert done.returncode == 0, done.stderr
    comment = (repo / "plan-diff" / "comment.md").read_text()
    assert f"The base {base[:12]} has no offline plan (error: stack: no stack file Pulumi.dev.yaml" in comment
    assert "```mermaid\ngraph TD" in comment and "Replacements:" not in comment
    bad = run_diff_step(repo, "0" * 40)
    assert bad.returncode == 1 and "is not a commit in this clone" in bad.stderr


# --- drift.yml: the daily drift check per stack, one issue per stack (issue 12 item 6) ----------------------
def test_drift_workflow_runs_daily_per_stack_and_only_the_issue_job_writes_issues():
    drift = load("drift.yml")
    assert drift["on"]["schedule"] and all(re.fullmatch(r"[\d*/,-]+( [\d*/,-]+){4}", c["cron"]) for c in drift["on"]["schedule"])
    assert "workflow_dispatch" in drift["on"] and drift["permissions"] == {"contents": "read"}
    stacks, check, issues = drift["jobs"]["stacks"], drift["jobs"]["check"], drift["jobs"]["issues"]
    listing = run_step(stacks, "-m ops.stack_matrix")
    assert listing["run"] == "python3 -m ops.stack_matrix --list deploy/stacks.json", "the deploy workflow's list"
    assert "env" not in listing
    assert stacks["outputs"]["stacks"] == "${{ steps.%s.outputs.stacks }}" % listing["id"]
    assert "permissions" not in stacks  # the workflow's contents: read
    # check: a matrix over the stack list, OIDC only, never issues
    assert check["needs"] == "stacks" and check["strategy"]["fail-fast"] is False
    assert check["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert check["env"]["STACK"] == "${{ matrix.stack }}" and check["environment"] == "production"
    assert check["permissions"] == {"contents": "read", "id-token": "write"}
    assert "vars.AZURE_CLIENT_ID != ''" in check["if"]
    backend = run_step(check, ".ci/pulumi_backend.sh")
    assert backend["id"] == "backend" and backend["env"]["HAS_PULUMI_ACCESS_TOKEN"] == "false", "no stored secret"
    cloud = uses(check, "pulumi/auth-actions")
    assert cloud["if"] == "steps.backend.outputs.kind == 'cloud-oidc'"
    installer = uses(check, "pulumi/actions")
    assert "command" not in installer["with"], "install-only: the CLI for `pulumi stack output`"
    verify = run_step(check, "-m ops.verify")
    assert '.venv/bin/python -m ops.verify --stack "$STACK" --drift --json > drift-result/report.json' in verify["run"]
    assert verify["env"] == {"PULUMI_ACCESS_TOKEN": "${{ steps.pulumi-cloud.outputs.pulumi-access-token }}"}
    assert 'test "$code" -le 1' in verify["run"], "exit 2 (not checked) fails the job; drift (1) is for the issue job"
    upload = uses(check, "actions/upload-artifact")
    assert upload["if"] == "always()" and upload["with"]["path"] == "drift-result/"
    assert index(check, backend) < index(check, cloud) < index(check, installer) < index(check, verify) < index(check, upload)
    # issues: the only job with issues: write, and no cloud credential
    assert issues["permissions"] == {"contents": "read", "issues": "write"}
    assert issues["needs"] == ["stacks", "check"] and issues["if"].startswith("always()")
    assert not any(s.get("uses", "").startswith(("azure/login@", "pulumi/")) for s in steps(issues))
    download = uses(issues, "actions/download-artifact")
    assert download["with"] == {"pattern": "drift-*", "path": "drift"}
    script = uses(issues, "actions/github-script")
    assert "require('./.ci/drift_issues.js')" in script["with"]["script"]
    assert script["env"] == {"STACKS": "${{ needs.stacks.outputs.stacks }}"}
    for name, job in drift["jobs"].items():
        assert ("issues" in job.get("permissions", {})) == (name == "issues"), name


def test_drift_checks_the_stacks_the_deploy_workflow_deploys(tmp_path):
    """One list of stacks (review: drift had its own variable): --list flattens deploy/stacks.json's groups (one
    Grafana's stacks together), with the same checks."""
    (tmp_path / "stacks.json").write_text(json.dumps({"stacks": [
        {"stack": "aks-a", "grafana": "rg-o/amg-one"}, {"stack": "aks-b", "grafana": "rg-o/amg-two"},
        {"stack": "aks-c", "grafana": "rg-o/amg-one"}]}))
    out = tmp_path / "github_output"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GITHUB_OUTPUT": str(out)}
    done = subprocess.run([sys.executable, str(ROOT / "ops" / "stack_matrix.py"), "--list", str(tmp_path / "stacks.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == 'stacks=["aks-a","aks-c","aks-b"]\n'
    (tmp_path / "stacks.json").write_text(json.dumps({"stacks": [{"stack": "aks-a", "grafana": "rg-o/amg-one"}] * 2}))
    done = subprocess.run([sys.executable, str(ROOT / "ops" / "stack_matrix.py"), "--list", str(tmp_path / "stacks.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "listed twice" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.fixture(scope="module")
def drift_reports(tmp_path_factory):
    """Real `ops.verify --drift --json` answers (against the stand-in az): one with a drifted datasource URL and
    a deleted dashboard, one clean."""
    from tests.support.scenarios import grafana_error
    from tests.support.verify_runs import check_drift, edit

    reports = {}
    for name, changes in (("drifted", {"pyro": edit("url", "http://10.0.9.9:4040"),
                                       "dash": lambda _: grafana_error("Not Found", "Dashboard not found")}),
                          ("clean", {})):
        done, _ = check_drift(tmp_path_factory.mktemp(name), None, "--json", **changes)
        assert done.returncode == (1 if name == "drifted" else 0), done.stderr
        reports[name] = (done.returncode, done.stdout)
    return reports


def file_issues(tmp_path, results: dict, open_issues: list, stacks: list):
    """drift.yml's github-script step (its script, as written there) in Node.js with stand-ins for the GitHub API and
    the downloaded artifacts; returns (API calls, setFailed messages). Skips without Node.js."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node (Node.js) to run the github-script step")
    artifacts = tmp_path / "drift"
    for i, (stack, (code, report, error)) in enumerate(results.items()):
        folder = artifacts / f"drift-{i}"
        folder.mkdir(parents=True)
        (folder / "stack.txt").write_text(stack + "\n")
        (folder / "exit.txt").write_text(f"{code}\n")
        (folder / "report.json").write_text(report)
        (folder / "error.txt").write_text(error)
    script = uses(load("drift.yml")["jobs"]["issues"], "actions/github-script")["with"]["script"]
    harness = (
        "const path = require('path');\n"
        "const calls = [], failed = [];\n"
        f"const open = {json.dumps(open_issues)};\n"
        "const github = { paginate: async (fn, args) => { calls.push(['list', args]); return open; },\n"
        "  rest: { issues: { listForRepo: 'listForRepo',\n"
        "    create: async (a) => { calls.push(['create', a]); return { data: { number: 99 } }; },\n"
        "    update: async (a) => { calls.push(['update', a]); return { data: {} }; },\n"
        "    createComment: async (a) => { calls.push(['comment', a]); return { data: {} }; } } } };\n"
        "const core = { info: () => {}, warning: () => {}, setFailed: (m) => failed.push(m) };\n"
        "const context = { repo: { owner: 'acme', repo: 'aks-gpu-observability' }, serverUrl: 'https://github.com', runId: 7 };\n"
        "const realRequire = require;\n"
        "(async () => {\n"
        # github-script resolves a relative require against the workspace (the checkout)
        f"  const require = (p) => realRequire(p.startsWith('.') ? path.join({json.dumps(str(ROOT))}, p) : p);\n"
        f"{script}\n"
        "})().then(() => process.stdout.write(JSON.stringify({ calls, failed })));\n")
    (tmp_path / "harness.js").write_text(harness)
    done = subprocess.run([node, "harness.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "STACKS": json.dumps(stacks)})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    return answer["calls"], answer["failed"]


TITLE = "Drift: Grafana differs from what stack {} set"


def test_drift_opens_an_issue_and_closes_the_one_of_a_stack_that_no_longer_drifts(tmp_path, drift_reports):
    prod_issue = {"number": 12, "title": TITLE.format("acme/x/prod"), "body": "old"}
    calls, failed = file_issues(tmp_path, {"dev": (*drift_reports["drifted"], ""), "acme/x/prod": (*drift_reports["clean"], "")},
                                [prod_issue, {"number": 13, "title": TITLE.format("dev"), "pull_request": {}}], ["dev", "acme/x/prod"])
    assert failed == []
    assert calls[0] == ["list", {"owner": "acme", "repo": "aks-gpu-observability", "state": "open", "per_page": 100}]
    created = [c[1] for c in calls if c[0] == "create"]
    assert len(created) == 1 and created[0]["title"] == TITLE.format("dev"), "a pull request with that title is not the issue"
    body = created[0]["body"]
    assert "### datasource `local-pyroscope`: drifted" in body
    assert '| `url` | `"http://10.0.9.9:4040"` | `"http://10.0.4.36:4040"` |' in body
    assert "### dashboard `AdvancedGPUObservability`: missing" in body and "azure-monitor-prometheus" not in body
    assert "pulumi up --replace" in body and "https://github.com/acme/aks-gpu-observability/actions/runs/7" in body
    comment = next(c[1] for c in calls if c[0] == "comment")
    assert comment["issue_number"] == 12 and "No drift any more" in comment["body"]
    assert ["update", {"owner": "acme", "repo": "aks-gpu-observability", "issue_number": 12, "state": "closed",
                       "state_reason": "completed"}] in calls


def test_drift_updates_the_open_issue_of_its_stack(tmp_path, drift_reports):
    calls, failed = file_issues(tmp_path, {"dev": (*drift_reports["drifted"], "")},
                                [{"number": 5, "title": TITLE.format("dev"), "body": "earlier"}], ["dev"])
    assert failed == [] and not [c for c in calls if c[0] in ("create", "comment")]
    (update,) = [c[1] for c in calls if c[0] == "update"]
    assert update["issue_number"] == 5 and "local-pyroscope" in update["body"] and "state" not in update


def test_no_drift_and_no_issue_writes_nothing(tmp_path, drift_reports):
    calls, failed = file_issues(tmp_path, {"dev": (*drift_reports["clean"], "")}, [], ["dev"])
    assert failed == [] and [c[0] for c in calls] == ["list"]


def test_text_from_grafana_cannot_mention_link_or_restyle_in_the_issue(tmp_path):
    """Datasource names, uids and field values come from Grafana, which its admins edit: in the issue body an @ cannot
    mention (a zero-width joiner follows it), and backticks, brackets, pipes and emphasis stay literal text."""
    evil = "@org/team **x** `y` [z](http://e) | cell"
    report = {"stack": "dev", "drifted": True, "objects": [
        {"kind": "datasource", "uid": evil, "state": "drifted", "next_step": f"rename {evil}",
         "fields": [{"field": evil, "grafana": {"name": evil}, "stack": "Pyroscope"}]}]}
    calls, failed = file_issues(tmp_path, {"dev": (1, json.dumps(report), "")}, [], ["dev"])
    assert failed == []
    (body,) = [c[1]["body"] for c in calls if c[0] == "create"]
    assert "@org" not in body and body.count("@\u200dorg/team") == 4, body
    assert "`y`" not in body, body  # a backtick would end a code span early
    (next_line,) = [line for line in body.splitlines() if line.startswith("Next: ")]
    for raw in ("**x**", "[z](http", "[z]"):  # outside a code span, escaped
        assert raw not in next_line, (raw, next_line)
    (row,) = [line for line in body.splitlines() if line.startswith("| `@")]
    assert len(re.findall(r"(?<!\\)\|", row)) == 4, row  # the cell's pipes are escaped: still three cells
    assert [line for line in body.splitlines() if line.startswith("### ")] == [
        "### datasource `@\u200dorg/team **x** 'y' [z](http://e) \\| cell`: drifted"]


def test_a_stack_that_could_not_be_checked_keeps_its_issue_and_fails_the_step(tmp_path):
    error = "error: reading datasource local-pyroscope from Grafana failed: ERROR: Forbidden(...)"
    calls, failed = file_issues(tmp_path, {"dev": (2, "", error)}, [{"number": 5, "title": TITLE.format("dev")}], ["dev", "prod"])
    assert [c[0] for c in calls] == ["list"]
    assert failed == [f"drift could not be checked for: dev ({error}); prod (no result)"]


# --- Branch code must not hold production's keys (security review) ---------------------------------------------
# A pull request's own code (requirements.txt, .ci/*.sh, __main__.py) runs in every job a pull request event
# starts, and in every job of a reusable workflow such a job calls. None of them may reach a production credential.
# These checks are a lint of this repository's files; the boundary itself is GitHub's and Entra's: the repository's
# OIDC subject names the event (`repo:<org>/<repo>:environment:production:event_name:push`), the production app
# trusts only the PRODUCTION_EVENTS below, and the `production` environment's deployment branch policy is main only
# (docs/platform.md, "Identities"): a branch can edit its own copy of these workflows.
PR_TRIGGERS = {"pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment"}
# The events production's credentials are federated for, the one list: docs/platform.md's subjects and Pulumi
# policies, and the triggers of every workflow with a production job, are compared with it.
PRODUCTION_EVENTS = ("push", "workflow_dispatch", "schedule")
PREVIEW_EVENTS = ("pull_request",)
# Context property names are case-insensitive in GitHub's expressions: compared in lower case.
PRODUCTION_NAMES = {
    "vars": {"azure_client_id": "the production Azure identity vars.AZURE_CLIENT_ID"},
    "secrets": {"pulumi_access_token": "the production Pulumi token secrets.PULUMI_ACCESS_TOKEN"},
}
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
# vars/secrets (not a property of another context): .name, .*, ['name'], a computed index, or the whole object.
CONTEXT = re.compile(r"""(?<![\w.-])(?P<context>vars|secrets)\b\s*(?:\.\s*(?P<dotted>[\w-]+|\*)"""
                     r"""|\[\s*(?:'(?P<single>[^']*)'|"(?P<double>[^"]*)")\s*\]|(?P<index>\[))?""")
MAIN_ONLY = "github.ref == 'refs/heads/main'"
GUARD_STEP = {
    "name": "Only main may use production",
    "env": {"REF": "${{ github.ref }}"},
    "run": 'if [ "$REF" != refs/heads/main ]; then\n'
           '  echo "::error::production runs only from main; this run is on \'${REF}\' (docs/platform.md, Identities)"\n'
           "  exit 1\n"
           "fi\n",
}


def all_workflows() -> dict[str, dict]:
    return {path.name: load(path.name) for path in sorted(WORKFLOWS.glob("*.y*ml"))}


def triggers(document: dict) -> set[str]:
    on = document.get("on")
    if on is None:
        return set()
    return {on} if isinstance(on, str) else set(on)


def environment_name(job: dict) -> str | None:
    environment = job.get("environment")
    return environment.get("name") if isinstance(environment, dict) else environment


def production_environment(job: dict) -> str | None:
    """Why the job's environment may be production, or None: the name compared without case (GitHub's environment
    names are case-insensitive), and any name built by an expression counts."""
    name = environment_name(job)
    if name is None:
        return None
    text = str(name)
    if "${{" in text:
        return f"environment {text!r} is an expression (it may name production)"
    return f"environment {text}" if text.strip().lower() == "production" else None


def is_production(job: dict) -> bool:
    return production_environment(job) is not None


def expressions(node, key=None):
    """Every expression in a workflow fragment: each ${{ ... }}, and each whole ``if:`` value (implicitly one)."""
    if isinstance(node, dict):
        for k, value in node.items():
            yield from expressions(value, k)
    elif isinstance(node, list):
        for value in node:
            yield from expressions(value, key)
    elif isinstance(node, str):
        yield from EXPRESSION.findall(node)
        if key == "if" and "${{" not in node:
            yield node


def credential_marks(node) -> list[str]:
    """Which production credentials a workflow fragment can read: by name (any case, dotted or index syntax), or all
    of them (a computed index such as vars[format(...)], secrets.*, or the whole context, as toJSON(secrets))."""
    found = []
    for expression in expressions(node):
        for match in CONTEXT.finditer(expression.lower()):
            context = match["context"]
            name = match["dotted"] or match["single"] or match["double"]
            if name is None or name == "*":
                how = "a computed index" if match["index"] else "the * filter" if name else "the whole context"
                found.append(f"every {context} value ({how}: {match.group(0).strip()!r})")
            elif name in PRODUCTION_NAMES[context]:
                found.append(PRODUCTION_NAMES[context][name])
    if "access_token:organization" in yaml.safe_dump(node).lower():
        found.append("a Pulumi organization (admin) token")
    return list(dict.fromkeys(found))


def called(job: dict) -> str | None:
    """The file name of the local reusable workflow a job calls (``uses: ./.github/workflows/<name>``), if any."""
    target = job.get("uses", "")
    return target.rsplit("/", 1)[1] if target.startswith("./.github/workflows/") else None


def workflow_reach(workflows: dict[str, dict], name: str, seen: set[str]) -> list[str]:
    """What production credential workflow ``name`` can reach when a pull request starts it (or a job so started
    calls it): its workflow-level keys (env, defaults, ...), each job, and the reusable workflows they call."""
    if name in seen:
        return []
    seen.add(name)
    if name not in workflows:
        return [f"{name}: called, but not in .github/workflows"]
    document = workflows[name]
    found = [f"{name} (workflow level): {what}"
             for what in credential_marks({k: v for k, v in document.items() if k not in ("on", "jobs")})]
    for job_name, job in document["jobs"].items():
        where = f"{name} job {job_name}"
        environment = production_environment(job)
        if environment:
            found.append(f"{where}: {environment}")
        found += [f"{where}: {what}" for what in credential_marks(job)]
        if "uses" not in job:
            continue
        target = called(job)
        if target is None:  # owner/repo/.github/workflows/x.yml@ref: code this repository does not review here
            found.append(f"{where}: calls the remote reusable workflow {job['uses']} (refused from pull request jobs)")
            continue
        if job.get("secrets") == "inherit":
            found.append(f"{where}: secrets: inherit to {target}")
        found += workflow_reach(workflows, target, seen)
    return found


def pull_request_reach(workflows: dict[str, dict]) -> list[str]:
    """Every production credential a job started by a pull request event (PR_TRIGGERS: each runs the pull request's
    merge commit or head) can reach; a pull_request_target trigger is refused outright (it runs with the base
    repository's secrets, and a job that checks out the head runs its code)."""
    found = []
    for name, document in workflows.items():
        if "pull_request_target" in triggers(document):
            found.append(f"{name}: on pull_request_target is refused")
        if triggers(document) & PR_TRIGGERS:
            found += workflow_reach(workflows, name, set())
    return found


def test_no_job_that_runs_pull_request_code_can_reach_a_production_credential():
    assert pull_request_reach(all_workflows()) == []


def test_the_reach_check_sees_through_reusable_workflows_and_refuses_pull_request_target():
    """The checker on made-up workflows: a pull request job calling the deploy workflow (with secrets: inherit), or
    naming the production identity, is found; a pull_request_target trigger is refused even with harmless jobs."""
    production = {"on": {"workflow_call": {}}, "jobs": {"up": {"environment": "production", "steps": [{"run": "true"}]}}}
    harmless = {"steps": [{"run": "true"}]}
    workflows = {"prod.yml": production,
                 "a.yml": {"on": {"pull_request": {}}, "jobs": {"call": {"uses": "./.github/workflows/prod.yml",
                                                                         "secrets": "inherit"}}},
                 "b.yml": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ vars.AZURE_CLIENT_ID }}"}, **harmless}}},
                 "c.yml": {"on": {"pull_request_target": {}}, "jobs": {"ok": harmless}},
                 "d.yml": {"on": {"pull_request": {}}, "jobs": {"y": {"env": {"C": "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"},
                                                                     **harmless}}}}
    found = pull_request_reach(workflows)
    assert "a.yml job call: secrets: inherit to prod.yml" in found and "prod.yml job up: environment production" in found
    assert "b.yml job x: the production Azure identity vars.AZURE_CLIENT_ID" in found
    assert "c.yml: on pull_request_target is refused" in found
    assert not [f for f in found if f.startswith("d.yml")], "the preview identity is not production's"


HARMLESS = {"runs-on": "ubuntu-latest", "steps": [{"run": "true"}]}
PRODUCTION_CALLEE = {"on": {"workflow_call": {}}, "jobs": {"up": {"environment": "production", **HARMLESS}}}
REACHING = {  # each reaches a production credential from a pull request (adversarial review rev-b, and more)
    "vars index syntax": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ vars['AZURE_CLIENT_ID'] }}"}, **HARMLESS}}},
    "vars index with double quotes": {"on": "pull_request",
                                      "jobs": {"x": {"env": {"C": '${{ vars["azure_client_id"] }}'}, **HARMLESS}}},
    "vars via format()": {"on": "pull_request",
                          "jobs": {"x": {"env": {"C": "${{ vars[format('AZURE_{0}_ID', 'CLIENT')] }}"}, **HARMLESS}}},
    "all secrets via toJSON": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ toJSON(secrets) }}"}, **HARMLESS}}},
    "all vars via tojson in a step": {"on": "pull_request", "jobs": {"x": {**HARMLESS, "steps": [
        {"run": "echo \"$V\"", "env": {"V": "${{ tojson( vars ) }}"}}]}}},
    "secrets.* filter": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ join(secrets.*, ',') }}"}, **HARMLESS}}},
    "secret name in lower case": {"on": "pull_request",
                                  "jobs": {"x": {"env": {"C": "${{ secrets.pulumi_access_token }}"}, **HARMLESS}}},
    "secret in a with: input": {"on": "pull_request", "jobs": {"x": {**HARMLESS, "steps": [
        {"uses": "some/action@" + "0" * 40, "with": {"token": "${{ SECRETS.Pulumi_Access_Token }}"}}]}}},
    "environment Production": {"on": "pull_request", "jobs": {"x": {"environment": "Production", **HARMLESS}}},
    "environment as expression": {"on": "pull_request", "jobs": {"x": {"environment": "${{ 'produc' }}tion", **HARMLESS}}},
    "environment mapping": {"on": "pull_request",
                            "jobs": {"x": {"environment": {"name": "PRODUCTION", "url": "https://example.com"}, **HARMLESS}}},
    "environment mapping with expression": {"on": "pull_request", "jobs": {"x": {
        "environment": {"name": "${{ github.event.pull_request.title }}"}, **HARMLESS}}},
    "workflow-level env": {"on": "pull_request", "env": {"T": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}, "jobs": {"x": HARMLESS}},
    "workflow-level defaults": {"on": "pull_request", "defaults": {"run": {"shell": "${{ vars.AZURE_CLIENT_ID }}"}},
                                "jobs": {"x": HARMLESS}},
    "job if": {"on": "pull_request", "jobs": {"x": {"if": "vars['azure_client_id'] != ''", **HARMLESS}}},
    "pull_request_review trigger": {"on": "pull_request_review", "jobs": {"x": {"environment": "production", **HARMLESS}}},
    "pull_request_review_comment trigger": {"on": {"pull_request_review_comment": {}},
                                            "jobs": {"x": {"environment": "production", **HARMLESS}}},
    "trigger list": {"on": ["push", "pull_request"], "jobs": {"x": {"environment": "production", **HARMLESS}}},
    "calls the production workflow": {"on": "pull_request", "jobs": {"x": {"uses": "./.github/workflows/prod.yml"}}},
    "remote reusable workflow": {"on": "pull_request",
                                 "jobs": {"x": {"uses": "octo-org/deploy/.github/workflows/up.yml@main"}}},
    "remote reusable workflow pinned by sha": {"on": "pull_request", "jobs": {"x": {
        "uses": "octo-org/deploy/.github/workflows/up.yml@" + "a" * 40}}},
}
NOT_REACHING = {
    "the preview identity": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"},
                                                                 **HARMLESS}}},
    "the preview token by index": {"on": "pull_request", "jobs": {"x": {
        "env": {"C": "${{ secrets['PULUMI_PREVIEW_ACCESS_TOKEN'] }}"}, **HARMLESS}}},
    "an output named vars": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ steps.a.outputs.vars }}"}, **HARMLESS}}},
    "environment preview": {"on": "pull_request", "jobs": {"x": {"environment": {"name": "preview"}, **HARMLESS}}},
    "production job on push": {"on": "push", "jobs": {"x": {"environment": "production", **HARMLESS}}},
}


@pytest.mark.parametrize("case", sorted(REACHING))
def test_the_reach_check_refuses_every_spelling_of_a_production_credential(case):
    found = pull_request_reach({"prod.yml": PRODUCTION_CALLEE, "probe.yml": REACHING[case]})
    assert found, f"{case}: not caught"  # prod.yml alone has no pull request trigger: every finding is the probe's


@pytest.mark.parametrize("case", sorted(NOT_REACHING))
def test_the_reach_check_lets_preview_only_jobs_pass(case):
    assert pull_request_reach({"prod.yml": PRODUCTION_CALLEE, "probe.yml": NOT_REACHING[case]}) == []


def test_no_workflow_is_triggered_by_pull_request_target():
    """pull_request_target runs in the base repository's context, with its secrets and an id-token, for pull requests
    from forks too; none of this repository's workflows may use it."""
    for name, document in all_workflows().items():
        assert "pull_request_target" not in triggers(document), name


def callers(workflows: dict[str, dict], target: str) -> list[str]:
    return [name for name, document in workflows.items()
            for job in document["jobs"].values() if called(job) == target]


def events(workflows: dict[str, dict], name: str, seen=frozenset()) -> set[str]:
    """The events that can start workflow ``name``'s jobs: its own triggers, a workflow_call replaced by its callers'
    (a called workflow runs with the caller's event: github.event_name, and the OIDC event_name claim)."""
    own = triggers(workflows[name])
    found = own - {"workflow_call"}
    if "workflow_call" in own:
        for caller in callers(workflows, name):
            if caller not in seen:
                found |= events(workflows, caller, seen | {name})
    return found


def main_only_guard(job: dict) -> dict | None:
    """The job's main-only guard: its first step, exactly GUARD_STEP (no if:, no continue-on-error, the one script)."""
    first = steps(job)[0] if steps(job) else {}
    return first if first == GUARD_STEP else None


def guarded_by_its_if(job: dict) -> bool:
    return str(job.get("if", "")).strip() in (MAIN_ONLY, "${{ %s }}" % MAIN_ONLY)


def test_every_production_job_is_guarded_to_main_and_never_runs_for_a_pull_request():
    """environment: production only for main: its first step is the guard (GUARD_STEP, exactly: it fails unless
    github.ref is refs/heads/main, for workflow_dispatch from another branch, a schedule, and a workflow_call whose
    caller ran elsewhere: github.ref is the caller's), or the job's own if: is exactly the main check (not
    ``... || true``); the job cannot continue on error; no step after the guard runs code or signs in under
    always()/failure()/cancelled(); and the workflow runs only on PRODUCTION_EVENTS, through its callers too."""
    workflows = all_workflows()
    guarded = 0
    for name, document in workflows.items():
        for job_name, job in document["jobs"].items():
            if not is_production(job):
                continue
            guarded += 1
            where = f"{name} job {job_name}"
            assert main_only_guard(job) is not None or guarded_by_its_if(job), where
            assert "continue-on-error" not in job, where
            for step in steps(job)[1:]:
                if re.search(r"always\(|failure\(|cancelled\(", str(step.get("if", ""))):
                    assert "run" not in step and not step["uses"].startswith(("azure/login@", "pulumi/")), (where, step)
            assert events(workflows, name) <= set(PRODUCTION_EVENTS), (where, events(workflows, name))
            assert not events(workflows, name) & PR_TRIGGERS, where
    assert guarded == 3  # deploy-stacks.yml cluster and grafana, drift.yml check


@pytest.mark.parametrize("job,passes", [
    ({"if": MAIN_ONLY, **HARMLESS}, True),
    ({"if": "${{ %s }}" % MAIN_ONLY, **HARMLESS}, True),
    ({"if": MAIN_ONLY + " || true", **HARMLESS}, False),
    ({"if": "always() || " + MAIN_ONLY, **HARMLESS}, False),
    ({"steps": [GUARD_STEP, {"run": "true"}]}, True),
    ({"steps": [{**GUARD_STEP, "continue-on-error": True}]}, False),
    ({"steps": [{**GUARD_STEP, "if": "false"}]}, False),
    ({"steps": [{**GUARD_STEP, "run": GUARD_STEP["run"] + "true\n"}]}, False),
    ({"steps": [{"run": "true"}, GUARD_STEP]}, False),
])
def test_the_guard_check_wants_the_exact_main_check(job, passes):
    assert (main_only_guard(job) is not None or guarded_by_its_if(job)) is passes


@pytest.mark.parametrize("ref,passes", [("refs/heads/main", True), ("refs/heads/feature", False),
                                        ("refs/pull/7/merge", False), ("refs/tags/v1", False), ("", False)])
def test_the_main_only_guard_step_fails_off_main(tmp_path, ref, passes):
    """The guard step's script, run as the runner would (bash -e), with the ref GitHub would give it."""
    workflows = all_workflows()
    guards = [main_only_guard(job) for document in workflows.values() for job in document["jobs"].values()
              if is_production(job)]
    assert guards and all(guards)
    done = subprocess.run(["bash", "-e", "-c", GUARD_STEP["run"]], env={"PATH": os.environ["PATH"], "REF": ref},
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode == 0) is passes, (ref, done.stdout, done.stderr)
    if not passes:
        assert "production" in done.stdout + done.stderr and "main" in done.stdout + done.stderr


PLATFORM = ROOT / "docs" / "platform.md"
SUBJECT = re.compile(r"repo:<org>/<repo>:environment:(?P<environment>[\w-]+)(?::event_name:(?P<event>\w+))?")


def federated_subjects() -> list[tuple[str, str | None]]:
    """(environment, event_name) of every "subject" in docs/platform.md's az ad app federated-credential commands."""
    text = PLATFORM.read_text(encoding="utf-8")
    subjects = re.findall(r'"subject":\s*"([^"]+)"', text)
    assert subjects, "docs/platform.md gives no federated-credential subject"
    found = []
    for subject in subjects:
        match = SUBJECT.fullmatch(subject)
        assert match, subject
        found.append((match["environment"], match["event"]))
    return found


def test_production_is_federated_only_for_the_events_of_its_workflows_never_a_pull_request():
    """docs/platform.md's federated credentials, the Pulumi Cloud policies and the subject customisation agree with
    PRODUCTION_EVENTS / PREVIEW_EVENTS: production's subjects name exactly those events (never pull_request*), the
    preview's only pull_request; every subject names its event (the customised subject has no event-less form)."""
    subjects = federated_subjects()
    production = [event for environment, event in subjects if environment == "production"]
    preview = [event for environment, event in subjects if environment == "preview"]
    assert {environment for environment, _ in subjects} == {"production", "preview"}, subjects
    assert sorted(production) == sorted(PRODUCTION_EVENTS), production
    assert not [event for event in production if event is None or event.startswith("pull_request")], production
    assert preview == list(PREVIEW_EVENTS), preview
    text = PLATFORM.read_text(encoding="utf-8")
    customisation = re.findall(r"echo '(\{[^']*\})' \|\s*gh api -X PUT repos/<org>/<repo>/actions/oidc/customization/sub "
                               r"--input -", text)
    assert [json.loads(body) for body in customisation] == [
        {"use_default": False, "include_claim_keys": ["repo", "context", "event_name"]}], customisation
    policies = set(re.findall(r"`sub` `(repo:<org>/<repo>:environment:[\w-]+:event_name:\w+)`", text))
    assert policies == {f"repo:<org>/<repo>:environment:{environment}:event_name:{event}"
                        for environment, event in subjects}, policies
    # And the workflows: every job on production runs only on those events (through its callers too).
    workflows = all_workflows()
    for name, document in workflows.items():
        for job in document["jobs"].values():
            if is_production(job):
                assert events(workflows, name) <= set(PRODUCTION_EVENTS), name
            if environment_name(job) == "preview":
                assert events(workflows, name) == set(PREVIEW_EVENTS), name


def test_the_preview_job_uses_only_the_preview_identity():
    """The pull request's preview signs in as the preview identity (Reader and what a preview reads; federated for
    environment:preview only), and to Pulumi Cloud with a team or personal token that can read stacks, never the
    organization's admin token or the production secret."""
    preview = load("pr.yml")["jobs"]["preview"]
    assert environment_name(preview) == "preview"
    assert "vars.AZURE_PREVIEW_CLIENT_ID != ''" in preview["if"] and "AZURE_CLIENT_ID " not in preview["if"]
    assert preview["env"]["ARM_CLIENT_ID"] == "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"
    assert uses(preview, "azure/login")["with"]["client-id"] == "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"
    cloud = uses(preview, "pulumi/auth-actions")["with"]
    assert "organization" not in cloud["requested-token-type"]
    assert "access_token:team" in cloud["requested-token-type"] and "access_token:personal" in cloud["requested-token-type"]
    assert cloud["scope"] == "${{ vars.PULUMI_PREVIEW_SCOPE }}"
    assert set(re.findall(r"secrets\.(\w+)", yaml.safe_dump(preview))) == {"PULUMI_PREVIEW_ACCESS_TOKEN"}
    assert preview["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "write"}


def test_id_token_write_only_where_a_job_signs_in():
    """No workflow grants id-token: write to all its jobs; a job has it only when it signs in with OIDC itself (in an
    environment whose federated credential names it) or calls a reusable workflow that does."""
    workflows = all_workflows()
    for name, document in workflows.items():
        assert "id-token" not in (document.get("permissions") or {}), name
        for job_name, job in document["jobs"].items():
            if (job.get("permissions") or {}).get("id-token") != "write":
                continue
            target = called(job)
            if target is not None:
                assert any((j.get("permissions") or {}).get("id-token") == "write"
                           for j in workflows[target]["jobs"].values()), (name, job_name)
                continue
            assert environment_name(job) in {"preview", "production"}, (name, job_name)
            assert any(s.get("uses", "").startswith(("azure/login@", "pulumi/auth-actions@")) for s in steps(job)), (
                name, job_name)


# --- Deploy exactly what was tested: the locks, the reference artefacts, Helm, the bot (docs/dependencies.md) --------

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


def test_the_pull_request_tests_run_with_real_helm_and_every_reference_artefact():
    """pr.yml installs Helm as .ci/run does (.ci/install-helm, both versions) and requires it, and restores the fetched
    artefacts' cache (the directory .ci/fetch-reference uses, keyed by the manifest) before the tests' set-up fetches
    them (a step of its own after the README's set-up, which needs none of them)."""
    offline = load("pr.yml")["jobs"]["offline"]
    helm = next(s for s in steps(offline) if s.get("name") == "Helm")
    assert ".ci/install-helm .tools)" in helm["run"] and ".ci/install-helm .tools 3.18.0)" in helm["run"]
    assert "HELM_BIN=" in helm["run"] and "HELM_318_BIN=" in helm["run"] and "GITHUB_ENV" in helm["run"]
    tests = next(s for s in steps(offline) if ".venv/bin/python -m pytest -q" in s.get("run", ""))
    assert "REQUIRE_HELM=1" in tests["run"] and index(offline, helm) < index(offline, tests)
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".ci/install-helm .tools)" in ci and ".ci/install-helm .tools 3.18.0)" in ci and "REQUIRE_HELM=1" in ci
    cache = uses(offline, "actions/cache")
    assert cache["with"]["path"] == "~/.cache/aks-gpu-observability/reference"
    assert cache["with"]["key"] == "reference-${{ hashFiles('tests/reference/fetch.json') }}"
    setup = next(s for s in steps(offline) if s.get("name", "").startswith("Set up"))
    fetch = next(s for s in steps(offline) if s.get("name", "").startswith("Reference artefacts"))
    assert fetch["run"] == ".ci/fetch-reference" and ".ci/fetch-reference" not in setup["run"]
    assert index(offline, cache) < index(offline, setup) < index(offline, fetch) < index(offline, tests)
    script = (ROOT / ".ci" / "fetch-reference").read_text()
    assert '"aks-gpu-observability" / "reference"' in script and '".cache"' in script


RENOVATE = ROOT / "renovate.json"


def renovate() -> dict:
    return json.loads(RENOVATE.read_text())


def js_pattern(pattern: str) -> "re.Pattern":
    """A Renovate managerFilePatterns entry (/regex/) as a Python regex."""
    assert pattern.startswith("/") and pattern.endswith("/"), pattern
    return re.compile(pattern[1:-1])


def js_regex(pattern: str) -> str:
    """A Renovate matchStrings regex (JavaScript named groups) in Python's syntax."""
    return re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", pattern)


def tracked_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                  if p.is_file() and not {".git", ".venv", ".tools", ".azcli", "venv", "__pycache__"} & set(p.parts))


def test_renovate_covers_the_locks_the_actions_the_chart_and_kubelogin():
    """The bot proposes bumps of: the three Python locks (pip-compile manager on the lock files), every pinned action
    (github-actions, digests), kubelogin's release and digest, the Pyroscope chart. Keys checked against Renovate's
    published schema (renovate 44.121.2 renovate-schema.json, validated when this file was written); here: the
    structure, and each pattern against the files it must find."""
    config = renovate()
    assert set(config) <= {"$schema", "description", "enabledManagers", "baseBranchPatterns", "labels",
                           "prConcurrentLimit", "minimumReleaseAge", "pip-compile", "rangeStrategy",
                           "lockFileMaintenance", "github-actions", "customManagers", "packageRules"}, set(config)
    assert config["$schema"] == "https://docs.renovatebot.com/renovate-schema.json"
    assert set(config["enabledManagers"]) == {"pip-compile", "github-actions", "custom.regex"}
    assert config["baseBranchPatterns"] == ["main"], "bumps are pull requests to main, where pr.yml runs"
    files = tracked_files()

    locks = [f for f in files if any(js_pattern(p).search(f) for p in config["pip-compile"]["managerFilePatterns"])]
    assert locks == ["policy/requirements.lock", "requirements-dev.lock", "requirements.lock"], locks
    assert config["rangeStrategy"] == "update-lockfile" and config["lockFileMaintenance"]["enabled"] is True

    workflows = [f for f in files if any(js_pattern(p).search(f) for p in config["github-actions"]["managerFilePatterns"])]
    assert sorted(workflows) == sorted(f".github/workflows/{n}" for n in WORKFLOW_FILES)
    assert config["github-actions"]["pinDigests"] is True

    managers = {m["depNameTemplate"]: m for m in config["customManagers"]}
    assert set(managers) == {"Azure/kubelogin", "pyroscope"}
    kubelogin = managers["Azure/kubelogin"]
    assert kubelogin["datasourceTemplate"] == "github-release-attachments"
    found = []
    for name in WORKFLOW_FILES:
        text = (WORKFLOWS / name).read_text()
        for pattern in kubelogin["matchStrings"]:
            found += [(name, m.group("currentValue"), m.group("currentDigest")) for m in re.finditer(js_regex(pattern), text)]
    expected = []
    for name in WORKFLOW_FILES:
        for job in load(name)["jobs"].values():
            for step in steps(job):
                if step.get("name") == "Install kubelogin":
                    expected.append((name, step["env"]["KUBELOGIN_VERSION"], step["env"]["KUBELOGIN_SHA256"]))
    # 4: pr.yml, drift.yml, and deploy-stacks.yml twice (cluster and grafana jobs, 649ccb4)
    assert len(expected) == 4 and sorted(found) == sorted(expected), (found, expected)

    chart = managers["pyroscope"]
    assert chart["datasourceTemplate"] == "helm" and chart["registryUrlTemplate"] == "https://grafana.github.io/helm-charts"
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    matched = [m.group("currentValue") for p in chart["matchStrings"]
               for m in re.finditer(js_regex(p), (ROOT / "Pulumi.yaml").read_text())]
    assert matched == [project["config"]["pyroscopeChartVersion"]["default"]] == ["1.15.0"]
    assert [f for f in files if any(js_pattern(p).search(f) for p in chart["managerFilePatterns"])] == ["Pulumi.yaml"]


def test_the_bot_can_rerun_the_locks_commands():
    """Renovate's pip-compile manager re-runs the command in a lock's header and accepts only some options
    (renovatebot/renovate lib/modules/manager/pip-compile/common.ts, allowedPipOptions: --allow-unsafe,
    --generate-hashes, --no-emit-index-url, --strip-extras, --output-file, ...): the headers use no others."""
    allowed = {"--allow-unsafe", "--generate-hashes", "--strip-extras", "--no-emit-index-url"}
    for lock in ("requirements.lock", "policy/requirements.lock"):
        header = re.search(r"^#    pip-compile (.*)$", (ROOT / lock).read_text(), re.M).group(1).split()
        options = {o for o in header if o.startswith("--") and not o.startswith("--output-file=")}
        assert options <= allowed, (lock, options - allowed)
