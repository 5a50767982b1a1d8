"""The repository settings production's trust rests on, set and read back by set-up step 1 (docs/platform.md).

Whoever lands code on `main` deploys with the production identity. ``python -m ops.repository [--repo ORG/REPO]``
prints a ``set -euo pipefail`` bash script of ``gh api`` calls, run from the repository's root by an admin: the
GITHUB_TOKEN reads by default and no workflow may approve a pull request; a fork's pull request gets no write token
and no secrets and runs once a writer approves (private/internal), or every outside contributor's run needs approval
(public); :func:`main_ruleset` on `main`, created or updated in place; then .github/CODEOWNERS on `main`. After each
change it reads GitHub's answer back (``--check NAME`` on stdin) and stops, in one line naming the setting and the
value found, when it differs. ``--code-owners OWNER...`` prints the CODEOWNERS file for people or teams (never a bot
or an app). Exit 0; 1 when a read-back differs; 2 on bad input (one line). docs/decisions/repository-settings.md.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Callable, Optional, Sequence

from cli import OneLineParser, UsageError, exit_code
from ops.federation import MAIN, PLACEHOLDER_REPO

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")

RULESET_NAME = "main: reviewed pull requests only"

#: PUT/GET repos/{repo}/actions/permissions/workflow: jobs get a read-only GITHUB_TOKEN unless they ask for more, and
#: no workflow may create or approve a pull request (its review would come from github-actions[bot], who is never the
#: last pusher, and so meet `require_last_push_approval`).
WORKFLOW_PERMISSIONS = {"default_workflow_permissions": "read", "can_approve_pull_request_reviews": False}

#: PUT/GET repos/{repo}/actions/permissions/fork-pr-workflows-private-repos (private and internal repositories): a
#: fork's pull request runs the tests once a writer approves it, with a read-only token (so no `id-token: write`, no
#: preview identity) and without the repository's secrets and variables.
PRIVATE_FORK_PULL_REQUESTS = {"run_workflows_from_fork_pull_requests": True, "send_write_tokens_to_workflows": False,
                              "send_secrets_and_variables": False, "require_approval_for_fork_pr_workflows": True}

#: PUT/GET repos/{repo}/actions/permissions/fork-pr-contributor-approval (public repositories, whose fork pull requests
#: always get a read-only token and no secrets): every outside contributor's run waits for a writer's approval.
PUBLIC_FORK_APPROVAL = {"approval_policy": "all_external_contributors"}

CODEOWNERS = ".github/CODEOWNERS"
PLACEHOLDER_CODE_OWNER = "@<org>/<team>"
#: Paths whose last matching CODEOWNERS line must name owners: any file, the workflows, CODEOWNERS itself (a change to
#: it is a change of who reviews) and the stacks the deploy runs.
OWNED_PATHS = ("README.md", ".github/CODEOWNERS", ".github/workflows/deploy.yml", "deploy/stacks.json")

_OWNER = re.compile(r"@(?P<login>[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38})(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?")
#: GitHub's own automation accounts: an approval in their name is a workflow's or an integration's, not a person's.
_BOT_LOGINS = {"github-actions", "dependabot", "copilot", "apps"}


def main_ruleset() -> dict:
    """The ruleset's body: active on ``refs/heads/main``, no bypass actors, and the three rules."""
    return {
        "name": RULESET_NAME,
        "target": "branch",
        "enforcement": "active",
        "bypass_actors": [],
        "conditions": {"ref_name": {"include": [MAIN], "exclude": []}},
        "rules": [
            {"type": "deletion"},
            {"type": "non_fast_forward"},
            {"type": "pull_request", "parameters": {
                "required_approving_review_count": 1,
                "dismiss_stale_reviews_on_push": True,
                "require_code_owner_review": True,
                "require_last_push_approval": True,
                "required_review_thread_resolution": False,
            }},
        ],
    }


# --- CODEOWNERS -----------------------------------------------------------------------------------------------------


def owner_problem(owner: str) -> Optional[str]:
    """Why ``owner`` cannot be a code owner here, or None: a person (``@user``) or a team (``@org/team``) only."""
    if owner == PLACEHOLDER_CODE_OWNER:
        return (f"{owner} is the placeholder: generate the file for your people or teams with "
                f"python3 -m ops.repository --code-owners @ORG/TEAM > {CODEOWNERS} and commit it to main")
    login = owner[1:].split("/", 1)[0].lower() if owner.startswith("@") else ""
    if owner.lower().endswith("[bot]") or login in _BOT_LOGINS:
        return f"{owner} is a bot or an app: expected a person (@user) or a team (@org/team) with write access"
    if not _OWNER.fullmatch(owner):
        return f"{owner!r}: expected @user or @org/team (a person or a team with write access)"
    return None


def codeowners_file(owners: Sequence[str]) -> str:
    """.github/CODEOWNERS giving every file, then .github/ and deploy/ (last, so no later line takes them), to
    ``owners``."""
    names = " ".join(owners)
    return ("# Who must approve a change to main (set-up step 1, docs/platform.md): people or teams with write\n"
            "# access, never a bot or an app. main's ruleset requires a code owner's approval. Generated by\n"
            "#   python3 -m ops.repository --code-owners OWNER... > .github/CODEOWNERS\n"
            "# The last matching line decides: the workflows, this file and the deployed stacks stay last.\n"
            f"* {names}\n"
            f"/.github/ {names}\n"
            f"/deploy/ {names}\n")


def _pattern(pattern: str) -> re.Pattern:
    """A CODEOWNERS pattern as a regex over a repository path (gitignore's rules: a pattern with a slash before its
    end is anchored at the root, one ending in ``/`` matches directories, ``*`` stays within a directory, ``**``
    crosses them); a match on a directory covers all under it."""
    directory = pattern.endswith("/")
    core = pattern.strip("/")
    anchored = pattern.startswith("/") or "/" in core
    parts = []
    for piece in re.split(r"(\*\*/|/\*\*|\*\*|\*|\?)", core):
        parts.append({"**/": "(?:.*/)?", "/**": "/.*", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(piece)
                     or re.escape(piece))
    body = "".join(parts)
    return re.compile(("^" if anchored else "^(?:.*/)?") + body + ("/.*$" if directory else "(?:/.*)?$"))


def codeowners_problem(text: str) -> Optional[str]:
    """Why ``text`` leaves main open to a review by anyone, or None: an owner that is not a person or a team, a line
    GitHub does not read as written, or a path of :data:`OWNED_PATHS` whose last matching line names no owner."""
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if fields[0].startswith("!") or "[" in fields[0] or "\\" in fields[0]:
            return f"line {number}: {fields[0]!r}: CODEOWNERS has no '!' negation, '[ ]' range or '\\' escape"
        for owner in fields[1:]:
            problem = owner_problem(owner)
            if problem:
                return f"line {number}: {problem}"
        rules.append((_pattern(fields[0]), fields[1:]))
    for path in OWNED_PATHS:
        owners = next((owners for pattern, owners in reversed(rules) if pattern.match(path)), [])
        if not owners:
            return (f"{path} has no code owner: expected '*', '/.github/' and '/deploy/' owned by people or teams "
                    f"(python3 -m ops.repository --code-owners @ORG/TEAM)")
    return None


# --- read-backs: GitHub's answer on stdin ---------------------------------------------------------------------------


class Differs(Exception):
    """The answer is not the setting set-up asked for; ``str(error)`` is the one line to print."""


def _value(value) -> str:
    return json.dumps(value)


def _expect(answer: dict, expected: dict, why: str = "") -> None:
    for key, value in expected.items():
        found = answer.get(key)
        if type(found) is not type(value) or found != value:   # JSON's 0 is not false
            found = _value(answer[key]) if key in answer else "missing"
            raise Differs(f"{key} is {found}, expected {_value(value)}{why}")


def _workflow_permissions(answer) -> str:
    _expect(answer, {"can_approve_pull_request_reviews": False}, " (a workflow could approve its own pull request)")
    _expect(answer, {"default_workflow_permissions": "read"})
    return ""


def _private_forks(answer) -> str:
    if answer.get("run_workflows_from_fork_pull_requests") is False:
        return ""   # no fork pull request runs at all: stricter than asked
    _expect(answer, {key: value for key, value in PRIVATE_FORK_PULL_REQUESTS.items()
                     if key != "run_workflows_from_fork_pull_requests"})
    return ""


def _public_forks(answer) -> str:
    _expect(answer, PUBLIC_FORK_APPROVAL)
    return ""


def _visibility(answer) -> str:
    if answer.get("visibility") not in ("public", "private", "internal"):
        raise Differs(f"visibility is {_value(answer.get('visibility'))}, expected public, private or internal")
    return answer["visibility"] + "\n"


def _ruleset_id(answer) -> str:
    ids = [str(r.get("id")) for r in answer
           if r.get("name") == RULESET_NAME and r.get("source_type", "Repository") == "Repository"]
    if len(ids) > 1:
        raise Differs(f"rulesets {', '.join(ids)} are all named {RULESET_NAME!r}: delete all but one")
    return "".join(f"{i}\n" for i in ids)


def _branch_rules(answer) -> str:
    """Rules on one branch add up and the strictest applies, so each requirement may come from any pull request
    rule, the repository's or the organization's."""
    types = {rule.get("type") for rule in answer}
    for needed in ("deletion", "non_fast_forward", "pull_request"):
        if needed not in types:
            raise Differs(f"no {needed} rule applies to main")
    reviews = [rule.get("parameters") or {} for rule in answer if rule.get("type") == "pull_request"]
    if not any((r.get("required_approving_review_count") or 0) >= 1 for r in reviews):
        raise Differs("required_approving_review_count is 0, expected at least 1")
    for key in ("require_code_owner_review", "require_last_push_approval", "dismiss_stale_reviews_on_push"):
        if not any(r.get(key) is True for r in reviews):
            raise Differs(f"{key} is false, expected true")
    return ""


def _codeowners_errors(answer) -> str:
    errors = answer.get("errors") or []
    if errors:
        first = errors[0]
        raise Differs(f"{first.get('path', CODEOWNERS)} line {first.get('line')}: {first.get('kind')} "
                      f"({(first.get('message') or '').strip()})")
    return ""


#: name: (what the one line names, how the answer is read, whether it is JSON)
CHECKS: dict[str, tuple[str, Optional[Callable], bool]] = {
    "workflow-permissions": ("actions/permissions/workflow", _workflow_permissions, True),
    "fork-pr-workflows-private-repos": ("actions/permissions/fork-pr-workflows-private-repos", _private_forks, True),
    "fork-pr-contributor-approval": ("actions/permissions/fork-pr-contributor-approval", _public_forks, True),
    "visibility": ("the repository", _visibility, True),
    "ruleset-id": ("rulesets", _ruleset_id, True),
    "branch-rules": ("rules/branches/main", _branch_rules, True),
    "codeowners": (f"{CODEOWNERS} on main", None, False),
    "codeowners-errors": ("codeowners/errors", _codeowners_errors, True),
}


def check(name: str, text: str) -> str:
    """What set-up needs from GitHub's answer ``text`` to the read-back ``name`` (a visibility, a ruleset id, or
    nothing), or :class:`Differs` with the one line naming the setting and the value found."""
    subject, read, is_json = CHECKS[name]
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
        if is_json:
            raise Differs(f"error: {subject}: no JSON answer from gh api (its message is above)") from None
    if isinstance(answer, dict) and "message" in answer and ("documentation_url" in answer or is_json):
        raise Differs(f"error: {subject}: GitHub answered {answer['message']!r}")
    if not is_json:
        problem = codeowners_problem(text)
        if problem:
            raise Differs(f"error: {subject}: {problem}")
        return ""
    expected_list = name in ("ruleset-id", "branch-rules")
    if not isinstance(answer, list if expected_list else dict):
        raise Differs(f"error: {subject}: expected a JSON {'list' if expected_list else 'object'}, got {text[:80]!r}")
    try:
        return read(answer)
    except Differs as differs:
        raise Differs(f"error: {subject}: {differs}") from None


# --- the script -----------------------------------------------------------------------------------------------------


def _fields(settings: dict) -> str:
    """gh api's fields: ``-F`` sends true/false as JSON booleans, ``-f`` a string as it is."""
    return " ".join(f"-F {key}={_value(value)}" if isinstance(value, bool) else f"-f {key}={value}"
                    for key, value in settings.items())


_READ_BACK = "python3 -m ops.repository --check"


def _setting(endpoint: str, settings: dict, name: str, indent: str = "") -> str:
    """Read the setting; only when it differs, PUT it and read it back (a setting a policy above the repository
    already makes stricter is left alone: GitHub may refuse to loosen it)."""
    get = f'gh api "repos/$repo/{endpoint}"'
    return (f"{indent}if ! {{ {get} | {_READ_BACK} {name}; }} 2>/dev/null; then\n"
            f'{indent}  gh api -X PUT "repos/$repo/{endpoint}" \\\n'
            f"{indent}    {_fields(settings)}\n"
            f"{indent}  {get} | {_READ_BACK} {name}\n"
            f"{indent}fi\n")


def setup_commands(repo: str = PLACEHOLDER_REPO) -> str:
    """The bash script that sets the repository's settings on ``repo`` and reads each back."""
    read_back = _READ_BACK
    ruleset = json.dumps(main_ruleset(), separators=(", ", ": "))
    workflow = _setting("actions/permissions/workflow", WORKFLOW_PERMISSIONS, "workflow-permissions")
    public = _setting("actions/permissions/fork-pr-contributor-approval", PUBLIC_FORK_APPROVAL,
                      "fork-pr-contributor-approval", "  ")
    private = _setting("actions/permissions/fork-pr-workflows-private-repos", PRIVATE_FORK_PULL_REQUESTS,
                       "fork-pr-workflows-private-repos", "  ")
    return f"""set -euo pipefail
# Set-up step 1 (docs/platform.md): from the repository's root, signed in to gh as an admin of the repository.
# Each setting is read; one that differs is set and read back, and a read-back that differs stops here.
repo='{repo}'

# No workflow approves a pull request; the GITHUB_TOKEN reads unless a job asks for more.
{workflow}
# Pull requests from forks: approved by a writer before they run; in a private or internal repository, with a
# read-only token and no secrets or variables (a public repository's forks never get them).
visibility="$(gh api "repos/$repo" | {read_back} visibility)"
if [ "$visibility" = public ]; then
{public}else
{private}fi

# main: pull requests approved by a code owner and by someone other than the last pusher; no bypass, force push or
# deletion. A ruleset of this name from an earlier set-up is updated in place.
ruleset='{ruleset}'
ruleset_id="$(gh api "repos/$repo/rulesets?includes_parents=false&per_page=100" | {read_back} ruleset-id)"
if [ -n "$ruleset_id" ]; then
  echo "$ruleset" | gh api -X PUT "repos/$repo/rulesets/$ruleset_id" --input - >/dev/null
else
  echo "$ruleset" | gh api -X POST "repos/$repo/rulesets" --input - >/dev/null
fi
gh api "repos/$repo/rules/branches/main" | {read_back} branch-rules

# The code owners on main: people or teams for every file, the workflows, CODEOWNERS and deploy/.
gh api -H 'Accept: application/vnd.github.raw+json' "repos/$repo/contents/{CODEOWNERS}?ref=main" |
  {read_back} codeowners
gh api "repos/$repo/codeowners/errors?ref=main" | {read_back} codeowners-errors
echo "$repo: repository settings set and read back"
"""


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m ops.repository", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=PLACEHOLDER_REPO, help="ORG/REPO (default: the placeholder <org>/<repo>)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--code-owners", nargs="+", metavar="OWNER",
                      help="print .github/CODEOWNERS for these people (@user) or teams (@org/team)")
    mode.add_argument("--check", choices=sorted(CHECKS), help="read a gh api answer on stdin (the script's read-backs)")
    try:
        args = parser.parse_args(argv)
        if args.repo != PLACEHOLDER_REPO and not _REPO.fullmatch(args.repo):
            raise UsageError(f"--repo: expected ORG/REPO (letters, digits, '.', '_', '-'), got {args.repo!r}")
        for owner in args.code_owners or ():
            problem = owner_problem(owner)
            if problem:
                raise UsageError(f"--code-owners: {problem}")
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check:
        try:
            sys.stdout.write(check(args.check, sys.stdin.read()))
        except Differs as differs:
            print(differs, file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(codeowners_file(args.code_owners) if args.code_owners else setup_commands(args.repo))
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
