"""Component GrafanaViewers: the built-in Grafana Viewer role for the people who read the GPU flame graphs.

Owns: one azure-native ``RoleAssignment`` per viewer (``grafanaViewers``), scoped to the Grafana workspace, named
``<component>-<object id>`` so that adding or removing one viewer creates or deletes that one assignment and nothing
else; its ARM name is the UUID of scope, role and principal (``stack.specs.role_assignment_name``), stable whatever
the list's order. ``principalType`` is always sent: azure-native's SDK would send ``User`` when it is left out.
Delete-before-replace: a second assignment of one role to one principal at one scope is refused by ARM (409
RoleAssignmentExists). Registered only with at least one viewer to assign. Inputs: :class:`GrafanaViewersArgs`.
Outputs: ``assignments`` (object id -> RoleAssignment). Why each choice: docs/decisions/grafana-viewers.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi
from pulumi_azure_native import authorization

from stack.recovery import already_exists_hooks
from stack.specs import GRAFANA_VIEWER, role_assignment_name, role_definition_id

TYPE = "aks-gpu-observability:index:GrafanaViewers"
DESCRIPTION = "Reads the GPU profiling dashboards in Azure Managed Grafana (aks-gpu-observability)"


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
                # Set, so that ARM takes the type for a principal Entra ID has not replicated yet (a new group) rather
                # than answering PrincipalNotFound, and refuses a wrong one (UnmatchedPrincipalType).
                principal_type=principal_type,
                description=DESCRIPTION,
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True,
                                            hooks=already_exists_hooks(child)),
            )
        self.register_outputs({})
