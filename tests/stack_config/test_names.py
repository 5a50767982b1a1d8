"""stack_config/names.py: the names an empty key derives, per cluster wherever two clusters can meet."""

from __future__ import annotations

import re

from offline import canned
from stack_config import names, rules, schema
from tests.support.config_values import parse


def test_fixed_defaults_from_design():
    declared = schema.declared()
    assert declared["pyroscopeChartVersion"]["default"] == "1.15.0"
    # The design fixes pyroscope-pls; derived like the endpoint's name, since two clusters' PLS can meet in a shared
    # group.
    assert declared["privateLinkServiceName"]["default"] == ""
    assert names.derived_private_link_service_name(parse(), "id") == "pyroscope-pls"
    assert declared["privateLinkVisibility"]["default"] == "*"
    # The design fixes pyroscope-mpe; it sits behind "" (derive), since the CLI writes defaults out.
    assert declared["managedPrivateEndpointName"]["default"] == ""
    assert names.derived_names(parse(), "id")["managedPrivateEndpointName"] == "pyroscope-mpe"
    assert names.derived_names(parse(multiCluster="true"), "id")["managedPrivateEndpointName"] != "pyroscope-mpe"


def test_pls_names_are_per_cluster_wherever_two_clusters_can_meet():
    """Two clusters in one privateLinkServiceResourceGroup (or multiCluster stacks) must not claim one PLS name: each
    derives its own from its ARM id; in its own node resource group a cluster keeps the procedure's pyroscope-pls."""
    a = "/subscriptions/s/resourceGroups/rg-a/providers/Microsoft.ContainerService/managedClusters/aks-a"
    b = "/subscriptions/s/resourceGroups/rg-b/providers/Microsoft.ContainerService/managedClusters/aks-a"
    for settings in ({"privateLinkServiceResourceGroup": "rg-network"}, {"multiCluster": "true"}):
        pls_names = {names.derived_private_link_service_name(parse(**settings), cluster) for cluster in (a, b)}
        assert len(pls_names) == 2 and "pyroscope-pls" not in pls_names, settings
        assert all(re.fullmatch(r"pyroscope-pls-[0-9a-f]{12}", n) and "aks-a" not in n for n in pls_names)
        assert names.derived_private_link_service_name(parse(**settings), a.upper()) in pls_names  # ARM ids ignore case
    assert names.derived_private_link_service_name(parse(), a) == names.derived_private_link_service_name(parse(), b) \
        == "pyroscope-pls"
    # A name the stack sets wins (references.for_cluster fills only an empty key).
    from stack_config.references import for_cluster
    pinned = for_cluster(parse(privateLinkServiceName="my-pls", multiCluster="true"), a)
    assert pinned.private_link_service_name == "my-pls"


def test_multi_cluster_names_are_deterministic_and_valid():
    cluster_id = canned.cluster_id("rg-gpu-eastus", "aks-gpu-eastus")
    first = names.cluster_names("aks-gpu-eastus", cluster_id)
    assert first == names.cluster_names("aks-gpu-eastus", cluster_id)
    upper = names.cluster_names("AKS-GPU-EASTUS", cluster_id.upper())  # Azure ids are case-insensitive
    assert all(upper[k] == first[k] for k in ("managedPrivateEndpointName", "pyroscopeDatasourceUid",
                                              "prometheusDatasourceUid"))
    for key, value in first.items():
        rules.RULES[key](key, value)
    assert first["managedPrivateEndpointName"].startswith("pyro-aks-gpu-")
    other_subscription = cluster_id.replace(canned.SUBSCRIPTION_ID, "0b9d3c1e-2222-4a4a-8b8b-123456789abc")
    elsewhere = names.cluster_names("aks-gpu-eastus", other_subscription)
    assert elsewhere["managedPrivateEndpointName"] != first["managedPrivateEndpointName"]
    weird = names.cluster_names("1" * 63, "r")
    rules.RULES["managedPrivateEndpointName"]("managedPrivateEndpointName", weird["managedPrivateEndpointName"])
