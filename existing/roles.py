"""Role assignments the stack would make that ARM already holds under another name: Grafana's identity's Monitoring
Data Reader on the workspace, and each ``grafanaViewers`` principal's Grafana Viewer on the Grafana workspace.

Owns :func:`assigns_monitoring_data_reader`: the stack's decision, from ``assignMonitoringDataReader`` and what ARM
holds. Azure's own onboarding (linking Grafana to an Azure Monitor workspace in the portal, or Managed Prometheus
with a linked Grafana) assigns that role under a random name; ARM refuses a second assignment of one role to one
principal at one scope (409 RoleAssignmentExists), which would fail ``pulumi up`` half way. So before anything is
registered: ``auto`` leaves such an assignment as it is and assigns nothing (said in the log); ``true`` is refused in
one line (ConfigError on ``assignMonitoringDataReader``). The stack's own assignment (its derived name) is the
stack's. :data:`LOOKUP` (``scope, principal id, role definition id -> assignment names``) is ``az role assignment
list`` at exactly that scope; the offline plan answers from its canned world. An ``az`` that fails is a warning: the
stack assigns as configured. Upstream: Azure RBAC "Troubleshoot Azure RBAC" (RoleAssignmentExists); the other objects
that may exist before the first `pulumi up`: docs/existing-objects.md.

:func:`viewers_to_assign` does the same for ``grafanaViewers``: a viewer who holds Grafana Viewer on the workspace by
an assignment made elsewhere (the portal's Access control, another stack) gets none from the stack, with an info line;
that assignment is not the stack's, so no ``destroy`` deletes it (docs/decisions/grafana-viewers.md).
"""

from __future__ import annotations

import json
from typing import Callable, Optional

from stack.specs import GRAFANA_VIEWER, MONITORING_DATA_READER, role_assignment_name, role_definition_id
from stack_config import masking
from stack_config.schema import ConfigError, StackConfig
from steps.azcli import AzError, AzNotInstalled, az


def _az_holders(scope: str, principal_id: str, role: str) -> list[str]:
    """Names of the assignments of ``role`` to ``principal_id`` made at exactly ``scope`` (not inherited ones)."""
    # No Microsoft Graph or role definition look-ups: only ARM's list of assignments (what Reader may read).
    answer = json.loads(az("role", "assignment", "list", "--scope", scope, "--assignee-object-id", principal_id,
                           "--role", role, "--fill-principal-name", "false", "--fill-role-definition-name", "false",
                           "--output", "json") or "[]")
    return [a["name"] for a in answer if str(a.get("scope", "")).lower() == scope.lower()]


#: ``(scope, principal id, role id) -> assignment names``; the offline plan sets its canned world's.
LOOKUP: Callable[[str, str, str], list[str]] = _az_holders


def assigns_monitoring_data_reader(cfg: StackConfig, workspace_id: str, principal_id: str) -> bool:
    """Whether the stack assigns the role itself (module docstring); ``workspace_id`` and ``principal_id`` are the
    looked-up workspace's and Grafana's (a workspace or Grafana the stack creates holds no assignment yet)."""
    created = cfg.create_grafana or cfg.create_monitor_workspace
    if not cfg.assigns_monitoring_data_reader or cfg.multi_cluster or created:
        return cfg.assigns_monitoring_data_reader  # multiCluster: the ensure step takes an existing one as done
    try:
        role = role_definition_id(workspace_id.split("/")[2], MONITORING_DATA_READER)  # /subscriptions/<id>/...
        held = LOOKUP(workspace_id, principal_id, role)
    except (AzError, AzNotInstalled) as error:
        masking.warn(f"assignMonitoringDataReader: could not list the role assignments on {workspace_id} "
                        f"({error.last_line}); the stack assigns Monitoring Data Reader as configured")
        return True
    ours = role_assignment_name(workspace_id, MONITORING_DATA_READER, principal_id)
    others = [name for name in held if name != ours]
    if not others or ours in held:
        return True
    if cfg.assign_monitoring_data_reader == "true":
        raise ConfigError("assignMonitoringDataReader", f"Grafana's identity already holds Monitoring Data Reader on "
                                                        f"{workspace_id} (assignment {others[0]}, made outside this "
                                                        "stack, e.g. by linking Grafana to the workspace) and ARM "
                                                        "refuses a second one; set it to auto (leave that one as it "
                                                        "is) or false")
    masking.info(f"Grafana's identity already holds Monitoring Data Reader on {workspace_id} (assignment "
                    f"{others[0]}, made outside this stack): left as it is, none assigned")
    return False


def viewers_to_assign(cfg: StackConfig, grafana_id: Optional[str]) -> tuple:
    """The ``grafanaViewers`` (``stack_config.rules.Viewer``) the stack assigns Grafana Viewer on the workspace itself:
    all of them for a Grafana the stack creates (``grafana_id`` None: it holds no assignment yet); else each but those
    holding the role there by an assignment other than the stack's (an info line each: left as it is). An ``az``
    that cannot list is one warning, and the stack assigns to every viewer not yet listed."""
    if not cfg.grafana_viewers or grafana_id is None:
        return tuple(cfg.grafana_viewers)
    role = role_definition_id(grafana_id.split("/")[2], GRAFANA_VIEWER)  # /subscriptions/<id>/...
    kept = []
    for index, viewer in enumerate(cfg.grafana_viewers):
        try:
            held = LOOKUP(grafana_id, viewer.object_id, role)
        except (AzError, AzNotInstalled) as error:
            masking.warn(f"grafanaViewers: could not list the role assignments on {grafana_id} ({error.last_line}); "
                         "the stack assigns Grafana Viewer as configured")
            return (*kept, *cfg.grafana_viewers[index:])
        ours = role_assignment_name(grafana_id, GRAFANA_VIEWER, viewer.object_id)
        others = [name for name in held if name != ours]
        if not others or ours in held:
            kept.append(viewer)
            continue
        masking.info(f"grafanaViewers[{index}]: {viewer.object_id} already holds Grafana Viewer on {grafana_id} "
                     f"(assignment {others[0]}, made outside this stack): left as it is, none assigned")
    return tuple(kept)
