#!/usr/bin/env python3
"""CI: the deploy workflow's matrix from the stacks file, grouped by the Grafana each stack writes to.

Usage: python3 -m ops.stack_matrix [--list] [deploy/stacks.json]
Input: ``{"stacks": [{"stack": <Pulumi stack name>, "grafana": "<resource group>/<Grafana name>"}, ...]}``, each stack
once; a ``Pulumi.<stack>.yaml`` in the checkout that sets ``grafanaName``/``grafanaResourceGroup`` must name the same
workspace. Output (``$GITHUB_OUTPUT``, stdout when unset): ``grafanas=<JSON>``, one ``{"grafana": <key, lower-cased>,
"stacks": [...], "groups": [[...], ...]}`` per Grafana in file order (``groups``: the stacks each phase-1 job runs at
once, sized so the fleet needs about ``FLEET_RUNNERS`` jobs; default 20); with ``--list`` (the drift workflow)
``stacks=<JSON list>``, the groups in turn. A ``::warning::`` line for each stack whose file does not set
``aks-gpu-observability:production: "true"``: the deploy holds it to the production rules all the same
(policy/production.json), so expect their violations (stdout when ``$GITHUB_OUTPUT`` is set, else stderr).
Errors: one line ``stack-matrix: error: ...``, exit 1.
Upstream: pulumi-azure-native ``provider/pkg/azure/client_azcore.go``; why grouped: docs/decisions/fleet-rollout.md.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

PROJECT = "aks-gpu-observability"
STACK = re.compile(r"(?:[\w.-]+/){0,2}[\w.-]+")
#: GitHub's concurrent-job limit of the Free plan (20; Pro 40, Team 60, Enterprise 500: docs.github.com, "Actions
#: limits"), for a repository that sets no FLEET_RUNNERS.
DEFAULT_RUNNERS = 20
GRAFANA = re.compile(r"[\w\-.()]{1,90}/[A-Za-z][A-Za-z0-9-]{0,21}[A-Za-z0-9]")


def fail(message: str) -> "NoReturn":  # noqa: F821
    print(f"stack-matrix: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def stack_file_grafana(root: Path, stack: str) -> dict[str, str]:
    """``grafanaResourceGroup``/``grafanaName`` as ``Pulumi.<stack>.yaml`` sets them (plain scalars under
    ``config:``; read without a YAML library, which a runner may lack). Empty when the file or the keys are absent."""
    path = root / f"Pulumi.{stack.rsplit('/', 1)[-1]}.yaml"
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(rf"\s+{PROJECT}:(grafanaName|grafanaResourceGroup):"
                             r"\s*['\"]?([^'\"#\s]*)['\"]?\s*(?:#.*)?", line)
        if match and match.group(2):
            found[match.group(1)] = match.group(2)
    return found


def stack_file_production(root: Path, stack: str) -> bool | None:
    """Whether ``Pulumi.<stack>.yaml`` sets ``aks-gpu-observability:production`` to true, as ``pulumi.Config.get_bool``
    reads it ("true" or "True", quoted or not); None when the checkout has no such file."""
    path = root / f"Pulumi.{stack.rsplit('/', 1)[-1]}.yaml"
    if not path.is_file():
        return None
    return any(re.fullmatch(rf"\s+{PROJECT}:production:\s*(['\"]?)(true|True)\1\s*(?:#.*)?", line)
               for line in path.read_text(encoding="utf-8").splitlines())


def production_warnings(stacks: list[str]) -> list[str]:
    """One ``::warning::`` line per stack that the production environment deploys although its file does not say it is
    production: the deploy's policy config holds it to the production rules anyway (module docstring)."""
    lines = []
    for stack in stacks:
        production = stack_file_production(Path.cwd(), stack)
        if production:
            continue
        why = ("has no Pulumi.<stack>.yaml in the checkout" if production is None
               else f'its Pulumi.<stack>.yaml does not set {PROJECT}:production: "true"')
        lines.append(f"::warning title=Held to the production rules::stack {stack} is deployed through the "
                     f"production environment and {why}: the deploy holds it to the mandatory production rules all "
                     "the same (policy/production.json), so pin what they ask for or take it out of "
                     "deploy/stacks.json (docs/platform.md, \"Two meanings of production\")")
    return lines


def matrix(path: Path) -> list[dict]:
    """The grouped matrix for the stacks file at ``path`` (module docstring); exits with one line on bad input."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        fail(f"{path}: cannot read it as JSON ({error})")
    entries = document.get("stacks") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        fail(f'{path}: expected {{"stacks": [{{"stack": "...", "grafana": "<resource group>/<name>"}}, ...]}} '
             'with at least one stack')
    groups: dict[str, list[str]] = {}
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        stack, grafana = (entry.get("stack"), entry.get("grafana")) if isinstance(entry, dict) else (None, None)
        if not isinstance(stack, str) or not STACK.fullmatch(stack):
            fail(f"{path}: stacks[{index}].stack: expected a stack name (stack, project/stack or org/project/stack), "
                 f"got {stack!r}")
        if not isinstance(grafana, str) or not GRAFANA.fullmatch(grafana):
            fail(f"{path}: stacks[{index}].grafana ({stack}): expected '<resource group>/<Grafana name>', "
                 f"got {grafana!r}")
        if stack in seen:
            fail(f"{path}: stack {stack} is listed twice; list each stack once")
        seen.add(stack)
        group, name = grafana.split("/")
        declared = stack_file_grafana(Path.cwd(), stack)
        for key, value in (("grafanaResourceGroup", group), ("grafanaName", name)):
            if key in declared and declared[key].lower() != value.lower():
                fail(f"{path}: stack {stack} writes to Grafana {declared.get('grafanaResourceGroup', group)}/"
                     f"{declared.get('grafanaName', name)} (its Pulumi.<stack>.yaml), not {grafana}; "
                     "fix its grafana entry")
        groups.setdefault(grafana.lower(), []).append(stack)
    return [{"grafana": key, "stacks": stacks} for key, stacks in groups.items()]


def runners() -> int:
    """``FLEET_RUNNERS``: the jobs this rollout may run at once (the owner's concurrent-job limit, shared with its other
    workflows; default 20, the Free plan's)."""
    text = os.environ.get("FLEET_RUNNERS", "").strip() or str(DEFAULT_RUNNERS)
    if not text.isdigit() or int(text) < 1:
        fail(f"FLEET_RUNNERS (the repository variable): expected a whole number of runners >= 1 (Free 20, Pro 40, "
             f"Team 60, Enterprise 500; unset: 20), got {text!r}")
    return int(text)


def cluster_groups(stacks: list[str], per_job: int) -> list[list[str]]:
    """``stacks`` in order, cut into the groups one phase-1 job each runs at once."""
    return [stacks[i:i + per_job] for i in range(0, len(stacks), per_job)]


def with_groups(grafanas: list[dict], runner_count: int) -> list[dict]:
    """Each Grafana's entry with ``groups``: as many stacks per phase-1 job as it takes for the whole fleet's jobs to
    be about ``runner_count`` (``ceil(stacks / runners)`` each), so phase 1 runs in one wave of jobs."""
    per_job = -(-sum(len(g["stacks"]) for g in grafanas) // runner_count)
    return [{**g, "groups": cluster_groups(g["stacks"], per_job)} for g in grafanas]


def main(argv: list[str]) -> int:
    flat = "--list" in argv
    argv = [arg for arg in argv if arg != "--list"]
    path = Path(argv[0] if argv else "deploy/stacks.json")
    groups = matrix(path)
    runner_count = 0 if flat else runners()
    target = os.environ.get("GITHUB_OUTPUT")
    if not flat:  # the deploy's setup job; the drift workflow (--list) only reads
        for warning in production_warnings([stack for group in groups for stack in group["stacks"]]):
            print(warning, file=sys.stdout if target else sys.stderr)
    if flat:
        line = "stacks=" + json.dumps([stack for group in groups for stack in group["stacks"]], separators=(",", ":"))
    else:
        line = "grafanas=" + json.dumps(with_groups(groups, runner_count), separators=(",", ":"))
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    else:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
