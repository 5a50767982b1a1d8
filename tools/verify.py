"""Verify a deployed stack: ``python -m tools.verify --stack NAME [--outputs-file FILE] [--json]``.

For after a real ``pulumi up``. Reads the stack's outputs (``pulumi stack output --json --stack NAME``, or a
file saved from it) and checks, through ``az`` only (``az rest``, as the step scripts do):

1. the Inspektor Gadget extension is Succeeded (ARM ``GET {extensionId}``, API 2023-05-01);
2. Grafana's managed private endpoint is Approved and has the private IP the Pyroscope URL uses (ARM
   ``GET {managedPrivateEndpointId}``, API 2024-10-01);
3. both datasources pass Grafana's health check (``GET /api/datasources/uid/{uid}/health``);
4. the dashboard exists (``GET /api/dashboards/uid/{uid}``);
5. Pyroscope reports at least one profile type, through the datasource
   (``GET /api/datasources/uid/{uid}/resources/profileTypes``).

Prints a checklist with the next step for each failure; exit status 0 when every check passes, 1 when one
fails, 2 when the outputs cannot be read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from azcli import AzError, AzNotInstalled, rest  # noqa: E402  (the step scripts' own az helpers)

EXTENSION_API = "2023-05-01"
DASHBOARD_API = "2024-10-01"
NEEDED = ("extensionId", "managedPrivateEndpointId", "pyroscopePrivateUrl", "grafanaEndpoint",
          "pyroscopeDatasourceUid", "prometheusDatasourceUid", "dashboardUrl")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    next_step: str = ""


class OutputsError(ValueError):
    """The stack's outputs could not be read or lack what verify needs (one line)."""


def read_outputs(stack: str, outputs_file: Optional[str], needed: Sequence[str] = NEEDED) -> dict:
    """The stack's outputs (``pulumi stack output --json --stack``, or the file); OutputsError if they cannot
    be read or lack one of ``needed``."""
    if outputs_file:
        try:
            outputs = json.loads(Path(outputs_file).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise OutputsError(f"--outputs-file: cannot read {outputs_file}: {error}") from None
    else:
        try:
            done = subprocess.run(["pulumi", "stack", "output", "--json", "--stack", stack],
                                  capture_output=True, text=True)
        except FileNotFoundError:
            raise OutputsError("the Pulumi CLI is not on PATH; install it, or pass --outputs-file") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise OutputsError(f"pulumi stack output --stack {stack} failed: {last}")
        outputs = json.loads(done.stdout)
    missing = [name for name in needed if not outputs.get(name)]
    if missing:
        raise OutputsError(f"stack {stack} has no output {missing[0]}; was `pulumi up` completed with this version?")
    return outputs


def _check(name: str, probe: Callable[[], Check], failed_next: str) -> Check:
    """``probe()``, an az error turned into a failed check; AzNotInstalled (no ``az``) is raised on."""
    try:
        return probe()
    except AzNotInstalled:
        raise
    except AzError as error:
        return Check(name, False, error.last_line[:200], failed_next)


def checks(outputs: dict) -> list[Check]:
    grafana = outputs["grafanaEndpoint"].rstrip("/")
    results: list[Check] = []

    def extension() -> Check:
        state = (rest("get", f"{outputs['extensionId']}?api-version={EXTENSION_API}", audience=None) or {})
        status = (state.get("properties") or {}).get("provisioningState")
        return Check("Inspektor Gadget extension", status == "Succeeded", f"provisioningState {status}",
                     "see statuses[] in `az rest --method get --url <extensionId>?api-version=2023-05-01`; "
                     "README troubleshooting: the extension fails to install")

    results.append(_check("Inspektor Gadget extension", extension, "check you can read the cluster's extensions (az login)"))

    def endpoint() -> Check:
        state = rest("get", f"{outputs['managedPrivateEndpointId']}?api-version={DASHBOARD_API}", audience=None) or {}
        props = state.get("properties") or {}
        status = (props.get("connectionState") or {}).get("status")
        ip = props.get("privateLinkServicePrivateIP") or ""
        expected = urlparse(outputs["pyroscopePrivateUrl"]).hostname
        ok = status == "Approved" and ip and ip == expected
        detail = f"connection {status}, private IP {ip or 'none'}" + ("" if ip == expected else f" (datasource uses {expected})")
        return Check("managed private endpoint", bool(ok), detail,
                     "run `pulumi up` again (approval and refresh re-run); README troubleshooting: connection stuck Pending")

    results.append(_check("managed private endpoint", endpoint, "check the endpoint still exists: `pulumi refresh`"))

    for label, uid_key in (("Pyroscope datasource", "pyroscopeDatasourceUid"), ("Prometheus datasource", "prometheusDatasourceUid")):
        uid = outputs[uid_key]

        def health(uid: str = uid, label: str = label) -> Check:
            answer = rest("get", f"{grafana}/api/datasources/uid/{uid}/health") or {}
            ok = str(answer.get("status", "")).upper() == "OK"
            hint = ("Grafana cannot reach Pyroscope: check the managed private endpoint above and the Pyroscope pod "
                    "(kubectl -n gadget get pods)") if "Pyroscope" in label else (
                    "Grafana's identity needs Monitoring Data Reader on the workspace (assignMonitoringDataReader)")
            return Check(f"{label} {uid}", ok, f"health {answer.get('status')}: {answer.get('message', '')}".strip(), hint)

        results.append(_check(f"{label} {uid}", health, "run `pulumi up` (the datasource step recreates it); you need Grafana Admin"))

    dashboard_uid = urlparse(outputs["dashboardUrl"]).path.rstrip("/").split("/")[-1]

    def dashboard() -> Check:
        answer = rest("get", f"{grafana}/api/dashboards/uid/{dashboard_uid}") or {}
        title = (answer.get("dashboard") or {}).get("title")
        return Check(f"dashboard {dashboard_uid}", bool(title), f"title {title!r}", "run `pulumi up` (the dashboard step uploads it)")

    results.append(_check(f"dashboard {dashboard_uid}", dashboard, "run `pulumi up` (the dashboard step uploads it)"))

    def profiles() -> Check:
        answer = rest("get", f"{grafana}/api/datasources/uid/{outputs['pyroscopeDatasourceUid']}/resources/profileTypes")
        types = [t.get("id", t) if isinstance(t, dict) else t for t in (answer or [])]
        return Check("Pyroscope profile types", bool(types), f"{len(types)} profile type(s)" + (f": {', '.join(map(str, types[:4]))}" if types else ""),
                     "no profiles yet: run a GPU workload, check the gadget pods (kubectl -n gadget get pods) and that the "
                     "extension's gpuObservability setting is true")

    results.append(_check("Pyroscope profile types", profiles, "check the Pyroscope datasource above first"))
    return results


def render(stack: str, results: list[Check]) -> str:
    lines = [f"Verify aks-gpu-observability (stack {stack})"]
    for result in results:
        lines.append(f"  {'✅' if result.ok else '❌'} {result.name}: {result.detail}")
        if not result.ok and result.next_step:
            lines.append(f"     next: {result.next_step}")
    passed = sum(r.ok for r in results)
    lines.append(f"{passed} passed, {len(results) - passed} failed")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.verify", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="the deployed stack")
    parser.add_argument("--outputs-file", metavar="FILE", help="outputs saved with `pulumi stack output --json`")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    args = parser.parse_args(argv)
    try:
        outputs = read_outputs(args.stack, args.outputs_file)
    except OutputsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    results = checks(outputs)
    print(json.dumps([asdict(r) for r in results], indent=2) if args.json else render(args.stack, results))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
