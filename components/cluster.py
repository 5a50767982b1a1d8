"""The existing AKS cluster: its facts, the prerequisite checks, and the explicit Kubernetes provider.

Not a component: the cluster is looked up (azure-native invoke ``containerservice.getManagedCluster``, ARM
``GET .../Microsoft.ContainerService/managedClusters/{name}``), never created, and the Kubernetes provider
is a top-level provider resource that components receive through ``providers=``.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import containerservice

from components.config import ConfigError, StackConfig

#: kubelogin's login modes that authenticate without the AKS CLI public client id.
_DROP_CLIENT_ID_MODES = {"workloadidentity", "msi", "azd"}


@dataclass(frozen=True)
class ClusterFacts:
    """What the stack needs to know about the existing managed cluster (from getManagedCluster).

    ``metrics_enabled`` mirrors ``azureMonitorProfile.metrics.enabled`` (the Azure Monitor metrics
    add-on), ``entra_managed`` ``aadProfile.managed``, ``local_accounts_disabled``
    ``disableLocalAccounts``, ``node_resource_group_locked`` ``nodeResourceGroupProfile.restrictionLevel`` being
    ``ReadOnly`` (node resource group lockdown; AKS Automatic has it preconfigured). ``network_policy``:
    ``networkProfile.networkPolicy`` (``azure``, ``calico``, ``cilium``, ``none`` or empty: no engine);
    ``oidc_issuer_url``: ``oidcIssuerProfile.issuerURL`` when ``oidcIssuerProfile.enabled`` (else empty);
    ``workload_identity``: ``securityProfile.workloadIdentity.enabled`` (pulumi-azure-native 3.x
    ``containerservice/outputs.py`` ``ManagedClusterOIDCIssuerProfileResponse``,
    ``ManagedClusterSecurityProfileWorkloadIdentityResponse``).
    """

    id: str
    name: str
    resource_group: str
    location: str
    node_resource_group: str
    metrics_enabled: bool
    entra_managed: bool
    local_accounts_disabled: bool
    node_resource_group_locked: bool = False
    network_policy: str = ""
    oidc_issuer_url: str = ""
    workload_identity: bool = False

    @property
    def load_balancer_scope(self) -> str:
        """Where the cluster's load balancers live, as an ARM id prefix: its node resource group, in its subscription
        (``/subscriptions/<id>/resourceGroups/<node resource group>/providers/Microsoft.Network/loadBalancers/``)."""
        subscription = self.id.split("/")[2]
        return (f"/subscriptions/{subscription}/resourceGroups/{self.node_resource_group}"
                "/providers/Microsoft.Network/loadBalancers/")


def lookup_cluster(cfg: StackConfig) -> ClusterFacts:
    """Look the cluster up and check the prerequisites the configuration relies on.

    Raises ConfigError (key ``extensionAzureMonitor``) when the extension's Azure Monitor integration is on
    but the cluster lacks the metrics add-on: the extension's PodMonitor would fail to install with
    "no matches for kind PodMonitor". Raises ConfigError (key ``kubeconfigCredentials``) when admin
    credentials are asked for but the cluster has local accounts disabled. Raises ConfigError (key
    ``privateLinkServiceResourceGroup``) when the PLS would go into a locked node resource group: with
    ``nodeResourceGroupProfile.restrictionLevel`` ``ReadOnly`` (Azure/azure-rest-api-specs containerservice
    ``aks/stable/2025-10-01/managedClusters.json`` ``ManagedClusterNodeResourceGroupProfile``: ``ReadOnly`` or
    ``Unrestricted``, the default) a deny assignment lets users read but not change what is in that group
    (MicrosoftDocs/azure-aks-docs ``articles/aks/node-resource-group-lockdown.md``; AKS Automatic has it
    preconfigured, ``articles/aks/intro-aks-automatic.md``). The cloud provider still creates the PLS there, but the
    approval of Grafana's connection (a PUT on the PLS by the deployer) is refused, after the release, the PLS and
    the endpoint exist. A PLS in a resource group of the user's is the way out.
    """
    result = containerservice.get_managed_cluster(
        resource_group_name=cfg.cluster_resource_group, resource_name=cfg.cluster_name
    )
    monitor = result.azure_monitor_profile
    metrics = monitor.metrics if monitor else None
    facts = ClusterFacts(
        id=result.id,
        name=result.name,
        resource_group=cfg.cluster_resource_group,
        location=result.location,
        node_resource_group=result.node_resource_group or "",
        metrics_enabled=bool(metrics and metrics.enabled),
        entra_managed=bool(result.aad_profile and result.aad_profile.managed),
        local_accounts_disabled=bool(result.disable_local_accounts),
        node_resource_group_locked=str(getattr(result.node_resource_group_profile, "restriction_level", None) or "")
        .lower() == "readonly",
        network_policy=str(getattr(result.network_profile, "network_policy", None) or "").lower(),
        oidc_issuer_url=(str(getattr(result.oidc_issuer_profile, "issuer_url", None) or "")
                         if getattr(result.oidc_issuer_profile, "enabled", False) else ""),
        workload_identity=bool(getattr(getattr(result.security_profile, "workload_identity", None), "enabled", False)),
    )
    if cfg.extension_azure_monitor and not facts.metrics_enabled:
        raise ConfigError(
            "extensionAzureMonitor",
            f"cluster '{cfg.cluster_name}' has no Azure Monitor metrics add-on "
            "(azureMonitorProfile.metrics.enabled is not true), so the extension's PodMonitor cannot install; "
            f"enable it with `az aks update -g {cfg.cluster_resource_group} -n {cfg.cluster_name} "
            "--enable-azure-monitor-metrics --azure-monitor-workspace-resource-id <workspace id>` "
            "or set extensionAzureMonitor to false",
        )
    if facts.node_resource_group_locked and not cfg.private_link_service_resource_group:
        raise ConfigError(
            "privateLinkServiceResourceGroup",
            f"cluster '{cfg.cluster_name}' has its node resource group '{facts.node_resource_group}' locked "
            "(nodeResourceGroupProfile.restrictionLevel ReadOnly: AKS Automatic, or node resource group lockdown), so "
            "Grafana's connection to a private link service there could never be approved (the deny assignment refuses "
            "the approval once the release, the PLS and the endpoint exist); set privateLinkServiceResourceGroup to a "
            "resource group where the cluster identity has Network Contributor and you may approve connections",
        )
    if cfg.pyroscope_network_policy and facts.network_policy not in POLICY_ENGINES:
        raise ConfigError(
            "pyroscopeNetworkPolicy",
            f"cluster '{cfg.cluster_name}' has no network policy engine (networkProfile.networkPolicy is "
            f"{facts.network_policy or 'not set'}), so the NetworkPolicy that restricts who reaches Pyroscope would not be "
            f"enforced; enable one with `az aks update -g {cfg.cluster_resource_group} -n {cfg.cluster_name} "
            "--network-policy azure` (or calico; cilium needs --network-dataplane cilium) or set pyroscopeNetworkPolicy "
            "to false to leave Pyroscope open to everything that routes to its internal load balancer",
        )
    if cfg.pyroscope_mode == "microservices" and not (facts.oidc_issuer_url and facts.workload_identity):
        missing = " and ".join(name for name, ok in (("the OIDC issuer (oidcIssuerProfile)", facts.oidc_issuer_url),
                                                     ("workload identity (securityProfile.workloadIdentity)",
                                                      facts.workload_identity)) if not ok)
        raise ConfigError(
            "pyroscopeMode",
            f"microservices keeps profiles in Azure Blob Storage through Azure Workload Identity, but cluster "
            f"'{cfg.cluster_name}' has {missing} off; enable them with `az aks update -g {cfg.cluster_resource_group} "
            f"-n {cfg.cluster_name} --enable-oidc-issuer --enable-workload-identity` or set pyroscopeMode to single-binary",
        )
    if cfg.kubeconfig_credentials == "admin" and facts.local_accounts_disabled:
        raise ConfigError(
            "kubeconfigCredentials",
            f"cluster '{cfg.cluster_name}' has local accounts disabled (disableLocalAccounts), so admin "
            "credentials cannot be listed; use 'user' (Microsoft Entra ID, kubelogin)",
        )
    return facts


#: ``networkProfile.networkPolicy`` values that enforce Kubernetes NetworkPolicy: the ``--network-policy`` choices of
#: ``az aks update`` other than ``none`` (Azure/azure-cli ``src/azure-cli/azure/cli/command_modules/acs/_params.py``@0088c878,
#: ``network_policies``; ``aks update`` takes ``network_policy`` from it).
POLICY_ENGINES = ("azure", "calico", "cilium")


def azurecli_args(args: list) -> list:
    """The ``kubelogin get-token`` arguments ``kubelogin convert-kubeconfig -l azurecli`` writes for an exec plugin with
    ``args``, as Azure/kubelogin v0.2.19 (``a9b10fbf``) ``pkg/internal/converter/convert.go`` ``Convert`` builds them when
    no override flag is given: ``get-token --login azurecli --server-id <id>``, then ``--cache-dir <dir>`` when the
    input has ``--cache-dir`` (or else ``--token-cache-dir``). Everything else is dropped: ``--client-id``,
    ``--environment`` and ``--tenant-id`` too ("tenantID from the input kubeconfig will be disregarded": ``az`` signed
    in with a managed identity refuses ``--tenant``, as in Cloud Shell or on a VM runner). The cases of that file's
    ``convert_test.go`` ("convert from devicecode to azurecli", ``tests/test_cluster.py``) hold it. ValueError without
    ``--server-id`` (the converter's "--server-id is required")."""

    def value(flag: str) -> str:  # getExecArg: the item right after the first occurrence of flag
        return next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == flag), "")

    server_id = value("--server-id")
    if not server_id:
        raise ValueError("--server-id is required")
    converted = ["get-token", "--login", "azurecli", "--server-id", server_id]
    cache_dir = value("--cache-dir") or value("--token-cache-dir")
    return converted + (["--cache-dir", cache_dir] if cache_dir else [])


#: Azure/kubelogin v0.2.19 pkg/internal/converter/convert.go: ``execName``, ``execAPIVersion``, ``execInstallHint``.
KUBELOGIN_EXEC_NAME = "kubelogin"
KUBELOGIN_EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
KUBELOGIN_INSTALL_HINT = """
kubelogin is not installed which is required to connect to AAD enabled cluster.

To learn more, please go to https://azure.github.io/kubelogin/
"""


def is_exec_using_kubelogin(user: dict) -> bool:
    """``isExecUsingkubelogin`` (Azure/kubelogin v0.2.19 ``pkg/internal/converter/convert.go``): an exec plugin whose
    command contains "kubelogin", case-insensitively (``strings.Contains(strings.ToLower(cmd), "kubelogin")``), so
    ``/usr/local/bin/kubelogin`` and ``kubelogin.exe`` too."""
    plugin = user.get("exec")
    return isinstance(plugin, dict) and "kubelogin" in str(plugin.get("command") or "").lower()


def is_legacy_azure_auth(user: dict) -> bool:
    """``isLegacyAzureAuth`` (same file): the legacy ``auth-provider`` named ``azure``."""
    provider = user.get("auth-provider")
    return isinstance(provider, dict) and provider.get("name") == "azure"


def azurecli_exec(user: dict) -> dict:
    """The exec plugin ``kubelogin convert-kubeconfig -l azurecli`` (no override flags) writes for ``user``, and the
    user with it, as Azure/kubelogin v0.2.19 ``Convert`` does: a new ``ExecConfig`` with ``command: kubelogin``,
    ``apiVersion: client.authentication.k8s.io/v1beta1``, the arguments of :func:`azurecli_args` and the install hint
    (the existing one kept, "Preserve any existing install hint", else kubelogin's); nothing else of the old plugin
    (``env`` dropped: only ``--azure-config-dir`` would set one); the legacy ``auth-provider`` removed. The server id of a
    legacy ``azure`` auth provider is its ``apiserver-id``."""
    plugin = user.get("exec") if is_exec_using_kubelogin(user) else None
    if plugin is not None:
        args = azurecli_args([str(arg) for arg in plugin.get("args") or []])
    else:
        server_id = str(((user.get("auth-provider") or {}).get("config") or {}).get("apiserver-id") or "")
        args = azurecli_args(["--server-id", server_id] if server_id else [])
    exec_config = {"apiVersion": KUBELOGIN_EXEC_API_VERSION, "command": KUBELOGIN_EXEC_NAME, "args": args,
                   "installHint": (plugin or {}).get("installHint") or KUBELOGIN_INSTALL_HINT}
    converted = {k: v for k, v in user.items() if k not in ("exec", "auth-provider")}
    converted["exec"] = exec_config
    return converted


def kubelogin_kubeconfig(kubeconfig: str, mode: str) -> str:
    """Rewrite the kubelogin exec plugin of an AKS user kubeconfig to login mode ``mode``.

    AKS returns Entra ID user kubeconfigs with ``kubelogin get-token ... --login devicecode`` (interactive).
    ``azurecli`` gets exactly the arguments ``kubelogin convert-kubeconfig -l azurecli`` writes
    (:func:`azurecli_args`: no ``--tenant-id``, no ``--client-id``, no ``--environment``). For the other
    non-interactive modes the ``--login`` value is replaced and ``--client-id`` (the AKS CLI public client) dropped;
    ``--server-id``, ``--tenant-id`` and ``--environment`` are kept. A kubelogin exec plugin is one whose command contains
    "kubelogin" (:func:`is_exec_using_kubelogin`); ``azurecli`` rewrites the whole plugin as the converter does
    (:func:`azurecli_exec`), also from a legacy ``azure`` auth provider. Mode ``devicecode`` and kubeconfigs without
    either (local accounts, admin credentials) are returned unchanged.
    """
    if mode == "devicecode":
        return kubeconfig
    document = yaml.safe_load(kubeconfig)
    changed = False
    for user in (document or {}).get("users") or []:
        entry = user.get("user") or {}
        if mode == "azurecli" and (is_exec_using_kubelogin(entry) or is_legacy_azure_auth(entry)):
            user["user"] = azurecli_exec(entry)
            changed = True
            continue
        if not is_exec_using_kubelogin(entry):
            continue
        plugin = entry["exec"]
        args = [str(arg) for arg in plugin.get("args") or []]
        rewritten, skip = [], False
        for index, arg in enumerate(args):
            if skip:
                skip = False
                continue
            if arg in ("--login", "-l") or (arg == "--client-id" and mode in _DROP_CLIENT_ID_MODES):
                skip = index + 1 < len(args)
                continue
            rewritten.append(arg)
        plugin["args"] = rewritten + ["--login", mode]
        changed = True
    return yaml.safe_dump(document, sort_keys=False) if changed else kubeconfig


def kubeconfig_for(cfg: StackConfig) -> pulumi.Output[str]:
    """The cluster's kubeconfig as a secret Output[str].

    From ``listClusterUserCredential`` (format ``exec``, kubelogin for Entra ID clusters) or, with
    ``kubeconfigCredentials=admin``, ``listClusterAdminCredential``; the first kubeconfig, base64-decoded.
    The invoke's inputs are plain config values, so the kubeconfig is known during preview and the
    provider is not needlessly replaced (pulumi-kubernetes replaces a provider whose kubeconfig is unknown).
    """
    if cfg.kubeconfig_credentials == "admin":
        credentials = containerservice.list_managed_cluster_admin_credentials_output(
            resource_group_name=cfg.cluster_resource_group, resource_name=cfg.cluster_name
        )
    else:
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=cfg.cluster_resource_group, resource_name=cfg.cluster_name, format="exec"
        )
    mode = cfg.kubelogin_mode
    return pulumi.Output.secret(
        credentials.kubeconfigs.apply(
            lambda items: kubelogin_kubeconfig(base64.b64decode(items[0].value).decode("utf-8"), mode)
        )
    )


def kubernetes_provider(name: str, cfg: StackConfig) -> k8s.Provider:
    """The explicit Kubernetes provider for the cluster; its ``kubeconfig`` input is a Pulumi secret.

    ``kubernetesDeleteUnreachable`` true sets the provider's ``deleteUnreachable``. pulumi-kubernetes (commit
    94977969, after v4.32.0; 4.34.2 installed) ``provider/pkg/provider/provider.go``: ``Configure`` marks the
    cluster unreachable when its API server does not answer discovery; then ``Read`` (``pulumi refresh``) answers
    "deleted" for every resource, the Helm release included, when ``deleteUnreachable`` is on (the provider input
    wins over ``PULUMI_K8S_DELETE_UNREACHABLE``), and fails otherwise; ``Delete`` of a Helm release fails on an
    unreachable cluster whatever the option ("can't delete Helm Release with unreachable cluster"), so a destroy
    after the cluster is gone needs the refresh first (docs/teardown.md, "Tearing down what is already gone"). False sends
    no value at all: an explicit ``false`` would override the environment variable, the way out for a stack that
    never recorded the option (the SDK reads that variable only while the program runs,
    ``pulumi_kubernetes/provider.py``).
    """
    return k8s.Provider(
        name,
        kubeconfig=kubeconfig_for(cfg),
        delete_unreachable=True if cfg.kubernetes_delete_unreachable else None,
        opts=pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]),
    )
