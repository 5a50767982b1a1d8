"""Which of the deployer's three roles (docs/deployer-role*.json) a stack needs, on which scopes, with which condition.

``python -m ops.role_assignments --stack NAME [--set KEY=VALUE]... [--deployer-object-id ID] [--grafana-principal-id
ID] [--principal-type User|ServicePrincipal] [--node-resource-group NAME] [--subscription-id ID] [--json]`` reads the
stack's configuration as offline.plan does (Pulumi.<stack>.yaml, the ``--set`` pairs, Pulumi.yaml's defaults) and prints
a shell script: ``az role definition create`` for each role the stack needs, its AssignableScopes the stack's
resource groups, then one ``az role assignment create`` per (role, scope), deduplicated, with the condition
(:func:`assignments`); ``--json`` prints a list of ``{role, scope, condition}``. A value it cannot know stays a
placeholder (``<deployer-object-id>``, ``<grafana-principal-id>``, ``<node-resource-group>``, ``$SUB``).
``--preview [--reviewed]`` prints the preview identity's Reader assignments instead (:func:`preview_assignments`) and
exits 1, naming the group, when one holds a production stack's Grafana or private link service (their reader reads the
approval nonce) or the stack is a production one without ``--reviewed``. Exit 0; 2 on bad input (one line
``error: <key or option>: ...``). Research: docs/decisions/deployer-roles.md.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Optional, Sequence

from cli import OneLineParser, UsageError, exit_code, require_virtualenv
from ops.deployer_role import ROLE_FILES, SUBSCRIPTION_PLACEHOLDER, Clause, condition, load_role

with require_virtualenv("ops.role_assignments"):  # the configuration is read with the program's own modules
    from components.pyroscope_storage import derived_account_name
    from offline.program import ROOT, ConfigSet, read_stack_config
    from offline.stack_file import StackFileError
    from stack.specs import (
        GRAFANA_ADMIN,
        MONITORING_DATA_READER,
        STORAGE_BLOB_DATA_CONTRIBUTOR,
        pyroscope_identity_name,
    )
    from stack_config import cli_values
    from stack_config.load import parse
    from stack_config.schema import PROJECT, ConfigError, StackConfig

DEPLOYER, PRIVATE_LINK, STORAGE = ROLE_FILES
GRAFANA_ADMIN_NAME = "Grafana Admin"
GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: Azure's resource group names: 1-90 letters, digits, '_', '-', '.', '(' and ')', not ending in '.'.
GROUP_NAME = re.compile(r"[-\w.()]{0,89}[-\w()]")
PLACEHOLDERS = {"deployer": "<deployer-object-id>", "preview": "<preview-object-id>",
                "grafana": "<grafana-principal-id>", "node": "<node-resource-group>", "subscription": "$SUB",
                "account": "<storage-account>"}
#: Printed when Pyroscope's storage shares a resource group with the rest of the stack.
RESOURCE_SCOPE_NOTE = ("Pyroscope's storage shares resource group {group} with the stack, so the storage role is "
                       "assigned on the account and the identity, not the group; a NEW stack's first pulumi up needs "
                       "the group scope (neither exists yet): give new stacks a pyroscopeStorageAccountResourceGroup "
                       "of their own, holding nothing else.")


@dataclass(frozen=True)
class Assignment:
    """One ``az role assignment create`` for the deployer: ``role`` a role's Name, ``scope`` an ARM id, ``condition``
    None for a role without roleAssignments/write; ``definition`` the role's file, None for a built-in role."""

    role: str
    scope: str
    condition: Optional[str]
    definition: Optional[object] = None

    def to_json(self) -> dict:
        return {"role": self.role, "scope": self.scope, "condition": self.condition}


@dataclass(frozen=True)
class Principals:
    """Who is who: the deployer's object id and principal type, Grafana's system identity, the cluster's node
    resource group and the subscription (each a placeholder unless given)."""

    deployer: str = PLACEHOLDERS["deployer"]
    principal_type: str = "User"
    grafana: str = PLACEHOLDERS["grafana"]
    node_group: str = PLACEHOLDERS["node"]
    subscription: str = PLACEHOLDERS["subscription"]


def stack_config(stack: str, sets: Sequence[str] = ()) -> StackConfig:
    """The stack's validated configuration as the program reads it, with ``--set KEY=VALUE`` pairs on top. Keys a
    stack reference would fill in stay empty. Raises ConfigError or StackFileError (one line)."""
    config_sets = []
    for pair in sets:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError("--set", f"expected KEY=VALUE (got {pair!r})")
        config_sets.append(ConfigSet(key, value))
    values, secrets = read_stack_config(stack, config_sets)
    values = cli_values.cli_defaults(values)
    cli_values.check_known(values)
    prefix = f"{PROJECT}:"
    return parse({key[len(prefix):]: value for key, value in values.items() if key.startswith(prefix)},
                 [key[len(prefix):] for key in secrets if key.startswith(prefix)])


def _under(target: str, scope: str) -> bool:
    return target.lower() == scope.lower() or target.lower().startswith(scope.lower() + "/")


def assignments(cfg: StackConfig, who: Principals = Principals()) -> list:
    """The deployer's role assignments for ``cfg``: the deployer role on the cluster's, Grafana's and the workspace's
    groups; the private link approver on the PLS's group, and on the node resource group when the PLS is elsewhere
    and ``privateLinkSubnet`` is empty (the wait reads the load balancer's frontend there); the Pyroscope storage role
    (microservices) on its group, or on the account and the identity when that group is also one of the others'; and
    Grafana Admin on a Grafana the stack does not create. Each condition allows only the roles the stack assigns under
    that scope: Grafana Admin to the deployer, Monitoring Data Reader to Grafana's identity (to any service principal
    for a Grafana the stack creates: it has no id yet), Storage Blob Data Contributor to a service principal."""
    sub = who.subscription

    def group(name: str) -> str:
        return f"/subscriptions/{sub}/resourceGroups/{name}"

    cluster_group = cfg.cluster_resource_group or "<cluster-resource-group>"
    grafana_group = cfg.grafana_resource_group or "<grafana-resource-group>"
    workspace_group = cfg.monitor_workspace_resource_group or "<monitor-workspace-resource-group>"
    grafana_id = f"{group(grafana_group)}/providers/Microsoft.Dashboard/grafana/{cfg.grafana_name or '<grafana-name>'}"
    workspace_id = (f"{group(workspace_group)}/providers/Microsoft.Monitor/accounts/"
                    f"{cfg.monitor_workspace_name or '<monitor-workspace-name>'}")
    pls_group = cfg.private_link_service_resource_group or who.node_group
    grants = []  # (role file, clause, the scope the stack assigns it on)
    if cfg.create_grafana:
        grants.append((DEPLOYER, Clause(GRAFANA_ADMIN, "PrincipalId", who.deployer), grafana_id))
    if cfg.assigns_monitoring_data_reader:
        reader = (Clause(MONITORING_DATA_READER, "PrincipalType", "ServicePrincipal") if cfg.create_grafana
                  else Clause(MONITORING_DATA_READER, "PrincipalId", who.grafana))
        grants.append((DEPLOYER, reader, workspace_id))
    placed = [(DEPLOYER, group(name)) for name in (cluster_group, grafana_group, workspace_group)]
    placed.append((PRIVATE_LINK, group(pls_group)))
    if pls_group.lower() != who.node_group.lower() and not cfg.private_link_subnet:
        placed.append((PRIVATE_LINK, group(who.node_group)))
    note = None
    if cfg.pyroscope_mode == "microservices":
        storage_group = cfg.pyroscope_storage_account_resource_group or cluster_group
        account = cfg.pyroscope_storage_account or (
            PLACEHOLDERS["account"] if sub == PLACEHOLDERS["subscription"] else derived_account_name(
                f"{group(cluster_group)}/providers/Microsoft.ContainerService/managedClusters/{cfg.cluster_name}"))
        account_id = f"{group(storage_group)}/providers/Microsoft.Storage/storageAccounts/{account}"
        grants.append((STORAGE, Clause(STORAGE_BLOB_DATA_CONTRIBUTOR, "PrincipalType", "ServicePrincipal"),
                       f"{account_id}/blobServices/default/containers/{cfg.pyroscope_blob_container}"))
        others = {name.lower() for name in (cluster_group, grafana_group, workspace_group, pls_group, who.node_group)}
        if storage_group.lower() in others:
            identity_id = (f"{group(storage_group)}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
                           f"{pyroscope_identity_name(cfg.cluster_name)}")
            placed += [(STORAGE, account_id), (STORAGE, identity_id)]
            note = RESOURCE_SCOPE_NOTE.format(group=storage_group)
        else:
            placed.append((STORAGE, group(storage_group)))
    found, seen = [], set()
    for definition, scope in placed:
        if (definition, scope.lower()) in seen:
            continue
        seen.add((definition, scope.lower()))
        role = load_role(definition)
        conditioned = "Microsoft.Authorization/roleAssignments/write" in role["Actions"]
        clauses = [clause for owner, clause, target in grants if owner == definition and _under(target, scope)]
        found.append(Assignment(role["Name"], scope, condition(clauses) if conditioned else None, definition))
    if not cfg.create_grafana:  # the datasource steps call Grafana's API as Grafana Admin
        found.append(Assignment(GRAFANA_ADMIN_NAME, grafana_id, None))
    return found if note is None else [*found, note]


class PreviewRefused(Exception):
    """A preview identity that would read a production stack's approval nonce; the message is one line."""


def production_stacks() -> dict:
    """{stack: StackConfig} of the checkout's stack files that set ``production: "true"``."""
    found = {}
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi."):-len(".yaml")]
        cfg = stack_config(name)
        if cfg.production:
            found[name] = cfg
    return found


def preview_assignments(stack: str, cfg: StackConfig, who: Principals = Principals(), reviewed: bool = False,
                        production: Optional[dict] = None) -> list:
    """The preview identity's Reader assignments for stack ``stack``: the cluster's, Grafana's, the workspace's and
    the PLS's groups (the node resource group without privateLinkServiceResourceGroup). Reader answers a managed
    private endpoint's requestMessage and a Pending connection's description, which carry the approval nonce, so it
    raises PreviewRefused for a group that holds the Grafana or the PLS group of a production stack (``production``:
    {name: StackConfig}, default :func:`production_stacks`), and for a production stack unless ``reviewed`` (the
    ``preview`` environment has required reviewers)."""
    if cfg.production and not reviewed:
        raise PreviewRefused(f"stack {stack} sets production: \"true\": a real preview would let every pull request "
                             "read its approval nonce and decrypt its secrets; give the preview environment required "
                             "reviewers and pass --reviewed, or preview a stack of its own (docs/security.md)")
    groups = [cfg.cluster_resource_group, cfg.grafana_resource_group, cfg.monitor_workspace_resource_group,
              cfg.private_link_service_resource_group or who.node_group]
    guarded = {}
    for name, other in (production_stacks() if production is None else production).items():
        if name == stack:
            continue
        guarded.setdefault(other.grafana_resource_group.lower(), (name, "Grafana"))
        if other.private_link_service_resource_group:
            guarded.setdefault(other.private_link_service_resource_group.lower(), (name, "private link service"))
    found, seen = [], set()
    for name in groups:
        if not name or name.lower() in seen:
            continue
        seen.add(name.lower())
        if name.lower() in guarded:
            owner, what = guarded[name.lower()]
            raise PreviewRefused(f"resource group {name} holds production stack {owner}'s {what}: Reader there reads "
                                 "its approval nonce (the managed private endpoint's requestMessage, the Pending "
                                 f"connection's description); give stack {stack} a {what} in a group of its own")
        found.append(Assignment("Reader", f"/subscriptions/{who.subscription}/resourceGroups/{name}", None))
    return found


def definition(path, scopes: Sequence[str]) -> dict:
    """The role file at ``path`` with its AssignableScopes the resource groups of ``scopes`` (each once, in order)."""
    role = load_role(path)
    groups = []
    for scope in scopes:
        parts = scope.split("/")
        group = "/".join(parts[:5])  # /subscriptions/<s>/resourceGroups/<g>
        if group.lower() not in [g.lower() for g in groups]:
            groups.append(group)
    return {**role, "AssignableScopes": groups}


def _escaped(text: str, subscription: str, special: str) -> str:
    """``text`` with the shell's ``special`` characters escaped, ``$SUB`` left to the shell."""
    escaped = re.sub(f"([{re.escape(special)}])", r"\\\1", text)
    if subscription == PLACEHOLDERS["subscription"]:
        escaped = escaped.replace("\\" + subscription, subscription)
    return escaped


def _quoted(value: str, subscription: str) -> str:
    """``value`` as one shell word: bare when it is plain, else in double quotes."""
    if re.fullmatch(r"[\w./:-]+", value):
        return value
    return '"' + _escaped(value, subscription, '\\"`$') + '"'


def script(stack: str, found: Sequence, who: Principals, preview: bool = False) -> str:
    """The shell script for ``found`` (:func:`assignments`, :func:`preview_assignments` with ``preview``): the
    definitions, then the assignments, then notes."""
    rows = [a for a in found if isinstance(a, Assignment)]
    notes = [a for a in found if isinstance(a, str)]
    lines = [f"# Stack {stack}: the preview identity's Reader assignments (docs/platform.md, Identities). Run by "
             "someone who may assign roles." if preview else
             f"# Stack {stack}: the deployer's roles and where they are assigned (docs/deployer-role.md). Run by "
             "someone who may create roles and assign them."]
    if who.subscription == PLACEHOLDERS["subscription"]:
        lines.append("SUB=$(az account show --query id --output tsv)")
    files = []
    for row in rows:
        if row.definition is not None and row.definition not in files:
            files.append(row.definition)
    for path in files:  # an unquoted here-document: the shell fills in $SUB
        body = definition(path, [row.scope for row in rows if row.definition == path])
        text = json.dumps(body, indent=2).replace(SUBSCRIPTION_PLACEHOLDER, who.subscription)
        target = f"/tmp/{path.stem}.json"
        lines += [f"cat > {target} <<EOF", _escaped(text, who.subscription, '\\`$'), "EOF",
                  f"az role definition create --role-definition @{target}"]
    for row in rows:
        role = GRAFANA_ADMIN if row.role == GRAFANA_ADMIN_NAME else row.role
        line = (f"az role assignment create --assignee-object-id {_quoted(who.deployer, who.subscription)} "
                f"--assignee-principal-type {who.principal_type} --role {_quoted(role, who.subscription)} "
                f"--scope {_quoted(row.scope, who.subscription)}")
        if row.condition is not None:
            line += f" --condition {_quoted(row.condition, who.subscription)} --condition-version 2.0"
        lines.append(line)
    lines += [f"# {note}" for note in notes]
    text = "\n".join(lines)
    left = [p for key, p in PLACEHOLDERS.items() if key != "subscription" and p in text]
    if left:
        lines.append(f"# Replace before running: {', '.join(left)} (docs/deployer-role.md, \"Placeholders\").")
    return "\n".join(lines) + "\n"


def _checked(option: str, value: Optional[str], pattern: re.Pattern, expected: str) -> Optional[str]:
    if value is not None and not pattern.fullmatch(value):
        raise UsageError(f"{option}: expected {expected} (got {value!r})")
    return value


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the stack's role definitions and assignments (a shell script, or ``--json``): 0; 2 on bad input (a usage
    error, a configuration offline.plan would refuse)."""
    parser = OneLineParser(prog="python -m ops.role_assignments", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="the stack whose Pulumi.<stack>.yaml to read (default dev)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one config key")
    parser.add_argument("--deployer-object-id", help="object id of whoever runs pulumi up (a GUID)")
    parser.add_argument("--grafana-principal-id", help="principal id of the existing Grafana's system identity")
    parser.add_argument("--principal-type", choices=["User", "ServicePrincipal"],
                        help="the deployer's principal type (default deployerPrincipalType, User for auto)")
    parser.add_argument("--node-resource-group", help="the cluster's node resource group (MC_...)")
    parser.add_argument("--subscription-id", help="the subscription's id (default $SUB, set by the script)")
    parser.add_argument("--json", action="store_true", help="print a list of {role, scope, condition}")
    parser.add_argument("--preview", action="store_true",
                        help="the preview identity's Reader assignments (refused where they would read a production "
                             "stack's approval nonce)")
    parser.add_argument("--reviewed", action="store_true",
                        help="with --preview: the preview environment has required reviewers (a production stack)")
    try:
        args = parser.parse_args(argv)
        guid = "an object id (a GUID such as 00000000-0000-0000-0000-000000000000)"
        deployer = _checked("--deployer-object-id", args.deployer_object_id, GUID, guid)
        grafana = _checked("--grafana-principal-id", args.grafana_principal_id, GUID, guid)
        node = _checked("--node-resource-group", args.node_resource_group, GROUP_NAME,
                        "a resource group name (1-90 letters, digits, '_', '-', '.', '(', ')', not ending in '.')")
        subscription = _checked("--subscription-id", args.subscription_id, GUID, "a subscription id (a GUID)")
        cfg = stack_config(args.stack, args.set)
    except (UsageError, ConfigError, StackFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    principal_type = args.principal_type or (
        "User" if cfg.deployer_principal_type == "auto" else cfg.deployer_principal_type)
    who = Principals(deployer or PLACEHOLDERS["deployer"], principal_type, grafana or PLACEHOLDERS["grafana"],
                     node or PLACEHOLDERS["node"], subscription or PLACEHOLDERS["subscription"])
    if args.preview:
        who = Principals(deployer or PLACEHOLDERS["preview"], args.principal_type or "ServicePrincipal",
                         who.grafana, who.node_group, who.subscription)
        try:
            found = preview_assignments(args.stack, cfg, who, args.reviewed)
        except (PreviewRefused, ConfigError, StackFileError) as error:
            print(f"error: preview: {error}", file=sys.stderr)
            return 1
    else:
        found = assignments(cfg, who)
    if args.json:
        print(json.dumps([a.to_json() for a in found if isinstance(a, Assignment)], indent=2))
    else:
        sys.stdout.write(script(args.stack, found, who, args.preview))
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
