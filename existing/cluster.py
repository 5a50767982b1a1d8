"""The existing AKS cluster: its facts and the prerequisite checks the configuration relies on.

Owns: :class:`ClusterFacts`, :func:`lookup_cluster`, :func:`unreadable`, :data:`POLICY_ENGINES`. Input: a
StackConfig. Output: ClusterFacts, from the azure-native invoke ``containerservice.getManagedCluster`` (ARM ``GET
.../Microsoft.ContainerService/managedClusters/{name}``); the cluster is looked up, never created. Errors:
ConfigError naming the key a missing prerequisite contradicts (``extensionAzureMonitor``,
``privateLinkServiceResourceGroup``, ``pyroscopeNetworkPolicy``, ``pyroscopeMode``, ``kubeconfigCredentials``), or
``clusterName`` when the cluster cannot be read (:func:`unreadable`).
Upstream: Azure/azure-rest-api-specs ``aks/stable/2025-10-01/managedClusters.json``; why each check:
docs/decisions/cluster-prerequisites.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from pulumi_azure_native import containerservice

from existing.node_pools import AgentPool
from stack_config.schema import ConfigError, StackConfig


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
    ``ManagedClusterSecurityProfileWorkloadIdentityResponse``). ``private_cluster``:
    ``apiServerAccessProfile.enablePrivateCluster`` (the API server has a private address only);
    ``authorized_ip_ranges``: ``apiServerAccessProfile.authorizedIPRanges`` (the only clients a public API server
    admits; empty: all); ``agent_pools``: ``agentPoolProfiles`` (:class:`AgentPool`).
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
    private_cluster: bool = False
    authorized_ip_ranges: tuple[str, ...] = ()
    agent_pools: tuple[AgentPool, ...] = ()

    @property
    def load_balancer_scope(self) -> str:
        """Where the cluster's load balancers live, as an ARM id prefix: its node resource group, in its subscription
        (``/subscriptions/<id>/resourceGroups/<node resource group>/providers/Microsoft.Network/loadBalancers/``)."""
        subscription = self.id.split("/")[2]
        return (f"/subscriptions/{subscription}/resourceGroups/{self.node_resource_group}"
                "/providers/Microsoft.Network/loadBalancers/")


def lookup_cluster(cfg: StackConfig) -> ClusterFacts:
    """Look the cluster up and check the prerequisites the configuration relies on.

    Raises ConfigError (key ``clusterName``, :func:`unreadable`) when ARM cannot answer for the cluster (a wrong name
    or group, another subscription, no read permission). Raises ConfigError (key ``extensionAzureMonitor``) when the
    extension's Azure Monitor integration is on
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
    try:
        result = containerservice.get_managed_cluster(
            resource_group_name=cfg.cluster_resource_group, resource_name=cfg.cluster_name
        )
    except Exception as error:  # the SDK raises a plain Exception for a failed invoke (pulumi/runtime/invoke.py)
        raise unreadable("clusterName", f"cluster '{cfg.cluster_name}' in resource group "
                                        f"'{cfg.cluster_resource_group}'", error) from None
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
        private_cluster=bool(getattr(result.api_server_access_profile, "enable_private_cluster", False)),
        authorized_ip_ranges=tuple(getattr(result.api_server_access_profile, "authorized_ip_ranges", None) or ()),
        agent_pools=tuple(
            AgentPool(pool.name, pool.vm_size or "", str(pool.mode or "User"), str(pool.os_type or "Linux"),
                      tuple(pool.node_taints or ()), dict(pool.node_labels or {}),
                      int((pool.max_count if pool.enable_auto_scaling else pool.count) or 0))
            for pool in result.agent_pool_profiles or ()),
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
            f"{facts.network_policy or 'not set'}), so the NetworkPolicy that restricts who reaches Pyroscope would "
            f"not be "
            f"enforced; enable one with `az aks update -g {cfg.cluster_resource_group} -n {cfg.cluster_name} "
            "--network-policy azure` (or calico; cilium needs --network-dataplane cilium) or set "
            "pyroscopeNetworkPolicy "
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
            f"-n {cfg.cluster_name} --enable-oidc-issuer --enable-workload-identity` or set pyroscopeMode to "
            f"single-binary",
        )
    if cfg.kubeconfig_credentials == "admin" and facts.local_accounts_disabled:
        raise ConfigError(
            "kubeconfigCredentials",
            f"cluster '{cfg.cluster_name}' has local accounts disabled (disableLocalAccounts), so admin "
            "credentials cannot be listed; use 'user' (Microsoft Entra ID, kubelogin)",
        )
    return facts


def unreadable(key: str, what: str, error: Exception) -> ConfigError:
    """The refusal (on ``key``) of a lookup that failed: ``what`` could not be read, the invoke's own words on the same
    line. The failed invoke would otherwise end the program with a Python traceback whose text names the object,
    which stack_config/masking.py cannot reach; as a ConfigError the line is masked."""
    reason = " ".join(str(error).split())
    return ConfigError(key, f"{what} could not be read ({reason}); check the name, its resource group and the "
                            "subscription the stack deploys to (azure-native:subscriptionId, or `az account show`)")


#: ``networkProfile.networkPolicy`` values that enforce Kubernetes NetworkPolicy: the ``--network-policy`` choices of
#: ``az aks update`` other than ``none`` (Azure/azure-cli
#: ``src/azure-cli/azure/cli/command_modules/acs/_params.py``@0088c878,
#: ``network_policies``; ``aks update`` takes ``network_policy`` from it).
POLICY_ENGINES = ("azure", "calico", "cilium")
