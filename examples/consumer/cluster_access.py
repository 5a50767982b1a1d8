"""The consumer's settings and its way onto the observability stack's cluster.

:func:`settings` reads this stack's config and refuses a missing or malformed key with :class:`InputError`, one
line naming the key, before anything is registered. :func:`cluster_providers` makes the explicit Kubernetes providers
from the referenced stack's ``clusterId`` output: the AKS user kubeconfig (``listClusterUserCredential``, format
exec) asked of that cluster's own subscription through an explicit azure-native provider, its kubelogin exec plugin
rewritten to ``kubeloginMode`` (:func:`kubelogin_kubeconfig`), a secret. Nothing follows the current kubeconfig.
Self-contained, because the example runs from its own folder with its own requirements.txt: the conversion is a copy
of aks-gpu-observability's ``existing/kubeconfig.py`` (Azure/kubelogin v0.2.19 ``convert-kubeconfig``), and a test of
that project holds the two equal. Why: the project's docs/decisions/consumer-example.md.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import Provider as AzureProvider
from pulumi_azure_native import containerservice

#: The project whose outputs this example reads (docs/outputs.md of aks-gpu-observability).
OBSERVABILITY_PROJECT = "aks-gpu-observability"
#: kubelogin's login modes, as aks-gpu-observability's ``kubeloginMode`` takes them.
LOGIN_MODES = ("azurecli", "workloadidentity", "msi", "azd", "devicecode")
#: ... of which these authenticate without the AKS CLI public client id (``--client-id`` dropped).
_DROP_CLIENT_ID_MODES = {"workloadidentity", "msi", "azd"}
#: ``<org>/<project>/<stack>``: Pulumi's names are letters, digits, ``-``, ``_`` and ``.``.
_STACK = re.compile(r"([\w.-]+)/([\w.-]+)/([\w.-]+)")
#: A namespace name is an RFC 1123 label (Kubernetes ``IsDNS1123Label``).
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_CLUSTER_ID = re.compile(r"/subscriptions/([^/]+)/resourceGroups/([^/]+)"
                         r"/providers/Microsoft\.ContainerService/managedClusters/([^/]+)", re.I)


class InputError(pulumi.RunError):
    """A bad or missing config key (or output of the referenced stack): ``"<key>: <what is expected> (got ...)"``.
    A ``pulumi.RunError``, so `pulumi up` prints the line without a Python traceback."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")


@dataclass(frozen=True)
class Settings:
    observability_stack: str  # <org>/aks-gpu-observability/<stack>
    team_namespace: str
    kubelogin_mode: str


def settings(config: pulumi.Config) -> Settings:
    """This stack's config, every key checked (InputError for the first bad one, in the README's order).
    ``teamNamespace`` and ``kubeloginMode`` fall back to Pulumi.yaml's defaults."""
    stack = config.get("observabilityStack")
    match = _STACK.fullmatch(stack or "")
    if match is None or match.group(2) != OBSERVABILITY_PROJECT:
        shown = "not set" if stack is None else f"got {stack!r}"
        raise InputError("observabilityStack", f"expected the observability stack's fully-qualified name "
                             f"<org>/{OBSERVABILITY_PROJECT}/<stack>, as `pulumi stack ls` of that project shows it "
                             f"({shown}); set it with `pulumi config set observabilityStack <org>/"
                             f"{OBSERVABILITY_PROJECT}/<stack>`")
    namespace = config.get("teamNamespace")
    namespace = "ml-inference" if namespace is None else namespace
    if not _NAMESPACE.fullmatch(namespace):
        raise InputError("teamNamespace", "expected a Kubernetes namespace name: at most 63 lowercase letters, "
                             f"digits and '-', starting and ending with a letter or digit (got {namespace!r})")
    mode = config.get("kubeloginMode")
    mode = "azurecli" if mode is None else mode
    if mode not in LOGIN_MODES:
        raise InputError("kubeloginMode", f"expected one of {', '.join(LOGIN_MODES)} (got {mode!r})")
    return Settings(stack, namespace, mode)


def cluster_of(cluster_id: str) -> tuple[str, str, str]:
    """(subscription, resource group, name) of an AKS cluster's ARM id; InputError naming ``clusterId`` else."""
    match = _CLUSTER_ID.fullmatch(cluster_id or "")
    if match is None:
        raise InputError("clusterId", "expected the referenced stack's output to be an AKS cluster's ARM id, "
                             "/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ContainerService/"
                             f"managedClusters/<name> (got {cluster_id!r})")
    return match.group(1), match.group(2), match.group(3)


def cluster_providers(observability: pulumi.StackReference, mode: str) -> tuple[k8s.Provider, k8s.Provider]:
    """(provider, adopting provider) for the cluster ``observability`` reports in ``clusterId``; both with that
    cluster's user kubeconfig (in kubelogin mode ``mode``) as a secret. The adopting one has
    ``upsertExistingObjects`` (pulumi-kubernetes 4.29.0+): its creates take over an object that already exists."""
    cluster = observability.require_output("clusterId").apply(cluster_of)
    # The lookup runs in the cluster's own subscription, whatever `az`'s default or ARM_SUBSCRIPTION_ID says.
    azure = AzureProvider("observability-subscription", subscription_id=cluster.apply(lambda c: c[0]))
    credentials = containerservice.list_managed_cluster_user_credentials_output(
        resource_group_name=cluster.apply(lambda c: c[1]), resource_name=cluster.apply(lambda c: c[2]),
        format="exec", opts=pulumi.InvokeOutputOptions(provider=azure))
    kubeconfig = pulumi.Output.secret(credentials.apply(lambda answer: _converted(answer, mode)))

    def provider(name: str, upsert: bool) -> k8s.Provider:
        return k8s.Provider(name, kubeconfig=kubeconfig, upsert_existing_objects=True if upsert else None,
                            opts=pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]))

    return provider("observability-cluster", False), provider("observability-cluster-adopt", True)


def _converted(answer, mode: str) -> str:
    if not answer.kubeconfigs:
        raise InputError("clusterId", "listClusterUserCredential returned no kubeconfig for the cluster")
    return kubelogin_kubeconfig(base64.b64decode(answer.kubeconfigs[0].value).decode("utf-8"), mode)


# --- kubelogin convert-kubeconfig (Azure/kubelogin v0.2.19 pkg/internal/converter/convert.go), as the project has it
_EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
_INSTALL_HINT = """
kubelogin is not installed which is required to connect to AAD enabled cluster.

To learn more, please go to https://azure.github.io/kubelogin/
"""


def _flag(args: list, flag: str) -> str:
    """The item right after the first occurrence of ``flag`` (kubelogin's ``getExecArg``)."""
    return next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == flag), "")


def _uses_kubelogin(user: dict) -> bool:
    plugin = user.get("exec")
    return isinstance(plugin, dict) and "kubelogin" in str(plugin.get("command") or "").lower()


def _azurecli_user(user: dict) -> dict:
    """The user ``convert-kubeconfig -l azurecli`` writes: a new exec plugin ``get-token --login azurecli
    --server-id <id> [--cache-dir <dir>]`` (tenant, client id and environment dropped), the old install hint kept."""
    plugin = user.get("exec") if _uses_kubelogin(user) else None
    if plugin is not None:
        args = [str(arg) for arg in plugin.get("args") or []]
    else:  # the legacy azure auth provider
        server = str(((user.get("auth-provider") or {}).get("config") or {}).get("apiserver-id") or "")
        args = ["--server-id", server] if server else []
    server_id = _flag(args, "--server-id")
    if not server_id:
        raise ValueError("--server-id is required")
    cache_dir = _flag(args, "--cache-dir") or _flag(args, "--token-cache-dir")
    converted = {k: v for k, v in user.items() if k not in ("exec", "auth-provider")}
    converted["exec"] = {"apiVersion": _EXEC_API_VERSION, "command": "kubelogin",
                         "args": ["get-token", "--login", "azurecli", "--server-id", server_id]
                         + (["--cache-dir", cache_dir] if cache_dir else []),
                         "installHint": (plugin or {}).get("installHint") or _INSTALL_HINT}
    return converted


def kubelogin_kubeconfig(kubeconfig: str, mode: str) -> str:
    """``kubeconfig`` with its kubelogin exec plugins in login mode ``mode``: ``azurecli`` as ``convert-kubeconfig``
    writes it (:func:`_azurecli_user`, also from the legacy ``azure`` auth provider); the other modes replace
    ``--login`` (and drop ``--client-id`` for workloadidentity, msi and azd). ``devicecode``, and users without
    kubelogin (local accounts), are left as AKS returned them."""
    if mode == "devicecode":
        return kubeconfig
    document = yaml.safe_load(kubeconfig)
    changed = False
    for user in (document or {}).get("users") or []:
        entry = user.get("user") or {}
        legacy = isinstance(entry.get("auth-provider"), dict) and entry["auth-provider"].get("name") == "azure"
        if mode == "azurecli" and (_uses_kubelogin(entry) or legacy):
            user["user"] = _azurecli_user(entry)
            changed = True
        elif _uses_kubelogin(entry):
            args, kept, skip = [str(arg) for arg in entry["exec"].get("args") or []], [], False
            for index, arg in enumerate(args):
                if skip:
                    skip = False
                elif arg in ("--login", "-l") or (arg == "--client-id" and mode in _DROP_CLIENT_ID_MODES):
                    skip = index + 1 < len(args)
                else:
                    kept.append(arg)
            entry["exec"]["args"] = kept + ["--login", mode]
            changed = True
    return yaml.safe_dump(document, sort_keys=False) if changed else kubeconfig
