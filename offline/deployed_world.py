"""What a deployed plan left in the offline plan's canned world (offline/canned.py), for the offline diff that
evaluates a head against it: the private link services a deployed base holds, so the program's read before anything
is registered (existing/taken.py) finds the stack's own PLS as a real ``pulumi preview`` of a deployed stack does.
SIMULATED: the canned world; nothing here reads Azure.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Mapping

from offline import canned


def deployed_private_link_services(plan: Mapping[str, Any]) -> dict[tuple[str, str], tuple[str, str]]:
    """The private link services a deployed ``plan`` (plan JSON) left in the canned world, as
    :data:`offline.canned.PRIVATE_LINK_SERVICES` holds them: each one its program read (getPrivateLinkService, after
    the wait that returns once the PLS is there), on a frontend of its cluster's internal load balancer (SIMULATED: the
    frontend's name is made up), owned by the Service that names it (:func:`offline.canned.service_annotations`). A
    read whose cluster or PLS name the plan masks (a secret) is left out: the plan does not tell where that PLS is."""
    invokes = plan.get("invokes") or []
    location = (plan.get("config") or {}).get("azure-native:location") or "eastus2"
    clusters = [i["args"] for i in invokes if i.get("token") == "azure-native:containerservice:getManagedCluster"]
    registered = [(r.get("type"), r.get("inputs") or {}) for r in plan.get("resources") or []]
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for invoke in invokes:
        args = invoke.get("args") or {}
        group, name = args.get("resourceGroupName"), args.get("serviceName")
        if invoke.get("token") != "azure-native:network:getPrivateLinkService" or len(clusters) != 1:
            continue
        cluster = clusters[0]
        if not all(isinstance(v, str) and v and "[secret]" not in v
                   for v in (group, name, cluster.get("resourceGroupName"), cluster.get("resourceName"))):
            continue
        answer = canned.managed_cluster(cluster, location)
        scope = (f"/subscriptions/{canned.SUBSCRIPTION_ID}/resourceGroups/{answer['nodeResourceGroup']}"
                 "/providers/Microsoft.Network/loadBalancers/")
        service = canned.service_annotations(registered, name)
        owner = service[0] if service else "gadget/pyroscope-private-link"
        suffix = canned.guid("frontend", owner).replace("-", "")
        frontend = f"{scope}kubernetes-internal/frontendIPConfigurations/a{suffix}"
        found[(group.lower(), name.lower())] = (frontend, owner)
    return found


@contextlib.contextmanager
def deployed(plan: Mapping[str, Any]) -> Iterator[None]:
    """While in the block, the canned world holds what the deployed ``plan`` left there
    (:func:`deployed_private_link_services`), beside what :data:`offline.canned.PRIVATE_LINK_SERVICES` already holds,
    which wins."""
    added = {key: value for key, value in deployed_private_link_services(plan).items()
             if key not in canned.PRIVATE_LINK_SERVICES}
    canned.PRIVATE_LINK_SERVICES.update(added)
    try:
        yield
    finally:
        for key in added:
            canned.PRIVATE_LINK_SERVICES.pop(key, None)
