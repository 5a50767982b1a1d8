"""The cluster's kubeconfig and the explicit Kubernetes provider built from it.

Owns: the kubelogin conversion (:func:`kubelogin_kubeconfig`, :func:`azurecli_exec`, :func:`azurecli_args`),
:func:`cluster_kubeconfig`, :func:`kubeconfig_for` and :func:`kubernetes_provider`. Input: a StackConfig
(``kubeconfigCredentials``, ``kubeloginMode``, ``kubernetesDeleteUnreachable``). Output: the kubeconfig (text, and a
secret Output) and a ``kubernetes`` provider that components receive through ``providers=``. Errors: ValueError for a
kubelogin plugin without ``--server-id``. Upstream: Azure/kubelogin v0.2.19 ``pkg/internal/converter/convert.go``;
the research: docs/decisions/kubeconfig.md.
"""

from __future__ import annotations

import base64
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import containerservice

from stack_config.schema import StackConfig

#: kubelogin's login modes that authenticate without the AKS CLI public client id.
_DROP_CLIENT_ID_MODES = {"workloadidentity", "msi", "azd"}


def azurecli_args(args: list) -> list:
    """The ``kubelogin get-token`` arguments ``kubelogin convert-kubeconfig -l azurecli`` writes for an exec plugin with
    ``args``, as Azure/kubelogin v0.2.19 (``a9b10fbf``) ``pkg/internal/converter/convert.go`` ``Convert`` builds them
    when
    no override flag is given: ``get-token --login azurecli --server-id <id>``, then ``--cache-dir <dir>`` when the
    input has ``--cache-dir`` (or else ``--token-cache-dir``). Everything else is dropped: ``--client-id``,
    ``--environment`` and ``--tenant-id`` too ("tenantID from the input kubeconfig will be disregarded": ``az`` signed
    in with a managed identity refuses ``--tenant``, as in Cloud Shell or on a VM runner). The cases of that file's
    ``convert_test.go`` ("convert from devicecode to azurecli", ``tests/existing/test_kubeconfig.py``) hold it.
    ValueError without
    ``--server-id`` (the converter's "--server-id is required")."""

    def value(flag: str) -> str:  # getExecArg: the item right after the first occurrence of flag
        return next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == flag), "")

    server_id = value("--server-id")
    if not server_id:
        raise ValueError("--server-id is required")
    converted = ["get-token", "--login", "azurecli", "--server-id", server_id]
    cache_dir = value("--cache-dir") or value("--token-cache-dir")
    return converted + (["--cache-dir", cache_dir] if cache_dir else [])


#: Azure/kubelogin v0.2.19 pkg/internal/converter/convert.go: ``execName``, ``execAPIVersion``, ``execInstallHint``.
KUBELOGIN_EXEC_NAME = "kubelogin"
KUBELOGIN_EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
KUBELOGIN_INSTALL_HINT = """
kubelogin is not installed which is required to connect to AAD enabled cluster.

To learn more, please go to https://azure.github.io/kubelogin/
"""


def is_exec_using_kubelogin(user: dict) -> bool:
    """``isExecUsingkubelogin`` (Azure/kubelogin v0.2.19 ``pkg/internal/converter/convert.go``): an exec plugin whose
    command contains "kubelogin", case-insensitively (``strings.Contains(strings.ToLower(cmd), "kubelogin")``), so
    ``/usr/local/bin/kubelogin`` and ``kubelogin.exe`` too."""
    plugin = user.get("exec")
    return isinstance(plugin, dict) and "kubelogin" in str(plugin.get("command") or "").lower()


def is_legacy_azure_auth(user: dict) -> bool:
    """``isLegacyAzureAuth`` (same file): the legacy ``auth-provider`` named ``azure``."""
    provider = user.get("auth-provider")
    return isinstance(provider, dict) and provider.get("name") == "azure"


def azurecli_exec(user: dict) -> dict:
    """The exec plugin ``kubelogin convert-kubeconfig -l azurecli`` (no override flags) writes for ``user``, and the
    user with it, as Azure/kubelogin v0.2.19 ``Convert`` does: a new ``ExecConfig`` with ``command: kubelogin``,
    ``apiVersion: client.authentication.k8s.io/v1beta1``, the arguments of :func:`azurecli_args` and the install hint
    (the existing one kept, "Preserve any existing install hint", else kubelogin's); nothing else of the old plugin
    (``env`` dropped: only ``--azure-config-dir`` would set one); the legacy ``auth-provider`` removed. The server id of
    a
    legacy ``azure`` auth provider is its ``apiserver-id``."""
    plugin = user.get("exec") if is_exec_using_kubelogin(user) else None
    if plugin is not None:
        args = azurecli_args([str(arg) for arg in plugin.get("args") or []])
    else:
        server_id = str(((user.get("auth-provider") or {}).get("config") or {}).get("apiserver-id") or "")
        args = azurecli_args(["--server-id", server_id] if server_id else [])
    exec_config = {"apiVersion": KUBELOGIN_EXEC_API_VERSION, "command": KUBELOGIN_EXEC_NAME, "args": args,
                   "installHint": (plugin or {}).get("installHint") or KUBELOGIN_INSTALL_HINT}
    converted = {k: v for k, v in user.items() if k not in ("exec", "auth-provider")}
    converted["exec"] = exec_config
    return converted


def kubelogin_kubeconfig(kubeconfig: str, mode: str) -> str:
    """Rewrite the kubelogin exec plugin of an AKS user kubeconfig to login mode ``mode``.

    AKS returns Entra ID user kubeconfigs with ``kubelogin get-token ... --login devicecode`` (interactive).
    ``azurecli`` gets exactly the arguments ``kubelogin convert-kubeconfig -l azurecli`` writes
    (:func:`azurecli_args`: no ``--tenant-id``, no ``--client-id``, no ``--environment``). For the other
    non-interactive modes the ``--login`` value is replaced and ``--client-id`` (the AKS CLI public client) dropped;
    ``--server-id``, ``--tenant-id`` and ``--environment`` are kept. A kubelogin exec plugin is one whose command
    contains
    "kubelogin" (:func:`is_exec_using_kubelogin`); ``azurecli`` rewrites the whole plugin as the converter does
    (:func:`azurecli_exec`), also from a legacy ``azure`` auth provider. Mode ``devicecode`` and kubeconfigs without
    either (local accounts, admin credentials) are returned unchanged.
    """
    if mode == "devicecode":
        return kubeconfig
    document = yaml.safe_load(kubeconfig)
    changed = False
    for user in (document or {}).get("users") or []:
        entry = user.get("user") or {}
        if mode == "azurecli" and (is_exec_using_kubelogin(entry) or is_legacy_azure_auth(entry)):
            user["user"] = azurecli_exec(entry)
            changed = True
            continue
        if not is_exec_using_kubelogin(entry):
            continue
        plugin = entry["exec"]
        args = [str(arg) for arg in plugin.get("args") or []]
        rewritten, skip = [], False
        for index, arg in enumerate(args):
            if skip:
                skip = False
                continue
            if arg in ("--login", "-l") or (arg == "--client-id" and mode in _DROP_CLIENT_ID_MODES):
                skip = index + 1 < len(args)
                continue
            rewritten.append(arg)
        plugin["args"] = rewritten + ["--login", mode]
        changed = True
    return yaml.safe_dump(document, sort_keys=False) if changed else kubeconfig


def cluster_kubeconfig(cfg: StackConfig) -> str:
    """The cluster's kubeconfig as text, read before anything is registered (existing/handmade.py reads namespace
    ``gadget`` with it; :func:`kubeconfig_for` wraps it as a secret).

    From ``listClusterUserCredential`` (format ``exec``, kubelogin for Entra ID clusters) or, with
    ``kubeconfigCredentials=admin``, ``listClusterAdminCredential``; the first kubeconfig, base64-decoded, converted
    to ``kubeloginMode`` (:func:`kubelogin_kubeconfig`). One invoke for the lookups and both providers.
    """
    if cfg.kubeconfig_credentials == "admin":
        credentials = containerservice.list_managed_cluster_admin_credentials(
            resource_group_name=cfg.cluster_resource_group, resource_name=cfg.cluster_name
        )
    else:
        credentials = containerservice.list_managed_cluster_user_credentials(
            resource_group_name=cfg.cluster_resource_group, resource_name=cfg.cluster_name, format="exec"
        )
    return kubelogin_kubeconfig(base64.b64decode(credentials.kubeconfigs[0].value).decode("utf-8"),
                                cfg.kubelogin_mode)


def kubeconfig_for(cfg: StackConfig, text: Optional[str] = None) -> pulumi.Output[str]:
    """The cluster's kubeconfig as a secret Output[str]: ``text``, or :func:`cluster_kubeconfig`'s. Known during
    preview (the invoke's inputs are plain config values), so the provider is not needlessly replaced
    (pulumi-kubernetes replaces a provider whose kubeconfig is unknown).
    """
    return pulumi.Output.secret(text if text is not None else cluster_kubeconfig(cfg))


def kubernetes_provider(name: str, cfg: StackConfig, kubeconfig: Optional[pulumi.Output] = None,
                        upsert: bool = False, opts: Optional[pulumi.ResourceOptions] = None) -> k8s.Provider:
    """The explicit Kubernetes provider for the cluster; its ``kubeconfig`` input is a Pulumi secret
    (:func:`kubeconfig_for` unless given, so two providers share one lookup). ``upsert``: its creates adopt an object
    that already exists (``upsertExistingObjects``, pulumi-kubernetes 4.29.0+), for the claims only
    (components/pyroscope.py). ``opts``: the component's parent and alias, merged.

    ``kubernetesDeleteUnreachable`` true sets the provider's ``deleteUnreachable``. pulumi-kubernetes (commit
    94977969, after v4.32.0; 4.34.2 installed) ``provider/pkg/provider/provider.go``: ``Configure`` marks the
    cluster unreachable when its API server does not answer discovery; then ``Read`` (``pulumi refresh``) answers
    "deleted" for every resource, the Helm release included, when ``deleteUnreachable`` is on (the provider input
    wins over ``PULUMI_K8S_DELETE_UNREACHABLE``), and fails otherwise; ``Delete`` of a Helm release fails on an
    unreachable cluster whatever the option ("can't delete Helm Release with unreachable cluster"), so a destroy
    after the cluster is gone needs the refresh first (docs/teardown.md, "Tearing down what is already gone"). False
    sends
    no value at all: an explicit ``false`` would override the environment variable, the way out for a stack that
    never recorded the option (the SDK reads that variable only while the program runs,
    ``pulumi_kubernetes/provider.py``).
    """
    return k8s.Provider(
        name,
        kubeconfig=kubeconfig if kubeconfig is not None else kubeconfig_for(cfg),
        delete_unreachable=True if cfg.kubernetes_delete_unreachable else None,
        upsert_existing_objects=True if upsert else None,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])),
    )
