"""What several components share that is not a component: names, ports, a Kubernetes spec, Azure role ids.

Owns: :data:`NAMESPACE` (``gadget``) and its owner mark (:data:`STACK_ANNOTATION`), Pyroscope's release name, port,
selector labels and majors, the private-link NetworkPolicy (:data:`PRIVATE_LINK_POLICY`,
:func:`private_link_policy_spec`), the built-in role ids the stack assigns (:data:`MONITORING_DATA_READER`,
:data:`GRAFANA_ADMIN`, :data:`GRAFANA_VIEWER`, :data:`STORAGE_BLOB_DATA_CONTRIBUTOR`) and the role-assignment naming
(:func:`role_definition_id`, :func:`role_assignment_name`), an ARM id's type (:func:`arm_type`). Pure values and
functions, no resources; components import them so that no component imports another. Errors: ValueError from
:func:`private_link_policy_spec` for an address that is not one. Upstream: Azure built-in roles reference
(learn.microsoft.com/azure/role-based-access-control/built-in-roles); why the namespace is fixed:
docs/decisions/gadget-namespace.md.
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from typing import Optional, Sequence

#: The extension's release namespace and Pyroscope's: the extension's profile exporter expects Service
#: ``pyroscope`` in ``gadget`` (docs/decisions/gadget-namespace.md), so it is not configurable.
NAMESPACE = "gadget"

#: The annotation on namespace ``gadget`` that says which stack owns the cluster side (``<project>/<stack>``): the
#: stack applies it before the extension, the release and the endpoint, so existing/handmade.py reads it as the
#: stack's ledger of what it made on the cluster.
STACK_ANNOTATION = "aks-gpu-observability/stack"


#: On the Kubernetes objects the stack owns outright (namespace gadget, its Services, its NetworkPolicies; not Helm's):
#: a server-side apply that changes a field someone else took over (``kubectl edit``, ``annotate``, another apply)
#: takes it back instead of failing on a field-manager conflict (pulumi-kubernetes ``await.go`` ``patchForce``;
#: docs/decisions/field-ownership.md).
PATCH_FORCE = {"pulumi.com/patchForce": "true"}


def stack_mark(project: str, stack: str) -> str:
    """The value of :data:`STACK_ANNOTATION` for stack ``stack`` of project ``project``."""
    return f"{project}/{stack}"


#: Pyroscope's Helm release, its Service port, and chart 1.15.0's selector labels of its pods
#: (``templates/_helpers.tpl`` ``pyroscope.selectorLabels``).
PYROSCOPE_RELEASE = "pyroscope"
PYROSCOPE_PORT = 4040
PYROSCOPE_SELECTOR_LABELS = {"app.kubernetes.io/instance": PYROSCOPE_RELEASE, "app.kubernetes.io/name": "pyroscope"}
#: The Pyroscope majors (chart and image) the stack's values are written for (docs/decisions/pyroscope-major.md).
PYROSCOPE_MAJORS = (1, 2)


def pyroscope_major(version: str) -> Optional[int]:
    """The major of a chart version or an image tag (``2.0.1``, ``v2.0.1``, ``2.0.1@sha256:...``), or None."""
    found = re.match(r"v?(0|[1-9]\d*)\.", version)
    return int(found.group(1)) if found else None

#: The NetworkPolicy that admits Grafana's connections through the private link service
#: (docs/decisions/private-link.md).
PRIVATE_LINK_POLICY = f"{PYROSCOPE_RELEASE}-private-link"
#: The stack's own LoadBalancer Service that AKS makes the private link service for, apart from the chart's
#: Services so that no change of the release touches it (docs/decisions/pyroscope-chart.md, "The stack's Service, the
#: PLS and day two").
PRIVATE_LINK_SERVICE = f"{PYROSCOPE_RELEASE}-private-link"


def private_link_policy_spec(nat_addresses: Sequence[str]) -> dict:
    """The spec of :data:`PRIVATE_LINK_POLICY` (engine names): ingress to Pyroscope's pods on 4040 from each of the
    private link service's NAT addresses (``10.224.0.5`` -> ``10.224.0.5/32``; IPv6 -> ``/128``), nothing else.
    ValueError for an address that is not one (an ARM answer out of shape)."""
    blocks = [{"ipBlock": {"cidr": str(ipaddress.ip_network(address))}} for address in nat_addresses]
    return {
        "podSelector": {"matchLabels": dict(PYROSCOPE_SELECTOR_LABELS)},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": blocks, "ports": [{"port": PYROSCOPE_PORT, "protocol": "TCP"}]}],
    }


#: Monitoring Data Reader: Grafana's identity on the Azure Monitor workspace (components/grafana_datasources.py).
MONITORING_DATA_READER = "b0d8363b-8ddd-447d-831f-62ca05bff136"
#: Grafana Admin: the deployer on a Grafana the stack creates (components/managed_grafana.py).
GRAFANA_ADMIN = "22926164-76b3-42b3-bc55-97df8dab3e41"
#: Grafana Viewer: the people the stack is for (``grafanaViewers``), read-only on the Grafana workspace
#: (components/grafana_viewers.py; MicrosoftDocs/azure-docs articles/managed-grafana/how-to-share-grafana-workspace.md).
GRAFANA_VIEWER = "60921a7e-fef1-4a43-9b16-a26c52ad4769"
#: Storage Blob Data Contributor (Azure built-in roles reference, "Storage Blob Data Contributor", Id): Pyroscope's
#: identity on its blob container (components/pyroscope_storage.py).
STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"


def pyroscope_identity_name(cluster_name: str) -> str:
    """Pyroscope's user-assigned identity (microservices mode), in Pyroscope's storage resource group."""
    return f"id-pyroscope-{cluster_name}"


def role_definition_id(subscription_id: str, role: str) -> str:
    """ARM id of a built-in role definition in a subscription."""
    return f"/subscriptions/{subscription_id}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def role_assignment_name(scope: str, role: str, principal_id: str) -> str:
    """A deterministic role assignment name (UUID v5 of scope, role and principal, lower-cased scope)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{scope.lower()}|{role}|{principal_id}"))


def arm_type(resource_id: str) -> str:
    """The resource type an ARM id names: the namespace after its last ``/providers/`` and each type segment
    (``.../Microsoft.Dashboard/grafana/g/managedPrivateEndpoints/m`` -> ``Microsoft.Dashboard/grafana/
    managedPrivateEndpoints``; an extension resource under a cluster -> ``Microsoft.KubernetesConfiguration/
    extensions``)."""
    namespace, *rest = resource_id.rsplit("/providers/", 1)[-1].split("/")
    return "/".join([namespace, *rest[0::2]])
