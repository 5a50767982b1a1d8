"""Component GpuDashboard: the "Advanced GPU Observability" dashboard in Grafana.

Owns: one ``python3 -m steps.grafana_dashboard`` step that downloads the dashboard (pinned:
inspektor-gadget/grafana-dashboards at :data:`PINNED_COMMIT`, verified against its sha256), points its datasource
variables at this stack's datasources, sets ``dashboardProfileType`` in its GPU-memory queries and uploads it;
deleted on destroy unless ``shared``. Inputs: :class:`GpuDashboardArgs`. Outputs: ``url``, ``definition``. The upload
needs Grafana and the Admin role, not the datasources (Grafana stores a dashboard without resolving them). Upstream:
grafana/grafana ``pkg/services/dashboards/service/dashboard_service.go``; docs/decisions/datasource-ownership.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

import pulumi

from stack import profile_types
from steps.command import DASHBOARD_API_VERSION, forwarded_depends_on, script_command

TYPE = "aks-gpu-observability:index:GpuDashboard"
PINNED_COMMIT = "494542d8a0439fe4b1a60577e70677cec5c96070"
PINNED_URL = (
    f"https://raw.githubusercontent.com/inspektor-gadget/grafana-dashboards/{PINNED_COMMIT}"
    "/dashboards/gpu-observability/AdvancedGPUObservability.json"
)
PINNED_SHA256 = "9c87339704d1c8b9d5897e82acd366cea751cf0030850319feb06c05ac3b1ea4"
PINNED_UID = "AdvancedGPUObservability"
#: The profile type ID the pinned dashboard's flame-graph panel asks for (its ``profileTypeId``), config
#: ``dashboardProfileType``'s default (stack/profile_types.py ``PUBLISHED``).
PINNED_PROFILE_TYPE = profile_types.PUBLISHED


@dataclass(frozen=True)
class GpuDashboardArgs:
    """``grafana_id``: the workspace's ARM id (a delete first asks ARM whether it still exists). ``source``: https
    URL or project-relative file; ``sha256``: its pinned digest (64 hex); ``uid``: the
    uid inside the JSON; ``profile_type``: the Pyroscope profile type ID its GPU-memory queries ask for
    (``dashboardProfileType``; set also when shared: every stack sharing the dashboard must set the same, or each
    upload rewrites it); ``datasources``: dashboard variable -> {"uid", "name"} defaults. ``input_datasources``:
    datasource plugin id -> uid, what a dashboard exported "for sharing" (``__inputs``) is imported with
    (steps/grafana_dashboard.py ``import_inputs``). ``shared``: several
    cluster stacks upload the same dashboard into one Grafana (``multiCluster``); then none of them owns
    it: each uploads it (identical content, so only the first writes) and leaves it in place on destroy
    (Pulumi ``retain_on_delete``), and no datasource defaults or input mappings are set (each reader picks the
    cluster's datasources in the dashboard's pickers; an export with ``__inputs`` is refused)."""

    grafana_endpoint: pulumi.Input[str]
    grafana_id: pulumi.Input[str]
    source: str
    sha256: str
    uid: str
    profile_type: str
    timeout_seconds: int
    retry_forbidden: bool
    shared: bool
    datasources: dict = field(default_factory=dict)
    input_datasources: dict = field(default_factory=dict)


class GpuDashboard(pulumi.ComponentResource):
    """Outputs: ``uid``, ``url`` (``<grafana endpoint>/d/<uid>``), ``definition`` (how the step uploads it,
    known once it has run: ``{"uid", "source", "sha256", "profileType", "datasources", "inputs"}``: the profile type ID
    its GPU-memory flame graphs ask for, the variable defaults it
    sets and the datasource each ``__inputs`` plugin maps to, both ``{}`` when shared; ``ops.verify --drift`` rebuilds
    the upload from it). ``opts.depends_on`` (a
    Grafana the stack creates and the Admin role on it; not the datasources) is forwarded to the upload step."""

    def __init__(self, name: str, args: GpuDashboardArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        defaults = {} if args.shared else args.datasources
        inputs = {} if args.shared else args.input_datasources
        upload = script_command(
            f"{name}-upload",
            "grafana_dashboard.py",
            {
                "API_VERSION": DASHBOARD_API_VERSION,
                "DASHBOARD_PROFILE_TYPE": args.profile_type,
                "DASHBOARD_SHA256": args.sha256,
                "DASHBOARD_SOURCE": args.source,
                "DASHBOARD_UID": args.uid,
                "DATASOURCES": json.dumps(defaults, sort_keys=True, separators=(",", ":")),
                "DATASOURCE_INPUTS": json.dumps(inputs, sort_keys=True, separators=(",", ":")),
                "GRAFANA_ENDPOINT": args.grafana_endpoint,
                "GRAFANA_ID": args.grafana_id,
                "RETRY_FORBIDDEN": str(args.retry_forbidden).lower(),
                "TIMEOUT_SECONDS": str(args.timeout_seconds),
            },
            triggers=[args.grafana_endpoint, args.uid],
            # Create first: a new uid is checked against the downloaded JSON before the old dashboard is
            # deleted (delete-first could delete it and then fail that check); overwrite covers the title.
            delete_first=False,
            opts=pulumi.ResourceOptions(parent=self, depends_on=forwarded_depends_on(opts),
                                        retain_on_delete=args.shared),
        )
        self.uid = upload.stdout.apply(lambda _: args.uid)
        self.url = pulumi.Output.concat(pulumi.Output.from_input(args.grafana_endpoint).apply(lambda e: e.rstrip("/")),
                                        "/d/", self.uid)
        self.definition = upload.stdout.apply(
            lambda _: {"datasources": defaults, "inputs": inputs, "profileType": args.profile_type,
                       "sha256": args.sha256, "source": args.source, "uid": args.uid})
        self.register_outputs({"uid": self.uid, "url": self.url, "definition": self.definition})
