"""Scenarios for the step scripts under the stand-in ``az`` (tests/support/fake_az.py). SIMULATED: Azure's answers.

Each scenario: the script, its environment, the rules the stand-in answers with, and what must happen.
tests/steps/test_<script>.py runs those of its script (tests/support/scenario_checks.py); tests/steps/test_azcli.py
runs them all again to collect every ``az`` command line the scripts emit and checks each against the real azure-cli
parser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

ROOT = Path(__file__).resolve().parents[2]
SUB = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"
NODE_RG = "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"
PLS_ID = f"/subscriptions/{SUB}/resourceGroups/{NODE_RG}/providers/Microsoft.Network/privateLinkServices/pyroscope-pls"
GRAFANA_ID = (
    f"/subscriptions/{SUB}/resourceGroups/rg-observability-dev/providers/Microsoft.Dashboard/grafana/amg-gpu-dev")
OURS = "grafana-amg-gpu-dev-pyroscope-mpe"
FAST = {"POLL_INITIAL_SECONDS": "0", "POLL_MAX_SECONDS": "0"}

NOT_FOUND = {
    "exit": 3,
    "stderr": "ERROR: (ResourceNotFound) The Resource 'Microsoft.Network/privateLinkServices/pyroscope-pls' under "
              f"resource group '{NODE_RG}' was not found. For more details please go to "
              "https://aka.ms/ARMResourceNotFoundFix\nCode: ResourceNotFound",
}
CONFLICT = {
    "exit": 1,
    "stderr": 'ERROR: Conflict({"error":{"code":"ConflictInProcessing","message":"Another operation is in progress on '
              'grafana amg-gpu-dev. Retry later."}})',
}
THROTTLED = {"exit": 1,
             "stderr": 'ERROR: Too Many Requests({"error":{"code":"TooManyRequests",'
                       '"message":"Rate limit exceeded."}})'}
FORBIDDEN = {
    "exit": 1,
    "stderr": 'ERROR: Forbidden({"error":{"code":"AuthorizationFailed","message":"The client does not have '
              'authorization to perform action Microsoft.Dashboard/grafana/refreshManagedPrivateEndpoints/action."}})',
}


#: The cluster's load balancers (its node resource group) and the frontend its Pyroscope Service got on the internal
#: one.
LB_SCOPE = f"/subscriptions/{SUB}/resourceGroups/{NODE_RG}/providers/Microsoft.Network/loadBalancers/"
FRONTEND = f"{LB_SCOPE}kubernetes-internal/frontendIPConfigurations/a4c1e2f3aaaaabbbbcccc1234567890ab"
#: Another cluster's frontend: its own node resource group.
OTHER_FRONTEND = (f"/subscriptions/{SUB}/resourceGroups/MC_rg-aks-gpu-b_aks-gpu-b_eastus2/providers/Microsoft.Network/"
                  "loadBalancers/kubernetes-internal/frontendIPConfigurations/a9d8c7b6a5f4e3d2c1b0a99887766554")


def ip_configuration(address: Optional[str] = "10.224.0.9", subnet: str = "snet-aks", index: int = 0) -> dict:
    """One NAT IP configuration as the AKS cloud provider makes it (``reconcilePLSIpConfigs``: dynamic,
    ``<subnet>-<pls>-dynamic-<i>``), as az prints it (properties flattened: ``privateIPAddress``, the AAZ schema's
    serialized name in azure-cli ``network/aaz/latest/network/private_link_service/_show.py``); ``address`` None: not
    yet allocated."""
    return {"name": f"{subnet}-pyroscope-pls-dynamic-{index}", "primary": index == 0,
            "privateIPAllocationMethod": "Dynamic",
            "privateIPAddressVersion": "IPv4", **({"privateIPAddress": address} if address else {}),
            "subnet": {"id": f"/subscriptions/{SUB}/resourceGroups/rg-aks-gpu-dev/providers/Microsoft.Network"
                             f"/virtualNetworks/vnet-aks/subnets/{subnet}"}}


def pls(state: str = "Succeeded", connections: Optional[list] = None, frontend: str = FRONTEND,
        owner: Optional[str] = "gadget/pyroscope", ip_configurations: Optional[list] = None) -> dict:
    """A private link service body as ``az network private-link-service show`` returns it, made by the AKS cloud
    provider for the Service ``owner`` on load balancer frontend ``frontend`` (tags as ``reconcilePLSTags`` writes
    them), with ``ip_configurations`` (default: one, addressed)."""
    tags = {"k8s-azure-cluster-name": "kubernetes", **({"k8s-azure-owner-service": owner} if owner else {})}
    return {"json": {
        "id": PLS_ID, "name": "pyroscope-pls", "type": "Microsoft.Network/privateLinkServices",
        "location": "eastus2", "provisioningState": state,
        "alias": "pyroscope-pls.4c1e2f3a-aaaa-bbbb-cccc-1234567890ab.eastus2.azure.privatelinkservice",
        "loadBalancerFrontendIpConfigurations": [{"id": frontend}], "tags": tags,
        "ipConfigurations": [ip_configuration()] if ip_configurations is None else ip_configurations,
        "privateEndpointConnections": connections,
    }}


#: The subscription Grafana's managed private endpoints live in, as the stand-in has it (not documented:
#: docs/how-it-works.md).
MANAGED_SUB = "00000000-1111-2222-3333-444444444444"
#: A stranger's subscription: anyone who knows the PLS alias may ask for a connection from it (visibility ``*``).
ATTACKER_SUB = "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d"
#: This stack's approval nonce (a secret: components/grafana_private_link.py) and the marker derived from it.
NONCE = "5f1c0e9a7b3d4c2e8f6a1b0c9d8e7f6a"
MARKER = "c0ffee15deadbeef"
#: What Grafana's managed private endpoint asks with: its requestMessage, which carries the nonce.
REQUEST = f"Azure Managed Grafana amg-gpu-dev to Pyroscope on AKS cluster aks-gpu-dev (aks-gpu-observability {NONCE})"
REJECTED_BY_US = f"Rejected by aks-gpu-observability: not from the managed private endpoint {OURS} of this stack"
APPROVED_BY_US = f"Approved for Azure Managed Grafana amg-gpu-dev by aks-gpu-observability (approval {MARKER})"


def connection(endpoint_name: str, status: str, guid: str = "f072a430-2d82-4470-ab30-d23fcfee58d1",
               subscription: str = MANAGED_SUB, description: Optional[str] = None) -> dict:
    """A connection on the PLS from private endpoint ``endpoint_name`` in ``subscription``. Its description: while
    Pending, what the endpoint asked with (Grafana's: :data:`REQUEST`); once the PLS owner acted, what the owner wrote
    (ours: :data:`APPROVED_BY_US`). Default: ours, as the status says."""
    name = f"{endpoint_name}.{guid}"
    if description is None:
        description = APPROVED_BY_US if status == "Approved" else REQUEST if status == "Pending" else ""
    return {
        "id": f"{PLS_ID}/privateEndpointConnections/{name}",
        "name": name,
        "privateEndpoint": {
            "id": f"/subscriptions/{subscription}/resourceGroups/managed-rg/providers/Microsoft.Network/"
                  f"privateEndpoints/{endpoint_name}"},
        "privateLinkServiceConnectionState": {"status": status, "description": description, "actionsRequired": "None"},
    }


def stranger(status: str = "Pending", guid: str = "0badc0de-2d82-4470-ab30-d23fcfee58d1",
             description: str = "please approve") -> dict:
    """A connection from a private endpoint named like ours in another subscription (attacker-rg), which does not know
    the nonce."""
    c = connection(OURS, status, guid, ATTACKER_SUB, description)
    c["privateEndpoint"]["id"] = c["privateEndpoint"]["id"].replace("managed-rg", "attacker-rg")
    return c


def mpe(status: Optional[str], ip: Optional[str]) -> dict:
    return {"json": {
        "id": f"{GRAFANA_ID}/managedPrivateEndpoints/pyroscope-mpe", "name": "pyroscope-mpe",
        "properties": {"provisioningState": "Succeeded", "privateLinkResourceId": PLS_ID,
                       "connectionState": {"status": status, "description": ""} if status else None,
                       "privateLinkServicePrivateIP": ip},
    }}


SHOW = ["network", "private-link-service", "show"]
APPROVE = ["network", "private-link-service", "connection", "update"]
REFRESH = ["rest", "--method", "post", "refreshManagedPrivateEndpoints"]
GET_MPE = ["rest", "--method", "get", "managedPrivateEndpoints/pyroscope-mpe"]

WAIT_ENV = {"PLS_RESOURCE_GROUP": NODE_RG, "PLS_NAME": "pyroscope-pls", "TIMEOUT_SECONDS": "60",
            "LOAD_BALANCER_SCOPE": LB_SCOPE, "OWNER_SERVICE": "gadget/pyroscope", "IP_CONFIGURATION_COUNT": "1", **FAST}
APPROVE_ENV = {"PLS_RESOURCE_GROUP": NODE_RG, "PLS_NAME": "pyroscope-pls", "PRIVATE_ENDPOINT_NAME": OURS,
               "DESCRIPTION": "Approved for Azure Managed Grafana amg-gpu-dev by aks-gpu-observability",
               "APPROVAL_NONCE": NONCE, "APPROVAL_MARKER": MARKER, "TIMEOUT_SECONDS": "60", **FAST}
#: The approval's rules: 0 reads one connection's description from the PLS just listed, 1 lists the connections, 2 the
#: approval, 3 a rejection.
DESCRIBE = SHOW + ["privateLinkServiceConnectionState.description"]
APPROVE_OK = APPROVE + ["--connection-status", "Approved"]
REJECT = APPROVE + ["--connection-status", "Rejected"]


def approval_rules(shows: list, approvals: Optional[list] = None, rejections: Optional[list] = None) -> list:
    return [{"match": DESCRIBE, "responses": [{"last_of": 1}]}, {"match": SHOW, "responses": shows},
            {"match": APPROVE_OK, "responses": approvals or [{"json": {}}]},
            {"match": REJECT, "responses": rejections or [{"json": {}}]}]
REFRESH_ENV = {"GRAFANA_ID": GRAFANA_ID, "MPE_NAME": "pyroscope-mpe", "API_VERSION": "2024-10-01",
               "TIMEOUT_SECONDS": "60", **FAST}


@dataclass
class Scenario:
    name: str
    script: str
    env: dict
    rules: list
    args: list = field(default_factory=list)  # for the Python steps: apply or delete
    exit: int = 0
    stdout: str = ""
    pattern: bool = False  # stdout is a regular expression (the owner id of a create is random)
    stderr_has: list = field(default_factory=list)
    calls: dict = field(default_factory=dict)  # rule index -> expected number of calls
    max_seconds: float = 20.0
    #: The Grafana version and installed datasource plugins the stand-in reports to the Grafana steps (GET
    #: /api/health, GET /api/plugins; rules appended after the scenario's own, see :func:`grafana_server_rules`).
    grafana_version: str = "12.4.4"
    grafana_plugins: tuple = ()


SCENARIOS = [
    Scenario("pls-appears-after-polls", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [NOT_FOUND, NOT_FOUND, NOT_FOUND, pls("Updating"), pls()]}],
             stdout=PLS_ID + "\n", stderr_has=["waiting up to 60s for private link service pyroscope-pls",
                                               "not there yet", "provisioningState Updating"],
             calls={0: 5}),
    Scenario("pls-never-appears", "wait_private_link_service.sh",
             {**WAIT_ENV, "TIMEOUT_SECONDS": "3", "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "1"},
             [{"match": SHOW, "responses": [NOT_FOUND]}], exit=1,
             stderr_has=["error: private link service pyroscope-pls did not appear in " + NODE_RG + " within 3s",
                         "kubectl -n gadget get svc pyroscope-private-link -o yaml"], max_seconds=10),
    Scenario("pls-show-forbidden-fails-fast", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [{"exit": 1,
                                             "stderr": "ERROR: (AuthorizationFailed) The client 'x' does not have "
                                                       "authorization to perform action "
                                                       "'Microsoft.Network/privateLinkServices/read'."}]}],
             exit=1, stderr_has=["error: az network private-link-service show failed: ERROR: (AuthorizationFailed)"],
             calls={0: 1}),
    Scenario("pls-resource-group-missing-fails-fast", "wait_private_link_service.sh",
             {**WAIT_ENV, "PLS_RESOURCE_GROUP": "rg-typo"},
             [{"match": SHOW, "responses": [{"exit": 3,
                                             "stderr": "ERROR: (ResourceGroupNotFound) Resource group 'rg-typo' could "
                                                       "not be found.\nCode: ResourceGroupNotFound\nMessage: Resource "
                                                       "group 'rg-typo' could not be found."}]}],
             exit=1,
             stderr_has=[
                 "error: az network private-link-service show failed: Message: Resource group 'rg-typo' could not be "
                 "found."], calls={0: 1}),
    Scenario("pls-failed-state-fails-fast", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [pls("Failed")]}], exit=1,
             stderr_has=["exists but its provisioningState is Failed",
                         "az monitor activity-log list --resource-id " + PLS_ID], calls={0: 1}),
    Scenario("pls-stuck-updating-says-so", "wait_private_link_service.sh",
             # 6 s, not 2: on a loaded machine the stand-in's first answer alone took over 2 s (seen flaky).
             {**WAIT_ENV, "TIMEOUT_SECONDS": "6", "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "1"},
             [{"match": SHOW, "responses": [NOT_FOUND, pls("Updating")]}], exit=1,
             stderr_has=[
                 "error: private link service pyroscope-pls exists but stayed in provisioningState Updating for 6s"],
             max_seconds=20),
    # privateLinkIpAddressCount 1 -> 2: the cloud provider rebuilds the configurations after the Service's update, the
    # new ones without an address at first (reconcilePLSIpConfigs); the wait returns only once both have one.
    Scenario("pls-waits-for-its-nat-ip-configurations", "wait_private_link_service.sh",
             {**WAIT_ENV, "IP_CONFIGURATION_COUNT": "2"},
             [{"match": SHOW, "responses": [pls(), pls(ip_configurations=[ip_configuration(None),
                                                                          ip_configuration(None, index=1)]),
                     pls(ip_configurations=[ip_configuration("10.224.0.11"),
                      ip_configuration("10.224.0.12", index=1)])]}],
             stdout=PLS_ID + "\n", calls={0: 3},
             stderr_has=[
                 "not yet as the Service's annotations ask: with 1 of 1 NAT IP configurations addressed (2 wanted, in "
                 "subnet snet-aks)",
                 "with 0 of 2 NAT IP configurations addressed", "2 NAT IP configuration(s)"]),
    # privateLinkSubnet set on a deployed stack: the configurations move to the new subnet; the old ones do not count.
    Scenario("pls-waits-for-its-nat-ips-in-the-annotated-subnet", "wait_private_link_service.sh",
             {**WAIT_ENV, "PLS_SUBNET": "snet-pls"},
             [{"match": SHOW, "responses": [pls(),
                                            pls(ip_configurations=[ip_configuration("10.225.8.4", "snet-pls")])]}],
             stdout=PLS_ID + "\n", calls={0: 2}, stderr_has=["in subnet snet-pls"]),
    Scenario("pls-nat-ips-never-as-annotated-says-so", "wait_private_link_service.sh",
             {**WAIT_ENV, "IP_CONFIGURATION_COUNT": "2", "TIMEOUT_SECONDS": "4", "POLL_INITIAL_SECONDS": "1",
              "POLL_MAX_SECONDS": "1"},
             [{"match": SHOW, "responses": [pls()]}], exit=1, max_seconds=20,
             stderr_has=[
                 "error: private link service pyroscope-pls exists but stayed with 1 of 1 NAT IP configurations "
                 "addressed (2 wanted, in subnet snet-aks) for 4s"]),
    Scenario("pls-missing-env", "wait_private_link_service.sh", {k: v for k, v in WAIT_ENV.items() if k != "PLS_NAME"},
             [], exit=1, stderr_has=["error: environment variable PLS_NAME is required"]),
    # Two clusters, one PLS resource group: the name is taken by the other cluster's PLS (its frontend is on a load
    # balancer in its own node resource group). Refused at once, in one line, before the endpoint is created.
    Scenario("pls-of-another-cluster-refused", "wait_private_link_service.sh", {**WAIT_ENV,
                                                                                "PLS_RESOURCE_GROUP": "rg-network"},
             [{"match": SHOW, "responses": [pls(frontend=OTHER_FRONTEND)]}], exit=1, calls={0: 1},
             stderr_has=[
                 "error: private link service pyroscope-pls in rg-network is not this cluster's: it serves load "
                 f"balancer frontend {OTHER_FRONTEND} (k8s-azure-owner-service gadget/pyroscope), not a load "
                 f"balancer under {LB_SCOPE} for Service gadget/pyroscope; nothing was connected to it",
                 "give this stack its own privateLinkServiceName"]),
    Scenario("pls-of-another-service-refused", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [pls(owner="default/other-app")]}], exit=1, calls={0: 1},
             stderr_has=["is not this cluster's", "(k8s-azure-owner-service default/other-app)"]),
    Scenario("pls-without-owner-tag-refused", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [pls(owner=None)]}], exit=1, calls={0: 1},
             stderr_has=["is not this cluster's", "(k8s-azure-owner-service none)"]),
    Scenario("pls-ours-ids-compared-without-case", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [pls(frontend=FRONTEND.replace("resourceGroups",
                                                                          "resourcegroups").upper())]}],
             stdout=PLS_ID + "\n", calls={0: 1}, stderr_has=["this cluster's (frontend"]),
    Scenario("two-pending-only-ours-approved", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([
                 pls(connections=[connection("grafana-other-grafana-pyroscope-mpe", "Pending",
                                             "11111111-2d82-4470-ab30-d23fcfee58d1"),
                  connection(OURS, "Pending")]),
                 pls(connections=[connection("grafana-other-grafana-pyroscope-mpe", "Pending",
                                             "11111111-2d82-4470-ab30-d23fcfee58d1"),
                  connection(OURS, "Approved")])]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={1: 2, 2: 1, 3: 0}),
    Scenario("approval-answer-ends-the-step", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS, "Pending")])], [{"json": connection(OURS, "Approved")}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", stderr_has=["is Approved"],
             calls={0: 1, 1: 1, 2: 1}),
    Scenario("approval-answer-not-approved-is-read-back", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS, "Pending")]),
                             pls(connections=[connection(OURS, "Approved")])],
                    [{"json": connection(OURS, "Pending")}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", stderr_has=["answer: Pending", "reading it back"],
             calls={1: 2, 2: 1}),
    # A re-run after our approval: the description is ours (with the marker); nothing is written.
    Scenario("already-approved", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS, "Approved")])]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={0: 1, 1: 1, 2: 0, 3: 0}),
    Scenario("connection-appears-late", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=None), pls(connections=[]), pls(connections=[connection(OURS, "Pending")]),
                     pls(connections=[connection(OURS, "Approved")])]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n",
             stderr_has=["no connection from " + OURS + " with this stack's approval nonce yet"],
             calls={1: 4, 2: 1}),
    Scenario("endpoint-id-casing-differs", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS.upper(), "Approved")])]),
             stdout=f"{OURS.upper()}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={2: 0, 3: 0}),
    Scenario("similar-name-is-not-ours", "approve_private_endpoint_connection.sh",
             {**APPROVE_ENV, "TIMEOUT_SECONDS": "1"},
             approval_rules([pls(connections=[connection("x" + OURS, "Pending"), connection(OURS + "2", "Pending")])]),
             exit=1,
             stderr_has=["no connection from private endpoint " + OURS + " was approved on pyroscope-pls within 1s"],
             calls={0: 0, 2: 0, 3: 0}, max_seconds=10),
    Scenario("ambiguous-refused", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS, "Pending"),
              connection(OURS, "Pending", "22222222-2d82-4470-ab30-d23fcfee58d1")])]),
             exit=1,
             stderr_has=["2 connections on pyroscope-pls come from private endpoint " + OURS
                         + " with this stack's approval nonce; refusing to guess",
                 f"{OURS}.22222222-2d82-4470-ab30-d23fcfee58d1 (Pending, subscription {MANAGED_SUB})",
                 "reject each foreign one by hand (az network private-link-service connection update "
                 f"--resource-group {NODE_RG} --service-name pyroscope-pls --name <connection name> "
                 "--connection-status Rejected)"],
             calls={2: 0, 3: 0}),
    Scenario("rejected-connection-explains", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             # Ours rejected by hand without a new description (az keeps the request message: it GETs the connection and
             # PUTs it back), so it still carries the nonce; one with neither nonce nor marker is not known as ours.
             approval_rules([pls(connections=[connection(OURS, "Rejected", description=REQUEST)])]),
             exit=1, stderr_has=["is Rejected; a Rejected connection cannot be approved", "pulumi up --replace"]),
    Scenario("ours-disconnected-explains", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS, "Disconnected", description=APPROVED_BY_US)])]),
             exit=1, stderr_has=["is Disconnected; a Disconnected connection cannot be approved",
                                 "pulumi up --replace"]),
    Scenario("approval-conflict-retried", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS, "Pending")]),
                             pls(connections=[connection(OURS, "Pending")]),
             pls(connections=[connection(OURS, "Approved")])],
                    [{"exit": 1,
                      "stderr": "ERROR: (AnotherOperationInProgress) Another operation on this or dependent resource "
                                "is in progress."}, {"json": {}}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", stderr_has=["approval deferred"],
             calls={1: 3, 2: 2}),
    Scenario("approval-missing-nonce-refused", "approve_private_endpoint_connection.sh",
             {k: v for k, v in APPROVE_ENV.items() if k != "APPROVAL_NONCE"}, [], exit=1,
             stderr_has=["error: environment variable APPROVAL_NONCE is required"]),
    # A stranger who knows the PLS alias makes, in their own subscription, a private endpoint named like Grafana's:
    # it is rejected, never approved (a name-only check would approve it).
    Scenario("stranger-same-name-is-rejected-not-approved", "approve_private_endpoint_connection.sh",
             {**APPROVE_ENV, "TIMEOUT_SECONDS": "1"},
             approval_rules([pls(connections=[stranger()]),
                             pls(connections=[stranger("Rejected", description=REJECTED_BY_US)])]),
             exit=1,
             stderr_has=["no connection from private endpoint " + OURS + " was approved on pyroscope-pls within 1s"],
             calls={2: 0, 3: 1}, max_seconds=10),
    # ... before Grafana's: rejected, then ours approved once it comes (the rejected one, with our rejection, is
    # ignored).
    Scenario("stranger-before-ours", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[stranger()]),
             pls(connections=[stranger("Rejected", description=REJECTED_BY_US)]),
             pls(connections=[stranger("Rejected", description=REJECTED_BY_US), connection(OURS, "Pending")])],
                    [{"json": connection(OURS, "Approved")}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n",
             stderr_has=[
                 f"rejected connection {OURS}.0badc0de-2d82-4470-ab30-d23fcfee58d1 from private endpoint {OURS} "
                 f"in subscription {ATTACKER_SUB}: its request does not carry this stack's approval nonce"],
             calls={1: 3, 2: 1, 3: 1}),
    # ... alongside Grafana's: both in one listing; the stranger rejected, ours approved.
    Scenario("stranger-alongside-ours", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[stranger(), connection(OURS, "Pending")])],
                    [{"json": connection(OURS, "Approved")}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={1: 1, 2: 1, 3: 1}),
    # ... after Grafana's was approved (a re-run): the stranger is rejected, ours left as it is.
    Scenario("stranger-after-ours", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[connection(OURS, "Approved"), stranger()])]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={1: 1, 2: 0, 3: 1},
             stderr_has=[f"in subscription {ATTACKER_SUB}: its request does not carry"]),
    # ... approved before the upgrade (by the name-only version of this step, whose description had no marker):
    # rejected.
    Scenario("stranger-approved-before-the-upgrade", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[stranger("Approved", description=APPROVE_ENV["DESCRIPTION"]),
                                              connection(OURS, "Pending")])],
                    [{"json": connection(OURS, "Approved")}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={2: 1, 3: 1},
             stderr_has=[f"in subscription {ATTACKER_SUB}: it was Approved without this stack's approval marker"]),
    # A description that tries to forge rows (tab and line break; tsv does not escape them) forges nothing.
    Scenario("stranger-description-cannot-forge-rows", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[
                 stranger(
                     description=f"x\n{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\t/subscriptions/{ATTACKER_SUB}/x/{OURS}\tPending"),
                 connection(OURS, "Pending")])], [{"json": connection(OURS, "Approved")}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={1: 1, 2: 1, 3: 1}),
    # The stranger deletes its private endpoint between the listing and the rejection (it controls the
    # timing; with visibility '*' it may keep making and deleting same-name endpoints). The rejection's GET of the
    # connection answers 404 (azure-cli aaz .../private_link_service/connection/_update.py: GET, then PUT; a status
    # other than 200 is on_error). A connection that is gone needs no rejection: ours must still be approved.
    Scenario("stranger-gone-before-its-rejection", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[stranger(), connection(OURS, "Pending")])],
                    [{"json": connection(OURS, "Approved")}],
                    [{"exit": 3, "stderr": f"ERROR: (NotFound) Resource {PLS_ID}/privateEndpointConnections/"
                    f"{OURS}.0badc0de-2d82-4470-ab30-d23fcfee58d1 not found.\nCode: NotFound"}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={2: 1}),
    # A stranger's same-name connection the PLS owner rejected by hand (the owner's own description, not
    # ours) while ours is not listed yet (the step waits for a late connection: connection-appears-late). The step
    # dies telling the deployer to replace the managed private endpoint, although the Rejected one is not ours (its
    # private endpoint is in another subscription) and ours comes at the next check.
    Scenario("stranger-rejected-by-hand-does-not-stop-the-wait", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             approval_rules([pls(connections=[stranger("Rejected", description="not yours")]),
             pls(connections=[stranger("Rejected", description="not yours"), connection(OURS, "Pending")])],
                    [{"json": connection(OURS, "Approved")}]),
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={1: 2, 2: 1, 3: 0}),
    # ... and if ours never comes, the timeout names the one it ignored (it may be ours, rejected by hand with a new
    # description) and what to do then; the line saying it was ignored is logged once, not at every check.
    Scenario("stranger-rejected-by-hand-named-at-the-timeout", "approve_private_endpoint_connection.sh",
             {**APPROVE_ENV, "TIMEOUT_SECONDS": "1"},
             approval_rules([pls(connections=[stranger("Rejected", description="not yours")])]),
             exit=1,
             stderr_has=["ignoring connection " + OURS + ".0badc0de-2d82-4470-ab30-d23fcfee58d1 from private endpoint "
                 f"{OURS} in subscription {ATTACKER_SUB}: it is Rejected and carries neither",
                 f"ignored, as they carry neither this stack's approval nonce nor its marker: {OURS}."
                 f"0badc0de-2d82-4470-ab30-d23fcfee58d1 (Rejected, from subscription {ATTACKER_SUB})",
                 "pulumi up --replace"],
             calls={2: 0, 3: 0}, max_seconds=10),
    Scenario("refresh-409-twice-then-ok", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [CONFLICT, CONFLICT, {"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Pending", None), mpe("Pending", None), mpe("Pending", None),
                                               mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", stderr_has=["refresh deferred", "ConflictInProcessing", "refresh requested"],
             calls={0: 3, 1: 4}),
    Scenario("refresh-429-then-ok", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [THROTTLED, {"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Pending", None), mpe("Pending", None),
                                               mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", calls={0: 2, 1: 3}),
    # Another stack's refresh followed this approval: the endpoint reads Approved with its IP, no POST.
    Scenario("refresh-not-needed", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [{"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", stderr_has=["Approved with private IP 10.0.4.36 already: no refresh needed"],
             calls={0: 0, 1: 1}),
    # The 409 was another stack's refresh, which served this endpoint too: read before the retry, no second POST.
    Scenario("refresh-served-by-the-one-running", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [CONFLICT, {"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Pending", None), mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", stderr_has=["refresh deferred", "no refresh needed"], calls={0: 1, 1: 2}),
    Scenario("refresh-keeps-failing", "refresh_managed_private_endpoints.sh",
             {**REFRESH_ENV, "TIMEOUT_SECONDS": "3", "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "1"},
             [{"match": REFRESH, "responses": [CONFLICT]},
              {"match": GET_MPE, "responses": [mpe("Pending", None)]}], exit=1,
             stderr_has=["error: refreshManagedPrivateEndpoints kept failing for 3s", "ConflictInProcessing"],
             max_seconds=10),
    Scenario("refresh-forbidden-fails-fast", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [FORBIDDEN]},
              {"match": GET_MPE, "responses": [mpe("Pending", None)]}], exit=1,
             stderr_has=["error: refreshManagedPrivateEndpoints failed: ERROR: Forbidden"], calls={0: 1, 1: 1}),
    Scenario("private-ip-appears-late", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [{"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Pending", None), mpe("Pending", None), mpe("Approved", None),
                                               mpe("Approved", ""), mpe(None, None), mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", stderr_has=["status Pending, private IP none yet"], calls={0: 2, 1: 6}),
    Scenario("private-ip-never-appears", "refresh_managed_private_endpoints.sh",
             {**REFRESH_ENV, "TIMEOUT_SECONDS": "2", "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "1"},
             [{"match": REFRESH, "responses": [{"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Approved", None)]}], exit=1,
             stderr_has=["error: managed private endpoint pyroscope-mpe has no private IP after 2s (status Approved)"],
             max_seconds=10),
]


# --- The shared Monitoring Data Reader assignment (multiCluster): ensured, never deleted
# -------------------------------
WORKSPACE_ID = (
    f"/subscriptions/{SUB}/resourceGroups/rg-observability-dev/providers/Microsoft.Monitor/accounts/amw-gpu-dev")
READER_ID = (
    f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/b0d8363b-8ddd-447d-831f-62ca05bff136")
ROLE_ENV = {"SCOPE": WORKSPACE_ID, "ROLE_DEFINITION_ID": READER_ID,
            "PRINCIPAL_ID": "5b0b8b6c-3c2f-4a8e-9d1e-2f6a7b8c9d0e",
            "PRINCIPAL_TYPE": "ServicePrincipal", "ASSIGNMENT_NAME": "ab9c3150-b426-55da-8fd7-39b932944bbd",
            "DESCRIPTION": "Azure Managed Grafana reads Inspektor Gadget metrics (aks-gpu-observability)",
            "TIMEOUT_SECONDS": "60", **FAST}
CREATE_ROLE = ["role", "assignment", "create", "--assignee-object-id", "--assignee-principal-type", "ServicePrincipal",
               "--role", READER_ID, "--scope", WORKSPACE_ID, "--name", "ab9c3150-b426-55da-8fd7-39b932944bbd"]


LIST_ROLE = ["role", "assignment", "list", "--assignee-object-id", ROLE_ENV["PRINCIPAL_ID"], "--role", READER_ID,
             "--scope", WORKSPACE_ID]
#: Another principal holding the same role on the same scope (another Grafana's identity, a user).
OTHER_PRINCIPAL = "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6"


def assignment(name: str = "ab9c3150-b426-55da-8fd7-39b932944bbd", principal: str = ROLE_ENV["PRINCIPAL_ID"]) -> dict:
    """A role assignment as `az role assignment create` prints it (azure-cli 2.91.0: flat, camelCase)."""
    return {"json": {"id": f"{WORKSPACE_ID}/providers/Microsoft.Authorization/roleAssignments/{name}", "name": name,
                     "principalId": principal, "principalType": "ServicePrincipal",
                     "roleDefinitionId": READER_ID, "scope": WORKSPACE_ID,
                     "type": "Microsoft.Authorization/roleAssignments"}}


PRINCIPAL_NOT_FOUND = {"exit": 1, "stderr": (
    f"ERROR: (PrincipalNotFound) Principal {ROLE_ENV['PRINCIPAL_ID']} does not exist in the directory "
    "72f988bf-86f1-41af-91ab-2d7cd011db47. Check that you have the correct principal ID.\nCode: PrincipalNotFound")}
ROLE_FORBIDDEN = {"exit": 1, "stderr": (
    "ERROR: (AuthorizationFailed) The client 'deployer@example.com' does not have authorization to perform action "
    "'Microsoft.Authorization/roleAssignments/write'.\nCode: AuthorizationFailed")}

SCENARIOS += [
    Scenario("role-assignment-made", "ensure_role_assignment.sh", ROLE_ENV,
             [{"match": CREATE_ROLE, "responses": [assignment()]}],
             stdout=assignment()["json"]["id"] + "\n", stderr_has=["is in place"], calls={0: 1}),
    # azure-cli answers RoleAssignmentExists with the existing assignment, whatever its name (another stack's, the
    # portal's).
    Scenario("role-assignment-already-held-under-another-name", "ensure_role_assignment.sh", ROLE_ENV,
             [{"match": CREATE_ROLE, "responses": [assignment("0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9")]}],
             stdout=assignment("0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9")["json"]["id"] + "\n", calls={0: 1}),
    # Older azure-cli answers the 409 with the first assignment of the role on the scope, whoever's (Azure/azure-cli
    # role/custom.py @ 01ce0346: list_role_assignments with assignee None): the step reads the principal's own.
    Scenario("role-assignment-409-answered-with-another-principals", "ensure_role_assignment.sh", ROLE_ENV,
             [{"match": CREATE_ROLE, "responses": [assignment("11111111-2222-4333-8444-555555555555",
                                                              OTHER_PRINCIPAL)]},
              {"match": LIST_ROLE,
               "responses": [{"json": [assignment("0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9")["json"]]}]}],
             stdout=assignment("0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9")["json"]["id"] + "\n", calls={0: 1, 1: 1},
             stderr_has=[
                 f"answered with principal {OTHER_PRINCIPAL}'s assignment 11111111-2222-4333-8444-555555555555"]),
    Scenario("role-assignment-throttled-then-made", "ensure_role_assignment.sh", ROLE_ENV,
             [{"match": CREATE_ROLE, "responses": [THROTTLED, assignment()]}],
             stdout=assignment()["json"]["id"] + "\n", stderr_has=["retrying after"], calls={0: 2}),
    Scenario("role-assignment-principal-not-replicated-yet", "ensure_role_assignment.sh", ROLE_ENV,
             [{"match": CREATE_ROLE, "responses": [PRINCIPAL_NOT_FOUND, PRINCIPAL_NOT_FOUND, assignment()]}],
             stdout=assignment()["json"]["id"] + "\n", calls={0: 3}),
    Scenario("role-assignment-forbidden-fails-fast", "ensure_role_assignment.sh", ROLE_ENV,
             [{"match": CREATE_ROLE, "responses": [ROLE_FORBIDDEN]}], exit=1, calls={0: 1},
             stderr_has=["error: az role assignment create failed: Code: AuthorizationFailed",
                 "needs Owner, User Access Administrator or Role Based Access Control Administrator"]),
    Scenario("role-assignment-missing-env", "ensure_role_assignment.sh",
             {k: v for k, v in ROLE_ENV.items() if k != "PRINCIPAL_ID"}, [], exit=1,
             stderr_has=["error: environment variable PRINCIPAL_ID is required"]),
]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    calls: list  # [{"argv": [...], "rule": int|None}]

    def count(self, rule: int) -> int:
        return sum(1 for call in self.calls if call["rule"] == rule)


# --- Grafana datasources and dashboard (Python steps) ------------------------------------------------------
REFERENCE = ROOT / "tests" / "reference"  # the vendored dashboard (tests/reference/README.md)
DASHBOARD_FILE = REFERENCE / "grafana-dashboards" / "AdvancedGPUObservability.json"
DASHBOARD_SHA256 = "9c87339704d1c8b9d5897e82acd366cea751cf0030850319feb06c05ac3b1ea4"
DASHBOARD_URL = ("https://raw.githubusercontent.com/inspektor-gadget/grafana-dashboards/"
                 "494542d8a0439fe4b1a60577e70677cec5c96070/dashboards/gpu-observability/AdvancedGPUObservability.json")
GRAFANA = "https://amg-gpu-dev-011fd0c15.eas.grafana.azure.com"
DS_URL = f"{GRAFANA}/api/datasources/uid/local-pyroscope"
PYROSCOPE_DS = {"access": "proxy", "jsonData": {}, "name": "Pyroscope", "type": "grafana-pyroscope-datasource",
                "uid": "local-pyroscope", "url": "http://10.0.4.36:4040"}
DATASOURCES_DEFAULTS = {"prom_ds": {"name": "Azure Monitor Prometheus", "uid": "azure-monitor-prometheus"},
                        "pyroscope_ds": {"name": "Pyroscope", "uid": "local-pyroscope"}}
DS_ENV = {"GRAFANA_ENDPOINT": GRAFANA, "DATASOURCE": json.dumps(PYROSCOPE_DS, sort_keys=True),
          "RETRY_FORBIDDEN": "false", "TIMEOUT_SECONDS": "60", **FAST}
#: The dashboard URL as a SAS URL would carry it (userinfo and a query string whose sig= is the credential).
SAS_SECRET = "SECRETSIG"
SAS_URL = (DASHBOARD_URL.replace("https://", "https://user:SECRETPASS@") +
           f"?sv=2022-11-02&se=2026-12-31T00%3A00%3A00Z&sp=r&sig={SAS_SECRET}%2Bx%3D")
DASH_ENV = {"GRAFANA_ENDPOINT": GRAFANA, "DASHBOARD_SOURCE": DASHBOARD_URL, "DASHBOARD_SHA256": DASHBOARD_SHA256,
            "DASHBOARD_UID": "AdvancedGPUObservability",
            "DATASOURCES": json.dumps(DATASOURCES_DEFAULTS, sort_keys=True),
            "RETRY_FORBIDDEN": "false", "TIMEOUT_SECONDS": "60", **FAST}


def grafana_error(status: str, message: str) -> dict:
    """How az rest reports a Grafana HTTP error: ``ERROR: <reason>(<body>)``, exit 1."""
    return {"exit": 1, "stderr": f'ERROR: {status}({{"message":"{message}","traceID":""}})'}


def stored_datasource(**changes) -> dict:
    """A datasource as Grafana's GET /api/datasources/uid returns it: ours plus server fields."""
    body = {"id": 7, "orgId": 1, "basicAuth": False, "basicAuthUser": "", "database": "", "isDefault": False,
            "readOnly": False, "secureJsonFields": {}, "user": "", "version": 1, "withCredentials": False,
            **PYROSCOPE_DS, "jsonData": {}}
    body.update(changes)
    return {"json": body}


def uploaded_dashboard(owner: Optional[str] = None) -> Optional[dict]:
    """The dashboard as the step uploads it (datasource defaults set; stamped ``owner`` if given), as Grafana
    returns it on GET."""
    from steps import grafana_dashboard  # the step's own transformation
    dashboard = grafana_dashboard.with_datasource_defaults(json.loads(DASHBOARD_FILE.read_bytes()),
                                                           DATASOURCES_DEFAULTS)
    if owner:
        dashboard[grafana_dashboard.OWNER_KEY] = owner
    return {"json": {"dashboard": {**dashboard, "id": 42, "version": 3},
                     "meta": {"slug": "advanced-gpu-observability",
                              "url": "/d/AdvancedGPUObservability/advanced-gpu-observability", "version": 3}}}


DS_GET = ["rest", "--method", "get", "/api/datasources/uid/local-pyroscope"]
DS_POST = ["rest", "--method", "post", "/api/datasources"]
DS_PUT = ["rest", "--method", "put", "/api/datasources/uid/local-pyroscope"]
DS_DELETE = ["rest", "--method", "delete", "/api/datasources/uid/local-pyroscope"]
DS_BY_NAME = ["rest", "--method", "get", "/api/datasources/name/Pyroscope"]
DOWNLOAD = ["rest", "--method", "get", "raw.githubusercontent.com", "--skip-authorization-header"]
DASH_GET = ["rest", "--method", "get", "/api/dashboards/uid/AdvancedGPUObservability"]
DASH_POST = ["rest", "--method", "post", "/api/dashboards/db"]
DASH_DELETE = ["rest", "--method", "delete", "/api/dashboards/uid/AdvancedGPUObservability"]
FETCH = {"stdout": "", "output_file": str(DASHBOARD_FILE)}
#: An owner id as an earlier create or update printed it, and another step's (a replacement's).
MINE, THEIRS = "0123456789abcdef", "fedcba9876543210"
AS_UPDATE = {"PULUMI_COMMAND_STDOUT": f"local-pyroscope owner={MINE}"}
DASH_AS_UPDATE = {"PULUMI_COMMAND_STDOUT": f"AdvancedGPUObservability owner={MINE}"}
CREATED_DS = r"local-pyroscope owner=[0-9a-f]{16}\n"
CREATED_DASH = r"AdvancedGPUObservability owner=[0-9a-f]{16}\n"
NOT_FOUND_DS = grafana_error("Not Found", "Data source not found")
#: The uid Grafana picked for a datasource made by hand without one (``util.GenerateShortUID``'s shape).
HAND_MADE_UID = "P8E80F9AEF21F6940"
NOT_FOUND_DASH = grafana_error("Not Found", "Dashboard not found")

SCENARIOS += [
    Scenario("datasource-first-create", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [NOT_FOUND_DS]},
              {"match": DS_POST, "responses": [{"json": {"id": 7, "message": "Datasource added",
                                                         "name": "Pyroscope"}}]},
              {"match": DS_PUT, "responses": [{"json": {}}]},
              {"match": DS_BY_NAME, "responses": [NOT_FOUND_DS]}],
             args=["apply"], stdout=CREATED_DS, pattern=True, stderr_has=["created datasource local-pyroscope"],
             calls={0: 1, 1: 1, 2: 0}),
    Scenario("datasource-rerun-no-change", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [stored_datasource(jsonData={"aksGpuObservabilityOwner": MINE})]},
              {"match": DS_POST, "responses": [{"json": {}}]}, {"match": DS_PUT, "responses": [{"json": {}}]}],
             args=["apply"], stdout=f"local-pyroscope owner={MINE}\n", stderr_has=["up to date; nothing written"],
             calls={0: 1, 1: 0, 2: 0}),
    Scenario("datasource-update-keeps-a-datasource-stamped-by-another-step", "grafana_datasource.py",
             {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [stored_datasource(jsonData={"aksGpuObservabilityOwner": THEIRS})]},
              {"match": DS_PUT, "responses": [{"json": {}}]}],
             args=["apply"], stdout=f"local-pyroscope owner={MINE}\n", stderr_has=["up to date; nothing written"],
             calls={0: 1, 1: 0}),
    Scenario("datasource-create-claims-an-up-to-date-datasource", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [stored_datasource(jsonData={"aksGpuObservabilityOwner": THEIRS})]},
              {"match": DS_POST, "responses": [{"json": {}}]}, {"match": DS_PUT, "responses": [{"json": {}}]}],
             args=["apply"], stdout=CREATED_DS, pattern=True,
             stderr_has=["claimed datasource local-pyroscope for this step"],
             calls={0: 1, 1: 0, 2: 1}),
    Scenario("datasource-changed-definition", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [stored_datasource(url="http://10.0.4.99:4040")]},
              {"match": DS_POST, "responses": [{"json": {}}]}, {"match": DS_PUT,
                                                                "responses": [{"json": {
                                                                    "message": "Datasource updated"}}]}],
             args=["apply"], stdout=CREATED_DS, pattern=True, stderr_has=["updated datasource local-pyroscope: url"],
             calls={1: 0, 2: 1}),
    Scenario("datasource-created-by-hand-adopted", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [stored_datasource(name="pyroscope (manual)", access="direct",
                                                                jsonData={"keepCookies": []})]},
              {"match": DS_POST, "responses": [grafana_error("Conflict",
                                                             "data source with the same name already exists")]},
              {"match": DS_PUT, "responses": [{"json": {"message": "Datasource updated"}}]}],
             args=["apply"], stdout=CREATED_DS, pattern=True,
             stderr_has=["updated datasource local-pyroscope: access, name"], calls={1: 0, 2: 1}),
    Scenario("datasource-grafana-5xx-then-ok", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [grafana_error("Bad Gateway", "upstream"), NOT_FOUND_DS]},
              {"match": DS_POST, "responses": [grafana_error("Service Unavailable", "try later"), {"json": {"id": 7}}]},
              {"match": DS_BY_NAME, "responses": [NOT_FOUND_DS]}],
             args=["apply"], stdout=CREATED_DS, pattern=True, stderr_has=["retrying after ERROR: Bad Gateway",
                                                                          "retrying after ERROR: Service Unavailable"],
             calls={0: 2, 1: 2}),
    Scenario("datasource-post-timed-out-but-landed-is-adopted", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [NOT_FOUND_DS, stored_datasource()]},
              {"match": DS_POST, "responses": [grafana_error("Gateway Timeout", "upstream request timeout"),
                                               grafana_error("Conflict",
                                                             "data source with the same name already exists")]},
              {"match": DS_PUT, "responses": [{"json": {}}]},
              {"match": DS_BY_NAME, "responses": [NOT_FOUND_DS]}],
             args=["apply"], stdout=f"local-pyroscope owner={MINE}\n",
             stderr_has=["already exists (an earlier attempt created it); adopting it",
                         "is up to date; nothing written"],
             calls={0: 2, 1: 2, 2: 0}),
    Scenario("datasource-name-taken-between-the-checks", "grafana_datasource.py", DS_ENV,
             [{"match": DS_BY_NAME, "responses": [NOT_FOUND_DS, stored_datasource(uid=HAND_MADE_UID)]},
              {"match": DS_GET, "responses": [NOT_FOUND_DS]},
              {"match": DS_POST, "responses": [grafana_error("Conflict",
                                                             "data source with the same name already exists")]}],
             args=["apply"], exit=1,
             stderr_has=[f"a datasource named 'Pyroscope' already exists under uid '{HAND_MADE_UID}'",
                         f"set the datasource's uid config to '{HAND_MADE_UID}'"],
             calls={0: 2, 1: 2, 2: 1}),
    # A datasource made by hand under the stack's name and another uid (the procedure's Prometheus one has a uid
    # Grafana picked). Grafana refuses to change a datasource's uid (PUT with another uid in the body: 400, or 500 in
    # some releases; tests/support/fake_world.py uid_change_answer): nothing is written, and the one line names the
    # config that adopts it under its own uid, or (read-only, another type, owned) why it cannot be adopted.
    Scenario("datasource-made-by-hand-under-another-uid-names-the-uid-to-set", "grafana_datasource.py",
             {**DS_ENV, "UID_CONFIG_KEY": "pyroscopeDatasourceUid"},
             [{"match": DS_GET, "responses": [NOT_FOUND_DS]},
              {"match": DS_BY_NAME, "responses": [stored_datasource(uid=HAND_MADE_UID, url="http://10.0.4.99:4040")]},
              {"match": ["rest", "--method", "put"], "responses": [grafana_error("Bad Request", "UID mismatch")]},
              {"match": DS_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1,
             stderr_has=[
                 f"a datasource named 'Pyroscope' already exists under uid '{HAND_MADE_UID}', not 'local-pyroscope'",
                 f"`pulumi config set pyroscopeDatasourceUid {HAND_MADE_UID}`, then `pulumi up`"],
             calls={0: 1, 1: 1, 2: 0, 3: 0}),
    Scenario("datasource-put-refused-with-400-is-not-retried", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [stored_datasource(url="http://10.0.4.99:4040")]},
              {"match": DS_PUT, "responses": [grafana_error("Bad Request", "bad request data")]}],
             args=["apply"], exit=1, stderr_has=["updating datasource local-pyroscope failed: ERROR: Bad Request"],
             calls={0: 1, 1: 1}),
    Scenario("datasource-name-taken-by-another-type", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [NOT_FOUND_DS]},
              {"match": DS_BY_NAME, "responses": [stored_datasource(uid=HAND_MADE_UID, type="loki")]},
              {"match": ["rest", "--method", "put"], "responses": [{"json": {}}]},
              {"match": DS_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1, calls={2: 0, 3: 0},
             stderr_has=[
                 f"a datasource named 'Pyroscope' already exists with uid '{HAND_MADE_UID}' and is of type 'loki', "
                 "not 'grafana-pyroscope-datasource'; rename or delete it in Grafana"]),
    Scenario("datasource-name-taken-by-a-read-only-datasource", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [NOT_FOUND_DS]},
              {"match": DS_BY_NAME, "responses": [stored_datasource(uid=HAND_MADE_UID, readOnly=True)]},
              {"match": ["rest", "--method", "put"], "responses": [{"json": {}}]},
              {"match": DS_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1, calls={2: 0, 3: 0}, stderr_has=["and is read-only (provisioned from a file"]),
    Scenario("datasource-name-taken-by-another-stacks-datasource", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [NOT_FOUND_DS]},
              {"match": DS_BY_NAME, "responses": [stored_datasource(uid=HAND_MADE_UID,
                                                                    jsonData={"aksGpuObservabilityOwner": THEIRS})]},
              {"match": ["rest", "--method", "put"], "responses": [{"json": {}}]},
              {"match": DS_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1, calls={2: 0, 3: 0},
             stderr_has=[f"and belongs to another step or stack (owner {THEIRS})"]),
    Scenario("datasource-forbidden-fails-fast", "grafana_datasource.py", DS_ENV,
             [{"match": DS_GET, "responses": [grafana_error("Forbidden", "Permissions needed: datasources:read")]}],
             args=["apply"], exit=1, stderr_has=["reading datasource local-pyroscope failed: ERROR: Forbidden"],
             calls={0: 1}),
    Scenario("datasource-forbidden-retried-while-role-propagates", "grafana_datasource.py",
             {**DS_ENV, "RETRY_FORBIDDEN": "true"},
             [{"match": DS_GET, "responses": [grafana_error("Forbidden", "Permissions needed"), NOT_FOUND_DS]},
              {"match": DS_POST, "responses": [{"json": {"id": 7}}]},
              {"match": DS_BY_NAME, "responses": [NOT_FOUND_DS]}],
             args=["apply"], stdout=CREATED_DS, pattern=True, calls={0: 2, 1: 1}),
    Scenario("datasource-delete", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [stored_datasource(jsonData={"aksGpuObservabilityOwner": MINE})]},
              {"match": DS_DELETE, "responses": [{"json": {"message": "Data source deleted"}}]}],
             args=["delete"], stdout="local-pyroscope\n", stderr_has=["deleted datasource local-pyroscope"],
             calls={0: 1, 1: 1}),
    Scenario("datasource-delete-unstamped", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [stored_datasource()]},
              {"match": DS_DELETE, "responses": [{"json": {"message": "Data source deleted"}}]}],
             args=["delete"], stdout="local-pyroscope\n", stderr_has=["deleted datasource local-pyroscope"],
             calls={0: 1, 1: 1}),
    Scenario("datasource-delete-leaves-a-replacements-datasource", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [stored_datasource(jsonData={"aksGpuObservabilityOwner": THEIRS})]},
              {"match": DS_DELETE, "responses": [{"json": {"message": "Data source deleted"}}]}],
             args=["delete"], stdout="local-pyroscope\n", stderr_has=[f"now belongs to another step (owner {THEIRS}"],
             calls={0: 1, 1: 0}),
    Scenario("datasource-delete-already-gone", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [NOT_FOUND_DS]}, {"match": DS_DELETE, "responses": [NOT_FOUND_DS]}],
             args=["delete"], stdout="local-pyroscope\n", stderr_has=["already gone"], calls={0: 1, 1: 0}),
    Scenario("dashboard-first-upload", "grafana_dashboard.py", DASH_ENV,
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET, "responses": [NOT_FOUND_DASH]},
              {"match": DASH_POST, "responses": [{"json": {"status": "success", "uid": "AdvancedGPUObservability",
                                                           "version": 1}}]}],
             args=["apply"], stdout=CREATED_DASH, pattern=True,
             stderr_has=["uploaded dashboard AdvancedGPUObservability (sha256 9c8733"],
             calls={0: 1, 1: 1, 2: 1}),
    Scenario("dashboard-rerun-no-change", "grafana_dashboard.py", {**DASH_ENV, **DASH_AS_UPDATE},
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET,
                                                          "responses": [uploaded_dashboard(MINE) or {}]},
              {"match": DASH_POST, "responses": [{"json": {}}]}],
             args=["apply"], stdout=f"AdvancedGPUObservability owner={MINE}\n",
             stderr_has=["up to date; nothing written"],
             calls={2: 0}),
    Scenario("dashboard-create-claims-an-up-to-date-dashboard", "grafana_dashboard.py", DASH_ENV,
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET,
                                                          "responses": [uploaded_dashboard(THEIRS) or {}]},
              {"match": DASH_POST, "responses": [{"json": {}}]}],
             args=["apply"], stdout=CREATED_DASH, pattern=True,
             stderr_has=["uploaded dashboard AdvancedGPUObservability"],
             calls={2: 1}),
    Scenario("dashboard-update-keeps-a-dashboard-stamped-by-another-step", "grafana_dashboard.py",
             {**DASH_ENV, **DASH_AS_UPDATE},
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET,
                                                          "responses": [uploaded_dashboard(THEIRS) or {}]},
              {"match": DASH_POST, "responses": [{"json": {}}]}],
             args=["apply"], stdout=f"AdvancedGPUObservability owner={MINE}\n",
             stderr_has=["up to date; nothing written"],
             calls={2: 0}),
    Scenario("dashboard-hash-mismatch-no-upload", "grafana_dashboard.py", {**DASH_ENV, "DASHBOARD_SHA256": "0" * 64},
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET, "responses": [NOT_FOUND_DASH]},
              {"match": DASH_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1,
             stderr_has=[f"has sha256 {DASHBOARD_SHA256}, expected {'0' * 64}; nothing uploaded"],
             calls={0: 1, 1: 0, 2: 0}),
    Scenario("dashboard-from-local-file", "grafana_dashboard.py", {**DASH_ENV, "DASHBOARD_SOURCE": str(DASHBOARD_FILE)},
             [{"match": DASH_GET, "responses": [NOT_FOUND_DASH]}, {"match": DASH_POST, "responses": [{"json": {}}]}],
             args=["apply"], stdout=CREATED_DASH, pattern=True, calls={0: 1, 1: 1}),
    Scenario("dashboard-uid-mismatch", "grafana_dashboard.py", {**DASH_ENV, "DASHBOARD_UID": "other-uid"},
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": ["rest", "--method", "post"],
                                                          "responses": [{"json": {}}]}],
             args=["apply"], exit=1,
             stderr_has=["has uid 'AdvancedGPUObservability', expected 'other-uid'; nothing uploaded"],
             calls={1: 0}),
    Scenario("dashboard-upload-5xx-then-ok", "grafana_dashboard.py", DASH_ENV,
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET, "responses": [NOT_FOUND_DASH]},
              {"match": DASH_POST, "responses": [grafana_error("Internal Server Error", "database is locked"),
                                                 {"json": {}}]}],
             args=["apply"], stdout=CREATED_DASH, pattern=True, calls={2: 2}),
    Scenario("dashboard-download-fails", "grafana_dashboard.py", DASH_ENV,
             [{"match": DOWNLOAD, "responses": [{"exit": 1, "stderr": "ERROR: Not Found(404: Not Found)"}]}],
             args=["apply"], exit=1, stderr_has=["downloading the dashboard from https://raw.githubusercontent.com/"]),
    # A SAS URL (Azure Storage) as the source: its query string is the credential. urllib3 quotes the path and query
    # of a URL it could not reach ("Max retries exceeded with url: ..."), so an error line may carry it too.
    Scenario("dashboard-sas-source-download-fails", "grafana_dashboard.py", {**DASH_ENV, "DASHBOARD_SOURCE": SAS_URL},
             [{"match": DOWNLOAD, "responses": [
                 {"exit": 1,
                  "stderr": "ERROR: HTTPSConnectionPool(host='raw.githubusercontent.com', port=443): Max retries "
               f"exceeded with url: {SAS_URL.split('.com', 1)[1]} (Caused by NewConnectionError("
               "'Failed to establish a new connection: [Errno 111] Connection refused'))"},
                 {"exit": 1, "stderr": f"ERROR: Not Found(404: Not Found {SAS_URL})"}]}],
             args=["apply"], exit=1, calls={0: 2},
             stderr_has=["downloading the dashboard from " + DASHBOARD_URL + " failed", "retrying after"]),
    Scenario("dashboard-sas-source-hash-mismatch", "grafana_dashboard.py",
             {**DASH_ENV, "DASHBOARD_SOURCE": SAS_URL, "DASHBOARD_SHA256": "0" * 64},
             [{"match": DOWNLOAD, "responses": [FETCH]}],
             args=["apply"], exit=1, calls={0: 1},
             stderr_has=[f"dashboard {DASHBOARD_URL} has sha256 {DASHBOARD_SHA256}"]),
    Scenario("dashboard-delete-already-gone", "grafana_dashboard.py", {**DASH_ENV, **DASH_AS_UPDATE},
             [{"match": DASH_GET, "responses": [NOT_FOUND_DASH]}, {"match": DASH_DELETE,
                                                                   "responses": [NOT_FOUND_DASH]}],
             args=["delete"], stdout="AdvancedGPUObservability\n", stderr_has=["already gone"], calls={0: 1, 1: 0}),
    Scenario("dashboard-delete-own", "grafana_dashboard.py", {**DASH_ENV, **DASH_AS_UPDATE},
             [{"match": DASH_GET, "responses": [uploaded_dashboard(MINE) or {}]},
              {"match": DASH_DELETE, "responses": [{"json": {"message": "Dashboard deleted"}}]}],
             args=["delete"], stdout="AdvancedGPUObservability\n",
             stderr_has=["deleted dashboard AdvancedGPUObservability"],
             calls={0: 1, 1: 1}),
    Scenario("dashboard-delete-leaves-a-replacements-dashboard", "grafana_dashboard.py", {**DASH_ENV, **DASH_AS_UPDATE},
             [{"match": DASH_GET, "responses": [uploaded_dashboard(THEIRS) or {}]},
              {"match": DASH_DELETE, "responses": [{"json": {"message": "Dashboard deleted"}}]}],
             args=["delete"], stdout="AdvancedGPUObservability\n",
             stderr_has=[f"now belongs to another step (owner {THEIRS}"],
             calls={0: 1, 1: 0}),
]


# --- Degraded states: a provisioned (read-only) datasource, a Grafana workspace deleted out of band ------------------
#: Grafana's answers for a provisioned datasource (grafana/grafana pkg/api/datasources.go @ 001e0d76).
READ_ONLY_PUT = grafana_error("Forbidden", "Cannot update read-only data source")
READ_ONLY_DELETE = grafana_error("Forbidden", "Cannot delete read-only data source")
GRAFANA_GET = ["rest", "--method", "get", "/grafana/amg-gpu-dev?api-version"]
GONE_ENV = {"GRAFANA_ID": GRAFANA_ID, "API_VERSION": "2024-10-01"}
GRAFANA_HOST = GRAFANA.split("//", 1)[1]


def _gone_answers() -> tuple:
    from tests.support import fake_world  # the stateful world's own renderings of the same failures

    return (fake_world.rest_not_found("ResourceNotFound",
                                      "The Resource 'Microsoft.Dashboard/grafana/amg-gpu-dev' under "
                                      "resource group 'rg-observability-dev' was not found."),
            fake_world.unresolvable(GRAFANA_HOST, "/api/datasources/uid/local-pyroscope"))


GRAFANA_NOT_FOUND, UNRESOLVABLE = _gone_answers()
GRAFANA_FOUND = {"json": {"id": GRAFANA_ID, "name": "amg-gpu-dev", "properties": {"provisioningState": "Succeeded"}}}
#: RETRY_FORBIDDEN on (a Grafana the stack just created) and a timeout longer than a scenario may take: a step that
#: retried the read-only 403 would show it in its call count and its time.
READ_ONLY_ENV = {**DS_ENV, "RETRY_FORBIDDEN": "true", "UID_CONFIG_KEY": "pyroscopeDatasourceUid",
                 "TIMEOUT_SECONDS": "30"}

SCENARIOS += [
    Scenario("datasource-read-only-refused-at-once", "grafana_datasource.py", READ_ONLY_ENV,
             [{"match": DS_GET, "responses": [stored_datasource(readOnly=True, url="http://10.9.9.9:4040")]},
              {"match": DS_PUT, "responses": [READ_ONLY_PUT]}],
             args=["apply"], exit=1, calls={0: 1, 1: 0},
             stderr_has=["error: datasource local-pyroscope is provisioned in Grafana (readOnly)",
                         "set pyroscopeDatasourceUid to another uid "
                         "(`pulumi config set pyroscopeDatasourceUid <uid>`)"]),
    Scenario("datasource-identical-read-only-not-adopted", "grafana_datasource.py", {**READ_ONLY_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [stored_datasource(readOnly=True)]},
              {"match": DS_PUT, "responses": [READ_ONLY_PUT]}],
             args=["apply"], exit=1, calls={0: 1, 1: 0}, stderr_has=["is provisioned in Grafana (readOnly)"]),
    Scenario("datasource-read-only-403-never-retried", "grafana_datasource.py", READ_ONLY_ENV,
             [{"match": DS_GET, "responses": [stored_datasource(url="http://10.9.9.9:4040")]},
              {"match": DS_PUT, "responses": [READ_ONLY_PUT]}],
             args=["apply"], exit=1, calls={0: 1, 1: 1},
             stderr_has=["error: datasource local-pyroscope is provisioned in Grafana (readOnly)"]),
    Scenario("datasource-delete-leaves-a-read-only-datasource", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE},
             [{"match": DS_GET, "responses": [stored_datasource(readOnly=True)]},
              {"match": DS_DELETE, "responses": [READ_ONLY_DELETE]}],
             args=["delete"], stdout="local-pyroscope\n", calls={0: 1, 1: 0},
             stderr_has=[
                 "datasource local-pyroscope is provisioned in Grafana (readOnly), not this stack's; left in place"]),
    Scenario("datasource-delete-grafana-gone", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE, **GONE_ENV},
             [{"match": GRAFANA_GET, "responses": [GRAFANA_NOT_FOUND]},
              {"match": ["rest", GRAFANA_HOST], "responses": [UNRESOLVABLE]}],
             args=["delete"], stdout="local-pyroscope\n", calls={0: 1, 1: 0},
             stderr_has=["Grafana workspace amg-gpu-dev no longer exists", "nothing to delete"]),
    Scenario("dashboard-delete-grafana-gone", "grafana_dashboard.py", {**DASH_ENV, **DASH_AS_UPDATE, **GONE_ENV},
             [{"match": GRAFANA_GET, "responses": [GRAFANA_NOT_FOUND]},
              {"match": ["rest", GRAFANA_HOST], "responses": [UNRESOLVABLE]}],
             args=["delete"], stdout="AdvancedGPUObservability\n", calls={0: 1, 1: 0},
             stderr_has=["Grafana workspace amg-gpu-dev no longer exists"]),
    Scenario("datasource-delete-grafana-present-deletes", "grafana_datasource.py", {**DS_ENV, **AS_UPDATE, **GONE_ENV},
             [{"match": GRAFANA_GET, "responses": [GRAFANA_FOUND]},
              {"match": DS_GET, "responses": [stored_datasource(jsonData={"aksGpuObservabilityOwner": MINE})]},
              {"match": DS_DELETE, "responses": [{"json": {"message": "Data source deleted"}}]}],
             args=["delete"], stdout="local-pyroscope\n", calls={0: 1, 1: 1, 2: 1},
             stderr_has=["deleted datasource local-pyroscope"]),
    Scenario("datasource-delete-grafana-unreadable-asks-grafana", "grafana_datasource.py",
             {**DS_ENV, **AS_UPDATE, **GONE_ENV},
             [{"match": GRAFANA_GET, "responses": [FORBIDDEN]},
              {"match": DS_GET, "responses": [NOT_FOUND_DS]}],
             args=["delete"], stdout="local-pyroscope\n", calls={0: 1, 1: 1},
             stderr_has=["could not tell whether Grafana workspace amg-gpu-dev exists", "already gone"]),
    Scenario("datasource-unreachable-grafana-names-the-failure", "grafana_datasource.py",
             {**DS_ENV, "TIMEOUT_SECONDS": "1"},
             [{"match": DS_GET, "responses": [UNRESOLVABLE]}],
             args=["apply"], exit=1, max_seconds=10,
             stderr_has=["reading datasource local-pyroscope kept failing for 1s: ERROR: HTTPSConnectionPool(host='"
                         + GRAFANA_HOST]),
]


# --- Which Grafana: the Prometheus datasource's type and the dashboard's Prometheus variable follow the version -----
#: (steps/grafana_server.py; the whole version matrix against the stateful stand-in: tests/steps/test_grafana_server.py)
AZURE_PROMETHEUS = "grafana-azureprometheus-datasource"
PROMETHEUS_DS = {"access": "proxy", "jsonData": {"azureCredentials": {"authType": "msi"}, "httpMethod": "POST"},
                 "name": "amw-gpu-dev", "type": "prometheus", "uid": "azure-monitor-prometheus",
                 "url": "https://amw-gpu-dev-abcd.eastus2.prometheus.monitor.azure.com"}
PROM_ENV = {**DS_ENV, "DATASOURCE": json.dumps(PROMETHEUS_DS, sort_keys=True),
            "UID_CONFIG_KEY": "prometheusDatasourceUid"}
PROM_GET = ["rest", "--method", "get", "/api/datasources/uid/azure-monitor-prometheus"]
PROM_BY_NAME = ["rest", "--method", "get", "/api/datasources/name/amw-gpu-dev"]
PROM_PUT = ["rest", "--method", "put", "/api/datasources/uid/azure-monitor-prometheus"]
NOT_FOUND_PROM = grafana_error("Not Found", "Data source not found")
#: The datasource as Grafana 13's start-up migration leaves it (tests/support/fake_world.py ``start``), stamped by this
#: step.
MIGRATED_PROM = {"json": {"id": 9, "orgId": 1, "version": 1, "readOnly": False, **PROMETHEUS_DS,
                          "type": AZURE_PROMETHEUS,
                          "jsonData": {**PROMETHEUS_DS["jsonData"], "prometheus-type-migration": True,
                                       "aksGpuObservabilityOwner": MINE}}}

SCENARIOS += [
    Scenario("prometheus-datasource-created-with-the-plugin-type-on-grafana-13", "grafana_datasource.py", PROM_ENV,
             [{"match": PROM_GET, "responses": [NOT_FOUND_PROM]}, {"match": PROM_BY_NAME,
                                                                   "responses": [NOT_FOUND_PROM]},
              {"match": DS_POST, "responses": [{"json": {"id": 9, "message": "Datasource added",
                                                         "name": "amw-gpu-dev"}}]}],
             args=["apply"], stdout=r"azure-monitor-prometheus owner=[0-9a-f]{16}\n", pattern=True,
             calls={0: 1, 1: 1, 2: 1},
             stderr_has=[f"Grafana 13.0.2; {AZURE_PROMETHEUS} installed",
                         f"type {AZURE_PROMETHEUS} in Grafana 13.0.2 (the stack's definition says prometheus)"],
             grafana_version="13.0.2", grafana_plugins=(AZURE_PROMETHEUS,)),
    Scenario("prometheus-datasource-created-as-prometheus-before-13", "grafana_datasource.py", PROM_ENV,
             [{"match": PROM_GET, "responses": [NOT_FOUND_PROM]}, {"match": PROM_BY_NAME,
                                                                   "responses": [NOT_FOUND_PROM]},
              {"match": DS_POST, "responses": [{"json": {"id": 9, "message": "Datasource added",
                                                         "name": "amw-gpu-dev"}}]}],
             args=["apply"], stdout=r"azure-monitor-prometheus owner=[0-9a-f]{16}\n", pattern=True,
             calls={0: 1, 1: 1, 2: 1},
             stderr_has=["created datasource azure-monitor-prometheus (prometheus)"],
             grafana_version="12.4.4", grafana_plugins=(AZURE_PROMETHEUS,)),
    Scenario("prometheus-datasource-migrated-by-grafana-is-left-as-it-is", "grafana_datasource.py", {**PROM_ENV, **{
                 "PULUMI_COMMAND_STDOUT": f"azure-monitor-prometheus owner={MINE}"}},
             [{"match": PROM_GET, "responses": [MIGRATED_PROM]}, {"match": PROM_PUT, "responses": [{"json": {}}]}],
             args=["apply"], stdout=f"azure-monitor-prometheus owner={MINE}\n", calls={0: 1, 1: 0},
             stderr_has=["datasource azure-monitor-prometheus is up to date; nothing written"],
             grafana_version="13.0.2", grafana_plugins=(AZURE_PROMETHEUS,)),
    Scenario("prometheus-datasource-on-grafana-13-without-the-plugin-is-one-line", "grafana_datasource.py", PROM_ENV,
             [{"match": PROM_GET, "responses": [NOT_FOUND_PROM]}, {"match": PROM_BY_NAME,
                                                                   "responses": [NOT_FOUND_PROM]},
              {"match": DS_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1, calls={2: 0},
             stderr_has=[
                 f"Grafana 13.0.1 has no Azure authentication in its core Prometheus datasource (removed in 13.0) "
                 f"and the plugin {AZURE_PROMETHEUS} is not installed; install it"],
             grafana_version="13.0.1"),
    Scenario("dashboard-on-grafana-13-selects-the-plugin-type", "grafana_dashboard.py", DASH_ENV,
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET, "responses": [NOT_FOUND_DASH]},
              {"match": DASH_POST, "responses": [{"json": {"status": "success", "uid": "AdvancedGPUObservability",
                                                           "version": 1}}]}],
             args=["apply"], stdout=CREATED_DASH, pattern=True, calls={0: 1, 1: 1, 2: 1},
             stderr_has=[f"its datasource variables that select prometheus select {AZURE_PROMETHEUS} here"],
             grafana_version="13.0.2", grafana_plugins=(AZURE_PROMETHEUS,)),
]


# --- Before Grafana 11.3 dashboard titles are unique per folder (docs/offline.md G11) --------------------------------
DASH_SEARCH = ["rest", "--method", "get", "/api/search?query=Advanced+GPU+Observability&type=dash-db"]
#: A hand-made copy of the GPU dashboard in the General folder, as GET /api/search lists it.
HAND_MADE_DASH_HIT = {"id": 3, "uid": "hand-made-gpu", "title": "Advanced GPU Observability",
                      "uri": "db/advanced-gpu-observability", "url": "/d/hand-made-gpu/advanced-gpu-observability",
                      "slug": "advanced-gpu-observability", "type": "dash-db", "tags": [], "isStarred": False}

SCENARIOS += [
    Scenario("dashboard-title-taken-before-11-3-stops-with-one-line", "grafana_dashboard.py", DASH_ENV,
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET, "responses": [NOT_FOUND_DASH]},
              {"match": DASH_SEARCH, "responses": [{"json": [HAND_MADE_DASH_HIT]}]},
              {"match": DASH_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1, calls={2: 1, 3: 0},
             stderr_has=[
                 "Grafana 10.4.19 already has dashboard 'Advanced GPU Observability' (uid hand-made-gpu) in the "
                 "General folder", "setting dashboardUid to hand-made-gpu", "nothing uploaded"],
             grafana_version="10.4.19"),
    Scenario("dashboard-title-in-another-folder-before-11-3-uploads", "grafana_dashboard.py", DASH_ENV,
             [{"match": DOWNLOAD, "responses": [FETCH]}, {"match": DASH_GET, "responses": [NOT_FOUND_DASH]},
              {"match": DASH_SEARCH, "responses": [{"json": [{**HAND_MADE_DASH_HIT, "folderUid": "team",
                                                              "folderId": 2}]}]},
              {"match": DASH_POST, "responses": [{"json": {"status": "success", "uid": "AdvancedGPUObservability",
                                                           "version": 1}}]}],
             args=["apply"], stdout=CREATED_DASH, pattern=True, calls={2: 1, 3: 1},
             grafana_version="10.4.19"),
]

# --- A dashboard exported "for sharing" (__inputs, ${DS_...} references): imported as Grafana's import does ---------
SHARED_EXPORT = "tests/data/gpu-dashboard-shared-export.json"  # relative: the steps run in the project directory
SHARED_EXPORT_SHA256 = "00aabd4fa2ffbe0d99193a5676759b224ab55299a7e2c9f96cc78f42dfbab7ff"
STACK_INPUTS = {"grafana-pyroscope-datasource": "local-pyroscope", "prometheus": "azure-monitor-prometheus"}
EXPORT_ENV = {**DASH_ENV, "DASHBOARD_SOURCE": SHARED_EXPORT, "DASHBOARD_SHA256": SHARED_EXPORT_SHA256,
              "DASHBOARD_UID": "gpu-shared-export", "DATASOURCE_INPUTS": json.dumps(STACK_INPUTS, sort_keys=True)}
EXPORT_GET = ["rest", "--method", "get", "/api/dashboards/uid/gpu-shared-export"]

SCENARIOS += [
    Scenario("dashboard-export-for-sharing-imported", "grafana_dashboard.py", EXPORT_ENV,
             [{"match": EXPORT_GET, "responses": [NOT_FOUND_DASH]},
              {"match": DASH_POST, "responses": [{"json": {"status": "success", "uid": "gpu-shared-export",
                                                           "version": 1}}]}],
             args=["apply"], stdout=r"gpu-shared-export owner=[0-9a-f]{16}\n", pattern=True, calls={0: 1, 1: 1},
             stderr_has=["imported 4 input(s) of " + SHARED_EXPORT, "DS_PROMETHEUS -> azure-monitor-prometheus",
                         "DS_PYROSCOPE -> local-pyroscope", "DS___EXPR__ -> __expr__", "VAR_NAMESPACE -> gadget"]),
    Scenario("dashboard-export-for-a-shared-dashboard-refused", "grafana_dashboard.py",
             {**EXPORT_ENV, "DATASOURCE_INPUTS": "{}"},
             [{"match": EXPORT_GET, "responses": [NOT_FOUND_DASH]}, {"match": DASH_POST, "responses": [{"json": {}}]}],
             args=["apply"], exit=1, calls={0: 0, 1: 0},
             stderr_has=[
                 "has input DS_PROMETHEUS (datasource prometheus) that nothing maps: a dashboard shared by several "
                 "clusters (multiCluster) cannot be bound to one cluster's datasources"]),
]


def fake_az_env(workdir: Path, rules: list) -> dict:
    """Environment with the stand-in az first on PATH, answering from ``rules``; its log in workdir."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "az"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests" / "support" / "fake_az.py"}" "$@"\n')
    wrapper.chmod(0o755)
    scenario_file, log_file, state_file = workdir / "scenario.yaml", workdir / "calls.jsonl", workdir / "state.json"
    scenario_file.write_text(yaml.safe_dump(rules))
    for stale in (log_file, state_file):
        stale.unlink(missing_ok=True)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(workdir), "LANG": "C.UTF-8",
            "FAKE_AZ_SCENARIO": str(scenario_file), "FAKE_AZ_LOG": str(log_file), "FAKE_AZ_STATE": str(state_file)}


def calls_in(workdir: Path) -> list:
    log_file = workdir / "calls.jsonl"
    return [json.loads(line) for line in log_file.read_text().splitlines()] if log_file.exists() else []


def grafana_server_rules(version: str, plugins: tuple = ()) -> list:
    """What the stand-in answers to the Grafana steps' probe of which Grafana this is (steps/grafana_server.py):
    GET /api/health with ``version``, GET /api/plugins?type=datasource with the core datasource plugins and
    ``plugins``, rendered by the stateful stand-in (tests/support/fake_world.py) so both answer alike."""
    from tests.support import fake_world

    g = {"version": version, "plugins": list(plugins)}
    return [{"match": ["rest", "--method", "get", "/api/health"], "responses": [fake_world._health(g)]},
            {"match": ["rest", "--method", "get", "/api/plugins?type=datasource"],
             "responses": [fake_world._plugins("type=datasource", g)]},
            {"match": ["rest", "--method", "get", f"/api/plugins/{fake_world.AZURE_PROMETHEUS}/settings"],
             "responses": [fake_world._plugin_settings(fake_world.AZURE_PROMETHEUS, g)]}]


def load_balancer_rules() -> list:
    """The internal load balancer's frontend as ``az network lb frontend-ip show`` prints it (properties
    flattened): in the node subnet ``snet-aks``, where :func:`ip_configuration` puts the NAT IPs by default."""
    subnet = (
        f"/subscriptions/{SUB}/resourceGroups/rg-aks-gpu-dev/providers/Microsoft.Network/virtualNetworks/vnet-aks/subnets/snet-aks")
    return [{"match": ["network", "lb", "frontend-ip", "show"],
             "responses": [{"json": {"id": FRONTEND, "name": FRONTEND.rsplit("/", 1)[-1],
                                     "privateIPAddress": "10.224.0.40",
                                     "privateIPAllocationMethod": "Dynamic", "subnet": {"id": subnet}}}]}]


def run(scenario: Scenario, workdir: Path, command: str | None = None) -> Result:
    """Run ``steps/<script>`` with the stand-in az first on PATH, from the project root (as Pulumi does); the Grafana
    steps also get :func:`grafana_server_rules` after the scenario's own rules. ``command``: a shell command line to
    run instead (as pulumi-command runs a stored one), with the scenario's arguments left to it."""
    rules = scenario.rules
    if scenario.script == "wait_private_link_service.sh":
        rules = rules + load_balancer_rules()
    if scenario.script.startswith("grafana_"):
        rules = rules + grafana_server_rules(scenario.grafana_version, scenario.grafana_plugins)
    env = {**fake_az_env(workdir, rules), **scenario.env}
    started = time.monotonic()
    runner = ["python3", "-m",
              f"steps.{scenario.script[:-3]}"] if scenario.script.endswith(".py") else ["bash",
                                                                                        f"steps/{scenario.script}"]
    argv = ["/bin/sh", "-c", command] if command is not None else [*runner, *scenario.args]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=scenario.max_seconds + 30)
    return Result(done.returncode, done.stdout, done.stderr, time.monotonic() - started, calls_in(workdir))


def stored_owner_commands(plan_file: Path = ROOT / "tests" / "data" / "plan-dev-before-microservices.json") -> dict:
    """name -> the ``create``/``delete`` command lines the owner steps of an older release stored in its state (its
    offline plan, ``plan_file``), which ran them as ``python3 scripts/<step>.py``."""
    plan = json.loads(plan_file.read_text())
    return {r["name"]: {k: r["inputs"][k] for k in ("create", "delete")} for r in plan["resources"]
            if r["type"] == "command:local:Command"
            and str(r["inputs"].get("create", "")).startswith("python3 scripts/")}
