"""Names the stack would create that an object it did not make already holds.

Owns :func:`refuse_taken`: before anything is registered, each Azure resource the configuration asks the stack to
create (``createMonitorWorkspace``, ``createGrafana``, and in microservices mode the derived storage account and
Pyroscope's user-assigned identity) is looked up by its ARM id. Nothing there, or an object carrying the stack's
``managed-by`` tag (stack_config/schema.py MANAGED_BY: every taggable resource the stack makes has it), goes on; an
object without it (the portal, Managed Prometheus onboarding, a run by hand) is refused in one line naming the key and
the way out, where azure-native would otherwise fail ``pulumi up`` half way ("cannot create already existing
resource"). :data:`LOOKUP` (``ARM id -> its tags, or None when nothing is there``) is ``az resource show``; the
offline plan answers from its canned world. An ``az`` that fails otherwise is a warning: the stack goes on.
Upstream: Azure Resource Manager "Resources - Get By Id"; the table of what may exist: docs/existing-objects.md.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Optional

from stack.specs import arm_type
from stack_config import masking
from stack_config.schema import MANAGED_BY, ConfigError, StackConfig
from steps.azcli import AzError, AzNotInstalled, az

#: The API version of each type's GET: the pinned azure-native's ("Uses Azure REST API version"), given so that az
#: does not read the provider's list of versions first.
API_VERSIONS = {"Microsoft.Monitor/accounts": "2023-04-03", "Microsoft.Dashboard/grafana": "2024-10-01",
                "Microsoft.Storage/storageAccounts": "2024-01-01",
                "Microsoft.ManagedIdentity/userAssignedIdentities": "2023-01-31",
                "Microsoft.KubernetesConfiguration/extensions": "2023-05-01",
                "Microsoft.Dashboard/grafana/managedPrivateEndpoints": "2024-10-01"}


def _az_tags(resource_id: str) -> Optional[dict]:
    """The tags of the resource ``resource_id`` names ({} when it has none), or None when ARM finds nothing there."""
    try:
        answer = az("resource", "show", "--ids", resource_id, "--api-version", API_VERSIONS[arm_type(resource_id)],
                    "--query", "tags", "--output", "json")
    except AzError as error:
        # az exits 3 on every 404 (ResourceNotFound, ParentResourceNotFound, ResourceGroupNotFound, a service's own
        # code such as ExtensionNotFound, or no body: "'Not Found'"); AzError keeps the text, not the exit code.
        if error.kind == "not_found" or re.search(r"NotFound\)|'Not Found'", error.stderr):
            return None
        raise
    return json.loads(answer or "null") or {}


#: ``ARM id -> tags, or None``; the offline plan sets its canned world's.
LOOKUP: Callable[[str], Optional[dict]] = _az_tags


def _arm_id(subscription_id: str, group: str, provider_path: str) -> str:
    return f"/subscriptions/{subscription_id}/resourceGroups/{group}/providers/{provider_path}"


def wanted(cfg: StackConfig, subscription_id: str, account_name: str, identity_name: str) -> list[tuple[str, str, str]]:
    """(config key, ARM id, what to do instead) of each object the configuration asks the stack to create."""
    out = []
    if cfg.create_monitor_workspace:
        out.append(("createMonitorWorkspace", _arm_id(subscription_id, cfg.monitor_workspace_resource_group,
                                                      f"Microsoft.Monitor/accounts/{cfg.monitor_workspace_name}"),
                    "set createMonitorWorkspace to false to use it as it is, or monitorWorkspaceName to a free name"))
    if cfg.create_grafana:
        out.append(("createGrafana", _arm_id(subscription_id, cfg.grafana_resource_group,
                                             f"Microsoft.Dashboard/grafana/{cfg.grafana_name}"),
                    "set createGrafana to false to use it as it is (Standard tier, system-assigned identity), or "
                    "grafanaName to a free name"))
    if cfg.pyroscope_mode == "microservices":
        group = cfg.pyroscope_storage_account_resource_group or cfg.cluster_resource_group
        if not cfg.pyroscope_storage_account:
            out.append(("pyroscopeStorageAccount", _arm_id(subscription_id, group,
                                                           f"Microsoft.Storage/storageAccounts/{account_name}"),
                        f"set pyroscopeStorageAccount to {account_name} to bring it as it is"))
        out.append(("pyroscopeMode", _arm_id(subscription_id, group,
                                             f"Microsoft.ManagedIdentity/userAssignedIdentities/{identity_name}"),
                    "if nothing else uses it, delete it (`az identity delete --ids <its id>`): the stack makes "
                    "its own, federated to Pyroscope's service account"))
    return out


def refuse_taken(cfg: StackConfig, subscription_id: str, account_name: str, identity_name: str) -> None:
    """Raise ConfigError on the first object :func:`wanted` names that exists without the stack's ``managed-by``
    tag (module docstring)."""
    key, value = MANAGED_BY
    for config_key, resource_id, instead in wanted(cfg, subscription_id, account_name, identity_name):
        try:
            tags = LOOKUP(resource_id)
        except (AzError, AzNotInstalled) as error:
            masking.warn(f"{config_key}: could not tell whether {resource_id} exists ({error.last_line}); "
                            "the stack goes on and creates it")
            continue
        if tags is not None and tags.get(key) != value:
            raise ConfigError(config_key, f"{resource_id} already exists and this stack did not make it (no "
                                          f"{key}={value} tag): {instead}")


def _az_pls(resource_group: str, name: str) -> Optional[tuple[str, str, str]]:
    """(its load balancer frontend's id, its ``k8s-azure-owner-service`` tag, its ARM id as ARM spells it) of the
    private link service ``name`` in ``resource_group``, or None when ARM finds nothing there."""
    try:
        answer = az("network", "private-link-service", "show", "--resource-group", resource_group, "--name", name,
                    "--query", "[loadBalancerFrontendIpConfigurations[0].id || '', tags.\"k8s-azure-owner-service\" "
                    "|| '', id || '']", "--output", "json")
    except AzError as error:
        if error.kind == "not_found" or re.search(r"NotFound\)|'Not Found'", error.stderr):
            return None
        raise
    frontend, owner, resource_id = json.loads(answer or '["", "", ""]')
    return frontend, owner, resource_id


#: ``(resource group, name) -> (frontend id, owner tag, ARM id), or None``; the offline plan sets its canned world's.
PLS_LOOKUP: Callable[[str, str], Optional[tuple[str, str, str]]] = _az_pls


def refuse_foreign_pls(name: str, resource_group: str, load_balancer_scope: str, owner_service: str) -> Optional[str]:
    """Raise ConfigError (key ``privateLinkServiceName``) when a private link service ``name`` already exists in
    ``resource_group`` on a load balancer outside ``load_balancer_scope``: another cluster's. The AKS cloud provider
    would otherwise repoint it to this stack's Service and overwrite its owner tag, taking it from the cluster it
    served (before kubernetes-sigs/cloud-provider-azure#10943), or refuse the Service with SyncLoadBalancerFailed
    (after it), after the release and the Service exist. One of this cluster's passes whatever Service owns it: the
    chart's ``gadget/pyroscope`` (a stack from before ``owner_service``, or the published procedure, which the
    private link's move and existing/handmade.py handle) or this stack's; the wait step checks the owner
    (steps/wait_private_link_service.sh). Returns the ARM id of this cluster's PLS as ARM answered it (what a preview
    puts in the managed private endpoint: components/grafana_private_link.py), or None when there is none yet, ARM
    answered no id, or az could not tell (a warning; the stack goes on)."""
    try:
        found = PLS_LOOKUP(resource_group, name)
    except (AzError, AzNotInstalled) as error:
        masking.warn(f"privateLinkServiceName: could not tell whether private link service {name} exists in "
                        f"{resource_group} ({error.last_line}); the stack goes on")
        return None
    if found is None:
        return None
    frontend, owner, resource_id = found
    if frontend.lower().startswith(load_balancer_scope.lower()):
        return resource_id or None
    raise ConfigError("privateLinkServiceName", f"private link service {name} in {resource_group} already serves "
                      f"load balancer frontend {frontend or 'none'} (k8s-azure-owner-service {owner or 'none'}), not "
                      f"this cluster's Service {owner_service}; the AKS cloud provider would take it over from what "
                      "it serves or refuse this stack's Service: set privateLinkServiceName to a name of its own (left "
                      "empty it is derived per cluster with multiCluster or a privateLinkServiceResourceGroup)")
