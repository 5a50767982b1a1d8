"""ops/federation.py: the OIDC subject as GitHub builds it, matched as Entra matches it, against docs/platform.md's
commands: main's production jobs and pull requests' previews sign in; a branch's own job does not, whatever
environment its workflow names. SIMULATED: GitHub's token service and Entra ID (the rules of their documentation)."""

from __future__ import annotations

import json
import re

import pytest

from ops import federation as fed
from tests.support import ROOT
from tests.support.workflows import load

PLATFORM = ROOT / "docs" / "platform.md"
REPO = "acme/aks-gpu-observability"


def documented_template() -> list:
    """The claim keys docs/platform.md's customisation command sets (the one template the repository uses)."""
    bodies = re.findall(r"echo '(\{[^']*\})' \|\s*gh api -X PUT repos/<org>/<repo>/actions/oidc/customization/sub",
                        PLATFORM.read_text(encoding="utf-8"))
    assert len(bodies) == 1, bodies
    return json.loads(bodies[0])["include_claim_keys"]


def documented_production_subjects() -> set:
    text = PLATFORM.read_text(encoding="utf-8")
    return {sub for sub in re.findall(r'"subject": "([^"]+)"', text) if ":environment:production:" in sub}


def job(environment, ref, event, repo="<org>/<repo>"):
    return {"repository": repo, "environment": environment, "ref": ref, "event_name": event}


def test_subject_follows_githubs_documented_example():
    """GitHub's example: the template ["repo", "context", "job_workflow_ref"] gives
    repo:ORG/REPO:environment:NAME:job_workflow_ref:...; without an environment the context is the ref, or
    pull_request for a pull request event."""
    claims = {**job("prod", "refs/heads/main", "push", "octo-org/octo-repo"),
              "job_workflow_ref": "octo-org/octo-automation/.github/workflows/oidc.yml@refs/heads/main"}
    assert fed.subject(claims, ["repo", "context", "job_workflow_ref"]) == (
        "repo:octo-org/octo-repo:environment:prod:job_workflow_ref:"
        "octo-org/octo-automation/.github/workflows/oidc.yml@refs/heads/main")
    assert fed.subject(job(None, "refs/heads/main", "push", "o/r"), ["repo", "context"]) == (
        "repo:o/r:ref:refs/heads/main")
    assert fed.subject(job(None, "refs/pull/3/merge", "pull_request", "o/r"), ["repo", "context"]) == (
        "repo:o/r:pull_request")


def test_the_documented_template_keeps_a_branch_out_of_production():
    """A same-repository branch's own `on: push` job naming environment production: with docs/platform.md's
    template its subject differs from main's, so no production credential trusts it (with the old
    ["repo", "context", "event_name"] it was main's subject exactly)."""
    template = documented_template()
    assert template == list(fed.TEMPLATE)
    main = fed.subject(job("production", fed.MAIN, "push"), template)
    branch = fed.subject(job("production", "refs/heads/evil", "push"), template)
    assert main != branch
    trusted = documented_production_subjects()
    assert main in trusted and branch not in trusted


@pytest.mark.parametrize("claims,identity", [
    (job("production", fed.MAIN, "push"), "production"),
    (job("production", fed.MAIN, "workflow_dispatch"), "production"),
    (job("drift", fed.MAIN, "schedule"), "drift"),
    (job("drift", fed.MAIN, "workflow_dispatch"), "drift"),
    (job("preview", "refs/pull/7/merge", "pull_request"), "preview"),
    (job("preview", "refs/pull/12345/merge", "pull_request"), "preview"),
    # A branch's own jobs, on either environment, by any event.
    (job("production", "refs/heads/evil", "push"), None),
    (job("production", "refs/heads/evil", "workflow_dispatch"), None),
    (job("production", "refs/heads/main-evil", "push"), None),
    (job("preview", "refs/heads/evil", "push"), None),
    (job("preview", "refs/heads/pull/7/merge", "push"), None),
    (job("drift", "refs/heads/evil", "schedule"), None),
    (job("drift", "refs/heads/evil", "workflow_dispatch"), None),
    # The schedule is the drift check's: a scheduled job on production gets nothing, and the drift identity is not
    # federated for a push (deploy.yml's event).
    (job("production", fed.MAIN, "schedule"), None),
    (job("drift", fed.MAIN, "push"), None),
    (job("drift", "refs/pull/7/merge", "pull_request"), None),
    # A pull request on production, a tag, another repository, a job without an environment.
    (job("production", "refs/pull/7/merge", "pull_request"), None),
    (job("production", "refs/tags/v1", "push"), None),
    (job("production", fed.MAIN, "push", "evil/aks-gpu-observability"), None),
    (job("preview", "refs/pull/7/merge", "pull_request_target"), None),
    (job(None, fed.MAIN, "push"), None),
    # Events production is not federated for, on main itself: a workflow_run (it runs on the default branch for
    # another workflow's run, a pull request's too) and a pull_request_target.
    (job("production", fed.MAIN, "workflow_run"), None),
    (job("production", fed.MAIN, "pull_request_target"), None),
    (job("preview", "refs/pull/7/merge", "workflow_run"), None),
    # An environment name that tries to spell a trusted subject still ends in its own ref and event, on every event.
    *[(job(name, ref, event), None)
      for event in ("push", "workflow_dispatch", "schedule", "pull_request", "pull_request_target", "workflow_run")
      for ref in ("refs/heads/evil", "refs/pull/3/merge")
      for name in ("preview:ref:refs/pull/1/merge:event_name:pull_request",
                   "production:ref:refs/heads/main:event_name:push",
                   f"production:ref:refs/heads/main:event_name:{event}",
                   f"drift:ref:refs/heads/main:event_name:{event}")],
])
def test_only_mains_deploy_and_drift_jobs_and_pull_request_previews_sign_in(claims, identity):
    assert fed.trusts(fed.subject(claims)) == identity


def triggers(name: str) -> set:
    on = load(name)["on"]
    return set(on) if isinstance(on, dict) else {on}


@pytest.mark.parametrize("workflow,environment,events", [("deploy.yml", "production", "PRODUCTION_EVENTS"),
                                                         ("drift.yml", "drift", "DRIFT_EVENTS")])
def test_each_main_workflow_signs_in_on_its_own_events_as_its_own_identity(workflow, environment, events):
    """deploy.yml's triggers are production's events and drift.yml's the drift identity's: each event of each gets
    its own identity's subject, and no other."""
    events = getattr(fed, events)
    assert triggers(workflow) == set(events)
    for event in events:
        assert fed.trusts(fed.subject(job(environment, fed.MAIN, event))) == environment


def test_production_trusts_no_schedule_and_no_drift_subject():
    """Production's app is federated for the deploy's events alone: the daily schedule is the drift check's, on
    environment drift, and no drift subject (nor any event of it) is one of production's, in the generator or in
    docs/platform.md."""
    production = set(fed.production_subjects().values())
    assert fed.PRODUCTION_EVENTS == ("push", "workflow_dispatch")
    assert not any(sub.endswith(":event_name:schedule") for sub in production)
    drift = set(fed.drift_subjects().values())
    assert drift and not drift & production
    assert all(":environment:drift:ref:refs/heads/main:event_name:" in sub for sub in drift)
    assert documented_production_subjects() == production


@pytest.mark.parametrize("pattern,value,expected", [
    ("a*c", "ac", True), ("a*c", "abxc", True), ("a?c", "abc", True), ("a?c", "ac", False),
    ("a.c", "abc", False), ("a.c", "a.c", True), ("refs/pull/*/merge", "refs/pull/1/merge", True),
    ("x", "xy", False),
])
def test_matches_is_entras_wildcard(pattern, value, expected):
    """Entra's `matches`: `*` any run of characters, `?` one; everything else literal, `.` too."""
    assert fed.matches(pattern, value) is expected


def test_docs_show_the_generators_set_up_commands():
    """docs/platform.md's block is `python -m ops.federation` for <org>/<repo>, verbatim."""
    assert f"```sh\n{fed.setup_commands()}```" in PLATFORM.read_text(encoding="utf-8")


def test_the_preview_credentials_are_valid_flexible_expressions_one_per_length_of_the_number():
    """claims['sub'] matches '<pattern>' with languageVersion 1, and no subject beside it (mutually exclusive); the
    number's place is `?` wildcards, 1 to PULL_REQUEST_DIGITS of them."""
    commands = fed.setup_commands(REPO)
    for digits in range(1, fed.PULL_REQUEST_DIGITS + 1):
        body = commands.split(f"cat > \"$dir/preview-credential-{digits}.json\" <<'EOF'\n", 1)[1].split(
            "\nEOF\n", 1)[0]
        credential = json.loads(body)
        pattern = f"repo:{REPO}:environment:preview:ref:refs/pull/{'?' * digits}/merge:event_name:pull_request"
        assert "subject" not in credential and credential["claimsMatchingExpression"] == {
            "value": f"claims['sub'] matches '{pattern}'", "languageVersion": 1}
        assert credential["issuer"] == fed.ISSUER and credential["audiences"] == [fed.AZURE_AUDIENCE]
        assert credential["name"] == f"github-preview-pull-requests-{digits}"
        assert f"--body @\"$dir/preview-credential-{digits}.json\"" in commands
    assert "preview-credential-8.json" not in commands


@pytest.mark.parametrize("number", ["1", "42", "9999999"])
def test_every_pull_request_number_up_to_seven_digits_signs_in_as_the_preview(number):
    assert fed.trusts(fed.subject(job("preview", f"refs/pull/{number}/merge", "pull_request"))) == "preview"
    pulumi = fed.pulumi_policies()[0]["claims"]["sub"]
    assert pulumi == fed.pulumi_preview_pattern() and "*" not in pulumi


def test_pulumi_policies_name_each_workflow_and_are_in_the_docs():
    """One policy per (workflow, event): the drift check and the deploy share the workflow_dispatch subject, so
    production's policies also name job_workflow_ref; each line is in docs/platform.md."""
    text = PLATFORM.read_text(encoding="utf-8")
    policies = fed.pulumi_policies()
    assert {p["scope_variable"] for p in policies} == {"PULUMI_PREVIEW_SCOPE", "PULUMI_PRODUCTION_SCOPE",
                                                       "PULUMI_DRIFT_SCOPE"}
    for policy in policies:
        line = ", ".join(f"`{claim}` `{value}`" for claim, value in policy["claims"].items())
        assert line in text, line
        ref = policy["claims"].get("job_workflow_ref")
        if ref:
            workflow = ref.split("/.github/workflows/", 1)[1].split("@", 1)[0]
            assert (ROOT / ".github" / "workflows" / workflow).exists(), workflow
            assert f"vars.{policy['scope_variable']}" in (ROOT / ".github" / "workflows" / workflow).read_text()


def set_up_steps() -> list:
    """docs/platform.md's "Set-up, in order": (number, text) of each step."""
    text = PLATFORM.read_text(encoding="utf-8").split("**Set-up, in order**", 1)[1].split("\n\n| |", 1)[0]
    return [(int(number), body) for number, body in re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", text, re.M | re.S)]


def test_the_set_up_list_is_in_order_and_sets_up_the_drift_identity_before_switching_it_on():
    """Numbered 1..n; the three apps first, then each one's roles (the drift identity's by --drift), the three apps'
    credentials, the environments (drift's branch policy too), and last the variables that switch the deploy and the
    drift check on."""
    steps = set_up_steps()
    assert [number for number, _ in steps] == list(range(1, len(steps) + 1))

    def step(marker: str) -> int:
        found = [number for number, body in steps if marker in body]
        assert len(found) == 1, (marker, found)
        return found[0]

    credentials = step("federated credentials of the three apps")
    assert step("Create the three apps") < step("--drift --stack <stack>") < credentials
    assert step("--deployer-object-id \"$(az ad sp show --id \"$PRODUCTION_APP_ID\"") < step("--drift --stack <stack>")
    assert credentials < step("`drift`'s branch policies") < step("gh variable set AZURE_DRIFT_CLIENT_ID")
    variables = steps[-1][1]
    assert variables.index("AZURE_DRIFT_CLIENT_ID --body") < variables.index("gh variable set AZURE_CLIENT_ID")
    assert "github-production-schedule" in dict(steps)[credentials]


def test_bad_repo_is_one_line(capsys):
    assert fed.main(["--repo", "not a repo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --repo: expected ORG/REPO")


SUBJECT_TEXT = re.compile(r"repo:<org>/<repo>:environment:(?P<environment>[\w<>-]+)"
                          r"(?P<rest>(?:[^\s`\"')|<]|<[\w|]+>)*)")


def written_subjects():
    """(file, subject) for every subject the docs, the README and the workflows write out."""
    files = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", *sorted((ROOT / ".github" / "workflows").glob(
        "*.yml"))]
    for path in files:
        for match in SUBJECT_TEXT.finditer(path.read_text(encoding="utf-8")):
            yield path.relative_to(ROOT), match


def test_every_subject_the_docs_and_workflows_write_is_one_the_generator_makes():
    """No stale subject anywhere: each production, drift or preview subject written out is a generated one, or its
    prefix up to `event_name:`, or lists generated events as `<a|b>`; a pull request's number may read `<n>`."""
    made = {*fed.production_subjects().values(), *fed.drift_subjects().values(), fed.preview_pattern(),
            *fed.preview_patterns(), fed.pulumi_preview_pattern()}
    checked = 0
    for where, match in written_subjects():
        text = match.group(0).replace("refs/pull/<n>/merge", fed.PULL_REQUEST_REFS)
        if match["environment"] not in ("production", "preview", "drift"):
            assert ":event_name:" not in text or ":ref:" in text, (where, text)
            continue
        checked += 1
        alternatives = re.fullmatch(r"(.*:event_name:)<([\w|]+)>", text)
        if alternatives:
            candidates = [alternatives[1] + event for event in alternatives[2].split("|")]
        else:
            candidates = [text]
        for candidate in candidates:
            assert candidate in made or (candidate.endswith("event_name:") and any(
                sub.startswith(candidate) for sub in made)), (str(where), candidate)
    assert checked >= 10


def test_pulumi_policies_print_as_json_with_the_repository_id(capsys):
    """--pulumi-policies: one Allow policy per (workflow, event), each with the audience and the repository's numeric
    id, which Pulumi matches exactly (its `.` wildcard would let acme/my-app pass for acme/my.app)."""
    assert fed.main(["--pulumi-policies", "--repo", "acme/my.app", "--repo-id", "4242"]) == 0
    policies = json.loads(capsys.readouterr().out)
    assert len(policies) == 1 + sum(len(events) for _, events, _ in fed.PULUMI_JOBS.values())
    for policy in policies:
        assert policy["decision"] == "allow" and policy["rules"]["repository_id"] == "4242"
        assert policy["rules"]["aud"] == "urn:pulumi:org:<pulumi-organization>"
        assert policy["rules"]["sub"].startswith("repo:acme/my.app:environment:")
    assert fed.main(["--pulumi-policies", "--repo-id", "R_kgDO"]) == 2
    assert capsys.readouterr().err.startswith("error: --repo-id: expected the repository's numeric id")


def test_a_repository_on_immutable_subject_claims_gets_its_ids_in_the_subject(capsys):
    """GitHub's immutable subjects (repositories created, renamed or transferred after 2026-07-15) read
    repo:ORG@ID/REPO@ID:...; --repo takes that prefix, and job_workflow_ref keeps the names."""
    repo = "acme@277133432/app@1316584243"
    assert fed.production_subjects(repo)["push"] == (
        "repo:acme@277133432/app@1316584243:environment:production:ref:refs/heads/main:event_name:push")
    assert fed.main(["--repo", repo]) == 0 and "repo:acme@277133432/app@1316584243:environment:" in (
        capsys.readouterr().out)
    refs = {p["claims"].get("job_workflow_ref") for p in fed.pulumi_policies(repo)} - {None}
    assert refs == {"acme/app/.github/workflows/deploy-stacks.yml@refs/heads/main",
                    "acme/app/.github/workflows/drift.yml@refs/heads/main"}


FAKE_CLI = """#!/usr/bin/env bash
# Records each call; an `az rest --body @file` call records the file's bytes too. FAIL_AT=<n>: the n-th call fails.
n=$(( $(wc -l < "$CALLS" 2>/dev/null || echo 0) + 1 ))
printf '%s %s\\n' "$(basename "$0")" "$*" >> "$CALLS"
prev=""
for arg in "$@"; do
  if [ "$prev" = "--body" ]; then cat "${arg#@}" >> "$BODIES"; printf '\\n' >> "$BODIES"; fi
  prev=$arg
done
[ "${FAIL_AT:-0}" = "$n" ] && { echo "fails on purpose" >&2; exit 1; }
case "$*" in *"ad app show"*) echo 11111111-2222-3333-4444-555555555555 ;; esac
exit 0
"""


def _run_set_up(tmp_path, fail_at: int = 0):
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("az", "gh"):
        (bin_dir / name).write_text(FAKE_CLI)
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "federation.sh"
    script.write_text(fed.setup_commands(REPO))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(tmp_path / "calls"), "BODIES": str(tmp_path / "bodies"),
           "FAIL_AT": str(fail_at), "TMPDIR": str(tmp_path), "PRODUCTION_APP_ID": "p", "DRIFT_APP_ID": "d",
           "PREVIEW_APP_ID": "v", "HOME": str(tmp_path)}
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    return done, calls, os.listdir(tmp_path)


def test_a_credential_body_planted_where_set_up_writes_is_never_sent(tmp_path):
    """The set-up once wrote each flexible credential's body to ``preview-credential-<n>.json`` in the working
    directory and sent that file, with no ``set -e``: a file or symlink another user made there first (a shared
    directory) became a credential of their choosing on the preview app. Now the bodies go through a private
    ``mktemp -d`` directory, removed on exit, and a planted file is neither read nor touched."""
    planted = '{"name": "evil", "subject": "repo:evil/evil:ref:refs/heads/main"}'
    (tmp_path / "preview-credential-1.json").write_text(planted)
    (tmp_path / "preview-credential-2.json").symlink_to(tmp_path / "preview-credential-1.json")
    done, calls, left = _run_set_up(tmp_path)
    assert done.returncode == 0, done.stderr
    sent = [json.loads(line) for line in (tmp_path / "bodies").read_text().splitlines() if line]
    assert [b["name"] for b in sent] == [f"github-preview-pull-requests-{n}"
                                         for n in range(1, fed.PULL_REQUEST_DIGITS + 1)]
    assert (tmp_path / "preview-credential-1.json").read_text() == planted
    assert not [name for name in left if name.startswith("tmp.")], "the private directory is removed on exit"


def test_a_failing_call_stops_the_set_up_there(tmp_path):
    """A credential that could not be created must not be followed by the subject template, which switches GitHub to
    subjects the missing credential would have trusted: the script stops at the first failing call."""
    done, calls, _ = _run_set_up(tmp_path, fail_at=2)
    assert done.returncode != 0 and len(calls) == 2
    assert not any("customization/sub" in call for call in calls)
