"""components/pyroscope_storage.py: the microservices mode's blob storage and workload identity."""

from __future__ import annotations

import pytest

from offline import canned
from tests.support import RELEASE

# --- Microservices mode (engine-level inputs, dependencies, options) --------------------------------------------------
STORAGE_TYPES = ("azure-native:storage:StorageAccount", "azure-native:storage:BlobContainer",
                 "azure-native:managedidentity:UserAssignedIdentity",
                 "azure-native:managedidentity:FederatedIdentityCredential")


def _name(urn: str) -> str:
    return urn.split("::")[-1]


def test_single_binary_registers_nothing_of_the_microservices_mode(plan):
    p = plan()
    assert not [r for r in p.resources if r.type in STORAGE_TYPES]
    # The one Service of the stack's own is the private link's: the chart's Service pyroscope is the write path.
    assert [r.name for r in p.by_type("kubernetes:core/v1:Service")] == ["pyroscope-private-link"]
    assert "components" not in p.one(RELEASE).inputs["values"]["pyroscope"]


def test_microservices_storage_without_shared_keys(plan):
    """The account locked down: shared keys off, TLS 1.2, no public blob access, HTTPS only; the container
    private; Storage Blob Data Contributor for the identity's principal on the container only."""
    from components.pyroscope_storage import derived_account_name

    p = plan(pyroscopeMode="microservices")
    account = p.one("azure-native:storage:StorageAccount").inputs
    cluster_id = p.outputs["clusterId"]
    assert account["accountName"] == derived_account_name(cluster_id) and len(account["accountName"]) == 24
    assert (account["allowSharedKeyAccess"], account["allowBlobPublicAccess"], account["minimumTlsVersion"],
            account["enableHttpsTrafficOnly"], account["resourceGroupName"]) == (False, False, "TLS1_2", True,
                                                                                 "rg-aks-gpu-dev")
    assert account["tags"]["managed-by"] == "aks-gpu-observability"
    container = p.one("azure-native:storage:BlobContainer").inputs
    assert (container["containerName"], container["publicAccess"]) == ("pyroscope", "None")
    role = next(r for r in p.resources if r.name == "pyroscope-storage-blob-data-contributor")
    assert role.inputs["scope"].endswith(
        f"/resourceGroups/rg-aks-gpu-dev/providers/Microsoft.Storage/storageAccounts/{account['accountName']}"
        "/blobServices/default/containers/pyroscope")
    assert role.inputs["roleDefinitionId"].endswith("/roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe")
    assert role.inputs["principalType"] == "ServicePrincipal"
    assert {_name(d) for d in role.dependencies} >= {"pyroscope-storage-container", "pyroscope-storage-identity"}
    credential = p.one("azure-native:managedidentity:FederatedIdentityCredential").inputs
    assert credential["subject"] == "system:serviceaccount:gadget:pyroscope"


def test_microservices_with_a_brought_account(plan):
    p = plan(pyroscopeMode="microservices", pyroscopeStorageAccount="stprofiles01",
             pyroscopeStorageAccountResourceGroup="rg-data", pyroscopeBlobContainer="gpu-profiles")
    assert not [r for r in p.resources if r.type.startswith("azure-native:storage:")]
    role = next(r for r in p.resources if r.name == "pyroscope-storage-blob-data-contributor")
    assert role.inputs["scope"].endswith("/resourceGroups/rg-data/providers/Microsoft.Storage/storageAccounts/"
                                         "stprofiles01/blobServices/default/containers/gpu-profiles")
    identity = p.one("azure-native:managedidentity:UserAssignedIdentity").inputs
    assert (identity["resourceName"], identity["resourceGroupName"]) == ("id-pyroscope-aks-gpu-dev", "rg-data")


def test_microservices_release_waits_for_the_credential_and_the_role(plan):
    """The pods authenticate at start: the release depends on the federated credential and the role assignment; the
    write path's Service on the release (a switch from single-binary uninstalls the chart's Service pyroscope first),
    replaced with it delete-first (so going back frees the name). No component's Service is a LoadBalancer or carries
    the PLS annotations: the private link Service, the stack's own, selects the query frontends."""
    from components.pyroscope import MODE_PATHS

    p = plan(pyroscopeMode="microservices")
    release = p.one(RELEASE)
    assert {"pyroscope-storage-federated-credential", "pyroscope-storage-blob-data-contributor"} <= \
        {_name(d) for d in release.dependencies}
    assert release.options["replaceOnChanges"] == ["values.pyroscope.components.ingester.persistence.enabled",
                                                   *MODE_PATHS]
    write = p.named("pyroscope-write-path")
    assert write.type == "kubernetes:core/v1:Service"
    assert release.urn in write.dependencies
    assert write.options["replaceWith"] == [release.urn] and write.options["deleteBeforeReplace"] is True
    private_link = p.named("pyroscope-private-link")
    assert private_link.inputs["spec"]["selector"]["app.kubernetes.io/component"] == "query-frontend"
    assert release.urn in private_link.dependencies and release.urn not in private_link.replace_with
    pyroscope = release.inputs["values"]["pyroscope"]
    assert pyroscope["service"] == {"port": 4040, "type": "ClusterIP"}
    assert not [name for name, component in pyroscope["components"].items() if "service" in component]
    assert pyroscope["persistence"] == {"enabled": False}
    assert pyroscope["components"]["ingester"]["persistence"]["enabled"] is True
    assert "compactor.data-dir" not in pyroscope["extraArgs"]
    assert pyroscope["extraArgs"]["compactor.blocks-retention-period"] == "14d"


@pytest.mark.parametrize("sku", ["Standard_ZRS", "Standard_LRS", "Standard_RAGZRS"])
def test_storage_account_sku_is_configurable(plan, sku):
    """Standard_ZRS (the FAQ's) needs a region with availability zones; pyroscopeStorageSku picks another."""
    overrides = {"pyroscopeMode": "microservices"} | ({} if sku == "Standard_ZRS" else {"pyroscopeStorageSku": sku})
    account = plan(**overrides).one("azure-native:storage:StorageAccount").inputs
    assert account["sku"] == {"name": sku}


def test_microservices_federates_the_cluster_issuer(plan):
    p = plan(pyroscopeMode="microservices")
    issuer = canned.managed_cluster({"resourceGroupName": "rg-aks-gpu-dev", "resourceName": "aks-gpu-dev"},
                                    "eastus2")["oidcIssuerProfile"]["issuerURL"]
    credential = p.one("azure-native:managedidentity:FederatedIdentityCredential").inputs
    assert credential["issuer"] == issuer and credential["audiences"] == ["api://AzureADTokenExchange"]
