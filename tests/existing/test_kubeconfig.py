"""existing/kubeconfig.py: the kubeconfig (secret, known in preview, kubelogin conversion, looked up once) and the two
explicit providers (aks, and aks-claims for the PersistentVolumeClaims)."""

from __future__ import annotations

import base64

import pytest
import yaml

from existing import kubeconfig
from existing.kubeconfig import kubelogin_kubeconfig
from offline import canned, program
from offline import wire as wire_format
from tests.support import K8S_PROVIDER, RELEASE


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


#: The explicit Kubernetes providers: ``aks`` for everything, ``aks-claims`` (upsertExistingObjects, with
#: pyroscopePersistence only) for Pyroscope's PersistentVolumeClaims (__main__.py, components/pyroscope.py).
PROVIDERS = ("aks", "aks-claims")
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"


def providers(p) -> dict:
    """The plan's Kubernetes providers by name."""
    return {r.name: r for r in p.by_type(K8S_PROVIDER)}


class KubeconfigSpy(program.CannedMocks):
    """Keeps each provider's inputs as sent to the engine, by provider name (secrets still wrapped)."""

    seen: dict = {}

    def new_resource(self, args):
        if args.typ == K8S_PROVIDER:
            KubeconfigSpy.seen[args.name] = dict(args.inputs)
        return super().new_resource(args)


def run_with_spy(monkeypatch, **overrides):
    """(plan, kubeconfig text) where every provider was sent the same text, wrapped as a secret."""
    monkeypatch.setattr(program, "CannedMocks", KubeconfigSpy)
    monkeypatch.setattr(KubeconfigSpy, "seen", {})
    plan = program.run("dev", overrides)
    assert sorted(KubeconfigSpy.seen) == sorted(providers(plan)) == list(PROVIDERS)
    texts = set()
    for name in PROVIDERS:
        wire = KubeconfigSpy.seen[name]["kubeconfig"]
        assert isinstance(wire, dict) and wire.get(wire_format.SIG) == wire_format.SECRET_SIG, (name, wire)
        assert isinstance(wire["value"], str), f"{name}: kubeconfig must be known during preview"
        texts.add(wire["value"])
    assert len(texts) == 1, "both providers get the one kubeconfig"
    return plan, texts.pop()


def assert_provider_inputs(p, delete_unreachable: bool = False) -> None:
    """Both providers' inputs as the plan shows them: the kubeconfig a secret, upsertExistingObjects on aks-claims
    only, deleteUnreachable on both or on neither."""
    extra = {"deleteUnreachable": "true"} if delete_unreachable else {}
    found = providers(p)
    assert sorted(found) == list(PROVIDERS)
    assert found["aks"].inputs == {"kubeconfig": "[secret]", **extra}
    assert found["aks-claims"].inputs == {"kubeconfig": "[secret]", "upsertExistingObjects": "true", **extra}


def test_kubeconfig_is_secret_known_in_preview_and_converted_to_azurecli(monkeypatch):
    plan, kubeconfig = run_with_spy(monkeypatch)
    assert_provider_inputs(plan)
    document = yaml.safe_load(kubeconfig)  # decoded from base64, a real kubeconfig, known at preview
    plugin = document["users"][0]["user"]["exec"]
    assert plugin["command"] == "kubelogin"
    # What `kubelogin convert-kubeconfig -l azurecli` writes (Azure/kubelogin v0.2.19 converter): no --tenant-id.
    assert plugin["args"] == ["get-token", "--login", "azurecli", "--server-id", canned.AKS_SERVER_ID]


def test_admin_kubeconfig_is_secret_and_untouched(monkeypatch):
    plan, kubeconfig = run_with_spy(monkeypatch, kubeconfigCredentials="admin")
    assert_provider_inputs(plan)
    expected = base64.b64decode(
        canned.admin_credentials({"resourceGroupName": "rg-aks-gpu-dev", "resourceName": "aks-gpu-dev"}, "eastus2")[
            "kubeconfigs"][0]["value"]).decode()
    assert kubeconfig == expected


@pytest.mark.parametrize("creds,token", [("user", "listManagedClusterUserCredentials"),
                                         ("admin", "listManagedClusterAdminCredentials")])
def test_the_kubeconfig_is_looked_up_once_for_both_providers(plan, creds, token):
    p = plan(kubeconfigCredentials=creds)
    assert len(providers(p)) == 2
    assert [i.token for i in p.invokes if "ManagedClusterUserCredentials" in i.token
            or "ManagedClusterAdminCredentials" in i.token] == [f"azure-native:containerservice:{token}"]


def test_no_kubeconfig_material_anywhere_in_the_plan(plan):
    for creds in ("user", "admin"):
        found = plan(kubeconfigCredentials=creds).to_json()
        # config key names are no secret (kubeloginMode); their values and everything else are checked
        text = str({**found, "config": sorted(found["config"].values())})
        assert "BEGIN" not in text and "client-key-data" not in text and "get-token" not in text


@pytest.mark.parametrize("mode,claims", [
    ("single-binary", ["pyroscope-data-0"]),
    ("microservices", [f"pyroscope-ingester-data-{i}" for i in range(3)]),
])
def test_every_kubernetes_resource_uses_the_explicit_provider(plan, mode, claims):
    """The claims on aks-claims (which adopts those a StatefulSet made), everything else on aks."""
    p = plan(pyroscopeMode=mode)
    found = providers(p)
    assert sorted(found) == list(PROVIDERS)
    kube = [r for r in p.resources if r.custom and r.type.startswith("kubernetes:")]
    assert kube, "expected Kubernetes resources"
    on_claims = sorted(r.name for r in kube if r.provider == found["aks-claims"].urn)
    assert on_claims == sorted(claims) == sorted(r.name for r in p.by_type(CLAIM))
    for resource in kube:
        if resource.type != CLAIM:
            assert resource.provider == found["aks"].urn, resource.urn
    assert p.one(RELEASE).provider == found["aks"].urn
    assert p.named("pyroscope-private-link").provider == found["aks"].urn


def test_without_persistence_there_is_no_claims_provider(plan):
    p = plan(pyroscopePersistence="false")
    assert list(providers(p)) == ["aks"] and not p.by_type(CLAIM)
    provider = providers(p)["aks"]
    assert provider.inputs == {"kubeconfig": "[secret]"}  # no upsertExistingObjects: creates never adopt
    kube = [r for r in p.resources if r.custom and r.type.startswith("kubernetes:")]
    assert kube and all(r.provider == provider.urn for r in kube)


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
        DEVICECODE + ["--cache-dir", CACHE],
        ["get-token", "--login", "azurecli", "--server-id", SERVER, "--cache-dir", CACHE]),
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
                             "installHint": kubeconfig.KUBELOGIN_INSTALL_HINT}}


def test_azurecli_keeps_an_existing_install_hint():
    """convert_test.go "with exec format kubeconfig, convert from azurecli to azurecli with existing install hint"."""
    user = _converted({"exec": {"command": "kubelogin", "args": AZURECLI_CASES["convert from azurecli to azurecli"][0],
                                "installHint": "Preserve this install hint"}})
    assert user["exec"]["installHint"] == "Preserve this install hint"
    assert user["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id", SERVER]


@pytest.mark.parametrize("command", ["kubelogin.exe", "C:\\tools\\KubeLogin.EXE", "/usr/local/bin/kubelogin"])
def test_a_kubelogin_exec_plugin_is_one_whose_command_contains_kubelogin(command):
    """isExecUsingkubelogin: strings.Contains(strings.ToLower(cmd), "kubelogin"), not a suffix."""
    converted = _converted({"exec": {"command": command, "args": DEVICECODE}})
    assert converted["exec"]["args"][:3] == ["get-token", "--login", "azurecli"]


def test_azurecli_converts_a_legacy_azure_auth_provider():
    """convert_test.go "using legacy azure auth to convert to azurecli": the server id from apiserver-id, the auth
    provider removed (authInfo.AuthProvider = nil)."""
    user = _converted({"auth-provider": {"name": "azure", "config": {
        "environment": ENV, "apiserver-id": SERVER, "client-id": CLIENT, "tenant-id": TENANT, "config-mode": "1"}}})
    assert user == {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "kubelogin",
                             "args": ["get-token", "--login", "azurecli", "--server-id", SERVER],
                             "installHint": kubeconfig.KUBELOGIN_INSTALL_HINT}}


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


def test_delete_unreachable_is_set_on_both_providers_only_when_asked(plan, monkeypatch):
    """kubernetesDeleteUnreachable true sets deleteUnreachable on both providers (pulumi-kubernetes provider.go: the
    provider input wins over PULUMI_K8S_DELETE_UNREACHABLE; a refresh of an unreachable cluster must drop the claims
    too). false sends nothing, so the variable, the way out for a stack that never recorded the option, still works
    when the engine starts the providers for a destroy."""
    monkeypatch.delenv("PULUMI_K8S_DELETE_UNREACHABLE", raising=False)
    assert_provider_inputs(plan(kubernetesDeleteUnreachable="true"), delete_unreachable=True)
    assert_provider_inputs(plan())
    assert_provider_inputs(plan(kubernetesDeleteUnreachable="false"))
    alone = providers(plan(kubernetesDeleteUnreachable="true", pyroscopePersistence="false"))
    assert list(alone) == ["aks"] and alone["aks"].inputs == {"deleteUnreachable": "true", "kubeconfig": "[secret]"}


def test_the_device_code_login_aks_returns_becomes_a_non_interactive_one():
    """Azure/AKS#4990: ``listClusterUserCredential`` returns an exec kubeconfig whose kubelogin logs in with
    ``devicecode``, a prompt no pipeline answers. The stack rewrites it to ``kubeloginMode`` (``azurecli`` by
    default), as ``kubelogin convert-kubeconfig -l azurecli`` does, so the provider never prompts."""
    source = base64.b64decode(canned.user_credentials(
        {"resourceGroupName": "rg", "resourceName": "c"}, "eastus2")["kubeconfigs"][0]["value"]).decode()
    before = yaml.safe_load(source)["users"][0]["user"]["exec"]["args"]
    after = yaml.safe_load(kubelogin_kubeconfig(source, "azurecli"))["users"][0]["user"]["exec"]["args"]
    assert before[before.index("--login") + 1] == "devicecode"
    assert after[after.index("--login") + 1] == "azurecli" and "devicecode" not in after
