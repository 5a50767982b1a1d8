"""The replacement model: which input changes replace a resource, and in which order the engine runs it.

Owns: :class:`Rule` per resource type the stack uses (:data:`RULES`: azure-native's path parameters and create-only
properties, pulumi-kubernetes' ``forceNewFields`` and provider ``DiffConfig``, pulumi-command's ``triggers``) and
the engine's ordering rules (``--replace``, ``replaceWith``, a replaced provider; the ``deleteBeforeReplace``
option over the provider's wish). SIMULATED from the engine's and providers' source; no provider runs here. Input:
old and new inputs of one resource. Output: the replace keys and whether delete-first. Research (files, commits,
REST specs): docs/decisions/offline-replacement.md. Upstream:
https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/step_generator.go
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import yaml

ENGINE = "pulumi/pulumi v3.230.0 pkg/resource/deploy/step_generator.go"
AZURE_NATIVE = "pulumi-azure-native provider/pkg/provider/diff.go, provider.go (SDK 3.29.0)"
KUBERNETES = "pulumi-kubernetes provider/pkg/provider/helm_release.go, provider.go at 94977969d (SDK 4.34.2)"
COMMAND = "pulumi-command v1.2.1 provider/pkg/provider/common/inputs.go (triggers: replaceOnChanges)"

_PATH = "a path parameter of the ARM PUT"
_CREATE_ONLY = "create-only in the REST spec (x-ms-mutability read, create)"


@dataclass(frozen=True)
class ConfigDiff:
    """A provider resource's ``DiffConfig`` verdict: ``replace_keys`` (input key -> why it replaces)."""

    replace_keys: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    """How one resource type's provider diffs it.

    ``replace_on``: top-level input key (or dotted path) -> why a change of it forces a replacement.
    ``delete_first``: the provider's own diff asks delete-before-replace when it asks for a replacement.
    ``config_diff``: for provider resources, ``(old inputs, new inputs, old fingerprints, new fingerprints) ->
    ConfigDiff`` (their diff is ``DiffConfig``). ``source``: the provider file and version read. ``whole``: key ->
    why a value that is not an object there (unknown: what the engine passes for an input that comes from a replaced
    resource) forces a replacement, though a change inside it may not.
    """

    type: str
    replace_on: Mapping[str, str]
    delete_first: bool
    source: str
    config_diff: Optional[Callable[[dict, dict, dict, dict], ConfigDiff]] = None
    whole: Mapping[str, str] = field(default_factory=dict)

    def forces(self, path: str) -> Optional[str]:
        """Why a change at ``path`` (``key``, ``key.sub``, ``key[0]``) forces a replacement, or None."""
        if path in self.replace_on:
            return self.replace_on[path]
        if path in self.whole:
            return self.whole[path]
        top = path.split(".", 1)[0].split("[", 1)[0]
        return self.replace_on.get(top)


def _azure(type_: str, path: tuple[str, ...], create_only: tuple[str, ...] = (), extra: Mapping[str, str] = ()) -> Rule:
    why = {key: _PATH for key in path}
    why.update({key: _CREATE_ONLY for key in create_only})
    why.update(dict(extra))
    return Rule(type_, why, True, AZURE_NATIVE)


def active_cluster(kubeconfig: str) -> Optional[dict]:
    """The cluster entry the kubeconfig's current context points at (pulumi-kubernetes
    ``getActiveClusterFromConfig``), or None when there is none or the text is not a kubeconfig."""
    try:
        document = yaml.safe_load(kubeconfig)
    except yaml.YAMLError:
        return None
    if not isinstance(document, dict):
        return None
    contexts = {c.get("name"): c.get("context") or {} for c in document.get("contexts") or []}
    clusters = {c.get("name"): c.get("cluster") for c in document.get("clusters") or []}
    context = contexts.get(document.get("current-context"))
    return clusters.get(context.get("cluster")) if context else None


#: Where the fingerprint key lives: a directory (tests point it at a temporary one); default
#: ``$XDG_CACHE_HOME/aks-gpu-observability`` (``~/.cache/aks-gpu-observability``), the XDG Base Directory
#: Specification's place for non-essential per-user data.
KEY_DIR_ENV = "AKS_GPU_OBS_FINGERPRINT_DIR"
KEY_FILE = "fingerprint.key"


def _key_path() -> Path:
    folder = os.environ.get(KEY_DIR_ENV)
    if not folder:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(cache, "aks-gpu-observability")
    return Path(folder) / KEY_FILE


@functools.lru_cache(maxsize=None)
def _key_at(path: Path) -> bytes:
    """The 32-byte key at ``path``, created on first use (random, mode 0600, never written anywhere else). Two
    processes that create it at once agree: the first ``O_EXCL`` create wins, the other reads it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return _key_at.__wrapped__(path)
    else:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_hex(32).encode())
    for _ in range(50):  # a concurrent creator may not have written it yet
        key = path.read_bytes().strip()
        if len(key) == 64:
            return key
        time.sleep(0.02)
    raise RuntimeError(f"{path}: not a fingerprint key (64 hex digits); delete it to make a new one")


def fingerprint_key() -> bytes:
    """This machine's fingerprint key (:data:`KEY_DIR_ENV`)."""
    return _key_at(_key_path())


def fingerprint_key_id() -> str:
    """A short id of :func:`fingerprint_key` for the plan JSON (``secretFingerprintKey``): plans with the same id
    were fingerprinted with the same key and compare; the id (an HMAC of a constant) tells nothing of the key."""
    return hmac.new(fingerprint_key(), b"aks-gpu-observability key id", hashlib.sha256).hexdigest()[:8]


def fingerprint(value: Any) -> str:
    """HMAC-SHA256 (first 16 hex digits) of a value's sorted JSON under this machine's :func:`fingerprint_key`.
    Keyed, so that a plan shared beyond the machine (a pull request's artifact or comment) cannot be tested against
    guessed values offline: an unkeyed hash of a low-entropy secret is brute-forced from the hash alone (RFC 2104
    for HMAC; Python's ``hmac`` module). Plans from different machines therefore never compare
    (offline/diff.py treats a base plan with another key id as one without fingerprints)."""
    return hmac.new(fingerprint_key(), json.dumps(value, sort_keys=True).encode(), hashlib.sha256).hexdigest()[:16]


def secret_parts(type_: str, path: str, value: Any) -> dict[str, str]:
    """Fingerprints of the parts of a secret input that a provider's diff looks at on their own:
    ``{"<path>#<part>": fingerprint}``. The Kubernetes provider replaces itself only when the kubeconfig's
    active cluster changes, so that part gets its own fingerprint."""
    if type_ == "pulumi:providers:kubernetes" and path == "kubeconfig" and isinstance(value, str):
        return {f"{path}#activeCluster": fingerprint(active_cluster(value))}
    return {}


def _kubernetes_config_diff(old: dict, new: dict, old_fp: dict, new_fp: dict) -> ConfigDiff:
    """pulumi-kubernetes ``DiffConfig`` (provider.go at 94977969d): replace when kubeconfig/context/cluster is
    unknown, when the active cluster changed, or when renderYamlToDirectory changed."""
    why: dict[str, str] = {}
    for key in ("kubeconfig", "context", "cluster"):
        if new.get(key) == "[unknown]":
            why[key] = f"{key} is unknown during preview; DiffConfig replaces the provider conservatively"
    part = "kubeconfig#activeCluster"
    if "kubeconfig" not in why and old_fp.get(part) and new_fp.get(part) and old_fp[part] != new_fp[part]:
        why["kubeconfig"] = "the kubeconfig's active cluster (current context -> cluster entry) changed"
    if old.get("renderYamlToDirectory") != new.get("renderYamlToDirectory"):
        why["renderYamlToDirectory"] = "renderYamlToDirectory changed: every manifest is replaced"
    return ConfigDiff(why)


def _never_replaced(old: dict, new: dict, old_fp: dict, new_fp: dict) -> ConfigDiff:
    """azure-native ``DiffConfig`` returns no changes at all; pulumi-command's (go-provider default) none that
    replace."""
    return ConfigDiff()


_COMMAND_WHY = "triggers are replaceOnChanges"
#: pulumi-kubernetes' immutable fields per kind: ``provider/pkg/provider/diff.go`` ``forceNewProperties`` at 94977969d.
_KUBERNETES_DIFF = "pulumi-kubernetes provider/pkg/provider/provider.go (Diff), diff.go at 94977969d"
_FORCE_NEW = "forceNewProperties (diff.go)"
_OBJECT_NAME = {"metadata.name": "an object's name forces a new object (forceNewFields .metadata.name)",
                "metadata.namespace": "an object's namespace forces a new object (forceNewFields .metadata.namespace)"}
#: An unknown ``metadata`` (what calculateDependentReplacements passes when it comes from a replaced resource, such as
#: the Namespace) replaces the object: the JSON merge patch from the live object deletes ``.metadata.name`` (and
#: ``.namespace``), forceNew fields (provider.go Diff at v4.25.0; its canonicalNamespace cannot set a namespace on a
#: value that is not an object). So the claims in a replaced namespace are replaced. A claim's unknown ``spec`` too
#: (``.spec.accessModes`` and ``.spec.storageClassName`` deleted); a Service's or NetworkPolicy's is an update.
_WHOLE_METADATA = {"metadata": "an unknown metadata: the patch deletes .metadata.name and .metadata.namespace, "
                               "forceNew fields (Diff)"}
_WHOLE_CLAIM = {**_WHOLE_METADATA, "spec": "an unknown spec: the patch deletes .spec.accessModes and "
                                           ".spec.storageClassName, forceNew fields (Diff)"}

#: type token -> Rule, for every type this stack registers.
RULES: dict[str, Rule] = {
    rule.type: rule
    for rule in (
        _azure("azure-native:kubernetesconfiguration:Extension",
               ("resourceGroupName", "clusterRp", "clusterResourceName", "clusterName", "extensionName")),
        _azure("azure-native:dashboard:ManagedPrivateEndpoint",
               ("resourceGroupName", "workspaceName", "managedPrivateEndpointName"),
               ("location", "privateLinkResourceId", "privateLinkResourceRegion", "groupIds", "requestMessage",
                "privateLinkServiceUrl")),
        _azure("azure-native:authorization:RoleAssignment", ("scope", "roleAssignmentName"),
               extra={"principalId": "listed in azure-native's forceNewMap (gen/replacement.go)"}),
        _azure("azure-native:dashboard:Grafana", ("resourceGroupName", "workspaceName"), ("location",)),
        _azure("azure-native:monitor:AzureMonitorWorkspace", ("resourceGroupName", "azureMonitorWorkspaceName"),
               ("location",)),
        # Microservices mode's storage (components/pyroscope_storage.py): a tracked resource's location is create-only
        # (azure-rest-api-specs common-types resource-management v3 types.json TrackedResource.location,
        # x-ms-mutability read and create).
        _azure("azure-native:storage:StorageAccount", ("resourceGroupName", "accountName"), ("location",)),
        _azure("azure-native:storage:BlobContainer", ("resourceGroupName", "accountName", "containerName")),
        _azure("azure-native:managedidentity:UserAssignedIdentity", ("resourceGroupName", "resourceName"),
               ("location",)),
        _azure("azure-native:managedidentity:FederatedIdentityCredential",
               ("resourceGroupName", "resourceName", "federatedIdentityCredentialResourceName")),
        Rule("kubernetes:helm.sh/v3:Release",
             {"name": "a Release's name forces a new release (forceNewFields .name)",
              "namespace": "a Release's namespace forces a new release (forceNewFields .namespace)"},
             False, KUBERNETES),
        # A Namespace is replaced only when its name changes (Diff: forceNewFields .metadata.name), and then the
        # provider asks create-first: its delete-first needs the name to stay (deleteBeforeReplace requires
        # newInputs.GetName() == the old name). The stack sets the option: a --replace or replace_with
        # replacement keeps the name (components/gadget_namespace.py).
        Rule("kubernetes:core/v1:Namespace",
             {"metadata.name": "an object's name forces a new object (forceNewFields .metadata.name)"},
             False, "pulumi-kubernetes provider/pkg/provider/provider.go at 010f5d8e (Diff)", whole=_WHOLE_METADATA),
        # Pyroscope's NetworkPolicies: like the Namespace, replaced when the object's name or namespace changes
        # (neither does: both are fixed); the stack sets delete-first for replace_with replacements, which keep the
        # name (components/pyroscope.py).
        Rule("kubernetes:networking.k8s.io/v1:NetworkPolicy", _OBJECT_NAME, False, _KUBERNETES_DIFF,
             whole=_WHOLE_METADATA),
        # The private link Service and the write path's: also a new clusterIP (never set here); the PLS identity's
        # annotations are the stack's replace_on_changes, not the provider's.
        Rule("kubernetes:core/v1:Service",
             {**_OBJECT_NAME, "spec.clusterIP": f"{_FORCE_NEW} lists .spec.clusterIP for a Service"},
             False, _KUBERNETES_DIFF, whole=_WHOLE_METADATA),
        # Pyroscope's claims: a new class is a new claim (and disk); the size is mutable (expansion).
        Rule("kubernetes:core/v1:PersistentVolumeClaim",
             {**_OBJECT_NAME, **{f"spec.{key}": f"{_FORCE_NEW} lists .spec.{key} for a PersistentVolumeClaim"
                                 for key in ("accessModes", "selector", "storageClassName", "volumeName")}},
             False, _KUBERNETES_DIFF, whole=_WHOLE_CLAIM),
        Rule("command:local:Command", {"triggers": _COMMAND_WHY}, False, COMMAND),
        Rule("pulumi:providers:kubernetes", {}, False, KUBERNETES, _kubernetes_config_diff),
        Rule("pulumi:providers:azure-native", {}, False, AZURE_NATIVE, _never_replaced),
        Rule("pulumi:providers:command", {}, False, COMMAND, _never_replaced),
    )
}

#: What the engine does when the provider's diff is not what asks for the replacement.
ENGINE_REASONS = {
    "replace": f"`pulumi up --replace`: the engine replaces it whatever the inputs, ReplaceKeys [id] ({ENGINE})",
    "replaceWith": "replaceWith: {target} is replaced ({engine})",
    "provider": "provider {target} is replaced and its DiffConfig asks for it: {why} ({engine})",
}


def rule_for(type_: str) -> Optional[Rule]:
    """The Rule for a type token, or None for components, the stack and reads (their diff compares inputs)."""
    return RULES.get(type_)


def order(requested_by_provider: bool, rule: Optional[Rule], option: bool) -> str:
    """``delete-first`` or ``create-first``: the ``deleteBeforeReplace`` option (``option``, true = set) wins;
    otherwise the provider's wish counts only when its own diff asked for the replacement."""
    if option:
        return "delete-first"
    if requested_by_provider and rule is not None and rule.delete_first:
        return "delete-first"
    return "create-first"
