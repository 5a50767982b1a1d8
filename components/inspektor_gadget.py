"""Component InspektorGadget: the AKS cluster extension ``microsoft.inspektorgadget``.

Owns: one azure-native ``kubernetesconfiguration.Extension`` under the managed cluster (what ``az k8s-extension
create --extension-type microsoft.inspektorgadget`` creates), delete-before-replace (its name is fixed by config).
Inputs: :class:`InspektorGadgetArgs` (every value from config; ``namespace``: the stack's Namespace resource, waited
for only to order ``pulumi destroy``, and a ``replace_with``). Outputs: ``extension_id``, ``namespace``. The cluster's
Azure Monitor add-on is checked before (``existing.cluster.lookup_cluster``). Upstream: ARM
``Microsoft.KubernetesConfiguration/extensions``; the namespace's sources: docs/decisions/gadget-namespace.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
from pulumi_azure_native import kubernetesconfiguration

from stack.recovery import already_exists_hooks
from stack.specs import NAMESPACE  # the extension's release namespace; Pyroscope's too

TYPE = "aks-gpu-observability:index:InspektorGadget"
EXTENSION_TYPE = "microsoft.inspektorgadget"


def extension_settings(gpu_observability: bool, azure_monitor: bool) -> dict[str, str]:
    """The extension's ``configurationSettings`` (string values, keys sorted for stable diffs)."""
    settings = {
        "azureMonitor.enabled": str(azure_monitor).lower(),
        "gpuObservability.enabled": str(gpu_observability).lower(),
    }
    return dict(sorted(settings.items()))


@dataclass(frozen=True)
class InspektorGadgetArgs:
    """Inputs of :class:`InspektorGadget`.

    ``version``: empty follows ``release_train`` with minor-version auto-upgrade on; a pinned version
    turns auto-upgrade off (ARM applies a release train's upgrades only with auto-upgrade on). The train is
    sent either way: azure-native would otherwise send its default ``Stable``, and a pinned preview
    version is looked up in the preview train.
    ``timeout_seconds`` bounds create, update and delete (Pulumi customTimeouts).
    ``namespace``: the stack's ``gadget`` Namespace resource (None: the extension makes its own, as in the
    published procedure), a ``depends_on`` and ``replace_with`` of the extension.
    """

    cluster_name: pulumi.Input[str]
    cluster_resource_group: pulumi.Input[str]
    extension_name: str
    release_train: str
    version: str
    gpu_observability: bool
    azure_monitor: bool
    timeout_seconds: int
    namespace: Optional[pulumi.Resource] = None


class InspektorGadget(pulumi.ComponentResource):
    """The Inspektor Gadget extension on an existing AKS cluster.

    Outputs: ``extension_id`` (ARM id of the extension), ``namespace`` (``gadget``).
    """

    extension: kubernetesconfiguration.Extension
    extension_id: pulumi.Output[str]
    namespace: pulumi.Output[str]

    def __init__(
        self, name: str, args: InspektorGadgetArgs, opts: Optional[pulumi.ResourceOptions] = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        pinned = args.version != ""
        timeout = f"{args.timeout_seconds}s"
        self.extension = kubernetesconfiguration.Extension(
            f"{name}-extension",
            cluster_rp="Microsoft.ContainerService",
            cluster_resource_name="managedClusters",
            cluster_name=args.cluster_name,
            resource_group_name=args.cluster_resource_group,
            extension_name=args.extension_name,
            extension_type=EXTENSION_TYPE,
            auto_upgrade_minor_version=not pinned,
            release_train=args.release_train,
            version=args.version if pinned else None,
            configuration_settings=extension_settings(args.gpu_observability, args.azure_monitor),
            opts=pulumi.ResourceOptions(
                parent=self,
                hooks=already_exists_hooks(f"{name}-extension"),
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout, delete=timeout),
                delete_before_replace=True,
                # Not read at create (the extension manager uses an existing namespace or makes it): the edge
                # orders `pulumi destroy`, extension (and its in-cluster uninstall) before the namespace.
                depends_on=[args.namespace] if args.namespace else None,
                replace_with=[args.namespace] if args.namespace else None,
            ),
        )
        self.extension_id = self.extension.id
        self.namespace = pulumi.Output.from_input(NAMESPACE)
        self.register_outputs({"extension_id": self.extension_id, "namespace": self.namespace})
