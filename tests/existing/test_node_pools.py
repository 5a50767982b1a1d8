"""existing/node_pools.py: a cluster none of whose node pools can take Pyroscope's pods (GPU pools, taints it does
not tolerate, a node selector no pool matches, nodes too small) is refused in one line before anything registers,
naming the pools and the exact `pulumi config set` that fixes it; the fix then plans. SIMULATED: the cluster's pools
are the canned getManagedCluster answer's (offline/canned.py)."""

from __future__ import annotations

import pytest

from existing.node_pools import AgentPool, tolerated
from offline import canned
from stack_config.rules import tolerations
from stack_config.schema import ConfigError
from tests.support import RELEASE
from tests.support.plans import cluster_stack, refused_before_anything, shows_the_cluster

SYSTEM = {"name": "system", "count": 2, "vmSize": "Standard_D4ds_v5", "mode": "System", "osType": "Linux",
          "nodeTaints": ["CriticalAddonsOnly=true:NoSchedule"]}
GPU = {"name": "gpu", "count": 2, "vmSize": "Standard_NC24ads_A100_v4", "mode": "User", "osType": "Linux",
       "nodeTaints": ["sku=gpu:NoSchedule"]}


def pools(*profiles):
    def handler(args, location):
        return {**canned.managed_cluster(args, location), "agentPoolProfiles": list(profiles)}

    return {"azure-native:containerservice:getManagedCluster": handler}


def refused(plan, overrides, **config) -> str:
    with pytest.raises(ConfigError) as caught:
        plan(invoke_overrides=overrides, **config)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_tainted_system_pool_and_gpu_pools_are_refused_with_the_toleration_that_opens_the_system_pool(plan):
    """The typical GPU cluster: the system pool tainted CriticalAddonsOnly, the GPU pools tainted and excluded. The
    release used to wait its whole timeout with its pod Pending; now one line names the pools and the command."""
    overrides = pools(SYSTEM, GPU)
    message, registered = refused_before_anything(overrides)
    assert message == (
        "pyroscopeTolerations: Pyroscope can run on none of cluster 'aks-gpu-dev''s node pools: system (taint "
        "CriticalAddonsOnly=true:NoSchedule); gpu (GPU nodes, which Pyroscope keeps off); let it onto pool system: "
        "pulumi config set --path 'pyroscopeTolerations[0]' CriticalAddonsOnly=true:NoSchedule, or add a Linux node "
        "pool without GPUs: az aks nodepool add -g rg-aks-gpu-dev --cluster-name aks-gpu-dev -n pyroscope "
        "--node-count 1")
    assert registered == ["pulumi:pulumi:Stack"]
    # The command, as `pulumi config set --path` stores it, plans.
    fixed = plan(invoke_overrides=overrides, paths={"pyroscopeTolerations[0]": "CriticalAddonsOnly=true:NoSchedule"})
    assert fixed.one(RELEASE).inputs["values"]["pyroscope"]["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]


def test_a_node_selector_no_pool_matches_is_refused_with_one_that_does(plan):
    user = {"name": "user", "count": 1, "vmSize": "Standard_D4ds_v5", "mode": "User", "osType": "Linux"}
    message = refused(plan, pools(user, GPU), paths={"pyroscopeNodeSelector[0]": "agentpool=system"})
    assert message == (
        "pyroscopeNodeSelector: Pyroscope can run on none of cluster 'aks-gpu-dev''s node pools: user (its nodes are "
        "not agentpool=system); gpu (GPU nodes, which Pyroscope keeps off); let it onto pool user: pulumi config rm "
        "pyroscopeNodeSelector && pulumi config set --path 'pyroscopeNodeSelector[0]' agentpool=user")


def test_microservices_ingesters_on_nodes_too_small_name_the_requests(plan):
    small = {"name": "system", "count": 3, "vmSize": "Standard_D2s_v5", "mode": "System", "osType": "Linux"}
    message = refused(plan, pools(small, GPU), pyroscopeMode="microservices")
    assert message.startswith("pyroscopeResources: Pyroscope can run on none of cluster 'aks-gpu-dev''s node pools: "
                              "system (Standard_D2s_v5 has less memory than the 8Gi requested)")
    assert "--node-vm-size <larger size>" in message


def test_only_gpu_windows_and_empty_pools_ask_for_a_new_pool(plan):
    windows = {"name": "win", "count": 1, "vmSize": "Standard_D4ds_v5", "mode": "User", "osType": "Windows"}
    empty = {"name": "spare", "count": 0, "vmSize": "Standard_D4ds_v5", "mode": "User", "osType": "Linux"}
    message = refused(plan, pools(windows, empty, GPU))
    assert message == (
        "clusterName: Pyroscope can run on none of cluster 'aks-gpu-dev''s node pools: win (Windows nodes); spare (no "
        "nodes); gpu (GPU nodes, which Pyroscope keeps off); add a Linux node pool without GPUs: az aks nodepool add "
        "-g rg-aks-gpu-dev --cluster-name aks-gpu-dev -n pyroscope --node-count 1")


@pytest.mark.parametrize("pool", [
    {"name": "auto", "count": 0, "enableAutoScaling": True, "minCount": 0, "maxCount": 3, "vmSize": "Standard_D4ds_v5",
     "mode": "User", "osType": "Linux"},  # scales up from zero for the pod
    {"name": "soft", "count": 1, "vmSize": "Standard_D4ds_v5", "mode": "User", "osType": "Linux",
     "nodeTaints": ["spot=true:PreferNoSchedule"]},  # only a preference
    {"name": "custom", "count": 1, "vmSize": "Standard_X9_v9", "mode": "User", "osType": "Linux"},  # size not read
])
def test_pools_pyroscope_can_use_pass(plan, pool):
    assert plan(invoke_overrides=pools(pool, GPU)).one(RELEASE)


@pytest.mark.parametrize("taint,items,expected", [
    ("CriticalAddonsOnly=true:NoSchedule", ["CriticalAddonsOnly"], True),
    ("CriticalAddonsOnly=true:NoSchedule", ["CriticalAddonsOnly=false"], False),
    ("sku=gpu:NoSchedule", ["sku:NoExecute"], False),
    ("sku=gpu:NoSchedule", ["sku=gpu:NoSchedule"], True),
    ("dedicated:NoExecute", ["dedicated:NoExecute"], True),
])
def test_tolerations_tolerate_taints_as_kubernetes_does(taint, items, expected):
    """kubernetes ``staging/src/k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint``: effects match or the
    toleration has none; keys match; Exists ignores the value, Equal compares it."""
    assert tolerated(taint, tolerations(items)) is expected
    assert tolerated(taint, [{"operator": "Exists"}])  # an empty key with Exists tolerates everything


def test_a_gpu_pool_is_told_by_its_size_or_its_labels():
    base = dict(mode="User", os_type="Linux", taints=(), nodes=1)
    assert AgentPool("a", "Standard_NC6s_v3", labels={}, **base).gpu
    assert AgentPool("b", "Standard_D4ds_v5", labels={"nvidia.com/gpu.present": "true"}, **base).gpu
    assert not AgentPool("c", "Standard_D4ds_v5", labels={}, **base).gpu


@pytest.mark.parametrize("secret", [True, False], ids=["secret-reference", "plain-reference"])
def test_pools_of_a_cluster_from_a_secret_output_are_refused_with_its_name_masked(secret):
    """The line names the cluster and gives the `az aks nodepool add` for it: [secret] in both when clusterStack's
    outputs are secret (the command still says what to run), the name when they are plain."""
    message, _ = refused_before_anything(pools(SYSTEM, GPU), **cluster_stack(secret))
    assert "Pyroscope can run on none of cluster" in message and shows_the_cluster(message, secret), message
