"""The existing cluster: prerequisite checks, credentials, and the explicit Kubernetes provider."""

from __future__ import annotations

import base64

import pytest
import yaml

from components import cluster
from components.cluster import kubelogin_kubeconfig
from components.config import ConfigError
from offline import canned
from tests.support import EXTENSION, K8S_PROVIDER, RELEASE
from offline import program


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
    mocks = program.CannedMocks("eastus2", cluster_without(azureMonitorProfile=None))
    monitor = program.RecordingMonitor(mocks)
    original = program.RecordingMonitor
    try:
        program.RecordingMonitor = lambda _mocks: monitor  # capture the run's monitor
        with pytest.raises(ConfigError):
            program.run("dev", {}, cluster_without(azureMonitorProfile=None))
    finally:
        program.RecordingMonitor = original
    assert [r.type for r in monitor.recorded] == ["pulumi:pulumi:Stack"]


def test_without_azure_monitor_setting_the_addon_is_not_required(plan):
    p = plan(extensionAzureMonitor="false", invoke_overrides=cluster_without(azureMonitorProfile=None))
    assert p.one(EXTENSION).inputs["configurationSettings"]["azureMonitor.enabled"] == "false"


def test_admin_credentials_refused_when_local_accounts_disabled(plan):
    with pytest.raises(ConfigError, match="^kubeconfigCredentials: cluster 'aks-gpu-dev' has local accounts disabled"):
        plan(kubeconfigCredentials="admin", invoke_overrides=cluster_without(disableLocalAccounts=True))


def test_user_credentials_by_default_exec_format(plan):
    p = plan()
    tokens = [i.token for i in p.invokes]
    assert "azure-native:containerservice:listManagedClusterUserCredentials" in tokens
    assert "azure-native:containerservice:listManagedClusterAdminCredentials" not in tokens
    user = next(i for i in p.invokes if i.token.endswith("listManagedClusterUserCredentials"))
    assert user.args == {"resourceGroupName": "rg-aks-gpu-dev", "resourceName": "aks-gpu-dev", "format": "exec"}


def test_admin_credentials_when_configured(plan):
    tokens = [i.token for i in plan(kubeconfigCredentials="admin").invokes]
    assert "azure-native:containerservice:listManagedClusterAdminCredentials" in tokens
    assert "azure-native:containerservice:listManagedClusterUserCredentials" not in tokens


class KubeconfigSpy(program.CannedMocks):
    """Keeps the provider's deserialised kubeconfig (the mock layer unwraps secrets)."""

    seen: dict = {}

    def new_resource(self, args):
        if args.typ == K8S_PROVIDER:
            KubeconfigSpy.seen = dict(args.inputs)
        return super().new_resource(args)


def run_with_spy(monkeypatch, **overrides):
    """(plan, kubeconfig text) where the text was sent to the engine wrapped as a secret."""
    monkeypatch.setattr(program, "CannedMocks", KubeconfigSpy)
    plan = program.run("dev", overrides)
    wire = KubeconfigSpy.seen["kubeconfig"]
    assert isinstance(wire, dict) and wire.get(program._SIG) == program._SECRET_SIG, wire
    assert isinstance(wire["value"], str), "kubeconfig must be known during preview"
    return plan, wire["value"]


def test_kubeconfig_is_secret_known_in_preview_and_converted_to_azurecli(monkeypatch):
    plan, kubeconfig = run_with_spy(monkeypatch)
    provider = plan.one(K8S_PROVIDER)
    assert provider.inputs == {"kubeconfig": "[secret]"}
    document = yaml.safe_load(kubeconfig)  # decoded from base64, a real kubeconfig, known at preview
    plugin = document["users"][0]["user"]["exec"]
    assert plugin["command"] == "kubelogin"
    # What `kubelogin convert-kubeconfig -l azurecli` writes (Azure/kubelogin v0.2.19 converter): no --tenant-id.
    assert plugin["args"] == ["get-token", "--login", "azurecli", "--server-id", canned.AKS_SERVER_ID]


def test_admin_kubeconfig_is_secret_and_untouched(monkeypatch):
    plan, kubeconfig = run_with_spy(monkeypatch, kubeconfigCredentials="admin")
    assert plan.one(K8S_PROVIDER).inputs == {"kubeconfig": "[secret]"}
    expected = base64.b64decode(
        canned.admin_credentials({"resourceGroupName": "rg-aks-gpu-dev", "resourceName": "aks-gpu-dev"}, "eastus2")[
            "kubeconfigs"][0]["value"]).decode()
    assert kubeconfig == expected


def test_no_kubeconfig_material_anywhere_in_the_plan(plan):
    for creds in ("user", "admin"):
        found = plan(kubeconfigCredentials=creds).to_json()
        # config key names are no secret (kubeloginMode); their values and everything else are checked
        text = str({**found, "config": sorted(found["config"].values())})
        assert "BEGIN" not in text and "client-key-data" not in text and "get-token" not in text


def test_every_kubernetes_resource_uses_the_explicit_provider(plan):
    p = plan()
    provider = p.one(K8S_PROVIDER)
    kube = [r for r in p.resources if r.custom and r.type.startswith("kubernetes:")]
    assert kube, "expected Kubernetes resources"
    for resource in kube:
        assert resource.provider == provider.urn, resource.urn
    assert p.one(RELEASE).provider == provider.urn


@pytest.mark.parametrize("mode", ["workloadidentity", "msi", "azd"])
def test_kubelogin_modes_rewrite_login_and_drop_the_cli_client(mode):
    source = base64.b64decode(canned.user_credentials(
        {"resourceGroupName": "rg", "resourceName": "c"}, "eastus2")["kubeconfigs"][0]["value"]).decode()
    args = yaml.safe_load(kubelogin_kubeconfig(source, mode))["users"][0]["user"]["exec"]["args"]
    assert args.count("--login") == 1 and args[-1] == mode
    assert "--client-id" not in args and canned.AKS_CLIENT_ID not in args
    assert "--tenant-id" in args and "--environment" in args


#: Azure/kubelogin v0.2.19 (a9b10fbf) pkg/internal/converter/convert_test.go, the exec-format cases converting to
#: azurecli without override flags: (input args, expected args). The upstream test compares the set of arguments and
#: their count; the order here is the one Convert appends them in (--login, --server-id, --cache-dir).
SERVER, CLIENT, TENANT, ENV, CACHE = "serverID", "clientID", "tenantID", "AzurePublicCloud", "/tmp/foo"
DEVICECODE = ["get-token", "--server-id", SERVER, "--client-id", CLIENT, "--tenant-id", TENANT, "--environment", ENV,
              "--login", "devicecode"]
AZURECLI_CASES = {
    "convert from devicecode to azurecli": (DEVICECODE, ["get-token", "--login", "azurecli", "--server-id", SERVER]),
    "convert from devicecode to azurecli with --cache-dir": (
        DEVICECODE + ["--cache-dir", CACHE], ["get-token", "--login", "azurecli", "--server-id", SERVER, "--cache-dir", CACHE]),
    "already having --token-cache-dir, convert from devicecode to azurecli": (
        ["get-token", "--server-id", SERVER, "--client-id", CLIENT, "--tenant-id", TENANT, "--token-cache-dir", CACHE,
         "--environment", ENV, "--login", "devicecode"],
        ["get-token", "--login", "azurecli", "--server-id", SERVER, "--cache-dir", CACHE]),
    "convert from azurecli to azurecli": (
        ["get-token", "--environment", ENV, "--server-id", SERVER, "--client-id", CLIENT, "--tenant-id", TENANT,
         "--login", "azurecli"],
        ["get-token", "--login", "azurecli", "--server-id", SERVER]),
}


@pytest.mark.parametrize("case", sorted(AZURECLI_CASES))
def test_azurecli_args_are_what_kubelogin_convert_kubeconfig_writes(case):
    source, expected = AZURECLI_CASES[case]
    kubeconfig = yaml.safe_dump({"users": [{"name": "u", "user": {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubelogin", "args": source}}}]})
    assert yaml.safe_load(kubelogin_kubeconfig(kubeconfig, "azurecli"))["users"][0]["user"]["exec"]["args"] == expected


def _converted(user: dict) -> dict:
    kubeconfig = yaml.safe_dump({"users": [{"name": "u", "user": user}]})
    return yaml.safe_load(kubelogin_kubeconfig(kubeconfig, "azurecli"))["users"][0]["user"]


def test_azurecli_rewrites_the_whole_exec_plugin_as_the_converter_does():
    """Convert builds a new ExecConfig (Azure/kubelogin v0.2.19 convert.go; convert_test.go validate): command
    kubelogin, apiVersion client.authentication.k8s.io/v1beta1, kubelogin's install hint; env and anything else of the
    old plugin dropped (only --azure-config-dir sets an env)."""
    user = _converted({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/opt/bin/kubelogin",
                                "args": DEVICECODE, "env": [{"name": "AZURE_CONFIG_DIR", "value": "/x"}],
                                "provideClusterInfo": False}})
    assert user == {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubelogin",
                             "args": ["get-token", "--login", "azurecli", "--server-id", SERVER],
                             "installHint": cluster.KUBELOGIN_INSTALL_HINT}}


def test_azurecli_keeps_an_existing_install_hint():
    """convert_test.go "with exec format kubeconfig, convert from azurecli to azurecli with existing install hint"."""
    user = _converted({"exec": {"command": "kubelogin", "args": AZURECLI_CASES["convert from azurecli to azurecli"][0],
                                "installHint": "Preserve this install hint"}})
    assert user["exec"]["installHint"] == "Preserve this install hint"
    assert user["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id", SERVER]


@pytest.mark.parametrize("command", ["kubelogin.exe", "C:\\tools\\KubeLogin.EXE", "/usr/local/bin/kubelogin"])
def test_a_kubelogin_exec_plugin_is_one_whose_command_contains_kubelogin(command):
    """isExecUsingkubelogin: strings.Contains(strings.ToLower(cmd), "kubelogin"), not a suffix."""
    assert _converted({"exec": {"command": command, "args": DEVICECODE}})["exec"]["args"][:3] == ["get-token", "--login", "azurecli"]


def test_azurecli_converts_a_legacy_azure_auth_provider():
    """convert_test.go "using legacy azure auth to convert to azurecli": the server id from apiserver-id, the auth
    provider removed (authInfo.AuthProvider = nil)."""
    user = _converted({"auth-provider": {"name": "azure", "config": {
        "environment": ENV, "apiserver-id": SERVER, "client-id": CLIENT, "tenant-id": TENANT, "config-mode": "1"}}})
    assert user == {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubelogin",
                             "args": ["get-token", "--login", "azurecli", "--server-id", SERVER],
                             "installHint": cluster.KUBELOGIN_INSTALL_HINT}}


def test_a_non_azure_exec_plugin_is_left_alone():
    """convert_test.go "non azure kubeconfig in exec format with install hint"."""
    plugin = {"command": "foo", "args": ["--bar"], "installHint": "foo install hint"}
    assert _converted({"exec": plugin}) == {"exec": plugin}


def test_azurecli_drops_the_tenant_of_the_aks_kubeconfig():
    """`az` signed in with a managed identity refuses --tenant, so kubelogin's own converter drops --tenant-id in
    azurecli mode (convert.go: "tenantID from the input kubeconfig will be disregarded")."""
    source = base64.b64decode(canned.user_credentials(
        {"resourceGroupName": "rg", "resourceName": "c"}, "eastus2")["kubeconfigs"][0]["value"]).decode()
    args = yaml.safe_load(kubelogin_kubeconfig(source, "azurecli"))["users"][0]["user"]["exec"]["args"]
    assert args == ["get-token", "--login", "azurecli", "--server-id", canned.AKS_SERVER_ID]
    assert canned.TENANT_ID not in args and "--environment" not in args


def test_kubelogin_devicecode_and_non_exec_kubeconfigs_unchanged():
    source = base64.b64decode(canned.user_credentials(
        {"resourceGroupName": "rg", "resourceName": "c"}, "eastus2")["kubeconfigs"][0]["value"]).decode()
    assert kubelogin_kubeconfig(source, "devicecode") == source
    cert = "apiVersion: v1\nusers:\n- name: u\n  user:\n    client-certificate-data: abc\n"
    assert kubelogin_kubeconfig(cert, "azurecli") == cert


def test_delete_unreachable_is_set_on_the_provider_only_when_asked(plan, monkeypatch):
    """kubernetesDeleteUnreachable true sets the provider's deleteUnreachable (pulumi-kubernetes provider.go: the
    provider input wins over PULUMI_K8S_DELETE_UNREACHABLE). false sends nothing, so the variable, the way out for a
    stack that never recorded the option, still works when the engine starts the provider for a destroy."""
    monkeypatch.delenv("PULUMI_K8S_DELETE_UNREACHABLE", raising=False)
    assert plan(kubernetesDeleteUnreachable="true").one(K8S_PROVIDER).inputs == {"deleteUnreachable": "true", "kubeconfig": "[secret]"}
    assert plan().one(K8S_PROVIDER).inputs == {"kubeconfig": "[secret]"}
    assert plan(kubernetesDeleteUnreachable="false").one(K8S_PROVIDER).inputs == {"kubeconfig": "[secret]"}


@pytest.mark.parametrize("level", ["ReadOnly", "readonly"])
def test_a_locked_node_resource_group_needs_a_pls_resource_group_before_anything_is_created(level):
    """AKS Automatic and node resource group lockdown (nodeResourceGroupProfile.restrictionLevel ReadOnly): the deny
    assignment on the node resource group would refuse the approval of Grafana's connection after the release, the PLS
    and the endpoint exist. Refused before any resource is registered, in one line naming the way out."""
    locked = cluster_without(nodeResourceGroupProfile={"restrictionLevel": level})
    mocks = program.CannedMocks("eastus2", locked)
    monitor = program.RecordingMonitor(mocks)
    original = program.RecordingMonitor
    try:
        program.RecordingMonitor = lambda _mocks: monitor
        with pytest.raises(ConfigError) as caught:
            program.run("dev", {}, locked)
    finally:
        program.RecordingMonitor = original
    message = str(caught.value)
    assert message.startswith("privateLinkServiceResourceGroup: cluster 'aks-gpu-dev' has its node resource group "
                              "'MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2' locked (nodeResourceGroupProfile.restrictionLevel "
                              "ReadOnly: AKS Automatic, or node resource group lockdown)")
    assert "set privateLinkServiceResourceGroup to a resource group" in message and "\n" not in message
    assert [r.type for r in monitor.recorded] == ["pulumi:pulumi:Stack"]


def test_a_locked_node_resource_group_is_fine_with_a_pls_resource_group(plan):
    p = plan(privateLinkServiceResourceGroup="rg-network",
             invoke_overrides=cluster_without(nodeResourceGroupProfile={"restrictionLevel": "ReadOnly"}))
    annotations = p.one(RELEASE).inputs["values"]["pyroscope"]["service"]["annotations"]
    assert annotations["service.beta.kubernetes.io/azure-pls-resource-group"] == "rg-network"
    assert not any(r.name == "grafana-private-link-approve-connection" and
                   r.inputs["environment"]["PLS_RESOURCE_GROUP"] != "rg-network" for r in p.resources)


def test_an_unrestricted_or_unset_node_resource_group_needs_nothing(plan):
    for profile in ({"restrictionLevel": "Unrestricted"}, None):
        assert plan(invoke_overrides=cluster_without(nodeResourceGroupProfile=profile)).one(RELEASE)


# --- A network policy engine for Pyroscope's NetworkPolicy ---------------------------------------------------------------
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
        {"podSelector": {"matchLabels": {"app.kubernetes.io/instance": "pyroscope", "app.kubernetes.io/name": "pyroscope"}}}]
    nat = p.named("grafana-private-link-nat-network-policy").inputs["spec"]["ingress"][0]["from"]
    assert nat == [{"ipBlock": {"cidr": f"{canned_answers.PLS_NAT_ADDRESS}/32"}}]


@pytest.mark.parametrize("bad", ["10.0.0.1/8", "10.0.0.0", "fd00::/300", "any"])
def test_allowed_cidrs_must_be_networks(plan, bad):
    with pytest.raises(ConfigError, match="^pyroscopeAllowedCidrs: expected address ranges in CIDR notation"):
        plan(paths={"pyroscopeAllowedCidrs[0]": bad})


@pytest.mark.parametrize("everything", ["0.0.0.0/0", "::/0"])
def test_allowed_cidrs_refuse_a_range_that_admits_every_address(plan, everything):
    """0.0.0.0/0 passed the CIDR check and made the NetworkPolicy admit every source (the failing input of a review)."""
    with pytest.raises(ConfigError, match="^pyroscopeAllowedCidrs: '.*' admits every address"):
        plan(paths={"pyroscopeAllowedCidrs[0]": everything})


# --- OIDC issuer and workload identity for the microservices mode ------------------------------------------------------
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
    assert ("the OIDC issuer" in message) == (not oidc) and ("workload identity (securityProfile" in message) == (not workload_identity)
    assert ("`az aks update -g rg-aks-gpu-dev -n aks-gpu-dev --enable-oidc-issuer --enable-workload-identity`"
            in message)
    assert "set pyroscopeMode to single-binary" in message


def test_single_binary_needs_neither(plan):
    """The precheck is the microservices mode's: a single-binary stack on a cluster without them plans as before."""
    assert plan(invoke_overrides=without_workload_identity(False, False)).one(RELEASE)


def test_microservices_federates_the_cluster_issuer(plan):
    p = plan(pyroscopeMode="microservices")
    issuer = canned.managed_cluster({"resourceGroupName": "rg-aks-gpu-dev", "resourceName": "aks-gpu-dev"},
                                    "eastus2")["oidcIssuerProfile"]["issuerURL"]
    credential = p.one("azure-native:managedidentity:FederatedIdentityCredential").inputs
    assert credential["issuer"] == issuer and credential["audiences"] == ["api://AzureADTokenExchange"]
