"""The stack configuration's type: :class:`StackConfig` (one frozen field per ``Pulumi.yaml`` key) and its errors.

Owns: ``PROJECT`` (namespace of the keys), ``PROJECT_FILE``, :func:`declared` (the ``config:`` block of
``Pulumi.yaml``, the one source of keys, types and defaults; ``keys.yaml`` its copy in the installed package),
:func:`program_dir`, :func:`snake`, :class:`ConfigError`,
:class:`SecretValueError`, ``MANAGED_BY``. Inputs: ``Pulumi.yaml``. Outputs: the types the rest of
``stack_config`` fills. Errors: ConfigError's ``str()`` is one line, ``"<key>: <what is expected>"``.
Upstream: Pulumi's project config schema (pulumi/pulumi v3.230.0 ``sdk/go/common/workspace/project.go``);
why every default means the same written out or not: docs/decisions/config-defaults.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import pulumi
import yaml

from stack_config import masking

PROJECT = "aks-gpu-observability"


PROJECT_FILE = Path(__file__).resolve().parent.parent / "Pulumi.yaml"
#: The ``config:`` block as the installed package carries it (no Pulumi.yaml beside an installed package): written
#: from Pulumi.yaml by ``python -m stack_config.component_args``, held equal to it by a test.
PACKAGED_KEYS = Path(__file__).resolve().parent / "keys.yaml"


#: The tag the stack always sets (:attr:`StackConfig.tags`); the policy pack's required-tags rule looks for it.
MANAGED_BY = ("managed-by", "aks-gpu-observability")


class ConfigError(pulumi.RunError):
    """Invalid stack configuration (or a cluster fact that contradicts it).

    ``str(error)`` is one line, ``"<key>: <what is wrong and what is expected>"``. It derives from
    ``pulumi.RunError`` so ``pulumi up`` prints the line without a Python stack trace. Every secret value the stack
    knows shows as ``[secret]`` in it (stack_config/masking.py), wherever the line is built.
    """

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = masking.masked(message)
        super().__init__(f"{key}: {self.message}")


class SecretValueError(ConfigError):
    """A secret config value that its key's rule refuses. The message never holds the value: it says ``[secret]``
    where the rule would have quoted it (``pulumi up`` prints the line, and the engine would not mask a value it only
    knows as config)."""


@dataclass(frozen=True)
class StackConfig:
    """The validated stack configuration. Field ``foo_bar`` mirrors config key ``fooBar``.

    Units: ``*_timeout_seconds`` are seconds. Empty strings mean "not set" for the optional keys whose
    default is empty (``extension_version``, ``private_link_service_resource_group``,
    ``private_link_subnet``) and "derive" for the names in Grafana (``stack_config.names.derived_names``) and the PLS
    name (``derived_private_link_service_name``), filled in by ``stack_config.references.for_cluster`` once the cluster
    is known. ``assign_monitoring_data_reader`` is ``auto``, ``true`` or ``false``; read
    :attr:`assigns_monitoring_data_reader`. ``secret_keys``: the config keys (camelCase) whose value came in secret;
    :attr:`secret_values` their values.

    List and map keys arrive parsed (``stack_config.load.parse``): ``tags`` is the Azure tag map (the items plus
    ``managed-by``, sorted), ``private_link_visibility`` a tuple (``("*",)`` or subscription ids, in the order given),
    ``pyroscope_resources`` the requests and limits (``rules.DEFAULT_RESOURCES`` with the items applied),
    ``pyroscope_node_selector`` a dict, ``pyroscope_tolerations`` a tuple of Kubernetes tolerations;
    ``pyroscope_allowed_cidrs`` a tuple of CIDRs; ``grafana_viewers`` a tuple of ``rules.Viewer`` (lower-cased object
    id, principal type), in the order given.
    """

    production: bool
    tags: Mapping[str, str]
    multi_cluster: bool
    cluster_stack: str
    grafana_stack: str
    cluster_name: str
    cluster_resource_group: str
    kubeconfig_credentials: str
    kubelogin_mode: str
    kubernetes_delete_unreachable: bool
    extension_name: str
    extension_release_train: str
    extension_version: str
    extension_gpu_observability: bool
    extension_azure_monitor: bool
    extension_timeout_seconds: int
    pyroscope_chart: str
    pyroscope_chart_version: str
    pyroscope_image_repository: str
    pyroscope_image_tag: str
    pyroscope_release_timeout_seconds: int
    pyroscope_termination_grace_period_seconds: int
    pyroscope_persistence: bool
    pyroscope_storage_class: str
    pyroscope_storage_size: str
    pyroscope_retention: str
    pyroscope_ingestion_rate_mb: int
    pyroscope_ingestion_burst_mb: int
    pyroscope_resources: Mapping[str, Mapping[str, str]]
    pyroscope_node_selector: Mapping[str, str]
    pyroscope_tolerations: tuple[Mapping[str, str], ...]
    pyroscope_network_policy: bool
    pyroscope_allowed_cidrs: tuple
    pyroscope_mode: str
    pyroscope_storage_account: str
    pyroscope_storage_account_resource_group: str
    pyroscope_blob_container: str
    pyroscope_storage_sku: str
    private_link_service_name: str
    private_link_service_resource_group: str
    private_link_visibility: tuple[str, ...]
    private_link_subnet: str
    private_link_ip_address_count: int
    private_link_service_timeout_seconds: int
    create_grafana: bool
    create_monitor_workspace: bool
    grafana_public_network_access: str
    deployer_principal_type: str
    grafana_name: str
    grafana_resource_group: str
    monitor_workspace_name: str
    monitor_workspace_resource_group: str
    managed_private_endpoint_name: str
    assign_monitoring_data_reader: str
    grafana_viewers: tuple
    pyroscope_datasource_uid: str
    pyroscope_datasource_name: str
    prometheus_datasource_uid: str
    prometheus_datasource_name: str
    dashboard_source: str
    dashboard_sha256: str
    dashboard_uid: str
    dashboard_profile_type: str
    grafana_timeout_seconds: int
    connection_approval_timeout_seconds: int
    managed_private_endpoint_timeout_seconds: int
    #: Config keys whose value came in secret (set with ``pulumi config set --secret``, or a secret output of
    #: ``clusterStack``/``grafanaStack``); stack/secrecy.py keeps what carries them secret. Not a config key.
    secret_keys: frozenset = frozenset()

    @property
    def assigns_monitoring_data_reader(self) -> bool:
        """Whether this stack assigns Grafana's identity Monitoring Data Reader on the workspace: ``auto`` is
        yes for a single-cluster stack and no with ``multiCluster`` (one assignment per workspace)."""
        if self.assign_monitoring_data_reader == "auto":
            return not self.multi_cluster
        return self.assign_monitoring_data_reader == "true"

    @property
    def secret_values(self) -> tuple[str, ...]:
        """The non-empty values of :attr:`secret_keys`, longest first."""
        values = {_text(getattr(self, snake(key))) for key in self.secret_keys} - {""}
        return tuple(sorted(values, key=lambda v: (-len(v), v)))



def _text(value: object) -> str:
    """A value as its config text: a tuple of strings (``privateLinkVisibility``) space-separated, as it is written."""
    if isinstance(value, tuple) and all(isinstance(item, str) for item in value):
        return " ".join(value)
    return str(value)


def snake(key: str) -> str:
    """``privateLinkServiceName`` -> ``private_link_service_name``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def in_checkout() -> bool:
    """Whether these packages run from the project's checkout (Pulumi.yaml beside them), not an installed package."""
    return PROJECT_FILE.is_file()


def program_dir() -> Path:
    """Where a config value's relative file path points: the project's directory in the checkout, else the directory
    the consumer's program runs in (Pulumi runs a program from its project's directory)."""
    return PROJECT_FILE.parent if in_checkout() else Path.cwd()


@lru_cache(maxsize=None)
def declared() -> dict[str, dict]:
    """The ``config:`` block of Pulumi.yaml (an installed package: :data:`PACKAGED_KEYS`, its copy): key ->
    {"type", "description", "default"?}."""
    with (PROJECT_FILE if in_checkout() else PACKAGED_KEYS).open(encoding="utf-8") as fh:
        project = yaml.safe_load(fh)
    return dict(project.get("config") or {})
