"""Component GpuDashboard: the "Advanced GPU Observability" dashboard in Grafana.

Source (pinned in the design brief, shared/DESIGN.md): inspektor-gadget/grafana-dashboards at commit 494542d8a0439fe4b1a60577e70677cec5c96070,
``dashboards/gpu-observability/AdvancedGPUObservability.json``, sha256
9c87339704d1c8b9d5897e82acd366cea751cf0030850319feb06c05ac3b1ea4 (Apache-2.0). Downloaded at deploy time by
``steps/grafana_dashboard.py`` and verified against the sha256 before upload; uploaded with overwrite,
deleted on destroy. Its variables ``prom_ds`` and ``pyroscope_ds`` choose datasources by type; the step
points their defaults at this stack's datasources. Its flame-graph panel asks Pyroscope for the profile type ID
``process_cpu:malloc:bytes::`` (``profileTypeId`` of its one Pyroscope query), under which Pyroscope v1.15.0 holds the GPU
memory only from Inspektor Gadgets before v0.54.0 (docs/offline.md G12); the step sets that ID to ``dashboardProfileType``
in every Pyroscope query of the dashboard that asks for GPU memory (steps/grafana_dashboard.py ``with_profile_type``),
so the panel follows the gadget version without an edit in Grafana, which the step would overwrite.

The upload does not wait for the datasources. Grafana stores a dashboard without resolving the datasources
it names: saving (``POST /api/dashboards/db``) runs ``BuildSaveDashboardCommand``, which checks the title, the
uid, folder rules, the refresh interval, legacy alerts, the version (overwrite) and the caller's permissions,
and nothing about datasources (grafana/grafana ``pkg/services/dashboards/service/dashboard_service.go`` at
00b487a6cee7f974d413547d5601ef9d8ee90fcb); a datasource variable is resolved when the dashboard is viewed. So the
upload needs Grafana and the deployer's Grafana Admin role (``opts.depends_on``), and runs beside the private
link chain instead of after it.
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
#: ``dashboardProfileType``'s default (flamegraph/hotspots.py ``PROFILE_TYPE``).
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
    sets and the datasource each ``__inputs`` plugin maps to, both ``{}`` when shared; ``ops.verify --drift`` rebuilds the upload from it). ``opts.depends_on`` (a
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
            opts=pulumi.ResourceOptions(parent=self, depends_on=forwarded_depends_on(opts), retain_on_delete=args.shared),
        )
        self.uid = upload.stdout.apply(lambda _: args.uid)
        self.url = pulumi.Output.concat(pulumi.Output.from_input(args.grafana_endpoint).apply(lambda e: e.rstrip("/")), "/d/", self.uid)
        self.definition = upload.stdout.apply(
            lambda _: {"datasources": defaults, "inputs": inputs, "profileType": args.profile_type, "sha256": args.sha256,
                       "source": args.source, "uid": args.uid})
        self.register_outputs({"uid": self.uid, "url": self.url, "definition": self.definition})
