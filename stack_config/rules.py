"""The rule of every config key (:data:`RULES`, one declarative line per key) and the checks across keys.

Owns: the validators (``_regex``, ``_one_of``, ``_between``, the naming, chart, digest, quantity and label rules),
:data:`RULES`, :data:`REQUIRED_UNLESS`, the parsers of the list keys into typed values (:func:`resources`,
:func:`tolerations`, :func:`node_selector`, :func:`tag_map`, :func:`grafana_viewers`), and the checks across keys
(:func:`check_required`, :func:`check_mode_keys`, :func:`check_dashboard_file`). Input: one typed value per key.
Output: None, or the parsed value. Errors: :class:`~stack_config.schema.ConfigError` naming the key (a list key's
item: ``key[i]``) and what is expected. Upstream: Azure's "Naming rules and restrictions for Azure resources";
sources per rule in docs/decisions/config-rules.md.
"""

from __future__ import annotations

import decimal
import hashlib
import ipaddress
import json
import re
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from stack.profile_types import ID as PROFILE_TYPE_ID
from stack.specs import PYROSCOPE_MAJORS, pyroscope_major
from stack_config.schema import MANAGED_BY, ConfigError, StackConfig, program_dir, snake
from steps.grafana_dashboard import RESOURCE_FORM_WAY_OUT, resource_form

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
        raise ConfigError(key, "only an oci:// chart reference takes a digest "
                               "(oci://<registry>/<path>/pyroscope@sha256:"
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


def tag_map(items) -> dict[str, str]:
    """``tags`` items as the Azure tags of every resource that takes them: the items plus ``managed-by``, which no item
    may set (:func:`_tags` refuses one), sorted."""
    tags = dict(str(item).split("=", 1) for item in items)
    tags[MANAGED_BY[0]] = MANAGED_BY[1]
    return dict(sorted(tags.items()))


_GRAFANA_UID = _regex(r"[A-Za-z0-9_-]{1,40}", "expected a Grafana uid: 1-40 letters, digits, '-' or '_'")


_DATASOURCE_NAME = _regex(r"\S(?:[^\x00-\x1f]{0,188}\S)?",
                          "expected a datasource name: 1-190 printable characters, no surrounding spaces")


def _dashboard_source(key: str, value: object) -> None:
    text = str(value)
    if text.startswith("https://") and re.fullmatch(r"https://[A-Za-z0-9.-]+(:\d+)?/\S+", text):
        return
    relative = text and "://" not in text and not text.startswith(("/", "-", "~")) and ".." not in Path(text).parts
    if not relative:
        raise ConfigError(key, f"expected an https:// URL or a file path relative to the project directory (got "
                               f"{value!r})")
    if not (program_dir() / text).is_file():
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
    # Azure Disk sizes are whole GiB (4 GiB to 32 TiB for Standard SSD); the chart's own default is 10Gi, and
    # Pyroscope's
    # high-disk clean-up frees local blocks only below 10 GiB free (pkg/phlaredb/phlaredb.go@v1.15.0
    # DefaultMinFreeDisk).
    match = re.fullmatch(r"([1-9]\d*)(Gi|Ti)", str(value))
    size = int(match.group(1)) * _GI[match.group(2)] if match else 0
    if not 10 <= size <= 32 * 1024:
        raise ConfigError(key, f"expected a Kubernetes quantity in whole Gi or Ti from 10Gi to 32Ti, e.g. 64Gi (got "
                               f"{value!r})")


def _retention(key: str, value: object) -> None:
    # Prometheus model.Duration, as -compactor.blocks-retention-period parses it (pkg/validation/limits.go@v1.15.0);
    # 0 disables the retention.
    if not re.fullmatch(r"0|[1-9]\d*[hdw]", str(value)):
        raise ConfigError(key, f"expected a duration <n>h, <n>d or <n>w such as 14d, or 0 to keep profiles (got "
                               f"{value!r})")


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
_LABEL_KEY = (r"(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
              r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


_LABEL_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"


def _node_selector(key: str, value: object) -> None:
    for item in value:  # type: ignore[union-attr]
        if not re.fullmatch(f"{_LABEL_KEY}={_LABEL_VALUE}", str(item)):
            raise ConfigError(key, f"expected key=value node label items such as agentpool=system (got {item!r})")


def node_selector(items) -> dict[str, str]:
    """``pyroscopeNodeSelector`` items (``key=value``) as a node selector, in the order given."""
    return dict(str(item).split("=", 1) for item in items)


_TOLERATION = re.compile(f"({_LABEL_KEY})(?:=({_LABEL_VALUE}))?(?::(NoSchedule|PreferNoSchedule|NoExecute))?")


def _tolerations(key: str, value: object) -> None:
    for item in value:  # type: ignore[union-attr]
        if not _TOLERATION.fullmatch(str(item)):
            raise ConfigError(key, "expected key=value:Effect, key:Effect, key=value or key items, Effect one of "
                                   f"NoSchedule, PreferNoSchedule, NoExecute, e.g. sku=gpu:NoSchedule (got {item!r})")


def _cidrs(key: str, value: object) -> None:
    for item in value:  # type: ignore[union-attr]
        try:
            network = ipaddress.ip_network(str(item), strict=True)
        except ValueError:
            network = None
        if network is None or "/" not in str(item) or str(network) != str(item):
            raise ConfigError(key, f"expected address ranges in CIDR notation with no host bits, such as "
                                   f"10.224.0.0/16 (got {item!r})")
        if network.prefixlen == 0:
            raise ConfigError(key, f"{item!r} admits every address, which no NetworkPolicy should; name only the "
                                   f"readers "
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


class Viewer(NamedTuple):
    """One ``grafanaViewers`` item: a Microsoft Entra ID object id (lower case, as Entra ID and ARM write it) and the
    principalType its Grafana Viewer assignment sends."""

    object_id: str
    principal_type: str


#: The principal types a ``grafanaViewers`` item may name (the ARM enum's, less ForeignGroup: another tenant's group).
PRINCIPAL_TYPES = ("User", "Group", "ServicePrincipal")
_OBJECT_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _viewer(item: object) -> Optional[Viewer]:
    """An item as a Viewer (a bare object id is a Group: docs/decisions/grafana-viewers.md), None for a bad one."""
    kind, _, object_id = str(item).rpartition(":")
    if not _OBJECT_ID.fullmatch(object_id) or kind not in ("", *PRINCIPAL_TYPES):
        return None
    return Viewer(object_id.lower(), kind or "Group")


def _grafana_viewers(key: str, value: object) -> None:
    # Named by index: a list key's items are set one by one (`pulumi config set --path 'grafanaViewers[1]' ...`).
    seen: dict[str, int] = {}
    for index, item in enumerate(value):  # type: ignore[arg-type]
        viewer = _viewer(item)
        if viewer is None:
            raise ConfigError(f"{key}[{index}]", "expected a Microsoft Entra ID object id (a GUID), optionally as "
                                                 f"User:<id>, Group:<id> or ServicePrincipal:<id> (got {item!r})")
        if viewer.object_id in seen:
            raise ConfigError(f"{key}[{index}]", f"object id {viewer.object_id} is {key}[{seen[viewer.object_id]}] "
                                                 "already; expected each principal once (ARM holds one assignment of "
                                                 "a role per principal and scope)")
        seen[viewer.object_id] = index


def grafana_viewers(items) -> tuple[Viewer, ...]:
    """``grafanaViewers`` items (checked by its rule) as Viewers, in the order given."""
    return tuple(_viewer(item) for item in items)  # type: ignore[misc]


def _storage_class(key: str, value: object) -> None:
    # A StorageClass name is a DNS subdomain (k8s.io/apimachinery IsDNS1123Subdomain): 1-253 characters.
    dns_subdomain = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
    if len(str(value)) > 253 or not re.fullmatch(dns_subdomain, str(value)):
        raise ConfigError(key, f"expected a storage class name: lowercase letters, digits, '-' and '.', such as "
                               f"managed-csi (got {value!r})")


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
        r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?::\d+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+"
        r"|[a-z0-9]+(?:[._-][a-z0-9]+)*",
        "expected an image repository such as grafana/pyroscope or myregistry.azurecr.io/grafana/pyroscope "
        "(lowercase, no tag)",
    ),
    "pyroscopeImageTag": _image_tag,
    "pyroscopeReleaseTimeoutSeconds": _between(60, 3600, "seconds"),
    # Kubernetes' own default (30 s) at least, and chart 1.15.0 leaves a 0 out (docs/decisions/pyroscope-chart.md).
    "pyroscopeTerminationGracePeriodSeconds": _between(30, 3600, "seconds"),
    "pyroscopeStorageClass": _storage_class,
    "pyroscopeStorageSize": _storage_size,
    "pyroscopeRetention": _retention,
    "pyroscopeIngestionRateMb": _between(0, 1024, "MB per second (0: derived)"),
    "pyroscopeIngestionBurstMb": _between(0, 1024, "MB (0: derived)"),
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
    "grafanaViewers": _grafana_viewers,
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


def check_mode_keys(mode: str, resource_items) -> None:
    """Refuse a key the chosen ``pyroscopeMode`` would silently ignore: ``pyroscopeResources`` (``resource_items``, as
    written) sizes the single binary's pod; in microservices mode each component keeps the requests and limits of the
    chart's ``values-micro-services.yaml`` (``components.pyroscope.CHART_COMPONENTS``). ConfigError on
    ``pyroscopeResources``."""
    if mode == "microservices" and resource_items:
        raise ConfigError("pyroscopeResources", "applies to the single binary only; in microservices mode each "
                                                "component takes the chart's values-micro-services.yaml requests and "
                                                "limits (docs/sizing.md); remove it or set pyroscopeMode to "
                                                "single-binary")


def check_pyroscope_majors(chart_version: str, image_tag: str) -> None:
    """Refuse a chart and an image of different Pyroscope majors, a tag whose major cannot be read, or a major the
    stack has no values for. Chart 2.x passes ``-architecture.storage``, which a 1.x image does not know; a 2.x image
    under chart 1.x starts on the v1-v2-dual storage it defaults to. ConfigError on the key of the higher major (the
    one that moved), on ``pyroscopeImageTag`` for an unreadable tag, on ``pyroscopeChartVersion`` for another major.
    """
    chart = pyroscope_major(chart_version)
    if chart not in PYROSCOPE_MAJORS:
        known = ", ".join(map(str, PYROSCOPE_MAJORS))
        raise ConfigError("pyroscopeChartVersion", f"chart {chart_version} is major {chart}; this stack's values are "
                                                   f"written for majors {known} (docs/day-two.md, \"Pyroscope 2\")")
    image = pyroscope_major(image_tag)
    if image is None:
        raise ConfigError("pyroscopeImageTag", f"expected a version tag such as {chart_version} (optionally "
                                               "@sha256:<64 hex>), so that its major can be held against "
                                               f"pyroscopeChartVersion (got {image_tag!r})")
    if image > chart:  # the image moved ahead (or was set by hand): named first
        raise ConfigError("pyroscopeImageTag", f"{image_tag} is Pyroscope {image}.x but pyroscopeChartVersion "
                                               f"{chart_version} is chart {chart}.x; set both to the same major "
                                               "(docs/day-two.md, \"Pyroscope 2\")")
    if chart > image:  # the chart moved ahead (Renovate bumps a chart alone): named first
        raise ConfigError("pyroscopeChartVersion", f"{chart_version} is chart {chart}.x but pyroscopeImageTag "
                                                   f"{image_tag} is Pyroscope {image}.x; set both to the same major "
                                                   "(docs/day-two.md, \"Pyroscope 2\")")


def check_dashboard_file(config: StackConfig) -> None:
    """For a ``dashboardSource`` that is a project file (an https source is checked by the step when it downloads
    it), refuse before anything is deployed what the dashboard step would refuse after every other step ran
    (steps/grafana_dashboard.py): a sha256 other than ``dashboardSha256`` (ConfigError on ``dashboardSha256``),
    content that is not a JSON object (on ``dashboardSource``, with line and column), a ``uid`` other than
    ``dashboardUid`` (on ``dashboardUid``)."""
    source = config.dashboard_source
    if source.startswith("https://"):
        return
    raw = (program_dir() / source).read_bytes()
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
    form = resource_form(dashboard)
    if form:
        raise ConfigError("dashboardSource", f"{source} is a Kubernetes-style resource ({form}), not Grafana's classic "
                                             f"dashboard JSON model; {RESOURCE_FORM_WAY_OUT}")
    if dashboard.get("uid") != config.dashboard_uid:
        raise ConfigError("dashboardUid", f"{source} has uid {json.dumps(dashboard.get('uid'))}, not "
                                          f"{config.dashboard_uid!r}; set dashboardUid to the uid inside the JSON")
