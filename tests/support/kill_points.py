"""Killing the real Pulumi CLI while one step of a `pulumi up` or `pulumi destroy` is in flight, for the kill-point
tests (tests/e2e/test_kill_points.py) and the table docs/kill-points.md shows (:func:`table`).

A :class:`KillPoint` names the run (``up`` from empty; ``day-two``: a change of the private link Service's subnet that
replaces Grafana's endpoint and the steps after it, on a deployed stack; ``upgrade``: a chart bump that upgrades the
Helm release; ``destroy``), the resource (the last part of its URN), the engine's step (``op``, as the event log names
it: ``create``, ``update``, ``delete``, ``create-replacement``, ``delete-replaced``) and what shows the step took effect
in the world (``effect``), if anything. :func:`kill_during` runs the CLI with ``--event-log``, waits for that step's
``resourcePreEvent``, then for its effect (an azure-native create or delete is held by the stand-in once ARM did it,
``HOLD_ENV``: the worst case, Azure has it and the state only a pending operation), and kills the CLI and everything it
started with SIGKILL (tests/support/processes.py), as a vanished runner or a job past its time limit does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from tests.support import ROOT, processes, provider_hold
from tests.support.azure_provider import HOLD_DELETE_ENV, HOLD_ENV
from tests.support.command_provider import HOLD_ENV as COMMAND_HOLD_ENV

RUNS = ("up", "day-two", "upgrade", "destroy")
#: The command steps (command:local:Command), whose stand-in holds its answer once the command has run.
COMMAND_STEPS = ("grafana-private-link-wait-for-pls", "grafana-private-link-approve-connection",
                 "grafana-private-link-refresh", "grafana-datasources-pyroscope", "grafana-datasources-prometheus",
                 "gpu-dashboard-upload")
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
EXTENSION = "azure-native:kubernetesconfiguration:Extension"
ROLE = "azure-native:authorization:RoleAssignment"
#: ``KillPoint.hold`` of a Kubernetes object's step: the real kubernetes provider's answer held
#: (tests/support/provider_hold.py), as the stand-ins hold Azure's.
KUBERNETES = "kubernetes"

Effect = Callable[[object], bool]


def k8s(path: str) -> Effect:
    """The API server has the object at ``path`` (``/api/v1/...``)."""
    return lambda aks: aks.cp.get(path) is not None


def k8s_gone(path: str) -> Effect:
    """The API server no longer has the object at ``path``."""
    return lambda aks: aks.cp.get(path) is None


def world(check: Callable[[dict], bool]) -> Effect:
    return lambda aks: check(aks.world())


def helm_revision(status: str) -> Effect:
    """Helm has written a revision of ``pyroscope`` in ``status`` (its release Secret's ``status`` label)."""
    def effect(aks) -> bool:
        found = aks.cp.get("/api/v1/namespaces/gadget/secrets?labelSelector=owner%3Dhelm,name%3Dpyroscope") or {}
        return any(item["metadata"]["labels"].get("status") == status for item in found.get("items", []))
    return effect


NAMESPACE = "/api/v1/namespaces/gadget"
CLAIM = "/api/v1/namespaces/gadget/persistentvolumeclaims/data-pyroscope-0"
SERVICE = "/api/v1/namespaces/gadget/services/pyroscope-private-link"
POLICY = "/apis/networking.k8s.io/v1/namespaces/gadget/networkpolicies/pyroscope"
NAT_POLICY = "/apis/networking.k8s.io/v1/namespaces/gadget/networkpolicies/pyroscope-grafana-nat"
#: The API path of each Kubernetes object a kill point creates: the object the kill left must be the one kept.
OBJECTS = {"gadget-namespace": NAMESPACE, "pyroscope-data-0": CLAIM, "pyroscope-network-policy": POLICY,
           "pyroscope-private-link": SERVICE}


def _connection(status: str) -> Effect:
    return world(lambda w: any(c["status"] == status for p in w["pls"].values() for c in p["connections"]))


def _datasource(name: str, present: bool = True) -> Effect:
    return world(lambda w: any((name in g.get("datasources", {})) == present for g in w["grafana"].values()))


def _dashboard(present: bool = True) -> Effect:
    return world(lambda w: any(bool(g.get("dashboards")) == present for g in w["grafana"].values()))


def _arm(type_: str, present: bool = True) -> Effect:
    return world(lambda w: any(k.startswith(type_ + " ") for k in w["arm"]) == present)


@dataclass(frozen=True)
class KillPoint:
    name: str
    run: str
    resource: str
    op: str
    effect: Optional[Effect] = None
    #: An azure-native type whose create (or, in a destroy, delete) the stand-in holds once ARM did it, or
    #: KUBERNETES: the kubernetes provider's answer to the step held once the API server did it.
    hold: str = ""

    @property
    def id(self) -> str:
        return f"{self.run}-{self.name}"

    @property
    def pending(self) -> str:
        """The pending operation the kill leaves in the state for the resource."""
        return {"create": "creating", "create-replacement": "creating", "update": "updating"}.get(self.op, "deleting")

    def recovery(self) -> list[str]:
        """What ``python -m ops.recover --stack dev --run`` runs for this kill (after removing an empty state-file
        companion, when the kill left one), then the command run again."""
        steps = ["pulumi cancel"]
        if self.name == "helm-install":
            steps.append("helm uninstall pyroscope")
        elif self.name == "helm-upgrade":
            steps.append("helm rollback pyroscope")
        if self.op == "create-replacement" and self.hold:
            steps.append(f"pulumi stack import (takes {self.resource} as Azure has it)")
        elif self.pending == "creating" and self.hold == KUBERNETES:
            steps.append(f"pulumi stack import (takes {self.resource} as the cluster has it)")
        elif self.pending == "creating" and self.hold:
            steps.append(f"pulumi import --file (imports {self.resource})")
        if self.pending == "creating":
            steps.append("pulumi refresh --clear-pending-creates")
        return steps + ["pulumi destroy" if self.run == "destroy" else "pulumi up"]


KILL_POINTS: tuple[KillPoint, ...] = (
    KillPoint("namespace", "up", "gadget-namespace", "create", k8s(NAMESPACE), hold=KUBERNETES),
    KillPoint("claim", "up", "pyroscope-data-0", "create", k8s(CLAIM), hold=KUBERNETES),
    KillPoint("extension", "up", "inspektor-gadget-extension", "create", _arm(EXTENSION), hold=EXTENSION),
    KillPoint("network-policy", "up", "pyroscope-network-policy", "create", k8s(POLICY), hold=KUBERNETES),
    KillPoint("helm-install", "up", "pyroscope-release", "create", helm_revision("pending-install")),
    KillPoint("private-link-service", "up", "pyroscope-private-link", "create", k8s(SERVICE),
              hold=KUBERNETES),
    KillPoint("pls-wait", "up", "grafana-private-link-wait-for-pls", "create", world(lambda w: bool(w["pls"]))),
    KillPoint("endpoint", "up", "grafana-private-link-mpe", "create", world(lambda w: bool(w["mpes"])), hold=MPE),
    KillPoint("approval", "up", "grafana-private-link-approve-connection", "create", _connection("Approved")),
    KillPoint("refresh", "up", "grafana-private-link-refresh", "create",
              world(lambda w: any(m.get("ip") for m in w["mpes"].values()))),
    KillPoint("datasource-pyroscope", "up", "grafana-datasources-pyroscope", "create",
              _datasource("local-pyroscope")),
    KillPoint("datasource-prometheus", "up", "grafana-datasources-prometheus", "create",
              _datasource("azure-monitor-prometheus")),
    KillPoint("role-assignment", "up", "grafana-datasources-monitoring-data-reader", "create", _arm(ROLE), hold=ROLE),
    KillPoint("dashboard", "up", "gpu-dashboard-upload", "create", _dashboard()),
    KillPoint("helm-upgrade", "upgrade", "pyroscope-release", "update", helm_revision("pending-upgrade")),
    KillPoint("endpoint-delete", "day-two", "grafana-private-link-mpe", "delete-replaced",
              world(lambda w: not w["mpes"]), hold=MPE),
    KillPoint("endpoint-create", "day-two", "grafana-private-link-mpe", "create-replacement",
              world(lambda w: bool(w["mpes"])), hold=MPE),
    KillPoint("approval-replace", "day-two", "grafana-private-link-approve-connection", "create-replacement",
              _connection("Approved")),
    KillPoint("refresh-replace", "day-two", "grafana-private-link-refresh", "create-replacement",
              world(lambda w: any(m.get("ip") for m in w["mpes"].values()))),
    KillPoint("dashboard", "destroy", "gpu-dashboard-upload", "delete", _dashboard(False)),
    KillPoint("datasource-pyroscope", "destroy", "grafana-datasources-pyroscope", "delete",
              _datasource("local-pyroscope", False)),
    KillPoint("role-assignment", "destroy", "grafana-datasources-monitoring-data-reader", "delete", _arm(ROLE, False),
              hold=ROLE),
    KillPoint("endpoint", "destroy", "grafana-private-link-mpe", "delete", world(lambda w: not w["mpes"]), hold=MPE),
    KillPoint("private-link-service", "destroy", "pyroscope-private-link", "delete", k8s_gone(SERVICE),
              hold=KUBERNETES),
    KillPoint("helm-uninstall", "destroy", "pyroscope-release", "delete", helm_revision("uninstalling")),
    KillPoint("extension", "destroy", "inspektor-gadget-extension", "delete", _arm(EXTENSION, False), hold=EXTENSION),
    KillPoint("namespace", "destroy", "gadget-namespace", "delete", k8s_gone(NAMESPACE), hold=KUBERNETES),
)


RUN_TEXT = {"up": "`up` from empty", "day-two": "`up` renaming the PLS", "upgrade": "`up` upgrading the chart",
            "destroy": "`destroy`"}


#: A line of :meth:`KillPoint.recovery` (its start) -> its name in the table, which docs/kill-points.md's list explains.
RECOVERY_TEXT = {"pulumi stack import": "stack import", "pulumi import --file": "import",
                 "helm uninstall pyroscope": "helm uninstall", "helm rollback pyroscope": "helm rollback",
                 "pulumi refresh --clear-pending-creates": "clear pending creates"}


def table() -> str:
    """The kill-point table of docs/kill-points.md: the run, the step in flight and what ops.recover runs between the
    ``pulumi cancel`` every recovery starts with and the killed command run again."""
    rows = ["| Run killed | Step in flight | ops.recover runs (after `pulumi cancel`) |", "|---|---|---|"]
    for point in KILL_POINTS:
        steps = point.recovery()
        assert steps[0] == "pulumi cancel" and steps[-1] == f"pulumi {'destroy' if point.run == 'destroy' else 'up'}"
        middle = [RECOVERY_TEXT[step.split(" (", 1)[0]] for step in steps[1:-1]]
        rows.append(f"| {RUN_TEXT[point.run]} | {point.op} of `{point.resource}` |"
                    f" {', '.join(middle) or 'nothing more'} |")
    return "\n".join(rows) + "\n"


@dataclass
class Killed:
    """What the kill left: whether the step's effect was seen before it, and the state's pending operations."""
    point: KillPoint
    effect_seen: bool
    seconds: float


def _events(path: Path, offset: int) -> tuple[list[dict], int]:
    """The complete JSON lines of the event log from ``offset`` on, and the offset after them."""
    if not path.exists():
        return [], offset
    data = path.read_bytes()[offset:]
    end = data.rfind(b"\n") + 1
    lines = [json.loads(line) for line in data[:end].splitlines() if line.strip()]
    return lines, offset + end


def kill_during(ws, aks, stack: str, argv: list[str], point: KillPoint, timeout: float = 600) -> Killed:
    """Run ``pulumi ARGV`` and SIGKILL it (and all it started) while ``point``'s step is in flight."""
    events = ws.folder / f"events-{point.id}.jsonl"
    events.unlink(missing_ok=True)
    env = dict(ws.env)
    if point.hold == KUBERNETES:
        real = shutil.which("pulumi-resource-kubernetes", path=env["PATH"])
        held = ws.folder / "held-bin"
        env.update(provider_hold.install(held, "kubernetes", real, point.op.split("-")[0].capitalize(),
                                         point.resource))
        env["PATH"] = os.pathsep.join([str(held), env["PATH"]])
    elif point.hold:
        env[HOLD_DELETE_ENV if point.run == "destroy" or point.op == "delete-replaced" else HOLD_ENV] = point.hold
    elif point.resource in COMMAND_STEPS and ws.command_plugin == "stand-in":
        env[COMMAND_HOLD_ENV] = point.resource  # the real plugin cannot be held: the kill then races the step's end
    started = time.monotonic()
    cli = processes.popen(["pulumi", *argv, "--event-log", str(events), "--non-interactive", "--stack", stack],
                          cwd=ws.project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        offset, pre = 0, False
        while not pre:
            if cli.poll() is not None:
                raise AssertionError(f"{point.id}: `pulumi {argv[0]}` ended ({cli.returncode}) before the "
                                     f"{point.op} of {point.resource} began")
            if time.monotonic() - started > timeout:
                raise AssertionError(f"{point.id}: the {point.op} of {point.resource} never began")
            lines, offset = _events(events, offset)
            pre = any((e.get("resourcePreEvent") or {}).get("metadata", {}).get("op") == point.op
                      and e["resourcePreEvent"]["metadata"]["urn"].endswith("::" + point.resource) for e in lines)
            time.sleep(0.05)
        seen = point.effect is None
        deadline = time.monotonic() + 120
        while not seen and time.monotonic() < deadline and cli.poll() is None:
            seen = point.effect(aks)
            if not seen:
                time.sleep(0.05)
        if point.effect is None:
            time.sleep(0.3)  # the step's command has started: kill it mid-way
        assert cli.poll() is None, f"{point.id}: `pulumi {argv[0]}` ended before it could be killed"
    finally:
        cli.kill()
        cli.wait()
    return Killed(point, seen, time.monotonic() - started)


def recover(ws, aks, stack: str = "dev") -> str:
    """``python -m ops.recover --stack STACK --run`` as a user runs it: the stack's folder, its backend, az logged in,
    kubectl's and Helm's kubeconfig pointing at the cluster."""
    helm = os.environ.get("HELM_BIN", "")
    env = {**ws.env, "PYTHONPATH": str(ROOT), "KUBECONFIG": str(aks.cp.kubeconfig),
           "PATH": os.pathsep.join(filter(None, [str(Path(helm).parent) if helm else "", ws.env["PATH"]]))}
    done = processes.run([sys.executable, "-m", "ops.recover", "--stack", stack, "--run"], cwd=ws.project, env=env,
                         capture_output=True, text=True, timeout=900)
    with ws.log.open("a") as log:
        log.write(f"$ python -m ops.recover --stack {stack} --run\n{done.stdout}\n{done.stderr}\n")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def pending_operations(ws, stack: str = "dev") -> list[tuple[str, str]]:
    """(resource name, operation) of the state's pending operations, read from the backend's file as the kill left
    it (``pulumi stack export`` may not read it before ops.recover repairs it)."""
    deployment = json.loads((ws.folder / "state" / ".pulumi" / "stacks" / "aks-gpu-observability" /
                             f"{stack}.json").read_text())["checkpoint"].get("latest") or {}
    return [(op["resource"]["urn"].rsplit("::", 1)[-1], op["type"])
            for op in deployment.get("pending_operations") or []]


if __name__ == "__main__":
    print(table(), end="")
