"""The repository setting production's trust rests on: a ruleset that keeps anyone from putting code on `main` alone.

Production's identity signs in for `main`'s jobs only (ops/federation.py), and `deploy.yml` deploys what lands on
`main`: so whoever can push to `main` deploys. :func:`main_ruleset` is the ruleset that closes that to a writer: every
change through a pull request, approved by someone other than whoever pushed last, no bypass, no force push, no
deletion. ``python -m ops.repository [--repo ORG/REPO]`` prints the ``gh api`` call that creates it and the one that
reads it back (docs/platform.md, "Set-up, in order", step 1). Exit 0; 2 on bad input (one line). Source: GitHub REST
API, "Repository rules" (POST /repos/{owner}/{repo}/rulesets; rule types ``pull_request``, ``non_fast_forward``,
``deletion``; ``require_last_push_approval``); docs/security.md says what a writer can and cannot do with it.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Optional, Sequence

from cli import OneLineParser, UsageError, exit_code
from ops.federation import MAIN, PLACEHOLDER_REPO

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")

RULESET_NAME = "main: reviewed pull requests only"


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
                "require_code_owner_review": False,
                "require_last_push_approval": True,
                "required_review_thread_resolution": False,
            }},
        ],
    }


def setup_commands(repo: str = PLACEHOLDER_REPO) -> str:
    """The shell commands that create the ruleset on ``repo`` and print the rulesets that apply to ``main``."""
    body = json.dumps(main_ruleset(), separators=(", ", ": "))
    return (f"echo '{body}' |\n"
            f"  gh api -X POST repos/{repo}/rulesets --input -\n"
            f"gh api repos/{repo}/rules/branches/main\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m ops.repository", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=PLACEHOLDER_REPO, help="ORG/REPO (default: the placeholder <org>/<repo>)")
    try:
        args = parser.parse_args(argv)
        if args.repo != PLACEHOLDER_REPO and not _REPO.fullmatch(args.repo):
            raise UsageError(f"--repo: expected ORG/REPO (letters, digits, '.', '_', '-'), got {args.repo!r}")
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(setup_commands(args.repo))
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
