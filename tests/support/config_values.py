"""Config values several test files share: a valid minimal config, parsing with overrides, the multi-cluster and
secret-output platforms, a project dashboard file, and component Args built from the Pulumi.yaml defaults."""

from __future__ import annotations

import json

from components.pyroscope import PyroscopeArgs
from stack_config import load

#: The six keys a stack must set (everything else has a Pulumi.yaml default).
VALID = {
    "clusterName": "aks-gpu-dev",
    "clusterResourceGroup": "rg-aks-gpu-dev",
    "grafanaName": "amg-gpu-dev",
    "grafanaResourceGroup": "rg-observability-dev",
    "monitorWorkspaceName": "amw-gpu-dev",
    "monitorWorkspaceResourceGroup": "rg-observability-dev",
}

#: A well-formed sha256 digest (64 lowercase hex digits); not the digest of anything published.
DIGEST = "0123456789abcdef" * 4

SUB_A = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"
SUB_B = "0b9d3c1e-2222-4a4a-8b8b-123456789abc"

#: A dashboard file in the project (tests/data), and its sha256.
LOCAL_DASHBOARD = "tests/data/local-dashboard.json"
LOCAL_SHA256 = "8b3f52176383b242a873e0ecdd6d0d68eb99a7ae44d3ae3d68b1d2f1c173a220"

MPE = "azure-native:dashboard:ManagedPrivateEndpoint"

#: Three cluster stacks sharing one Grafana; two have the same cluster name in other resource groups.
CLUSTERS = [("aks-gpu-eastus", "rg-gpu-eastus"), ("aks-gpu-westeu", "rg-gpu-westeu"),
            ("aks-gpu-eastus", "rg-gpu-eastus-2")]

PLATFORM = "acme/platform-aks/prod"
#: A platform stack whose cluster name is secret; the names are distinct so a leak cannot hide in another value.
SECRET_CLUSTER = {PLATFORM: {"clusterName": "gpu-secret-7", "clusterResourceGroup": "rg-platform"}}


def parse(**overrides):
    """:func:`stack_config.load.parse` of :data:`VALID` with ``overrides`` (key -> the string the CLI passes)."""
    return load.parse({**VALID, **overrides})


def named(plan, name):
    """The resource of ``plan`` named ``name``."""
    return next(r for r in plan.resources if r.name == name)


def grafana_names(plan):
    """Every name the stack claims inside the shared Grafana."""
    mpe = plan.one(MPE).inputs["managedPrivateEndpointName"]
    pyro = json.loads(named(plan, "grafana-datasources-pyroscope").inputs["environment"]["DATASOURCE"])
    prom = json.loads(named(plan, "grafana-datasources-prometheus").inputs["environment"]["DATASOURCE"])
    return {"mpe": mpe, "endpoint": f"grafana-amg-gpu-dev-{mpe}", "uids": {pyro["uid"], prom["uid"]},
            "names": {pyro["name"], prom["name"]}}


def pyroscope_args(**overrides) -> PyroscopeArgs:
    """PyroscopeArgs as ``__main__`` builds them from the Pulumi.yaml defaults, with chart 1.15.0, image tag 1.14.1,
    PLS ``pls`` in group ``rg`` and subnet ``s``, and ``overrides`` (field -> value)."""
    cfg = parse()
    fields = dict(
        chart=cfg.pyroscope_chart, chart_version="1.15.0", image_repository=cfg.pyroscope_image_repository,
        image_tag="1.14.1", private_link_service_name="pls", private_link_resource_group="rg",
        private_link_visibility=["*"], private_link_subnet="s",
        private_link_ip_address_count=cfg.private_link_ip_address_count,
        timeout_seconds=cfg.pyroscope_release_timeout_seconds, persistence=cfg.pyroscope_persistence,
        storage_class=cfg.pyroscope_storage_class, storage_size=cfg.pyroscope_storage_size,
        retention=cfg.pyroscope_retention, resources=cfg.pyroscope_resources,
        node_selector=cfg.pyroscope_node_selector, tolerations=cfg.pyroscope_tolerations,
        network_policy=cfg.pyroscope_network_policy, allowed_cidrs=cfg.pyroscope_allowed_cidrs,
        mode=cfg.pyroscope_mode, termination_grace_period_seconds=cfg.pyroscope_termination_grace_period_seconds,
    )
    return PyroscopeArgs(**{**fields, **overrides})
