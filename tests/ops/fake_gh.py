"""A stand-in for ``gh api`` over one repository's settings, put on PATH as ``gh`` by
tests/ops/test_repository_setup.py. SIMULATED: no GitHub.

The repository lives in a JSON file (path in ``FAKE_GH_STATE``), read and written back on every call::

    {"repo": "acme/app", "visibility": "private" | "internal" | "public",
     "workflow": {"default_workflow_permissions": ..., "can_approve_pull_request_reviews": ...},
     "fork_pr_workflows_private_repos": {...}, "fork_pr_contributor_approval": {"approval_policy": ...},
     "rulesets": [{"id": 1, "name": ..., "target": ..., "enforcement": ..., "conditions": ..., "rules": [...]}],
     "organization_rules": [...],          # rules an organization ruleset adds to main
     "codeowners": "<text>" | null,        # .github/CODEOWNERS on main
     "codeowners_errors": [...],
     "ignored": ["workflow", ...],         # settings whose PUT answers 204 but changes nothing (a policy above)
     "refused": ["fork_pr_workflows_private_repos", ...]}   # settings whose PUT answers 409 (a policy above)

What it answers, as the REST API does (docs.github.com/rest: "GitHub Actions permissions", "Rules", "Repository
contents", "Repositories"): GET and PUT of ``actions/permissions/workflow``; the private-fork settings, 422 on a
public repository; the contributor approval policy, 422 on a private or internal one; the repository's rulesets
(POST refuses a second ruleset of the same name, PUT by id); ``rules/branches/main``, every active rule that targets
main; ``contents/.github/CODEOWNERS`` raw, 404 when there is none; ``codeowners/errors``. ``-f`` fields are strings,
``-F`` fields turn true/false/null and integers into JSON, ``--input -`` reads the body from stdin. An HTTP error
prints its body on stdout and ``gh: <message> (HTTP <status>)`` on stderr, status 1, as gh does. A call it has no
route for exits 2 (``fake gh: no route for ...``), so an unexpected call fails the test. Every call is appended to
``FAKE_GH_LOG`` (JSON lines: method, path, body).
"""

from __future__ import annotations

import json
import os
import re
import sys
from urllib.parse import urlsplit


class HttpError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _typed(value: str):
    if value in ("true", "false", "null"):
        return json.loads(value)
    return int(value) if re.fullmatch(r"-?\d+", value) else value


def parse(argv: list[str]) -> tuple[str, str, dict, list[str]]:
    """(method, endpoint, body, headers) of ``gh api`` arguments."""
    if not argv or argv[0] != "api":
        raise SystemExit(f"fake gh: only 'gh api' is simulated, got {argv!r}")
    method, endpoint, body, headers, read_stdin = None, None, {}, [], False
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-X", "--method"):
            method = next(args)
        elif arg in ("-f", "--raw-field"):
            key, value = next(args).split("=", 1)
            body[key] = value
        elif arg in ("-F", "--field"):
            key, value = next(args).split("=", 1)
            body[key] = _typed(value)
        elif arg in ("-H", "--header"):
            headers.append(next(args))
        elif arg == "--input":
            if next(args) != "-":
                raise SystemExit("fake gh: --input takes '-' here")
            read_stdin = True
        elif arg.startswith("-"):
            raise SystemExit(f"fake gh: option {arg} is not simulated")
        elif endpoint is None:
            endpoint = arg
        else:
            raise SystemExit(f"fake gh: a second endpoint {arg!r}")
    if read_stdin:
        body = json.loads(sys.stdin.read())
    return method or ("POST" if body else "GET"), endpoint or "", body, headers


def _targets_main(ruleset: dict) -> bool:
    include = ruleset.get("conditions", {}).get("ref_name", {}).get("include", [])
    return ruleset.get("enforcement") == "active" and any(ref in ("refs/heads/main", "~ALL") for ref in include)


def answer(state: dict, method: str, endpoint: str, body: dict, headers: list[str]):
    """The answer's JSON (None: 204 No Content, or a raw text for the raw media type), or HttpError."""
    repo = state["repo"]
    path = urlsplit(endpoint).path
    prefix = f"repos/{repo}"
    if not (path == prefix or path.startswith(prefix + "/")):
        raise SystemExit(f"fake gh: no route for {method} {endpoint}")
    rest = path[len(prefix):]
    public = state["visibility"] == "public"
    settings = {"/actions/permissions/workflow": ("workflow", None),
                "/actions/permissions/fork-pr-workflows-private-repos": ("fork_pr_workflows_private_repos", False),
                "/actions/permissions/fork-pr-contributor-approval": ("fork_pr_contributor_approval", True)}
    if rest == "" and method == "GET":
        return {"full_name": repo, "private": not public, "visibility": state["visibility"]}
    if rest in settings:
        key, for_public = settings[rest]
        if for_public is not None and for_public != public:
            raise HttpError(422, f"This setting only applies to {'public' if for_public else 'private and internal'}"
                                 " repositories")
        if method == "GET":
            return state[key]
        if method == "PUT":
            if key in state.get("refused", []):
                raise HttpError(409, "This setting is managed by the organization")
            if key not in state.get("ignored", []):
                state[key] = {**state[key], **body}
            return None
    if rest == "/rulesets" and method == "GET":
        return [{"id": r["id"], "name": r["name"], "target": r["target"], "source_type": "Repository",
                 "source": repo, "enforcement": r["enforcement"]} for r in state["rulesets"]]
    if rest == "/rulesets" and method == "POST":
        if any(r["name"] == body.get("name") for r in state["rulesets"]):
            raise HttpError(422, "Validation Failed: Name must be unique")
        created = {**body, "id": 1 + max([r["id"] for r in state["rulesets"]], default=41)}
        state["rulesets"].append(created)
        return created
    match = re.fullmatch(r"/rulesets/(\d+)", rest)
    if match and method == "PUT":
        for i, ruleset in enumerate(state["rulesets"]):
            if ruleset["id"] == int(match[1]):
                state["rulesets"][i] = {**ruleset, **body, "id": ruleset["id"]}
                return state["rulesets"][i]
        raise HttpError(404, "Not Found")
    if rest == "/rules/branches/main" and method == "GET":
        rules = [{**rule, "ruleset_source_type": "Repository", "ruleset_source": repo, "ruleset_id": r["id"]}
                 for r in state["rulesets"] if _targets_main(r) for rule in r["rules"]]
        return rules + state.get("organization_rules", [])
    if rest == "/contents/.github/CODEOWNERS" and method == "GET":
        if "Accept: application/vnd.github.raw+json" not in headers:
            raise SystemExit("fake gh: the contents are read raw here")
        if state.get("codeowners") is None:
            raise HttpError(404, "Not Found")
        return state["codeowners"]
    if rest == "/codeowners/errors" and method == "GET":
        if state.get("codeowners") is None:
            raise HttpError(404, "Not Found")
        return {"errors": state.get("codeowners_errors", [])}
    raise SystemExit(f"fake gh: no route for {method} {endpoint}")


def main(argv: list[str]) -> int:
    state_path = os.environ["FAKE_GH_STATE"]
    with open(state_path, encoding="utf-8") as file:
        state = json.load(file)
    method, endpoint, body, headers = parse(argv)
    with open(os.environ["FAKE_GH_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"method": method, "path": urlsplit(endpoint).path, "body": body}) + "\n")
    try:
        result = answer(state, method, endpoint, body, headers)
    except HttpError as error:
        print(json.dumps({"message": error.message, "documentation_url": "https://docs.github.com/rest"}))
        print(f"gh: {error.message} (HTTP {error.status})", file=sys.stderr)
        return 1
    with open(state_path, "w", encoding="utf-8") as file:
        json.dump(state, file)
    if isinstance(result, str):
        sys.stdout.write(result)
    elif result is not None:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
