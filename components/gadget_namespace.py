"""Component GadgetNamespace: the Kubernetes namespace ``gadget``, owned by the stack, shared by the
Inspektor Gadget extension and the Pyroscope Helm release.

Why the stack owns it (so the release no longer waits for the extension's whole rollout, ~4 minutes of
DaemonSet on every node, and only for a namespace). Sources, read for this change:

- Extension side. ARM ``Microsoft.KubernetesConfiguration/extensions``, ``ScopeCluster.releaseNamespace``:
  "Namespace where the extension Release must be placed ... If this namespace does not exist, it will be
  created" (Azure/azure-rest-api-specs ``specification/kubernetesconfiguration/resource-manager/
  Microsoft.KubernetesConfiguration/stable/2023-05-01/extensions.json`` at 04b1b8e1, the API version
  azure-native 3.29 uses). So the extension manager installs into an existing namespace; it does not need to
  make it. Its install is a Helm release (Azure Arc "Cluster extensions" concept page: the extension feature
  "builds on the packaging components of Helm",
  learn.microsoft.com/azure/azure-arc/kubernetes/conceptual-extensions), and the upstream Inspektor Gadget
  chart renders no Namespace object (inspektor-gadget/inspektor-gadget ``charts/gadget/templates/``: no
  namespace template; ``charts/gadget/README.md.gotmpl`` at 19c88f6b installs with ``--namespace=gadget
  --create-namespace``). Helm's ``--create-namespace`` ignores AlreadyExists (helm/helm
  ``pkg/action/install.go`` at 0014d296, ``if i.CreateNamespace {... !apierrors.IsAlreadyExists(err)``) and
  the namespace is not part of the release's manifest, so an uninstall never deletes it.
- Deleting the extension: "This will cause the Agent to Uninstall the extension from the cluster"
  (``Extensions_Delete``, same spec folder, ``stable/2022-11-01/openapi.json`` at c9dca0e9). An uninstall of a
  Helm release leaves the namespace; the published procedure confirms it, its cleanup runs ``helm uninstall
  pyroscope -n gadget``, ``az k8s-extension delete ... --yes`` and then ``kubectl delete namespace gadget``
  (MicrosoftDocs/azure-aks-docs ``articles/aks/gpu-profiling.md`` at 0382c94e, "Clean up resources", ms.date
  08/25/2026). The Helm release on the cluster may be removed after the ARM resource is gone ("The Azure
  resource representing this extension gets deleted immediately. The Helm release on the cluster ... is only
  deleted when the agents ... can reach out", ``articles/aks/deploy-extensions-az-cli.md`` at 00435f91).
- Release side. pulumi-kubernetes ``helm.v3.Release``: ``createNamespace`` is passed to Helm's install as is,
  and Delete only runs ``action.NewUninstall`` (pulumi/pulumi-kubernetes
  ``provider/pkg/provider/helm_release.go`` at 01799d56995683adc30ed8be5c42157d9a6d3c06, ``helmCreate`` and
  ``Delete``): a release never deletes its namespace either.
- The Namespace resource: with Server-Side Apply (the provider's default; ``enableServerSideApply`` "If
  present and set to false, disable Server-Side Apply mode", pulumi-kubernetes 4.34.2 ``provider.py``) a
  create is a PATCH: "the AlreadyExists error does not occur since we always send a PATCH request during
  creates with SSA enabled. This means that we currently always upsert the object"
  (``provider/pkg/await/await.go`` at 0012b9d2, ``Creation``). So the stack adopts a ``gadget`` namespace the
  extension made earlier (a stack deployed before this component existed, or the published procedure run by
  hand), and creates it otherwise.
- The seed's own order (``gpu-profiling.md`` steps 1 and 2): the extension first, then ``helm install
  pyroscope -n gadget`` without ``--create-namespace``, relying on the extension to have made the namespace.
  That is the only thing the release took from the extension; Pyroscope needs neither the DaemonSet nor the
  extension's Helm release.

Who creates and who deletes ``gadget``, in both orders of arrival:

- namespace first (a new stack): the stack creates it; the extension and the release install into it (the
  extension waits for it only so that ``pulumi destroy`` removes the extension before the namespace);
- extension first (an existing cluster): the namespace resource adopts the extension's namespace (SSA upsert);
- ``pulumi destroy``: the release and the extension go first (both depend on the namespace), the namespace
  last, so nothing is left behind, as the published cleanup does by hand;
- an extension replacement deletes and reinstalls the extension's own release only: the Pyroscope release does
  not depend on the extension any more, and nothing in the extension's uninstall deletes the namespace;
- a namespace replacement (delete first: the name is fixed, and a create-first replacement would upsert the
  same object and then delete it) deletes everything in it, so the extension and the release name the
  namespace in ``replace_with`` and are replaced with it, never left in state while gone from the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from stack.specs import NAMESPACE

TYPE = "aks-gpu-observability:index:GadgetNamespace"


@dataclass(frozen=True)
class GadgetNamespaceArgs:
    """Inputs of :class:`GadgetNamespace`. ``name``: the namespace (default ``gadget``)."""

    name: str = NAMESPACE


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
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name),
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.register_outputs({})
