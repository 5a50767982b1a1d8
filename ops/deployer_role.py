"""The deployer's four custom Azure roles (docs/deployer-role*.json) and what each of their actions is for.

Owns the tables that map what the stack does to Azure RBAC actions, each entry with its source: :data:`RESOURCES`
(the azure-native resource types), :data:`INVOKES` (the lookups), :data:`AZ_COMMANDS` and :data:`ARM_REST` (every
``az`` command line the step scripts and ``ops.verify`` run), :data:`GRAFANA_API` (the Grafana role each Grafana API
call needs; not Azure RBAC) and :data:`SOURCES`; :func:`condition`, the role-assignment condition from (role, principal)
clauses, at least one. ``python -m ops.deployer_role [--stack NAME] [--set KEY=VALUE]... [--role FILE]...`` checks one
offline plan (offline.plan) against the union of the roles and prints what is missing. Exit status 0 when it covers
everything, 1 when an action is missing or left out on purpose, 2 on bad input (one line). Upstream:
learn.microsoft.com "Azure permissions for ..." pages (per provider in :data:`SOURCES`); derivation:
docs/decisions/deployer-role-derivation.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from cli import OneLineParser, UsageError, exit_code
from stack.specs import arm_type

ROOT = Path(__file__).resolve().parent.parent
#: The four role definitions: what they grant and where each is assigned, docs/deployer-role.md.
ROLE_FILES = tuple(ROOT / "docs" / name for name in
                   ("deployer-role.json", "deployer-role-role-assigner.json", "deployer-role-private-link.json",
                    "deployer-role-pyroscope-storage.json"))
#: The fields ``az role definition create --role-definition @file`` reads (azure-cli's role module accepts this
#: PascalCase form; learn.microsoft.com/azure/role-based-access-control/custom-roles-cli, "Create a custom role").
ROLE_FIELDS = ("Name", "IsCustom", "Description", "Actions", "NotActions", "DataActions", "NotDataActions",
               "AssignableScopes")
#: What the roles' AssignableScopes name: resource groups only, each a placeholder the stack's group replaces.
SUBSCRIPTION_PLACEHOLDER = "<subscription-id>"
GROUP_PLACEHOLDERS = ("<cluster-resource-group>", "<grafana-resource-group>", "<monitor-workspace-resource-group>",
                      "<private-link-service-resource-group>", "<node-resource-group>", "<pyroscope-resource-group>")
GRAFANA_AUDIENCE = "ce34e7e5-485f-4d76-964f-b3d2b16d1e4f"  # steps/azcli.py GRAFANA_AUDIENCE

#: Where each provider's action names come from.
SOURCES = {
    "Microsoft.ContainerService":
        "learn.microsoft.com/azure/role-based-access-control/permissions/containers#microsoftcontainerservice",
    "Microsoft.KubernetesConfiguration":
        "learn.microsoft.com/azure/role-based-access-control/permissions/hybrid-multicloud"
        "#microsoftkubernetesconfiguration; "
        "built-in role Kubernetes Extension Contributor (85cb6faf-e071-4c9b-8136-154b5a04f717)",
    "Microsoft.Dashboard": "learn.microsoft.com/azure/role-based-access-control/permissions/monitor#microsoftdashboard",
    "Microsoft.Monitor": "learn.microsoft.com/azure/role-based-access-control/permissions/monitor#microsoftmonitor",
    "Microsoft.Network": "learn.microsoft.com/azure/private-link/rbac-permissions#private-link-service; "
                         "learn.microsoft.com/azure/role-based-access-control/permissions/networking#microsoftnetwork",
    "Microsoft.Authorization":
        "learn.microsoft.com/azure/role-based-access-control/permissions/management-and-governance"
        "#microsoftauthorization",
    "Microsoft.Storage": "learn.microsoft.com/azure/role-based-access-control/permissions/storage#microsoftstorage",
    "Microsoft.ManagedIdentity":
        "learn.microsoft.com/azure/role-based-access-control/permissions/identity#microsoftmanagedidentity",
}


@dataclass(frozen=True)
class Need:
    """What one thing the stack does needs: Azure RBAC ``actions``, and why (``source``)."""

    actions: tuple
    source: str


def _rw(prefix: str, *extra: str) -> tuple:
    return (f"{prefix}/read", f"{prefix}/write", f"{prefix}/delete", *extra)


# --- Resources: azure-native type token -> actions ---------------------------------------------------------------
#: Async operations: azure-native waits for a long-running create or delete by polling the operation URL the provider
#: returns; each provider lists reading that status as its own action.
_EXT_OPERATIONS = "Microsoft.KubernetesConfiguration/extensions/operations/read"  # "Gets Async Operation status"
_DASHBOARD_OPERATIONS = "Microsoft.Dashboard/locations/operationStatuses/read"  # "Get operation statuses"
_MONITOR_OPERATIONS = "Microsoft.Monitor/locations/operationStatuses/read"  # "Read any Operation Status"

RESOURCES = {
    "azure-native:kubernetesconfiguration:Extension": Need(
        _rw("Microsoft.KubernetesConfiguration/extensions", _EXT_OPERATIONS),
        "components/inspektor_gadget.py (ARM Microsoft.KubernetesConfiguration/extensions under the managed cluster); "
        + SOURCES["Microsoft.KubernetesConfiguration"]),
    "azure-native:dashboard:ManagedPrivateEndpoint": Need(
        _rw("Microsoft.Dashboard/grafana/managedPrivateEndpoints", _DASHBOARD_OPERATIONS),
        "components/grafana_private_link.py; " + SOURCES["Microsoft.Dashboard"]),
    "azure-native:dashboard:Grafana": Need(
        _rw("Microsoft.Dashboard/grafana", _DASHBOARD_OPERATIONS),
        "components/managed_grafana.py (createGrafana); " + SOURCES["Microsoft.Dashboard"]),
    "azure-native:monitor:AzureMonitorWorkspace": Need(
        _rw("Microsoft.Monitor/accounts", _MONITOR_OPERATIONS),
        "components/monitor_workspace.py (createMonitorWorkspace); " + SOURCES["Microsoft.Monitor"]),
    # pyroscopeMode microservices (components/pyroscope_storage.py); a brought account registers only the identity, its
    # credential and the role assignment. Not verified here: whether polling the account's long-running create needs an
    # operation-status action of Microsoft.Storage, as Dashboard's and Monitor's do (docs/deployer-role.md, open).
    "azure-native:storage:StorageAccount": Need(
        _rw("Microsoft.Storage/storageAccounts"),
        "components/pyroscope_storage.py (pyroscopeMode microservices, account created); "
        + SOURCES["Microsoft.Storage"]),
    "azure-native:storage:BlobContainer": Need(
        _rw("Microsoft.Storage/storageAccounts/blobServices/containers"),
        "components/pyroscope_storage.py (the profiles' container, created with the account); "
        + SOURCES["Microsoft.Storage"]),
    "azure-native:managedidentity:UserAssignedIdentity": Need(
        _rw("Microsoft.ManagedIdentity/userAssignedIdentities"),
        "components/pyroscope_storage.py (Pyroscope's workload identity); " + SOURCES["Microsoft.ManagedIdentity"]),
    "azure-native:managedidentity:FederatedIdentityCredential": Need(
        _rw("Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials"),
        "components/pyroscope_storage.py (the cluster's OIDC issuer trusted for service account gadget/pyroscope); "
        + SOURCES["Microsoft.ManagedIdentity"]),
    "azure-native:authorization:RoleAssignment": Need(
        _rw("Microsoft.Authorization/roleAssignments"),
        "components/grafana_datasources.py (Monitoring Data Reader), components/managed_grafana.py (Grafana Admin); "
        + SOURCES["Microsoft.Authorization"]),
}

#: Registered types that are not ARM resources: nothing in Azure RBAC to grant.
NOT_ARM = {
    "pulumi:": "Pulumi's own stack, providers and stack references (no ARM call)",
    "aks-gpu-observability:index:": "this project's components (grouping only)",
    "command:local:Command": "a step script run on the deployer's machine; its az calls are checked from the call log",
    "kubernetes:": "Kubernetes API objects (namespace, Helm release): Kubernetes RBAC, docs/deployer-role.md",
}

# --- Invokes: azure-native function token -> actions -------------------------------------------------------------
INVOKES = {
    "azure-native:authorization:getClientConfig": Need(
        (), "answered by the azure-native provider from its own credentials (no ARM request)"),
    "azure-native:containerservice:getManagedCluster": Need(
        ("Microsoft.ContainerService/managedClusters/read",),
        "existing/cluster.py lookup_cluster; " + SOURCES["Microsoft.ContainerService"]),
    "azure-native:containerservice:listManagedClusterUserCredentials": Need(
        ("Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",),
        "existing/kubeconfig.py kubeconfig_for (kubeconfigCredentials=user); " + SOURCES["Microsoft.ContainerService"]),
    "azure-native:containerservice:listManagedClusterAdminCredentials": Need(
        ("Microsoft.ContainerService/managedClusters/listClusterAdminCredential/action",),
        "existing/kubeconfig.py kubeconfig_for (kubeconfigCredentials=admin); "
        + SOURCES["Microsoft.ContainerService"]),
    "azure-native:dashboard:getGrafana": Need(
        ("Microsoft.Dashboard/grafana/read",), "existing/grafana.py lookup_grafana; " + SOURCES["Microsoft.Dashboard"]),
    "azure-native:dashboard:getManagedPrivateEndpoint": Need(
        ("Microsoft.Dashboard/grafana/managedPrivateEndpoints/read",),
        "components/grafana_private_link.py (private IP read-back); " + SOURCES["Microsoft.Dashboard"]),
    "azure-native:monitor:getAzureMonitorWorkspace": Need(
        ("Microsoft.Monitor/accounts/read",),
        "existing/grafana.py lookup_monitor_workspace; " + SOURCES["Microsoft.Monitor"]),
    "azure-native:network:getPrivateLinkService": Need(
        ("Microsoft.Network/privateLinkServices/read",),
        "components/grafana_private_link.py (PLS id for the MPE, NAT IPs for Pyroscope's NetworkPolicy); "
        + SOURCES["Microsoft.Network"]),
}

#: Actions a configuration can need that the roles leave out on purpose, and why.
EXCLUDED = {
    "Microsoft.ContainerService/managedClusters/listClusterAdminCredential/action":
        "kubeconfigCredentials=admin only: the admin kubeconfig is cluster-admin on the cluster, bypassing "
        "Microsoft Entra ID; a deployer who needs it gets the built-in Azure Kubernetes Service Cluster Admin "
        "Role on that one cluster instead",
}

# --- az command lines --------------------------------------------------------------------------------------------
#: ``az <words>`` (the leading non-option words of argv) -> actions. azure-cli sources at 2.91.0.
AZ_COMMANDS = {
    ("network", "private-link-service", "show"): Need(
        ("Microsoft.Network/privateLinkServices/read",),
        "GET .../privateLinkServices/{name} (steps/wait_private_link_service.sh, "
        "steps/approve_private_endpoint_connection.sh); " + SOURCES["Microsoft.Network"]),
    ("network", "lb", "frontend-ip", "show"): Need(
        ("Microsoft.Network/loadBalancers/read",),
        "GET .../loadBalancers/{lb}/frontendIPConfigurations/{name}: the subnet the PLS's NAT IPs belong in without "
        "privateLinkSubnet (steps/wait_private_link_service.sh); " + SOURCES["Microsoft.Network"]),
    ("network", "private-link-service", "connection", "update"): Need(
        ("Microsoft.Network/privateLinkServices/privateEndpointConnections/read",
         "Microsoft.Network/privateLinkServices/privateEndpointConnections/write"),
        "a GET then a PUT of .../privateEndpointConnections/{name} (Azure/azure-cli src/azure-cli/azure/cli/"
        "command_modules/network/aaz/latest/network/private_link_service/connection/_update.py, _execute_operations: "
        "PrivateLinkServicesGetPrivateEndpointConnection, PrivateLinkServicesUpdatePrivateEndpointConnection); "
        + SOURCES["Microsoft.Network"]),
    ("role", "assignment", "create"): Need(
        ("Microsoft.Authorization/roleAssignments/write", "Microsoft.Authorization/roleAssignments/read",
         "Microsoft.Authorization/roleDefinitions/read"),
        "PUT {scope}/providers/Microsoft.Authorization/roleAssignments/{name} (steps/ensure_role_assignment.sh); a 409 "
        "RoleAssignmentExists is answered with the existing assignment: list_role_assignments lists the assignments at "
        "the scope and, to fill in role names, the role definitions at the scope (definitions_client.list, a GET of "
        "{scope}/providers/Microsoft.Authorization/roleDefinitions) (Azure/azure-cli src/azure-cli/azure/cli/"
        "command_modules/role/custom.py @ 01ce0346, create_role_assignment and list_role_assignments; the same in "
        "azure-cli 2.91.0); " + SOURCES["Microsoft.Authorization"]),
    ("role", "assignment", "list"): Need(
        ("Microsoft.Authorization/roleAssignments/read",),
        "GET {scope}/providers/Microsoft.Authorization/roleAssignments?$filter=atScope() "
        "(steps/ensure_role_assignment.sh,"
        " when the create answered with another principal's assignment; existing/roles.py, whether linking made one;"
        " --role is a full id and "
        "--fill-role-definition-name"
        " false, so no role definition is listed: azure-cli 2.91.0 azure/cli/command_modules/role/custom.py "
        "list_role_assignments, _search_role_assignments, _resolve_role_id); " + SOURCES["Microsoft.Authorization"]),
}

_ARM_ID = r"(?:https://management\.azure\.com)?/subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
_GRAFANA = _ARM_ID + r"Microsoft\.Dashboard/grafana/[^/?]+"
#: ``az rest`` against ARM (no Grafana audience): (method, URL pattern without the query string) -> actions.
ARM_REST = [
    ("get", re.compile(_GRAFANA + r"$", re.I), Need(
        ("Microsoft.Dashboard/grafana/read",),
        "steps/azcli.py Step.grafana_gone (does the workspace still exist?); " + SOURCES["Microsoft.Dashboard"])),
    ("get", re.compile(_GRAFANA + r"/managedPrivateEndpoints/[^/]+$", re.I), Need(
        ("Microsoft.Dashboard/grafana/managedPrivateEndpoints/read",),
        "steps/refresh_managed_private_endpoints.sh, ops/verify.py; " + SOURCES["Microsoft.Dashboard"])),
    ("post", re.compile(_GRAFANA + r"/refreshManagedPrivateEndpoints$", re.I), Need(
        ("Microsoft.Dashboard/grafana/managedPrivateEndpoints/action",),
        "POST .../refreshManagedPrivateEndpoints (steps/refresh_managed_private_endpoints.sh): the provider's one "
        "action on managed private endpoints, \"Operations on Private Endpoints\"; " + SOURCES["Microsoft.Dashboard"])),
    ("get", re.compile(_ARM_ID + r"Microsoft\.ContainerService/managedClusters/[^/]+/providers/"
                       r"Microsoft\.KubernetesConfiguration/extensions/[^/]+$", re.I), Need(
        ("Microsoft.KubernetesConfiguration/extensions/read",),
        "ops/verify.py (extension state); " + SOURCES["Microsoft.KubernetesConfiguration"])),
]

# --- Grafana's HTTP API (not Azure RBAC) -------------------------------------------------------------------------
#: Azure Managed Grafana's roles, least to most (MicrosoftDocs/azure-docs articles/managed-grafana/
#: how-to-share-grafana-workspace.md: Admin "viewing, editing, and configuring data sources", Editor "read-write access
#: to the dashboards", Viewer read-only). "none": Grafana answers without a signed-in user.
GRAFANA_ROLES = ("none", "Viewer", "Editor", "Admin")
#: Built-in Azure roles that make a principal Grafana Admin, or Viewer, on a workspace.
GRAFANA_ADMIN_ROLE_ID = "22926164-76b3-42b3-bc55-97df8dab3e41"
GRAFANA_VIEWER_ROLE_ID = "60921a7e-fef1-4a43-9b16-a26c52ad4769"
GRAFANA_API = [
    ("get", re.compile(r"/api/health$"), "none", "GET /api/health answers anonymously (steps/grafana_server.py probe)"),
    ("get", re.compile(r"/api/plugins$"), "Viewer", "plugin list (steps/grafana_server.py probe)"),
    ("get", re.compile(r"/api/plugins/[^/]+/settings$"), "Viewer",
     "one plugin's settings: any signed-in user for a datasource plugin (grafana/grafana pkg/api/api.go @ 54ec4964, "
     "GetPluginSettingByID; ops/verify.py --drift, whose Viewer the list leaves external plugins out for)"),
    ("get", re.compile(r"/api/datasources/uid/[^/]+/(?:health|resources/.+)$"), "Viewer",
     "a datasource's health check and resources are queries (ops/verify.py)"),
    ("get", re.compile(r"/api/datasources/(?:uid|name)/[^/]+$"), "Viewer",
     "reading a datasource's settings needs datasources:read, which Grafana grants Viewer unless the Enterprise "
     "licence enforces data source permissions, then Admin (grafana/grafana pkg/api/accesscontrol.go, "
     "fixed:datasources:reader; steps/grafana_datasource.py, ops/verify.py --drift)"),
    ("post", re.compile(r"/api/datasources$"), "Admin", "creating a datasource (steps/grafana_datasource.py)"),
    ("put", re.compile(r"/api/datasources/uid/[^/]+$"), "Admin", "updating a datasource (steps/grafana_datasource.py)"),
    ("delete", re.compile(r"/api/datasources/uid/[^/]+$"), "Admin",
     "deleting a datasource (steps/grafana_datasource.py)"),
    ("get", re.compile(r"/api/dashboards/uid/[^/]+$"), "Viewer",
     "reading a dashboard (steps/grafana_dashboard.py, ops/verify.py)"),
    ("get", re.compile(r"/api/search$"), "Viewer", "dashboard search (steps/grafana_dashboard.py title check)"),
    ("post", re.compile(r"/api/dashboards/db$"), "Editor", "saving a dashboard (steps/grafana_dashboard.py)"),
    ("delete", re.compile(r"/api/dashboards/uid/[^/]+$"), "Editor",
     "deleting a dashboard (steps/grafana_dashboard.py)"),
    ("post", re.compile(r"/api/ds/query$"), "Viewer", "a datasource query (flamegraph/hotspots.py)"),
]


class Unmapped(Exception):
    """Something the stack does that no table maps to a permission; the message names it in one line."""


@dataclass(frozen=True)
class Permission:
    """What one az call needs: ``kind`` ``arm`` (``actions``), ``grafana`` (``grafana_role``) or ``none`` (a public
    download without a token)."""

    kind: str
    actions: tuple = ()
    grafana_role: str = ""
    source: str = ""


def _option(argv: Sequence[str], name: str) -> Optional[str]:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None


def _words(argv: Sequence[str]) -> tuple:
    """The command's leading words (``network private-link-service show``), before the first option."""
    words = []
    for arg in argv:
        if arg.startswith("-"):
            break
        words.append(arg)
    return tuple(words)


def az_permission(argv: Sequence[str]) -> Permission:
    """What ``az <argv>`` needs; raises :class:`Unmapped` naming the command when no table maps it."""
    words = _words(argv)
    if words == ("account", "show"):
        return Permission("none", source="az's own profile, no call to Azure: ops/verify.py asks whether az is signed "
                                         "in (azure-cli 2.91.0 azure/cli/command_modules/profile/custom.py "
                                         "show_subscription)")
    if words == ("resource", "show"):  # existing/taken.py, handmade.py: whether someone else made what the stack makes
        kind = arm_type(_option(argv, "--ids") or "")
        if kind.split("/")[0] not in SOURCES:
            raise Unmapped(f"unmapped az resource show of a {kind or 'resource without --ids'}")
        return Permission("arm", (f"{kind}/read",), source="GET {id}?api-version=... (--api-version given, so no "
                          "provider read: azure-cli 2.91.0 azure/cli/command_modules/resource/custom.py "
                          "show_resource); " + SOURCES[kind.split("/")[0]])
    if words in AZ_COMMANDS:
        need = AZ_COMMANDS[words]
        return Permission("arm", need.actions, source=need.source)
    if words == ("rest",):
        method = (_option(argv, "--method") or "get").lower()
        url = (_option(argv, "--url") or "").split("?", 1)[0]
        if "--skip-authorization-header" in argv:
            return Permission("none", source="a public download: az sends no token (steps/azcli.py download)")
        audience = _option(argv, "--resource")
        if audience == GRAFANA_AUDIENCE:
            path = re.sub(r"^https://[^/]+", "", url)
            for want, pattern, role, source in GRAFANA_API:
                if want == method and pattern.search(path):
                    return Permission("grafana", grafana_role=role, source=source)
            raise Unmapped(f"unmapped Grafana API call: {method.upper()} {path}")
        if audience is None:
            for want, pattern, need in ARM_REST:
                if want == method and pattern.match(url):
                    return Permission("arm", need.actions, source=need.source)
        raise Unmapped(f"unmapped az rest call: {method.upper()} {url}"
                       + (f" (--resource {audience})" if audience else ""))
    raise Unmapped(f"unmapped az command: az {' '.join(words)}")


def load_role(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def load_roles(paths: Sequence[Path] = ROLE_FILES) -> list:
    return [load_role(path) for path in paths]


def union(roles: Sequence[dict]) -> dict:
    """One role holding every role's Actions and DataActions (each once, first spelling kept): what a deployer who
    holds all of ``roles`` may do, for the checks below."""
    merged = {"Name": " + ".join(role["Name"] for role in roles), "Actions": [], "DataActions": []}
    for key in ("Actions", "DataActions"):
        seen = set()
        for action in (a for role in roles for a in role.get(key, [])):
            if action.lower() not in seen:
                seen.add(action.lower())
                merged[key].append(action)
    return merged


def granted(role: dict) -> set:
    """The role's Actions and DataActions, lower-cased (Azure compares action strings case-insensitively)."""
    return {a.lower() for a in [*role.get("Actions", []), *role.get("DataActions", [])]}


def missing_for_calls(calls: Iterable[Sequence[str]], role: dict) -> list:
    """One line per az call (argv) needing an action ``role`` (one role, or :func:`union` of several) lacks:
    ``az <words>: <action>``. Raises Unmapped."""
    have, lines = granted(role), []
    for argv in calls:
        permission = az_permission(argv)
        for action in permission.actions:
            if action.lower() not in have:
                line = f"az {' '.join(_words(argv))}: {action} is not in the roles"
                if line not in lines:
                    lines.append(line)
    return lines


def plan_needs(plan: dict) -> list:
    """(what, Need) for every ARM resource type and invoke of an offline plan (offline.plan --json); raises Unmapped for
    a type or invoke no table knows."""
    needs = []
    for resource in plan["resources"]:
        kind = resource["type"]
        if kind in RESOURCES:
            needs.append((kind, RESOURCES[kind]))
        elif not any(kind.startswith(prefix) for prefix in NOT_ARM):
            raise Unmapped(f"unmapped resource type: {kind}")
    for invoke in plan["invokes"]:
        token = invoke["token"]
        if token not in INVOKES:
            raise Unmapped(f"unmapped invoke: {token}")
        needs.append((token, INVOKES[token]))
    return needs


def missing_for_plan(plan: dict, role: dict) -> tuple:
    """(missing, excluded): lines ``<type or invoke>: <action>`` for actions the role lacks, split into those it lacks
    by mistake and those :data:`EXCLUDED` on purpose. Raises Unmapped."""
    have, missing, excluded = granted(role), [], []
    for what, need in plan_needs(plan):
        for action in need.actions:
            if action.lower() not in have:
                line = f"{what}: {action} is not in the roles"
                target = excluded if action in EXCLUDED else missing
                if line not in target:
                    target.append(line)
    return missing, excluded


def all_needs() -> list:
    """Every Need in the tables (for the "nothing unused" check)."""
    return [*RESOURCES.values(), *INVOKES.values(), *AZ_COMMANDS.values(), *(need for _, _, need in ARM_REST)]


def unused(role: dict) -> list:
    """Actions in the role that no table entry needs."""
    needed = {a.lower() for need in all_needs() for a in need.actions}
    return [a for a in [*role.get("Actions", []), *role.get("DataActions", [])] if a.lower() not in needed]


ASSIGNMENTS = "Microsoft.Authorization/roleAssignments"


@dataclass(frozen=True)
class Clause:
    """One role the holder may assign, and to whom: ``attribute`` ``PrincipalId`` (``value`` an object id) or
    ``PrincipalType`` (``value`` ``ServicePrincipal``, ``User`` or ``Group``)."""

    role_id: str
    attribute: str
    value: str

    def expression(self, source: str) -> str:
        test = (f"GuidEquals {{{self.value}}}" if self.attribute == "PrincipalId"
                else f"StringEqualsIgnoreCase {{'{self.value}'}}")
        return (f"@{source}[{ASSIGNMENTS}:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{{self.role_id}}} AND "
                f"@{source}[{ASSIGNMENTS}:{self.attribute}] ForAnyOfAnyValues:{test}")


def condition(clauses: Sequence[Clause]) -> str:
    """The ABAC condition (version 2.0, one line) of a role assignment whose role grants roleAssignments/write and
    delete: a write must match one of ``clauses`` in the request (``@Request``), a delete in the assignment it deletes
    (``@Resource``). ValueError for no clauses (a condition that allows nothing is no documented form: assign no
    role-assigning role there) and for a ``Clause.attribute`` ABAC does not have. The "Constrain roles and principal
    types" and "... specific principals" examples (learn.microsoft.com/azure/role-based-access-control/
    delegate-role-assignments-examples); no attribute names the scope."""
    if not clauses:
        raise ValueError("clauses: expected at least one (role, principal) clause; a scope where the stack assigns "
                         "no role gets no role-assigning role")
    for clause in clauses:
        if clause.attribute not in ("PrincipalId", "PrincipalType"):
            raise ValueError(f"attribute: expected PrincipalId or PrincipalType (got {clause.attribute!r})")
    parts = []
    for action, source in (("write", "Request"), ("delete", "Resource")):
        allowed = "".join(f" OR ({clause.expression(source)})" for clause in clauses)
        parts.append(f"((!(ActionMatches{{'{ASSIGNMENTS}/{action}'}})){allowed})")
    return " AND ".join(parts)


class PlanError(Exception):
    """offline.plan refused the configuration; the message is its one line."""


def plan_json(stack: str = "dev", sets: Sequence[str] = ()) -> dict:
    """The offline plan (``python -m offline.plan --json``) of ``stack`` with ``--set`` overrides."""
    args = [sys.executable, "-m", "offline.plan", "--stack", stack, "--json"]
    for item in sets:
        args += ["--set", item]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise PlanError(done.stderr.strip().removeprefix("error: ") or f"offline.plan exited {done.returncode}")
    return json.loads(done.stdout)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Check one offline plan against the union of the roles: 0 when it covers everything, 1 when an action is missing
    or the stack needs one the roles leave out on purpose (the cluster-admin kubeconfig), 2 on bad input (a usage
    error, an unreadable role file, an unmapped type or invoke, a configuration offline.plan refuses)."""
    parser = OneLineParser(prog="python -m ops.deployer_role", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev", help="the stack whose Pulumi.<stack>.yaml to plan (default dev)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one config key")
    parser.add_argument("--role", action="append", default=[], metavar="FILE",
                        help="a role definition JSON, once per role (default the four docs/deployer-role*.json)")
    try:
        args = parser.parse_args(argv)
        try:
            roles = union(load_roles([Path(path) for path in args.role] or ROLE_FILES))
        except (OSError, ValueError, KeyError) as error:  # json.JSONDecodeError is a ValueError; KeyError: no Name
            raise UsageError(f"--role: expected a readable role definition JSON ({error})") from None
        missing, excluded = missing_for_plan(plan_json(args.stack, args.set), roles)
    except (UsageError, Unmapped, PlanError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for line in excluded:
        # Left out on purpose, but this stack needs it: the roles alone cannot deploy it, so the check fails.
        print(f"needs a grant outside the roles (docs/deployer-role.md, left out on purpose): {line}")
    for line in missing:
        print(f"missing: {line}")
    if not missing and not excluded:
        print(f"the roles cover every Azure resource and lookup of stack {args.stack}")
    return 1 if missing or excluded else 0

if __name__ == "__main__":
    sys.exit(exit_code(main))
