"""The namespace gadget, owned by the stack: plan-level options, dependencies, create/destroy orders and
replacements, and the cluster stand-in (tests/support/fake_cluster.py, SIMULATED) run in every order of arrival the
plan allows, including a cluster where the extension made the namespace first."""

from __future__ import annotations

import dataclasses

import pytest

from offline.program import Plan, orders
from tests.support import EXTENSION, K8S_PROVIDER, RELEASE, fake_cluster

NAMESPACE = "kubernetes:core/v1:Namespace"


@pytest.fixture(scope="module")
def dev():
    from offline.program import run

    return run("dev")


def replacement_set(plan: Plan, root: str) -> set[str]:
    """The resources a replacement of ``root`` replaces too, as pulumi/pulumi v3.230.0
    ``pkg/resource/deploy/step_generator.go`` decides: those whose ``replaceWith`` names a replaced resource
    (``findResourcesReplacedWith``, and the ReplaceWith check of each registration) and those whose provider is
    replaced (``calculateDependentReplacements``). A plain ``dependsOn`` edge replaces nothing; a property
    dependency replaces only if the provider's diff says so: here a Kubernetes object whose ``metadata`` comes from a
    replaced resource, which pulumi-kubernetes diffs as a new object (offline/replacement.py ``whole``)."""
    replaced, grew = {root}, True
    while grew:
        grew = False
        for r in plan.resources:
            metadata = set((r.property_dependencies or {}).get("metadata", [])) if r.type.startswith("kubernetes:") \
                and r.type != RELEASE else set()
            if r.urn not in replaced and (set(r.replace_with) & replaced or r.provider in replaced
                                          or metadata & replaced):
                replaced.add(r.urn)
                grew = True
    return replaced


def old_design(plan: Plan) -> Plan:
    """The same plan as the stack built it before it owned the namespace: no Namespace resource, the release waiting
    for the extension (whose agent makes the namespace), as the published procedure orders it."""
    extension = plan.one(EXTENSION)
    gone = {r.urn for r in plan.resources
            if r.type == NAMESPACE or r.type == "aks-gpu-observability:index:GadgetNamespace"}
    resources = []
    for r in plan.resources:
        if r.urn in gone:
            continue
        # No reference to the namespace left anywhere: the engine refuses a state that names a missing resource.
        deps = [d for d in r.dependencies if d not in gone]
        if r.type == RELEASE:
            deps.append(extension.urn)
        options = {**r.options, "replaceWith": [u for u in r.options.get("replaceWith") or [] if u not in gone]}
        property_dependencies = {k: [u for u in us if u not in gone] for k, us in r.property_dependencies.items()}
        resources.append(dataclasses.replace(r, dependencies=deps, replace_with=[], options=options,
                                             property_dependencies={k: us for k, us in property_dependencies.items()
                                                                    if us}))
    create, destroy = orders(resources)
    return dataclasses.replace(plan, resources=resources, create_order=create, destroy_order=destroy)


# --- plan level -----------------------------------------------------------------------------------------------
def test_namespace_resource(dev):
    ns = dev.one(NAMESPACE)
    assert ns.name == "gadget-namespace"
    # The owner mark existing/handmade.py reads: <project>/<stack>; forced applies (docs/decisions/field-ownership.md).
    assert ns.inputs["metadata"] == {"name": "gadget", "annotations": {
        "aks-gpu-observability/stack": "aks-gpu-observability/dev", "pulumi.com/patchForce": "true"}}
    assert ns.provider == dev.named("aks").urn  # the stack's provider (aks-claims is the claims' only)
    assert ns.parent == dev.one("aks-gpu-observability:index:GadgetNamespace").urn
    # Fixed name: a create-first replacement would upsert the same object, then delete it.
    assert ns.options["deleteBeforeReplace"] is True
    assert ns.options["retainOnDelete"] is False and ns.options["protect"] is False  # destroy removes it
    assert ns.dependencies == []


def test_kubernetes_provider_keeps_server_side_apply(dev):
    """Server-side apply stays on (an imported namespace is updated by an apply that takes it as it is); the claims'
    provider, the same cluster's, upserts on create (upsertExistingObjects), and only it: a create of the namespace
    never adopts one that exists."""
    providers = {r.name: r for r in dev.by_type(K8S_PROVIDER)}
    assert sorted(providers) == ["aks", "aks-claims"]
    for provider in providers.values():
        assert provider.inputs.get("enableServerSideApply") in (None, True, "true")
    assert providers["aks-claims"].inputs["kubeconfig"] == providers["aks"].inputs["kubeconfig"] == "[secret]"
    assert providers["aks-claims"].inputs["upsertExistingObjects"] == "true"
    assert "upsertExistingObjects" not in providers["aks"].inputs


def test_release_reads_the_namespace_and_not_the_extension(dev):
    release, ns, extension = dev.one(RELEASE), dev.one(NAMESPACE), dev.one(EXTENSION)
    assert release.inputs["namespace"] == "gadget" and release.inputs["createNamespace"] is False
    assert release.property_dependencies["namespace"] == [ns.urn]
    claim = dev.named("pyroscope-data-0")
    assert sorted(release.dependencies) == sorted([ns.urn, claim.urn])  # and the claim its StatefulSet mounts
    assert extension.urn not in release.dependencies
    assert release.replace_with == sorted([ns.urn, claim.urn])  # a new disk is a new release (components/pyroscope.py)


def test_extension_waits_for_the_namespace_only_for_the_destroy_order(dev):
    extension, ns = dev.one(EXTENSION), dev.one(NAMESPACE)
    assert extension.dependencies == [ns.urn]
    assert all(ns.urn not in deps for deps in extension.property_dependencies.values())  # reads nothing from it
    assert extension.replace_with == [ns.urn]


def test_create_order_namespace_first_then_extension_and_release_beside_each_other(dev):
    c = dev.create_order.index
    ns, extension, release = dev.one(NAMESPACE).urn, dev.one(EXTENSION).urn, dev.one(RELEASE).urn
    assert c(ns) < c(extension) and c(ns) < c(release)
    # Neither waits for the other: both orders are possible.
    before = fake_cluster.create_edges(dev, fake_cluster.cluster_side(dev))
    orders_seen = {tuple(o) for o in fake_cluster.linear_orders([ns, extension, release], before)}
    assert orders_seen == {(ns, extension, release), (ns, release, extension)}


def test_destroy_order_namespace_last(dev):
    d = dev.destroy_order.index
    ns, extension, release = dev.one(NAMESPACE).urn, dev.one(EXTENSION).urn, dev.one(RELEASE).urn
    assert d(release) < d(ns) and d(extension) < d(ns)
    wait = next(r for r in dev.resources if r.name == "grafana-private-link-wait-for-pls").urn
    assert d(wait) < d(release)  # the private link chain still goes before the release


def test_an_extension_replacement_touches_neither_the_release_nor_the_namespace(dev):
    replaced = replacement_set(dev, dev.one(EXTENSION).urn)
    assert replaced == {dev.one(EXTENSION).urn}


def test_a_namespace_replacement_replaces_what_lives_in_it(dev):
    replaced = replacement_set(dev, dev.one(NAMESPACE).urn)
    assert {dev.one(EXTENSION).urn, dev.one(RELEASE).urn} <= replaced
    names = {dev.get(u).name for u in replaced}
    # the private link Service, and through the Service the private link (a new PLS)
    assert {"pyroscope-private-link", "pyroscope-network-policy",
            "grafana-private-link-wait-for-pls", "grafana-private-link-mpe", "grafana-private-link-approve-connection",
            "grafana-private-link-refresh", "grafana-private-link-nat-network-policy"} <= names
    # The claims too (Kubernetes deletes them with the namespace), as dependents of its metadata, not by replaceWith:
    # the namespace's delete-first chain deletes what names it there in no fixed order (a claim could go before the
    # release that mounts it); its dependents go after that set.
    assert "pyroscope-data-0" in names
    assert dev.one(NAMESPACE).urn not in dev.named("pyroscope-data-0").options["replaceWith"]


def test_a_release_replacement_leaves_namespace_extension_and_private_link(dev):
    """A reinstalled release leaves the stack's private link Service, its PLS and Grafana's endpoint alone."""
    replaced = replacement_set(dev, dev.one(RELEASE).urn)
    assert replaced == {dev.one(RELEASE).urn}


def test_a_claim_replacement_replaces_the_release_and_only_it(dev):
    """A claim replaced (a new storage class: a new disk) takes the release that mounts it, and nothing else."""
    claim = dev.named("pyroscope-data-0")
    assert replacement_set(dev, claim.urn) == {claim.urn, dev.one(RELEASE).urn}


def test_a_private_link_identity_replacement_replaces_the_private_link_steps_and_not_the_service(dev):
    """A new PLS identity (its name, group or owner Service) is a new PLS: the wait, the approval nonce (a new endpoint,
    a nonce of its own) and the endpoint chain are replaced with it; the Service, the release and the claims stay."""
    identity = dev.named("pyroscope-private-link-identity")
    assert {dev.get(u).name for u in replacement_set(dev, identity.urn)} == {
        "pyroscope-private-link-identity", "grafana-private-link-wait-for-pls", "grafana-private-link-approval-nonce",
        "grafana-private-link-mpe", "grafana-private-link-approve-connection", "grafana-private-link-refresh"}


# --- the cluster stand-in, every order the plan allows ----------------------------------------------------------
def test_namespace_first_every_order_creates_then_destroy_leaves_nothing(dev):
    runs = list(fake_cluster.run_orders(dev))
    assert len(runs) == 2 * 2  # extension/release in either order, deleted in either order
    for create, destroy, after_create, after_destroy in runs:
        assert after_create.running("inspektor-gadget") and after_create.running("pyroscope"), create
        assert set(after_create.namespaces) == {"gadget"}
        assert after_destroy.empty(), (create, destroy, after_destroy.namespaces)


def test_extension_first_the_stack_takes_its_namespace_by_import_and_destroy_leaves_nothing(dev):
    """A cluster set up by the published procedure (or deployed before the stack owned the namespace): the
    extension's agent made gadget. pulumi-kubernetes 4.29.0+ creates no namespace that exists, so docs/adopting.md
    imports it with the extension and the release; destroy then removes everything."""
    before = old_design(dev)
    cluster = deployed(before)
    assert cluster.running("pyroscope") and cluster.running("inspektor-gadget")
    imported = {dev.one(EXTENSION).urn, dev.one(RELEASE).urn, dev.one(NAMESPACE).urn}
    for create, destroy, after_create, after_destroy in fake_cluster.run_orders(dev, existing=cluster,
                                                                                skip_create=imported):
        assert after_create.running("pyroscope") and after_create.running("inspektor-gadget")
        assert after_destroy.empty(), (destroy, after_destroy.namespaces)


def test_extension_first_without_the_import_the_namespace_create_is_refused(dev):
    """The control: the namespace left out of the import, its create fails in every order ("already exists"), which
    existing/handmade.py refuses before anything registers (tests/existing/test_handmade.py).
    pulumi/pulumi-kubernetes#4278: creates are client-side since 4.29.0 and refuse what exists unless the provider has
    ``upsertExistingObjects``, which only the claims' provider has."""
    cluster = deployed(old_design(dev))
    with pytest.raises(fake_cluster.ClusterError, match='namespaces "gadget" already exists'):
        list(fake_cluster.run_orders(dev, existing=cluster, skip_create={dev.one(EXTENSION).urn,
                                                                          dev.one(RELEASE).urn}))


def test_the_old_design_left_the_namespace_behind(dev):
    """The control: before the stack owned the namespace, destroy kept it (the published procedure deletes it
    by hand), and the release could only start after the extension."""
    before = old_design(dev)
    runs = list(fake_cluster.run_orders(before))
    assert {tuple(before.get(u).type for u in create) for create, *_ in runs} == {(EXTENSION, RELEASE)}
    for _, _, _, after_destroy in runs:
        assert after_destroy.namespaces == {"gadget": set()} and not after_destroy.releases


def test_every_order_of_the_plan_goes_through(dev):
    assert fake_cluster.refusals(dev) == []


def test_without_the_edge_to_the_namespace_some_orders_fail(dev):
    """The control for the edge: a release that did not wait for the namespace could start before it (Helm
    refuses), or outlive it on destroy (its record gone with the namespace, so the uninstall fails)."""
    release = dev.one(RELEASE)
    loose = dataclasses.replace(dev, resources=[dataclasses.replace(r, dependencies=[]) if r.urn == release.urn else r
                                                for r in dev.resources])
    messages = set(fake_cluster.refusals(loose))
    assert messages == {'helm install pyroscope: namespaces "gadget" not found',
                        "helm uninstall pyroscope: release: not found"}


def replace(plan: Plan, cluster: fake_cluster.Cluster, root: str) -> None:
    """A delete-before-replace of ``root`` on the stand-in: the replaced set deleted dependents first, then
    created in dependency order (the engine's order for a DBR chain)."""
    replaced = [r for r in fake_cluster.cluster_side(plan) if r.urn in replacement_set(plan, root)]
    for urn in next(fake_cluster.linear_orders([r.urn for r in replaced], fake_cluster.destroy_edges(plan, replaced))):
        fake_cluster.apply(cluster, plan.get(urn), "delete")
    for urn in next(fake_cluster.linear_orders([r.urn for r in replaced], fake_cluster.create_edges(plan, replaced))):
        fake_cluster.apply(cluster, plan.get(urn), "create")


def deployed(plan: Plan) -> fake_cluster.Cluster:
    cluster = fake_cluster.Cluster()
    for urn in plan.create_order:
        fake_cluster.apply(cluster, plan.get(urn), "create")
    return cluster


def test_extension_replacement_keeps_pyroscope_running(dev):
    cluster = deployed(dev)
    replaced = [r for r in fake_cluster.cluster_side(dev) if r.urn in replacement_set(dev, dev.one(EXTENSION).urn)]
    for r in replaced:
        fake_cluster.apply(cluster, r, "delete")
        assert cluster.running("pyroscope")  # while the extension is gone
    for r in replaced:
        fake_cluster.apply(cluster, r, "create")
    assert cluster.running("pyroscope") and cluster.running("inspektor-gadget")
    assert "helm uninstall inspektor-gadget -n gadget (namespace kept)" in cluster.log


def test_namespace_replacement_reinstalls_both_releases(dev):
    cluster = deployed(dev)
    replace(dev, cluster, dev.one(NAMESPACE).urn)
    assert cluster.running("pyroscope") and cluster.running("inspektor-gadget")
    deletes = [line for line in cluster.log if line.startswith(("helm uninstall", "delete namespace"))]
    # uninstalled first, nothing deleted under them
    assert deletes[-1] == "delete namespace gadget (0 object(s) with it)"


def test_without_replace_with_a_namespace_replacement_would_silently_drop_pyroscope(dev):
    """The control for replace_with: the release would stay in state while its objects went with the namespace."""
    release = dev.one(RELEASE)
    bare = dataclasses.replace(dev, resources=[dataclasses.replace(r, replace_with=[]) if r.urn == release.urn else r
                                               for r in dev.resources])
    cluster = deployed(bare)
    replace(bare, cluster, bare.one(NAMESPACE).urn)
    assert not cluster.running("pyroscope") and cluster.running("inspektor-gadget")


@pytest.mark.parametrize("target", ["gadget-namespace", "inspektor-gadget-extension", "pyroscope-release",
                                    "pyroscope-data-0", "pyroscope-private-link",
                                    "pyroscope-private-link-identity"])
def test_replacement_sets_agree_with_the_preview_diff(dev, target):
    """The helper above and offline/diff.py's preview (the lifecycle model) replace the same resources."""
    from offline import diff as plan_diff
    from offline.program import run

    urn = next(r.urn for r in dev.resources if r.name == target)
    diff, _ = plan_diff.preview(dev.to_json(), lambda pending: run("dev", pending=pending), [urn])
    replaced = {s.urn for s in diff.steps if s.op == "replace"}
    assert replaced == {u for u in replacement_set(dev, urn) if dev.get(u).custom}


def test_upgrading_a_stack_of_the_old_design_only_creates_the_namespace(dev):
    """A stack deployed before the namespace was its own: the preview diff creates the namespace (which adopts the
    extension's, test_extension_first_...) and leaves the extension and the release as they are."""
    from offline import diff as plan_diff
    from offline.program import run

    diff, _ = plan_diff.preview(old_design(dev).to_json(), lambda pending: run("dev", pending=pending))
    changed = {s.name: s.op for s in diff.steps if s.op != "same"}
    assert changed == {"gadget": "create", "gadget-namespace": "create"}


def test_a_stack_deployed_before_the_owner_mark_gets_it_in_place_and_nothing_else_moves(dev):
    """The next `pulumi up` of a stack deployed before the namespace carried its mark (existing/handmade.py) updates
    the namespace in place, its annotations only: nothing is replaced, nothing restarts."""
    import copy

    from offline import diff as plan_diff

    head = dev.to_json()
    base = copy.deepcopy(head)
    for resource in base["resources"]:
        if resource["type"] == NAMESPACE:
            del resource["inputs"]["metadata"]["annotations"]
    diff = plan_diff.compute(base, head)
    changed = [(s.name, s.op, [d["path"] for d in s.diffs]) for s in diff.steps if s.op != "same"]
    assert changed == [("gadget-namespace", "update", ["metadata.annotations"])], changed
    assert diff.errors == []
