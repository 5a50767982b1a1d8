"""The version facts a support ticket quotes, for ``python -m ops.verify`` (its checklist, or ``--versions`` alone).

:func:`collect` returns one :class:`Fact` per part (name, value or "" when unknown, where it comes from or why it is
unknown): the Pulumi CLI of the stack's last update and the provider plugins its providers ran (the state, ``pulumi
stack export``, read only when the outputs come from the CLI too), the ``pulumi`` SDK (where verify runs: the state
does not record it), the Inspektor Gadget extension Azure installed and its release train (ARM), the Pyroscope chart
(the state's Helm release) and image (the running pods, else the release's values), and Grafana's version (``GET
/api/health``). It reuses the extension answer and the pod list the checks already read (``seen``). A fact that cannot
be read is unknown with its reason, never an error: only a missing ``az`` (AzNotInstalled) is raised. Nothing secret
is returned: a value the state holds encrypted is said to be secret. Why these sources:
docs/decisions/version-facts.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

from ops import verify_cluster
from steps.azcli import AzError, AzNotInstalled, rest

ROOT = Path(__file__).resolve().parent.parent
EXTENSION_API = "2023-05-01"
#: The key under which a state file marks an encrypted value (pulumi/pulumi sdk/go/common/resource/sig).
SECRET_SIG = "4dabf18193072939515e22adb298388d"
RELEASE = "kubernetes:helm.sh/v3:Release"
PROVIDER_TYPE = "pulumi:providers:"
KUBE_CONTEXT_HINT = "verify reads the context named --kube-context"


@dataclass
class Fact:
    name: str
    value: str
    source: str


@dataclass
class Missing:
    """A read that did not answer, and why."""

    why: str


def _secret(value: Any) -> bool:
    return isinstance(value, dict) and SECRET_SIG in value


def read_state(stack: str) -> Any:
    """The deployment ``pulumi stack export --stack`` prints (no ``--show-secrets``: secrets stay ciphertext), or
    Missing."""
    try:
        done = subprocess.run(["pulumi", "stack", "export", "--stack", stack], capture_output=True, text=True,
                              timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Missing(f"pulumi stack export did not run ({error})")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return Missing(f"pulumi stack export --stack {stack} failed: {last}")
    try:
        deployment = json.loads(done.stdout).get("deployment")
    except (ValueError, AttributeError):
        deployment = None
    return deployment if isinstance(deployment, dict) else Missing("pulumi stack export printed no deployment")


def sdk() -> Fact:
    """The ``pulumi`` package of the Python running verify."""
    try:
        version = metadata.version("pulumi")
    except metadata.PackageNotFoundError:
        return Fact("pulumi SDK", "", f"not installed in {sys.prefix}")
    venv = Path(sys.prefix).resolve() == (ROOT / ".venv").resolve()
    where = ("this project's .venv, which Pulumi.yaml runs the program with" if venv
             else f"the Python running verify, {sys.prefix}, not this project's .venv")
    return Fact("pulumi SDK", version, f"{where}; the state does not record it")


def from_state(state: Any) -> list[Fact]:
    """The CLI of the last update, the providers' plugin versions, the Pyroscope release's chart."""
    if isinstance(state, Missing):
        return [Fact(name, "", state.why) for name in ("Pulumi CLI", "provider plugins", "Pyroscope chart")]
    resources = [r for r in state.get("resources") or [] if isinstance(r, dict)]
    cli = str((state.get("manifest") or {}).get("version") or "")
    facts = [Fact("Pulumi CLI", cli, "the stack's last update, pulumi stack export" if cli
                  else "the state's manifest names none")]
    plugins: dict[str, set] = {}
    for resource in resources:
        kind = str(resource.get("type") or "")
        version = (resource.get("inputs") or {}).get("version")
        if kind.startswith(PROVIDER_TYPE) and isinstance(version, str):
            plugins.setdefault(kind[len(PROVIDER_TYPE):], set()).add(version)
    listed = ", ".join(f"{name} {' and '.join(sorted(versions))}" for name, versions in sorted(plugins.items()))
    facts.append(Fact("provider plugins", listed, "the state's providers" if listed else "the state has no provider"))
    release = _release(resources)
    status = ((release or {}).get("outputs") or {}).get("status")
    if not release:
        facts.append(Fact("Pyroscope chart", "", "the state has no Helm release pyroscope-release"))
    elif _secret(status) or not isinstance(status, dict):
        facts.append(Fact("Pyroscope chart", "", "the state's Helm release status is secret or missing"))
    else:
        source = (release.get("inputs") or {}).get("chart")
        value = f"{status.get('chart')} {status.get('version')}, app version {status.get('appVersion')}"
        if isinstance(source, str):
            value += f", from {source}"
        facts.append(Fact("Pyroscope chart", value, "the state's Helm release"))
    return facts


def _release(resources: list) -> Optional[dict]:
    return next((r for r in resources if r.get("type") == RELEASE
                 and str(r.get("urn", "")).endswith("::pyroscope-release")), None)


def _configured_image(state: Any) -> Fact:
    """The image the state's Helm release values set (repository:tag), for when the pods cannot be read."""
    if isinstance(state, Missing):
        return Fact("Pyroscope image", "", state.why)
    release = _release([r for r in state.get("resources") or [] if isinstance(r, dict)]) or {}
    values = (release.get("inputs") or {}).get("values")
    if _secret(values):
        return Fact("Pyroscope image", "", "the state's Helm release values are secret")
    image = ((values or {}).get("pyroscope") or {}).get("image") if isinstance(values, dict) else None
    if not isinstance(image, dict) or _secret(image) or not image.get("repository"):
        return Fact("Pyroscope image", "", "the state's Helm release sets no image: the chart's appVersion")
    return Fact("Pyroscope image", f"{image['repository']}:{image.get('tag') or ''}".rstrip(":"),
                "the state's Helm release values")


def from_pods(pods: Any, state: Any) -> Fact:
    """The Pyroscope containers' images (and digests) the pods run; else what the release set, said not seen."""
    if isinstance(pods, Missing) or not pods:
        why = pods.why if isinstance(pods, Missing) else "no Pyroscope pod in namespace gadget"
        configured = _configured_image(state)
        if configured.value:
            return Fact(configured.name, configured.value, f"{configured.source}; not seen running: {why}")
        return Fact(configured.name, "", why if isinstance(state, Missing) else f"{why}; {configured.source}")
    running: dict[str, list] = {}
    for pod in pods:
        statuses = {s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses") or []}
        for container in (pod.get("spec") or {}).get("containers") or []:
            if container.get("name") != "pyroscope":
                continue
            status = statuses.get("pyroscope") or {}
            image = status.get("image") or container.get("image") or ""
            digest = str(status.get("imageID") or "").partition("@")[2]
            running.setdefault(f"{image}, {digest}" if digest else image, []).append(pod["metadata"]["name"])
    if not running:
        return Fact("Pyroscope image", "", "no container pyroscope in the Pyroscope pods")
    value = "; ".join(sorted(running))
    return Fact("Pyroscope image", value, "running in " + ", ".join(sorted(n for ns in running.values() for n in ns)))


def from_extension(answer: Any) -> Fact:
    """ARM's extension: the installed version (``currentVersion``, else the pinned ``version``), its train."""
    if isinstance(answer, Missing):
        return Fact("Inspektor Gadget extension", "", answer.why)
    props = (answer or {}).get("properties") or {}
    version = props.get("currentVersion") or props.get("version")
    if not version:
        return Fact("Inspektor Gadget extension", "", "ARM reports no version yet")
    value = f"{version}, release train {props.get('releaseTrain') or 'not set'}, " + (
        "minor versions auto-upgraded" if props.get("autoUpgradeMinorVersion") else "pinned")
    return Fact("Inspektor Gadget extension", value, "ARM: installed" if props.get("currentVersion")
                else "ARM: pinned, installed version not reported")


def from_grafana(health: Any) -> Fact:
    if isinstance(health, Missing):
        return Fact("Grafana", "", health.why)
    version = (health or {}).get("version")
    return Fact("Grafana", str(version), "GET /api/health") if version else Fact(
        "Grafana", "", "its /api/health hides the version")


def _read(call) -> Any:
    """``call()``, an az error turned into Missing with its line; a missing az raised on."""
    try:
        return call()
    except AzNotInstalled:
        raise
    except AzError as error:
        return Missing(error.last_line[:200])


def collect(outputs: dict, stack: str, from_cli: bool, kube_context: str = "",
            seen: Optional[dict] = None) -> list[Fact]:
    """The facts (module docstring). ``from_cli``: the outputs came from ``pulumi stack output`` (so the state is
    read too); ``seen``: what the checks read already (``extension``: ARM's answer or Missing; ``pods``:
    :func:`ops.verify_cluster.pyroscope_pods`' answer)."""
    seen = seen or {}
    state = read_state(stack) if from_cli else Missing(
        "--outputs-file: the state is not read; without it verify reads `pulumi stack export`")
    extension = seen.get("extension")
    if extension is None:
        extension = _read(lambda: rest("get", f"{outputs['extensionId']}?api-version={EXTENSION_API}", audience=None))
    listed, why = seen.get("pods") or verify_cluster.pyroscope_pods(kube_context or outputs["clusterName"])
    pods = listed if listed is not None else Missing(f"{why}; {KUBE_CONTEXT_HINT}")
    health = _read(lambda: rest("get", f"{outputs['grafanaEndpoint'].rstrip('/')}/api/health"))
    cli, plugins, chart = from_state(state)
    return [cli, sdk(), plugins, from_extension(extension), chart, from_pods(pods, state), from_grafana(health)]


def render(facts: list[Fact], indent: str = "  ") -> list[str]:
    lines = [f"{indent}Versions, to quote in a support ticket:"]
    lines += [f"{indent}  {fact.name}: {fact.value or 'unknown'} ({fact.source})" for fact in facts]
    return lines
