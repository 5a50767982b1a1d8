"""Who may sign in as the preview, production and drift identities: the OIDC subject, its federated credentials.

The repository's subject template is :data:`TEMPLATE`, so a job's subject names its environment, its ref and its event:
``repo:<org>/<repo>:environment:production:ref:refs/heads/main:event_name:push``. Production's app (the deployer)
trusts exactly that subject for each of :data:`PRODUCTION_EVENTS`; the drift identity's (read-only) the same on
environment ``drift`` for each of :data:`DRIFT_EVENTS`; the preview's a flexible federated credential per length
of a pull request's number, :func:`preview_expressions` (pull requests' merge refs only). :func:`subject` builds a
job's subject as GitHub does and :func:`trusts` matches it as Entra does. ``python -m ops.federation [--repo
ORG/REPO]`` prints the set-up commands (docs/platform.md, "Identities", shows them for ``<org>/<repo>``);
``--pulumi-policies [--repo-id ID]`` Pulumi Cloud's policies (:func:`pulumi_policies`) as JSON. Sources: GitHub
"OpenID Connect reference" (subject claims, customisation); MicrosoftDocs/entra-docs docs/workload-id/
workload-identities-flexible-federated-identity-credentials.md @ 00ec9f51; docs/decisions/oidc-subjects.md.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Mapping, Optional, Sequence

from cli import OneLineParser, UsageError, exit_code

#: The claim keys of the repository's customised subject, in order (GitHub joins ``key:value`` pairs with ``:``; the
#: ``repo`` and ``context`` keys print as in the default subject).
TEMPLATE = ("repo", "context", "ref", "event_name")
ISSUER = "https://token.actions.githubusercontent.com"
AZURE_AUDIENCE = "api://AzureADTokenExchange"
#: The events deploy.yml runs on, production's only: the write-capable deployer signs in for nothing else.
PRODUCTION_EVENTS = ("push", "workflow_dispatch")
#: The events drift.yml runs on, on environment ``drift``: its identity can read, never write.
DRIFT_EVENTS = ("schedule", "workflow_dispatch")
MAIN = "refs/heads/main"
#: A pull_request job's GITHUB_REF, the ref claim of its token: ``refs/pull/<number>/merge``.
PULL_REQUEST_REFS = "refs/pull/*/merge"
#: The longest pull request number the preview trusts, in digits. A wildcard that may run over any characters would let
#: a job whose environment spells the rest of a trusted subject in (``preview:ref:refs/pull/1/merge:...``, an
#: environment GitHub makes without protection rules when a workflow names it): the number's place is matched by
#: ``?`` wildcards, too few to hold ``:ref:`` and a ref.
PULL_REQUEST_DIGITS = 7
PLACEHOLDER_REPO = "<org>/<repo>"
#: The repository's numeric id (``gh api repos/<org>/<repo> --jq .id``): Pulumi's policies match it exactly, since
#: their values are patterns in which ``.`` matches any character (``acme/my.app`` would match ``acme/my-app``).
PLACEHOLDER_REPO_ID = "<repository-id>"
#: ORG/REPO, or GitHub's immutable form ORG@OWNER_ID/REPO@REPO_ID (the repository's sub_claim_prefix without repo:).
_REPO = re.compile(r"[A-Za-z0-9_.-]+(?:@[0-9]+)?/[A-Za-z0-9_.-]+(?:@[0-9]+)?")


def subject(claims: Mapping[str, str], template: Sequence[str] = TEMPLATE) -> str:
    """The ``sub`` GitHub gives a job with these claims (``repository``, ``environment`` or none, ``ref``,
    ``event_name``): ``repo:`` then the context (``environment:<name>`` for a job on an environment, else
    ``pull_request`` for a pull request event, else ``ref:<ref>``), then ``<key>:<value>`` for the other keys."""
    environment = claims.get("environment")
    if environment:
        context = f"environment:{environment}"
    elif claims.get("event_name", "").startswith("pull_request"):
        context = "pull_request"
    else:
        context = f"ref:{claims['ref']}"
    parts = []
    for key in template:
        if key == "repo":
            parts.append(f"repo:{claims['repository']}")
        elif key == "context":
            parts.append(context)
        else:
            parts.append(f"{key}:{claims[key]}")
    return ":".join(parts)


def main_subjects(environment: str, events: Sequence[str], repo: str = PLACEHOLDER_REPO) -> dict:
    """{event: subject} of a job on ``environment`` running on main, for each of ``events``."""
    return {event: subject({"repository": repo, "environment": environment, "ref": MAIN, "event_name": event})
            for event in events}


def production_subjects(repo: str = PLACEHOLDER_REPO) -> dict:
    """{event: subject} of production's federated credentials: environment production, main, each production event."""
    return main_subjects("production", PRODUCTION_EVENTS, repo)


def drift_subjects(repo: str = PLACEHOLDER_REPO) -> dict:
    """{event: subject} of the drift identity's federated credentials: environment drift, main, each drift event."""
    return main_subjects("drift", DRIFT_EVENTS, repo)


def preview_pattern(repo: str = PLACEHOLDER_REPO, number: str = "*") -> str:
    """The preview's subject for environment preview, a pull request's merge ref with ``number`` in it, event
    pull_request (``*``: the shape written in the docs, ``refs/pull/<n>/merge``)."""
    return subject({"repository": repo, "environment": "preview", "ref": f"refs/pull/{number}/merge",
                    "event_name": "pull_request"})


def preview_patterns(repo: str = PLACEHOLDER_REPO) -> list[str]:
    """What the preview's credentials match, one per length of the number: Entra's ``?`` is exactly one character."""
    return [preview_pattern(repo, "?" * digits) for digits in range(1, PULL_REQUEST_DIGITS + 1)]


def preview_expressions(repo: str = PLACEHOLDER_REPO) -> list[str]:
    """The preview's flexible federated credentials, ``claims['sub'] matches '<pattern>'`` for each of
    :func:`preview_patterns`: a subject matches only with exactly that many characters at the number's place, so only
    a pull_request job on environment ``preview`` (a ref cannot hold ``:``; an environment name that spells more
    than the number is too long for it)."""
    return [f"claims['sub'] matches '{pattern}'" for pattern in preview_patterns(repo)]


def pulumi_preview_pattern(repo: str = PLACEHOLDER_REPO) -> str:
    """The preview's ``sub`` in Pulumi Cloud's policy: Pulumi's ``?`` is zero or one character, so one pattern of
    :data:`PULL_REQUEST_DIGITS` of them matches every number up to that length, and nothing longer."""
    return preview_pattern(repo, "?" * PULL_REQUEST_DIGITS)


def matches(pattern: str, value: str) -> bool:
    """Entra's ``matches``: ``*`` any run of characters (none too), ``?`` exactly one, the rest literal."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.S) is not None


def trusts(value: str, repo: str = PLACEHOLDER_REPO) -> Optional[str]:
    """Which identity signs in a job whose subject is ``value``: ``production``, ``drift``, ``preview`` or None."""
    if value in production_subjects(repo).values():
        return "production"
    if value in drift_subjects(repo).values():
        return "drift"
    if any(matches(pattern, value) for pattern in preview_patterns(repo)):
        return "preview"
    return None


def _json(document: dict) -> str:
    return json.dumps(document, separators=(", ", ": "))


def setup_commands(repo: str = PLACEHOLDER_REPO) -> str:
    """The shell commands that create the three apps' federated credentials for ``repo`` (``$PRODUCTION_APP_ID``,
    ``$DRIFT_APP_ID``, ``$PREVIEW_APP_ID``; a flexible credential exists only in Microsoft Graph beta, on
    applications, and az has no command for it: ``az rest``), then set the subject template and read back what each
    app trusts."""
    # Stop at the first failure, and write the request bodies where no other local user can plant or swap them: a
    # body read from a file someone else made would create a credential of their choosing on the preview app.
    lines = ["#!/usr/bin/env bash", "set -euo pipefail",
             "dir=$(mktemp -d)   # private (0700), removed on exit", "trap 'rm -rf \"$dir\"' EXIT"]
    for app, subjects in (("PRODUCTION", production_subjects(repo)), ("DRIFT", drift_subjects(repo))):
        for event, sub in subjects.items():
            credential = _json({"name": f"github-{app.lower()}-{event.replace('_', '-')}", "issuer": ISSUER,
                                "subject": sub, "audiences": [AZURE_AUDIENCE]})
            lines.append(f"az ad app federated-credential create --id \"${app}_APP_ID\" --parameters '{credential}'")
    graph = "https://graph.microsoft.com/beta/applications/$PREVIEW_APP_OBJECT_ID/federatedIdentityCredentials"
    lines.append("PREVIEW_APP_OBJECT_ID=$(az ad app show --id \"$PREVIEW_APP_ID\" --query id --output tsv)")
    for digits, expression in enumerate(preview_expressions(repo), 1):
        flexible = _json({"name": f"github-preview-pull-requests-{digits}", "issuer": ISSUER,
                          "audiences": [AZURE_AUDIENCE],
                          "claimsMatchingExpression": {"value": expression, "languageVersion": 1}})
        # The expression holds single quotes: the body goes to a file through a quoted here-document.
        lines += [f"cat > \"$dir/preview-credential-{digits}.json\" <<'EOF'", flexible, "EOF",
                  f"az rest --method post --url \"{graph}\" --headers Content-Type=application/json "
                  f"--body @\"$dir/preview-credential-{digits}.json\""]
    # The template last: GitHub issues the new subject from then on, and the credentials above already trust it.
    template = _json({"use_default": False, "include_claim_keys": list(TEMPLATE)})
    lines += [f"echo '{template}' |", f"  gh api -X PUT repos/{repo}/actions/oidc/customization/sub --input -",
              f"gh api repos/{repo}/actions/oidc/customization/sub",
              "az ad app federated-credential list --id \"$PRODUCTION_APP_ID\" --query \"[].subject\"",
              "az ad app federated-credential list --id \"$DRIFT_APP_ID\" --query \"[].subject\"",
              f"az rest --url \"{graph}\" --query \"value[].[name, subject, claimsMatchingExpression.value]\""]
    return "\n".join(lines) + "\n"


#: The main workflows whose jobs sign in to Pulumi Cloud: their environment, events and the variable naming their scope.
PULUMI_JOBS = {
    "deploy-stacks.yml": ("production", PRODUCTION_EVENTS, "PULUMI_PRODUCTION_SCOPE"),  # called by deploy.yml
    "drift.yml": ("drift", DRIFT_EVENTS, "PULUMI_DRIFT_SCOPE"),
}


def pulumi_policies(repo: str = PLACEHOLDER_REPO, repo_id: str = PLACEHOLDER_REPO_ID) -> list:
    """Pulumi Cloud's OIDC policies for ``repo``: one per (workflow, event), as ``{"claims": {claim: value},
    "scope_variable": name}``. Each names the repository's id; main's name the workflow too (``job_workflow_ref``,
    the called workflow for a reusable one), so each team's token goes to its own workflow's jobs alone (the
    deploy's Stack Write, the drift check's Stack Read), whatever other workflow names the same environment."""
    policies = [{"claims": {"sub": pulumi_preview_pattern(repo), "repository_id": repo_id},
                 "scope_variable": "PULUMI_PREVIEW_SCOPE"}]
    names = re.sub(r"@[0-9]+", "", repo)  # job_workflow_ref names the repository, ids or not in the subject
    for workflow, (environment, events, variable) in PULUMI_JOBS.items():
        subjects = main_subjects(environment, events, repo)
        for event in events:
            policies.append({"claims": {"sub": subjects[event], "repository_id": repo_id,
                                        "job_workflow_ref": f"{names}/.github/workflows/{workflow}@{MAIN}"},
                             "scope_variable": variable})
    return policies


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the set-up commands for one repository; 2 on bad input (one line)."""
    parser = OneLineParser(prog="python -m ops.federation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=PLACEHOLDER_REPO,
                        help="ORG/REPO, or ORG@ID/REPO@ID for a repository on immutable subject claims "
                             "(default: the placeholder <org>/<repo>)")
    parser.add_argument("--repo-id", default=PLACEHOLDER_REPO_ID,
                        help="the repository's numeric id, for --pulumi-policies (gh api repos/ORG/REPO --jq .id)")
    parser.add_argument("--pulumi-policies", action="store_true",
                        help="print Pulumi Cloud's OIDC policies as JSON instead of the set-up commands")
    try:
        args = parser.parse_args(argv)
        if args.repo != PLACEHOLDER_REPO and not _REPO.fullmatch(args.repo):
            raise UsageError(f"--repo: expected ORG/REPO or ORG@ID/REPO@ID (letters, digits, '.', '_', '-'), "
                             f"got {args.repo!r}")
        if args.repo_id != PLACEHOLDER_REPO_ID and not args.repo_id.isdigit():
            raise UsageError(f"--repo-id: expected the repository's numeric id, got {args.repo_id!r}")
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.pulumi_policies:
        # One Allow policy each: its rules (claim -> value), and the variable whose team:/user: value names the
        # token type and the team or user it issues.
        policies = [{"decision": "allow", "rules": {"aud": "urn:pulumi:org:<pulumi-organization>", **p["claims"]},
                     "token": p["scope_variable"]} for p in pulumi_policies(args.repo, args.repo_id)]
        print(json.dumps(policies, indent=2))
    else:
        sys.stdout.write(setup_commands(args.repo))
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
