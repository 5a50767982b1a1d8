"""Branch code must not hold production's keys: no job a pull request starts (or a reusable workflow it calls)
reaches a production or drift credential in any spelling; production is deploy-stacks.yml's environment alone and
drift drift.yml's; every job on either is guarded to main and runs only on the events docs/platform.md federates
for it; id-token: write only where a job signs in. SIMULATED: GitHub Actions."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from ops import federation
from tests.support import ROOT
from tests.support.workflows import (
    WORKFLOWS,
    load,
    steps,
    uses,
)

# A pull request's own code (requirements.txt, .ci/*.sh, __main__.py) runs in every job a pull request event
# starts, and in every job of a reusable workflow such a job calls. None of them may reach a production credential.
# These checks are a lint of this repository's files; the boundary itself is in the token: the repository's OIDC
# subject names environment, ref and event (`repo:<org>/<repo>:environment:production:ref:refs/heads/main:event_name:
# push`), the production and drift apps trust only main's subjects for their events (ops/federation.py), and the
# environments' branch policies back them up: a branch can edit its own copy of these workflows.
PR_TRIGGERS = {"pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment"}
# Triggers that run with the base repository's secrets and an id-token for what a pull request made: refused outright.
# pull_request_target runs for the pull request itself; workflow_run runs after a pull request's workflow, on the
# default branch's code, and handing it that run's artifacts or head (the usual reason to use it) runs the pull
# request's code with them (GitHub Docs, "Security hardening for GitHub Actions", workflow_run).
REFUSED_TRIGGERS = {"pull_request_target", "workflow_run"}
# The environments whose credentials trust main alone, each with the events they are federated for, the one list:
# docs/platform.md's subjects and Pulumi policies, and the triggers of every workflow with a job on one, are compared
# with it. Production's identity writes (the deployer); drift's reads only (the drift check).
MAIN_ONLY = {"production": federation.PRODUCTION_EVENTS, "drift": federation.DRIFT_EVENTS}
# The one workflow whose jobs may name each of them. The subject names environment, ref and event, not the workflow:
# any other workflow on main naming `environment: production` would sign in as the deployer.
OWNERS = {"production": "deploy-stacks.yml", "drift": "drift.yml"}
PREVIEW_EVENTS = ("pull_request",)
# Context property names are case-insensitive in GitHub's expressions: compared in lower case.
PRODUCTION_NAMES = {
    "vars": {"azure_client_id": "the production Azure identity vars.AZURE_CLIENT_ID",
             "azure_drift_client_id": "the drift Azure identity vars.AZURE_DRIFT_CLIENT_ID"},
    "secrets": {"pulumi_access_token": "the production Pulumi token secrets.PULUMI_ACCESS_TOKEN"},
}
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
# vars/secrets (not a property of another context): .name, .*, ['name'], a computed index, or the whole object.
CONTEXT = re.compile(r"""(?<![\w.-])(?P<context>vars|secrets)\b\s*(?:\.\s*(?P<dotted>[\w-]+|\*)"""
                     r"""|\[\s*(?:'(?P<single>[^']*)'|"(?P<double>[^"]*)")\s*\]|(?P<index>\[))?""")
MAIN_REF = "github.ref == 'refs/heads/main'"


def guard_step(environment: str = "production") -> dict:
    """The first step of every job on a main-only ``environment``, exactly: it fails unless github.ref is main."""
    return {
        "name": f"Only main may use {environment}",
        "env": {"REF": "${{ github.ref }}"},
        "run": 'if [ "$REF" != refs/heads/main ]; then\n'
               f'  echo "::error::{environment} runs only from main; this run is on \'${{REF}}\' (docs/platform.md, '
               'Identities)"\n'
               "  exit 1\n"
               "fi\n",
    }


GUARD_STEP = guard_step()


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
    """Why the job's environment may be a main-only one (production, drift), or None: the name compared without case
    (GitHub's environment names are case-insensitive), and any name built by an expression counts."""
    name = environment_name(job)
    if name is None:
        return None
    text = str(name)
    if "${{" in text:
        return f"environment {text!r} is an expression (it may name production)"
    return f"environment {text}" if text.strip().lower() in MAIN_ONLY else None


def main_only(job: dict) -> str | None:
    """The main-only environment the job runs on, lower case; production for a name built by an expression (the
    strictest: its guard, its events)."""
    if production_environment(job) is None:
        return None
    name = str(environment_name(job)).strip().lower()
    return name if name in MAIN_ONLY else "production"


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
        for refused in sorted(triggers(document) & REFUSED_TRIGGERS):
            found.append(f"{name}: on {refused} is refused")
        if triggers(document) & PR_TRIGGERS:
            found += workflow_reach(workflows, name, set())
    return found


def test_no_job_that_runs_pull_request_code_can_reach_a_production_credential():
    assert pull_request_reach(all_workflows()) == []


def test_the_reach_check_sees_through_reusable_workflows_and_refuses_pull_request_target():
    """The checker on made-up workflows: a pull request job calling the deploy workflow (with secrets: inherit), or
    naming the production identity, is found; a pull_request_target trigger is refused even with harmless jobs."""
    production = {"on": {"workflow_call": {}}, "jobs": {"up": {"environment": "production",
                                                               "steps": [{"run": "true"}]}}}
    harmless = {"steps": [{"run": "true"}]}
    workflows = {"prod.yml": production,
                 "a.yml": {"on": {"pull_request": {}}, "jobs": {"call": {"uses": "./.github/workflows/prod.yml",
                                                                         "secrets": "inherit"}}},
                 "b.yml": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ vars.AZURE_CLIENT_ID }}"},
                                                                **harmless}}},
                 "c.yml": {"on": {"pull_request_target": {}}, "jobs": {"ok": harmless}},
                 "d.yml": {"on": {"pull_request": {}},
                           "jobs": {"y": {"env": {"C": "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"},
                                         **harmless}}}}
    found = pull_request_reach(workflows)
    assert ("a.yml job call: secrets: inherit to prod.yml" in found
            and "prod.yml job up: environment production" in found)
    assert "b.yml job x: the production Azure identity vars.AZURE_CLIENT_ID" in found
    assert "c.yml: on pull_request_target is refused" in found
    assert not [f for f in found if f.startswith("d.yml")], "the preview identity is not production's"


HARMLESS = {"runs-on": "ubuntu-latest", "steps": [{"run": "true"}]}
PRODUCTION_CALLEE = {"on": {"workflow_call": {}}, "jobs": {"up": {"environment": "production", **HARMLESS}}}
REACHING = {  # each reaches a production credential from a pull request (each spelling an attacker could try)
    "vars index syntax": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ vars['AZURE_CLIENT_ID'] }}"},
                                                               **HARMLESS}}},
    "vars index with double quotes": {"on": "pull_request",
                                      "jobs": {"x": {"env": {"C": '${{ vars["azure_client_id"] }}'}, **HARMLESS}}},
    "vars via format()": {"on": "pull_request",
                          "jobs": {"x": {"env": {"C": "${{ vars[format('AZURE_{0}_ID', 'CLIENT')] }}"}, **HARMLESS}}},
    "all secrets via toJSON": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ toJSON(secrets) }}"},
                                                                    **HARMLESS}}},
    "all vars via tojson in a step": {"on": "pull_request", "jobs": {"x": {**HARMLESS, "steps": [
        {"run": "echo \"$V\"", "env": {"V": "${{ tojson( vars ) }}"}}]}}},
    "secrets.* filter": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ join(secrets.*, ',') }}"},
                                                              **HARMLESS}}},
    "secret name in lower case": {"on": "pull_request",
                                  "jobs": {"x": {"env": {"C": "${{ secrets.pulumi_access_token }}"}, **HARMLESS}}},
    "secret in a with: input": {"on": "pull_request", "jobs": {"x": {**HARMLESS, "steps": [
        {"uses": "some/action@" + "0" * 40, "with": {"token": "${{ SECRETS.Pulumi_Access_Token }}"}}]}}},
    "environment Production": {"on": "pull_request", "jobs": {"x": {"environment": "Production", **HARMLESS}}},
    "environment drift": {"on": "pull_request", "jobs": {"x": {"environment": {"name": "Drift"}, **HARMLESS}}},
    "the drift identity": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ vars.AZURE_DRIFT_CLIENT_ID }}"},
                                                                **HARMLESS}}},
    "environment as expression": {"on": "pull_request", "jobs": {"x": {"environment": "${{ 'produc' }}tion",
                                                                       **HARMLESS}}},
    "environment mapping": {"on": "pull_request",
                            "jobs": {"x": {"environment": {"name": "PRODUCTION", "url": "https://example.com"},
                                           **HARMLESS}}},
    "environment mapping with expression": {"on": "pull_request", "jobs": {"x": {
        "environment": {"name": "${{ github.event.pull_request.title }}"}, **HARMLESS}}},
    "workflow-level env": {"on": "pull_request", "env": {"T": "${{ secrets.PULUMI_ACCESS_TOKEN }}"},
                           "jobs": {"x": HARMLESS}},
    "workflow-level defaults": {"on": "pull_request", "defaults": {"run": {"shell": "${{ vars.AZURE_CLIENT_ID }}"}},
                                "jobs": {"x": HARMLESS}},
    "job if": {"on": "pull_request", "jobs": {"x": {"if": "vars['azure_client_id'] != ''", **HARMLESS}}},
    "pull_request_review trigger": {"on": "pull_request_review", "jobs": {"x": {"environment": "production",
                                                                                **HARMLESS}}},
    "pull_request_review_comment trigger": {"on": {"pull_request_review_comment": {}},
                                            "jobs": {"x": {"environment": "production", **HARMLESS}}},
    "trigger list": {"on": ["push", "pull_request"], "jobs": {"x": {"environment": "production", **HARMLESS}}},
    "calls the production workflow": {"on": "pull_request", "jobs": {"x": {"uses": "./.github/workflows/prod.yml"}}},
    "remote reusable workflow": {"on": "pull_request",
                                 "jobs": {"x": {"uses": "octo-org/deploy/.github/workflows/up.yml@main"}}},
    "workflow_run trigger, harmless jobs": {"on": {"workflow_run": {"workflows": ["pull request checks"],
                                                                    "types": ["completed"]}},
                                            "jobs": {"x": HARMLESS}},
    "workflow_run trigger in a list": {"on": ["push", "workflow_run"], "jobs": {"x": HARMLESS}},
    "remote reusable workflow pinned by sha": {"on": "pull_request", "jobs": {"x": {
        "uses": "octo-org/deploy/.github/workflows/up.yml@" + "a" * 40}}},
}
NOT_REACHING = {
    "the preview identity": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"},
                                                                 **HARMLESS}}},
    "the preview token by index": {"on": "pull_request", "jobs": {"x": {
        "env": {"C": "${{ secrets['PULUMI_PREVIEW_ACCESS_TOKEN'] }}"}, **HARMLESS}}},
    "an output named vars": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ steps.a.outputs.vars }}"},
                                                                  **HARMLESS}}},
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
    from forks too, and workflow_run after one's workflow (REFUSED_TRIGGERS); none of this repository's workflows may
    use them."""
    for name, document in all_workflows().items():
        assert not triggers(document) & REFUSED_TRIGGERS, name


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


def main_only_guard(job: dict, environment: str = "production") -> dict | None:
    """The job's main-only guard: its first step, exactly guard_step(environment) (no if:, no continue-on-error, the
    one script)."""
    first = steps(job)[0] if steps(job) else {}
    return first if first == guard_step(environment) else None


def guarded_by_its_if(job: dict) -> bool:
    return str(job.get("if", "")).strip() in (MAIN_REF, "${{ %s }}" % MAIN_REF)


def test_every_main_only_job_is_guarded_to_main_and_never_runs_for_a_pull_request():
    """environment production or drift only for main: its first step is the guard (guard_step, exactly: it fails
    unless github.ref is refs/heads/main, for workflow_dispatch from another branch, a schedule, and a workflow_call
    whose caller ran elsewhere: github.ref is the caller's), or the job's own if: is exactly the main check (not
    ``... || true``); the job cannot continue on error; no step after the guard runs code or signs in under
    always()/failure()/cancelled(); and the workflow runs only on its environment's events (MAIN_ONLY), through its
    callers too."""
    workflows = all_workflows()
    guarded = 0
    for name, document in workflows.items():
        for job_name, job in document["jobs"].items():
            environment = main_only(job)
            if environment is None:
                continue
            guarded += 1
            where = f"{name} job {job_name}"
            assert main_only_guard(job, environment) is not None or guarded_by_its_if(job), where
            assert "continue-on-error" not in job, where
            for step in steps(job)[1:]:
                if re.search(r"always\(|failure\(|cancelled\(", str(step.get("if", ""))):
                    assert "run" not in step and not step["uses"].startswith(("azure/login@", "pulumi/")), (where, step)
            assert events(workflows, name) <= set(MAIN_ONLY[environment]), (where, events(workflows, name))
            assert not events(workflows, name) & PR_TRIGGERS, where
    assert guarded == 3  # deploy-stacks.yml cluster and grafana (production), drift.yml check (drift)


def environments_out_of_place(workflows: dict[str, dict]) -> list[str]:
    """Each job that names a main-only environment (in any spelling, or by an expression that may) outside its one
    workflow (OWNERS), spelled exactly as there."""
    found = []
    for name, document in workflows.items():
        for job_name, job in document["jobs"].items():
            why = production_environment(job)
            if why is not None and OWNERS.get(str(environment_name(job)).strip()) != name:
                found.append(f"{name} job {job_name}: {why}, the environment of "
                             f"{OWNERS.get(main_only(job) or '', 'no workflow')} alone")
    return found


def test_only_the_deploy_workflow_runs_on_production_and_only_the_drift_check_on_drift():
    """Production's credentials trust main's push and workflow_dispatch on environment production, whatever workflow
    the job is in: one more workflow on main naming production would sign in as the write-capable deployer. So only
    deploy-stacks.yml (called by deploy.yml) names production, and drift.yml alone names drift."""
    assert environments_out_of_place(all_workflows()) == []


OUT_OF_PLACE = {
    "a new workflow on production": ("report.yml", {"on": {"workflow_dispatch": {}},
                                                    "jobs": {"x": {"environment": "production", **HARMLESS}}}),
    "the drift check on production": ("drift.yml", {"on": {"schedule": [{"cron": "0 0 * * *"}]},
                                                    "jobs": {"check": {"environment": "production", **HARMLESS}}}),
    "production spelled otherwise": ("deploy-stacks.yml", {"on": {"workflow_call": {}},
                                                           "jobs": {"x": {"environment": {"name": "Production"},
                                                                          **HARMLESS}}}),
    "an expression": ("report.yml", {"on": "push", "jobs": {"x": {"environment": "${{ inputs.where }}",
                                                                  **HARMLESS}}}),
    "the deploy on drift": ("deploy-stacks.yml", {"on": {"workflow_call": {}},
                                                  "jobs": {"x": {"environment": "drift", **HARMLESS}}}),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_PLACE))
def test_the_environment_check_finds_a_main_only_environment_out_of_place(case):
    name, document = OUT_OF_PLACE[case]
    in_place = {"deploy-stacks.yml": {"on": {"workflow_call": {}}, "jobs": {"up": {"environment": "production",
                                                                                   **HARMLESS}}},
                "drift.yml": {"on": "schedule", "jobs": {"check": {"environment": "drift", **HARMLESS}}}}
    assert environments_out_of_place(in_place) == []
    assert environments_out_of_place({**in_place, name: document}), f"{case}: not caught"


@pytest.mark.parametrize("job,passes", [
    ({"if": MAIN_REF, **HARMLESS}, True),
    ({"if": "${{ %s }}" % MAIN_REF, **HARMLESS}, True),
    ({"if": MAIN_REF + " || true", **HARMLESS}, False),
    ({"if": "always() || " + MAIN_REF, **HARMLESS}, False),
    ({"steps": [GUARD_STEP, {"run": "true"}]}, True),
    ({"steps": [{**GUARD_STEP, "continue-on-error": True}]}, False),
    ({"steps": [{**GUARD_STEP, "if": "false"}]}, False),
    ({"steps": [{**GUARD_STEP, "run": GUARD_STEP["run"] + "true\n"}]}, False),
    ({"steps": [{"run": "true"}, GUARD_STEP]}, False),
    ({"steps": [guard_step("drift"), {"run": "true"}]}, False),  # the drift job's guard on a production job
])
def test_the_guard_check_wants_the_exact_main_check(job, passes):
    assert (main_only_guard(job) is not None or guarded_by_its_if(job)) is passes


@pytest.mark.parametrize("environment", sorted(MAIN_ONLY))
@pytest.mark.parametrize("ref,passes", [("refs/heads/main", True), ("refs/heads/feature", False),
                                        ("refs/pull/7/merge", False), ("refs/tags/v1", False), ("", False)])
def test_the_main_only_guard_step_fails_off_main(tmp_path, environment, ref, passes):
    """The guard step's script, run as the runner would (bash -e), with the ref GitHub would give it."""
    workflows = all_workflows()
    guards = [main_only_guard(job, environment) for document in workflows.values()
              for job in document["jobs"].values() if main_only(job) == environment]
    assert guards and all(guards)
    done = subprocess.run(["bash", "-e", "-c", guard_step(environment)["run"]],
                          env={"PATH": os.environ["PATH"], "REF": ref}, capture_output=True, text=True, timeout=30)
    assert (done.returncode == 0) is passes, (ref, done.stdout, done.stderr)
    if not passes:
        assert environment in done.stdout + done.stderr and "main" in done.stdout + done.stderr


PLATFORM = ROOT / "docs" / "platform.md"


def test_production_is_federated_only_for_main_and_the_events_of_its_workflows():
    """docs/platform.md's federated credentials are ops.federation's: production's and drift's subjects are main's,
    one per event of MAIN_ONLY (never pull_request*), the preview's flexible credentials; and every job on production
    or drift runs only on its events (through its callers too), every job on preview only on pull_request."""
    text = PLATFORM.read_text(encoding="utf-8")
    subjects = re.findall(r'"subject": "([^"]+)"', text)
    assert sorted(subjects) == sorted([*federation.production_subjects().values(),
                                       *federation.drift_subjects().values()]), subjects
    assert all(":ref:refs/heads/main:" in sub and not sub.endswith(tuple(PR_TRIGGERS)) for sub in subjects)
    expressions = federation.preview_expressions()
    assert text.count('"claimsMatchingExpression"') == len(expressions) == federation.PULL_REQUEST_DIGITS
    assert all(expression in text for expression in expressions)
    workflows = all_workflows()
    for name, document in workflows.items():
        for job in document["jobs"].values():
            if is_production(job):
                assert events(workflows, name) <= set(MAIN_ONLY[main_only(job)]), name
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
    assert ("access_token:team" in cloud["requested-token-type"]
            and "access_token:personal" in cloud["requested-token-type"])
    assert cloud["scope"] == "${{ vars.PULUMI_PREVIEW_SCOPE }}"
    assert re.findall(r"secrets\.(\w+)", yaml.safe_dump(preview)) == []
    assert preview["permissions"] == {"contents": "read", "id-token": "write"}, "the preview comment job posts"


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
            assert environment_name(job) in {"preview", *MAIN_ONLY}, (name, job_name)
            assert any(s.get("uses", "").startswith(("azure/login@", "pulumi/auth-actions@")) for s in steps(job)), (
                name, job_name)
