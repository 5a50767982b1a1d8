"""Where Pyroscope can run: the cluster's node pools against its placement (GPU nodes excluded, the configured node
selector and tolerations, its requests).

Owns: :class:`AgentPool` (one ``agentPoolProfiles`` entry), :func:`why_not` (why one pool cannot take Pyroscope's
pods) and :func:`refuse_unschedulable`. Input: the StackConfig and the pools of ``getManagedCluster``. Output: none.
Errors: ConfigError, one line naming every pool with its reason and the ``pulumi config set`` that fixes it, before
any resource is registered: without a pool, the release waits its whole timeout with its pods Pending and fails.
Upstream: kubernetes ``staging/src/k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint`` (a toleration with an empty
key and operator Exists tolerates every taint) and MicrosoftDocs/azure-aks-docs ``articles/aks/use-labels.md`` (the
labels AKS sets on every node); why: docs/decisions/cluster-prerequisites.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Mapping, Optional, Sequence

from stack_config.rules import quantity_value
from stack_config.schema import ConfigError, StackConfig

#: Effects that keep a pod off a node unless it tolerates the taint (PreferNoSchedule only prefers).
BLOCKING = ("NoSchedule", "NoExecute")
#: Memory per vCPU of the smallest size of each Azure VM family (GiB; the family is the size's first letter): only a
#: pool whose whole memory is below the requests is refused, so these are lower bounds (Azure's size tables:
#: B1ls 0.5, A2_v2 2, F2s_v2 2, D2_v2 3.5, E2s_v5 8, L8s_v3 8). Families not listed are not checked for memory.
MEMORY_PER_VCPU_GIB = {"A": Decimal(2), "B": Decimal("0.5"), "D": Decimal("3.5"), "E": Decimal(8), "F": Decimal(2),
                       "L": Decimal(8)}
_SIZE = re.compile(r"Standard_([A-Z]+)(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class AgentPool:
    """One node pool of ``agentPoolProfiles``: ``name``, ``vm_size``, ``mode`` (``System``/``User``), ``os_type``,
    ``taints`` (``key=value:Effect`` strings, ``nodeTaints``), ``labels`` (``nodeLabels``) and ``nodes``: the most
    nodes it can have (``maxCount`` when autoscaled, else ``count``)."""

    name: str
    vm_size: str
    mode: str
    os_type: str
    taints: tuple[str, ...]
    labels: Mapping[str, str]
    nodes: int

    @property
    def gpu(self) -> bool:
        """An N-series size or a GPU label. AKS labels NVIDIA sizes' nodes ``kubernetes.azure.com/accelerator``, which
        Pyroscope's affinity avoids; AMD N-series nodes carry no such label, and are counted as GPU pools all the same,
        so that the check never offers a GPU node to Pyroscope."""
        return (self.vm_size.lower().startswith("standard_n") or "kubernetes.azure.com/accelerator" in self.labels
                or self.labels.get("nvidia.com/gpu.present") == "true")

    def node_labels(self) -> dict[str, str]:
        """The labels every node of the pool carries: its ``nodeLabels`` and those AKS sets."""
        return {**self.labels, "agentpool": self.name, "kubernetes.azure.com/agentpool": self.name,
                "kubernetes.azure.com/mode": self.mode.lower(), "kubernetes.io/os": self.os_type.lower(),
                "node.kubernetes.io/instance-type": self.vm_size}


def tolerated(taint: str, tolerations: Sequence[Mapping[str, str]]) -> bool:
    """Whether ``tolerations`` (Kubernetes tolerations) tolerate ``taint`` (``key[=value]:Effect``)."""
    head, _, effect = taint.rpartition(":")
    key, _, value = head.partition("=")
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != effect:
            continue
        if not toleration.get("key") and toleration.get("operator") == "Exists":
            return True
        if toleration.get("key") == key and (toleration.get("operator") == "Exists"
                                             or toleration.get("value", "") == value):
            return True
    return False


def _capacity(vm_size: str) -> tuple[Optional[Decimal], Optional[Decimal]]:
    """(vCPUs, lower bound of memory in bytes) read from an Azure size name, None where it cannot be read."""
    found = _SIZE.match(vm_size)
    if not found:
        return None, None
    cpus = Decimal(found.group(2))
    per_cpu = MEMORY_PER_VCPU_GIB.get(found.group(1)[0].upper())
    return cpus, (cpus * per_cpu * 2**30 if per_cpu is not None else None)


def _room(pool: AgentPool, requests: Mapping[str, str]) -> str:
    """Why ``pool``'s nodes are too small for ``requests`` (``""`` when they are not, or cannot be told)."""
    cpus, memory = _capacity(pool.vm_size)
    cpu, mem = requests.get("cpu"), requests.get("memory")
    if cpus is not None and cpu and quantity_value(str(cpu)) > cpus:
        return f"{pool.vm_size} has {cpus} vCPUs, less than the {cpu} CPU requested"
    if memory is not None and mem and quantity_value(str(mem)) > memory:
        return f"{pool.vm_size} has less memory than the {mem} requested"
    return ""


def why_not(pool: AgentPool, selector: Mapping[str, str], tolerations: Sequence[Mapping[str, str]],
            requests: Mapping[str, str]) -> dict[str, str]:
    """Why Pyroscope's pods cannot be scheduled on ``pool``, by the setting that decides each reason
    (``pyroscopeNodeSelector``, ``pyroscopeTolerations``, ``pyroscopeResources``, or ``""`` for what no setting
    changes: the OS, no nodes, GPUs); empty when they can. A selector key AKS does not set and the pool does not label
    is not judged (it may come from elsewhere)."""
    if pool.os_type.lower() != "linux":
        return {"": f"{pool.os_type} nodes"}
    if pool.nodes <= 0:
        return {"": "no nodes"}
    if pool.gpu:
        return {"": "GPU nodes, which Pyroscope keeps off"}
    reasons = {}
    labels = pool.node_labels()
    wrong = [f"{key}={value}" for key, value in selector.items() if key in labels and labels[key] != value]
    if wrong:
        reasons["pyroscopeNodeSelector"] = f"its nodes are not {', '.join(wrong)}"
    untolerated = _untolerated(pool, tolerations)
    if untolerated:
        reasons["pyroscopeTolerations"] = f"taint {', '.join(untolerated)}"
    room = _room(pool, requests)
    if room:
        reasons["pyroscopeResources"] = room
    return reasons


def _untolerated(pool: AgentPool, tolerations: Sequence[Mapping[str, str]]) -> list[str]:
    return [taint for taint in pool.taints
            if taint.rpartition(":")[2] in BLOCKING and not tolerated(taint, tolerations)]


def refuse_unschedulable(cfg: StackConfig, pools: Sequence[AgentPool], requests: Mapping[str, str]) -> None:
    """Refuse, in one line, a cluster none of whose pools can take Pyroscope's pods (``requests``: the largest pod's
    CPU and memory requests). The fix offered is for the pool the node selector and tolerations can open (a system
    pool first), else smaller requests, else a new pool. Nothing is refused when the cluster lists no pools."""
    selector, tolerations = cfg.pyroscope_node_selector, cfg.pyroscope_tolerations
    reasons = [(pool, why_not(pool, selector, tolerations, requests)) for pool in pools]
    if not reasons or any(not why for _, why in reasons):
        return
    listed = "; ".join(f"{pool.name} ({'; '.join(why.values())})" for pool, why in reasons)
    openable = [pool for pool, why in reasons if "" not in why and "pyroscopeResources" not in why]
    add_pool = (f"add a Linux node pool without GPUs: az aks nodepool add -g {cfg.cluster_resource_group} "
                f"--cluster-name {cfg.cluster_name} -n pyroscope --node-count 1")
    if openable:
        pool = next((p for p in openable if p.mode.lower() == "system"), openable[0])
        why = next(why for candidate, why in reasons if candidate is pool)
        commands = []
        if "pyroscopeNodeSelector" in why:
            commands += ["pulumi config rm pyroscopeNodeSelector",
                         f"pulumi config set --path 'pyroscopeNodeSelector[0]' agentpool={pool.name}"]
        commands += [f"pulumi config set --path 'pyroscopeTolerations[{len(tolerations) + i}]' {taint}"
                     for i, taint in enumerate(_untolerated(pool, tolerations))]
        key = next(iter(why))
        fix = f"let it onto pool {pool.name}: {' && '.join(commands)}"
        if pool.mode.lower() == "system":  # AKS keeps application pods off system pools: the other way, named too
            fix += f", or {add_pool}"
    elif any("" not in why for _, why in reasons):
        key = "pyroscopeResources"
        fix = f"lower its requests with pyroscopeResources (docs/sizing.md), or {add_pool} --node-vm-size <larger size>"
    else:
        key, fix = "clusterName", add_pool
    raise ConfigError(key, f"Pyroscope can run on none of cluster '{cfg.cluster_name}''s node pools: {listed}; {fix}")
