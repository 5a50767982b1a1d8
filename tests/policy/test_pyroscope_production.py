"""policy/pyroscope_production.py: a production stack keeps Pyroscope's profiles on a volume or object storage,
and a NetworkPolicy restricts who reaches Pyroscope.
"""

from __future__ import annotations

import contextvars

import pulumi
import pytest
from pulumi.runtime.config import set_all_config
from pulumi_policy import PolicyResource, StackValidationArgs

from offline import policy_check
from offline.program import run
from policy import rules
from tests.support import helm
from tests.support.policy import EXT, analyzer_props, check, outputs, persistent_release, release


def test_pyroscope_persistent_in_production():
    policy = rules.pyroscope_persistent_in_production
    assert policy.enforcement_level.value == "mandatory"
    for props in (
        persistent_release({"enabled": True, "size": "64Gi"}),
        persistent_release({"enabled": True, "existingClaim": "pv"}),
    ):
        assert check(policy, rules.RELEASE, props, production=True) == []
    # existingClaim alone is an emptyDir: the chart tests `not $persistence.enabled` first.
    for props in (release(), persistent_release({"enabled": False}), persistent_release({"existingClaim": "pv"})):
        assert check(policy, rules.RELEASE, props, production=False) == []
        assert check(policy, rules.RELEASE, props, production=True, stack="prod-eu") == [
            "production stack 'prod-eu': Pyroscope release keeps profiles in an emptyDir "
            "(pyroscope.persistence.enabled is not true), so every pod restart loses them; "
            "set pyroscopePersistence to true."
        ]
    assert check(policy, rules.EXTENSION, EXT, production=True) == []


def test_microservices_on_blob_storage_is_persistent():
    """Microservices mode on Azure Blob counts as persistent; components on the filesystem backend
    (a pod's disk) do not."""
    policy = rules.pyroscope_persistent_in_production
    blob = persistent_release({"enabled": False})
    blob["values"]["pyroscope"]["components"] = {
        "distributor": {"kind": "Deployment"},
        "ingester": {"kind": "StatefulSet", "persistence": {"enabled": True}},
    }
    blob["values"]["pyroscope"]["structuredConfig"] = {"storage": {"backend": "azure", "azure": {"account_name": "a"}}}
    assert check(policy, rules.RELEASE, blob, production=True) == []
    # The ingesters' head (up to an hour before a block reaches the bucket) on an emptyDir is not persistent.
    blob["values"]["pyroscope"]["components"]["ingester"]["persistence"] = {"enabled": False}
    assert "an ingester restart loses them" in check(policy, rules.RELEASE, blob, production=True)[0]
    blob["values"]["pyroscope"]["components"]["ingester"]["persistence"] = {"enabled": True}
    blob["values"]["pyroscope"]["structuredConfig"]["storage"] = {"backend": "filesystem"}
    assert len(check(policy, rules.RELEASE, blob, production=True)) == 1


def test_pyroscope_persistent_in_production_on_the_plan():
    from offline.program import run

    on = policy_check.evaluate(run("dev", {"production": "true"}))
    off = policy_check.evaluate(run("dev", {"production": "true", "pyroscopePersistence": "false"}))
    assert "pyroscope-persistent-in-production" not in {v.policy for v in on}
    assert [(v.policy, v.level) for v in off if v.policy == "pyroscope-persistent-in-production"] == [
        ("pyroscope-persistent-in-production", "mandatory")
    ]


# --- pyroscope-network-policy-in-production (stack policy, mandatory) -----------------------------------------------
def production_stack_check(policy, resources, production=True, mode="up"):
    messages: list[str] = []

    def go():
        set_all_config({"aks-gpu-observability:production": str(production).lower()})
        pulumi.runtime.configure(
            pulumi.runtime.Settings(project="aks-gpu-observability", stack="prod-eu", dry_run=True)
        )
        # A preview keeps the provider's answer, or the inputs for a type it previews without one
        # (canned.preview_outputs).
        subjects = [
            PolicyResource(t, analyzer_props(outputs(t, n, p, mode) or p), f"urn::{n}", n, None, None, None, [], {})
            for t, n, p in resources
        ]
        policy.validate(StackValidationArgs(subjects, {}, {}), lambda message, urn=None: messages.append(message))

    contextvars.Context().run(go)
    return messages


def network_policy(spec=None, namespace="gadget"):
    from components.pyroscope import network_policy_spec

    return (
        rules.NETWORK_POLICY,
        "pyroscope-network-policy",
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "pyroscope", "namespace": namespace},
            "spec": spec if spec is not None else network_policy_spec(["10.224.0.0/16"]),
        },
    )


PYRO_RELEASE = (rules.RELEASE, "pyroscope-release", release(name="pyroscope", namespace="gadget"))
OPEN = (
    "production stack 'prod-eu': no NetworkPolicy restricts ingress to Pyroscope's pods (gadget/pyroscope), so its "
    "unauthenticated HTTP API is open to everything that routes to its internal load balancer; set "
    "pyroscopeNetworkPolicy to true."
)


@pytest.mark.parametrize("mode", ["preview", "up"])
def test_pyroscope_network_policy_in_production(mode):
    policy = rules.pyroscope_network_policy_in_production
    assert policy.enforcement_level.value == "mandatory"
    assert production_stack_check(policy, [PYRO_RELEASE, network_policy()], mode=mode) == []
    assert production_stack_check(policy, [PYRO_RELEASE], mode=mode) == [OPEN]
    assert production_stack_check(policy, [PYRO_RELEASE], production=False, mode=mode) == []
    assert production_stack_check(policy, [network_policy()], mode=mode) == []  # no Pyroscope release: nothing to guard
    select_all = {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]}  # a namespace-wide policy counts
    assert production_stack_check(policy, [PYRO_RELEASE, network_policy(select_all)], mode=mode) == []
    for spec in (
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "grafana"}}},  # other pods
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "pyroscope"}}, "policyTypes": ["Egress"]},
        {"podSelector": {}, "ingress": [{"ports": [{"port": 4040}]}]},  # a rule without from admits everyone
        {"podSelector": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}},
    ):
        assert production_stack_check(policy, [PYRO_RELEASE, network_policy(spec)], mode=mode) == [OPEN], spec
    assert production_stack_check(policy, [PYRO_RELEASE, network_policy(namespace="default")], mode=mode) == [OPEN]


def test_pyroscope_network_policy_in_production_on_the_plan():
    on = policy_check.evaluate(run("dev", {"production": "true"}))
    off = policy_check.evaluate(run("dev", {"production": "true", "pyroscopeNetworkPolicy": "false"}))
    assert "pyroscope-network-policy-in-production" not in {v.policy for v in on}
    assert {(v.policy, v.level) for v in off if v.policy == "pyroscope-network-policy-in-production"} == {
        ("pyroscope-network-policy-in-production", "mandatory")
    }
    advisory = policy_check.evaluate(run("dev", {"pyroscopeNetworkPolicy": "false"}))
    assert "pyroscope-network-policy-in-production" not in {v.policy for v in advisory}


def test_the_production_network_policy_rule_refuses_a_policy_open_to_everyone():
    """A 'restriction' whose peer admits 0.0.0.0/0, ::/0 or every namespace admits every source, like a rule without
    ``from``; the rule once accepted it."""
    policy = rules.pyroscope_network_policy_in_production
    for peer in (
        {"ipBlock": {"cidr": "0.0.0.0/0"}},
        {"ipBlock": {"cidr": "::/0"}},
        {"namespaceSelector": {}},
        {"namespaceSelector": {}, "podSelector": {}},
    ):
        spec = {"podSelector": {}, "ingress": [{"from": [peer]}]}
        assert production_stack_check(policy, [PYRO_RELEASE, network_policy(spec)]) == [OPEN], peer
    narrow = {
        "podSelector": {},
        "ingress": [
            {
                "from": [
                    {"ipBlock": {"cidr": "10.224.0.0/24"}},
                    {"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "gadget"}}},
                ]
            }
        ],
    }
    assert production_stack_check(policy, [PYRO_RELEASE, network_policy(narrow)]) == []


# --- the persistence rule against what chart 1.15.0 renders and Pyroscope v1.15.0 reads ----------------------------
PRODUCTION = {"production": True, "stack": "prod-eu"}


def _micro(props: dict, ingester: dict, extra: dict | None = None) -> dict:
    single = props["values"]["pyroscope"]
    single["components"] = {
        "distributor": {"kind": "Deployment"},
        "querier": {"kind": "Deployment"},
        "ingester": {"kind": "StatefulSet", **ingester},
    }
    single["extraArgs"] = {"storage.backend": "azure", "storage.azure.account-name": "st"}
    single.update(extra or {})
    return props


def test_a_storage_backend_flag_overrides_the_structured_config_for_the_persistence_rule():
    """Pyroscope reads its flags after the config file (grafana/pyroscope v1.15.0 ``pkg/cfg/dynamic.go``
    ``DynamicUnmarshal``; ``pkg/cfg/cfg_test.go`` ``TestParse``: a flag beats the YAML value), and chart 1.15.0
    passes ``pyroscope.extraArgs`` as ``-key=value`` arguments: ``extraArgs: {storage.backend: filesystem}`` keeps the
    blocks on each pod's emptyDir whatever ``structuredConfig`` says, so the rule fails the release."""
    props = persistent_release({"enabled": False})
    props["values"]["pyroscope"]["components"] = {
        "distributor": {"kind": "Deployment"},
        "ingester": {"kind": "StatefulSet"},
    }
    props["values"]["pyroscope"]["structuredConfig"] = {"storage": {"backend": "azure", "azure": {"account_name": "a"}}}
    props["values"]["pyroscope"]["extraArgs"] = {"storage.backend": "filesystem"}
    assert len(check(rules.pyroscope_persistent_in_production, rules.RELEASE, props, **PRODUCTION)) == 1


def test_microservices_without_an_ingester_volume_is_not_persistent_in_production():
    """The ingester keeps its head block in ``/data`` for up to ``-pyroscopedb.max-block-duration`` (1h) before it
    ships it (grafana/pyroscope v1.15.0 ``pkg/phlaredb/phlaredb.go``); without ``persistence.enabled`` the chart makes
    ``data`` an emptyDir, so a restart loses up to an hour of profiles: the mandatory rule fails the stack."""
    plan = run("dev", {"production": "true", "pyroscopeMode": "microservices", "pyroscopePersistence": "false"})
    assert "pyroscope-persistent-in-production" in {v.policy for v in policy_check.evaluate(plan)}


def test_an_existing_claim_without_enabled_is_an_emptydir_and_fails_the_rule(tmp_path):
    """Chart 1.15.0 ``templates/deployments-statefulsets.yaml`` renders ``data`` as an emptyDir unless
    ``persistence.enabled`` (before it looks at ``existingClaim``; values.yaml's default is ``enabled: false``)."""
    persistence = {"enabled": False, "existingClaim": "pyroscope-data"}
    docs = helm.render_values(tmp_path / "render", {"pyroscope": {"persistence": persistence}})
    assert helm.data_volume(docs, "all") == "emptyDir"
    policy = rules.pyroscope_persistent_in_production
    assert len(check(policy, rules.RELEASE, persistent_release(persistence), **PRODUCTION)) == 1
    assert len(check(policy, rules.RELEASE, persistent_release({"existingClaim": "pyroscope-data"}), **PRODUCTION)) == 1


def test_an_ingesters_own_filesystem_backend_fails_the_rule(tmp_path):
    """Chart 1.15.0 merges a component's ``extraArgs`` over the global ones (``mustMergeOverwrite``), one
    ``-key=value`` argument each: the ingester below runs ``-storage.backend=filesystem`` and writes its blocks to its
    own disk, never to the bucket the queriers read."""
    props = _micro(
        persistent_release({"enabled": False}),
        {"persistence": {"enabled": True, "size": "64Gi"}, "extraArgs": {"storage.backend": "filesystem"}},
    )
    docs = helm.render_values(tmp_path / "render", props["values"])
    assert "-storage.backend=filesystem" in helm.container_args(docs, "ingester")
    assert "-storage.backend=azure" in helm.container_args(docs, "querier")
    assert len(check(rules.pyroscope_persistent_in_production, rules.RELEASE, props, **PRODUCTION)) == 1


def test_an_ingester_persistence_override_is_merged_over_the_global_one(tmp_path):
    """Chart 1.15.0 deep-merges a component's values over ``pyroscope``'s (``mustMergeOverwrite``): an ingester's
    ``persistence: {size: 128Gi}`` keeps the global ``enabled: true``, the ingester gets its volumeClaimTemplate, and
    the rule passes."""
    props = _micro(
        persistent_release({"enabled": True, "size": "64Gi", "storageClassName": "managed-csi"}),
        {"persistence": {"size": "128Gi"}},
    )
    docs = helm.render_values(tmp_path / "render", props["values"])
    assert helm.data_volume(docs, "ingester") == "volumeClaimTemplate"
    assert check(rules.pyroscope_persistent_in_production, rules.RELEASE, props, **PRODUCTION) == []
