"""offline/replacement.py: every resource type the stack uses has a replacement rule.
"""

from __future__ import annotations

from offline import replacement
from offline.program import run


def test_every_type_has_a_rule_and_fixed_names_delete_first():
    """The replacement model covers every type the stack registers (createGrafana/createMonitorWorkspace
    included), and no resource whose provider asks delete-first is left create-first by its option (the plan
    JSON cannot tell an unset option from false)."""
    plan = run("dev", {"createGrafana": "true", "createMonitorWorkspace": "true"})
    for resource in plan.resources:
        if resource.custom and resource.type != "pulumi:pulumi:StackReference":
            rule = replacement.rule_for(resource.type)
            assert rule is not None, resource.type
            if rule.delete_first:
                assert resource.options["deleteBeforeReplace"] is True, resource.name
    for name in ("pyroscope-release", "gpu-dashboard-upload", "grafana-datasources-pyroscope"):
        assert next(r for r in plan.resources
                    if r.name == name).options["deleteBeforeReplace"] is (name != "gpu-dashboard-upload")


def test_an_unknown_metadata_replaces_a_kubernetes_object_and_a_change_inside_it_does_not():
    """pulumi-kubernetes' Diff reads an unknown ``metadata`` as no name and namespace ``default``, which replaces the
    object (what the engine asks of a claim whose namespace is replaced); a label is still an update."""
    for type_ in ("kubernetes:core/v1:PersistentVolumeClaim", "kubernetes:core/v1:Service",
                  "kubernetes:networking.k8s.io/v1:NetworkPolicy", "kubernetes:core/v1:Namespace"):
        rule = replacement.rule_for(type_)
        assert rule.forces("metadata"), type_
        assert rule.forces("metadata.labels.app") is None, type_
        assert rule.forces("metadata.name"), type_
    assert replacement.rule_for("kubernetes:helm.sh/v3:Release").forces("metadata") is None
    # A claim's unknown spec deletes .spec.accessModes and .spec.storageClassName from the patch: replaced; a Service's
    # or NetworkPolicy's unknown spec is an update (measured with pulumi-kubernetes 4.25.0's Diff).
    assert replacement.rule_for("kubernetes:core/v1:PersistentVolumeClaim").forces("spec")
    assert replacement.rule_for("kubernetes:core/v1:Service").forces("spec") is None
    assert replacement.rule_for("kubernetes:networking.k8s.io/v1:NetworkPolicy").forces("spec") is None
