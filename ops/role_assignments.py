"""Which of the deployer's four roles (docs/deployer-role*.json) a stack needs, on which scopes, with which condition.

``python -m ops.role_assignments --stack NAME [--set KEY=VALUE]... [--set-path PATH=VALUE]... [--deployer-object-id ID]
[--grafana-principal-id ID] [--principal-type User|ServicePrincipal] [--node-resource-group NAME] [--subscription-id ID]
[--json] [--pyroscope-group-dedicated]`` reads the stack's configuration as offline.plan does and prints a shell script:
``az role definition create`` for each role the stack needs, named ``<role> (<stack>)``, its AssignableScopes the
stack's resource groups, then one ``az role assignment create`` per (role, scope), each role-assigning one with a
condition (:func:`assignments`); ``--json`` a list of ``{role, scope, condition}``. What it cannot know stays a
placeholder.
The script (bash, any mode) stops at its first failing command and writes role files only into a ``mktemp -d``
directory of its own (:func:`script`; docs/decisions/role-script-files.md).
``--preview`` prints the preview identity's Reader assignments instead (:func:`preview_assignments`) and exits 1,
one line, where they would read a production stack's approval nonce or cluster (:func:`production_stacks`): there is
no way to give a pull request's preview a production stack, whatever reviewers the ``preview`` environment has.
``--drift`` prints the drift identity's read-only roles (:func:`drift_assignments`, :func:`drift_other_grants`).
Exit 0; 2 on bad input (one line ``error: <key or option>: ...``). Research: docs/decisions/deployer-roles.md.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from cli import OneLineParser, UsageError, exit_code, require_virtualenv
from ops.deployer_role import (
    GRAFANA_VIEWER_ROLE_ID,
    ROLE_FILES,
    SUBSCRIPTION_PLACEHOLDER,
    Clause,
    condition,
    load_role,
)

with require_virtualenv("ops.role_assignments"):  # the configuration is read with the program's own modules
    from components.pyroscope_storage import derived_account_name
    from offline.program import ROOT, ConfigSet, read_stack_config
    from offline.stack_file import StackFileError
    from stack.specs import (
        GRAFANA_ADMIN,
        GRAFANA_VIEWER,
        MONITORING_DATA_READER,
        STORAGE_BLOB_DATA_CONTRIBUTOR,
        pyroscope_identity_name,
    )
    from stack_config import cli_values
    from stack_config.load import parse
    from stack_config.schema import PROJECT, ConfigError, StackConfig

DEPLOYER, ASSIGNER, PRIVATE_LINK, STORAGE = ROLE_FILES
GRAFANA_ADMIN_NAME = "Grafana Admin"
GRAFANA_VIEWER_NAME = "Grafana Viewer"
#: Built-in roles printed by id: a custom role of the same name cannot stand in for them.
BUILT_IN_IDS = {GRAFANA_ADMIN_NAME: GRAFANA_ADMIN, GRAFANA_VIEWER_NAME: GRAFANA_VIEWER_ROLE_ID}
#: The stacks the production identity deploys (ops/stack_matrix.py reads the same file).
STACKS_FILE = ROOT / "deploy" / "stacks.json"
GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: Azure's resource group names: 1-90 letters, digits, '_', '-', '.', '(' and ')', not ending in '.'.
GROUP_NAME = re.compile(r"[-\w.()]{0,89}[-\w()]")
PLACEHOLDERS = {"deployer": "<deployer-object-id>", "preview": "<preview-object-id>", "drift": "<drift-object-id>",
                "grafana": "<grafana-principal-id>", "node": "<node-resource-group>", "subscription": "$SUB",
                "account": "<storage-account>"}
#: A Pulumi state container, filled in by hand: the previewable stacks' (preview), production's (drift check).
STATE_CONTAINER = "<state-storage-account-id>/blobServices/default/containers/<state-container>"
#: Printed when the Pyroscope storage role is assigned on resources rather than on Pyroscope's resource group.
RESOURCE_SCOPE_NOTE = ("Pyroscope's storage role is assigned on the {what} and the identity, not on resource group "
                       "{group} ({why}); a NEW stack's first pulumi up needs the group scope (the identity does not "
                       "exist yet): give new stacks a pyroscopeStorageAccountResourceGroup of their own, holding "
                       "nothing else, let the stack create the account there, and pass --pyroscope-group-dedicated.")


@dataclass(frozen=True)
class Assignment:
    """One ``az role assignment create``: ``role`` the role's name (a custom role's with `` (<stack>)``), ``scope`` an
    ARM id, ``condition`` None for a role without roleAssignments/write; ``definition`` the role's file, None for a
    built-in role."""

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


def stack_role_name(name: str, stack: str) -> str:
    """A custom role's name for one stack: names are unique in a tenant, so each stack creates its own."""
    return f"{name} ({stack})"


def stack_config(stack: str, sets: Sequence[str] = (), paths: Sequence[str] = ()) -> StackConfig:
    """The stack's validated configuration as the program reads it, with ``--set KEY=VALUE`` pairs on top, then
    ``--set-path PATH=VALUE`` ones (``pulumi config set --path``: a list key's items). Keys a stack reference would
    fill in stay empty. Raises ConfigError or StackFileError (one line)."""
    config_sets = []
    for option, pairs in (("--set", sets), ("--set-path", paths)):
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                form = "PATH=VALUE" if option == "--set-path" else "KEY=VALUE"
                raise ConfigError(option, f"expected {form} (got {pair!r})")
            config_sets.append(ConfigSet(key, value, option == "--set-path"))
    values, secrets = read_stack_config(stack, config_sets)
    values = cli_values.cli_defaults(values)
    cli_values.check_known(values)
    prefix = f"{PROJECT}:"
    return parse({key[len(prefix):]: value for key, value in values.items() if key.startswith(prefix)},
                 [key[len(prefix):] for key in secrets if key.startswith(prefix)])


def _under(target: str, scope: str) -> bool:
    return target.lower() == scope.lower() or target.lower().startswith(scope.lower() + "/")


def _storage_scopes(cfg: StackConfig, group, others: dict, dedicated: bool, sub: str, node_unknown: bool) -> tuple:
    """(target, scopes, note) of the Pyroscope storage role: the container the stack assigns Storage Blob Data
    Contributor on; the group only when the stack creates the account in a group none of ``others`` ({lower-cased
    group: whose}) is and ``dedicated``, else the created account (a brought one: its container) and the identity, and
    the note.
    UsageError for ``dedicated`` where the group scope does not apply, or may not be checked (``node_unknown``: no
    node resource group given)."""
    cluster_group = cfg.cluster_resource_group or "<cluster-resource-group>"
    storage_group = cfg.pyroscope_storage_account_resource_group or cluster_group
    account = cfg.pyroscope_storage_account or (
        PLACEHOLDERS["account"] if sub == PLACEHOLDERS["subscription"] else derived_account_name(
            f"{group(cluster_group)}/providers/Microsoft.ContainerService/managedClusters/{cfg.cluster_name}"))
    account_id = f"{group(storage_group)}/providers/Microsoft.Storage/storageAccounts/{account}"
    container_id = f"{account_id}/blobServices/default/containers/{cfg.pyroscope_blob_container}"
    shared = others.get(storage_group.lower())
    why = (f"it is also the stack's {shared} group" if shared else
           "it holds an account the stack does not create (pyroscopeStorageAccount)" if cfg.pyroscope_storage_account
           else "no --pyroscope-group-dedicated says it holds nothing else")
    if dedicated:
        if shared or cfg.pyroscope_storage_account:
            raise UsageError(f"--pyroscope-group-dedicated: the storage role stays off resource group {storage_group}: "
                             f"{why}")
        if node_unknown:
            raise UsageError("--pyroscope-group-dedicated: pass --node-resource-group too, so the storage role cannot "
                             "land on the cluster's node resource group (its kubelet and agent-pool identities)")
        if storage_group.lower().startswith("mc_"):
            raise UsageError(f"--pyroscope-group-dedicated: {storage_group} looks like a node resource group (MC_...), "
                             "which holds the cluster's own identities; give Pyroscope's storage a group of its own")
        return container_id, [group(storage_group)], None
    identity_id = (f"{group(storage_group)}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
                   f"{pyroscope_identity_name(cfg.cluster_name)}")
    what = "container" if cfg.pyroscope_storage_account else "account"
    scopes = [container_id if cfg.pyroscope_storage_account else account_id, identity_id]
    return container_id, scopes, RESOURCE_SCOPE_NOTE.format(what=what, group=storage_group, why=why)


def grafana_id(cfg: StackConfig, subscription: str) -> str:
    """The ARM id of the stack's Grafana, placeholders where a stack reference fills it in."""
    return (f"/subscriptions/{subscription}/resourceGroups/{cfg.grafana_resource_group or '<grafana-resource-group>'}"
            f"/providers/Microsoft.Dashboard/grafana/{cfg.grafana_name or '<grafana-name>'}")


def assignments(stack: str, cfg: StackConfig, who: Principals = Principals(), dedicated: bool = False) -> list:
    """The deployer's role assignments for stack ``stack`` (:class:`Assignment`, then notes as strings): the deployer
    role on the cluster's, Grafana's and the workspace's groups; the role assigner only where the stack assigns a role
    (the workspace's group: Monitoring Data Reader; Grafana's: with createGrafana Grafana Admin, with grafanaViewers
    Grafana Viewer); the private link approver on the PLS's group, and on the node resource group when the PLS is
    elsewhere and ``privateLinkSubnet`` is empty; the Pyroscope storage role (microservices, :func:`_storage_scopes`;
    ``dedicated``: the operator confirms its group holds nothing else); Grafana Admin on a Grafana the stack does not
    create. Each role-assigning assignment's condition allows only the roles the stack assigns under its scope, each to
    its principal (Grafana Admin to the deployer; Monitoring Data Reader to Grafana's identity, any service principal
    for a created Grafana; Grafana Viewer to each of grafanaViewers; Storage Blob Data Contributor to a service
    principal). UsageError (one line) for ``dedicated`` where it does not apply."""
    sub = who.subscription

    def group(name: str) -> str:
        return f"/subscriptions/{sub}/resourceGroups/{name}"

    cluster_group = cfg.cluster_resource_group or "<cluster-resource-group>"
    grafana_group = cfg.grafana_resource_group or "<grafana-resource-group>"
    workspace_group = cfg.monitor_workspace_resource_group or "<monitor-workspace-resource-group>"
    grafana = grafana_id(cfg, sub)
    workspace_id = (f"{group(workspace_group)}/providers/Microsoft.Monitor/accounts/"
                    f"{cfg.monitor_workspace_name or '<monitor-workspace-name>'}")
    pls_group = cfg.private_link_service_resource_group or who.node_group
    grants = []  # (role file, clause, the scope the stack assigns it on)
    if cfg.create_grafana:
        grants.append((ASSIGNER, Clause(GRAFANA_ADMIN, "PrincipalId", who.deployer), grafana))
    if cfg.assigns_monitoring_data_reader:
        # A Grafana the stack creates has no identity before its first up: any service principal until the
        # generator is run again with --grafana-principal-id.
        known = who.grafana != PLACEHOLDERS["grafana"] or not cfg.create_grafana
        reader = (Clause(MONITORING_DATA_READER, "PrincipalId", who.grafana) if known
                  else Clause(MONITORING_DATA_READER, "PrincipalType", "ServicePrincipal"))
        grants.append((ASSIGNER, reader, workspace_id))
    # Grafana Viewer to each of grafanaViewers on the Grafana workspace (components/grafana_viewers.py), by object id.
    grants += [(ASSIGNER, Clause(GRAFANA_VIEWER, "PrincipalId", viewer.object_id), grafana)
               for viewer in cfg.grafana_viewers]
    placed = [(DEPLOYER, group(name)) for name in (cluster_group, grafana_group, workspace_group)]
    placed += [(ASSIGNER, group(target.split("/")[4])) for _, _, target in grants]
    placed.append((PRIVATE_LINK, group(pls_group)))
    if pls_group.lower() != who.node_group.lower() and not cfg.private_link_subnet:
        placed.append((PRIVATE_LINK, group(who.node_group)))
    note = None
    if cfg.pyroscope_mode == "microservices":
        others = {}
        for name, what in ((cluster_group, "cluster's"), (grafana_group, "Grafana's"),
                           (workspace_group, "workspace's"), (pls_group, "private link service's"),
                           (who.node_group, "node resource")):
            others.setdefault(name.lower(), what)
        container_id, scopes, note = _storage_scopes(cfg, group, others, dedicated, sub,
                                                     who.node_group == PLACEHOLDERS["node"])
        # Every scope of the storage role may assign Storage Blob Data Contributor: the condition needs a clause.
        grants += [(STORAGE, Clause(STORAGE_BLOB_DATA_CONTRIBUTOR, "PrincipalType", "ServicePrincipal"), scope)
                   for scope in scopes if not _under(container_id, scope)]
        grants.append((STORAGE, Clause(STORAGE_BLOB_DATA_CONTRIBUTOR, "PrincipalType", "ServicePrincipal"),
                       container_id))
        placed += [(STORAGE, scope) for scope in scopes]
    elif dedicated:
        raise UsageError("--pyroscope-group-dedicated: only with pyroscopeMode microservices (the stack has no "
                         "Pyroscope storage)")
    found, seen = [], set()
    for definition, scope in placed:
        if (definition, scope.lower()) in seen:
            continue
        seen.add((definition, scope.lower()))
        role = load_role(definition)
        conditioned = "Microsoft.Authorization/roleAssignments/write" in role["Actions"]
        clauses = [clause for owner, clause, target in grants if owner == definition and _under(target, scope)]
        found.append(Assignment(stack_role_name(role["Name"], stack), scope,
                                condition(clauses) if conditioned else None, definition))
    if not cfg.create_grafana:  # the datasource steps call Grafana's API as Grafana Admin
        found.append(Assignment(GRAFANA_ADMIN_NAME, grafana, None))
    return found if note is None else [*found, note]


class PreviewRefused(Exception):
    """A preview identity that would read a production stack's approval nonce; the message is one line."""


@dataclass(frozen=True)
class ProductionStack:
    """A stack the production identity deploys, as the preview guard sees it: ``why`` it is one, its Grafana's, PLS's
    and cluster's resource groups and its cluster's name ("" when a stack reference fills them in or, for a stack
    without a stack file, unknown), ``cluster_from_reference`` for ``clusterStack``."""

    why: str
    grafana_group: str = ""
    pls_group: str = ""
    cluster_group: str = ""
    cluster_name: str = ""
    cluster_from_reference: bool = False

    @classmethod
    def of(cls, cfg: StackConfig, why: str) -> "ProductionStack":
        return cls(why, cfg.grafana_resource_group, cfg.private_link_service_resource_group,
                   cfg.cluster_resource_group, cfg.cluster_name, bool(cfg.cluster_stack))


LISTED = "is deployed by the production identity (deploy/stacks.json lists it)"


def listed_stacks(path: Optional[Path] = None) -> dict:
    """{stack: "<resource group>/<Grafana name>"} of ``path`` (default :data:`STACKS_FILE`), the stack's last path
    segment as its stack file names it; {} when the file is absent. ConfigError (one line) for one ops.stack_matrix
    would refuse."""
    path = STACKS_FILE if path is None else path
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["stacks"]
        return {entry["stack"].rsplit("/", 1)[-1]: entry["grafana"] for entry in entries}
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(path.name, f'expected {{"stacks": [{{"stack": ..., "grafana": "<rg>/<name>"}}]}} ({error})')


def production_stacks(path: Optional[Path] = None) -> dict:
    """{stack: ProductionStack} of the stacks the production identity deploys: those deploy/stacks.json (``path``)
    lists, read from their stack files (a listed stack without one: the Grafana group of its ``grafana`` entry), and
    the checkout's stack files that set ``production: "true"``."""
    listed = listed_stacks(path)
    found = {}
    for stack_path in sorted(ROOT.glob("Pulumi.*.yaml")):
        name = stack_path.name[len("Pulumi."):-len(".yaml")]
        cfg = stack_config(name)
        if name in listed or cfg.production:
            found[name] = ProductionStack.of(cfg, LISTED if name in listed else 'sets production: "true"')
    for name, grafana in listed.items():
        # No stack file: its cluster, and so its node resource group, is unknown, as with clusterStack.
        found.setdefault(name, ProductionStack(LISTED, grafana.split("/", 1)[0], cluster_from_reference=True))
    return found


def preview_assignments(stack: str, cfg: StackConfig, who: Principals = Principals(),
                        production: Optional[dict] = None) -> list:
    """The preview identity's Reader assignments for stack ``stack``: the cluster's, Grafana's, the workspace's and
    the PLS's groups (the node resource group without privateLinkServiceResourceGroup). Reader answers a managed
    private endpoint's requestMessage and a Pending connection's description, the approval nonce, so PreviewRefused
    (one line) for: a production stack (``production``, default :func:`production_stacks`); a group holding
    another's Grafana or PLS group; a stack on a production stack's cluster (the preview's AKS Cluster User reads its
    Kubernetes objects, and without privateLinkServiceResourceGroup Reader reads its PLS's Pending connection); a
    production stack whose Grafana or cluster comes from a stack reference (the generator cannot tell where they
    are). A reviewer on the ``preview`` environment opens none of these: whoever may approve may also be the pull
    request's author."""
    production = production_stacks() if production is None else production
    own = production.get(stack)
    if own is not None or cfg.production:
        why = own.why if own is not None else 'sets production: "true"'
        raise PreviewRefused(f"stack {stack} {why}: a real preview would let every pull request read its approval "
                             "nonce and decrypt its secrets; preview a stack of its own that deploy/stacks.json does "
                             "not list, on a cluster of its own (docs/security.md)")
    reads_node_group = not cfg.private_link_service_resource_group
    cluster = (cfg.cluster_resource_group.lower(), cfg.cluster_name.lower())
    guarded = {}
    for name, other in production.items():
        if name == stack:
            continue
        if not other.grafana_group:
            raise PreviewRefused(f"production stack {name} takes its Grafana from a stack reference (grafanaStack): "
                                 "the generator cannot tell whether these groups hold its managed private endpoint; "
                                 f"set grafanaResourceGroup in Pulumi.{name}.yaml")
        if other.cluster_from_reference:
            raise PreviewRefused(f"production stack {name} names its cluster through a stack reference "
                                 "(clusterStack) or has no stack file here: the generator cannot tell whether this "
                                 f"preview is on its cluster; set its clusterResourceGroup and clusterName in "
                                 f"Pulumi.{name}.yaml")
        if other.cluster_group and (other.cluster_group.lower(), other.cluster_name.lower()) == cluster:
            where = ("its private link service is in the cluster's node resource group, where Reader reads its "
                     "Pending connection's description (the approval nonce), and " if reads_node_group and
                     not other.pls_group else "")
            raise PreviewRefused(f"stack {stack} is on production stack {name}'s cluster "
                                 f"({other.cluster_group}/{other.cluster_name}): {where}the preview's AKS Cluster "
                                 "User reads its Kubernetes objects; preview a stack on a cluster of its own")
        if other.grafana_group:
            guarded.setdefault(other.grafana_group.lower(), (name, "Grafana"))
        if other.pls_group:
            guarded.setdefault(other.pls_group.lower(), (name, "private link service"))
    groups = [cfg.cluster_resource_group, cfg.grafana_resource_group, cfg.monitor_workspace_resource_group,
              cfg.private_link_service_resource_group or who.node_group]
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


def preview_other_grants(cfg: StackConfig, who: Principals) -> list:
    """The preview's grants the generator cannot scope offline (docs/platform.md, "Identities"), as commented-out
    ``az role assignment create`` lines with placeholders, each after a line saying when it applies."""
    cluster = (f"/subscriptions/{who.subscription}/resourceGroups/"
               f"{cfg.cluster_resource_group or '<cluster-resource-group>'}/providers/"
               f"Microsoft.ContainerService/managedClusters/{cfg.cluster_name or '<cluster-name>'}")
    grants = [
        ("only on an Entra ID cluster with local accounts disabled (elsewhere the credential it fetches is an admin "
         "one):",
         "Azure Kubernetes Service Cluster User Role", cluster),
        ("only on a cluster with Azure RBAC for Kubernetes authorization:", "Azure Kubernetes Service RBAC Reader",
         cluster),
        ("the previewable stacks' state container (never production's):", "Storage Blob Data Reader", STATE_CONTAINER),
        ("the preview's own secrets-provider key (never production's):", "Key Vault Crypto User",
         "<preview-key-vault-id>/keys/<preview-key>"),
    ]
    lines = ["The preview's other grants, which the generator cannot scope offline: uncomment those that apply."]
    for when, role, scope in grants:
        lines += [when, f"az role assignment create --assignee-object-id {_quoted(who.deployer, who.subscription)} "
                        f"--assignee-principal-type ServicePrincipal --role {_quoted(role, who.subscription)} "
                        f"--scope {_quoted(scope, who.subscription)}"]
    return lines


#: The drift identity's role on production's secrets-provider key: decrypt, nothing else. `pulumi stack output` decrypts
#: the stack's data key even without --show-secrets (pulumi/pulumi v3.230.0 pkg/resource/stack/deployment.go
#: DeserializeStackOutputs; pkg/secrets/cloud/manager.go newCloudSecretsManager), and go-cloud's Key Vault keeper calls
#: Decrypt alone. Key Vault Crypto User would also let it encrypt, sign and update the key (disable it).
STATE_DECRYPT_ROLE = {
    "Name": "aks-gpu-observability state decrypt", "IsCustom": True,
    "Description": "Decrypts with the key it is assigned on, and nothing else (no encrypt, sign or key update): the "
                   "aks-gpu-observability drift check reads a stack's outputs, whose data key the secrets provider "
                   "decrypts.",
    "Actions": [], "NotActions": [], "DataActions": ["Microsoft.KeyVault/vaults/keys/decrypt/action"],
    "NotDataActions": [],
    "AssignableScopes": ["/subscriptions/{subscription}/resourceGroups/<key-vault-resource-group>"],
}


def drift_assignments(cfg: StackConfig, who: Principals = Principals()) -> list:
    """The drift identity's Azure role for the stack: Grafana Viewer on its Grafana. ``ops.verify --drift`` reads
    Grafana's health and plugins, the stack's two datasources and its dashboard through Grafana's API, and downloads
    the dashboard's source without a token; it calls no ARM API (ops.deployer_role maps each call), so no Reader
    anywhere. Viewer reads a datasource's settings where Grafana does not enforce data source permissions (grafana/
    grafana pkg/api/accesscontrol.go grants fixed:datasources:reader to Viewer without the Enterprise licence's
    dspermissions.enforcement); where it does, the check stops with Grafana's 403 (exit 2) until the identity may
    read the two datasources in Grafana. Nothing here writes."""
    return [Assignment(GRAFANA_VIEWER_NAME, grafana_id(cfg, who.subscription), None)]


def drift_other_grants(who: Principals) -> list:
    """The drift identity's grants on production's self-managed backend, which the generator cannot scope offline, as
    commented-out commands, each after a line saying why: Storage Blob Data Reader on the state container and
    :data:`STATE_DECRYPT_ROLE` on production's key (created once per tenant). With Pulumi Cloud none: the team of
    ``PULUMI_DRIFT_SCOPE`` holds Stack Read."""
    role = {**STATE_DECRYPT_ROLE, "AssignableScopes": [scope.format(subscription=who.subscription)
                                                       for scope in STATE_DECRYPT_ROLE["AssignableScopes"]]}

    def assign(role_name: str, scope: str) -> str:
        return (f"az role assignment create --assignee-object-id {_quoted(who.deployer, who.subscription)} "
                f"--assignee-principal-type ServicePrincipal --role {_quoted(role_name, who.subscription)} "
                f"--scope {_quoted(scope, who.subscription)}")

    return [
        "The drift identity's grants on production's azblob:// state and azurekeyvault:// secrets provider, which the "
        "generator cannot scope offline: uncomment them for that backend (Pulumi Cloud: the drift team's Stack Read).",
        "production's state container, read only (pulumi stack output reads the checkpoint and takes no lock):",
        assign("Storage Blob Data Reader", STATE_CONTAINER),
        "production's key, decrypt only (pulumi stack output decrypts the stack's data key, secret outputs or not); "
        "the role once per tenant, on the key vault's group:",
        *_role_file("state-decrypt-role", json.dumps(role), who.subscription),
        f"az role definition create --role-definition @{_role_path('state-decrypt-role')}",
        assign(STATE_DECRYPT_ROLE["Name"], "<production-key-vault-id>/keys/<production-key>"),
    ]


def definition(path, scopes: Sequence[str], stack: str) -> dict:
    """The role file at ``path`` named for ``stack`` (:func:`stack_role_name`), its AssignableScopes the resource
    groups of ``scopes`` (each once, in order)."""
    role = load_role(path)
    groups = []
    for scope in scopes:
        parts = scope.split("/")
        group = "/".join(parts[:5])  # /subscriptions/<s>/resourceGroups/<g>
        if group.lower() not in [g.lower() for g in groups]:
            groups.append(group)
    return {**role, "Name": stack_role_name(role["Name"], stack), "AssignableScopes": groups}


#: The printed scripts stop at the first command that fails: a role whose create failed is not assigned, nothing
#: runs without the subscription.
PROLOGUE = ["#!/usr/bin/env bash", "set -euo pipefail"]
#: ``az account show`` answers a subscription id; anything else (an empty answer) stops the script before it lands in
#: a scope or in the role files' sed.
SUBSCRIPTION_LINES = [
    "SUB=$(az account show --query id --output tsv)",
    "[[ $SUB =~ ^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$ ]] "
    "|| { echo \"error: az account show: expected a subscription id (got '$SUB')\" >&2; exit 1; }",
]
#: The role files go to a directory only the caller may enter (mktemp -d: a new random name, mode 0700), removed on
#: exit. At a fixed path in /tmp, another local user could make the file first, and az would create their role.
PRIVATE_DIR = ["dir=$(mktemp -d)", "trap 'rm -rf \"$dir\"' EXIT"]


def _role_path(stem: str) -> str:
    """The role file ``stem`` in the script's private directory, as one shell word."""
    return f'"$dir/{stem}.json"'


def _role_file(stem: str, body: str, subscription: str) -> list:
    """Lines writing ``body`` to :func:`_role_path` through a quoted here-document, which the shell copies as it is;
    with the ``$SUB`` placeholder, sed puts the subscription the script read into the role's scopes."""
    writer = ('sed "s|/subscriptions/[$]SUB/|/subscriptions/$SUB/|g"' if subscription == PLACEHOLDERS["subscription"]
              else "cat")
    return [f"{writer} > {_role_path(stem)} <<'EOF'", body, "EOF"]


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


HEADERS = {
    "deployer": "the deployer's roles and where they are assigned (docs/deployer-role.md). Run as Owner or User "
                "Access Administrator on these groups (creating a role needs roleDefinitions/write).",
    "preview": "the preview identity's Reader assignments (docs/platform.md, Identities). Run as Owner, User Access "
               "Administrator or Role Based Access Control Administrator on these groups.",
    "drift": "the drift identity's read-only roles (docs/platform.md, Identities). Run as Owner, User Access "
             "Administrator or Role Based Access Control Administrator on the Grafana resource, and, for the "
             "commented grants below, on the state container and the key (creating the decrypt role needs "
             "roleDefinitions/write on the key vault's group); the key vault uses Azure RBAC, not access policies.",
}


def script(stack: str, found: Sequence, who: Principals, identity: str = "deployer") -> str:
    """The bash script for ``found`` (:func:`assignments`; :func:`preview_assignments`, :func:`drift_assignments`
    with ``identity`` ``preview``, ``drift``): :data:`PROLOGUE` (stop at the first failure), the subscription when it
    is ``$SUB`` (:data:`SUBSCRIPTION_LINES`), :data:`PRIVATE_DIR` when a role file is written (or commented out), the
    definitions (each through a quoted here-document into that directory, its create followed by the update for a
    re-run, commented out), the assignments, then notes."""
    rows = [a for a in found if isinstance(a, Assignment)]
    notes = [a for a in found if isinstance(a, str)]
    lines = [*PROLOGUE, f"# Stack {stack}: {HEADERS[identity]}"]
    if who.subscription == PLACEHOLDERS["subscription"]:
        lines += SUBSCRIPTION_LINES
    files = []
    for row in rows:
        if row.definition is not None and row.definition not in files:
            files.append(row.definition)
    if files or any("az role definition create" in note for note in notes):  # commented out, it still needs one
        lines += PRIVATE_DIR
    for path in files:
        body = definition(path, [row.scope for row in rows if row.definition == path], stack)
        text = json.dumps(body, indent=2).replace(SUBSCRIPTION_PLACEHOLDER, who.subscription)
        lines += [*_role_file(path.stem, text, who.subscription),
                  f"az role definition create --role-definition @{_role_path(path.stem)}",
                  f"# re-run after a change of groups: az role definition update --role-definition "
                  f"@{_role_path(path.stem)}"]
    for row in rows:
        role = BUILT_IN_IDS.get(row.role, row.role)
        line = (f"az role assignment create --assignee-object-id {_quoted(who.deployer, who.subscription)} "
                f"--assignee-principal-type {who.principal_type} --role {_quoted(role, who.subscription)} "
                f"--scope {_quoted(row.scope, who.subscription)}")
        if row.condition is not None:
            # Single quotes: an interactive bash expands '!' inside double quotes (history), not inside these.
            single = "'" + row.condition.replace("'", "'\\''") + "'"
            line += f" --condition {single} --condition-version 2.0"
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
    """Print the stack's role definitions and assignments (a shell script, or ``--json``): 0; 1 for a refused
    preview; 2 on bad input (a usage error, a configuration offline.plan would refuse, an option that does not apply:
    ``--preview --principal-type User``, ``--drift --preview``, ``--pyroscope-group-dedicated`` where the
    storage role cannot go on its group)."""
    parser = OneLineParser(prog="python -m ops.role_assignments", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="the stack whose Pulumi.<stack>.yaml to read (default dev)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one config key")
    parser.add_argument("--set-path", action="append", default=[], metavar="PATH=VALUE",
                        help="override one item of a list key, as pulumi config set --path does (after --set)")
    parser.add_argument("--deployer-object-id",
                        help="object id of whoever runs pulumi up; with --preview, --drift that identity's "
                             "service principal")
    parser.add_argument("--grafana-principal-id", help="principal id of the existing Grafana's system identity")
    parser.add_argument("--principal-type", choices=["User", "ServicePrincipal"],
                        help="the deployer's principal type (default deployerPrincipalType, User for auto)")
    parser.add_argument("--node-resource-group", help="the cluster's node resource group (MC_...)")
    parser.add_argument("--subscription-id", help="the subscription's id (default $SUB, set by the script)")
    parser.add_argument("--json", action="store_true", help="print a list of {role, scope, condition}")
    parser.add_argument("--preview", action="store_true",
                        help="the preview identity's Reader assignments (refused where they would read a production "
                             "stack's approval nonce)")
    parser.add_argument("--drift", action="store_true",
                        help="the drift identity's read-only roles: Grafana Viewer, and production's state read and "
                             "decrypt (commented out)")
    parser.add_argument("--pyroscope-group-dedicated", action="store_true",
                        help="pyroscopeStorageAccountResourceGroup holds nothing but the account the stack creates: "
                             "assign the storage role on the group")
    try:
        args = parser.parse_args(argv)
        guid = "an object id (a GUID such as 00000000-0000-0000-0000-000000000000)"
        deployer = _checked("--deployer-object-id", args.deployer_object_id, GUID, guid)
        grafana = _checked("--grafana-principal-id", args.grafana_principal_id, GUID, guid)
        node = _checked("--node-resource-group", args.node_resource_group, GROUP_NAME,
                        "a resource group name (1-90 letters, digits, '_', '-', '.', '(', ')', not ending in '.')")
        subscription = _checked("--subscription-id", args.subscription_id, GUID, "a subscription id (a GUID)")
        if args.drift and args.preview:
            raise UsageError("--drift: not with --preview (one identity at a time)")
        for flag, name in (("preview", "the preview identity"), ("drift", "the drift identity")):
            if getattr(args, flag) and args.principal_type == "User":
                raise UsageError(f"--principal-type: {name} is a service principal (ServicePrincipal, or leave it "
                                 "out)")
            if getattr(args, flag) and args.pyroscope_group_dedicated:
                raise UsageError(f"--pyroscope-group-dedicated: not with --{flag} (it gets no storage role)")
        cfg = stack_config(args.stack, args.set, args.set_path)
        principal_type = args.principal_type or (
            "User" if cfg.deployer_principal_type == "auto" else cfg.deployer_principal_type)
        who = Principals(deployer or PLACEHOLDERS["deployer"], principal_type, grafana or PLACEHOLDERS["grafana"],
                         node or PLACEHOLDERS["node"], subscription or PLACEHOLDERS["subscription"])
        if args.drift:
            who = Principals(deployer or PLACEHOLDERS["drift"], "ServicePrincipal", who.grafana, who.node_group,
                             who.subscription)
            found = [*drift_assignments(cfg, who), *drift_other_grants(who)]
        elif not args.preview:
            found = assignments(args.stack, cfg, who, args.pyroscope_group_dedicated)
    except (UsageError, ConfigError, StackFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.preview:
        who = Principals(deployer or PLACEHOLDERS["preview"], "ServicePrincipal", who.grafana, who.node_group,
                         who.subscription)
        try:
            found = [*preview_assignments(args.stack, cfg, who), *preview_other_grants(cfg, who)]
        except (PreviewRefused, ConfigError, StackFileError) as error:
            print(f"error: preview: {error}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps([a.to_json() for a in found if isinstance(a, Assignment)], indent=2))
    else:
        identity = "preview" if args.preview else "drift" if args.drift else "deployer"
        sys.stdout.write(script(args.stack, found, who, identity))
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
