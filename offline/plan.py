"""Offline plan: ``python -m offline.plan [--stack NAME] [--set KEY=VALUE]... [--set-path PATH=VALUE]... [--json]
[--graph mermaid] [--diff-against BASE.json [--replace URN]...]``.

Owns: the command line (its flags, the text, JSON and Mermaid renderings, exit codes). Input: the stack's
``Pulumi.<stack>.yaml`` with ``--set``/``--set-path`` on top; ``--diff-against`` a base plan; ``--import-file``,
``--policy`` options. Output: the plan as ``pulumi preview`` prints it, or one JSON object (docs/how-it-works.md);
the offline diff (:mod:`offline.diff`), the import file (:mod:`offline.adopt`), policy violations
(:mod:`offline.policy_check`). Errors: invalid input exits 2 with one line ``error: <key>: <what is wrong>`` and
registers nothing; a mandatory policy violation exits 1. Flags and JSON in full: docs/decisions/offline-plan.md.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/cmd/pulumi/operations/preview.go
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from cli import OneLineParser, exit_code, require_virtualenv

with require_virtualenv("offline.plan"):  # the plan runs the program: it needs requirements.txt installed
    from offline import adopt, canned, diff_text, plan_state
    from offline import diff as plan_diff
    from offline.program import ConfigSet, Plan, Resource, run
    from stack.specs import stack_mark
    from stack_config.schema import PROJECT, ConfigError


def _parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    """``--set KEY=VALUE`` pairs (bench.deploy_sim); each is stored as ``pulumi config set KEY VALUE`` stores it."""
    return {item.key: item.value for item in _config_sets([("--set", pair) for pair in pairs])}


def _config_sets(flags: Sequence[tuple[str, str]]) -> list[ConfigSet]:
    """``(flag, KEY=VALUE)`` in command-line order -> one ``pulumi config set`` each: ``--set KEY=VALUE`` as
    ``pulumi config set KEY VALUE`` (VALUE stored as a string, whatever it looks like), ``--set-path PATH=VALUE`` as
    ``pulumi config set --path PATH VALUE``. Split on the first ``=``, as ``pulumi config set-all`` splits its pairs;
    a key that starts with a quote ends at that quote followed by ``=`` (pulumi/pulumi v3.230.0
    ``pkg/cmd/pulumi/config/io.go`` ``parseKeyValuePair``), so ``--set-path '"tags[0]"=a=b'`` works too."""
    sets = []
    for flag, pair in flags:
        key, sep, value = pair.partition("=")
        if pair[:1] in ('"', "'"):
            key, sep, value = pair[1:].partition(pair[0] + "=")
        if not sep or not key:
            form = "PATH=VALUE" if flag == "--set-path" else "KEY=VALUE"
            raise ConfigError(flag, f"expected {form} (got {pair!r})")
        sets.append(ConfigSet(key, value, flag == "--set-path"))
    return sets


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


def _marked(line: str, also: Optional[str] = None) -> str:
    """``line`` with ``[canned: ...]`` naming the canned values it holds (offline/canned.py CANNED_VALUES), if any."""
    return canned.marked(line, also)


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
        "(values that depend on steps not yet run, such as the PLS id and the private IP, "
        "are shown as after `pulumi up`; a line ending in [canned: ...] holds values made up by the canned answers)",
        "",
        f"     {'Type':<{width}}{'Name':<{name_width}}Plan",
    ]
    lines += [f" {'>' if op == 'read' else '+'}   {t:<{width}}{n:<{name_width}}{op}" for t, n, op in rows]

    by_urn = {r.urn: r for r in plan.resources}
    lines += ["", "Inputs (secrets as [secret]):"]
    for resource in plan.resources:
        if resource.custom and resource.inputs:
            lines.append(f"  {'>' if resource.type in READS else '+'} {resource.type} {resource.name}")
            lines += [_marked(line) for line in _input_lines(resource.inputs, "      ")]
            options = [name for name in ("deleteBeforeReplace", "retainOnDelete", "protect")
                       if resource.options.get(name)]
            ignored = resource.options.get("ignoreChanges") or []
            if ignored:  # the engine keeps the state's value at these paths: a change there is no diff
                options.insert(1 if "deleteBeforeReplace" in options else 0,
                               f"ignoreChanges {json.dumps(list(ignored))}")
            if options:
                lines.append(f"      (options: {', '.join(options)})")
    lines += ["", "Dependencies (as the engine records them):"]
    for resource in plan.resources:
        deps = [by_urn[d].name if d in by_urn else d for d in resource.dependencies]
        provider = by_urn[resource.provider].name if resource.provider in by_urn else None
        if deps or provider:
            extra = f"  [provider: {provider}]" if provider else ""
            if resource.replace_with:
                names = ", ".join(by_urn[u].name if u in by_urn else u for u in resource.replace_with)
                extra += f"  [replaced whenever {names} is replaced]"
            lines.append(f"    {resource.name} <- {', '.join(deps) if deps else '(none)'}{extra}")
    lines += ["", "Outputs (as after `pulumi up` with the canned answers; a real preview "
                  "shows computed ones as unknown):"]
    lines += [_marked(f"    {key}: {json.dumps(value)}", canned.CANNED_OUTPUTS.get(key))
              for key, value in sorted(plan.outputs.items())]
    reads = sum(1 for r in plan.resources if r.type in READS)
    lines += ["", "Resources:", f"    + {len(plan.resources) - reads} to create"]
    if reads:
        lines.append(f"    > {reads} to read")
    lines += ["", "Create order:"]
    lines += [f"  {i:>3}. {_label(by_urn[u])}" for i, u in enumerate(plan.create_order, 1)]
    lines += ["", "Destroy order (pulumi destroy):"]
    for i, urn in enumerate(plan.destroy_order, 1):
        resource = by_urn[urn]
        retained = resource.options.get("retainOnDelete")
        note = "  (retainOnDelete: left in place, removed from the state only)" if retained else ""
        note = "  (read only: nothing to delete)" if resource.type in READS else note
        lines.append(f"  {i:>3}. {_label(resource)}{note}")
    lines += ["", "Invokes (answered offline from canned data):"]
    for invoke in plan.invokes:
        waits = ", ".join(by_urn[d].name if d in by_urn else d for d in invoke.dependencies)
        lines.append(f"    {invoke.token}" + (f" <- {waits}" if waits else ""))
    return "\n".join(lines)


_MARKS = {
    "create": "fill:#e6ffed,stroke:#22863a,stroke-width:2px",
    "update": "fill:#fff5b1,stroke:#b08800,stroke-width:2px",
    "replace": "fill:#ffdce0,stroke:#cb2431,stroke-width:3px",
}


def render_mermaid(plan: Plan, changes: Optional[plan_diff.Diff] = None) -> str:
    """A Mermaid flowchart: components as subgraphs, an arrow from each dependency to its dependent
    (solid) and from each provider to the resources it manages (dotted). With ``changes``, each created,
    updated or replaced custom resource is marked (class ``create``/``update``/``replace``, labels prefixed
    ``+``/``~``/``+-``) and deleted resources are named in the legend."""
    ids = {r.urn: f"r{i}" for i, r in enumerate(plan.resources)}
    ops = {s.urn: s for s in changes.steps} if changes else {}
    by_parent: dict[Optional[str], list[Resource]] = {}
    for resource in plan.resources:
        by_parent.setdefault(resource.parent, []).append(resource)
    lines = ["graph TD", '  legend["solid arrow: created after (dependency)<br/>dotted arrow: provider<br/>box '
                         'in a box: component children"]']

    def node(resource: Resource, indent: str) -> None:
        kids = by_parent.get(resource.urn, [])
        if resource.type == "pulumi:pulumi:Stack":
            for kid in kids:
                node(kid, indent)
            return
        step = ops.get(resource.urn)
        marked = step is not None and step.op in _MARKS and resource.custom
        prefix = {"create": "+ ", "update": "~ ", "replace": "+- "}[step.op] if marked else ""
        order = f" ({step.replace_order})" if marked and step.replace_order else ""
        label = f'{prefix}{resource.name}{order}<br/><small>{resource.type}</small>'
        if kids and not resource.custom:
            lines.append(f'{indent}subgraph {ids[resource.urn]}["{label}"]')
            for kid in kids:
                node(kid, indent + "  ")
            lines.append(f"{indent}end")
        else:
            lines.append(f'{indent}{ids[resource.urn]}["{label}"]')
            if marked:
                lines.append(f"{indent}class {ids[resource.urn]} {step.op}")

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
    if changes is not None:
        lines += [f"  classDef {op} {style}" for op, style in _MARKS.items()]
        gone = [s.name for s in changes.steps if s.op == "delete"]
        legend = "marked: + create, ~ update, +- replace" + (f"<br/>deleted: {', '.join(gone)}" if gone else "")
        lines.insert(2, f'  changes["{legend}"]')
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m offline.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="stack name; reads Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument("--policy", action="store_true",
                        help="also run the policy pack (policy/rules.py) over the plan; exit 1 on a mandatory "
                             "violation")
    parser.add_argument("--policy-config", metavar="FILE",
                        help="policy pack config (JSON), as for --policy-pack-config")
    parser.add_argument("--policy-mode", choices=["preview", "up"], default="preview",
                        help="outputs the stack policy sees: a first preview's (default) or those after pulumi up")
    parser.add_argument("--set", dest="config_sets", action="append", default=[], metavar="KEY=VALUE",
                        type=lambda pair: ("--set", pair),
                        help="as `pulumi config set KEY VALUE`: VALUE is stored as a string (bare keys are in the "
                             "project namespace); repeatable")
    parser.add_argument("--set-path", dest="config_sets", action="append", metavar="PATH=VALUE",
                        type=lambda pair: ("--set-path", pair),
                        help="as `pulumi config set --path PATH VALUE`, e.g. --set-path 'tags[0]=costCenter=1234' for "
                             "a list key; repeatable, applied with --set in command-line order")
    parser.add_argument("--diff-against", metavar="BASE.json",
                        help="an earlier --json plan: print what `pulumi preview --diff` would say (offline estimate)")
    parser.add_argument("--replace", dest="replace", action="append", default=[], metavar="URN",
                        help="with --diff-against: replace this resource (URN or unique name), as "
                             "`pulumi up --replace`; repeatable")
    parser.add_argument("--import-file", metavar="FILE",
                        help="write Pulumi's bulk import file for a setup made by hand (docs/adopting.md)")
    parser.add_argument("--skip", action="append", default=[], metavar="NAME",
                        help="with --import-file: leave this resource out (pulumi up creates it); repeatable")
    parser.add_argument("--subscription-id", default="", metavar="GUID",
                        help="with --import-file: your subscription (az account show --query id --output tsv)")
    parser.add_argument("--grafana-principal-id", default="", metavar="GUID",
                        help="with --import-file: Grafana's system-assigned identity (its role assignment's name)")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    form.add_argument("--graph", choices=["mermaid"], help="print the dependency graph instead")
    args = parser.parse_or_report(argv)
    if args is None:
        return 2
    if args.replace and not args.diff_against:
        print("error: --replace: needs --diff-against BASE.json", file=sys.stderr)
        return 2
    if args.diff_against and (args.policy or args.policy_config):
        print("error: --policy: run it on the plan itself, not with --diff-against", file=sys.stderr)
        return 2
    adoption = [flag for flag, value in (("--skip", args.skip), ("--subscription-id", args.subscription_id),
                                          ("--grafana-principal-id", args.grafana_principal_id)) if value]
    if adoption and not args.import_file:
        print(f"error: {adoption[0]}: needs --import-file FILE", file=sys.stderr)
        return 2
    if args.import_file and (args.json or args.graph or args.diff_against or args.policy or args.policy_config):
        print("error: --import-file: writes the import file only; run --json, --graph, --diff-against or --policy "
              "separately", file=sys.stderr)
        return 2
    if args.import_file:
        return _write_import_file(args)
    try:
        # Every input file is read and checked before the program runs: bad input registers nothing.
        sets = _config_sets(args.config_sets)
        base = _read_base(args.diff_against) if args.diff_against else None
        pack_config = None
        if args.policy or args.policy_config:
            from offline import policy_check

            pack_config = policy_check.load_pack_config(args.policy_config) if args.policy_config else {}
            policy_check.configure(pack_config)
        changes = None
        plan = run(args.stack, config_sets=sets)
        if base is not None:
            targets = _resolve_targets(plan, args.replace)
            changes, plan = plan_diff.preview(base, lambda pending: run(args.stack, pending=pending, config_sets=sets),
                                              targets)
        violations = None
        if pack_config is not None:
            violations = policy_check.evaluate(plan, pack_config, args.policy_mode)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if changes is not None and args.graph != "mermaid":
        if args.json:
            print(json.dumps(changes.to_json(), indent=2, sort_keys=True))
        else:
            print(diff_text.render_text(changes, f"Offline preview diff ({args.stack}) against {args.diff_against}"))
        return 1 if changes.errors else 0  # what the engine or the cluster would refuse: `pulumi up` would fail
    if args.json:
        document = plan.to_json()
        if violations is not None:
            document["policyViolations"] = [v.to_json() for v in violations]
        print(json.dumps(document, indent=2, sort_keys=True))
    elif args.graph == "mermaid":
        print(render_mermaid(plan, changes))
    else:
        print(render_text(plan))
        if violations is not None:
            print()
            print(policy_check.render(violations))
    return 1 if violations and any(v.level == "mandatory" for v in violations) else 0


def _write_import_file(args: argparse.Namespace) -> int:
    """``--import-file``: evaluate the plan with the given real lookups, write the file, print its ids."""
    try:
        plan = run(args.stack, None, adopt.real_lookups(args.subscription_id, args.grafana_principal_id),
                   config_sets=_config_sets(args.config_sets))
        document = adopt.import_file(plan, args.skip)
        try:
            with open(args.import_file, "w", encoding="utf-8") as fh:
                fh.write(adopt.serialize(document))
        except OSError as error:
            raise ValueError(f"--import-file: cannot write {args.import_file}: {error.strerror}") from None
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(adopt.render(document, args.import_file, stack_mark(PROJECT, args.stack), plan))
    if not args.subscription_id or not args.grafana_principal_id:
        print("note: ids use the offline plan's canned lookups for what was not given; pass --subscription-id and "
              "--grafana-principal-id for a real import (docs/adopting.md)", file=sys.stderr)
    return 0


def _read_base(path: str) -> dict:
    """The base plan JSON; ValueError (exit 2) naming the file when it is missing, not a plan, or a state the engine
    would refuse (:func:`offline.plan_state.problem`)."""
    try:
        with open(path, encoding="utf-8") as fh:
            base = json.load(fh)
    except OSError as error:
        raise ValueError(f"--diff-against: cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"--diff-against: {path} is not JSON: {error}") from None
    if not isinstance(base, dict) or not {"resources", "createOrder", "destroyOrder"} <= set(base):
        raise ValueError(f"--diff-against: {path} is not a plan (expected the output of "
                         "`python -m offline.plan --json`)")
    refused = plan_state.problem(base)
    if refused:
        raise ValueError(f"--diff-against: {path}: {plan_state.REFUSED}: {refused}")
    return base


def _resolve_targets(plan: Plan, targets: Sequence[str]) -> list[str]:
    """URNs for ``--replace`` values (a URN, or a resource name that names exactly one resource)."""
    urns = []
    for target in targets:
        found = [r for r in plan.resources if target in (r.urn, r.name)]
        if len(found) != 1:
            problem = "no resource" if not found else f"{len(found)} resources"
            words = [w for w in target.lower().replace("_", "-").split("-") if len(w) >= 3]
            near = sorted(r.name for r in plan.resources if r.custom and any(w in r.name.lower() for w in words))[:5]
            hint = f" (resource names with it: {', '.join(near)})" if near else ""
            raise ValueError(f"--replace: {target!r} names {problem} in this plan{hint}; give a resource name or a URN "
                             "from `--json`")
        if not found[0].custom:  # a component has no provider: `pulumi up --replace` of it replaces nothing under it
            children = sorted(r.name for r in plan.resources if r.custom and r.parent == found[0].urn)
            raise ValueError(f"--replace: {target!r} is a component, and replacing one replaces nothing under it; "
                             f"name the resource to replace: {', '.join(children) or 'none under it'}")
        urns.append(found[0].urn)
    return urns


if __name__ == "__main__":
    sys.exit(exit_code(main))
