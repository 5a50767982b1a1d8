"""Offline plan: ``python -m tools.plan [--stack NAME] [--set KEY=VALUE]... [--json] [--graph mermaid]``.

Evaluates the real ``__main__.py`` under ``pulumi.runtime.set_mocks`` with ``Pulumi.<stack>.yaml`` (default
stack ``dev``), ``--set`` overriding single keys. No network, no credentials: the engine and Azure are
SIMULATED (see :mod:`tools.mock_engine` and :mod:`tools.canned`). Output reads like ``pulumi preview``;
``--json`` prints one object::

    {"project": str, "stack": str,
     "resources": [{"urn", "type", "name", "custom": bool, "parent": urn|null, "provider": urn|null,
                    "inputs": {...engine (camelCase) names...}, "dependencies": [urn, ...],
                    "options": {"protect", "deleteBeforeReplace", "retainOnDelete", "ignoreChanges",
                                "customTimeouts"}}],
     "invokes": [{"token": str, "args": {...}}],
     "createOrder": [urn, ...], "destroyOrder": [urn, ...], "outputs": {...}}

``--graph mermaid`` prints the dependency graph. Secrets print as ``[secret]``. Invalid configuration: exit status 2 and one line on stderr,
``error: <key>: <what is wrong and what is expected>``; no resource is registered.
``--policy [--policy-config FILE] [--policy-mode preview|up]`` also runs the policy pack over the plan and
prints its violations like the CLI (``--json`` adds ``policyViolations``); a mandatory violation makes the exit
status 1. The mode says which outputs the stack policy sees (:mod:`tools.policy_check`): ``preview`` (default,
as ``pulumi preview --policy-pack`` on a first preview: computed outputs unknown) or ``up`` (after ``pulumi up``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from components.config import ConfigError
from tools.mock_engine import Plan, Resource, run


class _UsageError(Exception):
    pass


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``error: ...``, exit 2) like every other bad input."""

    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(message)


def _parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError("--set", f"expected KEY=VALUE (got {pair!r})")
        overrides[key] = value
    return overrides


READS = {"pulumi:pulumi:StackReference"}


def _label(resource: Resource) -> str:
    return f"{resource.type} {resource.name}"


def _input_lines(value, indent: str) -> list[str]:
    """Inputs as sorted ``key: value`` lines, nested maps indented (like ``pulumi preview --diff``)."""
    lines = []
    for key in sorted(value):
        item = value[key]
        if isinstance(item, dict) and item:
            lines.append(f"{indent}{key}: {{")
            lines += _input_lines(item, indent + "    ")
            lines.append(f"{indent}}}")
        else:
            lines.append(f"{indent}{key}: {json.dumps(item)}")
    return lines


def render_text(plan: Plan) -> str:
    """``pulumi preview --diff``-like text: a tree of resources, each custom resource's inputs, the
    dependencies, outputs, then both orders."""
    stack = next((r for r in plan.resources if r.type == "pulumi:pulumi:Stack"), None)
    children: dict[Optional[str], list[Resource]] = {}
    for resource in plan.resources:
        parent = resource.parent
        if parent is None and stack is not None and resource is not stack:
            parent = stack.urn  # default providers: shown under the stack, as pulumi preview does
        children.setdefault(parent, []).append(resource)
    rows: list[tuple[str, str]] = []

    def walk(resource: Resource, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else prefix + ("└─ " if last else "├─ ")
        rows.append((branch + resource.type, resource.name, "read" if resource.type in READS else "create"))
        kids = children.get(resource.urn, [])
        for i, kid in enumerate(kids):
            walk(kid, "" if top else prefix + ("   " if last else "│  "), i == len(kids) - 1, False)

    for root in children.get(None, []):
        walk(root, "", True, True)
    width = max(len(t) for t, _, _ in rows) + 2
    name_width = max(len(n) for _, n, _ in rows) + 2
    lines = [
        f"Previewing update ({plan.stack}) [offline plan: mocked engine and canned Azure answers; nothing is deployed]",
        "(values that depend on steps not yet run, such as the PLS id and the private IP, are shown as after `pulumi up`)",
        "",
        f"     {'Type':<{width}}{'Name':<{name_width}}Plan",
    ]
    lines += [f" {'>' if op == 'read' else '+'}   {t:<{width}}{n:<{name_width}}{op}" for t, n, op in rows]

    by_urn = {r.urn: r for r in plan.resources}
    lines += ["", "Inputs (secrets as [secret]):"]
    for resource in plan.resources:
        if resource.custom and resource.inputs:
            lines.append(f"  {'>' if resource.type in READS else '+'} {resource.type} {resource.name}")
            lines += _input_lines(resource.inputs, "      ")
            options = [name for name in ("deleteBeforeReplace", "retainOnDelete", "protect") if resource.options.get(name)]
            if options:
                lines.append(f"      (options: {', '.join(options)})")
    lines += ["", "Dependencies (as the engine records them):"]
    for resource in plan.resources:
        deps = [by_urn[d].name if d in by_urn else d for d in resource.dependencies]
        provider = by_urn[resource.provider].name if resource.provider in by_urn else None
        if deps or provider:
            extra = f"  [provider: {provider}]" if provider else ""
            if resource.replace_with:
                extra += f"  [replaced whenever {', '.join(by_urn[u].name if u in by_urn else u for u in resource.replace_with)} is replaced]"
            lines.append(f"    {resource.name} <- {', '.join(deps) if deps else '(none)'}{extra}")
    lines += ["", "Outputs (as after `pulumi up` with the canned answers; a real preview shows computed ones as unknown):"]
    lines += [f"    {key}: {json.dumps(value)}" for key, value in sorted(plan.outputs.items())]
    reads = sum(1 for r in plan.resources if r.type in READS)
    lines += ["", "Resources:", f"    + {len(plan.resources) - reads} to create"]
    if reads:
        lines.append(f"    > {reads} to read")
    lines += ["", "Create order:"]
    lines += [f"  {i:>3}. {_label(by_urn[u])}" for i, u in enumerate(plan.create_order, 1)]
    lines += ["", "Destroy order (pulumi destroy):"]
    for i, urn in enumerate(plan.destroy_order, 1):
        resource = by_urn[urn]
        note = "  (retainOnDelete: left in place, removed from the state only)" if resource.options.get("retainOnDelete") else ""
        note = "  (read only: nothing to delete)" if resource.type in READS else note
        lines.append(f"  {i:>3}. {_label(resource)}{note}")
    lines += ["", "Invokes (answered offline from canned data):"]
    for invoke in plan.invokes:
        waits = ", ".join(by_urn[d].name if d in by_urn else d for d in invoke.dependencies)
        lines.append(f"    {invoke.token}" + (f" <- {waits}" if waits else ""))
    return "\n".join(lines)


def render_mermaid(plan: Plan) -> str:
    """A Mermaid flowchart: components as subgraphs, an arrow from each dependency to its dependent
    (solid) and from each provider to the resources it manages (dotted)."""
    ids = {r.urn: f"r{i}" for i, r in enumerate(plan.resources)}
    by_parent: dict[Optional[str], list[Resource]] = {}
    for resource in plan.resources:
        by_parent.setdefault(resource.parent, []).append(resource)
    lines = ["graph TD", '  legend["solid arrow: created after (dependency)<br/>dotted arrow: provider<br/>box in a box: component children"]']

    def node(resource: Resource, indent: str) -> None:
        kids = by_parent.get(resource.urn, [])
        if resource.type == "pulumi:pulumi:Stack":
            for kid in kids:
                node(kid, indent)
            return
        label = f'{resource.name}<br/><small>{resource.type}</small>'
        if kids and not resource.custom:
            lines.append(f'{indent}subgraph {ids[resource.urn]}["{label}"]')
            for kid in kids:
                node(kid, indent + "  ")
            lines.append(f"{indent}end")
        else:
            lines.append(f'{indent}{ids[resource.urn]}["{label}"]')

    for root in by_parent.get(None, []):
        node(root, "  ")
    for resource in plan.resources:
        for dep in resource.dependencies:
            if dep in ids:
                lines.append(f"  {ids[dep]} --> {ids[resource.urn]}")
        if resource.provider in ids:
            lines.append(f"  {ids[resource.provider]} -.-> {ids[resource.urn]}")
    for n, invoke in enumerate(i for i in plan.invokes if i.dependencies):
        lines.append(f'  i{n}(["{invoke.token.split(":")[-1]}<br/><small>invoke</small>"])')
        lines += [f"  {ids[d]} --> i{n}" for d in invoke.dependencies if d in ids]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _OneLineErrors(prog="python -m tools.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="stack name; reads Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument("--policy", action="store_true",
                        help="also run the policy pack (policy/rules.py) over the plan; exit 1 on a mandatory violation")
    parser.add_argument("--policy-config", metavar="FILE", help="policy pack config (JSON), as for --policy-pack-config")
    parser.add_argument("--policy-mode", choices=["preview", "up"], default="preview",
                        help="outputs the stack policy sees: a first preview's (default) or those after pulumi up")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config key (bare keys are in the project namespace); repeatable")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    form.add_argument("--graph", choices=["mermaid"], help="print the dependency graph instead")
    try:
        args = parser.parse_args(argv)
    except _UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        plan = run(args.stack, _parse_sets(args.sets))
        violations = None
        if args.policy or args.policy_config:
            from tools import policy_check

            pack_config = policy_check.load_pack_config(args.policy_config) if args.policy_config else {}
            violations = policy_check.evaluate(plan, pack_config, args.policy_mode)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        document = plan.to_json()
        if violations is not None:
            document["policyViolations"] = [v.to_json() for v in violations]
        print(json.dumps(document, indent=2, sort_keys=True))
    elif args.graph == "mermaid":
        print(render_mermaid(plan))
    else:
        print(render_text(plan))
        if violations is not None:
            print()
            print(policy_check.render(violations))
    return 1 if violations and any(v.level == "mandatory" for v in violations) else 0


if __name__ == "__main__":
    sys.exit(main())
