"""A stand-in for the cluster side of a deployment: the Kubernetes namespace ``gadget``, the Inspektor Gadget
extension's Helm release and the Pyroscope Helm release. SIMULATED: no Kubernetes API, no Helm, no ARM.

It keeps only what decides who creates and who deletes the namespace, each rule from the source that states it:

- Helm install with ``--create-namespace`` creates the namespace unless it exists and ignores AlreadyExists;
  without it, the namespace must exist (helm/helm ``pkg/action/install.go``: ``if i.CreateNamespace {...
  !apierrors.IsAlreadyExists(err)``). The release record lives in the release namespace (Helm's storage).
- Helm uninstall removes the objects of the release's manifest, which never includes the namespace
  (``--create-namespace`` makes it outside the manifest), and needs the release record.
- An AKS cluster extension is such a Helm release, made by the extension agent in the extension's release
  namespace, created if missing (ARM ``ScopeCluster.releaseNamespace``, Azure/azure-rest-api-specs
  ``.../stable/2023-05-01/extensions.json``); deleting the extension uninstalls it (``Extensions_Delete``).
- A ``kubernetes:core/v1:Namespace`` create fails when the namespace exists: pulumi-kubernetes 4.29.0+ (4.34.2 is
  locked) creates with a plain create unless the provider has ``upsertExistingObjects``, which the stack's ``aks``
  leaves off (pulumi/pulumi-kubernetes ``provider/pkg/await/await.go`` ``Creation`` at v4.29.0 and 94977969:
  "already exists"). Its update is a server-side apply over the one there (a missing one fails, 404): the first one
  after an import takes over the fields ``kubectl`` set (``fixCSAFieldManagers``); its delete removes the namespace
  and everything in it.
- A ``helm.v3.Release`` passes ``createNamespace`` to Helm's install and only uninstalls on delete
  (``provider/pkg/provider/helm_release.go``); its update is a Helm upgrade.
- A release's revisions and their statuses (helm/helm v3.20.2, the Helm pulumi-kubernetes 94977969 links;
  ``pkg/release/status.go``): an install writes revision 1 ``pending-install``, an upgrade a new revision
  ``pending-upgrade``, a rollback ``pending-rollback``, each made ``deployed`` (the previous deployed one
  ``superseded``) when the operation ends. A run killed in between leaves the pending revision (``interrupted``); a
cancelled one, which Helm ends with the
  revision ``failed`` (``install.go`` ``RunWithContext`` -> ``failRelease``), is not modelled.
  An upgrade refuses a release whose last revision is pending ("another operation (install/upgrade/rollback) is in
  progress", ``pkg/action/upgrade.go`` ``prepareUpgrade``; ``upgrade_test.go`` ``TestUpgradeRelease_Pending``); an
  install refuses a name with any revision (``install.go`` ``availableName``); a rollback checks no status and writes a
  new deployed revision from the previous one, or fails "release has no N version" (``rollback.go``
  ``prepareRollback``; ``cmd/helm/rollback_test.go`` ``TestRollbackCmd``); an uninstall takes any status
  (``uninstall.go``).

:func:`apply` maps a plan resource (engine inputs) to these operations, so tests can run a plan's create and
destroy orders, in every order the dependencies allow, against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
EXTENSION_TYPE = "azure-native:kubernetesconfiguration:Extension"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
#: The Inspektor Gadget extension type's release namespace (its pods run there: ``kubectl get pods -n gadget
#: -l k8s-app=gadget`` in MicrosoftDocs/azure-aks-docs ``articles/aks/gpu-profiling.md``, step 1).
EXTENSION_NAMESPACE = "gadget"
#: What each release puts in its namespace (a token object per release is enough to see it survive or go).
WORKLOADS = {"inspektor-gadget": ("DaemonSet/gadget",), "pyroscope": ("StatefulSet/pyroscope", "Service/pyroscope")}
#: Helm's statuses of an operation under way (``Status.IsPending``).
PENDING = ("pending-install", "pending-upgrade", "pending-rollback")


class ClusterError(Exception):
    """An operation the real API server or Helm would refuse (the message says which and why)."""


@dataclass
class Cluster:
    """Namespaces -> the objects in them; Helm release records (name -> namespace)."""

    namespaces: dict[str, set[str]] = field(default_factory=dict)
    releases: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    #: release -> the status of each revision, oldest first (a release without one counts as one deployed revision)
    history: dict[str, list[str]] = field(default_factory=dict)

    # --- Kubernetes API ------------------------------------------------------------------------------------
    def create_namespace(self, name: str) -> None:
        """pulumi-kubernetes 4.29.0+'s create of a Namespace on a provider without ``upsertExistingObjects``."""
        if name in self.namespaces:
            raise ClusterError(f'namespaces "{name}" already exists (pulumi-kubernetes Create)')
        self.log.append(f"create namespace {name}")
        self.namespaces[name] = set()

    def apply_namespace(self, name: str) -> None:
        """pulumi-kubernetes' update of a Namespace: a server-side apply over the one there; a missing one fails (its
        Update reads the object first: ``await.go`` ``Update``, 404)."""
        if name not in self.namespaces:
            raise ClusterError(f'namespaces "{name}" not found (pulumi-kubernetes Update)')
        self.log.append(f"apply namespace {name}")

    def delete_namespace(self, name: str) -> None:
        """Delete a namespace with everything in it (404 is success for a Pulumi delete)."""
        gone = self.namespaces.pop(name, None)
        self.releases = {r: ns for r, ns in self.releases.items() if ns != name}
        self.log.append(f"delete namespace {name} ({len(gone or ())} object(s) with it)")

    # --- Helm ------------------------------------------------------------------------------------------------
    def helm_install(self, release: str, namespace: str, create_namespace: bool, interrupted: bool = False) -> None:
        """``interrupted``: the run is killed while Helm waits; revision 1 stays pending-install."""
        if release in self.releases:
            raise ClusterError(f"helm install {release}: cannot re-use a name that is still in use")
        if namespace not in self.namespaces:
            if not create_namespace:
                raise ClusterError(f'helm install {release}: namespaces "{namespace}" not found')
            self.namespaces[namespace] = set()
        self.namespaces[namespace].update(WORKLOADS[release])
        self.releases[release] = namespace
        self.history[release] = ["pending-install" if interrupted else "deployed"]
        self.log.append(f"helm install {release} -n {namespace}{' (interrupted)' if interrupted else ''}")

    def helm_upgrade(self, release: str, interrupted: bool = False) -> None:
        """``interrupted``: the run is killed while Helm waits; the new revision stays pending-upgrade."""
        if release not in self.releases:
            raise ClusterError(f'helm upgrade {release}: "{release}" has no deployed releases')
        statuses = self.history.setdefault(release, ["deployed"])
        if statuses[-1] in PENDING:
            raise ClusterError(f"helm upgrade {release}: another operation (install/upgrade/rollback) is in progress")
        if interrupted:
            statuses.append("pending-upgrade")
        else:
            statuses[:] = [("superseded" if s == "deployed" else s) for s in statuses] + ["deployed"]
        self.log.append(f"helm upgrade {release}{' (interrupted)' if interrupted else ''}")

    def helm_rollback(self, release: str, revision: int = 0) -> None:
        """``helm rollback RELEASE [REVISION]``: to ``revision``, by default the one before the last."""
        if release not in self.releases:
            raise ClusterError(f"helm rollback {release}: release: not found")
        statuses = self.history.setdefault(release, ["deployed"])
        target = revision or len(statuses) - 1
        if not 1 <= target <= len(statuses):
            raise ClusterError(f"helm rollback {release}: release has no {target} version")
        statuses[:] = [("superseded" if s == "deployed" else s) for s in statuses] + ["deployed"]
        self.log.append(f"helm rollback {release} to {target}")

    def helm_uninstall(self, release: str) -> None:
        namespace = self.releases.pop(release, None)
        if namespace is None:
            raise ClusterError(f"helm uninstall {release}: release: not found")
        self.history.pop(release, None)
        self.namespaces[namespace].difference_update(WORKLOADS[release])
        self.log.append(f"helm uninstall {release} -n {namespace} (namespace kept)")

    def status(self, release: str) -> Optional[str]:
        """What ``helm status`` reports: the last revision's status (None: no such release)."""
        if release not in self.releases:
            return None
        return self.history.get(release, ["deployed"])[-1]

    # --- What the tests look at ---------------------------------------------------------------------------
    def running(self, release: str) -> bool:
        namespace = self.releases.get(release)
        return namespace is not None and set(WORKLOADS[release]) <= self.namespaces.get(namespace, set())

    def empty(self) -> bool:
        return not self.namespaces and not self.releases


def apply(cluster: Cluster, resource, action: str, interrupted: bool = False) -> None:
    """Run the cluster-side effect of creating (``action="create"``), updating (``"update"``) or deleting
    (``"delete"``) a plan resource; resources without one (Azure-only, commands, components, providers) do nothing
    here. ``interrupted``: the run is killed while Helm works on a release (its revision stays pending)."""
    if resource.type == NAMESPACE_TYPE:
        name = resource.inputs["metadata"]["name"]
        if action == "create":
            cluster.create_namespace(name)
        elif action == "update":
            cluster.apply_namespace(name)
        else:
            cluster.delete_namespace(name)
    elif resource.type == EXTENSION_TYPE:
        # The extension agent installs (or uninstalls) the extension's Helm release in its release namespace; an update
        # of its settings is not modelled.
        if action == "create":
            cluster.helm_install("inspektor-gadget", EXTENSION_NAMESPACE, create_namespace=True)
        elif action == "delete":
            cluster.helm_uninstall("inspektor-gadget")
    elif resource.type == RELEASE_TYPE:
        if action == "create":
            cluster.helm_install(resource.inputs["name"], resource.inputs["namespace"],
                                 bool(resource.inputs.get("createNamespace")), interrupted)
        elif action == "update":
            cluster.helm_upgrade(resource.inputs["name"], interrupted)
        else:
            cluster.helm_uninstall(resource.inputs["name"])


def linear_orders(urns: Iterable[str], before: dict[str, set[str]]) -> Iterator[list[str]]:
    """Every order of ``urns`` in which each comes after everything ``before[urn]`` names (among ``urns``):
    the orders in which an engine running independent steps in parallel may finish them."""
    pending = list(urns)

    def extend(done: list[str], left: list[str]) -> Iterator[list[str]]:
        if not left:
            yield done
            return
        for urn in left:
            if before.get(urn, set()) & (set(left) - {urn}):
                continue
            yield from extend(done + [urn], [u for u in left if u != urn])

    yield from extend([], pending)


def cluster_side(plan) -> list:
    """The plan's resources that act on the cluster (namespace, extension, Helm releases)."""
    return [r for r in plan.resources if r.type in (NAMESPACE_TYPE, EXTENSION_TYPE, RELEASE_TYPE)]


def create_edges(plan, resources: list) -> dict[str, set[str]]:
    """urn -> the urns (among ``resources``) it must come after, from the plan's recorded dependencies."""
    urns = {r.urn for r in resources}
    return {r.urn: set(r.dependencies) & urns for r in resources}


def destroy_edges(plan, resources: list) -> dict[str, set[str]]:
    """urn -> the urns it must be deleted after: its dependents (the engine deletes dependents first)."""
    urns = {r.urn for r in resources}
    after: dict[str, set[str]] = {u: set() for u in urns}
    for r in resources:
        for dep in set(r.dependencies) & urns:
            after[dep].add(r.urn)
    return after


def run_orders(plan, existing: Optional[Cluster] = None,
               skip_create: Iterable[str] = ()) -> Iterator[tuple[list, list, Cluster, Cluster]]:
    """For every create order and every destroy order the plan's dependencies allow: a copy of ``existing``
    (default: an empty cluster), the creates, then the deletes. Yields (create order, destroy order, cluster
    after the creates, cluster after the deletes) per combination; raises ClusterError from the first refused
    operation. ``skip_create``: urns already deployed in ``existing`` (an update, not a first create)."""
    resources = cluster_side(plan)
    by_urn = {r.urn: r for r in resources}
    for create in linear_orders([r.urn for r in resources], create_edges(plan, resources)):
        for destroy in linear_orders([r.urn for r in resources], destroy_edges(plan, resources)):
            cluster = Cluster({k: set(v) for k, v in (existing.namespaces if existing else {}).items()},
                              dict(existing.releases) if existing else {})
            for urn in create:
                if urn not in skip_create:
                    apply(cluster, by_urn[urn], "create")
            after_create = Cluster({k: set(v) for k, v in cluster.namespaces.items()}, dict(cluster.releases))
            for urn in destroy:
                apply(cluster, by_urn[urn], "delete")
            yield create, destroy, after_create, cluster


def refusals(plan) -> list[str]:
    """Every message of a refused operation over all create and destroy orders the plan allows, starting from
    an empty cluster ([] when every order goes through)."""
    resources = cluster_side(plan)
    by_urn = {r.urn: r for r in resources}
    messages = []
    for create in linear_orders([r.urn for r in resources], create_edges(plan, resources)):
        for destroy in linear_orders([r.urn for r in resources], destroy_edges(plan, resources)):
            cluster = Cluster()
            try:
                for urn in create:
                    apply(cluster, by_urn[urn], "create")
                for urn in destroy:
                    apply(cluster, by_urn[urn], "delete")
            except ClusterError as error:
                messages.append(str(error))
    return messages
