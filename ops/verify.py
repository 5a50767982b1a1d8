"""Verify a deployed stack: ``python -m ops.verify --stack NAME [--outputs-file FILE] [--drift|--versions] [--json]``.

Owns the post-``pulumi up`` checklist (extension Succeeded, managed private endpoint Approved with the IP the
Pyroscope URL uses, both datasources healthy, the dashboard present, Pyroscope holding the GPU-memory profile type the
dashboard asks for, Pyroscope's disk below 80 %, the gadget pods ready and no profile dropped at Pyroscope's ingestion
limit, each failure with its cause:
:mod:`ops.verify_cluster`), headed by the version facts a support ticket quotes (:mod:`ops.versions`; ``--versions``
prints only those, exit 0), and ``--drift`` (Grafana's datasources and dashboard against what the stack set). Inputs:
the stack's outputs (:func:`stack.outputs.read_outputs`), answers of ``az rest`` (ARM and Grafana's HTTP API). Outputs:
a checklist with the next step for each failure, or ``--json``. Exit status 0 when every check passes (nothing
drifted), 1 when one fails (something drifted), 2 when the check cannot be made (outputs, ``az``, Grafana answering
other than 200/404, a dashboard source whose sha256 changed), one line on stderr. Secret outputs are never printed.
Upstream: grafana/grafana ``pkg/api/datasources.go``; the checks, the drift rules and why:
docs/decisions/stack-verification.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence
from urllib.parse import quote, urlparse

from cli import OneLineParser, UsageError, exit_code
from flamegraph.model import FrameError
from flamegraph.query import dashboard_profile_type, pick_profile_type, profile_types_url
from ops import (
    verify_cluster,  # Pyroscope's disk and the gadget DaemonSet
    versions,  # the version facts for a support ticket
)
from stack.outputs import OutputsError, StackOutputs, read_outputs
from steps import (
    grafana_dashboard,  # the dashboard step's own preparation and content hash
    grafana_server,  # the steps' own reading of which Grafana this is
)
from steps.azcli import AzError, AzNotInstalled, az, download, rest  # the step scripts' own az helpers

ROOT = Path(__file__).resolve().parent.parent

EXTENSION_API = "2023-05-01"
DASHBOARD_API = "2024-10-01"
NEEDED = ("extensionId", "managedPrivateEndpointId", "pyroscopePrivateUrl", "grafanaEndpoint",
          "pyroscopeDatasourceUid", "prometheusDatasourceUid", "dashboardUrl", "clusterName")
#: The outputs --drift reads: what the Grafana steps set.
DRIFT_NEEDED = ("grafanaEndpoint", "pyroscopeDatasource", "prometheusDatasource", "dashboardDefinition")
#: The step commands, by output (resource names as components/gpu_observability.py registers them; a test checks
#: them in the plan).
_COMPONENT = "aks-gpu-observability:index:GpuObservability$aks-gpu-observability:index:"
STEPS = {
    "pyroscopeDatasource": f"{_COMPONENT}GrafanaDatasources$command:local:Command::grafana-datasources-pyroscope",
    "prometheusDatasource": f"{_COMPONENT}GrafanaDatasources$command:local:Command::grafana-datasources-prometheus",
    "dashboardDefinition": f"{_COMPONENT}GpuDashboard$command:local:Command::gpu-dashboard-upload",
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    next_step: str = ""


def _check(name: str, probe: Callable[[], Check], failed_next: str) -> Check:
    """``probe()``, an az error turned into a failed check; AzNotInstalled (no ``az``) is raised on."""
    try:
        return probe()
    except AzNotInstalled:
        raise
    except AzError as error:
        return Check(name, False, error.last_line[:200], failed_next)


def checks(outputs: dict, kube_context: str = "", seen: Optional[dict] = None) -> list[Check]:
    """The checklist (module docstring); ``kube_context``: the kubectl context of the cluster for the gadget pods'
    events (default: the cluster's name, as ``az aks get-credentials`` names it); ``seen``, when given, keeps the
    extension's answer and the Pyroscope pods for :func:`ops.versions.collect`."""
    grafana = outputs["grafanaEndpoint"].rstrip("/")
    results: list[Check] = []
    seen = {} if seen is None else seen

    def extension() -> Check:
        try:
            state = (rest("get", f"{outputs['extensionId']}?api-version={EXTENSION_API}", audience=None) or {})
        except AzNotInstalled:
            raise
        except AzError as error:
            seen["extension"] = versions.Missing(error.last_line[:200])
            raise
        seen["extension"] = state
        status = (state.get("properties") or {}).get("provisioningState")
        return Check("Inspektor Gadget extension", status == "Succeeded", f"provisioningState {status}",
                     "see statuses[] in `az rest --method get --url <extensionId>?api-version=2023-05-01`; "
                     "docs/troubleshooting.md: the extension fails to install")

    results.append(_check("Inspektor Gadget extension", extension,
                          "check you can read the cluster's extensions (az login)"))

    def endpoint() -> Check:
        state = rest("get", f"{outputs['managedPrivateEndpointId']}?api-version={DASHBOARD_API}", audience=None) or {}
        props = state.get("properties") or {}
        status = (props.get("connectionState") or {}).get("status")
        ip = props.get("privateLinkServicePrivateIP") or ""
        expected = urlparse(outputs["pyroscopePrivateUrl"]).hostname
        ok = status == "Approved" and ip and ip == expected
        detail = (f"connection {status}, private IP {ip or 'none'}"
                  + ("" if ip == expected else f" (datasource uses {expected})"))
        return Check("managed private endpoint", bool(ok), detail,
                     "run `pulumi up` again (approval and refresh re-run); docs/troubleshooting.md: connection stuck "
                     "Pending")

    results.append(_check("managed private endpoint", endpoint, "check the endpoint still exists: `pulumi refresh`"))

    for label, uid_key in (("Pyroscope datasource", "pyroscopeDatasourceUid"),
                           ("Prometheus datasource", "prometheusDatasourceUid")):
        uid = outputs[uid_key]

        def health(uid: str = uid, label: str = label) -> Check:
            answer = rest("get", f"{grafana}/api/datasources/uid/{uid}/health") or {}
            ok = str(answer.get("status", "")).upper() == "OK"
            hint = ("Grafana cannot reach Pyroscope: check the managed private endpoint above and the Pyroscope pod "
                    "(kubectl -n gadget get pods)") if "Pyroscope" in label else (
                    "Grafana's identity needs Monitoring Data Reader on the workspace (assignMonitoringDataReader)")
            detail = f"health {answer.get('status')}: {answer.get('message', '')}".strip()
            return Check(f"{label} {uid}", ok, detail, hint)

        results.append(_check(f"{label} {uid}", health,
                              "run `pulumi up` (the datasource step recreates it); you need Grafana Admin"))

    dashboard_uid = urlparse(outputs["dashboardUrl"]).path.rstrip("/").split("/")[-1]

    stored: dict = {}  # the dashboard Grafana holds, for the profile-type check

    def dashboard() -> Check:
        held = grafana_dashboard.stored(grafana, dashboard_uid, lambda url: rest("get", url))
        if held is not None and held.schema:
            return Check(f"dashboard {dashboard_uid}", False,
                         f"stored in Grafana's {held.schema} schema (saved from the editor with dynamic dashboards)",
                         "`pulumi up --replace <URN of gpu-dashboard-upload>` (`pulumi stack --show-urns`) writes the "
                         "pinned dashboard back")
        stored.update(held.dashboard if held else {})
        title = stored.get("title")
        return Check(f"dashboard {dashboard_uid}", bool(title), f"title {title!r}",
                     "run `pulumi up` (the dashboard step uploads it)")

    results.append(_check(f"dashboard {dashboard_uid}", dashboard, "run `pulumi up` (the dashboard step uploads it)"))

    def profiles() -> Check:
        # What the flame graph Grafana holds asks for: with multiCluster another stack may have uploaded it last.
        pyroscope = outputs.get("pyroscopeDatasource") if isinstance(outputs.get("pyroscopeDatasource"), dict) else {}
        queries = grafana_dashboard.pyroscope_queries(stored, {outputs["pyroscopeDatasourceUid"],
                                                                pyroscope.get("name") or ""})
        in_grafana = sorted({str(q.get("profileTypeId")) for q in queries if grafana_dashboard.asks_gpu_memory(q)})
        configured = dashboard_profile_type(outputs)
        asked = in_grafana[0] if len(in_grafana) == 1 else configured
        other_stack = f" (set by another stack sharing it: this one sets {configured})" if asked != configured else ""
        answer = rest("get", profile_types_url(grafana, outputs["pyroscopeDatasourceUid"], 3600))
        types = [t.get("id", t) if isinstance(t, dict) else t for t in (answer or [])]
        found = f"{len(types)} profile type(s)" + (f": {', '.join(map(str, types[:4]))}" if types else "")
        if not types:
            return Check("Pyroscope profile types", False, found,
                         "no profiles yet: run a GPU workload, check the gadget pods (kubectl -n gadget get pods) and "
                         "that the extension's gpuObservability setting is true")
        if asked in map(str, types):
            return Check("Pyroscope profile types", True, found)
        try:
            gpu = pick_profile_type([str(t) for t in types], preferred=asked)
        except FrameError:
            gpu = None
        if gpu is None and not any(str(t).split(":")[1:3] == ["malloc", "bytes"] for t in types):
            return Check("Pyroscope profile types", False, found + "; no GPU memory (malloc:bytes)",
                         "no GPU-memory profiles yet: run a GPU workload and check that the extension's "
                         "gpuObservability setting is true")
        if other_stack and gpu == configured:
            return Check("Pyroscope profile types", False,
                         f"{found}; GPU memory as {gpu}, the dashboard asks {asked}{other_stack}",
                         "stacks sharing one dashboard whose clusters run Inspektor Gadget versions that store GPU "
                         "memory under different IDs cannot share its flame-graph query: pin the same extensionVersion "
                         f"on the clusters, or re-run this stack's dashboard step to point it back at {configured} "
                         "(the other stack's cluster then loses it): `pulumi up --replace <URN of "
                         "gpu-dashboard-upload>` (`pulumi stack --show-urns`)")
        held = gpu or ", ".join(str(t) for t in types if str(t).split(":")[1:3] == ["malloc", "bytes"])
        command = f"pulumi config set dashboardProfileType {gpu} && pulumi up" if gpu else (
            f"pulumi config set dashboardProfileType <one of {held}> && pulumi up")
        return Check("Pyroscope profile types", False,
                     f"{found}; GPU memory as {held}, the dashboard asks {asked}{other_stack}",
                     f"the dashboard's flame graph stays empty: `{command}` points it at the ID Pyroscope holds "
                     "(`python -m flamegraph.hotspots --stack` finds it by itself)")

    results.append(_check("Pyroscope profile types", profiles, "check the Pyroscope datasource above first"))

    found: dict = {}

    def pyroscope_disk() -> Check:
        found.update(verify_cluster.series(grafana, outputs["prometheusDatasourceUid"], outputs["clusterName"]))
        return Check("Pyroscope disk", *verify_cluster.disk(found))

    results.append(_check("Pyroscope disk", pyroscope_disk, "check the Prometheus datasource above first"))

    def gadget_pods() -> Check:
        if not found:  # the disk check's query failed: its error, again, rather than "no DaemonSet"
            found.update(verify_cluster.series(grafana, outputs["prometheusDatasourceUid"], outputs["clusterName"]))
        context = kube_context or outputs["clusterName"]
        return Check("gadget DaemonSet", *verify_cluster.daemonsets(
            found, lambda: verify_cluster.kubectl_events(context)))

    results.append(_check("gadget DaemonSet", gadget_pods, "check the Prometheus datasource above first"))

    def pyroscope_ingestion() -> Check:
        return Check("Pyroscope ingestion", *verify_cluster.ingestion(kube_context or outputs["clusterName"], seen))

    results.append(_check("Pyroscope ingestion", pyroscope_ingestion, "check the Pyroscope datasource above first"))
    return results


def signed_in() -> None:
    """``az account show``: AzError when az has no signed-in account (each check would then fail the same way)."""
    az("account", "show", "--output", "json")


def render(stack: str, results: list[Check], facts: Sequence[versions.Fact] = ()) -> str:
    lines = [f"Verify aks-gpu-observability (stack {stack})"] + (versions.render(list(facts)) if facts else [])
    for result in results:
        lines.append(f"  {'✅' if result.ok else '❌'} {result.name}: {result.detail}")
        if not result.ok and result.next_step:
            lines.append(f"     next: {result.next_step}")
    passed = sum(r.ok for r in results)
    lines.append(f"{passed} passed, {len(results) - passed} failed")
    return "\n".join(lines)


# --- drift ------------------------------------------------------------------------------------------------


class DriftError(ValueError):
    """The drift check cannot be made (one line): Grafana answered other than 200/404, or the dashboard's source
    is not what the stack uploaded."""


@dataclass
class Drift:
    """One Grafana object against what the stack set. ``state``: ``ok``, ``drifted`` or ``missing``; ``fields``:
    ``{"field", "grafana", "stack"}`` per difference (module docstring); ``next_step``: how to restore it."""

    kind: str
    uid: str
    state: str
    fields: list = field(default_factory=list)
    next_step: str = ""


def differences(live: Any, desired: Any, path: str = "") -> list[dict]:
    """Each field set in ``desired`` whose value in ``live`` differs, as ``{"field": dotted path, "grafana": live
    value or None when absent, "stack": desired value}``; objects are compared key by key (keys only in ``live``
    are ignored), anything else as a whole."""
    if isinstance(desired, dict) and isinstance(live, dict):
        found: list[dict] = []
        for key in sorted(desired):
            found += differences(live.get(key), desired[key], f"{path}.{key}" if path else key)
        return found
    return [] if live == desired else [{"field": path, "grafana": live, "stack": desired}]


def _get(url: str, what: str) -> Optional[dict]:
    """GET a Grafana API ``url``: its JSON, None on 404; DriftError on any other failure."""
    try:
        return rest("get", url) or {}
    except AzNotInstalled:
        raise
    except AzError as error:
        if error.kind == "not_found":
            return None
        raise DriftError(f"reading {what} from Grafana failed: {error.last_line[:200]}") from None


def _restore(stack: str, output: str) -> str:
    urn = f"urn:pulumi:{stack.split('/')[-1]}::aks-gpu-observability::{STEPS[output]}"
    return (f"`pulumi up --replace '{urn}'` writes it again (a plain `pulumi up` does not: the step's inputs did not "
            "change); or undo the edit in Grafana")


def datasource_drift(grafana: str, desired: dict, stack: str, output: str, server: grafana_server.Server) -> Drift:
    """The datasource ``desired`` (an output such as ``pyroscopeDatasource``) against Grafana's copy, its type as
    the step would write it in ``server``."""
    uid = desired["uid"]
    live = _get(f"{grafana}/api/datasources/uid/{quote(uid, safe='')}", f"datasource {uid}")
    if live is None:
        return Drift("datasource", uid, "missing", [], _restore(stack, output))
    found = differences(live, grafana_server.for_grafana(desired, server, live))
    return Drift("datasource", uid, "drifted" if found else "ok", found, _restore(stack, output) if found else "")


def _source_bytes(source: str) -> bytes:
    """The dashboard source as the step reads it: an https URL downloaded as served (``az rest
    --skip-authorization-header``), or a file relative to the project directory."""
    if not source.startswith("https://"):
        try:
            return (ROOT / source).read_bytes()
        except OSError as error:
            raise DriftError(f"cannot read the dashboard source {source}: {error.strerror}") from None
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        download(source, path)
        return Path(path).read_bytes()
    except AzNotInstalled:
        raise
    except AzError as error:
        raise DriftError(f"downloading the dashboard source {source} failed: {error.last_line[:200]}") from None
    finally:
        os.unlink(path)


def desired_dashboard(definition: dict, prometheus_type: str = grafana_server.PROMETHEUS) -> dict:
    """The dashboard as the upload step sends it to a Grafana whose Prometheus variables select ``prometheus_type``,
    rebuilt from ``dashboardDefinition``; DriftError when the source's sha256 is not the one the stack uploaded (then
    what the stack wants cannot be rebuilt)."""
    raw = _source_bytes(definition["source"])
    actual = hashlib.sha256(raw).hexdigest()
    if actual != definition["sha256"]:
        raise DriftError(f"dashboard {definition['uid']}: {definition['source']} has sha256 {actual}, the stack "
                         f"uploaded {definition['sha256']}; cannot rebuild what the stack wants")
    try:
        dashboard = json.loads(raw)
    except ValueError as error:
        raise DriftError(f"dashboard {definition['uid']}: {definition['source']} is not JSON: {error}") from None
    try:  # an export "for sharing": its __inputs imported as the upload step imports them
        dashboard = grafana_dashboard.import_inputs(dashboard, definition.get("inputs") or {}, definition["source"])
    except SystemExit:  # the step's one-line failure (an input it cannot map) was already printed
        raise DriftError(f"dashboard {definition['uid']}: {definition['source']} has __inputs the stack cannot "
                         "map") from None
    # profileType: the ID the step set in the dashboard's Pyroscope GPU-memory queries; absent in the definition of a
    # stack from before dashboardProfileType, whose step left the source's IDs as they were (prepare does too then).
    return grafana_dashboard.prepare(dashboard, definition.get("datasources") or {}, prometheus_type,
                                     definition.get("profileType"), definition.get("inputs") or {})


def _brief(value: Any) -> Any:
    """A top-level dashboard value short enough to print: scalars as they are, lists and objects as their size
    and a 12-hex sha256."""
    if isinstance(value, (list, dict)):
        digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]
        size = f"{len(value)} items" if isinstance(value, list) else f"{len(value)} keys"
        return f"<{size}, sha256 {digest}>"
    return value


def dashboard_drift(grafana: str, definition: dict, stack: str, server: grafana_server.Server) -> Drift:
    """The dashboard in Grafana against the upload rebuilt from ``definition`` (``dashboardDefinition``) for
    ``server``."""
    uid = definition["uid"]
    def get(url: str) -> Optional[dict]:
        try:
            return rest("get", url) or {}
        except AzError as error:
            if error.kind == "not_found":
                return None
            raise

    try:
        found = grafana_dashboard.stored(grafana, uid, get)
    except AzNotInstalled:
        raise
    except AzError as error:
        raise DriftError(f"reading dashboard {uid} from Grafana failed: {error.last_line[:200]}") from None
    if found is None:
        return Drift("dashboard", uid, "missing", [], _restore(stack, "dashboardDefinition"))
    if found.schema:
        return Drift("dashboard", uid, "drifted", [{"field": "schema", "grafana": found.schema, "stack": "v1"}],
                     _restore(stack, "dashboardDefinition"))
    desired = desired_dashboard(definition, grafana_server.dashboard_prometheus_type(server))
    live = found.dashboard
    live_hash, desired_hash = grafana_dashboard.content_sha256(live), grafana_dashboard.content_sha256(desired)
    if live_hash == desired_hash:
        return Drift("dashboard", uid, "ok")
    ours, theirs = grafana_dashboard.comparable(desired), grafana_dashboard.comparable(live)
    keys = sorted(key for key in set(ours) | set(theirs) if ours.get(key) != theirs.get(key))
    fields = [{"field": "content sha256", "grafana": live_hash, "stack": desired_hash}]
    fields += [{"field": key, "grafana": _brief(theirs.get(key)), "stack": _brief(ours.get(key))} for key in keys]
    return Drift("dashboard", uid, "drifted", fields, _restore(stack, "dashboardDefinition"))


def drift(outputs: dict, stack: str) -> list[Drift]:
    """Both datasources and the dashboard against the outputs (module docstring). Raises DriftError or
    AzNotInstalled when the check cannot be made."""
    grafana = outputs["grafanaEndpoint"].rstrip("/")
    for name in DRIFT_NEEDED[1:]:
        if not isinstance(outputs[name], dict) or not outputs[name].get("uid"):
            raise OutputsError(f"stack {stack}: output {name} is not an object with a uid")
    server = grafana_server_of(grafana)
    return [datasource_drift(grafana, outputs["pyroscopeDatasource"], stack, "pyroscopeDatasource", server),
            datasource_drift(grafana, outputs["prometheusDatasource"], stack, "prometheusDatasource", server),
            dashboard_drift(grafana, outputs["dashboardDefinition"], stack, server)]


def grafana_server_of(grafana: str) -> grafana_server.Server:
    """Which Grafana answers at ``grafana`` (``grafana_server.probe``, read as the steps read it); DriftError when it
    cannot be read."""
    health = _get(f"{grafana}/api/health", "Grafana's version (GET /api/health)") or {}
    listed = _get(f"{grafana}/api/plugins?type=datasource", "Grafana's datasource plugins (GET /api/plugins)") or []
    plugins = frozenset(item.get("id") for item in listed if isinstance(item, dict) and item.get("id"))
    azure = grafana_server.AZURE_PROMETHEUS
    # The list shows a plugin that is not core only to an Admin or a plugin writer (grafana/grafana pkg/api/plugins.go
    # @ 54ec4964, GetPluginList); the drift check's identity is a Viewer. A plugin's settings answer any user.
    if azure not in plugins and _get(f"{grafana}/api/plugins/{azure}/settings", f"plugin {azure}") is not None:
        plugins |= {azure}
    return grafana_server.Server(health.get("version") or None, plugins)


def render_drift(stack: str, found: list[Drift]) -> str:
    lines = [f"Drift check aks-gpu-observability (stack {stack}): Grafana against what the stack set"]
    for item in found:
        state = {"ok": "as the stack set it", "drifted": "drifted",
                 "missing": "missing (deleted in Grafana?)"}[item.state]
        lines.append(f"  {'✅' if item.state == 'ok' else '❌'} {item.kind} {item.uid}: {state}")
        for change in item.fields:
            lines.append(f"       {change['field']}: {json.dumps(change['grafana'])} in Grafana, "
                         f"{json.dumps(change['stack'])} set by the stack")
        if item.next_step:
            lines.append(f"     next: {item.next_step}")
    drifted = sum(item.state != "ok" for item in found)
    lines.append(f"{len(found) - drifted} in place, {drifted} drifted")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m ops.verify", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="the deployed stack")
    parser.add_argument("--outputs-file", metavar="FILE",
                        help="outputs saved with `pulumi stack output --json --show-secrets` (which were secret is "
                             "not known then)")
    parser.add_argument("--drift", action="store_true",
                        help="compare Grafana's datasources and dashboard with what the stack set; exit 1 on drift")
    parser.add_argument("--versions", action="store_true",
                        help="print only the version facts a support ticket quotes (the checklist starts with them)")
    parser.add_argument("--json", action="store_true", help="print the checks (or the drift, or the versions) as JSON")
    parser.add_argument("--kube-context", default="", metavar="NAME",
                        help="kubectl context of the cluster, for the gadget pods' events and Pyroscope's "
                             "discarded-samples counter (default: the cluster's name, as `az aks get-credentials` "
                             "names it)")
    outputs = StackOutputs({})  # what verify prints never holds a secret output's value: outputs.mask
    facts: list[versions.Fact] = []
    try:
        args = parser.parse_args(argv)
        if args.drift and args.versions:
            raise UsageError("--drift and --versions: expected one of them")
        outputs = read_outputs(args.stack, args.outputs_file, DRIFT_NEEDED if args.drift else NEEDED)
        seen: dict = {}
        if args.drift:
            found = drift(outputs, args.stack)
        elif not args.versions:
            signed_in()
            results = checks(outputs, args.kube_context, seen)
        if not args.drift:
            facts = versions.collect(outputs, args.stack, not args.outputs_file, args.kube_context, seen)
    except (UsageError, OutputsError, DriftError) as error:
        print(outputs.mask(f"error: {error}"), file=sys.stderr)
        return 2
    except AzNotInstalled as error:
        print(f"error: {error.last_line}", file=sys.stderr)
        return 2
    except AzError as error:  # not signed in: every check would fail alike, each with a wrong next step
        print(outputs.mask(f"error: az: {error.last_line} (sign in with `az login`, then run verify again)"),
              file=sys.stderr)
        return 2
    if args.drift:
        found = [Drift(**outputs.mask_json(asdict(item))) for item in found]
        drifted = any(item.state != "ok" for item in found)
        document = {"stack": args.stack, "drifted": drifted, "objects": [asdict(item) for item in found]}
        print(json.dumps(document, indent=2) if args.json else render_drift(args.stack, found))
        return 1 if drifted else 0
    facts = [versions.Fact(**outputs.mask_json(asdict(fact))) for fact in facts]
    if args.versions:
        document = {"stack": args.stack, "versions": [asdict(fact) for fact in facts]}
        print(json.dumps(document, indent=2) if args.json else "\n".join(
            [f"Versions of aks-gpu-observability (stack {args.stack})", *versions.render(facts)]))
        return 0
    results = [Check(**outputs.mask_json(asdict(result))) for result in results]
    print(json.dumps([asdict(r) for r in results], indent=2) if args.json else render(args.stack, results, facts))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(exit_code(main))
