"""The policy pack's production rules for Pyroscope: persistent storage and a network policy that restricts it.

Owns: ``pyroscope-persistent-in-production`` (a production stack keeps profiles on a volume or object storage, as
chart 1.15.0 and grafana/pyroscope v1.15.0 read the values) and ``pyroscope-network-policy-in-production`` (a
NetworkPolicy selects the Pyroscope pods and admits not everyone). Input: the Helm release's values, the stack's
NetworkPolicies, ``aks-gpu-observability:production``. Output: violations. Errors: none raised. Upstream:
https://github.com/grafana/pyroscope/blob/v1.15.0/pkg/objstore/client/config.go
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

# The pack runs rules.py as a top-level module (policy/__main__.py, started by pulumi in policy/); the tests and
# `python -m offline.plan --policy` import the package policy.
try:
    from policy.values import (
        NETWORK_POLICY,
        NOT_KNOWN,
        RELEASE,
        is_list,
        is_pyroscope_chart,
        known,
        production_schema,
        stack_is_production,
    )
except ModuleNotFoundError:
    from values import (
        NETWORK_POLICY,
        NOT_KNOWN,
        RELEASE,
        is_list,
        is_pyroscope_chart,
        known,
        production_schema,
        stack_is_production,
    )


#: Pyroscope's object storage backends (grafana/pyroscope v1.15.0 ``pkg/objstore/client/config.go``);
#: ``filesystem`` is a pod's own disk.
OBJECT_BACKENDS = ("azure", "s3", "gcs", "swift", "cos")


def _merged(base: Any, over: Any) -> Any:
    """``over`` deep-merged over ``base``, as sprig's ``mustMergeOverwrite`` merges a component's values over
    ``pyroscope``'s in chart 1.15.0 (``templates/deployments-statefulsets.yaml``)."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        return {**base, **{k: _merged(base.get(k), v) for k, v in over.items()}}
    return over if over is not None else base


def _storage_backend(single: Mapping, component: Optional[Mapping] = None) -> str:
    """The storage backend a pod runs with: ``-storage.backend`` from its ``extraArgs`` (the component's merged over the
    global ones, chart 1.15.0 ``deployments-statefulsets.yaml``) beats the config file's ``storage.backend``
    (grafana/pyroscope v1.15.0 ``pkg/cfg/dynamic.go`` ``DynamicUnmarshal`` loads the flags last, "this will supersede
    anything set from config file"; ``pkg/cfg/cfg_test.go`` ``TestParse``); the config file is the global
    ``structuredConfig`` only (``templates/configmap.yaml``); the default is ``filesystem``
    (``pkg/objstore/client/config.go``)."""
    flags = _merged(single.get("extraArgs"), (component or {}).get("extraArgs"))
    flags = flags if isinstance(flags, Mapping) else {}
    structured = single.get("structuredConfig")
    config = (structured or {}).get("storage") if isinstance(structured, Mapping) else None
    from_config = config.get("backend") if isinstance(config, Mapping) else None
    return str(flags.get("storage.backend") or from_config or "filesystem")


def _volume_enabled(persistence: Any) -> bool:
    """Chart 1.15.0 mounts ``data`` as an emptyDir whenever ``persistence.enabled`` is not true, whatever
    ``existingClaim`` says (``deployments-statefulsets.yaml`` tests ``not $persistence.enabled`` first)."""
    return isinstance(persistence, Mapping) and persistence.get("enabled") is True


def _pyroscope_not_persistent(args: ResourceValidationArgs) -> Optional[str]:
    """Why the Pyroscope release loses profiles when a pod restarts (None when it does not). Chart 1.15.0 mounts volume
    ``data`` at /data as an emptyDir unless ``persistence.enabled`` (or an ``existingClaim``) is set, each component's
    values merged over ``pyroscope``'s (``templates/deployments-statefulsets.yaml``, ``mustMergeOverwrite``). Single
    binary: the volume holds everything. Microservices (non-empty ``pyroscope.components``): blocks go to the bucket, so
    the backend must be object storage, and the ingesters keep their head in /data until a block is cut
    (``-pyroscopedb.max-block-duration``, 1h: grafana/pyroscope v1.15.0 ``pkg/phlaredb/phlaredb.go``), so they need the
    volume too. Only a Release of chart ``pyroscope``."""
    if args.resource_type != RELEASE:
        return None
    if not is_pyroscope_chart(args.props):
        return None
    single = (args.props.get("values") or {}).get("pyroscope") or {}
    if not isinstance(single, Mapping):
        single = {}
    components = single.get("components") if isinstance(single.get("components"), Mapping) else {}
    if not components:
        if _volume_enabled(single.get("persistence")):
            return None
        return ("keeps profiles in an emptyDir (pyroscope.persistence.enabled is not true), so every pod restart "
                "loses them")
    for name, component in sorted(components.items()):
        backend = _storage_backend(single, component if isinstance(component, Mapping) else None)
        if backend not in OBJECT_BACKENDS:
            return (f"runs the microservices' {name} with storage backend {backend!r}, its pod's own disk, so the "
                    "profiles are neither shared nor kept")
    ingester = components.get("ingester") if isinstance(components.get("ingester"), Mapping) else {}
    if not _volume_enabled(_merged(single.get("persistence"), ingester.get("persistence"))):
        return ("keeps the ingesters' head blocks (up to an hour of profiles before a block reaches the bucket) in an "
                "emptyDir (persistence.enabled is not true for the ingester), so an ingester restart loses them")
    return None


def _pyroscope_persistent_production(args: ResourceValidationArgs, report: ReportViolation) -> None:
    reason = _pyroscope_not_persistent(args)
    if reason and stack_is_production(args):
        report(f"production stack {pulumi.get_stack()!r}: Pyroscope release {reason}; set pyroscopePersistence "
               "to true.")


pyroscope_persistent_in_production = ResourceValidationPolicy(
    name="pyroscope-persistent-in-production",
    description="In a production stack (config production=true), the Pyroscope release keeps its "
                "profiles on a persistent volume.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_pyroscope_persistent_production,
    config_schema=production_schema(),
    remediation_steps="Set pyroscopePersistence to true (the default); docs/sizing.md says what the switch reinstalls.",
)


#: The Pyroscope pods' labels, chart 1.15.0 (``pyroscope.labels`` of ``templates/_helpers.tpl`` on the StatefulSet's pod
#: template, single binary: component ``all``); ``<release>`` is the release's name.
def pyroscope_pod_labels(release: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "pyroscope", "app.kubernetes.io/instance": release,
            "app.kubernetes.io/component": "all", "name": "pyroscope"}


def _restricts(policy: Any, namespace: str, labels: Mapping[str, str]) -> Any:
    """Whether a NetworkPolicy (its outputs) restricts ingress to pods with ``labels`` in ``namespace``: same namespace,
    a ``podSelector`` whose ``matchLabels`` the labels satisfy (no ``matchExpressions``, which this check does not
    evaluate), ``Ingress`` among its ``policyTypes`` (the API's default when absent) and no ingress rule without
    ``from`` (that one admits every source). :data:`NOT_KNOWN` while a value is not known (a preview)."""
    try:
        metadata = policy.props.get("metadata") or {}
        if str(metadata.get("namespace") or "default") != namespace:
            return False
        spec = policy.props.get("spec") or {}
        selector = spec.get("podSelector") or {}
        if selector.get("matchExpressions"):
            return False
        if any(labels.get(str(k)) != str(v) for k, v in (selector.get("matchLabels") or {}).items()):
            return False
        types = spec.get("policyTypes")
        if is_list(types) and types and "Ingress" not in [str(x) for x in types]:
            return False
        return all(rule.get("from") and not any(_admits_everyone(peer) for peer in rule["from"])
                   for rule in (spec.get("ingress") or []))
    except UnknownValueError:
        return NOT_KNOWN


def _admits_everyone(peer: Any) -> bool:
    """Whether one ``from`` peer admits every source, which a rule without ``from`` does too: an ``ipBlock`` of prefix
    length 0 (``0.0.0.0/0``, ``::/0``), or a ``namespaceSelector`` selecting every namespace (``{}``) with no
    ``podSelector`` or one selecting every pod (the NetworkPolicy API: an empty selector selects all;
    kubernetes.io/docs/concepts/services-networking/network-policies, "Behavior of to and from selectors")."""
    import ipaddress

    block = peer.get("ipBlock")
    if block:
        try:
            return ipaddress.ip_network(str(block.get("cidr")), strict=False).prefixlen == 0
        except ValueError:
            return False
    namespaces, pods = peer.get("namespaceSelector"), peer.get("podSelector")
    return namespaces is not None and not namespaces and not pods


def _network_policy_production(args: StackValidationArgs, report: ReportViolation) -> None:
    """A production stack whose Pyroscope release has no NetworkPolicy restricting ingress to its pods: Pyroscope's
    HTTP API (reads and writes, no authentication) is then open to everything that routes to its internal load balancer
    (docs/how-it-works.md, "Who can reach Pyroscope"). Checked on outputs; a value not known yet holds nothing against
    the stack."""
    if not stack_is_production(args):
        return
    policies = [r for r in args.resources if r.resource_type == NETWORK_POLICY]
    for release in args.resources:
        if release.resource_type != RELEASE or not known(lambda: is_pyroscope_chart(release.props)):
            continue
        name = known(lambda: str(release.props.get("name") or ""))
        namespace = known(lambda: str(release.props.get("namespace") or "default"))
        if name is NOT_KNOWN or namespace is NOT_KNOWN or not name:
            continue
        verdicts = [_restricts(policy, namespace, pyroscope_pod_labels(name)) for policy in policies]
        if not any(v is True or v is NOT_KNOWN for v in verdicts):
            report(f"production stack {pulumi.get_stack()!r}: no NetworkPolicy restricts ingress to Pyroscope's pods "
                   f"({namespace}/{name}), so its unauthenticated HTTP API is open to everything that routes to its "
                   "internal load balancer; set pyroscopeNetworkPolicy to true.", release.urn)


pyroscope_network_policy_in_production = StackValidationPolicy(
    name="pyroscope-network-policy-in-production",
    description="In a production stack (config production=true), a NetworkPolicy of the stack restricts ingress to the "
                "Pyroscope release's pods (checked on outputs).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_network_policy_production,
    config_schema=production_schema(),
    remediation_steps="Set pyroscopeNetworkPolicy to true (the default); the cluster needs a network policy engine "
                      "(docs/how-it-works.md, \"Who can reach Pyroscope\").",
)
