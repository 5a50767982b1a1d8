"""Component GadgetNamespace: the Kubernetes namespace ``gadget``, owned by the stack, shared by the
Inspektor Gadget extension and the Pyroscope Helm release.

Owns: one ``kubernetes:core/v1:Namespace`` (delete before replace, removed by ``pulumi destroy``). Input:
:class:`GadgetNamespaceArgs` (the name, ``stack.specs.NAMESPACE``) and the Kubernetes provider in ``opts``. Output:
``namespace``, the resource (its ``metadata.name`` for readers, the resource for ``depends_on`` and
``replace_with``). A create fails on a ``gadget`` that exists (pulumi-kubernetes 4.29.0+ on a provider without
``upsertExistingObjects``): one made by hand is imported (docs/adopting.md). Its annotation
``aks-gpu-observability/stack`` names the owning stack (existing/handmade.py). Upstream: pulumi/pulumi-kubernetes
``provider/pkg/await/await.go``; why the stack owns it, and who creates and deletes it in each order:
docs/decisions/gadget-namespace.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from stack.recovery import already_exists_hooks
from stack.specs import NAMESPACE, PATCH_FORCE, STACK_ANNOTATION

TYPE = "aks-gpu-observability:index:GadgetNamespace"


@dataclass(frozen=True)
class GadgetNamespaceArgs:
    """Inputs of :class:`GadgetNamespace`. ``name``: the namespace (default ``gadget``); ``owner``: the value of its
    ``aks-gpu-observability/stack`` annotation (``stack.specs.stack_mark``; empty: none)."""

    name: str = NAMESPACE
    owner: str = ""


class GadgetNamespace(pulumi.ComponentResource):
    """The namespace as a ``kubernetes:core/v1:Namespace``, using the Kubernetes provider passed in ``opts``.

    ``namespace`` is the resource itself: its ``metadata.name`` for a dependent that reads the name (and so waits
    for it), the resource for ``depends_on`` and ``replace_with``. Options: delete before replace, not retained
    on delete (``pulumi destroy`` removes it, as the published cleanup does). No stack-level outputs.
    """

    namespace: k8s.core.v1.Namespace

    def __init__(self, name: str, args: GadgetNamespaceArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            # The owner mark: what existing/handmade.py reads before the next run to tell the stack's own extension,
            # release and endpoint from a run by hand's.
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, annotations={
                **({STACK_ANNOTATION: args.owner} if args.owner else {}), **PATCH_FORCE}),
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True,
                                        hooks=already_exists_hooks(f"{name}-namespace")),
        )
        self.register_outputs({})
