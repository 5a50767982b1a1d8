"""examples/consumer: its config checked before anything is registered (one line naming the key), every Kubernetes
resource on the explicit provider made from the referenced stack's cluster (never the current kubeconfig's), the team
namespace made if missing and kept on destroy; and cluster_access.py's kubelogin conversion, a copy so the example runs
from its own folder, equal to the project's (existing/kubeconfig.py). Run offline: tests/support/consumer.py."""

from __future__ import annotations

import base64
import gc
import warnings

import pulumi
import pytest
import yaml

from existing.kubeconfig import kubelogin_kubeconfig
from offline import canned
from offline.program import run
from tests.support.consumer import CREDENTIALS, ConsumerMocks, run_consumer

#: A cluster in another subscription and group than the dev stack's: whatever reaches it came from the outputs.
SUBSCRIPTION = "0c7d9e4b-51a2-4f86-9b3e-2d6a8c1f7e05"
CLUSTER_ID = (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-team-gpu"
              "/providers/Microsoft.ContainerService/managedClusters/aks-team-gpu")


@pytest.fixture(scope="module")
def outputs() -> dict:
    """The outputs of the dev stack (the main program run offline), its cluster moved to CLUSTER_ID."""
    return {**run("dev").outputs, "clusterId": CLUSTER_ID}


def user_kubeconfig(resource_group: str, name: str) -> str:
    """What AKS answers listClusterUserCredential with for that cluster (canned), decoded."""
    answer = canned.user_credentials({"resourceGroupName": resource_group, "resourceName": name}, "eastus2")
    return base64.b64decode(answer["kubeconfigs"][0]["value"]).decode()


def test_every_kubernetes_resource_uses_the_provider_made_from_the_referenced_cluster(outputs):
    """The example writes to the cluster the observability stack reports (its ``clusterId``: subscription, group,
    name), through an explicit provider whose kubeconfig is that cluster's user kubeconfig in kubelogin's azurecli
    mode, kept secret; no Kubernetes resource is left to the default provider, which follows the current kubeconfig."""
    mocks = run_consumer(outputs)
    kubernetes = [r for r in mocks.monitor.recorded if r.type.startswith("kubernetes:")]
    assert {r.type for r in kubernetes} == {"kubernetes:core/v1:Namespace", "kubernetes:core/v1:ConfigMap"}
    providers = {r.urn: r for r in mocks.registered("pulumi:providers:kubernetes")}
    assert providers and all(r.provider in providers for r in kubernetes), [(r.type, r.provider) for r in kubernetes]
    assert not [urn for urn in mocks.monitor.default_providers if "::pulumi:providers:kubernetes::" in urn]

    [lookup] = [c for c in mocks.calls if c.token == CREDENTIALS]
    assert {k: lookup.args.get(k) for k in ("resourceGroupName", "resourceName", "format")} == {
        "resourceGroupName": "rg-team-gpu", "resourceName": "aks-team-gpu", "format": "exec"}
    [azure] = [r for r in mocks.registered("pulumi:providers:azure-native") if lookup.provider.startswith(r.urn + "::")]
    assert mocks.inputs[(azure.type, azure.name)]["subscriptionId"] == SUBSCRIPTION

    expected = kubelogin_kubeconfig(user_kubeconfig("rg-team-gpu", "aks-team-gpu"), "azurecli")
    assert yaml.safe_load(expected)["clusters"][0]["cluster"]["server"].startswith("https://aks-team-gpu-dns-")
    for provider in providers.values():
        assert mocks.inputs[(provider.type, provider.name)]["kubeconfig"] == expected, provider.name
        assert provider.inputs["kubeconfig"] == "[secret]", provider.name


def test_the_team_namespace_is_made_if_missing_and_kept_on_destroy(outputs):
    """``teamNamespace`` is a Namespace the example owns on a provider that adopts one already there
    (``upsertExistingObjects``), retained on destroy (it may hold the team's workloads); the ConfigMap goes into it,
    after it, on a provider that adopts nothing (a ConfigMap of that name made by someone else is refused)."""
    mocks = run_consumer(outputs, {"teamNamespace": "vision-team"})
    [namespace] = mocks.registered("kubernetes:core/v1:Namespace")
    [links] = mocks.registered("kubernetes:core/v1:ConfigMap")
    assert namespace.inputs["metadata"]["name"] == "vision-team"
    assert namespace.options["retainOnDelete"] is True
    assert links.inputs["metadata"]["namespace"] == "vision-team"
    assert namespace.urn in links.dependencies
    providers = {r.urn: mocks.inputs[(r.type, r.name)] for r in mocks.registered("pulumi:providers:kubernetes")}
    assert providers[namespace.provider].get("upsertExistingObjects") == "true"  # provider inputs go as JSON text
    assert "upsertExistingObjects" not in providers[links.provider]
    assert links.options["retainOnDelete"] is False


@pytest.mark.parametrize("config, key", [
    ({"observabilityStack": None}, "observabilityStack"),
    ({"observabilityStack": ""}, "observabilityStack"),
    ({"observabilityStack": "dev"}, "observabilityStack"),
    ({"observabilityStack": "acme/dev"}, "observabilityStack"),
    ({"observabilityStack": "acme/platform/dev"}, "observabilityStack"),
    ({"teamNamespace": "ML_Inference"}, "teamNamespace"),
    ({"teamNamespace": ""}, "teamNamespace"),
    ({"teamNamespace": "x" * 64}, "teamNamespace"),
    ({"kubeloginMode": "interactive"}, "kubeloginMode"),
])
def test_a_bad_or_missing_config_key_fails_in_one_line_before_anything_is_registered(outputs, config, key):
    """Each key the README lists, missing or malformed: `pulumi up` prints one line naming the key and what it
    expects (a RunError, printed without a traceback), and nothing is registered, the stack reference included."""
    mocks = ConsumerMocks(outputs)
    with pytest.raises(pulumi.RunError) as raised:
        run_consumer(outputs, config, mocks)
    message = str(raised.value)
    assert message.startswith(f"{key}: ") and "\n" not in message and "expected" in message, message
    assert mocks.program_resources() == []


# A program that fails inside an output's apply leaves unawaited Output coroutines behind (as the missing-output test
# of tests/stack/test_outputs.py does); they are collected when this test ends. Silence exactly that here.
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("cluster_id", ["aks-team-gpu", "/subscriptions/x/resourceGroups/rg/providers/"
                                        "Microsoft.Compute/virtualMachines/aks-team-gpu"])
def test_a_cluster_id_that_is_not_an_aks_clusters_fails_naming_the_output(outputs, cluster_id):
    """The referenced stack's ``clusterId`` is what the example reaches the cluster by: one that is not an AKS
    cluster's ARM id fails in one line naming it, and no Kubernetes resource is created."""
    mocks = ConsumerMocks({**outputs, "clusterId": cluster_id})
    message = ""
    try:
        run_consumer(mocks.outputs, None, mocks)
    except Exception as error:  # noqa: BLE001 - the example's own failure is the point
        message = str(error)
    assert "clusterId" in message and "\n" not in message.strip(), message
    assert not [c for c in mocks.calls if c.token == CREDENTIALS]
    assert not [t for t in mocks.created if t.startswith("kubernetes:core/")]
    with warnings.catch_warnings():  # collect them now, while this test's filters apply
        warnings.simplefilter("ignore", RuntimeWarning)
        pulumi.runtime.settings.SETTINGS.rpc_manager.clear()
        pulumi.runtime.settings.SETTINGS.outputs.clear()
        gc.collect()


#: The login modes the project takes (``kubeloginMode``, Pulumi.yaml), the example's too.
MODES = ("azurecli", "workloadidentity", "msi", "azd", "devicecode")
LEGACY_AZURE = """apiVersion: v1
kind: Config
users:
- name: clusterUser_rg_aks
  user:
    auth-provider:
      name: azure
      config: {apiserver-id: 6dae42f8-4368-4678-94ff-3960e28e3630, client-id: 80faf920, tenant-id: 72f988bf}
"""
KUBELOGIN_SPN = """apiVersion: v1
kind: Config
users:
- name: ci
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: /usr/local/bin/kubelogin
      args: [get-token, -l, spn, --server-id, 6dae42f8, --client-id, abc, --tenant-id, t, --token-cache-dir, /tmp/k]
      env: [{name: AAD_SERVICE_PRINCIPAL_CLIENT_ID, value: abc}]
      installHint: install kubelogin
"""
LOCAL_ACCOUNT = """apiVersion: v1
kind: Config
users:
- name: clusterAdmin_rg_aks
  user: {token: 0123456789abcdef}
"""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kubeconfig", [user_kubeconfig("rg-aks-gpu-dev", "aks-gpu-dev"), LEGACY_AZURE, KUBELOGIN_SPN,
                                        LOCAL_ACCOUNT], ids=["aks-devicecode", "legacy-azure", "kubelogin-spn",
                                                             "local-account"])
def test_the_examples_kubelogin_conversion_is_the_projects(mode, kubeconfig):
    """cluster_access.py carries its own copy of the kubelogin conversion (the example runs from its own folder with
    its own requirements); it writes what existing/kubeconfig.py writes for every login mode the project takes."""
    from examples.consumer import cluster_access

    assert cluster_access.LOGIN_MODES == MODES
    assert cluster_access.kubelogin_kubeconfig(kubeconfig, mode) == kubelogin_kubeconfig(kubeconfig, mode)
