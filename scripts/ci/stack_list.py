#!/usr/bin/env python3
"""CI: the stacks a scheduled job runs for, as a JSON list for a job matrix (``fromJSON``). No Azure call.

Input (environment; the workflow passes repository variables): PULUMI_STACKS, a JSON list of stack names
(``["dev", "acme/aks-gpu-observability/prod"]``), else PULUMI_STACK (one stack, the deploy workflow's variable),
else ``dev`` (the deploy workflow's default). A stack name is ``stack``, ``project/stack`` or
``org/project/stack`` (letters, digits, ``_``, ``.``, ``-``).
Output: ``stacks=<compact JSON list>`` to $GITHUB_OUTPUT (stdout when unset).
Errors: one line on stderr, ``stack-list: error: PULUMI_STACKS: ...``, exit 1, nothing written.
"""

from __future__ import annotations

import json
import os
import re
import sys

NAME = re.compile(r"(?:[\w.-]+/){0,2}[\w.-]+")


def stacks(environ: dict) -> list[str]:
    """The stack list from PULUMI_STACKS / PULUMI_STACK (module docstring); ValueError (one line) when
    PULUMI_STACKS is not a non-empty JSON list of distinct stack names."""
    text = (environ.get("PULUMI_STACKS") or "").strip()
    if not text:
        return [(environ.get("PULUMI_STACK") or "").strip() or "dev"]
    try:
        found = json.loads(text)
    except ValueError as error:
        raise ValueError(f"PULUMI_STACKS: not JSON ({error}); expected a JSON list such as [\"dev\", \"prod\"]") from None
    if not isinstance(found, list) or not found:
        raise ValueError(f"PULUMI_STACKS: expected a non-empty JSON list of stack names (got {text})")
    for name in found:
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(f"PULUMI_STACKS: {json.dumps(name)} is not a stack name (stack, project/stack or org/project/stack)")
    if len(set(found)) != len(found):
        raise ValueError(f"PULUMI_STACKS: lists a stack twice (got {text})")
    return found


def main() -> int:
    try:
        found = stacks(dict(os.environ))
    except ValueError as error:
        print(f"stack-list: error: {error}", file=sys.stderr)
        return 1
    line = f"stacks={json.dumps(found, separators=(',', ':'))}\n"
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(line)
    else:
        sys.stdout.write(line)
    print(f"stack-list: {len(found)} stack(s): {', '.join(found)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
