"""What each change costs, for every key: the page docs/day-two.md, made by ``python -m offline.day_two``.

Owns: :data:`CHANGES`, one representative day-two change per key of Pulumi.yaml's ``config:`` (the ``pulumi config
set`` values, the base stack it is made on, and why it costs what it does), and :func:`row`, what the next
``pulumi up`` does from the offline diff (offline/diff.py ``preview``, by the engine's order for ``up``, so a
replacement seen only in the preview does not count): ``no change``, ``in place`` (updates, creates, deletes),
``replaces`` resources, ``re-creates the private link chain`` (Grafana's managed private endpoint is replaced), or
``refused`` (a ConfigError, or an error of the diff). A change that re-creates the chain, replaces the Pyroscope
release, deletes or replaces what holds profiles, or draws a warning from the diff needs a ``why``; the test
(tests/offline/test_day_two.py) fails without one. Output: :func:`render`, the page; ``--check`` exits 1 while the
page differs. AN OFFLINE ESTIMATE: Azure and the cluster are simulated (offline/canned.py).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

import yaml

from cli import OneLineParser
from offline import diff as plan_diff
from offline import replacement
from offline.program import run
from stack_config.schema import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "day-two.md"
COMMAND = "python -m offline.day_two"
#: The private link chain; it is re-created when Grafana's managed private endpoint is replaced.
CHAIN = ("pyroscope-private-link", "grafana-private-link-wait-for-pls", "grafana-private-link-mpe",
         "grafana-private-link-approve-connection", "grafana-private-link-refresh")
MPE, RELEASE = "grafana-private-link-mpe", "pyroscope-release"
CHAIN_KIND = "re-creates the private link chain"
KINDS = ("no change", "in place", "replaces", CHAIN_KIND, "refused")
COUNTED = {"replaces": "replace resources", CHAIN_KIND: "re-create the private link chain"}
#: Types whose deletion or replacement loses the profiles they hold.
DATA_TYPES = ("kubernetes:core/v1:PersistentVolumeClaim", "azure-native:storage:StorageAccount",
              "azure-native:storage:BlobContainer")
SUBSCRIPTION, SHA = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73", "0123456789abcdef" * 4
DASHBOARD = "https://dashboards.example.test/gpu/{}.json"
MICRO, GRAFANA = {"pyroscopeMode": "microservices"}, {"createGrafana": "true"}
_LINK = "Grafana's managed private endpoint is re-created and approved again: Grafana loses Pyroscope for minutes"
_MOVE = "the datasources and dashboard leave the old workspace for the new one, and " + _LINK
_PATH = "{} is a path parameter: {} replaced delete-first, every profile in the old container deleted (the diff warns)."

#: Changes on the example stack that need no why: the ``pulumi config set`` key (``key[i]``: ``--set-path``) -> value.
_PLAIN = {
    "tags[0]": "costCenter=1234", "kubeconfigCredentials": "admin", "kubeloginMode": "workloadidentity",
    "kubernetesDeleteUnreachable": "true", "extensionReleaseTrain": "stable", "extensionVersion": "0.46.0",
    "extensionGpuObservability": "false", "extensionAzureMonitor": "false",
    "pyroscopeChart": "https://grafana.github.io/helm-charts", "pyroscopeChartVersion": "1.15.1",
    "pyroscopeImageRepository": "myregistry.azurecr.io/grafana/pyroscope", "pyroscopeImageTag": "1.16.0",
    "pyroscopeReleaseTimeoutSeconds": "900", "pyroscopeTerminationGracePeriodSeconds": "900",
    "pyroscopeRetention": "30d", "pyroscopeIngestionRateMb": "16", "pyroscopeIngestionBurstMb": "16",
    "pyroscopeResources[0]": "limits.memory=8Gi",
    "pyroscopeNodeSelector[0]": "agentpool=system", "pyroscopeTolerations[0]": "CriticalAddonsOnly:NoSchedule",
    "pyroscopeAllowedCidrs[0]": "10.10.0.0/16", "privateLinkVisibility": SUBSCRIPTION, "privateLinkSubnet": "snet-pls",
    "privateLinkIpAddressCount": "2", "privateLinkServiceTimeoutSeconds": "1800",
    "monitorWorkspaceName": "amw-gpu-other", "monitorWorkspaceResourceGroup": "rg-monitor-other",
    "pyroscopeDatasourceUid": "pyro-b", "pyroscopeDatasourceName": "Pyroscope B", "prometheusDatasourceUid": "prom-b",
    "prometheusDatasourceName": "Prometheus B", "dashboardProfileType": "process_cpu:malloc:bytes:process_cuda:bytes",
    "grafanaTimeoutSeconds": "600", "connectionApprovalTimeoutSeconds": "1200",
    "managedPrivateEndpointTimeoutSeconds": "1800",
}

_RESTART = ("A Helm upgrade in place that changes the pod template: Pyroscope's pod restarts (the shutdown flush, "
            "pyroscopeTerminationGracePeriodSeconds; no profiles taken until it is back); the private link stays.")
_NAT = ("The private link service's NAT IPs are rebuilt: Grafana's connections are refused until the NAT "
        "NetworkPolicy admits the new ones, right after the wait (seconds to minutes).")
_WHY = {
    **dict.fromkeys(("pyroscopeImageRepository", "pyroscopeImageTag", "pyroscopeResources", "pyroscopeNodeSelector",
                     "pyroscopeTolerations", "pyroscopeRetention", "pyroscopeTerminationGracePeriodSeconds"), _RESTART),
    **dict.fromkeys(("pyroscopeIngestionRateMb", "pyroscopeIngestionBurstMb"),
                    _RESTART + " Left at 0 the limits follow the GPU pools' most nodes, so resizing a GPU pool past 8 "
                    "nodes restarts Pyroscope the same way; a number keeps them fixed."),
    "pyroscopeChartVersion": _RESTART[:-len("; the private link stays.")] + "; a chart pinned by digest "
                             "(pyroscopeChart ...@sha256:) needs the new version's digest too, or Helm refuses it. The "
                             "private link stays.",
    "pyroscopeChart": _RESTART,
    "privateLinkIpAddressCount": _NAT,
    "privateLinkSubnet": _NAT,
}

#: key -> (config sets, a ``key[i]`` one as ``--set-path``; the base stack's sets; why it costs what it does)
CHANGES: dict[str, tuple[dict[str, str], dict[str, str], str]] = {
    **{key.split("[")[0]: ({key: value}, {}, _WHY.get(key.split("[")[0], "")) for key, value in _PLAIN.items()},
    "production": ({"production": "true"}, {}, "No resource input: the policy pack applies its production rules."),
    "multiCluster": ({"multiCluster": "true"}, {}, "Per-cluster names: a new private link service (AKS cannot rename "
                     "one), so " + _LINK + "; new datasource uids; the Monitoring Data Reader role is no longer "
                     "assigned here (the diff warns)."),
    "clusterStack": ({"clusterStack": "org/platform/prod"}, {}, "clusterName and clusterResourceGroup stay set here "
                     "and win: the reference is only read."),
    "grafanaStack": ({"grafanaStack": "org/platform/prod"}, {}, "The Grafana and workspace keys stay set here and win: "
                     "the reference is only read."),
    "clusterName": ({"clusterName": "aks-gpu-dev2"}, {}, "Another cluster: all on it is made again there; the old "
                    "claim goes with its disk and every profile, the private link service with it, and " + _LINK + "."),
    "clusterResourceGroup": ({"clusterResourceGroup": "rg-aks-gpu-dev2"}, {}, "Another cluster, as for clusterName: "
                             "every profile on the old disk is lost, and " + _LINK + "."),
    "extensionName": ({"extensionName": "inspektor-gadget-2"}, {}, "A path parameter: the extension is uninstalled, "
                      "then installed again; no GPU profiles are collected meanwhile."),
    "extensionTimeoutSeconds": ({"extensionTimeoutSeconds": "3600"}, {}, "customTimeouts, a resource option: no input "
                                "changes."),
    "pyroscopePersistence": ({"pyroscopePersistence": "false"}, {}, "A StatefulSet's volumeClaimTemplates cannot "
                             "change: Pyroscope is reinstalled on an emptyDir, the claim deleted with its disk and "
                             "every stored profile; the private link stays."),
    "pyroscopeStorageClass": ({"pyroscopeStorageClass": "managed-csi-premium"}, {}, "A claim's class cannot change: "
                              "Pyroscope is uninstalled, the claim and its disk deleted with every stored profile, and "
                              "both come back on the new class; the private link stays."),
    "pyroscopeStorageSize": ({"pyroscopeStorageSize": "128Gi"}, {}, "The claim grows online; a smaller size is "
                             "refused."),
    "pyroscopeNetworkPolicy": ({"pyroscopeNetworkPolicy": "false"}, {}, "The NetworkPolicies go: Pyroscope is open to "
                               "all that routes to the internal load balancer."),
    "pyroscopeMode": (dict(MICRO), {}, "Pyroscope is reinstalled as the chart's components on a new blob container; "
                      "the single binary's claim is deleted with its disk and profiles (not moved); the private link "
                      "stays."),
    "pyroscopeStorageAccount": ({"pyroscopeStorageAccount": "stpyroscopeshared"}, MICRO, "The account the stack made "
                                "is deleted with its container and every profile in it (the diff warns); Pyroscope "
                                "starts empty on the brought one."),
    "pyroscopeStorageAccountResourceGroup": ({"pyroscopeStorageAccountResourceGroup": "rg-storage"}, MICRO,
                                             _PATH.format("resourceGroupName", "the identity, the account and its "
                                                          "container are")),
    "pyroscopeBlobContainer": ({"pyroscopeBlobContainer": "profiles"}, MICRO,
                               _PATH.format("containerName", "the container is")),
    "pyroscopeStorageSku": ({"pyroscopeStorageSku": "Standard_LRS"}, MICRO, "Azure converts the replication, or "
                            "refuses to (not simulated)."),
    "privateLinkServiceName": ({"privateLinkServiceName": "pyroscope-pls-2"}, {}, "AKS cannot rename a private link "
                               "service: the private link Service is re-created with a new one, and " + _LINK + "."),
    "privateLinkServiceResourceGroup": ({"privateLinkServiceResourceGroup": "rg-network"}, {}, "The private link "
                                        "service is made again in that group under a per-cluster name, and " + _LINK
                                        + "."),
    "createGrafana": ({**GRAFANA, "grafanaName": "amg-gpu-dev2"}, {}, "A new workspace, under a new name (azure-native "
                      "refuses to create one that exists): " + _MOVE + "."),
    "createMonitorWorkspace": ({"createMonitorWorkspace": "true", "monitorWorkspaceName": "amw-gpu-dev2"}, {},
                               "A new, empty workspace: point the metrics add-on at it (monitorWorkspaceId)."),
    "grafanaPublicNetworkAccess": ({"grafanaPublicNetworkAccess": "Disabled"}, GRAFANA, ""),
    "deployerPrincipalType": ({"deployerPrincipalType": "ServicePrincipal"}, GRAFANA, ""),
    "grafanaName": ({"grafanaName": "amg-gpu-other"}, {}, "Another workspace (a path parameter of the endpoint): "
                    + _MOVE + "."),
    "grafanaResourceGroup": ({"grafanaResourceGroup": "rg-observability-other"}, {}, "Another workspace (a path "
                             "parameter of the endpoint): " + _MOVE + "."),
    "managedPrivateEndpointName": ({"managedPrivateEndpointName": "pyro-mpe2"}, {}, "A path parameter of the "
                                   "endpoint: " + _LINK + "."),
    "assignMonitoringDataReader": ({"assignMonitoringDataReader": "false"}, {}, "The role assignment is deleted: the "
                                   "Prometheus datasource loses access unless the identity holds the role otherwise "
                                   "(the diff warns)."),
    "dashboardSource": ({"dashboardSource": DASHBOARD.format("GpuObservability-v2"), "dashboardSha256": SHA}, {}, ""),
    "dashboardSha256": ({"dashboardSha256": SHA}, {}, "The step checks it before it uploads anything."),
    "dashboardUid": ({"dashboardUid": "GpuObservabilityB", "dashboardSource": DASHBOARD.format("GpuObservabilityB"),
                      "dashboardSha256": SHA}, {}, ""),
}


def keys() -> list[str]:
    """The keys of Pulumi.yaml's ``config:``, in its order."""
    return list(yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))["config"])


@dataclass(frozen=True)
class Row:
    """One key's change and what ``pulumi up`` does. ``kind``: no change, in place, replaces, re-creates the private
    link chain, refused; ``ops``: (verb, resource names), resources in the diff's order; ``lost``: it deletes or
    replaces what holds profiles; ``warnings``: the diff's; ``unmodelled``: updated types offline/replacement.py has
    no rule for (the update may be a replacement)."""

    key: str
    change: str
    base: str
    why: str
    kind: str
    ops: tuple[tuple[str, tuple[str, ...]], ...] = ()
    lost: bool = False
    warnings: tuple[str, ...] = ()
    unmodelled: tuple[str, ...] = ()
    message: str = ""

    def touched(self, verb: str) -> tuple[str, ...]:
        return dict(self.ops).get(verb, ())

    @property
    def needs_why(self) -> bool:
        """It re-creates the chain, replaces the release, loses profiles, or the diff warns."""
        return self.kind == CHAIN_KIND or RELEASE in self.touched("replaces") or self.lost or bool(self.warnings)

    @property
    def does(self) -> str:
        if self.kind == "refused":
            return f"refused: {self.message}"
        detail = "; ".join(f"{verb} {', '.join(names)}" for verb, names in self.ops)
        if self.unmodelled:
            detail += f" (offline/replacement.py has no rule for {', '.join(self.unmodelled)})"
        if self.kind == "no change":
            return "no change" + (f" ({detail})" if detail else "")
        return detail if self.kind == "replaces" else f"{self.kind}: {detail}"


def _split(sets: dict[str, str]) -> tuple[dict[str, str], list[tuple[str, str, bool]]]:
    """``pulumi config set`` pairs and ``pulumi config set --path`` ones (a key with ``[i]``)."""
    return ({k: v for k, v in sets.items() if "[" not in k}, [(k, v, True) for k, v in sets.items() if "[" in k])


@lru_cache(maxsize=None)
def _base(base: tuple[tuple[str, str], ...]) -> dict:
    return run("dev", dict(base)).to_json()


def _show(sets: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sets.items())


_VERBS = {"create-replacement": "replaces", "create": "creates", "update": "updates", "delete": "deletes"}


def row(key: str, change: Optional[tuple[dict, dict, str]] = None) -> Row:
    """What the next ``pulumi up`` does after ``change`` (default: ``CHANGES[key]``) on a deployed dev stack."""
    sets, base_sets, why = change if change is not None else CHANGES[key]
    shown = dict(key=key, change=_show(sets), base=_show(base_sets), why=why)
    flat, paths = _split({**base_sets, **sets})
    try:
        base = _base(tuple(sorted(base_sets.items())))
        diff, known = plan_diff.preview(base, lambda pending: run("dev", flat, pending=pending, config_sets=paths))
    except ConfigError as error:
        return Row(kind="refused", message=str(error), **shown)
    if diff.errors:
        return Row(kind="refused", message="; ".join(diff.errors), **shown)
    up: dict[str, str] = {}  # URN -> what `pulumi up` does to it, from the engine's order (no preview-only replacement)
    for action in diff.order:
        if up.get(action.urn) != "replaces":
            up[action.urn] = _VERBS[action.kind]
    for s in diff.steps:  # a read; an update (or replacement) of the preview's unknowns that `up` may find the same
        if s.op == "read" or (s.urn not in up and s.op in ("update", "replace")):
            up[s.urn] = "reads" if s.op == "read" else "may update"
    steps = {s.urn: s for s in diff.steps}
    ops = tuple((verb, names) for verb in ("replaces", "updates", "may update", "creates", "deletes", "reads")
                if (names := tuple(s.name for u, s in steps.items() if up.get(u) == verb)))
    custom = {r.urn for r in known.resources if r.custom}
    unmodelled = tuple(sorted({steps[u].type for u, verb in up.items() if "update" in verb and u in custom
                               and replacement.rule_for(steps[u].type) is None}))
    lost = any(steps[u].type in DATA_TYPES for u, verb in up.items() if verb in ("replaces", "deletes"))
    replaced = {steps[u].name for u, verb in up.items() if verb == "replaces"}
    kind = (CHAIN_KIND if MPE in replaced else "replaces" if replaced
            else "in place" if set(up.values()) - {"reads"} else "no change")
    return Row(kind=kind, ops=ops, lost=lost, warnings=tuple(diff.warnings), unmodelled=unmodelled, **shown)


def rows() -> list[Row]:
    """One row per key of Pulumi.yaml, in its order (sequentially: the SDK's mocks are per process)."""
    return [row(key) for key in keys()]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


INTRO = f"""\
For every key of `Pulumi.yaml`, one representative change to a deployed `dev` stack (on the base it names, else on the
example stack) and what the next `pulumi up` does: in place, which resources it replaces, whether it re-creates the
private link chain (Grafana's managed private endpoint replaced, approved and refreshed again), or that it is refused.
*may update*: what a preview shows updated or replaced because an input is unknown until `up` runs a step (a new
endpoint's address, a lookup behind an updated wait), which `up`, with the canned answers, finds the same.
`{COMMAND}` writes this page from the offline diff (`--check`: exit 1 while it differs).
OFFLINE: Azure, Grafana and the cluster are simulated; a real `pulumi preview --diff` reads the live state.

A new version of this project changes no key, but may change what the next `pulumi up` does. From this version, on
a stack deployed before it:
- Pyroscope restarts once, a Helm upgrade in place: `-querier.max-query-length` (the retention plus a day, so ranges
  longer than a day are read) and the ingestion limits (`pyroscopeIngestionRateMb`, `pyroscopeIngestionBurstMb`) are
  added to its flags. Left at 0, those follow the GPU pools' size: resizing a GPU pool past 8 nodes restarts it too.
- gadget-namespace, the stack's Services and its NetworkPolicies update in place, their annotations only
  (`pulumi.com/patchForce`, and the owner mark `aks-gpu-observability/stack` where missing: docs/existing-objects.md).
- pyroscope-claims-identity is created and the claims update in place (their storage-class annotation), so a later
  `pyroscopeStorageClass` change previews.
- Every step runs once more, as its shared helpers changed (they keep the Pulumi login and the stack's passphrase from
  what a step runs): the waits, the approval and the endpoint refresh, each a read or a no-op on an approved
  connection, and the datasource and dashboard steps, which write nothing already right (the dashboard nothing unless
  Grafana holds a copy in its v2 schema)."""


#: The move to Pyroscope 2 and its two half-moves, on the example stack (docs/decisions/pyroscope-major.md).
MAJOR_CHANGES = {
    "both": ({"pyroscopeChartVersion": "2.0.0", "pyroscopeImageTag": "2.0.1"}, {},
             "Chart and image together, Pyroscope 2 on v1 storage: the two flags it needs, the same volume."),
    "the chart alone": ({"pyroscopeChartVersion": "2.0.0"}, {},
                        "Chart 2.x passes -architecture.storage=v1, which a 1.x image does not know."),
    "the image alone": ({"pyroscopeImageTag": "2.0.1"}, {},
                        "A 2.x image under chart 1.x starts on v1-v2-dual storage, away from the volume's v1 blocks."),
}
PYROSCOPE_2 = """\
## Pyroscope 2

Pyroscope 2 runs here on the v1 storage of 1.x: the stack pins it in the chart's values (`architecture.storage`, v1
on, v2 off), so the chart passes `-architecture.storage=v1` and `-write-path=ingester`, which Pyroscope 2 requires for
it, and the volume, retention and sizing keep their meaning. Chart 2.0.0 defaults to the same; 2.1.0 and later
default to v2. The chart and the image must move together; one without the other is refused before anything is
deployed. To move:

1. Take a snapshot of Pyroscope's disk, since the maintainers document no way back from 2.x to 1.x: its id is
   `kubectl get pv "$(kubectl -n gadget get pvc data-pyroscope-0 -o jsonpath='{.spec.volumeName}')" -o
   jsonpath='{.spec.csi.volumeHandle}'`, then `az snapshot create -g <node resource group> -n pyroscope-before-2
   --source <disk id>`.
2. Move within 1.x first to its last release (their 2.0 notes start from 1.21), chart and image together.
3. `pulumi config set pyroscopeChartVersion 2.0.0` and `pulumi config set pyroscopeImageTag 2.0.1` (or the 2.x pair
   you mean), then `pulumi preview --diff`: one in-place update of the release and the diff's warning; `pulumi up`.
4. Check with `.venv/bin/python -m ops.verify --stack <stack>` that profiles arrive, and Grafana's flame graphs for data
   from before the move.

Pyroscope 2 no longer sanitizes label names (dots are kept). The maintainers' move to v2 storage (dual ingest, then
v2 only; their Kubernetes guide asks for object storage, or a ReadWriteMany volume) is not what the stack runs: a
stack that needs it does it by hand, outside this stack's values. The rows below are the offline diff's, as in the
table above."""


def render(table: Optional[Sequence[Row]] = None, majors: Optional[Sequence[Row]] = None) -> str:
    """The page: a title, what the table is and how it is made, then one row per key; then the move to Pyroscope 2
    (:data:`PYROSCOPE_2`) with a row per :data:`MAJOR_CHANGES`."""
    table = list(rows() if table is None else table)
    majors = list([row(k, c) for k, c in MAJOR_CHANGES.items()] if majors is None else majors)
    counts = Counter(r.kind for r in table)
    lines = ["# What each change costs", "",
             f"<!-- Generated by `{COMMAND}` from Pulumi.yaml and the offline diff; do not edit. -->", "", INTRO, "",
             f"{len(table)} keys: " + ", ".join(f"{counts[k]} {COUNTED.get(k, k)}" for k in KINDS) + ".", "",
             "| key | change | the next `pulumi up` | why, and what it costs |", "|---|---|---|---|"]
    for r in table:
        change = f"`{r.change}`" + (f" (base: `{r.base}`)" if r.base else "")
        does = r.does.replace(CHAIN_KIND, f"**{CHAIN_KIND}**", 1).replace("may update", "*may update*")
        lines.append(f"| {r.key} | {_cell(change)} | {_cell(does)} | {_cell(r.why)} |")
    lines += ["", PYROSCOPE_2, "", "| move | change | the next `pulumi up` | why, and what it costs |",
              "|---|---|---|---|"]
    for r in majors:
        cost = " ".join([r.why, *r.warnings])
        lines.append(f"| {r.key} | `{_cell(r.change)}` | {_cell(r.does)} | {_cell(cost)} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog=COMMAND, description="Write docs/day-two.md: what each change costs, for every key.")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/day-two.md differs, write nothing")
    args = parser.parse_or_report(argv)
    if args is None:
        return 2
    text = render()
    if args.check:
        if not DOC.exists() or DOC.read_text(encoding="utf-8") != text:
            print(f"error: docs/day-two.md is out of date; run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
