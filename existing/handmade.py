"""What a run of the published procedure by hand left where the stack's first ``pulumi up`` on a cluster creates: the
namespace ``gadget``, the extension, the Helm release ``pyroscope`` and the managed private endpoint.

Owns :func:`refuse_handmade`. Namespace ``gadget`` is the stack's ledger: the stack applies it before the extension,
the release and the endpoint (each waits for it), annotated ``aks-gpu-observability/stack: <project>/<stack>``
(stack.specs.STACK_ANNOTATION). When it carries this stack's mark, or was applied by pulumi-kubernetes (a
``managedFields`` manager ``pulumi-kubernetes…``: stacks from before the mark), what is there is the stack's own or
imported into it, and nothing more is looked up. Otherwise whatever of the four exists is refused in one line naming
the key and the way out, where pulumi-kubernetes 4.29.0+ ("already exists"), azure-native ("cannot create already
existing resource") or Helm ("cannot re-use a name that is still in use") would stop ``pulumi up`` half way; another
stack's mark is refused too. Lookups: :data:`NAMESPACE_LOOKUP` and :data:`RELEASE_LOOKUP` (kubectl,
:data:`KUBECTL_ENV`, with the cluster's kubeconfig) and existing.taken.LOOKUP (``az resource show``); one that cannot
tell is a warning, and the stack goes on. The table of what may exist: docs/existing-objects.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import urllib.parse
from typing import Callable, Optional

from existing import taken
from stack.specs import NAMESPACE, PYROSCOPE_RELEASE, STACK_ANNOTATION
from stack_config import masking
from stack_config.schema import MANAGED_BY, ConfigError, StackConfig
from steps.azcli import AzError, AzNotInstalled, rest

#: The environment variable naming the kubectl to run (default ``kubectl`` on PATH).
KUBECTL_ENV = "KUBECTL"
#: pulumi-kubernetes' field manager names: ``pulumi-kubernetes-<random>`` with server-side apply, ``pulumi-kubernetes``
#: without (provider/pkg/provider/provider.go ``fieldManagerName``).
PULUMI_MANAGER = "pulumi-kubernetes"


class KubectlError(Exception):
    """kubectl could not answer: not installed, timed out, or failed (``last_line`` says why)."""

    def __init__(self, last_line: str) -> None:
        super().__init__(last_line)
        self.last_line = last_line


def kubectl(kubeconfig: str, *args: str) -> str:
    """``kubectl <args>`` against the cluster ``kubeconfig`` (text: written to a private temporary file, never
    logged) and its stdout; KubectlError when it cannot answer."""
    with tempfile.TemporaryDirectory(prefix="aks-gpu-obs-") as folder:
        path = os.path.join(folder, "kubeconfig")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w", encoding="utf-8") as handle:
            handle.write(kubeconfig)
        command = [os.environ.get(KUBECTL_ENV) or "kubectl", "--request-timeout=30s", *args]
        try:
            done = subprocess.run(command, env={**os.environ, "KUBECONFIG": path}, capture_output=True, text=True,
                                  timeout=120)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise KubectlError(f"kubectl did not run ({error})") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise KubectlError(lines[-1][:300] if lines else f"kubectl exited {done.returncode}")
    return done.stdout


def _namespace(kubeconfig: str) -> Optional[dict]:
    """The metadata of namespace ``gadget``, managedFields included, or None when there is none."""
    text = kubectl(kubeconfig, "get", "namespace", NAMESPACE, "--ignore-not-found", "--show-managed-fields",
                   "--output", "json")
    return (json.loads(text).get("metadata") or {}) if text.strip() else None


def _releases(kubeconfig: str, release: str) -> list[str]:
    """The records of Helm release ``release`` in namespace ``gadget`` (Helm's storage: Secrets labelled
    ``owner=helm,name=<release>``)."""
    text = kubectl(kubeconfig, "get", "secrets", "--namespace", NAMESPACE, "--selector",
                   f"owner=helm,name={release}", "--output", "name")
    return text.split()


def _datasource_uid(endpoint: str, name: str) -> Optional[str]:
    """The uid of Grafana's datasource named ``name`` (``GET /api/datasources/name/{name}``, as the datasource step
    reads it), or None when there is none."""
    try:
        found = rest("get", f"{endpoint}/api/datasources/name/{urllib.parse.quote(name, safe='')}")
    except AzError as error:
        if error.kind == "not_found":
            return None
        raise
    return str(found.get("uid")) if isinstance(found, dict) and found.get("uid") else None


#: ``kubeconfig -> namespace gadget's metadata, or None``; the offline plan sets its canned world's.
NAMESPACE_LOOKUP: Callable[[str], Optional[dict]] = _namespace
#: ``kubeconfig, release -> its Helm records in gadget``; the offline plan sets its canned world's.
RELEASE_LOOKUP: Callable[[str, str], list[str]] = _releases
#: ``Grafana endpoint, datasource name -> its uid, or None``; the offline plan sets its canned world's.
DATASOURCE_LOOKUP: Callable[[str, str], Optional[str]] = _datasource_uid


def ours(metadata: dict, mark: str) -> bool:
    """Whether namespace metadata says the stack ``mark`` (stack.specs.stack_mark) made the cluster side: its
    annotation is ``mark``, or it has none and pulumi-kubernetes applied it. ConfigError when another stack's mark is
    on it."""
    owner = (metadata.get("annotations") or {}).get(STACK_ANNOTATION)
    if owner and owner != mark:
        raise ConfigError("clusterName", f"namespace {NAMESPACE} of this cluster is stack {owner}'s "
                                         f"({STACK_ANNOTATION} annotation), and a cluster takes one stack; if this "
                                         "stack was renamed from it: kubectl annotate --overwrite namespace "
                                         f"{NAMESPACE} {STACK_ANNOTATION}={mark}")
    return owner == mark or any((entry.get("manager") or "").startswith(PULUMI_MANAGER)
                                for entry in metadata.get("managedFields") or [])


def _cannot_tell(what: str, why: str) -> None:
    masking.warn(f"could not tell whether a run by hand left {what} ({why}); the stack goes on")


def refuse_handmade(cfg: StackConfig, kubeconfig: str, cluster_id: str, subscription_id: str, mark: str,
                    grafana_endpoint: str = "") -> None:
    """Raise ConfigError, in one line naming all it found and the commands that delete them, when namespace ``gadget``
    does not say the stack ``mark`` made the cluster side and the extension, the Helm release, the managed private
    endpoint or the namespace already exists (module docstring). The key is the first found's: ``extensionName``,
    ``clusterName`` (the release, the namespace), ``managedPrivateEndpointName``."""
    try:
        metadata = NAMESPACE_LOOKUP(kubeconfig)
    except KubectlError as error:
        masking.warn(f"could not read namespace {NAMESPACE} ({error.last_line}), so the checks for what a run by "
                        "hand left (extension, Helm release, managed private endpoint) are skipped and the stack "
                        "goes on; kubectl comes with az aks install-cli (docs/existing-objects.md)")
        return
    if metadata is not None and ours(metadata, mark):
        return
    found: list[tuple[str, str, str]] = []  # (config key, what, the command that deletes it)
    extension = f"{cluster_id}/providers/Microsoft.KubernetesConfiguration/extensions/{cfg.extension_name}"
    if _exists(extension):
        found.append(("extensionName", f"extension {extension}",
                      f"az k8s-extension delete --cluster-type managedClusters --cluster-name {cfg.cluster_name} "
                      f"--resource-group {cfg.cluster_resource_group} --name {cfg.extension_name}"))
    context = (f"the helm and kubectl ones on the cluster's context: az aks get-credentials --resource-group "
               f"{cfg.cluster_resource_group} --name {cfg.cluster_name}")
    if metadata is not None and _releases_of(kubeconfig):
        found.append(("clusterName", f"Helm release {PYROSCOPE_RELEASE} in namespace {NAMESPACE}",
                      f"helm uninstall {PYROSCOPE_RELEASE} --namespace {NAMESPACE}"))
    grafana = (f"/subscriptions/{subscription_id}/resourceGroups/{cfg.grafana_resource_group}/providers/"
               f"Microsoft.Dashboard/grafana/{cfg.grafana_name}")
    endpoint = f"{grafana}/managedPrivateEndpoints/{cfg.managed_private_endpoint_name}"
    delete_endpoint = (f"az grafana mpe delete --workspace-name {cfg.grafana_name} --resource-group "
                       f"{cfg.grafana_resource_group} --name {cfg.managed_private_endpoint_name}")
    tags = _tags(endpoint)
    key, value = MANAGED_BY
    if tags is not None and tags.get(key) == value:
        raise ConfigError("managedPrivateEndpointName", f"{endpoint} already exists and another stack of this project "
                                                        "made it (for another cluster?): set "
                                                        "managedPrivateEndpointName to a free name, or multiCluster "
                                                        f"to true, or delete it if nothing uses it ({delete_endpoint})")
    if tags is not None:
        found.append(("managedPrivateEndpointName", f"managed private endpoint {endpoint} (no {key}={value} tag)",
                      delete_endpoint))
    if metadata is not None:  # last: deleting it takes what is in it, and the stack's create refuses it
        found.append(("clusterName", f"namespace {NAMESPACE} (no {STACK_ANNOTATION}={mark} annotation; "
                                     "pulumi-kubernetes creates nothing that exists)",
                      f"kubectl delete namespace {NAMESPACE}, which deletes all in it, Pyroscope's volumes and "
                      f"profiles too: kubectl get pvc,all --namespace {NAMESPACE} shows them"))
    keep = _datasources_by_hand(cfg, grafana_endpoint) if grafana_endpoint else []
    if found or keep:
        one = len(found) == 1
        uids = (f"Grafana does not change a datasource's uid, so for {', '.join(what for _, what, _ in keep)} keep "
                f"the uid ({'; '.join(c for *_, c in keep)}) or rename or delete it in Grafana") if keep else ""
        if not found:  # only datasources: nothing to delete
            raise ConfigError(keep[0][0], f"{uids} (docs/adopting.md)")
        raise ConfigError(found[0][0], f"{', '.join(what for _, what, _ in found)} already "
                                       f"{'exists' if one else 'exist'} and this stack did not make "
                                       f"{'it' if one else 'them'} (a run by hand?): bring "
                                       f"{'it' if one else 'them'} under the stack (docs/adopting.md), or delete "
                                       f"{'it' if one else 'them'} ({'; '.join(c for *_, c in found)}"
                                       f"{'; ' + context if metadata is not None else ''}), and the stack makes its "
                                       "own" + (f"; {uids}" if keep else ""))


def _datasources_by_hand(cfg: StackConfig, endpoint: str) -> list[tuple[str, str, str]]:
    """(uid config key, what, the `pulumi config set` that keeps it) of each datasource of the stack's names that
    Grafana holds under another uid: the datasource step would stop there (steps/grafana_datasource.py), after what
    came before it."""
    out = []
    for key, name, uid in (("prometheusDatasourceUid", cfg.prometheus_datasource_name, cfg.prometheus_datasource_uid),
                           ("pyroscopeDatasourceUid", cfg.pyroscope_datasource_name, cfg.pyroscope_datasource_uid)):
        try:
            held = DATASOURCE_LOOKUP(endpoint, name)
        except (AzError, AzNotInstalled) as error:
            _cannot_tell(f"Grafana datasource {name}", error.last_line)
            continue
        if held is not None and held != uid:
            out.append((key, f"datasource '{name}' under uid '{held}' (not '{uid}')",
                        f"pulumi config set {key} {held}"))
    return out


def _releases_of(kubeconfig: str) -> list[str]:
    """:data:`RELEASE_LOOKUP` of Pyroscope's release, or none (with a warning) when kubectl cannot tell."""
    try:
        return RELEASE_LOOKUP(kubeconfig, PYROSCOPE_RELEASE)
    except KubectlError as error:
        _cannot_tell(f"Helm release {PYROSCOPE_RELEASE}", error.last_line)
        return []


def _tags(resource_id: str) -> Optional[dict]:
    """existing.taken.LOOKUP, or None (with a warning) when az cannot tell."""
    try:
        return taken.LOOKUP(resource_id)
    except (AzError, AzNotInstalled) as error:
        _cannot_tell(resource_id, error.last_line)
        return None


def _exists(resource_id: str) -> bool:
    return _tags(resource_id) is not None
