"""A stateful stand-in for the Azure and Grafana APIs the stack touches. SIMULATED: nothing here talks to Azure.

The rule-based stand-in (tests/support/fake_az.py) answers from scripted responses; this one keeps a world (a JSON file,
``FAKE_AZ_WORLD``) so that a sequence of steps can be checked for its END STATE. tests/support/fake_az.py answers from
it when ``FAKE_AZ_WORLD`` is set; tests/support/lifecycle.py plays the providers' side (ARM resources, the Helm release
and the private link service AKS makes from it) on the same world.

What it mirrors (Azure's facts, each with its source in docs/offline-rules.yaml):

- Private link services: ``az network private-link-service show`` (404 ``ResourceNotFound`` when absent) and
  ``... connection update --connection-status Approved`` on the PLS ``--resource-group``/``--service-name`` name (404
  otherwise), answered with the connection and its new state; a connection is named ``<private endpoint>.<guid>``.
- The AKS cloud provider's side of a PLS (kubernetes-sigs/cloud-provider-azure
``pkg/provider/azure_privatelinkservice.go``
  at 7b31c76c, and its ``azure_privatelinkservice_test.go``): :func:`ensure_service_pls` and :func:`delete_service_pls`.
- Grafana managed private endpoints: ``GET .../managedPrivateEndpoints/{name}`` and
  ``POST .../refreshManagedPrivateEndpoints``, after which an endpoint whose connection is Approved reports
  Approved and its private IP (offline/canned.py ``MPE_PRIVATE_IP``, the IP the offline plan's read-back answers).
  Each creation of an endpoint gets a new ``systemData.createdAt`` (:func:`next_created_at`), also under a name used
  before: ARM sets it when it creates the resource (Azure/azure-rest-api-specs
  ``specification/common-types/resource-management/v3/types.json`` ``Resource.systemData``, read-only, which the
  dashboard 2024-10-01 ``ManagedPrivateEndpointModel`` inherits as a ``TrackedResource``).
- Grafana's HTTP API: datasources (``POST /api/datasources`` 409 when the name or uid is taken, ``GET|PUT|DELETE
  /api/datasources/uid/{uid}``, ``GET /api/datasources/name/{name}``, a ``version`` bumped on each write) and
  dashboards (``POST /api/dashboards/db``, 412 without ``overwrite`` when the uid exists at another version; before 11.3
titles unique
  per folder (:func:`same_title_in_folder`); ``GET|DELETE /api/dashboards/uid/{uid}``, ``GET /api/search``), answered as
``az rest`` reports HTTP errors (``ERROR: <reason>(<body>)``).
- Which Grafana it is (docs/offline.md G3, G8-G10): each workspace has a ``version`` (default
  :data:`DEFAULT_GRAFANA_VERSION`; tests/steps/test_grafana_server.py runs the steps against every one of
  :data:`GRAFANA_VERSIONS`) answered by ``GET /api/health``, and datasource plugins answered by ``GET
  /api/plugins?type=datasource``. What depends on the version: a PUT whose body uid differs from the path's
  (:func:`uid_change_answer`), and Grafana 13's start-up migration of Azure-auth Prometheus datasources to the
  plugin ``grafana-azureprometheus-datasource`` (:func:`start`, :func:`upgrade`).
- Downloads through ``az rest --skip-authorization-header --output-file``: ``downloads`` maps URL -> local file.
- Role assignments: ``az role assignment create --assignee-object-id ... --assignee-principal-type ... --role <id>
  --scope ... --name ...`` stores one in ``arm`` under the key azure-native's would have (:func:`arm_key`); when the
  principal already holds the role on the scope, under any name, it creates nothing and answers with the first
  assignment of that role on the scope, whoever's it is, as azure-cli at 01ce0346 does (Azure/azure-cli
  ``src/azure-cli/azure/cli/command_modules/role/custom.py`` ``create_role_assignment``: ARM's 409
  RoleAssignmentExists is caught "for idempotent" and ``list_role_assignments(cmd, assignee, role,
  resource_group_name, scope)[0]`` returned, with ``assignee`` None under ``--assignee-object-id``); azure-cli 2.91.0
  lists the principal's only, so the stand-in answers with the worse of the two. ``az role assignment list
  --assignee-object-id ... --role <id> --scope ...``: the assignments of that role to that principal at the scope.
- ``az resource show --ids <id>`` of a Grafana, Azure Monitor workspace, storage account or user-assigned identity
  (:data:`SHOWN`): the resource ``arm`` holds under that id, with its tags, or ARM's 404 (``ResourceNotFound``, az
  exits 3).
- Things deleted behind the stack's back (``gone``, :func:`delete_grafana`, :func:`delete_mpe`,
  :func:`delete_cluster`): ARM answers a deleted Grafana workspace's GET with 404 as ``az rest`` reports it
  (``ERROR: Not Found({"error":{"code":"ResourceNotFound",...}})``, azure-cli 2.91.0 ``send_raw_request``:
  ``reason(text)``), and its endpoint no longer resolves, so every call to its HTTP API fails as az 2.91.0 prints
  a name-resolution failure (observed: "The command failed with an unexpected error", then the urllib3
  ``NameResolutionError``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
import uuid
from typing import Any, Iterator, Optional
from urllib.parse import parse_qs, unquote, urlsplit

try:
    from tests.support import latency, pyroscope_server
except ModuleNotFoundError:  # imported by fake_az.py as its sibling module, outside the tests package
    import latency  # type: ignore[no-redef]
    import pyroscope_server  # type: ignore[no-redef]

PRIVATE_IP = "10.0.4.36"  # offline/canned.py MPE_PRIVATE_IP
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"


def arm_key(type_: str, identity: dict) -> str:
    """The key of an ARM resource in ``arm``: its azure-native type and the path parameters of its PUT."""
    return f"{type_} {json.dumps(identity, sort_keys=True)}"


@contextlib.contextmanager
def locked(path: str) -> Iterator[dict]:
    """The world in file ``path``, read and written back under an exclusive lock (``flock`` on ``<path>.lock``): under
    the real engine the steps' ``az`` calls, the provider plugins of ours and the cloud-side loop change it at once.
    Nothing is written when the body raises. The file is replaced whole, so a reader never sees half of it."""
    with open(f"{path}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(path, encoding="utf-8") as fh:
            world = json.load(fh)
        yield world
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "w", encoding="utf-8") as fh:
            json.dump(world, fh, indent=1, sort_keys=True)
        os.replace(partial, path)


def next_created_at(world: dict) -> str:
    """A ``systemData.createdAt`` later than every one the world gave before (one second apart)."""
    world["created"] = world.get("created", 0) + 1
    return f"2026-12-01T00:{world['created'] // 60:02d}:{world['created'] % 60:02d}.0000000Z"


def empty() -> dict:
    """A world with nothing in it. ``releases``: :func:`release_key` -> the Helm release's version and values;
    ``services``: the same key for a Service -> its load balancer frontend; ``claims``: the key of a claim -> its size
    and class; ``events``: what the
    cloud provider refused (a Kubernetes event on the Service); ``gone``: ARM ids (lower-cased) of Grafana workspaces
    and clusters deleted out of band, and the Grafana hosts that no longer resolve."""
    return {"pls": {}, "mpes": {}, "grafana": {}, "downloads": {}, "arm": {}, "releases": {}, "services": {},
            "claims": {}, "events": [], "gone": {"grafana": [], "hosts": [], "clusters": []}}


def _gone(world: dict) -> dict:
    return world.setdefault("gone", {"grafana": [], "hosts": [], "clusters": []})


def unresolvable(host: str, path: str) -> dict:
    """``az rest`` to a host whose name no longer resolves (azure-cli 2.91.0 with urllib3 2, as observed), exit 1."""
    reason = (f"HTTPSConnectionPool(host='{host}', port=443): Max retries exceeded with url: {path} (Caused by "
              f"NameResolutionError(\"HTTPSConnection(host='{host}', port=443): Failed to resolve '{host}' ([Errno -2] "
              "Name or service not known)\"))")
    return {"exit": 1, "stderr": "ERROR: The command failed with an unexpected error. Here is the traceback:\n"
            f"ERROR: {reason}\nTraceback (most recent call last):\n  ...\nrequests.exceptions.ConnectionError: "
            f"{reason}\n"
            "To check existing issues, please visit: https://github.com/Azure/azure-cli/issues"}


def rest_not_found(code: str, message: str) -> dict:
    """An ARM 404 as ``az rest`` reports it: ``ERROR: Not Found(<body>)``, exit 1."""
    return {"exit": 1, "stderr": "ERROR: Not Found(" + json.dumps({"error": {"code": code, "message": message}}) + ")"}


def delete_grafana(world: dict, grafana_id: str, host: str) -> None:
    """The Grafana workspace is deleted out of band: ARM no longer has it, its endpoint no longer resolves, and its
    managed private endpoints (with their connections on the PLS) and its content go with it."""
    _gone(world)["grafana"].append(grafana_id.lower())
    _gone(world)["hosts"].append(host)
    world["grafana"].pop(host, None)
    for key, mpe in list(world["mpes"].items()):
        if mpe["grafana"].lower() == grafana_id.lower():
            disconnect(world, mpe["endpoint"])
            del world["mpes"][key]


def delete_mpe(world: dict, grafana_id: str, name: str) -> None:
    """The managed private endpoint is deleted by hand (``az rest --method delete``): gone from Grafana, its
    connection gone from the PLS."""
    mpe = world["mpes"].pop(f"{grafana_id}/{name}".lower())
    disconnect(world, mpe["endpoint"])


def delete_cluster(world: dict, cluster_id: str, node_resource_group: str) -> None:
    """The AKS cluster is deleted out of band: its extensions and its Helm releases go with it, and so does its node
    resource group with everything in it, the load balancers and a PLS the cloud provider made there; its API server no
    longer answers. A PLS made in another resource group (``azure-pls-resource-group``, the stack's
    ``privateLinkServiceResourceGroup``) is not in the node resource group and nothing deletes it: it stays, orphaned,
    its frontend gone (the cloud provider that would delete it with its Service goes with the cluster). Other clusters'
    releases and PLS stay."""
    _gone(world)["clusters"].append(cluster_id.lower())
    world["releases"] = {k: v for k,
                         v in world["releases"].items() if not k.lower().startswith(cluster_id.lower() + "|")}
    for kind in ("services", "claims"):
        world[kind] = {k: v for k, v in world.setdefault(kind, {}).items()
                       if not k.lower().startswith(cluster_id.lower() + "|")}
    subscription = cluster_id.split("/")[2]
    world["pls"] = {k: p for k, p in world["pls"].items() if not in_group(p, node_resource_group, subscription)}


def _error(reason: str, message: str, exit_code: int = 1) -> dict:
    return {"exit": exit_code, "stderr": f'ERROR: {reason}({json.dumps({"message": message})})'}


def _arm_not_found(what: str) -> dict:
    return {"exit": 3,
            "stderr": f"ERROR: (ResourceNotFound) The Resource '{what}' was not found.\nCode: ResourceNotFound"}


def _option(argv: list[str], name: str) -> Optional[str]:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None


# --- ARM resources the stack creates (the lifecycle harness and the azure-native stand-in provider) ------------------
#: Why a key is part of an ARM resource's identity in offline/replacement.py's rules.
PATH_PARAMETER = "a path parameter of the ARM PUT"
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"


def arm_identity(type_: str, inputs: dict) -> str:
    """The key of the ARM resource ``inputs`` (engine names) describe: its type and its PUT path parameters, as
    offline/replacement.py lists them for ``type_``."""
    from offline import replacement  # here: the stand-in az imports this module without the project on its path

    rule = replacement.rule_for(type_)
    identity = {key: inputs.get(key) for key, why in (rule.replace_on.items() if rule else ()) if why == PATH_PARAMETER}
    return arm_key(type_, identity)


def mpe_key(grafana_id: str, name: str) -> str:
    return f"{grafana_id}/{name}".lower()


def arm_create(world: dict, type_: str, inputs: dict, grafana_id: str) -> Optional[str]:
    """azure-native's Create of an ARM resource: refused (the error returned) when one of its identity exists
    ("cannot create already existing resource"); a managed private endpoint of Grafana ``grafana_id`` puts a Pending
    connection on its PLS (refused when there is no such PLS) and gets a new ``createdAt``. None when created."""
    key = arm_identity(type_, inputs)
    if key in world["arm"]:
        return f"cannot create already existing resource {key} (azure-native Create)"
    if type_ == MPE:
        endpoint = f"grafana-{inputs['workspaceName']}-{inputs['managedPrivateEndpointName']}"
        if str(inputs["privateLinkResourceId"]).lower() not in world["pls"]:
            return f"private link service {inputs['privateLinkResourceId']} not found"
        connect(world, inputs["privateLinkResourceId"], endpoint, inputs.get("requestMessage") or "")
        world["mpes"][mpe_key(grafana_id, inputs["managedPrivateEndpointName"])] = {
            "grafana": grafana_id, "endpoint": endpoint, "pls": inputs["privateLinkResourceId"], "status": "Pending",
            "ip": "", "createdAt": next_created_at(world)}
    world["arm"][key] = inputs
    return None


#: ARM provider path -> (azure-native type, the path parameter that holds the name), for ``az resource show --ids``.
SHOWN = {"Microsoft.Dashboard/grafana": ("azure-native:dashboard:Grafana", "workspaceName"),
         "Microsoft.Monitor/accounts": ("azure-native:monitor:AzureMonitorWorkspace", "azureMonitorWorkspaceName"),
         "Microsoft.Storage/storageAccounts": ("azure-native:storage:StorageAccount", "accountName"),
         "Microsoft.ManagedIdentity/userAssignedIdentities": ("azure-native:managedidentity:UserAssignedIdentity",
                                                              "resourceName")}


#: The nested resources ``az resource show --ids`` is asked about (existing/handmade.py): id pattern -> (azure-native
#: type, the path parameters its groups fill).
NESTED = {
    r"/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/(Microsoft\.ContainerService)/(managedClusters)/([^/]+)/"
    r"providers/Microsoft\.KubernetesConfiguration/extensions/([^/]+)":
        ("azure-native:kubernetesconfiguration:Extension",
         ("resourceGroupName", "clusterRp", "clusterResourceName", "clusterName", "extensionName")),
    r"/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.Dashboard/grafana/([^/]+)/"
    r"managedPrivateEndpoints/([^/]+)": (MPE, ("resourceGroupName", "workspaceName", "managedPrivateEndpointName")),
    r"(/subscriptions/.+)/providers/Microsoft\.Authorization/roleAssignments/([^/]+)":
        (ROLE_ASSIGNMENT, ("scope", "roleAssignmentName")),
}


def _resource_show(argv: list[str], world: dict) -> dict:
    """``az resource show --ids <id>``: the resource ``arm`` holds under that id (its ``id`` and ``tags``; null for an
    extension, which takes none), or ARM's 404, on which az exits 3 (azure-cli 2.91.0 ``core/util.py``; the other
    404 texts az prints: tests/existing/test_taken.py). ARM ids are case-insensitive (azure-mgmt-core ``tools.py``
    ``_ARMID_RE``) in their fixed segments here; names keep their case, as the engine sent them."""
    resource_id = _option(argv, "--ids") or ""
    found = re.fullmatch(r"/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/([^/]+/[^/]+)/([^/]+)", resource_id,
                         re.IGNORECASE)
    kind = found and next((v for k, v in SHOWN.items() if k.lower() == found.group(2).lower()), None)
    inputs = kind and world["arm"].get(arm_identity(kind[0], {"resourceGroupName": found.group(1),
                                                              kind[1]: found.group(3)}))
    for pattern, (type_, names) in NESTED.items():
        nested = re.fullmatch(pattern, resource_id, re.IGNORECASE)
        if nested:
            inputs = world["arm"].get(arm_identity(type_, dict(zip(names, nested.groups()))))
    if inputs is None:
        return _arm_not_found("/".join(resource_id.rsplit("/providers/", 1)[-1].split("/")))
    return {"json": {"id": resource_id, "tags": inputs.get("tags")}}


def arm_delete(world: dict, type_: str, inputs: dict, grafana_id: str) -> None:
    """azure-native's Delete: ARM's 404 for a resource already gone counts as deleted; a managed private endpoint's
    connection leaves its PLS; a Grafana workspace goes with its content (datasources, dashboards)."""
    world["arm"].pop(arm_identity(type_, inputs), None)
    if type_ == "azure-native:dashboard:Grafana":
        from offline import canned

        answer = canned.grafana({"resourceGroupName": inputs["resourceGroupName"],
                                 "workspaceName": inputs["workspaceName"]}, inputs.get("location", "eastus2"))
        world["grafana"].pop(urlsplit(answer["properties"]["endpoint"]).netloc, None)
    if type_ == MPE:
        world["mpes"].pop(mpe_key(grafana_id, inputs["managedPrivateEndpointName"]), None)
        disconnect(world, f"grafana-{inputs['workspaceName']}-{inputs['managedPrivateEndpointName']}")


# --- private link services and managed private endpoints ----------------------------------------------------------


def pls_id(resource_group: str, name: str, subscription: str) -> str:
    return (
        f"/subscriptions/{subscription}/resourceGroups/{resource_group}/providers/Microsoft.Network/privateLinkServices/{name}")


def pls_body(pls: dict) -> dict:
    """A PLS as ``az network private-link-service show`` prints it: with the load balancer frontend it serves and the
    tags the cloud provider put on it."""
    return {
        "id": pls["id"], "name": pls["id"].rsplit("/", 1)[1], "provisioningState": "Succeeded",
        "visibility": {"subscriptions": pls["visibility"]},
        "loadBalancerFrontendIpConfigurations": [{"id": pls["frontend"]}],
        "tags": dict(pls.get("tags") or {}),
        "ipConfigurations": [
            {"name": c["name"], "primary": c["primary"], "privateIPAddress": c["address"],
             "privateIPAllocationMethod": "Dynamic", "privateIPAddressVersion": "IPv4",
             "subnet": {"id": pls["id"].split("/resourceGroups/")[0] + "/resourceGroups/rg-aks-gpu-dev/providers/"
                              f"Microsoft.Network/virtualNetworks/vnet-aks/subnets/{c['subnet']}"}}
            for c in pls.get("ip_configurations") or []],
        "privateEndpointConnections": [connection_body(pls, c) for c in pls["connections"]],
    }


def connection_body(pls: dict, c: dict) -> dict:
    """A private endpoint connection as az prints it (properties flattened, as in ``private-link-service show``)."""
    return {"id": f"{pls['id']}/privateEndpointConnections/{c['name']}", "name": c["name"],
            "type": "Microsoft.Network/privateLinkServices/privateEndpointConnections",
            "provisioningState": "Succeeded",
            "privateEndpoint": {"id": c["endpoint"]},
            "privateLinkServiceConnectionState": {"status": c["status"], "description": c.get("description", ""),
                                                  "actionsRequired": "None"}}


# --- the AKS cloud provider's private link service ------------------------------------------------------------------
#: Tags the cloud provider writes on a PLS it creates (``reconcilePLSTags``; ``pkg/consts/consts.go``): the owning
#: Service as ``<namespace>/<name>`` (``getServiceName``) and its own cluster name, the ``--cluster-name`` it runs with,
#: which is not the AKS resource's name, so it tells two clusters apart nowhere the stack can rely on.
OWNER_SERVICE_TAG = "k8s-azure-owner-service"
CLUSTER_NAME_TAG = "k8s-azure-cluster-name"
CLOUD_PROVIDER_CLUSTER_NAME = "kubernetes"  # as in offline/canned.py private_link_service


def release_key(cluster_id: str, namespace: str, name: str) -> str:
    """The key of a Helm release (and of its Service) in ``world["releases"]``: releases live in one cluster."""
    return f"{cluster_id.lower()}|{namespace}/{name}"


def load_balancer_scope(cluster_id: str, node_resource_group: str) -> str:
    """Where the cluster's load balancers live: its node resource group, in its subscription."""
    subscription = cluster_id.split("/")[2]
    return (
        f"/subscriptions/{subscription}/resourceGroups/{node_resource_group}/providers/Microsoft.Network/loadBalancers/")


def new_frontend(cluster_id: str, node_resource_group: str) -> str:
    """The frontend IP configuration a new internal LoadBalancer Service gets on the cluster's internal load balancer
    (``kubernetes-internal``), named after the Service's UID: a new Service, a new frontend."""
    return (f"{load_balancer_scope(cluster_id, node_resource_group)}kubernetes-internal/"
            f"frontendIPConfigurations/a{uuid.uuid4().hex}")


def reconcile_ip_configurations(world: dict, pls: dict, count: int, subnet: str) -> None:
    """``reconcilePLSIpConfigs`` (kubernetes-sigs/cloud-provider-azure ``pkg/provider/azure_privatelinkservice.go``
    @7b31c76c) for dynamic configurations: when their number differs from ``count`` or one's subnet from ``subnet``
    (``""``: the cloud provider's own, here ``snet-aks``), every configuration is rebuilt,
    ``<subnet>-<pls>-dynamic-<i>``, and ARM allocates each an address (stand-in: the subnet's first free hosts, the
    addresses offline/canned.py ``pls_nat_addresses`` answers, so the world and the offline plan agree)."""
    subnet = subnet or "snet-aks"
    current = pls.get("ip_configurations") or []
    if len(current) == count and all(c["subnet"] == subnet for c in current):
        return
    name = pls["id"].rsplit("/", 1)[1]
    configs = []
    from offline import canned  # here: the stand-in az imports this module without the project on its path

    for i, address in enumerate(canned.pls_nat_addresses(subnet, count)):
        # The "<subnet>-<pls>" prefix cut so the whole name stays within 80 characters, as the cloud provider does.
        configs.append({"name": f"{subnet}-{name}"[:80 - len(f"-dynamic-{i}")] + f"-dynamic-{i}", "subnet": subnet,
                        "primary": i == 0,
                        "address": address})
    pls["ip_configurations"] = configs


def ensure_service_pls(world: dict, service: str, frontend: str, group: str, name: str, visibility: list,
                       subscription: str, ip_count: int = 1, subnet: str = "") -> Optional[str]:
    """``reconcilePrivateLinkService`` for a Service that wants a PLS (``azure-pls-create``), whose load balancer
    frontend is ``frontend``; ``service``: ``<namespace>/<name>``; ``group``: the annotated PLS resource group (else the
    node resource group, ``getPLSResourceGroup``). The PLS already attached to the frontend is looked up by the
    frontend, not by its name, and in ``group`` only (``plsRepo.Get(ctx, az.getPLSResourceGroup(service), fipConfigID,
    ...)``, whose cache lists that one group: ``pkg/provider/privatelinkservice/cache.go`` ``NewCache``). So a changed
    resource group finds nothing and creates a new PLS there; the old one stays, attached to the same frontend, and is
    orphaned when the Service goes (:func:`delete_service_pls` looks in the group the Service then names). The name of a
    PLS found cannot change: ``getPrivateLinkServiceName`` fails with "cannot change existing private link service name
    (old) to (new)" (``TestGetPrivateLinkServiceName``, "If pls name is not equal to service configuration, error should
    be reported"), and the reconcile stops there, so the Service keeps the old PLS unchanged. Returns that error
    (recorded in ``world["events"]``), or None once the PLS is as the annotations say. Beyond the source (stand-in
    rule): a PLS name already taken in the group by another frontend is left as it is (ARM's answer to that PUT is not
    modelled), so the Service gets no PLS."""
    wanted = pls_id(group, name, subscription)
    existing = next((p for p in world["pls"].values()
                     if p["frontend"].lower() == frontend.lower() and in_group(p, group, subscription)), None)
    error = None
    if existing is not None:
        old_name = existing["id"].rsplit("/", 1)[1]
        if old_name.lower() != name.lower():
            # returned unwrapped by reconcilePrivateLinkService (azure_privatelinkservice.go @ 7b31c76c)
            error = (f"getPrivateLinkServiceName({service}) failed: cannot change existing private link service name "
                     f"({old_name}) to ({name})")
        else:
            existing["visibility"] = list(visibility)
            reconcile_ip_configurations(world, existing, ip_count, subnet)
    elif wanted.lower() in world["pls"]:
        error = (
            f"stand-in: private link service {wanted} exists for load balancer frontend "
            f"{world['pls'][wanted.lower()]['frontend']}")
    else:
        world["pls"][wanted.lower()] = {
            "id": wanted, "frontend": frontend, "visibility": list(visibility), "connections": [],
            "tags": {CLUSTER_NAME_TAG: CLOUD_PROVIDER_CLUSTER_NAME, OWNER_SERVICE_TAG: service}}
        reconcile_ip_configurations(world, world["pls"][wanted.lower()], ip_count, subnet)
    if error:
        world.setdefault("events", []).append(error)
    return error


def in_group(pls: dict, group: str, subscription: str) -> bool:
    """Whether the PLS lives in resource group ``group`` of ``subscription``."""
    return pls["id"].lower().startswith(f"/subscriptions/{subscription}/resourceGroups/{group}/".lower())


def delete_service_pls(world: dict, frontend: str, group: str, subscription: str) -> None:
    """The Service is gone (``reconcilePrivateLinkService`` with ``wantPLS`` false): the frontend's PLS is looked up in
    the resource group the Service's annotations name at that moment (``group``, as in :func:`ensure_service_pls`; a PLS
    of the frontend elsewhere is not found, and stays), then ``safeDeletePLS`` deletes every private endpoint connection
    on it, then the PLS (``TestSafeDeletePLS``: "safeDeletePLS shall delete all PE connections and pls itself"). A
    managed private endpoint whose connection goes this way is left Disconnected ("removed from the service")."""
    for key, pls in list(world["pls"].items()):
        if pls["frontend"].lower() != frontend.lower() or not in_group(pls, group, subscription):
            continue
        for connection in pls["connections"]:
            for mpe in world["mpes"].values():
                if connection["endpoint"].endswith("/" + mpe["endpoint"]):
                    mpe["status"] = "Disconnected"
        pls["connections"] = []
        del world["pls"][key]


def connect(world: dict, pls_arm_id: str, endpoint_name: str, request_message: str = "",
            subscription: str = "00000000-1111-2222-3333-444444444444", resource_group: str = "managed-rg") -> None:
    """A private endpoint puts a Pending connection on the PLS (KeyError if there is no such PLS): Grafana's MPE by
    default (its subscription as the stand-in has it: which one Azure uses is not documented), or anyone's
    (``subscription``, ``resource_group``: with visibility ``*`` anyone who knows the alias may ask). While Pending, the
    connection's ``privateLinkServiceConnectionState.description`` is the endpoint's request message: the PLS owner
    sees the consumer's message (MicrosoftDocs/azure-docs ``articles/private-link/manage-private-endpoint.md`` @
    ``024c6fae``), and the PLS-side connection has no other free-text property (Azure/azure-rest-api-specs
    ``specification/network/resource-manager/Microsoft.Network/stable/2024-05-01/privateLinkService.json``
    ``PrivateEndpointConnectionProperties``). Which field carries it is this stand-in's reading, not observed."""
    pls = world["pls"][pls_arm_id.lower()]
    endpoint = (
        f"/subscriptions/{subscription}/resourceGroups/{resource_group}/providers/Microsoft.Network/privateEndpoints/{endpoint_name}")
    pls["connections"].append({"name": f"{endpoint_name}.{uuid.uuid4()}", "endpoint": endpoint, "status": "Pending",
                               "description": request_message})


def disconnect(world: dict, endpoint_name: str) -> None:
    """Deleting the MPE removes its connection from whichever PLS holds it."""
    for pls in world["pls"].values():
        pls["connections"] = [c for c in pls["connections"] if not c["endpoint"].endswith("/" + endpoint_name)]


def _pls_show(argv: list[str], world: dict) -> dict:
    group, name = _option(argv, "--resource-group"), _option(argv, "--name")
    for pls in world["pls"].values():
        if pls["id"].lower().endswith(
            f"/resourcegroups/{group}/providers/microsoft.network/privatelinkservices/{name}".lower()):
            return {"json": pls_body(pls)}
    return _arm_not_found(f"Microsoft.Network/privateLinkServices/{name}")


def _connection_update(argv: list[str], world: dict) -> dict:
    """``az network private-link-service connection update``: the connection ``--name`` of the PLS ``--service-name`` in
    ``--resource-group`` (404 ``ResourceNotFound`` when that PLS or connection does not exist), answered as ARM answers
    the PUT: the connection with its new ``privateLinkServiceConnectionState`` (azure-rest-api-specs
    ``specification/network/resource-manager/Microsoft.Network/stable/2024-05-01/privateLinkService.json``
    ``PrivateLinkServices_UpdatePrivateEndpointConnection``: 200 ``PrivateEndpointConnection``)."""
    group, service = _option(argv, "--resource-group"), _option(argv, "--service-name")
    name, status = _option(argv, "--name"), _option(argv, "--connection-status")
    suffix = f"/resourcegroups/{group}/providers/microsoft.network/privatelinkservices/{service}".lower()
    pls = next((p for p in world["pls"].values() if p["id"].lower().endswith(suffix)), None)
    if pls is None:
        return _arm_not_found(f"Microsoft.Network/privateLinkServices/{service}")
    for connection in pls["connections"]:
        if connection["name"] == name:
            connection.update(status=status, description=_option(argv, "--description") or "")
            return {"json": connection_body(pls, connection)}
    return _arm_not_found(f"Microsoft.Network/privateLinkServices/{service}/privateEndpointConnections/{name}")


def refreshed(mpe: dict, after: float) -> None:
    """The refresh found the endpoint's connection Approved: it reports Approved and its private IP ``after`` seconds
    from now (the long-running POST's time, tests/support/latency.py; at once without a factor). A refresh while one
    is under way changes nothing."""
    if after <= 0:
        mpe.update(status="Approved", ip=PRIVATE_IP)
    elif not (mpe["status"] == "Approved" and mpe["ip"]):
        mpe.setdefault("refreshed_at", time.time() + after)


def settled(mpe: Optional[dict]) -> Optional[dict]:
    """``mpe`` as a read sees it now: a refresh whose time has come applied (:func:`refreshed`)."""
    if mpe is not None and time.time() >= mpe.get("refreshed_at", float("inf")):
        del mpe["refreshed_at"]
        mpe.update(status="Approved", ip=PRIVATE_IP)
    return mpe


def _arm_rest(method: str, path: str, world: dict) -> Optional[dict]:
    """Grafana workspaces (GET), managed private endpoints and their refresh; None when the path is not one of
    these. A workspace exists unless it was deleted (:func:`delete_grafana`)."""
    workspace = re.fullmatch(r".*/providers/Microsoft\.Dashboard/grafana/([^/]+)", path, re.I)
    if workspace and method == "get":
        if path.lower() in _gone(world)["grafana"]:
            group = re.search(r"/resourceGroups/([^/]+)/", path, re.I)
            return rest_not_found("ResourceNotFound",
                                  f"The Resource 'Microsoft.Dashboard/grafana/{workspace.group(1)}' "
                                  f"under resource group '{group.group(1) if group else '?'}' was not found.")
        return {"json": {"id": path, "name": workspace.group(1), "type": "Microsoft.Dashboard/grafana",
                         "properties": {"provisioningState": "Succeeded"}}}
    refresh = re.fullmatch(r"(.*/providers/Microsoft\.Dashboard/grafana/[^/]+)/refreshManagedPrivateEndpoints", path,
                           re.I)
    if refresh and method == "post":
        grafana = refresh.group(1).lower()
        for mpe in world["mpes"].values():
            if mpe["grafana"].lower() == grafana:
                approved = any(c["status"] == "Approved" and c["endpoint"].endswith("/" + mpe["endpoint"])
                               for pls in world["pls"].values() for c in pls["connections"])
                if approved:
                    refreshed(mpe, latency.seconds("events", "ip_after_refresh"))
        return {"stdout": ""}
    one = re.fullmatch(r"(.*/providers/Microsoft\.Dashboard/grafana/[^/]+)/managedPrivateEndpoints/([^/]+)", path, re.I)
    if one and method == "get":
        mpe = settled(world["mpes"].get(f"{one.group(1)}/{one.group(2)}".lower()))
        if mpe is None:
            return _arm_not_found(f"Microsoft.Dashboard/grafana/managedPrivateEndpoints/{one.group(2)}")
        return {"json": {"id": path, "name": one.group(2), "systemData": {"createdAt": mpe.get("createdAt")},
                         "properties": {
            "provisioningState": "Succeeded", "privateLinkResourceId": mpe["pls"],
            "connectionState": {"status": mpe["status"], "description": ""},
            "privateLinkServicePrivateIP": mpe["ip"] or None}}}
    return None


# --- role assignments ----------------------------------------------------------------------------------------------


def _role_assignment_body(assignment: dict) -> dict:
    """A role assignment as ``az role assignment create`` prints it (flat, camelCase)."""
    return {
        "id": f"{assignment['scope']}/providers/Microsoft.Authorization/roleAssignments/"
              f"{assignment['roleAssignmentName']}",
        "name": assignment["roleAssignmentName"], "type": "Microsoft.Authorization/roleAssignments",
        "scope": assignment["scope"], "roleDefinitionId": assignment["roleDefinitionId"],
        "principalId": assignment["principalId"], "principalType": assignment.get("principalType"),
        "description": assignment.get("description")}


def _assignments(world: dict, scope: str, role: str, principal: Optional[str] = None) -> list[dict]:
    """The role assignments of ``role`` at ``scope`` (to ``principal`` if given), in the order they were made."""
    return [held for key, held in world["arm"].items()
            if key.startswith(ROLE_ASSIGNMENT + " ") and held["scope"].lower() == scope.lower()
            and held["roleDefinitionId"].lower() == role.lower() and principal in (None, held["principalId"])]


def _role_assignment_list(argv: list[str], world: dict) -> dict:
    scope, role, principal = _option(argv, "--scope"), _option(argv, "--role"), _option(argv, "--assignee-object-id")
    return {"json": [_role_assignment_body(held) for held in _assignments(world, scope, role, principal)]}


def _role_assignment_create(argv: list[str], world: dict) -> dict:
    scope, role, principal = _option(argv, "--scope"), _option(argv, "--role"), _option(argv, "--assignee-object-id")
    if _assignments(world, scope, role, principal):
        # 409 RoleAssignmentExists, answered with the first assignment of the role on the scope (module docstring).
        return {"json": _role_assignment_body(_assignments(world, scope, role)[0])}
    name = _option(argv, "--name") or str(uuid.uuid4())
    assignment = {"scope": scope, "roleAssignmentName": name, "roleDefinitionId": role, "principalId": principal,
                  "principalType": _option(argv, "--assignee-principal-type"),
                  "description": _option(argv, "--description")}
    world["arm"][arm_key(ROLE_ASSIGNMENT, {"roleAssignmentName": name, "scope": scope})] = assignment
    return {"json": _role_assignment_body(assignment)}


# --- Grafana's HTTP API ----------------------------------------------------------------------------------------------


#: The Grafana releases the version matrix runs against (tests/steps/test_grafana_server.py): the long-term 10.4 and
#: 11.6 lines (11.6 before and after the uid-mismatch backport), 12.2 before it, 12.4 after it, 13.0 before and after
#: it.
GRAFANA_VERSIONS = ("10.4.19", "11.6.14", "11.6.15", "12.2.8", "12.4.4", "13.0.1", "13.0.2")
DEFAULT_GRAFANA_VERSION = "12.4.4"
PROMETHEUS = "prometheus"
AZURE_PROMETHEUS = "grafana-azureprometheus-datasource"
#: The jsonData key Grafana's migration sets (grafana/grafana ``pkg/services/promtypemigration/prom_mig.go``
#: ``updateDataSourceType``: ``ds.JsonData.Set("prometheus-type-migration", true)``).
MIGRATION_MARKER = "prometheus-type-migration"
#: Core datasource plugins a workspace always lists (the ones the stack and tests meet); ``plugins`` adds installed
#: ones.
CORE_DATASOURCE_PLUGINS = {PROMETHEUS: "Prometheus", "grafana-pyroscope-datasource": "Grafana Pyroscope",
                           "grafana-azure-monitor-datasource": "Azure Monitor", "loki": "Loki"}
#: Installed plugins' names and the oldest Grafana they install on (grafana/azure-prometheus-datasource
#: ``src/plugin.json`` @ 3479e317: ``"grafanaDependency": ">=11.5.0"``).
INSTALLABLE = {AZURE_PROMETHEUS: ("Azure Monitor Managed Service for Prometheus", (11, 5, 0))}


def release(version: str) -> tuple:
    """``"12.4.4"`` -> ``(12, 4, 4)`` (a suffix such as ``+security-01`` is ignored)."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if not found:
        raise ValueError(f"not a Grafana version: {version!r}")
    return tuple(int(part) for part in found.groups())


#: First patch of each release line whose ``PUT /api/datasources/uid/{uid}`` answers 400 when the body's uid is not
#: the path's: grafana/grafana commit e99df4816b6fba47a08f904fb19c9841e019c5fc (PR 125398, "return 400 when payload
#: UID does not match URL UID", test ``TestUpdateDataSourceByUID_UIDMismatch`` in ``pkg/api/datasources_test.go``) and
#: its backports to release-11.6.15, 12.2.9, 12.3.7, 12.4.4 and 13.0.2 (PRs 125516, 125518, 125523, 125769, 125771).
#: The 400's message text is the stand-in's own: the code index holds ``pkg/api/datasources.go`` only from before the
#: change (db64da7a), so only the status follows Grafana; the steps read nothing but the status.
UID_MISMATCH_400 = {(11, 6): 15, (12, 2): 9, (12, 3): 7, (12, 4): 4, (13, 0): 2}


def uid_change_answer(version: str) -> str:
    """What Grafana ``version`` does with a PUT whose body uid differs from the path's: ``"400"`` where the check of
    :data:`UID_MISMATCH_400` shipped; ``"500"`` from 12.2 on without it: grafana/grafana PR 107486 ("Remove support
    for changing datasource uids", merged to main 2025-07-01) looks the row up by id *and* the body's uid, finds none,
    and the handler falls back to 500 "Failed to update datasource" (``pkg/api/datasources.go`` @ db64da7a
    ``updateDataSourceByID``: ``ErrOrFallback(http.StatusInternalServerError, ...)``); ``"moves"`` before PR 107486
    (10.4, 11.6 before 11.6.15): the row the path names takes the body's uid, id, name and secrets kept
    (``pkg/services/datasources/service/datasource.go`` @ 001e0d76 ``UpdateDataSource`` looks up by id only,
    ``store.go`` @ 01d820ab writes ``UID: cmd.UID``). 12.0 and 12.1 are not modelled (which of them carries PR
    107486 was not established): ValueError."""
    major, minor, patch = release(version)
    first_400 = UID_MISMATCH_400.get((major, minor))
    if (first_400 is not None and patch >= first_400) or (major, minor) > (13, 0):
        return "400"
    if (major, minor) >= (12, 2):
        return "500"
    if (major, minor) < (12, 0):
        return "moves"
    raise ValueError(f"the stand-in has no uid-change rule for Grafana {version}")


def grafana(world: dict, host: str) -> dict:
    """The Grafana workspace answering at ``host`` (created empty on first use, at :data:`DEFAULT_GRAFANA_VERSION`
    with no plugin installed; ``features``: feature toggles switched on beyond the version's defaults)."""
    g = world["grafana"].setdefault(host, {"datasources": {}, "dashboards": {}, "next_id": 1})
    g.setdefault("version", DEFAULT_GRAFANA_VERSION)
    g.setdefault("plugins", [])
    g.setdefault("features", [])
    return g


def install_plugin(g: dict, plugin_id: str) -> None:
    """Install a plugin (what Grafana's installer, or an admin, does); refused below the plugin's Grafana dependency."""
    name, oldest = INSTALLABLE[plugin_id]
    if release(g["version"]) < oldest:
        raise ValueError(f"{plugin_id} needs Grafana {'.'.join(map(str, oldest))} or newer, not {g['version']}")
    if plugin_id not in g["plugins"]:
        g["plugins"].append(plugin_id)


def start(world: dict, host: str) -> None:
    """Grafana starts (after an install or an in-place upgrade). From 13.0 on it migrates every datasource of type
    ``prometheus`` whose ``jsonData.azureCredentials`` is set and not null to ``grafana-azureprometheus-datasource``,
    installing that plugin first if absent, with ``jsonData["prometheus-type-migration"] = true`` and the rest kept
    (url and access too: its update command leaves them empty, and xorm writes no empty column); read-only
    (provisioned) ones too (the service layer does not check ``readOnly``). Before 13.0 only with the
    ``prometheusTypeMigration`` feature toggle on (``features``). Sources: grafana/grafana
    ``pkg/services/promtypemigration/azure_prom_mig.go`` @ c55de7f8 (``getPrometheusDataSources``), ``prom_mig.go``
    (``applyMigration``, ``updateDataSourceType``) and its tests ``TestGetPrometheusDataSources_Azure_*``
    (``azure_prom_mig_test.go`` @ 3ba4aa68), ``TestApplyMigration_*`` (``prom_mig_test.go`` @ 3ba4aa68); the toggle
    check in ``migrator.go`` @ 5bb2a386 (``Run``), dropped by PR 121862 ("the migration will always happen"), which
    Grafana's docs for 13 state as "In Grafana 13, the prometheusTypeMigration feature toggle is enabled by default
    and deprecated" (grafana.com docs v13.1 ``datasources/prometheus/configure/azure-authentication``)."""
    g = grafana(world, host)
    if release(g["version"]) < (13, 0, 0) and "prometheusTypeMigration" not in g["features"]:
        return
    due = [ds for ds in g["datasources"].values()
           if ds.get("type") == PROMETHEUS and (ds.get("jsonData") or {}).get("azureCredentials") is not None]
    if not due:
        return
    if AZURE_PROMETHEUS not in g["plugins"]:
        install_plugin(g, AZURE_PROMETHEUS)
    for ds in due:
        ds["type"] = AZURE_PROMETHEUS
        ds["jsonData"] = {**ds["jsonData"], MIGRATION_MARKER: True}
        ds["version"] = 1  # the migration's command carries no version: store.go writes Version: cmd.Version + 1


def upgrade(world: dict, host: str, version: str) -> None:
    """Azure Managed Grafana upgrades the workspace in place to ``version``; Grafana then starts (:func:`start`)."""
    grafana(world, host)["version"] = version
    start(world, host)


def _health(g: dict) -> dict:
    """``GET /api/health``: grafana/grafana ``pkg/api/http_server.go`` @ ab59f3cb ``apiHealthHandler`` (``database``,
    and ``version`` and ``commit`` unless ``AnonymousHideVersion``)."""
    return {"json": {"commit": "0000000000", "database": "ok", "version": g["version"]}}


def _plugins(query: str, g: dict) -> dict:
    """``GET /api/plugins?type=datasource``: grafana/grafana ``pkg/api/plugins.go`` @ 54ec4964 ``GetPluginList``
    (a list of ``dtos.PluginListItem``, filtered on ``type``)."""
    wanted = parse_qs(query).get("type", [""])[0]
    found = [{"id": pid, "name": name, "type": "datasource", "enabled": True, "info": {"version": g["version"]}}
             for pid, name in CORE_DATASOURCE_PLUGINS.items()]
    found += [{"id": pid, "name": INSTALLABLE[pid][0], "type": "datasource", "enabled": True,
               "info": {"version": "1.0.0"}}
              for pid in g["plugins"]]
    return {"json": sorted((p for p in found if not wanted or p["type"] == wanted), key=lambda p: p["name"].lower())}


def _plugin_settings(plugin_id: str, g: dict) -> dict:
    """``GET /api/plugins/{id}/settings``: grafana/grafana ``pkg/api/plugins.go`` @ 54ec4964 ``GetPluginSettingByID``,
    the plugin's settings to any signed-in user (not only an Admin, as the list shows external plugins), or 404
    "Plugin not found"."""
    if plugin_id not in CORE_DATASOURCE_PLUGINS and plugin_id not in g["plugins"]:
        return _error("Not Found", "Plugin not found, no installed plugin with that id")
    name = CORE_DATASOURCE_PLUGINS.get(plugin_id) or INSTALLABLE[plugin_id][0]
    return {"json": {"id": plugin_id, "name": name, "type": "datasource", "enabled": True}}


def datasource_variable_options(g: dict, variable: dict) -> list:
    """The uids a dashboard's datasource variable offers: the datasources whose plugin id is its ``query``
    (grafana/scenes ``DataSourceVariable.getValueOptions``, ``getList({pluginId})``; tests "Should generate correctly
    the options including only datasources with the queried type" and "Should default to non datasources found options
    for invalid query" in ``packages/scenes/src/variables/variants/DataSourceVariable.test.ts`` @ 58f5e9ed)."""
    return sorted(uid for uid, ds in g["datasources"].items() if ds.get("type") == variable.get("query"))


#: The ``dtos.DataSource`` fields ``convertModelToDtos`` fills (grafana/grafana ``pkg/api/datasources.go`` @ 001e0d76,
#: JSON names from ``pkg/api/dtos/datasource.go`` @ 01d820ab) and what they are when the stored row has none.
DTO_DEFAULTS = {"id": 0, "uid": "", "orgId": 1, "name": "", "type": "", "typeLogoUrl": "", "access": "", "url": "",
                "user": "", "database": "", "basicAuth": False, "basicAuthUser": "", "withCredentials": False,
                "isDefault": False, "jsonData": {}, "secureJsonFields": {}, "version": 0, "readOnly": False}


def type_logo_url(g: dict, plugin_id: str) -> str:
    """``typeLogoUrl``: the plugin's ``info.logos.small`` (the paths are the stand-in's), and
    ``public/img/icn-datasource.svg`` for a type no plugin has (``convertModelToDtos``)."""
    if plugin_id in CORE_DATASOURCE_PLUGINS:
        return f"public/app/plugins/datasource/{plugin_id}/img/logo.svg"
    if plugin_id in g["plugins"]:
        return f"public/plugins/{plugin_id}/img/logo.svg"
    return "public/img/icn-datasource.svg"


def datasource_dto(g: dict, stored: dict) -> dict:
    """A stored datasource as ``GET /api/datasources/uid/{uid}`` (and ``/name/{name}``) answers it: a
    ``dtos.DataSource`` (:data:`DTO_DEFAULTS`), ``secureJsonFields`` naming each non-empty ``secureJsonData`` key (its
    values never shown), ``apiVersion`` only when set (omitempty)."""
    dto = {key: stored.get(key, default) for key, default in DTO_DEFAULTS.items()}
    dto["typeLogoUrl"] = type_logo_url(g, dto["type"])
    dto["secureJsonFields"] = {**(stored.get("secureJsonFields") or {}),
                               **{key: True for key, value in (stored.get("secureJsonData") or {}).items() if value}}
    if stored.get("apiVersion"):
        dto["apiVersion"] = stored["apiVersion"]
    return dto


def _datasources(method: str, path: str, body: Any, g: dict) -> Optional[dict]:
    stored = g["datasources"]
    by_uid = re.fullmatch(r"/api/datasources/uid/([^/]+)", path)
    by_name = re.fullmatch(r"/api/datasources/name/([^/]+)", path)
    if path == "/api/datasources" and method == "post":
        if any(ds["name"] == body["name"] for ds in stored.values()):
            return _error("Conflict", "data source with the same name already exists")
        if body["uid"] in stored:
            return _error("Conflict", "data source with the same uid already exists")
        g["next_id"] += 1
        stored[body["uid"]] = {**body, "id": g["next_id"], "orgId": 1, "version": 1}
        return {"json": {"id": g["next_id"], "message": "Datasource added", "name": body["name"],
                         "datasource": datasource_dto(g, stored[body["uid"]])}}
    if by_name and method == "get":
        found = [ds for ds in stored.values() if ds["name"] == unquote(by_name.group(1))]
        return {"json": datasource_dto(g, found[0])} if found else _error("Not Found", "Data source not found")
    if not by_uid:
        return None
    uid = unquote(by_uid.group(1))
    changes_uid = method == "put" and (body.get("uid") or uid) != uid
    if changes_uid and uid_change_answer(g["version"]) == "400":  # PR 125398: checked before the datasource lookup
        return _error("Bad Request", "data source UID in the request body does not match the UID in the URL")
    if method in ("put", "delete") and (stored.get(uid) or {}).get("readOnly"):
        # G6: a provisioned datasource; grafana/grafana pkg/api/datasources.go @ 001e0d76 (updateDataSourceByID,
        # DeleteDataSourceByUID): 403 after the lookup, before any update
        verb = "update" if method == "put" else "delete"
        return _error("Forbidden", f"Cannot {verb} read-only data source")
    read_or_delete = _read_or_delete(stored, uid, method, "Data source", lambda found: datasource_dto(g, found))
    if read_or_delete is not None:
        return read_or_delete
    if method == "put":
        new_uid = body.get("uid") or uid
        if changes_uid and (uid_change_answer(g["version"]) == "500" or new_uid in stored):
            return _error("Internal Server Error", "Failed to update datasource")
        if any(ds["name"] == body["name"] and key != uid for key, ds in stored.items()):
            # updateDataSourceByID (pkg/api/datasources.go): ErrDataSourceNameExists -> 409 "Failed to update
            # datasource: " + the error's text
            return _error("Conflict", "Failed to update datasource: data source with the same name already exists")
        previous = stored.pop(uid)
        stored[new_uid] = {**body, "uid": new_uid, "id": previous["id"], "orgId": 1, "version": previous["version"] + 1}
        return {"json": {"message": "Datasource updated", "id": previous["id"], "name": body["name"],
                         "datasource": datasource_dto(g, stored[new_uid])}}
    return None


#: The first Grafana whose dashboard titles need not be unique per folder: grafana/grafana PR 90687 (in 11.3) removed
#: ``getExistingDashboardByTitleAndFolder`` from ``pkg/services/dashboards/database/database.go``.
TITLES_FREE = (11, 3, 0)


def slug(title: str) -> str:
    """The stand-in's slug of a dashboard title (Grafana's ``slugify.Slugify`` lower-cases and joins words with dashes;
    enough for the titles the tests use)."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def same_title_in_folder(g: dict, dashboard: dict, folder: Optional[str]) -> Optional[dict]:
    """Before 11.3, the stored dashboard another save with ``dashboard``'s title into ``folder`` (None: General)
    collides with: same org, same slug, same folder, another dashboard (grafana/grafana
    ``pkg/services/dashboards/database/database.go`` ``getExistingDashboardByTitleAndFolder``, before PR 90687,
    read through the code index, its commit not recorded: ``slug=? AND folder_id=?`` and ``dash.ID != existing.ID``)."""
    if release(g["version"]) >= TITLES_FREE:
        return None
    return next((found for key, found in g["dashboards"].items()
                 if key != dashboard.get("uid") and found.get("folderUid") == folder
                 and slug(found.get("title") or "") == slug(dashboard.get("title") or "")), None)


#: The dashboard schema Grafana's dashboard editor saves in with dynamic dashboards on (``dashboardNewLayouts``), per
#: release line: v2alpha1 on 12.0 and 12.1 (esnet/gdg#467: 12.1.0's 406 names ``v2alpha1``), v2beta1 from 12.2
#: (the stand-in's boundary: when v2beta1 first shipped was not established), v2 from 13.0 (grafana/grafana PR
#: 120748, "Dashboards: Graduate to V1", and the v2 resource's ``>=13.0.0`` in grafana/terraform-provider-grafana PR
#: 2633). Before 12.0 the editor saves the classic JSON only.
V2_SCHEMA = ((13, 0, 0), "v2"), ((12, 2, 0), "v2beta1"), ((12, 0, 0), "v2alpha1")
#: The first release whose legacy GET of a v2 dashboard answers it converted to v1 (``meta.apiVersion`` the stored
#: version) instead of 406 (grafana/grafana PR 120842, "?apiVersion=" on GET /api/dashboards/uid, March 2026, and the
#: commit "Remove 406 response since now it is converted"; in the 13.0.0 API description).
V2_CONVERTED_ON_READ = (13, 0, 0)
APIS = "/apis/dashboard.grafana.app/"


def edit_in_dynamic_dashboards(world: dict, host: str, uid: str) -> str:
    """Someone saves dashboard ``uid`` from Grafana's editor with dynamic dashboards on: Grafana stores it in its v2
    schema (:data:`V2_SCHEMA`): ``elements`` and ``layout`` instead of ``panels``, ``variables`` instead of
    ``templating``, no ``uid`` or unknown top-level keys in the spec (the v2 ``DashboardSpec``). Returns the schema
    version; ValueError before 12.0, where the editor saves no v2."""
    g = grafana(world, host)
    schema = next((name for first, name in V2_SCHEMA if release(g["version"]) >= first), None)
    if schema is None:
        raise ValueError(f"Grafana {g['version']} saves no v2 dashboards")
    old = g["dashboards"][uid]
    elements = {f"panel-{panel.get('id', i)}": {"kind": "Panel", "spec": {"title": panel.get("title", "")}}
                for i, panel in enumerate(old.get("panels") or [])}
    g["dashboards"][uid] = {
        "apiVersion": schema, "id": old["id"], "version": old["version"] + 1, "uid": uid, "title": old.get("title"),
        "spec": {"title": old.get("title"), "elements": elements, "layout": {"kind": "AutoGridLayout", "spec": {}},
                 "variables": [], "timeSettings": {}, "annotations": [], "links": [], "tags": old.get("tags") or []},
        **({"folderUid": old["folderUid"]} if old.get("folderUid") else {})}
    return schema


def _as_object(found: dict, version: str) -> dict:
    """A stored dashboard as ``GET /apis/dashboard.grafana.app/<version>/namespaces/default/dashboards/<uid>``
    answers it: ``metadata.name`` the uid, ``generation`` the version, the folder in ``grafana.app/folder``, ``spec``
    the dashboard (a v1 one without ``id`` and ``version``), and, read at another version than it is stored in,
    ``status.conversion.storedVersion``."""
    stored_version = found.get("apiVersion") or "v1beta1"
    spec = found["spec"] if "spec" in found else {k: v for k, v in found.items() if k not in ("id", "version",
                                                                                               "folderUid")}
    metadata = {"name": found["uid"], "namespace": "default", "generation": found["version"],
                "resourceVersion": str(1000 + found["version"]),
                **({"annotations": {"grafana.app/folder": found["folderUid"]}} if found.get("folderUid") else {})}
    status = {"conversion": {"storedVersion": stored_version, "failed": False}} if stored_version != version else {}
    return {"apiVersion": f"dashboard.grafana.app/{version}", "kind": "Dashboard", "metadata": metadata,
            "spec": spec if stored_version == version else {"title": spec.get("title")}, "status": status}


def _k8s_not_found(uid: str) -> dict:
    """The apiserver's 404 ``Status`` for a dashboard it does not hold, as ``az rest`` prints it."""
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "NotFound",
              "code": 404,
              "message": f'dashboards.dashboard.grafana.app "{uid}" not found',
              "details": {"name": uid, "group": "dashboard.grafana.app", "kind": "dashboards"}}
    return {"exit": 1, "stderr": f"ERROR: Not Found({json.dumps(status)})"}


def _dashboard_objects(method: str, path: str, g: dict) -> Optional[dict]:
    """``GET``/``DELETE /apis/dashboard.grafana.app/<version>/namespaces/default/dashboards/<uid>`` (org 1's
    namespace is ``default``: grafana/authlib ``types/namespace.go`` ``OrgNamespaceFormatter``), from 12.0 on."""
    found = re.fullmatch(r"/apis/dashboard\.grafana\.app/(v[0-9a-z]+)/namespaces/default/dashboards/([^/]+)", path)
    if not found or release(g["version"]) < (12, 0, 0):
        return None
    version, uid = found.group(1), unquote(found.group(2))
    stored = g["dashboards"]
    if uid not in stored:
        return _k8s_not_found(uid)
    if method == "get":
        return {"json": _as_object(stored[uid], version)}
    if method == "delete":
        del stored[uid]
        return {"json": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": {
            "name": uid, "group": "dashboard.grafana.app", "kind": "dashboards"}}}
    return None


def _v2_on_legacy_read(found: dict, g: dict) -> dict:
    """The legacy ``GET /api/dashboards/uid/<uid>`` of a dashboard stored as v2: before
    :data:`V2_CONVERTED_ON_READ`, 406 naming where it is served (grafana/grafana ``pkg/api/dashboard.go``
    ``GetDashboard``: ``if strings.HasPrefix(dash.APIVersion, "v2")``, tested in ``pkg/api/dashboard_test.go``;
    the text as esnet/gdg#467 quotes 12.1.0's); from it, 200 with a lossy v1 conversion and ``meta.apiVersion``."""
    version = found["apiVersion"]
    if release(g["version"]) >= V2_CONVERTED_ON_READ:
        converted = {"uid": found["uid"], "title": found["spec"].get("title"), "id": found["id"],
                     "version": found["version"], "panels": [], "schemaVersion": 41}
        return {"json": {"dashboard": converted, "meta": {"version": found["version"], "apiVersion": version}}}
    where = f"{APIS}{version}/namespaces/default/dashboards/{found['uid']}"
    return _error("Not Acceptable", f"dashboard api version not supported, use {where} instead")


def _dashboards(method: str, path: str, body: Any, g: dict) -> Optional[dict]:
    stored = g["dashboards"]
    if path == "/api/dashboards/db" and method == "post":
        dashboard = body["dashboard"]
        uid = dashboard["uid"]
        if str((stored.get(uid) or {}).get("apiVersion", "")).startswith("v2") and release(g["version"]) >= (13, 0, 0):
            # 13.x's legacy save over a v2 dashboard (kept in v2, or stored as v1?) was not established.
            return {"exit": 2, "stderr": f"fake world: a legacy save over v2 dashboard {uid} is not modelled"}
        folder = body.get("folderUid") or None
        if uid in stored and not body.get("overwrite") and (dashboard.get("version") or 0) != stored[uid]["version"]:
            # getExistingDashboardByIDOrUIDForUpdate (pkg/services/dashboards/database/database.go): only when
            # `dash.Version != existing.Version` (a body without a version is version 0), ErrDashboardVersionMismatch
            # (pkg/services/dashboards/errors.go: 412 "The dashboard has been changed by someone else")
            return _error("Precondition Failed", "The dashboard has been changed by someone else")
        taken = same_title_in_folder(g, dashboard, folder)
        if taken is not None:
            # getExistingDashboardByTitleAndFolder: with overwrite the save takes the other dashboard's id, uid and
            # version (it is updated in place); without it ErrDashboardWithSameNameInFolderExists (pkg/services/
            # dashboards/errors.go: StatusCode 412, Reason "A dashboard with the same name in the folder already
            # exists").
            if not body.get("overwrite"):
                return _error("Precondition Failed", "A dashboard with the same name in the folder already exists")
            uid = taken["uid"]
            dashboard = {**dashboard, "uid": uid}
        version = stored[uid]["version"] + 1 if uid in stored else 1
        g["next_id"] += 1
        stored[uid] = {**dashboard, "id": stored[uid]["id"] if uid in stored else g["next_id"], "version": version,
                       **({"folderUid": folder} if folder else {})}
        return {"json": {"status": "success", "uid": uid, "version": version}}
    one = re.fullmatch(r"/api/dashboards/uid/([^/]+)", path)
    if not one:
        return _dashboard_objects(method, path, g)
    uid = unquote(one.group(1))
    if method == "get" and str((stored.get(uid) or {}).get("apiVersion", "")).startswith("v2"):
        return _v2_on_legacy_read(stored[uid], g)
    return _read_or_delete(stored, uid, method, "Dashboard",
                           lambda found: {"dashboard": found, "meta": {"version": found["version"]}})


def _search(query: str, g: dict) -> dict:
    """``GET /api/search?query=<text>&type=dash-db``: a list of hits (grafana/grafana ``pkg/api/search.go`` ``Search``,
    ``pkg/services/search/model`` ``Hit``: ``id``, ``uid``, ``title``, ``uri``, ``url``, ``slug``, ``type``, ``tags``,
    ``isStarred``, and ``folderId``/``folderUid``/``folderTitle``/``folderUrl`` only for a dashboard in a folder); the
    query matches titles case-insensitively as a substring; sorted by title."""
    args = parse_qs(query)
    text = args.get("query", [""])[0].lower()
    wanted = args.get("type", [""])[0]
    hits = []
    for uid, found in g["dashboards"].items():
        title = found.get("title") or ""
        if text in title.lower() and wanted in ("", "dash-db"):
            hit = {"id": found["id"], "uid": uid, "title": title, "uri": f"db/{slug(title)}",
                   "url": f"/d/{uid}/{slug(title)}",
                   "slug": slug(title), "type": "dash-db", "tags": found.get("tags") or [], "isStarred": False}
            if found.get("folderUid"):
                hit.update(folderUid=found["folderUid"], folderTitle=found["folderUid"],
                           folderUrl=f"/dashboards/f/{found['folderUid']}/")
            hits.append(hit)
    return {"json": sorted(hits, key=lambda hit: hit["title"].lower())}


def _read_or_delete(stored: dict, uid: str, method: str, kind: str, shown) -> Optional[dict]:
    """``GET``/``DELETE`` of ``stored[uid]`` as Grafana answers them (404 ``<kind> not found``; ``shown(object)``
    is the GET body); None for another method on an existing object."""
    if uid not in stored:
        return _error("Not Found", f"{kind} not found")
    if method == "get":
        return {"json": shown(stored[uid])}
    if method == "delete":
        del stored[uid]
        return {"json": {"message": f"{kind} deleted"}}
    return None


# --- Pyroscope behind its datasource -------------------------------------------------------------------------------


def grafana_time(text: str, now_ms: int) -> int:
    """Grafana's ``from``/``to`` of a query: ``now``, ``now-<n><unit>`` or epoch milliseconds."""
    found = re.fullmatch(r"now(?:-(\d+)([smhdwy]))?", text)
    if not found:
        return int(text)
    count, unit = found.groups()
    return now_ms - (pyroscope_server.parse_duration(f"{count}{unit}") if count else 0)


def _pyroscope_reads(method: str, path: str, query: str, body: Any, world: dict) -> Optional[dict]:
    """``world["pyroscope"]`` (``flags``: its extra args; ``profile_types``; ``query_response``) answering the reads
    of the Pyroscope datasource through Grafana: ``POST /api/ds/query`` with a Pyroscope query, and the datasource's
    ``resources/profileTypes``. Each range goes through the query frontend's checks
    (tests/support/pyroscope_server.py); a refused query is Grafana's 400 with the error under the query's refId
    (grafana/grafana ``pkg/api/ds_query.go`` ``toJsonStreamingResponse``), a refused resource call its 500."""
    import time

    server = world.get("pyroscope")
    if server is None:
        return None
    now = int(time.time() * 1000)
    if method == "post" and path == "/api/ds/query":
        queries = (body or {}).get("queries") or []
        if not queries or (queries[0].get("datasource") or {}).get("type") != "grafana-pyroscope-datasource":
            return None
        ref = queries[0].get("refId", "A")
        start, end = grafana_time(body["from"], now), grafana_time(body["to"], now)
        answer = server["query_response"]
    elif method == "get" and path.endswith("/resources/profileTypes"):
        args = parse_qs(query)
        ref, start, end = None, int(args["start"][0]), int(args["end"][0])
        answer = server["profile_types"]
    else:
        return None
    try:
        pyroscope_server.validate_range(server.get("flags") or {}, start, end, now)
    except ValueError as error:
        # The datasource passes Pyroscope's connect error on as "<code>: <message>": a query's error is Grafana's 400
        # with the query's own status 500 (the plugin SDK's status for an error it cannot classify); a resource call's
        # is 500 "Failed to call resource" (pkg/api/plugin_resource.go).
        message = f"invalid_argument: {error}"
        if ref:
            return {"exit": 1, "stderr": "ERROR: Bad Request("
                    + json.dumps({"results": {ref: {"error": message, "status": 500}}}) + ")"}
        return {"exit": 1, "stderr": "ERROR: Internal Server Error("
                + json.dumps({"message": "Failed to call resource", "traceID": ""}) + ")"}
    return {"json": answer}


# --- dispatch ------------------------------------------------------------------------------------------------------


def _frontend_show(argv: list[str], world: dict) -> dict:
    """``az network lb frontend-ip show --subscription S -g G --lb-name LB -n NAME``: a frontend of the cluster's
    internal load balancer, in the node subnet ``snet-aks`` (the cloud config's subnet, where
    :func:`reconcile_ip_configurations` puts the NAT IPs without an ``azure-pls-ip-configuration-subnet``)."""
    frontend = (f"/subscriptions/{_option(argv, '--subscription')}/resourceGroups/{_option(argv, '-g')}/providers/"
                f"Microsoft.Network/loadBalancers/{_option(argv, '--lb-name')}/"
                f"frontendIPConfigurations/{_option(argv, '-n')}")
    if not any(p["frontend"].lower() == frontend.lower() for p in world["pls"].values()):
        return _arm_not_found("Microsoft.Network/loadBalancers/frontendIPConfigurations/" + frontend.rsplit("/", 1)[-1])
    return {"json": {"id": frontend, "name": frontend.rsplit("/", 1)[-1], "privateIPAllocationMethod": "Dynamic",
                     "subnet": {"id": frontend.split("/resourceGroups/")[0]
                                + "/resourceGroups/rg-aks-gpu-dev/providers/"
                                      "Microsoft.Network/virtualNetworks/vnet-aks/subnets/snet-aks"}}}


def _access_token(argv: list[str], world: dict) -> dict:
    """``az account get-access-token -o json --resource R`` (what azidentity's AzureCLICredential runs for kubelogin's
    ``--login azurecli``): ``world["tokens"][R]``, an hour from now, in az's shape (``accessToken``, ``expiresOn`` as
    local time, ``expires_on`` as epoch seconds, ``subscription``, ``tenant``, ``tokenType``)."""
    import time

    from offline import canned

    resource = _option(argv, "--resource") or "https://management.core.windows.net/"
    expires = int(time.time()) + 3600
    return {"json": {"accessToken": world.get("tokens", {}).get(resource, "simulated-access-token"),
                     "expiresOn": time.strftime("%Y-%m-%d %H:%M:%S.000000", time.localtime(expires)),
                     "expires_on": expires, "subscription": canned.SUBSCRIPTION_ID, "tenant": canned.TENANT_ID,
                     "tokenType": "Bearer"}}


def answer(argv: list[str], world: dict) -> dict:
    """The response to one az command line (same shape as a rule response of tests/support/fake_az.py); mutates
    ``world``. A command line this world does not know exits 2, so an unexpected call fails the test."""
    if argv[:2] == ["account", "get-access-token"]:
        return _access_token(argv, world)
    if argv[:2] == ["account", "show"]:
        from offline import canned
        return {"json": {"id": canned.SUBSCRIPTION_ID, "tenantId": canned.TENANT_ID, "isDefault": True,
                         "state": "Enabled"}}
    if argv[:3] == ["network", "private-link-service", "show"]:
        return _pls_show(argv, world)
    if argv[:4] == ["network", "lb", "frontend-ip", "show"]:
        return _frontend_show(argv, world)
    if argv[:4] == ["network", "private-link-service", "connection", "update"]:
        return _connection_update(argv, world)
    if argv[:3] == ["role", "assignment", "create"]:
        return _role_assignment_create(argv, world)
    if argv[:3] == ["role", "assignment", "list"]:
        return _role_assignment_list(argv, world)
    if argv[:2] == ["resource", "show"]:
        return _resource_show(argv, world)
    if argv[:1] == ["rest"]:
        method, url = _option(argv, "--method"), _option(argv, "--url") or ""
        if "--skip-authorization-header" in argv:
            source = world["downloads"].get(url)
            return {"stdout": "", "output_file": source} if source else _error("Not Found", f"404 for {url}")
        body = _option(argv, "--body")
        if body and body.startswith("@"):
            with open(body[1:], encoding="utf-8") as fh:
                body = json.load(fh)
        parts = urlsplit(url)
        if parts.scheme == "https" and parts.netloc in _gone(world)["hosts"]:
            return unresolvable(parts.netloc, parts.path)
        if parts.scheme == "https" and parts.path.startswith(("/api/", "/apis/")):
            g = grafana(world, parts.netloc)
            if method == "get" and parts.path == "/api/health":
                return _health(g)
            if method == "get" and parts.path == "/api/plugins":
                return _plugins(parts.query, g)
            settings = re.fullmatch(r"/api/plugins/([^/]+)/settings", parts.path)
            if method == "get" and settings:
                return _plugin_settings(settings.group(1), g)
            if method == "get" and parts.path == "/api/search":
                return _search(parts.query, g)
            found = (_pyroscope_reads(method, parts.path, parts.query, body, world) or
                     _datasources(method, parts.path, body, g) or _dashboards(method, parts.path, body, g))
            if found is not None:
                return found
        elif not parts.scheme:
            found = _arm_rest(method, parts.path, world)
            if found is not None:
                return found
    return {"exit": 2, "stderr": f"fake world: no answer for az {' '.join(argv)}"}
