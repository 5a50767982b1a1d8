"""Arguments of :class:`components.gpu_observability.GpuObservability`: one per stack config key.

GENERATED from Pulumi.yaml by ``python -m stack_config.component_args``; edit the key there. Each field is
the key in snake_case (the Pulumi package's property is the key itself); unset fields take the key's default.
Values are plain (no Outputs): the component checks the cluster and Grafana before any child registers.
"""

# No `from __future__ import annotations`: the schema analyzer reads these annotations as types.
from typing import Required, TypedDict


class GpuObservabilityArgs(TypedDict, total=False):
    """GPU-memory profiling on an existing AKS cluster: the cluster, Grafana and the Azure Monitor workspace
    (the six required fields), and every optional setting of the stack (docs/configuration.md)."""

    production: bool
    ("Whether this stack is production: the policy pack then fails an unpinned extension, a Pyroscope chart or "
     "image not pinned by digest, Pyroscope without a persistent volume or NetworkPolicy, and a private link "
     "service visible to all ('*') unless allow-listed.")
    tags: list[str]
    ("Extra key=value tags on the taggable Azure resources the stack creates; managed-by=aks-gpu-observability is "
     "always set and may not be given.")
    multi_cluster: bool
    ("One of several clusters sharing one Grafana: empty Grafana names derive from the cluster, the workspace role "
     "is assigned only if assignMonitoringDataReader is true, and destroy leaves the shared dashboard.")
    cluster_name: Required[str]
    "Name of the existing AKS managed cluster (1-63 characters)."
    cluster_resource_group: Required[str]
    "Resource group of the AKS cluster (1-90 characters)."
    kubeconfig_credentials: str
    ("Cluster credentials for the Kubernetes provider: 'user' (listClusterUserCredential) or 'admin' "
     "(listClusterAdminCredential; needs local accounts enabled).")
    kubelogin_mode: str
    ("For Microsoft Entra ID clusters, the kubelogin mode in the user kubeconfig: azurecli, workloadidentity, msi, "
     "azd or devicecode (AKS's kubeconfig kept as returned).")
    kubernetes_delete_unreachable: bool
    ("Set deleteUnreachable on the Kubernetes provider: pulumi refresh drops a gone cluster's Kubernetes "
     "resources, so pulumi destroy can finish. As it cannot tell gone from unreachable, keep it false and set "
     "PULUMI_K8S_DELETE_UNREACHABLE=true for the one refresh after the cluster is deleted. Takes effect after a "
     "pulumi up records it.")
    extension_name: str
    "Name of the AKS cluster extension resource (1-63 characters)."
    extension_release_train: str
    "Release train of the microsoft.inspektorgadget extension (e.g. preview, stable), also of extensionVersion."
    extension_version: str
    ("Pin the extension to this version (semver; no auto-upgrade); empty follows the release train with "
     "minor-version auto-upgrade.")
    extension_gpu_observability: bool
    "Extension setting gpuObservability.enabled (GPU memory allocation tracing)."
    extension_azure_monitor: bool
    ("Extension setting azureMonitor.enabled (a PodMonitor for Azure Monitor managed Prometheus; needs the "
     "cluster's metrics add-on).")
    extension_timeout_seconds: int
    "How long Pulumi waits for the extension's create, update or delete (seconds, 60-7200)."
    pyroscope_chart: str
    ("Pyroscope Helm chart: an https:// chart repository URL or an oci:// reference, pinned by digest "
     "(oci://<registry>/<path>/pyroscope@sha256:<64 hex>) in production.")
    pyroscope_chart_version: str
    ("Exact Pyroscope chart version (semver), major 1 or 2, as pyroscopeImageTag's (docs/day-two.md, \"Pyroscope "
     "2\").")
    pyroscope_image_repository: str
    "Pyroscope image repository, e.g. a mirror in your registry; grafana/pyroscope is the published procedure's."
    pyroscope_image_tag: str
    ("Pyroscope image tag, of pyroscopeChartVersion's major (1.15.0: the published procedure's); <tag>@sha256:<64 "
     "hex> pins it by digest, as production must.")
    pyroscope_release_timeout_seconds: int
    ("How long the Helm release waits for Pyroscope's workloads and LoadBalancer Service to be ready (seconds, "
     "60-3600).")
    pyroscope_termination_grace_period_seconds: int
    ("Seconds (30-3600) a Pyroscope ingester gets to write out its in-memory head block before its pod is killed, "
     "which loses the profiles since the last block (docs/sizing.md); keep pyroscopeReleaseTimeoutSeconds above "
     "it.")
    pyroscope_persistence: bool
    ("Keep profiles on a persistent volume, not an emptyDir that every pod restart empties; changing it reinstalls "
     "Pyroscope, losing its profiles (docs/day-two.md).")
    pyroscope_storage_class: str
    ("Storage class of Pyroscope's volume (managed-csi: AKS's Azure Disk Standard SSD class). Changing it deletes "
     "the claims and their disks with every profile (docs/day-two.md).")
    pyroscope_storage_size: str
    ("Size of Pyroscope's volume, 10Gi to 32Ti (64Gi: a whole Azure disk billing step). Growing it expands the "
     "claims online where the class allows (managed-csi does); shrinking is refused.")
    pyroscope_retention: str
    ("How long profiles are kept and queries reach back (<n>h, <n>d or <n>w; the longest query is a day more); 0: "
     "until the volume fills, no query limits.")
    pyroscope_ingestion_rate_mb: int
    ("Pyroscope's ingestion rate limit, MB per second (1-1024; all exporters are one tenant). 0 derives it from "
     "the GPU pools' most nodes (docs/sizing.md); past it, profiles are dropped with 429, which ops.verify "
     "reports.")
    pyroscope_ingestion_burst_mb: int
    ("Pyroscope's ingestion burst, MB (1-1024): at least the largest decompressed profile, else that profile is "
     "dropped. 0 derives it: a second of the rate, at least 2.")
    pyroscope_resources: list[str]
    ("Overrides of Pyroscope's requests and limits (requests.cpu=500m, requests.memory=1Gi, limits.memory=4Gi, no "
     "CPU limit) as <requests|limits>.<cpu|memory>=<quantity> items; an empty quantity removes one.")
    pyroscope_node_selector: list[str]
    "Node labels Pyroscope's pod must match, as key=value items; GPU nodes are always excluded."
    pyroscope_tolerations: list[str]
    ("Taints Pyroscope's pod tolerates, as key=value:Effect, key:Effect, key=value or key items; Effect is "
     "NoSchedule, PreferNoSchedule or NoExecute.")
    pyroscope_network_policy: bool
    ("A NetworkPolicy admitting to Pyroscope only the Inspektor Gadget pods, the private link service's NAT "
     "addresses and its own pods (externalTrafficPolicy Local keeps client addresses). Needs a network policy "
     "engine (azure, calico or cilium); false opens Pyroscope to all routed to the internal load balancer.")
    pyroscope_allowed_cidrs: list[str]
    "Further CIDR ranges the NetworkPolicy admits to Pyroscope on port 4040."
    pyroscope_mode: str
    ("single-binary (one pod, profiles on its volume) or microservices (the chart's components, profiles in Azure "
     "Blob storage through Workload Identity, which the cluster must enable with its OIDC issuer). Switching "
     "reinstalls Pyroscope, which starts empty (docs/sizing.md).")
    pyroscope_storage_account: str
    ("Microservices mode: an existing storage account holding pyroscopeBlobContainer; empty creates one (shared "
     "keys off, TLS 1.2, no public blob access).")
    pyroscope_storage_account_resource_group: str
    "Resource group of the storage account and of Pyroscope's user-assigned identity; empty is the cluster's."
    pyroscope_blob_container: str
    "Microservices mode: the profiles' blob container, created with the account, else it must exist."
    pyroscope_storage_sku: str
    ("SKU of a storage account the stack creates: Standard_LRS, Standard_ZRS, Standard_GRS, Standard_RAGRS, "
     "Standard_GZRS or Standard_RAGZRS. Standard_ZRS needs a region with availability zones.")
    private_link_service_name: str
    ("Name of the private link service AKS creates (1-80 characters); empty derives it: pyroscope-pls, or per "
     "cluster with multiCluster or a privateLinkServiceResourceGroup. Changing it re-creates the private link "
     "chain (docs/day-two.md).")
    private_link_service_resource_group: str
    ("Resource group of the private link service; empty: the node resource group, which must not be locked (AKS "
     "Automatic and node resource group lockdown deny the connection's approval); another needs Network "
     "Contributor for the cluster identity.")
    private_link_visibility: str
    "Who can see the private link service: '*' (anyone with the alias) or space-separated subscription GUIDs."
    private_link_subnet: str
    ("Subnet of the private link service's NAT IPs, in the cluster's virtual network; empty is the load balancer's "
     "frontend subnet.")
    private_link_ip_address_count: int
    "Number of the private link service's NAT IP addresses (1-8)."
    private_link_service_timeout_seconds: int
    "How long to wait for AKS to create the private link service (seconds, 60-3600; usually minutes, no SLA)."
    create_grafana: bool
    ("Create the Azure Managed Grafana workspace (Standard tier, system-assigned identity) in an existing resource "
     "group, the deployer its Grafana Admin.")
    create_monitor_workspace: bool
    ("Create the Azure Monitor workspace; point the cluster's metrics add-on at it yourself (output "
     "monitorWorkspaceId).")
    grafana_public_network_access: str
    ("Public network access of a created Grafana, Enabled or Disabled (then pulumi needs a private path to "
     "Grafana's API).")
    deployer_principal_type: str
    ("Principal type of whoever runs pulumi up, given Grafana Admin on a created Grafana: User, ServicePrincipal, "
     "Group, or auto (ServicePrincipal if ARM_CLIENT_ID or AZURE_CLIENT_ID is set, else User).")
    grafana_name: Required[str]
    "Name of the Azure Managed Grafana workspace, Standard tier (2-23 characters)."
    grafana_resource_group: Required[str]
    "Resource group of the Azure Managed Grafana workspace."
    monitor_workspace_name: Required[str]
    "Name of the Azure Monitor workspace holding the extension's metrics (4-44 characters)."
    monitor_workspace_resource_group: Required[str]
    "Resource group of the Azure Monitor workspace."
    managed_private_endpoint_name: str
    ("Name of Grafana's managed private endpoint (2-20 characters). Empty: pyroscope-mpe, or per cluster with "
     "multiCluster.")
    assign_monitoring_data_reader: str
    ("Give Grafana's identity Monitoring Data Reader on the workspace: auto, true or false. auto is false with "
     "multiCluster, else true unless an assignment made elsewhere (such as linking Grafana to the workspace) "
     "already gives it, which is left as it is; true is then refused (409 RoleAssignmentExists). With "
     "multiCluster, true makes sure the shared assignment exists and never deletes it.")
    grafana_viewers: list[str]
    ("Microsoft Entra ID object ids given the built-in Grafana Viewer role on the Grafana workspace (read-only "
     "dashboards, the GPU flame graphs included), one item each - a group's object id, or Type:<object id> with "
     "Type User, Group or ServicePrincipal (a bare id is a Group; ARM refuses a type that does not match the "
     "principal). None by default. An assignment of that role to that principal on the workspace made outside the "
     "stack is left as it is and never deleted.")
    pyroscope_datasource_uid: str
    "uid of the Pyroscope datasource in Grafana. Empty: local-pyroscope, or per cluster with multiCluster."
    pyroscope_datasource_name: str
    ("Name of the Pyroscope datasource in Grafana. Empty: local-pyroscope, or 'Pyroscope (<clusterName>)' with "
     "multiCluster.")
    prometheus_datasource_uid: str
    ("uid of the Prometheus datasource in Grafana. Empty: azure-monitor-prometheus, or per cluster with "
     "multiCluster.")
    prometheus_datasource_name: str
    ("Name of the Prometheus datasource in Grafana. Empty: the Azure Monitor workspace's name, or 'Azure Monitor "
     "Prometheus (<clusterName>)' with multiCluster.")
    dashboard_source: str
    "The GPU dashboard JSON: an https URL pinned to a commit, or a path relative to the project directory."
    dashboard_sha256: str
    "sha256 (64 hex digits) the dashboard source must have, checked before any upload."
    dashboard_uid: str
    "uid of the dashboard (must match the uid inside the JSON)."
    dashboard_profile_type: str
    ("Pyroscope profile type ID set in the dashboard's GPU-memory queries: process_cpu:malloc:bytes:: for "
     "Inspektor Gadget before v0.54.0, process_cpu:malloc:bytes:process_cuda:bytes from v0.54.0 (python -m "
     "ops.verify names the one held); with another dashboardSource, the ID it should query.")
    grafana_timeout_seconds: int
    "How long the datasource and dashboard steps retry Grafana's 429 and 5xx answers (seconds, 30-3600)."
    connection_approval_timeout_seconds: int
    ("How long to wait for the endpoint's connection to reach the private link service and be approved (seconds, "
     "60-3600).")
    managed_private_endpoint_timeout_seconds: int
    ("How long to retry Grafana's refreshManagedPrivateEndpoints and wait for the endpoint's private IP (seconds, "
     "60-3600).")
