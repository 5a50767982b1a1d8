"""Component PyroscopeStorage: the Azure side of Pyroscope's microservices mode (``pyroscopeMode: microservices``).

Owns: a storage account (or a brought one) and its blob container, a user-assigned identity with a federated
credential for ``system:serviceaccount:gadget:pyroscope``, and Storage Blob Data Contributor on the container
(``stack.specs.STORAGE_BLOB_DATA_CONTRIBUTOR``). Inputs: :class:`PyroscopeStorageArgs`. Outputs: ``account_name``,
``container_name``, ``client_id``, ``ready`` (what the release waits for). Waits for nothing in the cluster.
Upstream: MicrosoftDocs/azure-aks-docs ``articles/aks/gpu-profiling-faq.yml``; which credential Pyroscope's Azure
client takes: docs/decisions/pyroscope-storage.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional

import pulumi
from pulumi_azure_native import authorization, managedidentity, storage

from stack.specs import NAMESPACE, STORAGE_BLOB_DATA_CONTRIBUTOR, role_assignment_name, role_definition_id

TYPE = "aks-gpu-observability:index:PyroscopeStorage"
#: The audience of a federated credential for Kubernetes service account tokens (the FAQ's, and the webhook's
#: ``DefaultAudience``, Azure/azure-workload-identity v1.6.0 ``pkg/webhook/consts.go``).
AUDIENCE = "api://AzureADTokenExchange"
#: Chart 1.15.0's service account for release ``pyroscope`` (docs/decisions/pyroscope-storage.md).
SERVICE_ACCOUNT = "pyroscope"


def derived_account_name(cluster_id: str) -> str:
    """The storage account a stack creates when ``pyroscopeStorageAccount`` is empty: ``pyro`` and 20 hex digits of the
    cluster id's sha256 (24 characters, lowercase letters and digits; global names, so per cluster)."""
    return "pyro" + hashlib.sha256(cluster_id.lower().encode()).hexdigest()[:20]


def subject(namespace: str = NAMESPACE, service_account: str = SERVICE_ACCOUNT) -> str:
    return f"system:serviceaccount:{namespace}:{service_account}"


@dataclass(frozen=True)
class PyroscopeStorageArgs:
    """Inputs of :class:`PyroscopeStorage`. ``create_account``: create the account and container (else they exist).
    ``oidc_issuer_url``: the cluster's. ``identity_name``: the user-assigned identity, in ``resource_group``."""

    account_name: str
    resource_group: str
    container_name: str
    location: str
    subscription_id: str
    oidc_issuer_url: str
    identity_name: str
    create_account: bool
    tags: dict
    #: The created account's SKU (``pyroscopeStorageSku``); Standard_ZRS needs a region with availability zones.
    sku: str


class PyroscopeStorage(pulumi.ComponentResource):
    """Outputs: ``account_name``, ``container_name`` (plain), ``client_id`` (the identity's, for the service account
    annotation), ``ready`` (what the release waits for: the federated credential and the role assignment)."""

    def __init__(self, name: str, args: PyroscopeStorageArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account_id = (f"/subscriptions/{args.subscription_id}/resourceGroups/{args.resource_group}"
                      f"/providers/Microsoft.Storage/storageAccounts/{args.account_name}")
        container_scope = f"{account_id}/blobServices/default/containers/{args.container_name}"
        self.account: Optional[storage.StorageAccount] = None
        self.container: Optional[storage.BlobContainer] = None
        scope_ready: list = []
        if args.create_account:
            self.account = storage.StorageAccount(
                f"{name}-account",
                account_name=args.account_name,
                resource_group_name=args.resource_group,
                location=args.location,
                kind="StorageV2",
                sku=storage.SkuArgs(name=args.sku),
                allow_shared_key_access=False,
                allow_blob_public_access=False,
                minimum_tls_version="TLS1_2",
                enable_https_traffic_only=True,
                default_to_o_auth_authentication=True,
                tags=args.tags,
                # Named: a replacement must delete the old account first (azure-native refuses to create one that
                # exists). The profiles go with it: docs/sizing.md.
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
            )
            self.container = storage.BlobContainer(
                f"{name}-container",
                account_name=self.account.name,  # waits for the account
                resource_group_name=args.resource_group,
                container_name=args.container_name,
                public_access="None",
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
            )
            scope_ready = [self.container]
        self.identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_name_=args.identity_name,
            resource_group_name=args.resource_group,
            location=args.location,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.federated_credential = managedidentity.FederatedIdentityCredential(
            f"{name}-federated-credential",
            resource_name_=self.identity.name,  # waits for the identity
            resource_group_name=args.resource_group,
            federated_identity_credential_resource_name="pyroscope",
            issuer=args.oidc_issuer_url,
            subject=subject(),
            audiences=[AUDIENCE],
            opts=child,
        )
        self.role_assignment = authorization.RoleAssignment(
            f"{name}-blob-data-contributor",
            role_assignment_name=self.identity.principal_id.apply(
                lambda principal: role_assignment_name(container_scope, STORAGE_BLOB_DATA_CONTRIBUTOR, principal)),
            scope=container_scope,
            role_definition_id=role_definition_id(args.subscription_id, STORAGE_BLOB_DATA_CONTRIBUTOR),
            principal_id=self.identity.principal_id,
            principal_type="ServicePrincipal",
            # The scope is a plain string: the container must exist before ARM accepts an assignment on it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=scope_ready or None, delete_before_replace=True),
        )
        self.account_name = args.account_name
        self.container_name = args.container_name
        self.client_id = self.identity.client_id
        self.ready = [self.federated_credential, self.role_assignment]
        self.register_outputs({"client_id": self.client_id})
