"""Inputs from other stacks (``clusterStack``, ``grafanaStack``) and the names derived once the cluster is known.

Owns: :func:`resolve` (the keys completed from the referenced stacks' outputs, then the required-key check),
:func:`for_cluster` (empty names in Grafana and the PLS name derived), :func:`refuse_secret_names_in_grafana`.
Inputs: a StackConfig; the outputs (strings) ``clusterStack``: ``clusterName``, ``clusterResourceGroup``;
``grafanaStack``: ``grafanaName``, ``grafanaResourceGroup``, ``monitorWorkspaceName``,
``monitorWorkspaceResourceGroup``. Keys set in this stack win; a secret output stays secret (``secret_keys``).
Errors: ConfigError naming the key. Upstream: pulumi/pulumi v3.230.0 ``sdk/python/lib/pulumi/stack_reference.py``;
the research: docs/decisions/stack-references.md.
"""

from __future__ import annotations

import pulumi
from pulumi.runtime.sync_await import _sync_await

from stack_config import masking, names
from stack_config.load import with_values
from stack_config.rules import check_required
from stack_config.schema import ConfigError, StackConfig, snake

CLUSTER_OUTPUTS = ("clusterName", "clusterResourceGroup")
GRAFANA_OUTPUTS = ("grafanaName", "grafanaResourceGroup", "monitorWorkspaceName", "monitorWorkspaceResourceGroup")


def read_outputs(key: str, reference: pulumi.StackReference, stack: str,
                 names: tuple[str, ...]) -> tuple[dict[str, str], set[str]]:
    """The outputs ``names`` of stack ``stack`` (named by config key ``key``, read by ``reference``), as strings, and
    the names of those that are secret there.

    Raises ConfigError (key ``key``) naming the first missing or non-string output.
    """
    values, secret = {}, set()
    for name in names:
        # StackReference has no synchronous getter; the names decide what is looked up next, before any
        # resource is registered, so wait for this one as the SDK's own synchronous invokes do.
        details = _sync_await(reference.get_output_details(name))
        value = details.value if details.value is not None else details.secret_value
        if details.value is None:  # a secret there: [secret] in every line the stack prints from now on
            masking.know([value])
        if not isinstance(value, str) or not value:
            problem = "has no output" if value is None else "has a non-string or empty output"
            raise ConfigError(key, f"stack '{stack}' {problem} '{name}'; it must export {', '.join(names)} (strings)")
        values[name] = value
        if details.value is None:
            secret.add(name)
    return values, secret


def resolve(cfg: StackConfig) -> StackConfig:
    """``cfg`` completed from the referenced stacks and checked for required keys.

    One StackReference per distinct stack name: ``clusterStack`` and ``grafanaStack`` may name the same stack, and a
    StackReference's name is its URN's name, so a second one would take the first one's URN, which the engine refuses
    ("Duplicate resource URN", pulumi/pulumi v3.230.0 ``pkg/resource/deploy/step_generator.go`` ``generateURN``)."""
    references: dict[str, pulumi.StackReference] = {}

    def reference(stack: str) -> pulumi.StackReference:
        if stack not in references:
            references[stack] = pulumi.StackReference(stack)
        return references[stack]

    if cfg.cluster_stack:
        stack = cfg.cluster_stack
        outputs, secret = read_outputs("clusterStack", reference(stack), stack, CLUSTER_OUTPUTS)
        cfg = with_values(cfg, outputs, f"stack {stack}", secret)
    if cfg.grafana_stack:
        stack = cfg.grafana_stack
        outputs, secret = read_outputs("grafanaStack", reference(stack), stack, GRAFANA_OUTPUTS)
        cfg = with_values(cfg, outputs, f"stack {stack}", secret)
    return check_required(cfg)


def for_cluster(cfg: StackConfig, cluster_id: str) -> StackConfig:
    """``cfg`` with the names in Grafana that are left empty derived (``names.derived_names``): the published
    procedure's names for a single-cluster stack, per-cluster names from the cluster's ARM id with
    ``multiCluster`` (``names.cluster_names``); and the PLS name, per cluster wherever two clusters' PLS can meet
    (``names.derived_private_link_service_name``). A name the stack sets wins. Empty is the keys' default, so a
    stack behaves the same whether or not the CLI wrote the defaults out (it always does)."""
    source = "the multi-cluster naming" if cfg.multi_cluster else "the single-cluster naming"
    derived = names.derived_names(cfg, cluster_id)
    refuse_secret_names_in_grafana(cfg, derived)
    cfg = with_values(cfg, derived, source)
    return with_values(
        cfg, {"privateLinkServiceName": names.derived_private_link_service_name(cfg, cluster_id)},
        "the private link service naming")


def refuse_secret_names_in_grafana(cfg: StackConfig, derived: dict[str, str]) -> None:
    """Raise ConfigError (the secret key) when a name in Grafana left empty would be derived from a secret value:
    with ``multiCluster`` every such name comes from the cluster name (a slug of it, or the name itself), and a
    single-cluster stack names the Prometheus datasource after the workspace. Grafana shows datasource names and
    uids to every viewer in plain text, so a secret cannot stay secret there; the message names the keys to set."""
    empty = [key for key in derived if not getattr(cfg, snake(key))]
    for key in sorted(cfg.secret_keys):
        value = str(getattr(cfg, snake(key)))
        from_it = [name for name in empty
                   if (key == "clusterName" and cfg.multi_cluster)
                   or (value and value.lower() in derived[name].lower())]
        if from_it:
            from_cluster_name = key == "clusterName" and cfg.multi_cluster
            naming = "multiCluster would derive names in Grafana from it" if from_cluster_name \
                else f"{', '.join(from_it)} would be derived from it"
            raise ConfigError(key, f"the value is secret, but {naming}, and Grafana shows datasource names and uids to "
                                   f"every viewer in plain text; set {', '.join(from_it)} yourself, or make {key} "
                                   f"plain")
