"""The stack's outputs contract: what consumers may read through a StackReference.

Names and types are stable: renaming or removing one is a breaking change (the contract test fails). Add
new outputs freely. Types are the Python types of the values ``pulumi stack output --json`` prints (``str``: a JSON
string, ``dict``: a JSON object).
"""

CONTRACT: dict[str, tuple[type, str]] = {
    "dashboardUrl": (str, "URL of the Advanced GPU Observability dashboard: <grafanaEndpoint>/d/<uid>"),
    "grafanaEndpoint": (str, "https URL of the Azure Managed Grafana workspace"),
    "grafanaName": (str, "name of the Grafana workspace"),
    "pyroscopeDatasourceUid": (str, "uid of this cluster's Pyroscope datasource"),
    "prometheusDatasourceUid": (str, "uid of this cluster's Azure Monitor Prometheus datasource"),
    "pyroscopePrivateUrl": (str, "http://<managed private endpoint IP>:4040, Pyroscope as Grafana reaches it"),
    "privateLinkServiceId": (str, "ARM id of the private link service in front of Pyroscope"),
    "managedPrivateEndpointId": (str, "ARM id of Grafana's managed private endpoint to it"),
    "managedPrivateEndpointState": (str, "its connection state; Approved once the stack is up"),
    "extensionId": (str, "ARM id of the Inspektor Gadget cluster extension"),
    "clusterName": (str, "the AKS cluster"),
    "clusterResourceGroup": (str, "its resource group"),
    "clusterId": (str, "ARM id of the AKS cluster"),
    "nodeResourceGroup": (str, "the cluster's node resource group"),
    "monitorWorkspaceId": (str, "ARM id of the Azure Monitor workspace"),
    "pyroscopeInClusterUrl": (str, "Pyroscope inside the cluster: http://pyroscope.gadget.svc.cluster.local:4040"),
    "privateLinkServiceName": (str, "name of the private link service"),
    "privateLinkServiceResourceGroup": (str, "its resource group"),
    # What the Grafana steps set, for `python -m ops.verify --drift` (commands are never refreshed).
    "pyroscopeDatasource": (dict, "the Pyroscope datasource as the stack sets it: uid, name, type, access, url, jsonData"),
    "prometheusDatasource": (dict, "the Prometheus datasource as the stack sets it: uid, name, type, access, url, jsonData"),
    "dashboardDefinition": (dict, "how the stack uploads the dashboard: uid, source, sha256 (of the source), profileType "
                                  "(the Pyroscope profile type ID its GPU-memory flame graphs ask for, dashboardProfileType), "
                                  "datasources (the variable defaults it sets), inputs (the datasource each __inputs plugin "
                                  "maps to); both {} when shared"),
}
