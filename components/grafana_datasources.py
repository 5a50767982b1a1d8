"""Component GrafanaDatasources: Grafana's Pyroscope and Azure Monitor Prometheus datasources, and the
role that lets Grafana's identity read the workspace.

Owns: Monitoring Data Reader for Grafana's identity on the workspace (an azure-native ``RoleAssignment``, or with
``shared_role`` a ``steps/ensure_role_assignment.sh`` step that never deletes it), and one
``python3 -m steps.grafana_datasource`` step per datasource (definition as sorted JSON in the environment).
Inputs: :class:`GrafanaDatasourcesArgs`. Outputs: ``pyroscope_uid``, ``prometheus_uid``, ``pyroscope_definition``,
``prometheus_definition``. Role ids and names: ``stack.specs``. Upstream: Grafana HTTP API
(``/api/datasources``); why each choice: docs/decisions/datasource-ownership.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import pulumi
from pulumi_azure_native import authorization

from stack.recovery import already_exists_hooks
from stack.specs import MONITORING_DATA_READER, role_assignment_name, role_definition_id
from steps.command import DASHBOARD_API_VERSION, forwarded_depends_on, script_command

TYPE = "aks-gpu-observability:index:GrafanaDatasources"
#: The config key that sets each datasource's uid, named by the step when it must refuse a uid (a provisioned one).
UID_CONFIG_KEYS = {"pyroscope": "pyroscopeDatasourceUid", "prometheus": "prometheusDatasourceUid"}
ROLE_DESCRIPTION = "Azure Managed Grafana reads Inspektor Gadget metrics (aks-gpu-observability)"


def pyroscope_datasource(uid: str, name: str, url: str) -> dict:
    """The Pyroscope datasource as the published procedure creates it (MicrosoftDocs/azure-aks-docs
    articles/aks/gpu-profiling.md, step 3): proxy access, ``jsonData.keepCookies`` ``pyroscope_git_session``."""
    return {"access": "proxy", "jsonData": {"keepCookies": ["pyroscope_git_session"]}, "name": name,
            "type": "grafana-pyroscope-datasource", "uid": uid, "url": url}


def prometheus_datasource(uid: str, name: str, url: str) -> dict:
    return {
        "access": "proxy",
        "jsonData": {"azureCredentials": {"authType": "msi"}, "httpMethod": "POST"},
        "name": name,
        "type": "prometheus",
        "uid": uid,
        "url": url,
    }


def sorted_json(value: dict) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class GrafanaDatasourcesArgs:
    """Inputs of :class:`GrafanaDatasources`.

    ``grafana_id``: the workspace's ARM id; a delete asks ARM whether it still exists (a deleted workspace holds
    nothing to delete, and its endpoint no longer resolves). ``pyroscope_url``: never empty (GrafanaPrivateLink raises
    before that). ``assign_role``: false when
    Grafana's identity already holds Monitoring Data Reader on the workspace under another assignment
    (ARM answers 409 RoleAssignmentExists to a second one). ``timeout_seconds``: retries of Grafana 429/5xx.
    ``retry_forbidden``: also retry 401/403, while the deployer's just-made Grafana Admin role propagates.
    ``shared_role``: the role assignment is shared with other stacks (``multiCluster``: the other clusters' Prometheus
    datasources rely on it too): ensured by a step that never deletes it, instead of owned by this stack.
    """

    grafana_endpoint: pulumi.Input[str]
    grafana_id: pulumi.Input[str]
    grafana_principal_id: pulumi.Input[str]
    subscription_id: str
    workspace_id: pulumi.Input[str]
    workspace_query_endpoint: pulumi.Input[str]
    pyroscope_url: pulumi.Input[str]
    pyroscope_uid: str
    pyroscope_name: str
    prometheus_uid: str
    prometheus_name: str
    assign_role: bool
    timeout_seconds: int
    retry_forbidden: bool
    shared_role: bool


class GrafanaDatasources(pulumi.ComponentResource):
    """Outputs: ``pyroscope_uid``, ``prometheus_uid``; ``pyroscope_definition``, ``prometheus_definition`` (the
    datasource as its step sets it: a dict of uid, name, type, access, url, jsonData, known once the step has
    run; ``ops.verify --drift`` compares Grafana's copy with it); ``datasources`` (the two command resources,
    for ``depends_on``), ``role_assignment`` (the RoleAssignment, the step that ensures a shared one, or None)."""

    def __init__(self, name: str, args: GrafanaDatasourcesArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        role = role_definition_id(args.subscription_id, MONITORING_DATA_READER)
        assignment_name = pulumi.Output.all(args.workspace_id, args.grafana_principal_id).apply(
            lambda pair: role_assignment_name(pair[0], MONITORING_DATA_READER, pair[1]))
        self.role_assignment = None
        if args.assign_role and args.shared_role:
            self.role_assignment = script_command(
                f"{name}-shared-monitoring-data-reader",
                "ensure_role_assignment.sh",
                {
                    "ASSIGNMENT_NAME": assignment_name,
                    "DESCRIPTION": ROLE_DESCRIPTION,
                    "PRINCIPAL_ID": args.grafana_principal_id,
                    "PRINCIPAL_TYPE": "ServicePrincipal",
                    "ROLE_DEFINITION_ID": role,
                    "SCOPE": args.workspace_id,
                    "TIMEOUT_SECONDS": str(args.timeout_seconds),
                },
                # Another workspace or identity is another assignment (this one stays: it is not this stack's).
                triggers=[args.workspace_id, args.grafana_principal_id],
                opts=pulumi.ResourceOptions(parent=self),
            )
        elif args.assign_role:
            self.role_assignment = authorization.RoleAssignment(
                f"{name}-monitoring-data-reader",
                role_assignment_name=assignment_name,
                scope=args.workspace_id,
                role_definition_id=role,
                principal_id=args.grafana_principal_id,
                principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                description=ROLE_DESCRIPTION,
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True,
                                            hooks=already_exists_hooks(f"{name}-monitoring-data-reader")),
            )
        waits_for = forwarded_depends_on(opts)
        common = {
            "API_VERSION": DASHBOARD_API_VERSION,
            "GRAFANA_ENDPOINT": args.grafana_endpoint,
            "GRAFANA_ID": args.grafana_id,
            "RETRY_FORBIDDEN": str(args.retry_forbidden).lower(),
            "TIMEOUT_SECONDS": str(args.timeout_seconds),
        }

        def datasource(kind: str, definition, uid: str, display: str, url: pulumi.Input[str], after: list):
            """The step and the definition it sets, the latter once the step has run."""
            desired = pulumi.Output.from_input(url).apply(lambda u: definition(uid, display, u))
            step = script_command(
                f"{name}-{kind}",
                "grafana_datasource.py",
                {**common, "DATASOURCE": desired.apply(sorted_json), "UID_CONFIG_KEY": UID_CONFIG_KEYS[kind]},
                triggers=[args.grafana_endpoint, uid],
                opts=pulumi.ResourceOptions(parent=self, depends_on=waits_for + after),
            )
            return step, pulumi.Output.all(step.stdout, desired).apply(lambda pair: pair[1])

        # Pyroscope reads the private IP that the refresh step waits for (pyroscope_url): the end of the chain.
        self.pyroscope, self.pyroscope_definition = datasource(
            "pyroscope", pyroscope_datasource, args.pyroscope_uid, args.pyroscope_name, args.pyroscope_url, [])
        # Prometheus does not wait for the role assignment: creating a datasource stores its settings and makes
        # no query, and Grafana's identity needs the role only when a panel queries the workspace.
        self.prometheus, self.prometheus_definition = datasource(
            "prometheus", prometheus_datasource, args.prometheus_uid, args.prometheus_name,
            args.workspace_query_endpoint, [])
        self.datasources = [self.pyroscope, self.prometheus]
        self.pyroscope_uid = self.pyroscope.stdout.apply(lambda _: args.pyroscope_uid)
        self.prometheus_uid = self.prometheus.stdout.apply(lambda _: args.prometheus_uid)
        self.register_outputs({"pyroscope_uid": self.pyroscope_uid, "prometheus_uid": self.prometheus_uid,
                               "pyroscope_definition": self.pyroscope_definition,
                               "prometheus_definition": self.prometheus_definition})
