"""Deploy-time simulation: this stack vs the published procedure vs a Terraform port, against the physical limit.

    python -m bench.deploy_sim [--stack dev] [--set KEY=VALUE]... [--json]

SIMULATED throughout: no Azure here. Every operation takes the time in ``bench/latencies.yaml`` (fixed before
comparing, the same table for all); what differs is only the order of the steps and how each procedure waits: this
stack (the offline plan's dependency graph, the waits polling as ``steps/lib.sh`` does), the seed (the published
procedure, command by command), a Terraform port (fixed ``time_sleep``s) and the physical limit (the unavoidable
chain Helm release -> the private link Service's load balancer -> PLS -> MPE -> approval -> refresh -> Pyroscope
datasource, nothing polled). This stack's private link Service is its own, after the release (components/pyroscope.py):
its load balancer's frontend comes after the pods, where the chart's own LoadBalancer Service of the seed and of the
Terraform port (which has neither that Service nor the claims) gets it during the release. Also the request rate
against Azure Resource Manager's documented limits for 50 stacks in one subscription.
Targets: ``seed/ours >= 1.3``, ``terraform/ours >= 1.6``, ``ours/physical <= 1.05``, and each wait on the critical
path notices its event within one poll interval (plus one check, <= 10 s). Output: a text report, or ``--json``.
The model of each procedure and the sources: docs/decisions/benchmarks.md ("Deploy time").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import yaml

from offline.program import Plan, run

TABLE = Path(__file__).resolve().parent / "latencies.yaml"
LIB_SH = Path(__file__).resolve().parent.parent / "steps" / "lib.sh"

#: The published procedure's fixed waits (gpu-profiling.md, commit above): the PLS poll's ``sleep 10`` and the
#: ``sleep 30`` after ``az grafana $MPE create``.
SEED_POLL_SLEEP = 10.0
SEED_SLEEP_AFTER_MPE = 30.0
#: The Terraform port's ``time_sleep`` (after the Helm release, after the approval).
TERRAFORM_SLEEP = 180.0
TARGETS = {"seed/ours": (">=", 1.3), "terraform/ours": (">=", 1.6), "ours/physical": ("<=", 1.05)}
#: A wait notices its event within this many seconds.
NOTICE_BOUND = 10.0
#: ARM's documented limits (module docstring): subscription reads per principal, and the Network RP's reads.
READ_BUCKET, READ_REFILL_PER_SECOND, GLOBAL_FACTOR = 250, 25.0, 15
NETWORK_READS_PER_5_MIN = 10_000
FLEET = 50

EXTENSION = "azure-native:kubernetesconfiguration:Extension"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
SERVICE = "kubernetes:core/v1:Service"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
COMMAND = "command:local:Command"
WORKSPACE_TYPES = ("azure-native:dashboard:Grafana", "azure-native:monitor:AzureMonitorWorkspace")
STEP_KINDS = ("wait_private_link_service", "approve_private_endpoint_connection", "refresh_managed_private_endpoints",
              "grafana_datasource", "grafana_dashboard")


class Table:
    """bench/latencies.yaml: ``resource(type)`` and ``events[name]`` in seconds, each times ``scale`` but for an entry
    marked ``scaled: false`` (a constant of the engine's side: pulumi-kubernetes' Service settle)."""

    def __init__(self, path: Path = TABLE, scale: float = 1.0) -> None:
        data = yaml.safe_load(path.read_text())

        def seconds(entry: dict) -> float:
            return float(entry["seconds"]) * (scale if entry.get("scaled", True) else 1.0)

        self.scale = scale
        self.resources = {k: seconds(v) for k, v in data["resources"].items()}
        self.events = {k: seconds(v) for k, v in data["events"].items()}

    def resource(self, type_: str) -> float:
        return self.resources.get(type_, self.resources["default"])


def poll_defaults() -> tuple[int, int]:
    """(first delay, ceiling) of the scripts' polling, read from steps/lib.sh itself."""
    text = LIB_SH.read_text()
    first = int(re.search(r"POLL_INITIAL_SECONDS:-(\d+)", text).group(1))
    ceiling = int(re.search(r"POLL_MAX_SECONDS:-(\d+)", text).group(1))
    return first, ceiling


def delays(first: float, ceiling: float) -> Iterator[float]:
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, ceiling)


@dataclass
class Wait:
    """One wait: when its event happened and when the step noticed it (seconds from the deploy's start),
    the gap between the last two checks, and the start of every check (an ARM request each)."""

    what: str
    event: float
    noticed: float
    interval: float
    checks: list[float] = field(default_factory=list)

    @property
    def slack(self) -> float:
        return self.noticed - self.event


def poll(what: str, start: float, event: float, check: float, schedule: Iterator[float],
         extra: Callable[[int], float] = lambda n: 0.0, first_offset: float = 0.0) -> Wait:
    """Checks from ``start + first_offset`` on, the next one each ``delay`` after the previous started (or when
    it and ``extra(n)`` ended, if longer); the first that starts at or after ``event`` sees it and ends
    ``check`` later. ``extra(n)``: more work after the n-th check in the same slot (the refresh's re-post)."""
    slot, at, n, gap, checks = start, start + first_offset, 0, 0.0, []
    busy = first_offset
    while True:
        checks.append(at)
        n += 1
        if at >= event:
            return Wait(what, event, at + check, gap, checks)
        busy += check + extra(n)
        gap = max(next(schedule), busy)
        slot += gap
        at, busy = slot, 0.0


def step_kind(resource) -> Optional[str]:
    if resource.type != COMMAND:
        return None
    create = str(resource.inputs.get("create") or "")
    return next((kind for kind in STEP_KINDS if kind in create), None)


def is_pyroscope_datasource(resource) -> bool:
    if step_kind(resource) != "grafana_datasource":
        return False
    definition = (resource.inputs.get("environment") or {}).get("DATASOURCE", "")
    try:
        return json.loads(definition).get("type") == "grafana-pyroscope-datasource"
    except (TypeError, ValueError):
        return "pyroscope" in resource.name  # unknown at preview: the step's name says which


def is_private_link_service(resource) -> bool:
    """The stack's Service that AKS makes the PLS for: the one of type LoadBalancer (the write path's is ClusterIP)."""
    return resource.type == SERVICE and (resource.inputs.get("spec") or {}).get("type") == "LoadBalancer"


def chain(plan: Plan) -> list:
    """The unavoidable chain's resources in the plan: the Helm release, the private link Service, the PLS wait, the
    MPE, the approval, the refresh and the Pyroscope datasource. Raises LookupError if the plan lacks one."""
    picks = [lambda r: r.type == RELEASE, is_private_link_service,
             lambda r: step_kind(r) == "wait_private_link_service",
             lambda r: r.type == MPE, lambda r: step_kind(r) == "approve_private_endpoint_connection",
             lambda r: step_kind(r) == "refresh_managed_private_endpoints", is_pyroscope_datasource]
    found = []
    for pick in picks:
        matches = [r for r in plan.resources if pick(r)]
        if len(matches) != 1:
            raise LookupError(f"the plan has {len(matches)} resources for one step of the chain")
        found.append(matches[0])
    return found


@dataclass
class Timed:
    start: float
    finish: float
    note: str = ""
    wait: Optional[Wait] = None
    reads: list[tuple[float, str]] = field(default_factory=list)  # (time, resource provider)


@dataclass
class Schedule:
    total: float
    steps: dict[str, Timed]
    path: list[str]
    prologue_reads: list[tuple[float, str]]


def predecessors(plan: Plan, mode: str) -> dict[str, set[str]]:
    """urn -> what it starts after: dependencies, parent, provider. The Terraform port (module docstring) has
    no namespace resource and its Helm release waits for the extension, as the published procedure's does; it
    installs the chart as the procedure does, so it has neither the private link Service (the chart's Service has
    the PLS annotations) nor the claims (the StatefulSet makes them): what follows one of them follows what it
    followed."""
    before = {r.urn: set(r.dependencies) | {u for u in (r.parent, r.provider) if u} for r in plan.resources}
    if mode == "terraform":
        namespace = {r.urn for r in plan.resources if r.type == NAMESPACE or r.type.endswith(":GadgetNamespace")}
        bypassed = {r.urn for r in plan.resources if is_private_link_service(r) or r.type == CLAIM}

        def through(deps: set[str]) -> set[str]:
            out: set[str] = set()
            for dep in deps:
                out |= through(before[dep]) if dep in bypassed else {dep}
            return out

        dropped = namespace | bypassed
        extension = next(r.urn for r in plan.resources if r.type == EXTENSION)
        before = {urn: through(deps) - dropped for urn, deps in before.items() if urn not in dropped}
        for r in plan.resources:
            if r.type == RELEASE:
                before[r.urn].add(extension)
    return before


def _provider(token_or_type: str) -> str:
    module = token_or_type.split(":")[1] if ":" in token_or_type else ""
    return {"network": "Microsoft.Network", "dashboard": "Microsoft.Dashboard"}.get(module, f"azure-native:{module}")


def datasource_calls(resource) -> int:
    """Grafana API calls of a datasource step's create (steps/grafana_datasource.py ``main``): the read by uid, the
    read by name, the POST; and GET /api/health and /api/plugins first (grafana_server.probe) for an Azure-auth
    Prometheus."""
    definition = (resource.inputs.get("environment") or {}).get("DATASOURCE", "")
    try:
        azure_auth = "azureCredentials" in (json.loads(definition).get("jsonData") or {})
    except (TypeError, ValueError, AttributeError):
        azure_auth = "prometheus" in resource.name
    return 5 if azure_auth else 3


def schedule(plan: Plan, table: Table, mode: str, polls: Optional[tuple[float, float]] = None,
             ops: Optional[dict[str, str]] = None, reads: Sequence[str] = (),
             first: Optional[dict[str, float]] = None) -> Schedule:
    """Start and finish of every resource ("ours" or "terraform"), unbounded parallelism. ``polls``: the steps'
    (first delay, ceiling), steps/lib.sh's defaults unless given. ``ops`` (this stack only): urn -> ``create``,
    ``update`` or ``same`` for a day-two ``pulumi up`` (:func:`day_two`); a same resource takes no time, an updated
    Service only pulumi-kubernetes' settle (it has its address) and its PLS comes ``pls_update`` after it; ``first``:
    urn -> seconds of deletes its registration runs before its own step (a delete-first chain). ``reads``: the
    program's own reads before it registers anything (:func:`program_reads`), table events, one after another."""
    e, check = table.events, table.events["poll_check"]
    initial, ceiling = polls or poll_defaults()
    before = predecessors(plan, mode)
    gated = {d for invoke in plan.invokes for d in invoke.dependencies}
    lookups = [i for i in plan.invokes if not i.dependencies]
    if mode == "ours":  # plain invokes in the program, one after another, and its own reads (az, kubectl)
        prologue_reads = [(n * e["invoke"], _provider(i.token)) for n, i in enumerate(lookups)]
        prologue = e["invoke"] * len(lookups) + sum(e[read] for read in reads)
    else:  # Terraform reads its data sources in parallel
        prologue_reads = [(0.0, _provider(i.token)) for i in lookups]
        prologue = e["invoke"] if lookups else 0.0
    steps: dict[str, Timed] = {}
    previous: dict[str, Optional[str]] = {}
    for urn in plan.create_order:
        if urn not in before:
            continue
        r = plan.get(urn)
        op = (ops or {}).get(urn, "create")
        start, after = prologue, None
        for dep in before[urn]:
            if dep in steps:
                ready = steps[dep].finish + (e["invoke"] if dep in gated else 0.0)
                if ready > start:
                    start, after = ready, dep
        start += (first or {}).get(urn, 0.0)
        previous[urn] = after
        kind = step_kind(r)
        environment = r.inputs.get("environment") or {}
        timed = Timed(start, start + table.resource(r.type))
        if op == "same":
            timed = Timed(start, start)
        elif is_private_link_service(r) and op == "update":  # it has its address: the endpoints' settle only
            timed = Timed(start, start + table.resource(r.type), f"PLS update at {start + e['pls_update']:.0f}s")
        elif is_private_link_service(r):  # pulumi-kubernetes' await: the ingress IP, and the endpoints settled
            timed = Timed(start, start + max(table.resource(r.type), e["load_balancer_frontend"]),
                          f"load balancer frontend at {start + e['load_balancer_frontend']:.0f}s")
        elif kind == "wait_private_link_service":
            # AKS makes the PLS some time after the Service's load balancer: this stack's own Service's, or the
            # chart's, whose IP the release's Helm --wait waited for (the Terraform port).
            service = next((d for d in before[urn] if is_private_link_service(plan.get(d))), None)
            if service is not None and (ops or {}).get(service) == "same":
                event = start  # the PLS is as the Service asks already
            elif service is not None and (ops or {}).get(service) == "update":
                event = steps[service].start + e["pls_update"]
            elif service is not None:
                event = steps[service].start + e["load_balancer_frontend"] + e["pls_after_load_balancer"]
            else:
                release = next(d for d in before[urn] if plan.get(d).type == RELEASE)
                event = steps[release].finish + e["pls_after_load_balancer"]
            if mode == "ours":
                w = poll("PLS", start, event, check, delays(initial, ceiling))
                # without PLS_SUBNET the step reads the load balancer frontend's subnet once it has found the PLS
                frontend = 0.0 if environment.get("PLS_SUBNET") else check
                timed = Timed(start, w.noticed + frontend, f"PLS at {event:.0f}s, noticed at {w.noticed:.0f}s", w,
                              [(t, "Microsoft.Network") for t in w.checks])
            else:  # a sleep that ends before the PLS exists would fail the next step: never shorter
                timed = Timed(start, max(start + TERRAFORM_SLEEP, event), f"time_sleep {TERRAFORM_SLEEP:.0f}s")
        elif kind == "approve_private_endpoint_connection":
            event = max(steps[d].finish for d in before[urn] if plan.get(d).type == MPE) + e["connection_after_mpe"]
            if mode == "ours":  # the connection listed, its description read (describe), then the PUT
                w = poll("Pending connection", start, event, check, delays(initial, ceiling))
                timed = Timed(start, w.noticed + check + e["approval_put"], "approved; the PUT's answer says Approved",
                              w, [(t, "Microsoft.Network") for t in w.checks])
            else:
                timed = Timed(start, start + e["approval_put"] + TERRAFORM_SLEEP,
                              f"approve, time_sleep {TERRAFORM_SLEEP:.0f}s")
        elif kind == "refresh_managed_private_endpoints":
            if mode == "ours":  # one read first (no refresh yet after this approval), then the POST
                event = start + check + e["ip_after_refresh"]
                w = poll("private IP", start, event, check, delays(initial, ceiling),
                         extra=lambda n: check if n % 4 == 0 else 0.0, first_offset=2 * check)
                timed = Timed(start, w.noticed, f"IP at {event:.0f}s, noticed at {w.noticed:.0f}s", w,
                              [(t, "Microsoft.Dashboard") for t in [start, *w.checks]])
            else:
                event = start + e["ip_after_refresh"]  # the refresh's long-running action, posted at the step's start
                timed = Timed(start, event, "refresh as a long-running action (waits for completion)")
        elif kind == "grafana_datasource":  # the Terraform port: its provider's create and read
            timed = Timed(start, start + (datasource_calls(r) if mode == "ours" else 2) * e["grafana_api_call"])
        elif kind == "grafana_dashboard":
            # the download; health and plugins (grafana_server.probe), the stored dashboard, the Prometheus
            # datasource by name, the POST (steps/grafana_dashboard.py main)
            timed = Timed(start, start + e["dashboard_download"] + (5 if mode == "ours" else 2) * e["grafana_api_call"])
        elif r.type.startswith("azure-native:") and r.custom and timed.finish > start:
            # the provider's status polls of a long-running create, and one read of the result
            polls_ = int((timed.finish - start) // e["provider_lro_poll"])
            timed.reads = [(start + k * e["provider_lro_poll"], _provider(r.type)) for k in range(1, polls_ + 1)]
            timed.reads.append((timed.finish, _provider(r.type)))
        steps[urn] = timed
    for invoke in plan.invokes:  # a gated read happens when its step has finished
        for dep in invoke.dependencies:
            if dep in steps:
                steps[dep].reads.append((steps[dep].finish, _provider(invoke.token)))
    end = max(steps, key=lambda u: steps[u].finish)
    path, node = [], end
    while node:
        path.append(node)
        node = previous[node]
    return Schedule(steps[end].finish, steps, list(reversed(path)), prologue_reads)


#: The offline program's stand-ins for the program's own reads before it registers anything (offline/program.py
#: ``evaluate``) -> the table event one such read costs: ``az resource show``, ``az network private-link-service show``
#: and ``az role assignment list`` are one check each, the datasource lookup a Grafana API call; the kubectl reads of
#: the namespace and of Helm's release records ask the API server, for which the table has no time.
PROGRAM_READS = {"resource_tags": "poll_check", "private_link_service_owner": "poll_check",
                 "role_holders": "poll_check", "datasource_uid": "grafana_api_call"}


def program_reads(stack: str = "dev", sets: Optional[dict] = None) -> tuple[Plan, list[str]]:
    """The plan of ``stack`` and the reads its program makes before registering anything (existing/: the taken
    names, the PLS's owner, the role holders, datasources made by hand), as :data:`PROGRAM_READS` events, counted by
    running it offline with the canned answers wrapped."""
    from offline import canned

    found: list[str] = []
    saved = {name: getattr(canned, name) for name in PROGRAM_READS}

    def counting(name: str, answer: Callable) -> Callable:
        def read(*args, **kwargs):
            found.append(PROGRAM_READS[name])
            return answer(*args, **kwargs)
        return read

    try:
        for name, answer in saved.items():
            setattr(canned, name, counting(name, answer))
        plan = run(stack, dict(sets or {}))
    finally:
        for name, answer in saved.items():
            setattr(canned, name, answer)
    return plan, found


def day_two(head: Plan, order: Sequence, table: Table, polls: Optional[tuple[float, float]] = None,
            reads: Sequence[str] = (), base: Optional[Plan] = None) -> tuple[float, Schedule]:
    """A day-two ``pulumi up`` from ``base`` to ``head``, the offline diff's ``order`` (offline/diff.py ``Diff.order``
    at ``up``). The program and its lookups run again; each resource registers along the same graph, a same one
    taking no time. The engine runs the steps of one registration as one serial chain (pkg/resource/deploy/
    deployment_executor.go ``ExecuteSerial`` of ``GenerateSteps``' steps at v3.277.0): a delete-first replacement's
    deletes (the run of deletes the order puts right before the resource's ``create-replacement``, its replaceWith
    set first) come before its create; its dependents' re-creations register after it. The other deletes (the old
    ones of create-first replacements, removed resources) run at the end, in antichains as :func:`destroy`'s.
    (seconds, the schedule before those deletes)."""
    def resource(urn: str):
        try:
            return head.get(urn)
        except KeyError:
            return (base or head).get(urn)

    ops = {r.urn: "same" for r in head.resources}
    chains: dict[str, float] = {}
    run: list[str] = []  # deletes not yet known to belong to a chain
    last: list[str] = []
    for action in order:
        if action.kind == "delete":
            run.append(action.urn)
            continue
        if action.kind == "create-replacement" and run and run[-1] == action.urn:
            chains[action.urn] = sum(delete_seconds(resource(u), table) for u in run)
        else:
            last += run
        run = []
        ops[action.urn] = "update" if action.kind == "update" else "create"
    last += run
    steps = schedule(head, table, "ours", polls, ops, reads, chains)
    end = steps.total + (destroy(base or head, table, set(last))[0] if last else 0.0)
    return end, steps


def delete_seconds(resource, table: Table) -> float:
    """A ``pulumi destroy``'s delete of one resource: an azure-native resource's DELETE its type's time (the table has
    one figure per type, taken for the PUT and the DELETE alike); a step with a ``delete`` command its calls (steps/
    azcli.py ``Step.delete_owned``: the workspace read, the read by uid, the DELETE); Kubernetes objects, providers,
    components and the other steps none (no Azure time in the table)."""
    e = table.events
    if resource.type.startswith("azure-native:") and resource.custom:
        return table.resource(resource.type)
    if resource.type == COMMAND and resource.inputs.get("delete"):
        return e["poll_check"] + 2 * e["grafana_api_call"]
    return 0.0


def destroy(plan: Plan, table: Table,
            condemned: Optional[set[str]] = None) -> tuple[float, list[tuple[float, list[str]]]]:
    """``pulumi destroy``: the engine deletes in antichains, each started when the whole previous one has finished
    (pkg/resource/deploy/step_generator.go ``ScheduleDeletes`` and deployment_executor.go, v3.230.0 and v3.277.0):
    a resource's antichain is the length of its longest chain of dependencies (dependencies, parent, provider, and
    the children of a component it depends on other than its parent: graph/dependency_graph.go ``DependenciesOf``),
    the deepest first. ``condemned``: the URNs deleted (default all), antichains taken among them. (seconds,
    [(antichain's seconds, its resource names)])."""
    before = predecessors(plan, "ours")
    children: dict[str, list[str]] = {}
    for r in plan.resources:
        if r.parent:
            children.setdefault(r.parent, []).append(r.urn)
    position = {urn: n for n, urn in enumerate(plan.create_order)}

    def descendants(urn: str) -> list[str]:
        out = []
        for child in children.get(urn, []):
            out += [child, *descendants(child)]
        return out

    condemned = set(plan.create_order) if condemned is None else condemned
    depth: dict[str, int] = {}
    for urn in [u for u in plan.create_order if u in condemned]:
        deps = set(before.get(urn, ()))
        for dep in plan.get(urn).dependencies:  # not the parent: graph.DependencyGraph.DependenciesOf skips it there
            if dep in position and not plan.get(dep).custom:
                deps |= {c for c in descendants(dep) if position.get(c, len(position)) < position[urn]}
        depth[urn] = 1 + max((depth[d] for d in deps if d in depth), default=-1)
    levels: dict[int, list[str]] = {}
    for urn, level in depth.items():
        levels.setdefault(level, []).append(urn)
    antichains = []
    for level in sorted(levels, reverse=True):
        names = levels[level]
        antichains.append((max(delete_seconds(plan.get(u), table) for u in names), [plan.get(u).name for u in names]))
    return sum(t for t, _ in antichains), antichains


def physical(plan: Plan, table: Table) -> tuple[float, list[tuple[str, float]]]:
    """The physical limit: the chain's steps (and a workspace the stack creates) at their physical times along
    the plan's edges, everything else costing nothing; (seconds, [(chain step, its physical seconds)])."""
    e = table.events
    links = chain(plan)
    weight = {links[0].urn: table.resource(RELEASE), links[1].urn: e["load_balancer_frontend"],
              links[2].urn: e["pls_after_load_balancer"], links[3].urn: table.resource(MPE),
              links[4].urn: e["connection_after_mpe"] + e["approval_put"], links[5].urn: e["ip_after_refresh"],
              links[6].urn: 2 * e["grafana_api_call"]}
    for r in plan.resources:
        if r.type in WORKSPACE_TYPES:
            weight[r.urn] = table.resource(r.type)
    before = predecessors(plan, "ours")
    finish: dict[str, float] = {}
    for urn in plan.create_order:
        finish[urn] = max((finish[d] for d in before[urn] if d in finish), default=0.0) + weight.get(urn, 0.0)
    return max(finish.values()), [(r.name, weight[r.urn]) for r in links]


def seed_procedure(table: Table, plan: Optional[Plan] = None) -> list[tuple[str, float]]:
    """The published procedure command by command (module docstring), each waiting for the previous one:
    [(command, seconds)]. With ``createGrafana``/``createMonitorWorkspace`` its operator creates them first."""
    r, e, check = table.resources, table.events, table.events["poll_check"]
    types = {res.type for res in plan.resources} if plan else set()
    steps = [(f"create {what}", r[t])
             for t, what in (("azure-native:monitor:AzureMonitorWorkspace", "the Azure Monitor workspace"),
                             ("azure-native:dashboard:Grafana", "the Grafana workspace")) if t in types]
    steps += [("az k8s-extension create (waits for the extension)", r[EXTENSION]),
              ("helm install pyroscope -n gadget (no --wait: returns at once)", 0.0),
              ("az aks show (node resource group)", check)]
    # The PLS appears pls_after_load_balancer after the load balancer of the chart's Service, which is ready Release
    # seconds after the install (the figure covers the pull and the frontend, which come at the same time).
    elapsed = sum(s for _, s in steps)
    install = elapsed - check
    w = poll("PLS", elapsed, install + r[RELEASE] + e["pls_after_load_balancer"], check,
             iter(lambda: SEED_POLL_SLEEP + check, None))
    steps += [(f"until az network private-link-service show; do sleep {SEED_POLL_SLEEP:.0f}; done "
               f"(PLS at {w.event - install:.0f}s after the install)", w.noticed - elapsed),
              ("az network private-link-service show (PLS id)", check),
              ("az grafana mpe create", r[MPE]),
              (f"sleep {SEED_SLEEP_AFTER_MPE:.0f}", SEED_SLEEP_AFTER_MPE),
              ("az network private-link-service show (the Pending connection's name)", check),
              ("az network private-link-service connection update --connection-status Approved", e["approval_put"]),
              ("az grafana mpe refresh (waits for the long-running action)", e["ip_after_refresh"]),
              ("az grafana mpe show (private IP)", check),
              ("az grafana data-source create (Pyroscope)", e["grafana_api_call"]),
              ("az resource show (workspace query endpoint)", check),
              ("az grafana data-source create (Prometheus)", e["grafana_api_call"]),
              ("Monitoring Data Reader for Grafana's identity (the procedure's prerequisite)",
               r["azure-native:authorization:RoleAssignment"]),
              ("curl the dashboard; az grafana dashboard create", e["dashboard_download"] + e["grafana_api_call"]),
              ("az grafana show (dashboard URL)", check)]
    return steps


def request_rates(ours: Schedule) -> dict:
    """ARM reads of one stack over its deploy and of FLEET stacks started together (the worst alignment), under
    one principal in one subscription and region, against the documented limits (module docstring)."""
    reads = list(ours.prologue_reads) + [read for step in ours.steps.values() for read in step.reads]
    horizon = int(max(t for t, _ in reads)) + 1
    per_second = [0] * (horizon + 1)
    network = [0] * (horizon + 1)
    for t, rp in reads:
        per_second[int(t)] += 1
        network[int(t)] += rp == "Microsoft.Network"
    window = 60  # sustained rate; the bucket (250 reads, 10 s of refill) absorbs shorter bursts
    peak = max(sum(per_second[i:i + window]) for i in range(horizon + 1)) / window
    network_5min = max(sum(network[i:i + 300]) for i in range(horizon + 1))
    tokens, lowest = float(READ_BUCKET), float(READ_BUCKET)
    for count in per_second:  # token bucket: refill, then spend the fleet's reads of that second
        tokens = min(READ_BUCKET, tokens + READ_REFILL_PER_SECOND) - FLEET * count
        lowest = min(lowest, tokens)
    return {"readsPerStack": len(reads), "peakReadsPerSecondPerStack": peak, "windowSeconds": window,
            "fleet": FLEET, "fleetPeakReadsPerSecond": FLEET * peak, "refillPerSecond": READ_REFILL_PER_SECOND,
            "globalRefillPerSecond": GLOBAL_FACTOR * READ_REFILL_PER_SECOND,
            "bucket": READ_BUCKET, "lowestTokens": lowest, "throttled": lowest < 0,
            "fleetNetworkReadsPer5Min": FLEET * network_5min, "networkLimitPer5Min": NETWORK_READS_PER_5_MIN}


def simulate(plan: Plan, table: Optional[Table] = None, reads: Sequence[str] = ()) -> dict:
    """The comparison (module docstring). ``reads``: the program's own reads before its first resource
    (:func:`program_reads`), reported beside it (``programReads``), not in ``ours`` and its targets."""
    table = table or Table()
    ours = schedule(plan, table, "ours")
    terraform = schedule(plan, table, "terraform")
    limit, links = physical(plan, table)
    seed_steps = seed_procedure(table, plan)
    seed = sum(t for _, t in seed_steps)
    first, ceiling = poll_defaults()
    check = table.events["poll_check"]
    waits = [(plan.get(u).name, ours.steps[u].wait) for u in plan.create_order
             if u in ours.steps and ours.steps[u].wait]
    on_path = [(plan.get(u).name, ours.steps[u].wait) for u in ours.path if ours.steps[u].wait]
    within = all(w.slack <= w.interval + check + 1e-9 and w.slack <= NOTICE_BOUND for _, w in waits)
    ratios = {"seed/ours": seed / ours.total, "terraform/ours": terraform.total / ours.total,
              "ours/physical": ours.total / limit}
    met = {k: (ratios[k] >= v) if op == ">=" else (ratios[k] <= v) for k, (op, v) in TARGETS.items()}
    slack = sum(w.slack for _, w in on_path)
    return {
        "ours": ours.total, "seed": seed, "terraform": terraform.total, "physical": limit,
        "ratios": ratios, "targets": {k: {"target": f"{op} {v}", "met": met[k]} for k, (op, v) in TARGETS.items()},
        "excess": ours.total - limit, "pollingSlackOnPath": slack, "waitsOnPath": len(on_path),
        "withinTarget": within, "pollSchedule": {"first": first, "ceiling": ceiling, "check": check},
        "chain": [{"step": name, "seconds": seconds} for name, seconds in links],
        "workspaces": [{"step": r.name, "seconds": table.resource(r.type)} for r in plan.resources
                       if r.type in WORKSPACE_TYPES],
        "waits": [{"step": name, "what": w.what, "event": w.event, "noticed": w.noticed, "slack": w.slack,
                   "interval": w.interval, "checks": len(w.checks)} for name, w in waits],
        "criticalPath": [{"resource": plan.get(u).name, "type": plan.get(u).type, "start": ours.steps[u].start,
                          "finish": ours.steps[u].finish, "note": ours.steps[u].note} for u in ours.path
                         if ours.steps[u].finish > ours.steps[u].start or ours.steps[u].note],
        "terraformPath": [{"resource": plan.get(u).name, "start": terraform.steps[u].start,
                           "finish": terraform.steps[u].finish, "note": terraform.steps[u].note} for u in terraform.path
                          if terraform.steps[u].finish > terraform.steps[u].start],
        "seedSteps": [{"step": s, "seconds": t} for s, t in seed_steps],
        "requests": request_rates(ours),
        "programReads": {"reads": len(reads), "seconds": sum(table.events[r] for r in reads),
                         "ours": schedule(plan, table, "ours", reads=reads).total,
                         "oursPhysical": schedule(plan, table, "ours", reads=reads).total / limit},
    }


def render(result: dict) -> str:
    def m(seconds: float) -> str:
        return f"{seconds:6.0f} s ({seconds / 60:4.1f} min)"

    schedule_ = result["pollSchedule"]
    r = result["requests"]
    lines = ["Deploy time, simulated with bench/latencies.yaml (no Azure involved)", "",
             f"  this stack (Pulumi, polling waits)   {m(result['ours'])}",
             f"  seed procedure, step by step         {m(result['seed'])}",
             f"  Terraform port, fixed 180 s sleeps    {m(result['terraform'])}",
             f"  physical limit (the chain, no wait)  {m(result['physical'])}", "",
             "  ratios: " + ", ".join(f"{k} = {v:.2f}" for k, v in result["ratios"].items()),
             "  targets: " + ", ".join(f"{k} {t['target']} {'met' if t['met'] else 'NOT MET'}"
                                       for k, t in result["targets"].items()),
             f"  this stack exceeds the physical limit by {result['excess']:.0f} s: "
             f"{result['pollingSlackOnPath']:.0f} s of "
             f"polling slack over {result['waitsOnPath']} wait(s) on the critical path, the rest lookups, "
             "the namespace, the claims "
             f"and reads the chain needs; {'within' if result['withinTarget'] else 'NOT within'} "
             "one poll interval per wait",
             *([f"  the program's own reads before its first resource ({result['programReads']['reads']}: az and "
                f"Grafana lookups of existing/, bench.deploy_sim.program_reads) are not in 'this stack': with them "
                f"{result['programReads']['ours']:.0f} s, ours/physical = {result['programReads']['oursPhysical']:.2f}"]
               if result["programReads"]["reads"] else []),
             "", "Unavoidable chain (physical limit): "
             + " -> ".join(f"{c['step']} {c['seconds']:.0f} s" for c in result["chain"])
             + ("".join(f"; {w['step']} {w['seconds']:.0f} s before the steps that read it"
                        for w in result["workspaces"])),
             "", "Critical path (this stack):"]
    for step in result["criticalPath"]:
        lines.append(f"  {step['start']:6.0f} -> {step['finish']:6.0f} s  {step['resource']} ({step['type']})"
                     + (f"  [{step['note']}]" if step["note"] else ""))
    lines += ["", f"Slack per wait (checks {schedule_['first']} s then {schedule_['ceiling']} s apart, "
                  f"{schedule_['check']:.0f} s each; bound: one interval plus one check, <= {NOTICE_BOUND:.0f} s):"]
    for w in result["waits"]:
        lines.append(f"  {w['step']}: {w['what']} at {w['event']:.0f} s, noticed at {w['noticed']:.0f} s: slack "
                     f"{w['slack']:.0f} s (last interval {w['interval']:.0f} s, {w['checks']} check(s))")
    lines += ["", f"ARM reads ({r['fleet']} stacks in one subscription and region, one principal, "
                  "all started together):",
              f"  one stack: {r['readsPerStack']} reads (lookups, polls, the provider's status reads), at most "
              f"{r['peakReadsPerSecondPerStack']:.2f}/s over any {r['windowSeconds']} s",
              f"  {r['fleet']} stacks: at most {r['fleetPeakReadsPerSecond']:.1f}/s over any "
              f"{r['windowSeconds']} s against "
              f"{r['refillPerSecond']:.0f}/s per principal ({r['globalRefillPerSecond']:.0f}/s per subscription); "
              "token "
              f"bucket of {r['bucket']}: lowest {r['lowestTokens']:.0f} left, "
              f"{'THROTTLED' if r['throttled'] else 'never throttled'}",
              f"  {r['fleet']} stacks: Microsoft.Network reads {r['fleetNetworkReadsPer5Min']} in the busiest 5 min "
              f"against {r['networkLimitPer5Min']}"]
    lines += ["", "Terraform port (critical path):"] + [
        f"  {s['start']:6.0f} -> {s['finish']:6.0f} s  {s['resource']}" + (f"  [{s['note']}]" if s["note"] else "")
        for s in result["terraformPath"]]
    lines += ["", "Seed procedure:"] + [f"  {s['seconds']:6.0f} s  {s['step']}" for s in result["seedSteps"]]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.deploy_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from offline.plan import _parse_sets
    from stack_config.schema import ConfigError

    try:
        plan, reads = program_reads(args.stack, _parse_sets(args.sets))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result = simulate(plan, reads=reads)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
