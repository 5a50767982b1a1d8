"""existing/cluster.py: the cluster's prerequisites, each refused before any resource is registered."""

from __future__ import annotations

import pytest

from offline import canned, program
from stack_config.schema import ConfigError
from tests.support import EXTENSION, RELEASE
from tests.support.plans import cluster_stack, refused_before_anything, shows_the_cluster


def cluster_without(**changes):
    def handler(args, location):
        answer = canned.managed_cluster(args, location)
        answer.update(changes)
        return answer

    return {"azure-native:containerservice:getManagedCluster": handler}


def test_missing_metrics_addon_fails_before_any_resource(plan):
    with pytest.raises(ConfigError) as caught:
        plan(invoke_overrides=cluster_without(azureMonitorProfile={"metrics": {"enabled": False}}))
    message = str(caught.value)
    assert message.startswith("extensionAzureMonitor: cluster 'aks-gpu-dev' has no Azure Monitor metrics add-on")
    assert "az aks update -g rg-aks-gpu-dev -n aks-gpu-dev --enable-azure-monitor-metrics" in message
    assert "\n" not in message


def test_missing_monitor_profile_altogether_is_the_same_error(plan):
    with pytest.raises(ConfigError, match="no Azure Monitor metrics add-on"):
        plan(invoke_overrides=cluster_without(azureMonitorProfile=None))


def test_no_resource_registered_on_prerequisite_failure():
    _, registered = refused_before_anything(cluster_without(azureMonitorProfile=None))
    assert registered == ["pulumi:pulumi:Stack"]


def test_without_azure_monitor_setting_the_addon_is_not_required(plan):
    p = plan(extensionAzureMonitor="false", invoke_overrides=cluster_without(azureMonitorProfile=None))
    assert p.one(EXTENSION).inputs["configurationSettings"]["azureMonitor.enabled"] == "false"


def test_admin_credentials_refused_when_local_accounts_disabled(plan):
    with pytest.raises(ConfigError, match="^kubeconfigCredentials: cluster 'aks-gpu-dev' has local accounts disabled"):
        plan(kubeconfigCredentials="admin", invoke_overrides=cluster_without(disableLocalAccounts=True))


@pytest.mark.parametrize("level", ["ReadOnly", "readonly"])
def test_a_locked_node_resource_group_needs_a_pls_resource_group_before_anything_is_created(level):
    """AKS Automatic and node resource group lockdown (nodeResourceGroupProfile.restrictionLevel ReadOnly): the deny
    assignment on the node resource group would refuse the approval of Grafana's connection after the release, the PLS
    and the endpoint exist. Refused before any resource is registered, in one line naming the way out."""
    locked = cluster_without(nodeResourceGroupProfile={"restrictionLevel": level})
    message, registered = refused_before_anything(locked)
    assert message.startswith("privateLinkServiceResourceGroup: cluster 'aks-gpu-dev' has its node resource group "
                              "'MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2' locked "
                              "(nodeResourceGroupProfile.restrictionLevel "
                              "ReadOnly: AKS Automatic, or node resource group lockdown)")
    assert "set privateLinkServiceResourceGroup to a resource group" in message and "\n" not in message
    assert registered == ["pulumi:pulumi:Stack"]


def test_a_locked_node_resource_group_is_fine_with_a_pls_resource_group(plan):
    p = plan(privateLinkServiceResourceGroup="rg-network",
             invoke_overrides=cluster_without(nodeResourceGroupProfile={"restrictionLevel": "ReadOnly"}))
    # The PLS's annotations are on the stack's own Service; the chart's Service is ClusterIP and carries none.
    service = p.named("pyroscope-private-link")
    assert service.type == "kubernetes:core/v1:Service"
    annotations = service.inputs["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/azure-pls-resource-group"] == "rg-network"
    assert "annotations" not in p.one(RELEASE).inputs["values"]["pyroscope"]["service"]
    for step in ("grafana-private-link-wait-for-pls", "grafana-private-link-approve-connection"):
        assert p.named(step).inputs["environment"]["PLS_RESOURCE_GROUP"] == "rg-network", step


def test_an_unrestricted_or_unset_node_resource_group_needs_nothing(plan):
    for profile in ({"restrictionLevel": "Unrestricted"}, None):
        assert plan(invoke_overrides=cluster_without(nodeResourceGroupProfile=profile)).one(RELEASE)


# --- A network policy engine for Pyroscope's NetworkPolicy ------------------------------------------------------------
def without_engine(policy):
    def handler(args, location):
        answer = canned.managed_cluster(args, location)
        answer["networkProfile"] = {k: v for k, v in answer["networkProfile"].items() if k != "networkPolicy"}
        if policy is not None:
            answer["networkProfile"]["networkPolicy"] = policy
        return answer

    return {"azure-native:containerservice:getManagedCluster": handler}


@pytest.mark.parametrize("policy", [None, "none"])
def test_cluster_without_policy_engine_fails_before_any_resource(policy):
    mocks = program.CannedMocks("eastus2", without_engine(policy))
    monitor = program.RecordingMonitor(mocks)
    original = program.RecordingMonitor
    try:
        program.RecordingMonitor = lambda _mocks: monitor
        with pytest.raises(ConfigError) as caught:
            program.run("dev", {}, without_engine(policy))
    finally:
        program.RecordingMonitor = original
    assert [r.type for r in monitor.recorded] == ["pulumi:pulumi:Stack"]
    message = str(caught.value)
    assert caught.value.key == "pyroscopeNetworkPolicy" and "\n" not in message
    assert message.startswith("pyroscopeNetworkPolicy: cluster 'aks-gpu-dev' has no network policy engine "
                              f"(networkProfile.networkPolicy is {policy or 'not set'})")
    assert "az aks update -g rg-aks-gpu-dev -n aks-gpu-dev --network-policy azure` (or calico" in message
    assert "set pyroscopeNetworkPolicy to false" in message


@pytest.mark.parametrize("engine", ["azure", "calico", "cilium", "Calico"])
def test_every_policy_engine_passes(plan, engine):
    assert plan(invoke_overrides=without_engine(engine)).named("pyroscope-network-policy")


def test_opt_out_needs_no_engine(plan):
    p = plan(pyroscopeNetworkPolicy="false", invoke_overrides=without_engine(None))
    assert not [r for r in p.resources if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy"]


def managed_network():
    def handler(args, location):
        answer = canned.managed_cluster(args, location)
        answer["agentPoolProfiles"] = [{k: v for k, v in pool.items() if k != "vnetSubnetID"}
                                       for pool in answer["agentPoolProfiles"]]
        return answer

    return {"azure-native:containerservice:getManagedCluster": handler}


def test_managed_virtual_network_needs_no_ranges(plan):
    """An AKS-managed virtual network (agent pools without vnetSubnetID) used to need pyroscopeAllowedCidrs, since the
    PLS's subnet could not be named; the NAT IPs are now read from the PLS itself, so it gets the same two policies."""
    from offline import canned as canned_answers

    p = plan(invoke_overrides=managed_network())
    assert p.named("pyroscope-network-policy").inputs["spec"]["ingress"][1]["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "pyroscope",
                                         "app.kubernetes.io/name": "pyroscope"}}}]
    nat = p.named("grafana-private-link-nat-network-policy").inputs["spec"]["ingress"][0]["from"]
    assert nat == [{"ipBlock": {"cidr": f"{canned_answers.PLS_NAT_ADDRESS}/32"}}]


# --- OIDC issuer and workload identity for the microservices mode -----------------------------------------------------
def without_workload_identity(oidc: bool, workload_identity: bool):
    def handler(args, location):
        answer = canned.managed_cluster(args, location)
        if not oidc:
            answer["oidcIssuerProfile"] = {"enabled": False}
        if not workload_identity:
            answer.pop("securityProfile")
        return answer

    return {"azure-native:containerservice:getManagedCluster": handler}


@pytest.mark.parametrize("oidc,workload_identity", [(False, True), (True, False), (False, False)])
def test_microservices_needs_oidc_issuer_and_workload_identity_before_any_resource(oidc, workload_identity):
    overrides = without_workload_identity(oidc, workload_identity)
    mocks = program.CannedMocks("eastus2", overrides)
    monitor = program.RecordingMonitor(mocks)
    original = program.RecordingMonitor
    try:
        program.RecordingMonitor = lambda _mocks: monitor
        with pytest.raises(ConfigError) as caught:
            program.run("dev", {"pyroscopeMode": "microservices"}, overrides)
    finally:
        program.RecordingMonitor = original
    assert [r.type for r in monitor.recorded] == ["pulumi:pulumi:Stack"]
    message = str(caught.value)
    assert caught.value.key == "pyroscopeMode" and "\n" not in message
    assert ("the OIDC issuer" in message) == (not oidc)
    assert ("workload identity (securityProfile" in message) == (not workload_identity)
    assert ("`az aks update -g rg-aks-gpu-dev -n aks-gpu-dev --enable-oidc-issuer --enable-workload-identity`"
            in message)
    assert "set pyroscopeMode to single-binary" in message


def test_single_binary_needs_neither(plan):
    """The precheck is the microservices mode's: a single-binary stack on a cluster without them plans as before."""
    assert plan(invoke_overrides=without_workload_identity(False, False)).one(RELEASE)


SECRECY = pytest.mark.parametrize("secret", [True, False], ids=["secret-reference", "plain-reference"])


@SECRECY
def test_a_refusal_shows_a_cluster_from_a_secret_output_as_secret(secret):
    """The cluster's name and resource group from secret outputs of clusterStack: pulumi prints a refusal's line
    as it is (the language host logs a RunError's text) and the engine masks only the stack's own secret config, so
    the line says [secret] where they were; from plain outputs it names them, as users need."""
    message, _ = refused_before_anything(cluster_without(azureMonitorProfile=None), **cluster_stack(secret))
    assert message.startswith("extensionAzureMonitor: cluster ") and shows_the_cluster(message, secret), message


def cluster_not_found(args, location):
    """getManagedCluster of a cluster ARM does not hold: the invoke fails with ARM's ResourceNotFound."""
    raise Exception(  # what the SDK raises for a failed invoke: a plain Exception with the provider's text
        f"invoke of azure-native:containerservice:getManagedCluster failed: Status=404 Code=\"ResourceNotFound\" "
        f"Message=\"The Resource 'Microsoft.ContainerService/managedClusters/{args['resourceName']}' under resource "
        f"group '{args['resourceGroupName']}' was not found.\"")


@SECRECY
def test_a_cluster_that_cannot_be_read_is_refused_in_one_line_with_a_secret_name_masked(secret):
    """A cluster ARM cannot find (a wrong name or group, another subscription): the failed invoke was printed as a
    Python traceback whose text names the cluster and its group, secret or not. Now one line on clusterName."""
    message, registered = refused_before_anything({"azure-native:containerservice:getManagedCluster":
                                                   cluster_not_found}, **cluster_stack(secret))
    assert message.startswith("clusterName: cluster ") and "ResourceNotFound" in message and "\n" not in message
    assert shows_the_cluster(message, secret), message
    assert "pulumi:pulumi:Stack" in registered and not [t for t in registered if not t.startswith("pulumi:pulumi:")]
