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
import textwrap
from dataclasses import dataclass, replace
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
#: Types whose deletion or replacement loses the profiles they hold.
DATA_TYPES = ("kubernetes:core/v1:PersistentVolumeClaim", "azure-native:storage:StorageAccount",
              "azure-native:storage:BlobContainer")
SUBSCRIPTION, SHA = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73", "0123456789abcdef" * 4
DASHBOARD = "https://dashboards.example.test/gpu/{}.json"
MICRO, GRAFANA = {"pyroscopeMode": "microservices"}, {"createGrafana": "true"}
_MOVE = "the datasources and dashboard move to it"
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
    "grafanaViewers[0]": "0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b",
    "privateLinkIpAddressCount": "2", "privateLinkServiceTimeoutSeconds": "1800",
    "monitorWorkspaceName": "amw-gpu-other", "monitorWorkspaceResourceGroup": "rg-monitor-other",
    "pyroscopeDatasourceUid": "pyro-b", "pyroscopeDatasourceName": "Pyroscope B", "prometheusDatasourceUid": "prom-b",
    "prometheusDatasourceName": "Prometheus B", "dashboardProfileType": "process_cpu:malloc:bytes:process_cuda:bytes",
    "grafanaTimeoutSeconds": "600", "connectionApprovalTimeoutSeconds": "1200",
    "managedPrivateEndpointTimeoutSeconds": "1800",
}

#: A restart of Pyroscope's pod, as the page's intro defines it (:data:`INTRO`).
_RESTART = "*Restart*."
_NAT = ("New NAT IPs: Grafana's connections are refused until the NAT NetworkPolicy admits them, right after the "
        "wait (seconds to minutes).")
_WHY = {
    **dict.fromkeys(("pyroscopeImageRepository", "pyroscopeImageTag", "pyroscopeResources", "pyroscopeNodeSelector",
                     "pyroscopeTolerations", "pyroscopeRetention", "pyroscopeTerminationGracePeriodSeconds"), _RESTART),
    "pyroscopeIngestionRateMb": _RESTART + " Left at 0, the limits follow the GPU pools' most nodes: resizing a GPU "
                                "pool past 8 nodes restarts Pyroscope too.",
    "pyroscopeIngestionBurstMb": _RESTART + " As pyroscopeIngestionRateMb.",
    "pyroscopeChartVersion": _RESTART + " A chart pinned by digest (pyroscopeChart ...@sha256:) needs the new "
                             "version's digest too, or Helm refuses it.",
    "pyroscopeChart": _RESTART,
    "privateLinkIpAddressCount": "As privateLinkSubnet.",
    "grafanaViewers": "One Grafana Viewer assignment on the Grafana workspace created per principal added, one deleted "
                      "per principal removed; the first one brings its component (grafana-viewers, no Azure call), "
                      "the last one takes it away. Nothing else changes.",
    "privateLinkSubnet": _NAT,
}

#: key -> (config sets, a ``key[i]`` one as ``--set-path``; the base stack's sets; why it costs what it does)
CHANGES: dict[str, tuple[dict[str, str], dict[str, str], str]] = {
    **{key.split("[")[0]: ({key: value}, {}, _WHY.get(key.split("[")[0], "")) for key, value in _PLAIN.items()},
    "production": ({"production": "true"}, {}, "No resource input: the policy pack applies its production rules."),
    "multiCluster": ({"multiCluster": "true"}, {}, "Per-cluster names (private link service, datasource uids); "
                     "the Monitoring Data Reader role is no longer assigned here (the diff warns)."),
    "clusterStack": ({"clusterStack": "org/platform/prod"}, {}, "Keys set here win; the reference is only read."),
    "grafanaStack": ({"grafanaStack": "org/platform/prod"}, {}, "As clusterStack."),
    "clusterName": ({"clusterName": "aks-gpu-dev2"}, {}, "Another cluster: all is made again there; the old claim "
                    "goes with its disk and every profile."),
    "clusterResourceGroup": ({"clusterResourceGroup": "rg-aks-gpu-dev2"}, {}, "As clusterName."),
    "extensionName": ({"extensionName": "inspektor-gadget-2"}, {}, "A path parameter: the extension is reinstalled; no "
                      "GPU profiles meanwhile."),
    "extensionTimeoutSeconds": ({"extensionTimeoutSeconds": "3600"}, {}, "A resource option (customTimeouts), not an "
                                "input."),
    "pyroscopePersistence": ({"pyroscopePersistence": "false"}, {}, "volumeClaimTemplates cannot change: Pyroscope is "
                             "reinstalled on an emptyDir, the claim deleted with its disk and every profile."),
    "pyroscopeStorageClass": ({"pyroscopeStorageClass": "managed-csi-premium"}, {}, "A claim's class cannot change: "
                              "the claim and disk are deleted with every profile, then Pyroscope is reinstalled on the "
                              "new class."),
    "pyroscopeStorageSize": ({"pyroscopeStorageSize": "128Gi"}, {}, "The claim grows online; a smaller size is "
                             "refused."),
    "pyroscopeNetworkPolicy": ({"pyroscopeNetworkPolicy": "false"}, {}, "The NetworkPolicies go: Pyroscope is open to "
                               "all that routes to the internal load balancer."),
    "pyroscopeMode": (dict(MICRO), {}, "Reinstalled as the chart's components on a new blob container; the single "
                      "binary's claim goes with its disk and profiles (not moved)."),
    "pyroscopeStorageAccount": ({"pyroscopeStorageAccount": "stpyroscopeshared"}, MICRO, "The stack's account is "
                                "deleted with its container and every profile (the diff warns); Pyroscope starts "
                                "empty on the given one."),
    "pyroscopeStorageAccountResourceGroup": ({"pyroscopeStorageAccountResourceGroup": "rg-storage"}, MICRO,
                                             _PATH.format("resourceGroupName", "the identity, the account and its "
                                                          "container are")),
    "pyroscopeBlobContainer": ({"pyroscopeBlobContainer": "profiles"}, MICRO,
                               _PATH.format("containerName", "the container is")),
    "pyroscopeStorageSku": ({"pyroscopeStorageSku": "Standard_LRS"}, MICRO, "Azure converts the replication, or "
                            "refuses to (not simulated)."),
    "privateLinkServiceName": ({"privateLinkServiceName": "pyroscope-pls-2"}, {}, "AKS cannot rename a private link "
                               "service, so the Service is re-created with a new one."),
    "privateLinkServiceResourceGroup": ({"privateLinkServiceResourceGroup": "rg-network"}, {},
                                        "Made again in that group, under a per-cluster name."),
    "createGrafana": ({**GRAFANA, "grafanaName": "amg-gpu-dev2"}, {}, "A new workspace needs a new name (azure-native "
                      "cannot create an existing one); " + _MOVE + "."),
    "createMonitorWorkspace": ({"createMonitorWorkspace": "true", "monitorWorkspaceName": "amw-gpu-dev2"}, {},
                               "A new, empty workspace: point the metrics add-on at it (monitorWorkspaceId)."),
    "grafanaPublicNetworkAccess": ({"grafanaPublicNetworkAccess": "Disabled"}, GRAFANA, ""),
    "deployerPrincipalType": ({"deployerPrincipalType": "ServicePrincipal"}, GRAFANA, ""),
    "grafanaName": ({"grafanaName": "amg-gpu-other"}, {}, "Another workspace (a path parameter of the endpoint): "
                    + _MOVE + "."),
    "grafanaResourceGroup": ({"grafanaResourceGroup": "rg-observability-other"}, {}, "As grafanaName."),
    "managedPrivateEndpointName": ({"managedPrivateEndpointName": "pyro-mpe2"}, {}, "A path parameter of the "
                                   "endpoint."),
    "assignMonitoringDataReader": ({"assignMonitoringDataReader": "false"}, {}, "The Prometheus datasource loses "
                                   "access unless the identity holds the role otherwise (the diff warns)."),
    "dashboardSource": ({"dashboardSource": DASHBOARD.format("GpuObservability-v2"), "dashboardSha256": SHA}, {}, ""),
    "dashboardSha256": ({"dashboardSha256": SHA}, {}, "Checked before any upload."),
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
    return text.replace("\n", " ")


OPENER = "For the operator changing a deployed stack's config: what the next `pulumi up` does."

INTRO = """\
One representative change per key to a deployed `dev` stack (on the base named, else the example stack), from the
offline diff: Azure, Grafana and the cluster are simulated; a real `pulumi preview --diff` reads the live state.

- *Re-creates the private link chain*: Grafana's managed private endpoint is replaced and approved again; Grafana
  loses Pyroscope for minutes.
- *may update*: shown changed only because an input is unknown until `up` runs a step, which then finds it the same.
- *Restart*: Pyroscope's pod restarts (the shutdown flush, then no profiles until it is back); the private link stays.

Upgrading this project, with no key changed, the next `pulumi up` restarts Pyroscope once (new flags:
`-querier.max-query-length`, the ingestion limits), updates annotations in place on gadget-namespace, Services and
NetworkPolicies ([existing-objects.md](existing-objects.md)), creates pyroscope-claims-identity, annotates the
claims' storage class, and runs every step once more, each a read or a no-op (the dashboard step writes only over a
v2-schema copy in Grafana)."""


#: The move to Pyroscope 2 and its two half-moves, on the example stack (docs/decisions/pyroscope-major.md).
MAJOR_CHANGES = {
    "both": ({"pyroscopeChartVersion": "2.0.0", "pyroscopeImageTag": "2.0.1"}, {},
             "Pyroscope 2 on v1 storage, on the same volume."),
    "the chart alone": ({"pyroscopeChartVersion": "2.0.0"}, {},
                        "Chart 2.x passes -architecture.storage=v1, which a 1.x image does not know."),
    "the image alone": ({"pyroscopeImageTag": "2.0.1"}, {},
                        "A 2.x image under chart 1.x starts on v1-v2-dual storage, away from the volume's v1 blocks."),
}
PYROSCOPE_2 = """\
## Pyroscope 2

The stack runs Pyroscope 2 on the v1 storage of 1.x, pinned in the chart's values (`architecture.storage`: v1 on, v2
off; chart 2.0.0's default, 2.1.0 and later default to v2), so the volume, retention and sizing keep their meaning.
Chart and image move together; one alone is refused before anything is deployed. To move:

1. Snapshot Pyroscope's disk (no documented way back to 1.x): its id is
   `kubectl get pv "$(kubectl -n gadget get pvc data-pyroscope-0 -o jsonpath='{.spec.volumeName}')" -o
   jsonpath='{.spec.csi.volumeHandle}'`, then `az snapshot create -g <node resource group> -n pyroscope-before-2
   --source <disk id>`.
2. Move to the last 1.x release first (the 2.0 notes start from 1.21), chart and image together.
3. `pulumi config set pyroscopeChartVersion 2.0.0` and `pulumi config set pyroscopeImageTag 2.0.1` (or your 2.x
   pair), `pulumi preview --diff` (one in-place update of the release, and a warning), `pulumi up`.
4. `.venv/bin/python -m ops.verify --stack <stack>`: profiles arrive; Grafana's flame graphs show data from before the
   move.

Pyroscope 2 keeps dots in label names. The maintainers' v2 storage (dual ingest, then v2 only, on object storage) is
not what the stack runs ([decisions/pyroscope-major.md](decisions/pyroscope-major.md)). Each move, offline:"""


#: The page's sections, costliest first: a row's verdict is the section it is in.
SECTIONS = ((CHAIN_KIND, "Re-creates the private link chain"), ("replaces", "Replaces resources"),
            ("in place", "In place"), ("no change", "No change"), ("refused", "Refused"))
assert {kind for kind, _ in SECTIONS} == set(KINDS)


def _detail(r: Row) -> str:
    """What ``pulumi up`` does, without the verdict its section names."""
    if r.kind == "refused":
        return r.message
    if r.kind == "no change":
        return r.does[len("no change"):].strip(" ()")
    return r.does.split(": ", 1)[1] if r.kind in ("in place", CHAIN_KIND) else r.does


def _item(label: str, r: Row, does: str) -> list[str]:
    """One list item: the change (and the base it is made on), what ``pulumi up`` does, why, wrapped at 120."""
    change = f"`{r.change}`" + (f" (base: `{r.base}`)" if r.base else "")
    does = does.replace(CHAIN_KIND, f"**{CHAIN_KIND}**", 1).replace("may update", "*may update*")
    rest = " ".join(part for part in (does + "." if does else "", r.why) if part)
    text = _cell(f"- {label}{change}" + (f": {rest}" if rest else ""))
    return textwrap.wrap(text, 120, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def render(table: Optional[Sequence[Row]] = None, majors: Optional[Sequence[Row]] = None) -> str:
    """The page: a title, what the lists are and how they are made, then a section per verdict (:data:`SECTIONS`,
    with how many keys it has) listing its keys in Pulumi.yaml's order, one item each (its change, which starts with
    the key); then the move to Pyroscope 2 (:data:`PYROSCOPE_2`) with an item per :data:`MAJOR_CHANGES` (the diff's
    warnings said by name only: the section says what they say)."""
    table = list(rows() if table is None else table)
    majors = list([row(k, c) for k, c in MAJOR_CHANGES.items()] if majors is None else majors)
    lines = ["# What each change costs", "", OPENER, "",
             f"<!-- Generated by `{COMMAND}` from Pulumi.yaml and the offline diff; do not edit. -->", "", INTRO]
    for kind, title in SECTIONS:
        found = [r for r in table if r.kind == kind]
        if found:
            lines += ["", f"## {title} ({len(found)})", ""]
            lines += [line for r in found for line in _item("", r, _detail(r))]
    lines += ["", PYROSCOPE_2, ""]
    for r in majors:
        why = r.why + (" The diff warns." if r.warnings else "")
        lines += _item(f"{r.key}: ", replace(r, why=why), r.does)
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
