"""What every rule of the policy pack reads: resource type tokens, annotation names, and how values are walked.

Owns: the type tokens and annotations the rules match (:data:`RELEASE`, :data:`MPE`, ...), the stack's
``aks-gpu-observability:production`` or the pack config that holds every stack to the production rules
(:func:`stack_is_production`, :func:`production_schema`), walks over Helm values (:func:`leaves`,
:func:`mappings`, :func:`load_balancer_services`, :func:`annotations_in`), :func:`is_pyroscope_chart`, and
:func:`known` (a value not known yet in a preview becomes :data:`NOT_KNOWN`). Input: pulumi-policy's property proxies.
Output: plain values. Errors: none raised. Upstream:
https://github.com/pulumi/pulumi-policy/blob/v1.21.0/sdk/python/lib/pulumi_policy/proxy.py
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, Iterator

import pulumi
from pulumi_policy import PolicyConfigSchema
from pulumi_policy.proxy import UnknownValueError

PACK_NAME = "aks-gpu-observability"
PROJECT = "aks-gpu-observability"

RELEASE = "kubernetes:helm.sh/v3:Release"
SERVICE = "kubernetes:core/v1:Service"
EXTENSION = "azure-native:kubernetesconfiguration:Extension"
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
GRAFANA = "azure-native:dashboard:Grafana"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
COMMAND = "command:local:Command"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"

INTERNAL_LB = "service.beta.kubernetes.io/azure-load-balancer-internal"
PLS_VISIBILITY = "service.beta.kubernetes.io/azure-pls-visibility"


#: The pack config property, on every rule that tells production from a trial, that holds the stack to the production
#: rules whatever the stack's own file says: the deploy workflow passes policy/production.json with it set on each of
#: those rules (``--policy-pack-config``), so a stack it deploys cannot opt out by leaving ``production`` unset.
FORCED = "production"


def production_schema(**properties: Any) -> PolicyConfigSchema:
    """The config schema of a rule that reads :func:`stack_is_production`: :data:`FORCED` (boolean, default false)
    and the rule's own ``properties`` (JSON schemas by name)."""
    forced = {"type": "boolean", "default": False,
              "description": "Hold every stack to the production rules, whatever its production config says "
                             "(the deploy workflow's policy/production.json sets it)."}
    return PolicyConfigSchema(properties={FORCED: forced, **properties})


def stack_is_production(args: Any) -> bool:
    """Whether ``args``' rule holds the stack to the production rules: the stack's
    ``aks-gpu-observability:production`` config, or :data:`FORCED` true in the rule's pack config (false when both
    are unset). ``args``: the rule's ResourceValidationArgs or StackValidationArgs."""
    return bool(pulumi.Config(PROJECT).get_bool("production")) or args.get_config().get(FORCED) is True


def is_list(value: Any) -> bool:
    """Lists reach rules as pulumi-policy proxies (Sequence, not list)."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) for every leaf; a value not known yet (preview) is skipped, not the whole walk."""
    if isinstance(value, Mapping):
        for key in value:
            try:
                item = value[key]
            except UnknownValueError:
                continue
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif is_list(value):
        for index in range(len(value)):
            try:
                item = value[index]
            except UnknownValueError:
                continue
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def mappings(values: Any, path: str = "values") -> Iterator[tuple[str, Mapping]]:
    """(path, mapping) of every mapping nested in Helm values (lists included)."""
    if isinstance(values, Mapping):
        yield path, values
        for key in values:
            try:
                yield from mappings(values[key], f"{path}.{key}")
            except UnknownValueError:
                continue
    elif is_list(values):
        for index in range(len(values)):
            yield from mappings(values[index], f"{path}[{index}]")


def load_balancer_services(values: Any) -> Iterator[tuple[str, Mapping]]:
    """(path, mapping) of every mapping in Helm values that declares ``type: LoadBalancer``."""
    return ((p, m) for p, m in mappings(values) if m.get("type") == "LoadBalancer")


def annotations_in(values: Any) -> Iterator[Mapping]:
    """Every ``annotations`` mapping in Helm values."""
    return (m["annotations"] for _, m in mappings(values) if isinstance(m.get("annotations"), Mapping))


NOT_KNOWN = object()  # what :func:`known` returns for a value not known yet


def known(read: Callable[[], Any]) -> Any:
    """``read()``, or :data:`NOT_KNOWN` when it touches a value not known yet (preview): a stack policy
    that lets UnknownValueError escape is not run at all (the analyzer reports an advisory instead)."""
    try:
        return read()
    except UnknownValueError:
        return NOT_KNOWN


def is_pyroscope_chart(props: Any) -> bool:
    chart = str(props.get("chart") or "")
    return chart.split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1].split(":", 1)[0] == "pyroscope"
