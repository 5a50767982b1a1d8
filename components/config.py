"""Stack configuration, read once and validated before any resource is registered.

The keys, their types, descriptions and defaults are declared in ``Pulumi.yaml`` (Pulumi's project config
schema); that file is the single source of them. Before the program runs, the Pulumi CLI writes each default
into the stack's config for every key the stack file leaves out (pulumi v3.230.0
``sdk/go/common/workspace/config.go``, ``mergeConfig``/``createConfigValue``), so the program cannot tell a
default from a value the user wrote. Hence every default here means the same written out or not: a key
whose value is derived (names in Grafana, the workspace role) defaults to ``""`` or ``auto``, never to the
derived value itself. :func:`cli_defaults` writes the defaults exactly as the CLI does; the offline plan
applies it before the program runs, and :func:`parse` treats a missing key the same way.

Every rule below raises :class:`ConfigError`, whose one-line message names the key and what is expected.
Sources of the naming rules: Azure's "Naming rules and restrictions for Azure resources" (resource groups,
managed clusters, private link services, subnets, Managed Grafana, Azure Monitor workspaces) and the
``Microsoft.Dashboard/grafana/managedPrivateEndpoints`` REST API (2-20 characters, letter first).
"""

from __future__ import annotations

import decimal
import difflib
import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional

import pulumi
import yaml

from stack.profile_types import ID as PROFILE_TYPE_ID

PROJECT = "aks-gpu-observability"
PROJECT_FILE = Path(__file__).resolve().parent.parent / "Pulumi.yaml"


class ConfigError(pulumi.RunError):
    """Invalid stack configuration (or a cluster fact that contradicts it).

    ``str(error)`` is one line, ``"<key>: <what is wrong and what is expected>"``. It derives from
    ``pulumi.RunError`` so ``pulumi up`` prints the line without a Python stack trace.
    """

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}")


class SecretValueError(ConfigError):
    """A secret config value that its key's rule refuses. The message never holds the value: it says ``[secret]``
    where the rule would have quoted it (``pulumi up`` prints the line, and the engine would not mask a value it only
    knows as config)."""


@dataclass(frozen=True)
class StackConfig:
    """The validated stack configuration. Field ``foo_bar`` mirrors config key ``fooBar``.

    Units: ``*_timeout_seconds`` are seconds. Empty strings mean "not set" for the optional keys whose
    default is empty (``extension_version``, ``private_link_service_resource_group``,
    ``private_link_subnet``) and "derive" for the names in Grafana (see :func:`derived_names`) and the PLS
    name (:func:`derived_private_link_service_name`), filled in by ``stack_inputs.for_cluster`` once the cluster is
    known. ``assign_monitoring_data_reader`` is
    ``auto``, ``true`` or ``false``; read :attr:`assigns_monitoring_data_reader`. ``secret_keys``: the config keys
    (camelCase) whose value came in secret; :attr:`secret_values` their values.
    """

    production: bool
    tags: tuple
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
    pyroscope_persistence: bool
    pyroscope_storage_class: str
    pyroscope_storage_size: str
    pyroscope_retention: str
    pyroscope_resources: tuple
    pyroscope_node_selector: tuple
    pyroscope_tolerations: tuple
    pyroscope_network_policy: bool
    pyroscope_allowed_cidrs: tuple
    pyroscope_mode: str
    pyroscope_storage_account: str
    pyroscope_storage_account_resource_group: str
    pyroscope_blob_container: str
    pyroscope_storage_sku: str
    private_link_service_name: str
    private_link_service_resource_group: str
    private_link_visibility: str
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
    #: ``clusterStack``/``grafanaStack``); components/secrets.py keeps what carries them secret. Not a config key.
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
        values = {str(getattr(self, snake(key))) for key in self.secret_keys} - {""}
        return tuple(sorted(values, key=lambda v: (-len(v), v)))

    @property
    def tag_map(self) -> dict[str, str]:
        """Tags for Azure resources that take them: the ``tags`` config plus ``managed-by``, which no item may set
        (:func:`_tags` refuses one), sorted."""
        tags = dict(item.split("=", 1) for item in self.tags)
        tags[MANAGED_BY[0]] = MANAGED_BY[1]
        return dict(sorted(tags.items()))

    @property
    def private_link_visibility_list(self) -> list[str]:
        """``["*"]`` or the subscription ids, in the order given."""
        return self.private_link_visibility.split()


def snake(key: str) -> str:
    """``privateLinkServiceName`` -> ``private_link_service_name``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


@lru_cache(maxsize=None)
def declared() -> dict[str, dict]:
    """The ``config:`` block of Pulumi.yaml: key -> {"type", "description", "default"?}."""
    with PROJECT_FILE.open(encoding="utf-8") as fh:
        project = yaml.safe_load(fh)
    return dict(project.get("config") or {})


def cli_value(value: object) -> str:
    """A ``Pulumi.yaml`` default as the CLI writes it into the stack's config: ``createConfigValue`` in pulumi
    v3.230.0 ``sdk/go/common/workspace/config.go`` formats a primitive with Go's ``%v`` (``true``/``false``,
    integers in decimal, strings as they are) and marshals anything else to compact JSON (an object
    value, e.g. ``[]``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def cli_defaults(values: Mapping[str, str]) -> dict[str, str]:
    """``values`` (namespaced key -> string, as the stack file gives them) plus every ``Pulumi.yaml`` default
    of a key they leave out, written as the CLI writes it (``mergeConfig``, same file: a key found on the
    stack is kept, a key with a default is set, a project key with neither is missing)."""
    merged = dict(values)
    for key, decl in declared().items():
        full = f"{PROJECT}:{key}"
        if full not in merged and "default" in decl:
            merged[full] = cli_value(decl["default"])
    return merged


def check_cli_types(values: Mapping[str, object]) -> None:
    """Refuse what the Pulumi CLI refuses before the program runs: a project key's value not of its declared
    type (pulumi v3.230.0 ``sdk/go/common/workspace/project.go`` ``ValidateConfigValue``, called by
    ``validateStackConfigValues`` in ``config.go``). ``values``: namespaced key -> the value as the CLI holds
    it, a string for a plain value (YAML booleans and numbers become their JSON text, ``object.go``
    ``MarshalString``; `pulumi config set KEY VALUE` stores VALUE as a string, whatever it looks like) or a list or
    map for an object value (a YAML list or map, or what `pulumi config set --path` builds). boolean: exactly
    ``true`` or ``false``; integer: what Go's ``strconv.Atoi`` parses; string: a plain value; array of strings: a
    list of strings, never a string (``validateStackConfigValue`` decodes JSON only for an object value). Raises
    ConfigError naming the key; for an array, the message shows the ``--path`` form that stores a list."""
    schema = declared()
    for full, value in values.items():
        namespace, _, key = full.partition(":")
        kind = (schema.get(key) or {}).get("type") if namespace == PROJECT else None
        ok = {
            "string": isinstance(value, str),
            "boolean": value in ("true", "false"),
            "integer": isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value) is not None,
            "array": isinstance(value, list) and all(isinstance(item, str) for item in value),
        }.get(kind, True)
        if not ok:
            name = "array<string>" if kind == "array" else kind
            got = json.dumps(value) if isinstance(value, (list, dict)) else repr(value)
            message = f"must be of type '{name}' (got {got}); the Pulumi CLI refuses this before the program runs"
            if kind == "array" and isinstance(value, str):
                message += (f" (`pulumi config set {key} VALUE` stores a string): set each item with "
                            f"`pulumi config set --path '{key}[0]' <item>`, offline --set-path '{key}[0]=<item>'")
            elif kind == "array" and isinstance(value, list) and None in value:
                message += (f": item {value.index(None)} was never set (`--path '{key}[N]'` fills a list from index 0, "
                            "one item after another)")
            elif kind == "array" and isinstance(value, dict):
                message += f": a list is set by index, `pulumi config set --path '{key}[0]' <item>`, not by name"
            elif kind == "array":
                message += " (`pulumi config set --path` stores true, false and integers as booleans and numbers)"
            raise ConfigError(key, message)


# --- rules -------------------------------------------------------------------------------------------

Rule = Callable[[str, object], None]


def _regex(pattern: str, expected: str) -> Rule:
    compiled = re.compile(pattern)

    def check(key: str, value: object) -> None:
        if not isinstance(value, str) or not compiled.fullmatch(value):
            raise ConfigError(key, f"{expected} (got {value!r})")

    return check


def _optional(rule: Rule) -> Rule:
    def check(key: str, value: object) -> None:
        if value != "":
            rule(key, value)

    return check


def _one_of(*allowed: str) -> Rule:
    def check(key: str, value: object) -> None:
        if value not in allowed:
            raise ConfigError(key, f"expected one of {', '.join(allowed)} (got {value!r})")

    return check


def _between(low: int, high: int, unit: str = "") -> Rule:
    def check(key: str, value: object) -> None:
        assert isinstance(value, int)
        if not low <= value <= high:
            suffix = f" {unit}" if unit else ""
            raise ConfigError(key, f"expected an integer from {low} to {high}{suffix} (got {value})")

    return check


def _resource_group(key: str, value: object) -> None:
    # 1-90: letters (Unicode), digits, '_', '-', '.', '(' and ')'; must not end with '.'.
    if not isinstance(value, str) or not re.fullmatch(r"[\w\-.()]{1,90}", value) or value.endswith("."):
        raise ConfigError(
            key,
            "expected an Azure resource group name: 1-90 letters, digits, '_', '-', '.', '(' or ')', "
            f"not ending in '.' (got {value!r})",
        )


def _visibility(key: str, value: object) -> None:
    items = str(value).split()
    guid = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
    if items == ["*"] or (items and all(guid.fullmatch(item) for item in items)):
        return
    raise ConfigError(
        key, f"expected '*' or a space-separated list of subscription GUIDs (got {value!r})"
    )


#: A digest as OCI content is addressed: ``sha256:`` and 64 lowercase hex digits (opencontainers/image-spec
#: ``descriptor.md``, "Registered algorithms": the sha256 encoded portion MUST match ``/[a-f0-9]{64}/``; go-digest
#: refuses upper case). The pins that cannot move: docs/how-it-works.md, "Pins that cannot move".
_DIGEST = r"sha256:[a-f0-9]{64}"


def _digest_error(key: str, value: object, where: str) -> ConfigError:
    return ConfigError(key, f"the digest after '@' in {where} must be sha256: and 64 lowercase hex digits "
                            f"(got {value!r})")


def _chart(key: str, value: object) -> None:
    # The values and the Service name assume Grafana's pyroscope chart: an OCI reference must name it. An OCI
    # reference may pin the chart by digest, oci://<registry>/<path>/pyroscope@sha256:<64 hex>, with the version
    # still in pyroscopeChartVersion: the form Helm >= 3.17.0 pulls by digest (helm/helm pkg/registry/client.go
    # ValidateReference, "Install by digest only" at v3.17.3; at v3.20.2 it pulls repository@digest and refuses a
    # version tag that resolves to another digest). A tag in the reference (pyroscope:1.15.0@sha256:...) is refused:
    # Helm 3.17.3 pulls that by its tag (pkg/registry/reference.go String). An https:// repository has no digests.
    oci = r"oci://[A-Za-z0-9.-]+(:\d+)?(/[\w.-]+)*/pyroscope"
    https = r"https://[A-Za-z0-9.-]+(:\d+)?(/[\w.~-]*)*"
    text = value if isinstance(value, str) else ""
    base, at, digest = text.partition("@")
    if at and re.fullmatch(https, base):
        raise ConfigError(key, "only an oci:// chart reference takes a digest (oci://<registry>/<path>/pyroscope@sha256:"
                               f"<64 hex>); an https:// chart repository cannot pin one (got {value!r})")
    if at and re.fullmatch(oci, base) and not re.fullmatch(_DIGEST, digest):
        raise _digest_error(key, value, "an oci:// chart reference")
    if not isinstance(value, str) or not (re.fullmatch(oci + f"(@{_DIGEST})?", value) or re.fullmatch(https, value)):
        raise ConfigError(
            key,
            "expected an oci:// reference ending in /pyroscope (optionally @sha256:<64 hex>, no tag) or an https:// "
            f"chart repository URL (got {value!r})",
        )


def _image_tag(key: str, value: object) -> None:
    # The chart writes the image as "<repository>:<tag>" (templates/deployments-statefulsets.yaml of chart 1.15.0), so
    # a tag "<tag>@sha256:<64 hex>" gives "<repository>:<tag>@sha256:...", a reference pulled by its digest.
    tag, at, digest = str(value).partition("@")
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", tag):
        raise ConfigError(key, "expected a container image tag: 1-128 letters, digits, '_', '.' or '-', not starting "
                               f"with '.' or '-', optionally pinned as <tag>@sha256:<64 hex> (got {value!r})")
    if at and not re.fullmatch(_DIGEST, digest):
        raise _digest_error(key, value, "an image tag")


# semver.org's recommended regular expression (2.0.0), without a leading 'v'.
_SEMVER = (
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
_semver = _regex(_SEMVER, "expected an exact semantic version such as 1.15.0 (no ranges, no 'v' prefix)")

#: The tag the stack always sets (:attr:`StackConfig.tag_map`); the policy pack's required-tags rule looks for it.
MANAGED_BY = ("managed-by", "aks-gpu-observability")


def _tags(key: str, value: object) -> None:
    for item in value:  # type: ignore[union-attr]
        name, sep, tag = str(item).partition("=")
        if not sep or not re.fullmatch(r"[^<>%&\\?/]{1,512}", name) or len(tag) > 256:
            raise ConfigError(
                key, f"expected key=value items (key 1-512 characters without <>%&\\?/, value up to 256) (got {item!r})"
            )
        # Azure tag names are case-insensitive: Managed-By would replace the stack's tag just the same.
        if name.strip().lower() == MANAGED_BY[0]:
            raise ConfigError(key, f"{item!r}: the stack always sets {MANAGED_BY[0]}={MANAGED_BY[1]} (it marks what "
                                   f"it created); remove that item, or use another tag name")


_GRAFANA_UID = _regex(r"[A-Za-z0-9_-]{1,40}", "expected a Grafana uid: 1-40 letters, digits, '-' or '_'")
_DATASOURCE_NAME = _regex(r"\S(?:[^\x00-\x1f]{0,188}\S)?", "expected a datasource name: 1-190 printable characters, no surrounding spaces")


def _dashboard_source(key: str, value: object) -> None:
    text = str(value)
    if text.startswith("https://") and re.fullmatch(r"https://[A-Za-z0-9.-]+(:\d+)?/\S+", text):
        return
    relative = text and "://" not in text and not text.startswith(("/", "-", "~")) and ".." not in Path(text).parts
    if not relative:
        raise ConfigError(key, f"expected an https:// URL or a file path relative to the project directory (got {value!r})")
    if not (PROJECT_FILE.parent / text).is_file():
        raise ConfigError(key, f"no file {text!r} in the project directory; expected an https:// URL or a project file")


def _profile_type(key: str, value: object) -> None:
    # A Pyroscope profile type ID, name:sampleType:sampleUnit:periodType:periodUnit, as flamegraph.hotspots reads one
    # (PROFILE_TYPE_ID; grafana/pyroscope v1.15.0 pkg/phlaredb/labels/labels.go CreateProfileLabels). The dashboard step
    # sets it in the dashboard's Pyroscope GPU-memory queries (steps/grafana_dashboard.py with_profile_type).
    if not isinstance(value, str) or not PROFILE_TYPE_ID.fullmatch(value):
        raise ConfigError(key, "expected a Pyroscope profile type ID name:type:unit:periodType:periodUnit such as "
                               f"process_cpu:malloc:bytes:process_cuda:bytes (got {value!r})")
    # The step sets it only in queries asking GPU memory (malloc:bytes, the profile_cuda gadget's type and unit):
    # another sample type would point the GPU flame graph at other data.
    if value.split(":")[1:3] != ["malloc", "bytes"]:
        raise ConfigError(key, "expected a GPU-memory profile type ID, sample type malloc and unit bytes, such as "
                               f"process_cpu:malloc:bytes:process_cuda:bytes; `python -m ops.verify` names the one "
                               f"Pyroscope holds (got {value!r})")


def _stack_name(key: str, value: object) -> None:
    if value != "" and not re.fullmatch(r"(?:[\w.-]+/){0,2}[\w.-]+", str(value)):
        raise ConfigError(key, f"expected a stack name: stack, project/stack or org/project/stack (got {value!r})")


#: A Kubernetes quantity (k8s.io/apimachinery ``pkg/api/resource/quantity.go``, the ``<number><suffix>`` forms with a
#: binary or decimal SI suffix; no exponent forms, which no one writes in a stack file).
_QUANTITY = r"(?:\d+(?:\.\d+)?|\.\d+)(?:Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?"
_GI = {"Gi": 1, "Ti": 1024}


def _storage_size(key: str, value: object) -> None:
    # Azure Disk sizes are whole GiB (4 GiB to 32 TiB for Standard SSD); the chart's own default is 10Gi, and Pyroscope's
    # high-disk clean-up frees local blocks only below 10 GiB free (pkg/phlaredb/phlaredb.go@v1.15.0 DefaultMinFreeDisk).
    match = re.fullmatch(r"([1-9]\d*)(Gi|Ti)", str(value))
    size = int(match.group(1)) * _GI[match.group(2)] if match else 0
    if not 10 <= size <= 32 * 1024:
        raise ConfigError(key, f"expected a Kubernetes quantity in whole Gi or Ti from 10Gi to 32Ti, e.g. 64Gi (got {value!r})")


def _retention(key: str, value: object) -> None:
    # Prometheus model.Duration, as -compactor.blocks-retention-period parses it (pkg/validation/limits.go@v1.15.0);
    # 0 disables the retention.
    if not re.fullmatch(r"0|[1-9]\d*[hdw]", str(value)):
        raise ConfigError(key, f"expected a duration <n>h, <n>d or <n>w such as 14d, or 0 to keep profiles (got {value!r})")


RESOURCE_KEYS = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory")


def _resources(key: str, value: object) -> None:
    for item in value:  # type: ignore[union-attr]
        name, sep, quantity = str(item).partition("=")
        if not sep or name not in RESOURCE_KEYS or (quantity and not re.fullmatch(_QUANTITY, quantity)):
            raise ConfigError(key, f"expected <requests|limits>.<cpu|memory>=<Kubernetes quantity> items such as "
                                   f"requests.memory=2Gi (an empty quantity removes the entry) (got {item!r})")
    merged = resources(value)  # type: ignore[arg-type]
    for kind in ("cpu", "memory"):
        low, high = merged["requests"].get(kind), merged["limits"].get(kind)
        if low and high and quantity_value(low) > quantity_value(high):
            raise ConfigError(key, f"requests.{kind} {low} is more than limits.{kind} {high}; Kubernetes refuses that")


def quantity_value(text: str) -> decimal.Decimal:
    """A quantity's value in base units (cores, bytes)."""
    match = re.fullmatch(r"([\d.]+)(\D*)", text)
    factors = {"": 1, "m": decimal.Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
               "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
    return decimal.Decimal(match.group(1)) * factors[match.group(2)]


#: Pyroscope's requests and limits unless ``pyroscopeResources`` overrides them (docs/sizing.md: Grafana publishes no
#: single-binary sizing; chart 1.15.0's values.yaml sets none, values-micro-services.yaml sizes each component).
DEFAULT_RESOURCES = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}


def resources(items) -> dict:
    """:data:`DEFAULT_RESOURCES` with ``pyroscopeResources`` items applied (an empty quantity removes the entry)."""
    merged = {kind: dict(values) for kind, values in DEFAULT_RESOURCES.items()}
    for item in items:
        name, _, quantity = str(item).partition("=")
        kind, _, resource = name.partition(".")
        if quantity:
            merged[kind][resource] = quantity
        else:
            merged[kind].pop(resource, None)
    return {kind: dict(sorted(values.items())) for kind, values in merged.items() if values}


#: A label key (k8s.io/apimachinery ``pkg/util/validation/validation.go`` ``IsQualifiedName``: an optional DNS-subdomain
#: prefix and '/', then 1-63 alphanumerics, '-', '_', '.', alphanumeric at both ends) and value (``IsValidLabelValue``).
_LABEL_KEY = r"(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"


def _node_selector(key: str, value: object) -> None:
    for item in value:  # type: ignore[union-attr]
        if not re.fullmatch(f"{_LABEL_KEY}={_LABEL_VALUE}", str(item)):
            raise ConfigError(key, f"expected key=value node label items such as agentpool=system (got {item!r})")


_TOLERATION = re.compile(f"({_LABEL_KEY})(?:=({_LABEL_VALUE}))?(?::(NoSchedule|PreferNoSchedule|NoExecute))?")


def _tolerations(key: str, value: object) -> None:
    for item in value:  # type: ignore[union-attr]
        if not _TOLERATION.fullmatch(str(item)):
            raise ConfigError(key, "expected key=value:Effect, key:Effect, key=value or key items, Effect one of "
                                   f"NoSchedule, PreferNoSchedule, NoExecute, e.g. sku=gpu:NoSchedule (got {item!r})")


def _cidrs(key: str, value: object) -> None:
    import ipaddress

    for item in value:  # type: ignore[union-attr]
        try:
            network = ipaddress.ip_network(str(item), strict=True)
        except ValueError:
            network = None
        if network is None or "/" not in str(item) or str(network) != str(item):
            raise ConfigError(key, f"expected address ranges in CIDR notation with no host bits, such as 10.224.0.0/16 (got {item!r})")
        if network.prefixlen == 0:
            raise ConfigError(key, f"{item!r} admits every address, which no NetworkPolicy should; name only the readers "
                                   "you add (the private link service's NAT IPs are admitted already), or set "
                                   "pyroscopeNetworkPolicy to false")


def tolerations(items) -> list[dict]:
    """``pyroscopeTolerations`` items as Kubernetes tolerations (no value: operator Exists; no effect: every effect)."""
    result = []
    for item in items:
        key, value, effect = _TOLERATION.fullmatch(str(item)).groups()
        toleration = {"key": key, "operator": "Exists" if value is None else "Equal"}
        if value is not None:
            toleration["value"] = value
        if effect:
            toleration["effect"] = effect
        result.append(toleration)
    return result


def _storage_class(key: str, value: object) -> None:
    # A StorageClass name is a DNS subdomain (k8s.io/apimachinery IsDNS1123Subdomain): 1-253 characters.
    if len(str(value)) > 253 or not re.fullmatch(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*", str(value)):
        raise ConfigError(key, f"expected a storage class name: lowercase letters, digits, '-' and '.', such as managed-csi (got {value!r})")


RULES: dict[str, Rule] = {
    "tags": _tags,
    "clusterStack": _stack_name,
    "grafanaStack": _stack_name,
    "clusterName": _regex(
        r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?",
        "expected an AKS cluster name: 1-63 letters, digits, '_' or '-', starting and ending with a letter or digit",
    ),
    "clusterResourceGroup": _resource_group,
    "kubeconfigCredentials": _one_of("user", "admin"),
    "kubeloginMode": _one_of("azurecli", "workloadidentity", "msi", "azd", "devicecode"),
    "extensionName": _regex(
        r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?",
        "expected an extension name: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit",
    ),
    "extensionReleaseTrain": _regex(
        r"[A-Za-z][A-Za-z0-9-]{0,31}", "expected a release train name such as preview or stable"
    ),
    "extensionVersion": _optional(_semver),
    "extensionTimeoutSeconds": _between(60, 7200, "seconds"),
    "pyroscopeChart": _chart,
    "pyroscopeChartVersion": _semver,
    "pyroscopeImageRepository": _regex(
        r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?::\d+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+|[a-z0-9]+(?:[._-][a-z0-9]+)*",
        "expected an image repository such as grafana/pyroscope or myregistry.azurecr.io/grafana/pyroscope "
        "(lowercase, no tag)",
    ),
    "pyroscopeImageTag": _image_tag,
    "pyroscopeReleaseTimeoutSeconds": _between(60, 3600, "seconds"),
    "pyroscopeStorageClass": _storage_class,
    "pyroscopeStorageSize": _storage_size,
    "pyroscopeRetention": _retention,
    "pyroscopeResources": _resources,
    "pyroscopeNodeSelector": _node_selector,
    "pyroscopeTolerations": _tolerations,
    "pyroscopeAllowedCidrs": _cidrs,
    "pyroscopeMode": _one_of("single-binary", "microservices"),
    # Container names: 3-63 lowercase letters, digits and '-', a letter or digit first and last, no '--' (Azure Storage
    # REST reference "Naming and Referencing Containers, Blobs, and Metadata", learn.microsoft.com/rest/api/
    # storageservices); account names: 3-24 lowercase letters and digits (the same rule the Storage REST docs state).
    "pyroscopeStorageAccount": _optional(_regex(
        r"[a-z0-9]{3,24}", "expected a storage account name: 3-24 lowercase letters and digits")),
    "pyroscopeStorageAccountResourceGroup": _optional(_resource_group),
    "pyroscopeBlobContainer": _regex(
        r"(?=.{3,63}$)[a-z0-9](?:-?[a-z0-9])*",
        "expected a blob container name: 3-63 lowercase letters, digits and single '-', starting and ending with a "
        "letter or digit"),
    # Storage account SKUs for blob data (azure-native storage.SkuName; learn.microsoft.com/azure/storage/common/
    # storage-redundancy): ZRS and GZRS need a region with availability zones.
    "pyroscopeStorageSku": _one_of("Standard_LRS", "Standard_ZRS", "Standard_GRS", "Standard_RAGRS", "Standard_GZRS",
                                   "Standard_RAGZRS"),
    "privateLinkServiceName": _optional(_regex(
        r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,78}[A-Za-z0-9_])?",
        "expected a private link service name: 1-80 letters, digits, '_', '.' or '-', starting with a "
        "letter or digit and ending with a letter, digit or '_'",
    )),
    "privateLinkServiceResourceGroup": _optional(_resource_group),
    "privateLinkVisibility": _visibility,
    "privateLinkSubnet": _optional(
        _regex(
            r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,78}[A-Za-z0-9_])?",
            "expected a subnet name: 1-80 letters, digits, '_', '.' or '-', starting with a letter or digit "
            "and ending with a letter, digit or '_'",
        )
    ),
    "privateLinkIpAddressCount": _between(1, 8),
    "privateLinkServiceTimeoutSeconds": _between(60, 3600, "seconds"),
    "connectionApprovalTimeoutSeconds": _between(60, 3600, "seconds"),
    "managedPrivateEndpointTimeoutSeconds": _between(60, 3600, "seconds"),
    "grafanaPublicNetworkAccess": _one_of("Enabled", "Disabled"),
    "deployerPrincipalType": _one_of("auto", "User", "ServicePrincipal", "Group"),
    "assignMonitoringDataReader": _one_of("auto", "true", "false"),
    # Names in Grafana: "" derives them (derived_names), so a written-out default changes nothing.
    "pyroscopeDatasourceUid": _optional(_GRAFANA_UID),
    "prometheusDatasourceUid": _optional(_GRAFANA_UID),
    "pyroscopeDatasourceName": _optional(_DATASOURCE_NAME),
    "prometheusDatasourceName": _optional(_DATASOURCE_NAME),
    "dashboardSource": _dashboard_source,
    "dashboardSha256": _regex(r"[0-9a-fA-F]{64}", "expected a sha256 digest: 64 hexadecimal digits"),
    "dashboardUid": _GRAFANA_UID,
    "dashboardProfileType": _profile_type,
    "grafanaTimeoutSeconds": _between(30, 3600, "seconds"),
    "grafanaName": _regex(
        r"[A-Za-z][A-Za-z0-9-]{0,21}[A-Za-z0-9]",
        "expected an Azure Managed Grafana name: 2-23 letters, digits or '-', starting with a letter and "
        "ending with a letter or digit",
    ),
    "grafanaResourceGroup": _resource_group,
    "monitorWorkspaceName": _regex(
        r"[A-Za-z0-9][A-Za-z0-9-]{2,42}[A-Za-z0-9]",
        "expected an Azure Monitor workspace name: 4-44 letters, digits or '-', starting and ending with a "
        "letter or digit",
    ),
    "monitorWorkspaceResourceGroup": _resource_group,
    "managedPrivateEndpointName": _optional(_regex(
        r"[A-Za-z][A-Za-z0-9-]{1,19}",
        "expected a managed private endpoint name: 2-20 characters, a letter first, then letters, digits or '-'",
    )),
}


def _typed(key: str, kind: str, text: str) -> object:
    """Convert the CLI's string form of a value to its declared Pulumi config type (arrays arrive as JSON;
    they become tuples of strings)."""
    if kind == "array":
        try:
            items = json.loads(text) if text.strip() else []
        except json.JSONDecodeError:
            items = None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ConfigError(key, f"expected a list of strings, e.g. [\"costCenter=1234\"] (got {text!r})")
        return tuple(items)
    if kind == "integer":
        if not re.fullmatch(r"[+-]?\d+", text.strip()):
            raise ConfigError(key, f"expected an integer (got {text!r})")
        return int(text)
    if kind == "boolean":  # what pulumi.Config.get_bool accepts
        if text not in ("true", "True", "false", "False"):
            raise ConfigError(key, f"expected true or false (got {text!r})")
        return text in ("true", "True")
    return text


def parse(raw: Mapping[str, Optional[str]], secret_keys: Iterable[str] = ()) -> StackConfig:
    """Validate raw values (key -> the string the CLI would pass, or None if unset) into a StackConfig;
    ``secret_keys``: the keys whose value is secret config.

    Unset keys take their Pulumi.yaml default. Keys are checked in Pulumi.yaml order; the first failure
    raises :class:`ConfigError`. Raises ConfigError for: a required key (no default) missing or empty,
    a value of the wrong type, or a value outside its rule.
    """
    schema = declared()
    secret_keys = frozenset(secret_keys)
    values: dict[str, object] = {}
    for key, decl in schema.items():
        text = raw.get(key)
        if text is None:
            if "default" not in decl:
                raise ConfigError(key, f"required; set it with `pulumi config set {key} <value>`")
            text = cli_value(decl["default"])  # what the CLI would have written
        text = str(text)
        if "default" not in decl and text.strip() == "":
            raise ConfigError(key, f"required and must not be empty; set it with `pulumi config set {key} <value>`")
        try:
            value = _typed(key, decl.get("type", "string"), text)
            if key in REQUIRED_UNLESS and str(value).strip() == "":
                value = ""  # checked by check_required, once stack references had their say
            if key in RULES and not (key in REQUIRED_UNLESS and value == ""):
                RULES[key](key, value)
        except ConfigError as error:
            if key not in secret_keys:
                raise
            raise SecretValueError(key, f"{hide(error.message, text)} (the value is secret)") from None
        values[snake(key)] = value
    known = {f.name for f in fields(StackConfig) if f.name != "secret_keys"}
    missing = known - set(values)
    if missing:  # Pulumi.yaml and StackConfig drifted apart: a programming error, not user input.
        raise RuntimeError(f"Pulumi.yaml declares no key for StackConfig fields {sorted(missing)}")
    config = StackConfig(**{name: values[name] for name in known}, secret_keys=frozenset(secret_keys))
    check_dashboard_file(config)
    check_mode_keys(config)
    return config if (config.cluster_stack or config.grafana_stack) else check_required(config)


def hide(message: str, value: str) -> str:
    """``message`` with ``value`` (as a rule quotes it: ``repr``, JSON, or bare) replaced by ``[secret]``."""
    for shown in sorted({repr(value), json.dumps(value), value} - {""}, key=len, reverse=True):
        message = message.replace(shown, "[secret]")
    return message


def check_mode_keys(config: StackConfig) -> None:
    """Refuse a key the chosen ``pyroscopeMode`` would silently ignore: ``pyroscopeResources`` sizes the single binary's
    pod; in microservices mode each component keeps the requests and limits of the chart's ``values-micro-services.yaml``
    (``components.pyroscope.CHART_COMPONENTS``). ConfigError on ``pyroscopeResources``."""
    if config.pyroscope_mode == "microservices" and config.pyroscope_resources:
        raise ConfigError("pyroscopeResources", "applies to the single binary only; in microservices mode each component "
                                                "takes the chart's values-micro-services.yaml requests and limits "
                                                "(docs/sizing.md); remove it or set pyroscopeMode to single-binary")


def check_dashboard_file(config: StackConfig) -> None:
    """For a ``dashboardSource`` that is a project file (an https source is checked by the step when it downloads
    it), refuse before anything is deployed what the dashboard step would refuse after every other step ran
    (steps/grafana_dashboard.py): a sha256 other than ``dashboardSha256`` (ConfigError on ``dashboardSha256``),
    content that is not a JSON object (on ``dashboardSource``, with line and column), a ``uid`` other than
    ``dashboardUid`` (on ``dashboardUid``)."""
    source = config.dashboard_source
    if source.startswith("https://"):
        return
    raw = (PROJECT_FILE.parent / source).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != config.dashboard_sha256.lower():
        raise ConfigError("dashboardSha256", f"{source} has sha256 {digest}, not {config.dashboard_sha256}; set "
                                             "dashboardSha256 to the digest of the file you mean to trust")
    try:
        dashboard = json.loads(raw)
    except ValueError as error:
        where = f"{source}:{error.lineno}:{error.colno}" if isinstance(error, json.JSONDecodeError) else source
        raise ConfigError("dashboardSource", f"{where}: not JSON ({getattr(error, 'msg', error)}); expected a Grafana "
                                             "dashboard JSON object") from None
    if not isinstance(dashboard, dict):
        raise ConfigError("dashboardSource", f"{source}: expected a Grafana dashboard JSON object (got a JSON "
                                             f"{type(dashboard).__name__})")
    if dashboard.get("uid") != config.dashboard_uid:
        raise ConfigError("dashboardUid", f"{source} has uid {json.dumps(dashboard.get('uid'))}, not "
                                          f"{config.dashboard_uid!r}; set dashboardUid to the uid inside the JSON")


#: Keys that must end up non-empty, and the stack reference that may supply each instead.
REQUIRED_UNLESS = {
    "clusterName": "clusterStack",
    "clusterResourceGroup": "clusterStack",
    "grafanaName": "grafanaStack",
    "grafanaResourceGroup": "grafanaStack",
    "monitorWorkspaceName": "grafanaStack",
    "monitorWorkspaceResourceGroup": "grafanaStack",
}


def check_required(config: StackConfig) -> StackConfig:
    """Raise ConfigError for the first key of REQUIRED_UNLESS still empty (after stack references, if any)."""
    for key, reference in REQUIRED_UNLESS.items():
        if not getattr(config, snake(key)):
            raise ConfigError(
                key,
                f"required and must not be empty; set it with `pulumi config set {key} <value>`, or set "
                f"{reference} to a stack that exports it",
            )
    return config


def with_values(config: StackConfig, values: Mapping[str, str], source: str, secret: Iterable[str] = ()) -> StackConfig:
    """``config`` with ``values`` (config key -> string) filled in where the key is empty (its default, ``""``,
    means "derive"), each checked by its rule; a key the stack sets to a non-empty value wins. ``source``
    names where the values come from, for the error message; ``secret``: the keys among ``values`` whose value came
    in secret (added to ``secret_keys`` when filled in)."""
    changes: dict = {}
    secret = set(secret)
    for key, value in values.items():
        if getattr(config, snake(key)) not in ("", None):
            continue
        try:
            if key in RULES:
                RULES[key](key, value)
        except ConfigError as error:
            if key in secret:
                raise SecretValueError(key, f"{hide(error.message, value)} (from {source}; the value is secret)") from None
            raise ConfigError(key, f"{error.message} (from {source})") from None
        changes[snake(key)] = value
        if key in secret:
            changes["secret_keys"] = frozenset(changes.get("secret_keys", config.secret_keys) | {key})
    return replace(config, **changes)


#: The provider whose configuration the stack relies on (``azure-native:location``, credentials).
PROVIDER = "azure-native"


@lru_cache(maxsize=None)
def provider_keys() -> frozenset:
    """The config keys azure-native declares, read from its installed SDK: ``pulumi_azure_native/config/vars.py``
    (generated from the provider schema's config variables) reads each one with ``__config__.get*('<key>')``.
    Found without importing the package."""
    spec = importlib.util.find_spec("pulumi_azure_native")
    if spec is None or not spec.origin:  # pragma: no cover - the SDK is a requirement of the program
        raise RuntimeError("pulumi_azure_native is not installed; run `pip install --require-hashes -r requirements.lock`")
    text = (Path(spec.origin).parent / "config" / "vars.py").read_text(encoding="utf-8")
    return frozenset(re.findall(r"__config__\.get\w*\('(\w+)'\)", text))


def check_known(keys: Iterable[str]) -> None:
    """Raise ConfigError for the first key (sorted) that the program would otherwise ignore without a word (the
    Pulumi CLI hands every key of the stack's config to the program and checks none of these itself):

    - a key in the project's namespace that Pulumi.yaml does not declare (its default would be used); the error
      names the key and suggests the closest declared one;
    - an ``azure-native:`` key the provider does not declare (:func:`provider_keys`; the provider's CheckConfig
      accepts any key), e.g. ``azure-native:locaton``; the error names the full key and suggests one;
    - a key in a namespace that is neither but close to one of them (a misspelt ``aks-gpu-observabilty:``), whose
      key would never be read; the error names the full key and suggests it in the right namespace.
    Other namespaces (other providers, policies) are left alone."""
    names = declared()
    known = {PROJECT: list(names), PROVIDER: sorted(provider_keys())}
    for full in sorted(keys):
        namespace, _, key = full.partition(":")
        if namespace == PROJECT and key not in names:
            close = difflib.get_close_matches(key, list(names), n=1)
            hint = f"did you mean {close[0]}?" if close else "see the config table in README.md"
            head = re.split(r"[.\[]", key, maxsplit=1)[0]
            if head != key and head in names:  # a property path given as a key
                hint = f"a path into {head}: set it with `pulumi config set --path '{key}' ...`, offline --set-path"
            raise ConfigError(key, f"unknown config key ({hint}); the keys are declared in Pulumi.yaml")
        if namespace == PROVIDER and key not in known[PROVIDER]:
            close = difflib.get_close_matches(key, known[PROVIDER], n=1)
            hint = f"did you mean {PROVIDER}:{close[0]}?" if close else f"its keys: {', '.join(known[PROVIDER])}"
            raise ConfigError(full, f"unknown {PROVIDER} config key ({hint}); the provider declares its keys in "
                                    "pulumi_azure_native/config/vars.py")
        if namespace not in known:
            close = difflib.get_close_matches(namespace, list(known), n=1, cutoff=0.8)
            if close:
                raise ConfigError(full, f"unknown namespace '{namespace}', so nothing reads this key (did you mean "
                                        f"{close[0]}:{key}? this project's keys are in namespace {PROJECT})")


def go_json_number(value) -> str:
    """A YAML number as Go's ``encoding/json`` writes the float64 or int64 yaml.v3 decodes it to, which is how the CLI
    passes a stack file's number on (pulumi/pulumi v3.230.0 ``sdk/go/common/resource/config/object.go``
    ``MarshalString``; Go ``encoding/json`` ``floatEncoder``: the shortest digits that round-trip, fixed notation for
    1e-6 <= |x| < 1e21, else an exponent without a leading zero, ``e-7``): ``1.20`` -> ``1.2``, ``1.0`` -> ``1``,
    ``1e3`` -> ``1000``."""
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return repr(value)  # NaN and infinities: json.Marshal refuses them, so does the CLI
    if value == 0 or 1e-6 <= abs(value) < 1e21:
        text = format(decimal.Decimal(repr(value)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return re.sub(r"e([+-])0(\d)$", r"e\1\2", repr(value))


_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _go_parse_int(text: str, signed: bool) -> Optional[int]:
    """Go's ``strconv.ParseInt(text, 0, 64)`` (``ParseUint`` when not ``signed``): a sign (ParseInt only), then a
    ``0x``/``0o``/``0b`` prefix or a leading ``0`` (octal) picks the base; None where Go answers an error."""
    sign, body = (text[0], text[1:]) if signed and text[:1] in "+-" else ("", text)
    base = 10
    if body[:2].lower() in ("0x", "0o", "0b"):
        base, body = {"x": 16, "o": 8, "b": 2}[body[1].lower()], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, body = 8, body[1:]
    if not body or any(c not in _GO_DIGITS[base] for c in body):
        return None
    value = int(body, base) * (-1 if sign == "-" else 1)
    low, high = (-2**63, 2**63 - 1) if signed else (0, 2**64 - 1)
    return value if low <= value <= high else None


def yaml_v3_number(text: str) -> Optional[object]:
    """The number gopkg.in/yaml.v3 decodes a plain scalar ``text`` to (an int or a float), as the CLI reads a stack
    file; None when yaml.v3 reads it as anything else. go-yaml ``resolve.go`` ``resolve``: ``.inf``/``.nan`` forms; a
    scalar starting with ``.`` parsed as a float; one starting with a digit or sign, underscores removed, as
    ``ParseInt``/``ParseUint`` with base prefixes (``0x1F``, ``0o17``, ``017``, ``0b101``), else a decimal float
    (``1.20``, ``1e3``); a date (``2024-01-31``) is a timestamp, not a number."""
    special = {".nan": float("nan"), ".inf": float("inf"), "+.inf": float("inf"), "-.inf": float("-inf")}
    if text.lower() in special and text[-3:] in ("nan", "NaN", "NAN", "inf", "Inf", "INF"):
        return special[text.lower()]
    if text[:1] == ".":
        try:
            return float(text)
        except ValueError:
            return None
    if not text or text[0] not in "+-0123456789" or re.fullmatch(r"\d{4}-.*", text):
        return None
    plain = text.replace("_", "")
    for signed in (True, False):
        number = _go_parse_int(plain, signed)
        if number is not None:
            return number
    return float(plain) if _YAML_STYLE_FLOAT.fullmatch(plain) else None


def unquoted_number(key: str, written: str, passed: str) -> str:
    """The one-line reason to refuse a YAML number ``written`` for string key ``key``, which the CLI passes as ``passed``."""
    return (f"{key}: {written} is a YAML number, which the Pulumi CLI passes on as \"{passed}\"; quote it to keep it as "
            f"written: {key}: \"{written}\"")


def check_stack_file_numbers(path: Path) -> None:
    """Refuse a YAML number given in the stack file ``path`` for a project key of type string whose text the CLI
    changes when it passes it on (:func:`go_json_number`): ``pyroscopeImageTag: 1.20`` would deploy image tag "1.2".
    The CLI takes any plain value for a string key (v3.230.0 ``sdk/go/common/workspace/project.go``
    ``ValidateConfigValue``), so the program reads its own stack file to tell; ConfigError naming the key, the file,
    line and column, and the quoted form. A file that is missing or not YAML is left to the CLI."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return
    if not isinstance(root, yaml.MappingNode):
        return
    config = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "config"), None)
    strings = {key for key, decl in declared().items() if decl.get("type", "string") == "string"}
    for key_node, value_node in config.value if isinstance(config, yaml.MappingNode) else []:
        name = str(key_node.value)
        namespace, _, rest = name.rpartition(":")
        key = rest if namespace in ("", PROJECT, f"{PROJECT}:config") else None
        if key in strings and isinstance(value_node, yaml.ScalarNode) and value_node.style is None:
            number = yaml_v3_number(value_node.value)
            passed = go_json_number(number) if number is not None else value_node.value
            if passed != value_node.value:
                mark = value_node.start_mark
                raise ConfigError(key, f"{path.name}:{mark.line + 1}:{mark.column + 1}: "
                                       f"{unquoted_number(key, value_node.value, passed).split(': ', 1)[1]}")


def _all_keys() -> set[str]:
    """Every config key the engine handed this program: set at run time (mocks, RunRequest) or through
    the PULUMI_CONFIG environment variable the language host sets."""
    from pulumi.runtime import config as runtime_config

    return set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())


def load() -> StackConfig:
    """Read every declared key from the stack's config (namespace ``aks-gpu-observability``) and parse it.
    Raises ConfigError for an undeclared key in that namespace or any invalid value."""
    from pulumi.runtime.config import is_config_secret

    check_known(_all_keys())
    check_stack_file_numbers(PROJECT_FILE.parent / f"Pulumi.{pulumi.get_stack()}.yaml")
    config = pulumi.Config(PROJECT)
    return parse({key: config.get(key) for key in declared()},
                 [key for key in declared() if is_config_secret(f"{PROJECT}:{key}")])


#: The names a single-cluster stack uses in Grafana when the keys are left empty: the published procedure's
#: (MicrosoftDocs/azure-aks-docs articles/aks/gpu-profiling.md: MPE ``pyroscope-mpe``, Pyroscope datasource
#: name and uid ``local-pyroscope``, the Prometheus datasource named after the Azure Monitor workspace; the
#: procedure lets Grafana pick that one's uid, the stack fixes it so the dashboard and consumers can name it).
SINGLE_CLUSTER_NAMES = {
    "managedPrivateEndpointName": "pyroscope-mpe",
    "pyroscopeDatasourceUid": "local-pyroscope",
    "pyroscopeDatasourceName": "local-pyroscope",
    "prometheusDatasourceUid": "azure-monitor-prometheus",
}


def derived_names(config: StackConfig, cluster_id: str) -> dict[str, str]:
    """The names in Grafana that an empty key derives (config key -> value): :data:`SINGLE_CLUSTER_NAMES`
    and the Prometheus datasource named after the workspace, or with ``multiCluster`` :func:`cluster_names`
    of the cluster."""
    if config.multi_cluster:
        return cluster_names(config.cluster_name, cluster_id)
    return {**SINGLE_CLUSTER_NAMES, "prometheusDatasourceName": config.monitor_workspace_name}


#: The PLS name of a stack whose PLS cannot meet another cluster's (the published procedure's): in the node resource
#: group, which belongs to one cluster.
SINGLE_CLUSTER_PLS_NAME = "pyroscope-pls"


def derived_private_link_service_name(config: StackConfig, cluster_id: str) -> str:
    """The PLS name an empty ``privateLinkServiceName`` derives. In the cluster's node resource group, which no other
    cluster uses, the procedure's ``pyroscope-pls``. Where PLS of several clusters can meet, with ``multiCluster`` or in
    a ``privateLinkServiceResourceGroup``, ``pyroscope-pls-<12 hex digits>``: a sha256 of the cluster's ARM id (lower-cased),
    distinct per cluster; the cluster's name is left out, so a secret cluster name stays out of an ARM resource name
    and the plain ``privateLinkServiceName`` output (a PLS name is 1-80 characters, so it fits)."""
    if not (config.multi_cluster or config.private_link_service_resource_group):
        return SINGLE_CLUSTER_PLS_NAME
    return f"{SINGLE_CLUSTER_PLS_NAME}-{hashlib.sha256(cluster_id.lower().encode()).hexdigest()[:12]}"


def cluster_names(cluster_name: str, cluster_id: str) -> dict[str, str]:
    """The names a cluster stack uses in a Grafana shared by several clusters (``multiCluster``).

    Deterministic and distinct per cluster: a slug of the cluster name (readable) plus a short sha256 of the
    cluster's ARM id, lower-cased (distinct even for equal names in other resource groups or
    subscriptions). The managed private endpoint name fits Azure's 2-20 characters, letter first; uids fit
    Grafana's 40.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", cluster_name.lower()).strip("-") or "cluster"
    digest = hashlib.sha256(cluster_id.lower().encode()).hexdigest()
    return {
        "managedPrivateEndpointName": f"pyro-{slug[:8].strip('-')}-{digest[:6]}",
        "pyroscopeDatasourceUid": f"pyroscope-{slug[:20].strip('-')}-{digest[:8]}",
        "pyroscopeDatasourceName": f"Pyroscope ({cluster_name})",
        "prometheusDatasourceUid": f"prometheus-{slug[:19].strip('-')}-{digest[:8]}",
        "prometheusDatasourceName": f"Azure Monitor Prometheus ({cluster_name})",
    }
