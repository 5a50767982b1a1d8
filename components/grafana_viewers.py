"""Component GrafanaViewers: the built-in Grafana Viewer role for the people who read the GPU flame graphs.

Owns: one azure-native ``RoleAssignment`` per viewer (``grafanaViewers``), scoped to the Grafana workspace, named
``<component>-<object id>`` so that adding or removing one viewer creates or deletes that one assignment and nothing
else; its ARM name is the UUID of scope, role and principal (``stack.specs.role_assignment_name``), stable whatever
the list's order. ``principalType`` is always sent: azure-native's SDK would send ``User`` when it is left out.
Delete-before-replace: a second assignment of one role to one principal at one scope is refused by ARM (409
RoleAssignmentExists). ARM's PrincipalNotFound and UnmatchedPrincipalType get one line naming the key
(:func:`viewer_recovery`). Registered only with at least one viewer to assign. Inputs: :class:`GrafanaViewersArgs`.
Outputs: ``assignments`` (object id -> RoleAssignment). Why each choice: docs/decisions/grafana-viewers.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
from pulumi_azure_native import authorization

from stack.recovery import error_hooks, explain_already_exists
from stack.specs import GRAFANA_VIEWER, role_assignment_name, role_definition_id

TYPE = "aks-gpu-observability:index:GrafanaViewers"
DESCRIPTION = "Reads the GPU profiling dashboards in Azure Managed Grafana (aks-gpu-observability)"


def viewer_recovery(errors: Sequence[str], object_id: str, principal_type: str) -> Optional[str]:
    """The one line for ARM's refusal of a viewer's assignment, naming ``grafanaViewers`` and the way out; None for
    another error. PrincipalNotFound: the directory ARM asked has no such object yet (a group made minutes ago:
    replication; "Troubleshoot Azure RBAC", "Assigning a role to a new principal sometimes fails", whose fix for a new
    group is to wait) or at all. UnmatchedPrincipalType: the item's type is not the principal's."""
    text = "\n".join(errors)
    if "PrincipalNotFound" in text:
        return (f"grafanaViewers: ARM finds no principal {object_id} in the directory; a group created minutes ago is "
                "not replicated yet (run `pulumi up` again in a few minutes), otherwise the object id is wrong (copy "
                "it from Microsoft Entra ID, Object ID)")
    if "UnmatchedPrincipalType" in text:
        found = re.search(r"has type '(\w+)'", text)
        actual = found.group(1) if found else "<type>"
        return (f"grafanaViewers: {object_id} is a {actual}, not a {principal_type}; write the item as "
                f"{actual}:{object_id}")
    return None


def _explain(object_id: str, principal_type: str):
    def explain(args: pulumi.ErrorHookArgs) -> bool:
        line = viewer_recovery(args.errors, object_id, principal_type)
        if line is None:
            return explain_already_exists(args)  # a killed run's create: the recovery's line
        pulumi.log.error(line)
        return False  # never a retry: ARM answers the same until the principal or the item changes
    return explain


@dataclass(frozen=True)
class GrafanaViewersArgs:
    """``grafana_id``: the Grafana workspace's ARM id (an output for a Grafana the stack creates). ``viewers``:
    ``(object id, principal type)`` pairs, object ids lower-case and distinct (``stack_config.rules.grafana_viewers``),
    less those holding the role by an assignment made elsewhere (``existing.roles.viewers_to_assign``)."""

    grafana_id: pulumi.Input[str]
    subscription_id: str
    viewers: Sequence[tuple[str, str]]


class GrafanaViewers(pulumi.ComponentResource):
    """Outputs: ``assignments``, object id -> its RoleAssignment."""

    def __init__(self, name: str, args: GrafanaViewersArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        role = role_definition_id(args.subscription_id, GRAFANA_VIEWER)
        self.assignments = {}
        for object_id, principal_type in args.viewers:
            child = f"{name}-{object_id}"
            self.assignments[object_id] = authorization.RoleAssignment(
                child,
                role_assignment_name=pulumi.Output.from_input(args.grafana_id).apply(
                    lambda scope, principal=object_id: role_assignment_name(scope, GRAFANA_VIEWER, principal)),
                scope=args.grafana_id,
                role_definition_id=role,
                principal_id=object_id,
                # Set: ARM then takes a new user's or service principal's type without asking a directory that has
                # not replicated it yet, and refuses a wrong one (UnmatchedPrincipalType, explained by the hook).
                principal_type=principal_type,
                description=DESCRIPTION,
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True,
                                            hooks=error_hooks(f"{child}-principal", _explain(object_id,
                                                                                             principal_type))),
            )
        self.register_outputs({})
