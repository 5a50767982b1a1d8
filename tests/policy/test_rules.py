"""The policy pack, rule by rule: a passing and a failing resource each (engine-level camelCase props, in
the wire format the analyzer deserialises), then the pack over the dev stack's offline plan."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
import typing

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from offline import canned, policy_check
from offline.program import run
from policy import rules
from policy.rules import known
from tests.support import ROOT
from tests.support.policy import EXT, INTERNAL, SUB, VIS, analyzer_props, check, outputs, release

SECRET_SIG = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}


def secret(value):
    return {**SECRET_SIG, "value": value}


# --- pyroscope-service-internal ---------------------------------------------------------------------------
def test_service_internal_pass():
    assert check(rules.pyroscope_service_internal, rules.RELEASE, release()) == []
    assert (
        check(rules.pyroscope_service_internal, rules.RELEASE, release(annotations={}, service_type="ClusterIP")) == []
    )
    assert (
        check(
            rules.pyroscope_service_internal,
            rules.SERVICE,
            {"spec": {"type": "LoadBalancer"}, "metadata": {"annotations": {INTERNAL: "true"}}},
        )
        == []
    )


def test_service_internal_fail():
    assert check(rules.pyroscope_service_internal, rules.RELEASE, release(annotations={VIS: "*"})) == [
        f'values.pyroscope.service is a LoadBalancer Service without {INTERNAL}: "true"; it would get a public IP.'
    ]
    assert check(rules.pyroscope_service_internal, rules.RELEASE, release(annotations={INTERNAL: "false"}))
    assert check(rules.pyroscope_service_internal, rules.SERVICE, {"spec": {"type": "LoadBalancer"}, "metadata": {}})


# --- helm-chart-pinned -----------------------------------------------------------------------------------
def test_chart_pinned_pass():
    assert check(rules.helm_chart_pinned, rules.RELEASE, release()) == []
    assert (
        check(
            rules.helm_chart_pinned,
            rules.RELEASE,
            release(chart="pyroscope", repositoryOpts={"repo": "https://grafana.github.io/helm-charts"}),
        )
        == []
    )


@pytest.mark.parametrize("version", ["", "latest", "^1.15.0", "~1.15", ">=1.0.0", "1.15.x", "1.15", None])
def test_chart_pinned_fail_version(version):
    props = release(version=version) if version is not None else {k: v for k, v in release().items() if k != "version"}
    assert any("not an exact version" in m for m in check(rules.helm_chart_pinned, rules.RELEASE, props))


def test_chart_pinned_fail_source():
    assert any(
        "neither from an oci:// registry" in m
        for m in check(
            rules.helm_chart_pinned,
            rules.RELEASE,
            release(chart="pyroscope", repositoryOpts={"repo": "http://charts.example.com"}),
        )
    )
    assert check(rules.helm_chart_pinned, rules.RELEASE, release(chart="./charts/pyroscope"))


def test_gpu_observability_pass():
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, EXT) == []
    assert (
        check(
            rules.inspektor_gadget_gpu_observability,
            rules.EXTENSION,
            {**EXT, "version": "0.46.0", "autoUpgradeMinorVersion": False},
        )
        == []
    )
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, {"extensionType": "microsoft.flux"}) == []


def test_gpu_observability_fail():
    off = {**EXT, "configurationSettings": {"gpuObservability.enabled": "false"}}
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, off) == [
        "the Inspektor Gadget extension must keep configurationSettings gpuObservability.enabled=true."
    ]
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, {**EXT, "version": "0.46.0"}) == [
        "version 0.46.0 is pinned but autoUpgradeMinorVersion is not false."
    ]


# --- extension-version-pinned (advisory) and -in-production (mandatory) -----------------------------------
PINNED = {**EXT, "version": "0.46.0", "autoUpgradeMinorVersion": False}


def test_extension_pinned_pass():
    for production in (False, True):
        for policy in (rules.extension_version_pinned, rules.extension_version_pinned_in_production):
            assert check(policy, rules.EXTENSION, PINNED, production=production) == []
            assert check(policy, rules.RELEASE, release(), production=production) == []
    assert check(rules.extension_version_pinned, rules.EXTENSION, EXT, production=True) == []
    assert check(rules.extension_version_pinned_in_production, rules.EXTENSION, EXT, production=False) == []


def test_extension_pinned_fail():
    assert check(
        rules.extension_version_pinned_in_production, rules.EXTENSION, EXT, production=True, stack="prod-eu"
    ) == [
        "production stack 'prod-eu': cluster extension 'microsoft.inspektorgadget' has no pinned version "
        "(releaseTrain 'preview', auto-upgrade); set extensionVersion to the version to run."
    ]
    for props in (
        {**EXT, "version": ""},
        {**EXT, "version": "0.46.0"},
        {**PINNED, "autoUpgradeMinorVersion": True},
        {k: v for k, v in PINNED.items() if k != "autoUpgradeMinorVersion"},
    ):
        assert check(rules.extension_version_pinned_in_production, rules.EXTENSION, props, production=True), props
        assert check(rules.extension_version_pinned, rules.EXTENSION, props), props
    assert check(rules.extension_version_pinned, rules.EXTENSION, EXT) == [
        "cluster extension 'microsoft.inspektorgadget' has no pinned version (releaseTrain 'preview', auto-upgrade); "
        "fine for a trial, not for production."
    ]
    assert rules.extension_version_pinned.enforcement_level.value == "advisory"
    assert rules.extension_version_pinned_in_production.enforcement_level.value == "mandatory"


def test_microservices_plan_passes_the_persistence_and_role_rules():
    from offline.program import run

    found = {
        v.policy for v in policy_check.evaluate(run("dev", {"production": "true", "pyroscopeMode": "microservices"}))
    }
    assert not found & {"pyroscope-persistent-in-production", "role-assignment-least-privilege"}, found


# --- pyroscope-pinned-by-digest (advisory) and -in-production (mandatory) ---------------------------------
DIGEST = "sha256:" + "0123456789abcdef" * 4
OCI = "oci://ghcr.io/grafana/helm-charts/pyroscope"


def digest_release(chart=f"{OCI}@{DIGEST}", tag=f"1.15.0@{DIGEST}", **extra):
    props = release(chart=chart, **extra)
    props["values"]["pyroscope"]["image"] = {"repository": "grafana/pyroscope", "tag": tag}
    return props


def test_pyroscope_pinned_by_digest_pass():
    for production in (False, True):
        for policy in (rules.pyroscope_pinned_by_digest, rules.pyroscope_pinned_by_digest_in_production):
            assert check(policy, rules.RELEASE, digest_release(), production=production) == []
            assert check(policy, rules.EXTENSION, PINNED, production=production) == []
            assert (
                check(
                    policy,
                    rules.RELEASE,
                    {"chart": "oci://example.com/charts/other", "version": "1.0.0"},
                    production=production,
                )
                == []
            )
    assert check(rules.pyroscope_pinned_by_digest, rules.RELEASE, digest_release(tag="1.15.0"), production=True) == []
    assert check(rules.pyroscope_pinned_by_digest_in_production, rules.RELEASE, digest_release(tag="1.15.0")) == []


def test_pyroscope_pinned_by_digest_fail():
    assert check(
        rules.pyroscope_pinned_by_digest_in_production,
        rules.RELEASE,
        digest_release(chart=OCI, tag="1.15.0"),
        production=True,
        stack="prod-eu",
    ) == [
        f"production stack 'prod-eu': Pyroscope release: chart {OCI!r} is pinned by tag (version "
        f"1.15.0), not by digest; "
        "image tag '1.15.0' at values.pyroscope.image.tag has no @sha256: digest; set pyroscopeChart to "
        "oci://.../pyroscope@sha256:<digest> and pyroscopeImageTag to <tag>@sha256:<digest> (docs/how-it-works.md, "
        '"Pins that cannot move").'
    ]
    assert check(rules.pyroscope_pinned_by_digest, rules.RELEASE, digest_release(tag="1.15.0")) == [
        "Pyroscope release: image tag '1.15.0' at values.pyroscope.image.tag has no @sha256: digest; fine for a trial, "
        "not for production."
    ]
    https = digest_release(chart="pyroscope", repositoryOpts={"repo": "https://grafana.github.io/helm-charts"})
    assert check(rules.pyroscope_pinned_by_digest, rules.RELEASE, https) == [
        "Pyroscope release: chart 'pyroscope' comes from https://grafana.github.io/helm-charts, a chart repository, "
        "which cannot pin a digest; fine for a trial, not for production."
    ]
    for props in (
        digest_release(chart=OCI),
        digest_release(tag=f"1.15.0@{DIGEST.upper()}"),
        digest_release(chart=f"{OCI}@{DIGEST[:-1]}"),
        digest_release(tag=DIGEST),
        https,
        {k: v for k, v in digest_release().items() if k != "values"},
    ):
        assert check(rules.pyroscope_pinned_by_digest_in_production, rules.RELEASE, props, production=True), props
        assert check(rules.pyroscope_pinned_by_digest, rules.RELEASE, props), props
    assert rules.pyroscope_pinned_by_digest.enforcement_level.value == "advisory"
    assert rules.pyroscope_pinned_by_digest_in_production.enforcement_level.value == "mandatory"


def test_production_refuses_a_chart_reference_with_a_tag_and_a_digest():
    """``oci://.../pyroscope:1.15.0@sha256:<d>`` is not a digest pin: Helm 3.17.3 pulls it by its tag (helm/helm
    pkg/registry/reference.go@v3.17.3 ``String``); the production gate wants the digest-only form that
    stack_config/rules.py ``_chart`` accepts, as does a second ``@``."""
    for chart in (f"{OCI}:1.15.0@{DIGEST}", f"{OCI}@{DIGEST}@{DIGEST}"):
        found = check(
            rules.pyroscope_pinned_by_digest_in_production, rules.RELEASE, digest_release(chart=chart), production=True
        )
        assert len(found) == 1 and "is not a digest-only reference" in found[0], found
        assert check(rules.pyroscope_pinned_by_digest, rules.RELEASE, digest_release(chart=chart)), chart
    assert (
        check(
            rules.pyroscope_pinned_by_digest_in_production,
            rules.RELEASE,
            digest_release(chart=f"oci://registry.example:5000/charts/pyroscope@{DIGEST}"),
            production=True,
        )
        == []
    )


# --- private-link-visibility (advisory) and -production (mandatory) ---------------------------------------
def test_visibility_pass():
    assert check(rules.private_link_visibility, rules.RELEASE, release()) == []
    assert check(rules.private_link_visibility_production, rules.RELEASE, release(), production=True) == []
    wildcard = release(annotations={INTERNAL: "true", VIS: "*"})
    assert check(rules.private_link_visibility, rules.RELEASE, wildcard, production=True) == []
    assert check(rules.private_link_visibility_production, rules.RELEASE, wildcard, production=False) == []
    assert (
        check(
            rules.private_link_visibility_production,
            rules.RELEASE,
            wildcard,
            production=True,
            config={"allowedWildcardStacks": ["prod-eu"]},
            stack="prod-eu",
        )
        == []
    )


def test_visibility_fail():
    wildcard = release(annotations={INTERNAL: "true", VIS: "*"})
    assert check(rules.private_link_visibility, rules.RELEASE, wildcard)
    assert check(
        rules.private_link_visibility_production, rules.RELEASE, wildcard, production=True, stack="prod-eu"
    ) == [
        "production stack 'prod-eu' exposes the private link service to every subscription (azure-pls-visibility '*'); "
        "Azure does not document the subscription Grafana's managed private endpoints come from, so narrowing may shut "
        "Grafana out: allow-list the stack in allowedWildcardStacks (the approval step approves only the connection "
        "carrying the stack's nonce, docs/security.md), or set privateLinkVisibility to subscription ids you have seen "
        "Grafana's connection come from."
    ]
    assert check(
        rules.private_link_visibility_production,
        rules.RELEASE,
        wildcard,
        production=True,
        config={"allowedWildcardStacks": ["other"]},
        stack="prod-eu",
    )
    assert rules.private_link_visibility.enforcement_level.value == "advisory"
    assert rules.private_link_visibility_production.enforcement_level.value == "mandatory"


def test_visibility_of_the_stacks_private_link_service():
    """A failing input found once: the PLS annotations moved from the chart's Service (Helm values) to the stack's own
    Service resource, and the rules, reading Helm values only, let a production PLS visible to '*' through."""
    service = {"metadata": {"name": "pyroscope-private-link",
                            "annotations": {INTERNAL: "true", VIS: "*", "service.beta.kubernetes.io/azure-pls-create":
                                            "true"}},
               "spec": {"type": "LoadBalancer"}}
    assert check(rules.private_link_visibility, rules.SERVICE, service)
    assert check(rules.private_link_visibility_production, rules.SERVICE, service, production=True, stack="prod-eu")
    narrowed = {**service, "metadata": {**service["metadata"],
                                        "annotations": {INTERNAL: "true", VIS: "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"}}}
    assert check(rules.private_link_visibility_production, rules.SERVICE, narrowed, production=True) == []


# --- managed-private-endpoint-request-message ------------------------------------------------------------
def test_request_message():
    assert (
        check(rules.managed_private_endpoint_request_message, rules.MPE, {"requestMessage": "Grafana amg to Pyroscope"})
        == []
    )
    assert check(rules.managed_private_endpoint_request_message, rules.MPE, {"requestMessage": "  "})
    assert check(rules.managed_private_endpoint_request_message, rules.MPE, {})


def stack_check(policy, resources, mode="up"):
    """Messages a stack policy reports for (type, name, inputs) resources, each seen as its outputs in ``mode``."""
    messages: list[str] = []
    subjects = [
        PolicyResource(t, analyzer_props(outputs(t, n, p, mode)), f"urn::{n}", n, None, None, None, [], {})
        for t, n, p in resources
    ]
    policy.validate(StackValidationArgs(subjects, {}, {}), lambda message, urn=None: messages.append(message))
    return messages


def approval(name, target):
    return (
        rules.COMMAND,
        name,
        {
            "create": "bash steps/approve_private_endpoint_connection.sh",
            "environment": {"PRIVATE_ENDPOINT_NAME": target},
        },
    )


def endpoint(name="pyro", workspace="amg"):
    return (
        rules.MPE,
        f"mpe-{name}",
        {
            "resourceGroupName": "rg",
            "workspaceName": workspace,
            "managedPrivateEndpointName": name,
            "location": "eastus2",
            "requestMessage": "x",
        },
    )


@pytest.mark.parametrize("mode", ["preview", "up"])
def test_approvals_pass(mode):
    assert (
        stack_check(rules.approval_targets_one_connection, [endpoint(), approval("a", "grafana-amg-pyro")], mode) == []
    )
    assert (
        stack_check(rules.approval_targets_one_connection, [endpoint(), approval("a", "GRAFANA-AMG-Pyro")], mode) == []
    )
    two = [endpoint(), endpoint("logs"), approval("a", "grafana-amg-logs"), approval("b", "grafana-amg-pyro")]
    assert stack_check(rules.approval_targets_one_connection, two, mode) == []


@pytest.mark.parametrize(
    "mode,approvals,expected",
    [
        (
            "up",
            [],
            [
                "managed private endpoint mpe-pyro has 0 approvals of its connection "
                "'grafana-amg-pyro'; expected exactly one."
            ],
        ),
        (
            "preview",
            [],
            [
                "managed private endpoint mpe-pyro has no approval: 1 endpoint(s) not identified "
                "yet, 0 approval(s) left for them."
            ],
        ),
        (
            "up",
            [approval("a", "grafana-amg-pyro"), approval("b", "grafana-amg-pyro")],
            [
                "managed private endpoint mpe-pyro has 2 approvals of its connection "
                "'grafana-amg-pyro'; expected exactly one."
            ],
        ),
        (
            "preview",
            [approval("a", "grafana-amg-pyro"), approval("b", "grafana-amg-pyro")],
            ["2 approvals (a, b) target 'grafana-amg-pyro'; expected exactly one."],
        ),
        (
            "up",
            [approval("a", "grafana-amg-*")],
            [
                "approval a does not name exactly one private endpoint (PRIVATE_ENDPOINT_NAME='grafana-amg-*').",
                "managed private endpoint mpe-pyro has 0 approvals of its connection "
                "'grafana-amg-pyro'; expected exactly one.",
            ],
        ),
        (
            "preview",
            [approval("a", "grafana-amg-*")],
            [
                "approval a does not name exactly one private endpoint (PRIVATE_ENDPOINT_NAME='grafana-amg-*').",
                "managed private endpoint mpe-pyro has no approval: 1 endpoint(s) not identified "
                "yet, 0 approval(s) left for them.",
            ],
        ),
        (
            "up",
            [approval("a", "grafana-other-pyro")],
            [
                "managed private endpoint mpe-pyro has 0 approvals of its connection "
                "'grafana-amg-pyro'; expected exactly one.",
                "approval a targets 'grafana-other-pyro', which is no managed private endpoint of this stack.",
            ],
        ),
        (
            "up",
            [approval("a", "grafana-amg-pyro"), approval("b", "grafana-other-x")],
            ["approval b targets 'grafana-other-x', which is no managed private endpoint of this stack."],
        ),
        (
            "preview",
            [approval("a", "grafana-amg-pyro"), approval("b", "grafana-other-x")],
            [
                "approvals target 2 endpoints (grafana-amg-pyro, grafana-other-x) that are not among "
                "this stack's identified ones, "
                "but only 1 endpoint(s) are not identified yet."
            ],
        ),
    ],
)
def test_approvals_fail(mode, approvals, expected):
    """Real violations are caught on output-shaped properties; in a first preview, as far as they can be known."""
    assert stack_check(rules.approval_targets_one_connection, [endpoint(), *approvals], mode) == expected


def test_approvals_unknown_at_preview_are_not_violations():
    """In a first preview the endpoint's id is unknown (azure-native), so which connection an approval names
    cannot be checked yet: no violation, and no UnknownValueError (which would make the analyzer skip the
    whole rule). Once known (a later preview or up), the wrong target is reported."""
    wrong = [endpoint(), approval("a", "grafana-other-pyro")]
    assert stack_check(rules.approval_targets_one_connection, wrong, "preview") == []
    assert stack_check(rules.approval_targets_one_connection, wrong, "up")
    pending = (
        rules.COMMAND,
        "a",
        {
            "create": "bash steps/approve_private_endpoint_connection.sh",
            "environment": {"PRIVATE_ENDPOINT_NAME": UNKNOWN_STRING_VALUE},
        },
    )
    assert stack_check(rules.approval_targets_one_connection, [endpoint(), pending], "up") == []


def _approvals_keyed_on_inputs(args, report):
    """The rule before it was keyed on outputs (policy/rules.py at af0a365), kept to show what outputs do to it:
    it keyed endpoints on ``workspaceName`` and ``managedPrivateEndpointName``, which are inputs only."""
    endpoints = {
        f"grafana-{r.props.get('workspaceName')}-{r.props.get('managedPrivateEndpointName')}".lower(): r
        for r in args.resources
        if r.resource_type == rules.MPE
    }
    targeted: dict[str, int] = {}
    for r in args.resources:
        if r.resource_type == rules.COMMAND and "approve_private_endpoint_connection" in str(
            r.props.get("create") or ""
        ):
            target = str((r.props.get("environment") or {}).get("PRIVATE_ENDPOINT_NAME") or "").lower()
            if target not in endpoints:
                report(
                    f"approval {r.name} targets {target!r}, which is no managed private endpoint of this stack.", r.urn
                )
            targeted[target] = targeted.get(target, 0) + 1
    for name, r in endpoints.items():
        if targeted.get(name, 0) != 1:
            report(
                f"managed private endpoint {r.name} has {targeted.get(name, 0)} approvals of its connection {name!r}.",
                r.urn,
            )


@pytest.mark.parametrize("mode", policy_check.MODES)
def test_approval_rule_passes_on_the_outputs_of_the_dev_plan(mode):
    """The engine runs stack policies on outputs. Keyed on inputs, the rule reported two mandatory
    violations on every real preview and up; the output-shaped runner shows it, and the fixed rule passes."""
    plan = run("dev")
    old = StackValidationPolicy(
        name=rules.approval_targets_one_connection.name,
        description="keyed on inputs",
        validate=_approvals_keyed_on_inputs,
        enforcement_level=EnforcementLevel.MANDATORY,
    )
    before = policy_check.evaluate(plan, mode=mode, policies=[old])
    assert [v.level for v in before] == ["mandatory", "mandatory"]
    assert "which is no managed private endpoint" in before[0].message and "has 0 approvals" in before[1].message
    assert policy_check.evaluate(plan, mode=mode, policies=[rules.approval_targets_one_connection]) == []


def test_stack_policies_see_outputs_and_resource_policies_inputs():
    """What each kind of policy gets for the managed private endpoint (engine-level camelCase names)."""
    seen: dict[str, dict] = {}

    def record(kind):
        def validate(args, _report):
            for r in args.resources if kind == "stack" else [args]:
                if r.resource_type == rules.MPE:
                    seen[kind] = {k: known(lambda: r.props[k]) for k in r.props}

        return validate

    policies = [
        ResourceValidationPolicy(name="inputs", description="d", validate=record("resource")),
        StackValidationPolicy(name="outputs", description="d", validate=record("stack")),
    ]
    plan = run("dev")
    policy_check.evaluate(plan, mode="preview", policies=policies)
    assert (
        seen["resource"]["workspaceName"] == "amg-gpu-dev"
        and seen["resource"]["managedPrivateEndpointName"] == "pyroscope-mpe"
    )
    preview = seen["stack"]
    assert "workspaceName" not in preview and "managedPrivateEndpointName" not in preview
    assert preview["id"] is rules.NOT_KNOWN and preview["name"] is rules.NOT_KNOWN
    assert preview["requestMessage"] == seen["resource"]["requestMessage"]  # an input of an output's name is kept
    policy_check.evaluate(plan, mode="up", policies=policies)
    assert seen["resource"]["workspaceName"] == "amg-gpu-dev"
    up = seen["stack"]
    assert (
        "workspaceName" not in up
        and up["name"] == "pyroscope-mpe"
        and up["type"] == "Microsoft.Dashboard/grafana/managedPrivateEndpoints"
    )
    assert up["id"].endswith("/providers/Microsoft.Dashboard/grafana/amg-gpu-dev/managedPrivateEndpoints/pyroscope-mpe")
    assert (
        rules.connection_name(
            PolicyResource(rules.MPE, analyzer_props({"id": up["id"].upper()}), "u", "n", None, None, None, [], {})
        )
        == "grafana-amg-gpu-dev-pyroscope-mpe"
    )


def test_a_stack_policy_that_reads_an_unknown_is_not_run():
    """As pulumi-policy's analyzer does: the policy stops, and an advisory says why."""
    reads_ids = StackValidationPolicy(
        name="reads-ids",
        description="d",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=lambda args, report: [r.props.get("id") for r in args.resources],
    )
    found = policy_check.evaluate(run("dev"), mode="preview", policies=[reads_ids])
    assert [(v.level, v.urn) for v in found] == [("advisory", None)]
    assert found[0].message.startswith(f"can't run policy 'reads-ids' from policy pack '{rules.PACK_NAME}@v")
    assert found[0].message.endswith("during preview: string value at .id can't be known during preview")
    assert policy_check.evaluate(run("dev"), mode="up", policies=[reads_ids]) == []


def sdk_outputs(cls) -> dict[str, object]:
    """Engine (camelCase) output names -> type, from the SDK class's @pulumi.getter properties."""
    names = {}
    for klass in reversed(cls.__mro__):
        for value in vars(klass).values():
            if isinstance(value, property) and hasattr(value.fget, "_pulumi_name"):
                hints = typing.get_type_hints(value.fget, globalns=vars(sys.modules[klass.__module__]))
                names[value.fget._pulumi_name] = hints.get("return")
    return names


def sdk_class(type_):
    package, module, name = type_.split(":")
    module = {"kubernetes": "pulumi_kubernetes.helm.v3", "command": "pulumi_command.local"}.get(
        package, f"pulumi_azure_native.{module}"
    )
    return getattr(importlib.import_module(module), name)


def output_type(hint):
    """The SDK output type inside a getter's hint (Output[Optional[Sequence[X]]] -> X), or None."""
    if isinstance(hint, type) and sdk_outputs(hint):
        return hint
    return next((t for t in map(output_type, typing.get_args(hint)) if t), None)


def undeclared(value, cls, path=""):
    """Paths in ``value`` (outputs) that ``cls`` (an SDK resource or output type) does not declare, recursively;
    an azure-native resource's outputs also carry the ARM ``id`` (the SDK has it as CustomResource.id)."""
    declared = sdk_outputs(cls)
    missing = []
    for key, item in value.items():
        if key not in declared and not (
            key == "id" and path == "" and cls.__module__.startswith("pulumi_azure_native.")
        ):
            missing.append(f"{path}{key}")
            continue
        nested = output_type(declared.get(key))
        for entry in (item if isinstance(item, list) else [item]) if nested else []:
            missing += undeclared(entry, nested, f"{path}{key}.") if isinstance(entry, dict) else []
    return missing


@pytest.mark.parametrize("type_", sorted(canned.OUTPUTS))
def test_canned_output_shapes_match_the_sdk(type_):
    """canned.OUTPUTS lists exactly the output getters the installed SDK declares (plus the ARM id for
    azure-native), so the shapes stack policies see offline cannot drift from the SDK."""
    expected = set(sdk_outputs(sdk_class(type_))) | ({"id"} if type_.startswith("azure-native:") else set())
    assert set(canned.OUTPUTS[type_]) == expected
    assert set(canned.PREVIEW_COMPUTED.get(type_, ())) <= expected


def test_canned_outputs_of_the_plans_are_declared_by_the_sdk():
    """Every output name (nested ones too) of every created resource, after up and in a preview, exists in the
    SDK's output types."""
    plans = [run("dev"), run("dev", {"createGrafana": "true", "createMonitorWorkspace": "true"})]
    resources = [r for p in plans for r in p.resources if r.type in canned.OUTPUTS]
    assert {r.type for r in resources} == set(canned.OUTPUTS)
    for resource in resources:
        for mode in policy_check.MODES:
            shaped = policy_check.stack_properties(resource, mode)
            assert undeclared(shaped, sdk_class(resource.type)) == [], (resource.urn, mode)


# --- grafana-standard-with-identity and grafana-public-network-access-disabled ---------------------------
GRAFANA = {
    "sku": {"name": "Standard"},
    "identity": {"type": "SystemAssigned"},
    "properties": {"publicNetworkAccess": "Disabled"},
}


def test_grafana_pass():
    assert check(rules.grafana_standard_with_identity, rules.GRAFANA, GRAFANA) == []
    assert check(rules.grafana_public_network_access_disabled, rules.GRAFANA, GRAFANA) == []


def test_grafana_fail():
    assert check(rules.grafana_standard_with_identity, rules.GRAFANA, {**GRAFANA, "sku": {"name": "Essential"}}) == [
        "Azure Managed Grafana is Essential tier; managed private endpoints need Standard."
    ]
    assert check(rules.grafana_standard_with_identity, rules.GRAFANA, {**GRAFANA, "identity": {"type": "None"}})
    assert check(
        rules.grafana_public_network_access_disabled,
        rules.GRAFANA,
        {**GRAFANA, "properties": {"publicNetworkAccess": "Enabled"}},
    )
    assert check(rules.grafana_public_network_access_disabled, rules.GRAFANA, {**GRAFANA, "properties": {}})


# --- role-assignment-least-privilege ---------------------------------------------------------------------
def role(guid, scope=f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Monitor/accounts/amw"):
    return {
        "roleDefinitionId": f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{guid}",
        "scope": scope,
        "principalId": "p",
    }


def test_roles_pass():
    assert (
        check(
            rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role("b0d8363b-8ddd-447d-831f-62ca05bff136")
        )
        == []
    )
    assert (
        check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT,
              role("22926164-76b3-42b3-bc55-97df8dab3e41", GRAFANA_SCOPE))
        == []
    )
    reader = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
    assert (
        check(
            rules.role_assignment_least_privilege,
            rules.ROLE_ASSIGNMENT,
            role(reader),
            config={"allowedRoleDefinitionIds": [reader]},
        )
        == []
    )


def test_roles_fail():
    owner = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
    assert check(
        rules.role_assignment_least_privilege,
        rules.ROLE_ASSIGNMENT,
        role(owner, f"/subscriptions/{SUB}"),
        config={"allowedRoleDefinitionIds": [owner]},
    ) == [f"Owner at subscription scope /subscriptions/{SUB} is never granted by this stack."]
    assert check(
        rules.role_assignment_least_privilege,
        rules.ROLE_ASSIGNMENT,
        role("b24988ac-6180-42a0-ab88-20f7382dd24c", f"/subscriptions/{SUB}/"),
    )
    assert check(
        rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role("acdd72a7-3385-48ef-bd42-f606fba81ae7")
    )
    assert check(
        rules.role_assignment_least_privilege,
        rules.ROLE_ASSIGNMENT,
        {"roleDefinitionId": "Monitoring Data Reader", "scope": "x"},
    )


GRAFANA_SCOPE = f"/subscriptions/{SUB}/resourceGroups/rg-observability/providers/Microsoft.Dashboard/grafana/amg"
GRAFANA_VIEWER = "60921a7e-fef1-4a43-9b16-a26c52ad4769"


@pytest.mark.parametrize("guid, scope, expected", [
    (GRAFANA_VIEWER, GRAFANA_SCOPE, []),
    (GRAFANA_VIEWER, GRAFANA_SCOPE.upper() + "/", []),  # ARM ids are case-insensitive
    (GRAFANA_VIEWER, UNKNOWN_STRING_VALUE, []),  # a Grafana the stack creates: its id is known at `up` only
    (GRAFANA_VIEWER, f"/subscriptions/{SUB}/resourceGroups/rg-observability",
     [f"Grafana Viewer at scope /subscriptions/{SUB}/resourceGroups/rg-observability: a Grafana role is granted on one "
      "Grafana workspace (…/providers/Microsoft.Dashboard/grafana/<name>) only."]),
    (GRAFANA_VIEWER, f"/subscriptions/{SUB}",
     [f"Grafana Viewer at scope /subscriptions/{SUB}: a Grafana role is granted on one Grafana workspace "
      "(…/providers/Microsoft.Dashboard/grafana/<name>) only."]),
    ("a79a5197-3a5c-4973-a920-486035ffd60f", f"{GRAFANA_SCOPE}/managedPrivateEndpoints/mpe",
     [f"Grafana Editor at scope {GRAFANA_SCOPE}/managedPrivateEndpoints/mpe: a Grafana role is granted on one Grafana "
      "workspace (…/providers/Microsoft.Dashboard/grafana/<name>) only."]),
    ("22926164-76b3-42b3-bc55-97df8dab3e41", f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Monitor/"
     "accounts/amw", ["Grafana Admin at scope /subscriptions/" + SUB + "/resourceGroups/rg/providers/Microsoft.Monitor/"
                      "accounts/amw: a Grafana role is granted on one Grafana workspace "
                      "(…/providers/Microsoft.Dashboard/grafana/<name>) only."]),
])
def test_a_grafana_role_is_granted_on_one_grafana_workspace_only(guid, scope, expected):
    """Grafana Viewer for ML engineers on a resource group or subscription would let them into every Grafana there,
    present and future; no condition on the deployer's role assigner can stop that (conditions have no scope
    attribute), so the pack does, for Admin and Editor too."""
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role(guid, scope)) == expected


def test_a_plan_with_grafana_viewers_passes_the_role_rule():
    """The stack's own viewer assignments are on the Grafana workspace, for an existing Grafana and a created one."""
    viewers = [("grafanaViewers[0]", "0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b", True),
               ("grafanaViewers[1]", "User:9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", True)]
    for overrides in ({}, {"createGrafana": "true"}):
        plan = run("dev", overrides, config_sets=viewers)
        assert len([r for r in plan.by_type(rules.ROLE_ASSIGNMENT)
                    if r.inputs["roleDefinitionId"].endswith(GRAFANA_VIEWER)]) == 2
        found = {v.policy for v in policy_check.evaluate(plan)}
        assert "role-assignment-least-privilege" not in found, found


def ensure_step(guid, scope=f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Monitor/accounts/amw"):
    """The step a multi-cluster stack ensures its shared assignment with (components/grafana_datasources.py)."""
    return {
        "create": "bash steps/ensure_role_assignment.sh",
        "environment": {
            "ROLE_DEFINITION_ID": f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{guid}",
            "SCOPE": scope,
            "PRINCIPAL_ID": "p",
            "PRINCIPAL_TYPE": "ServicePrincipal",
        },
    }


def test_a_step_that_ensures_a_role_assignment_is_held_to_the_same_rule():
    """The shared Monitoring Data Reader assignment is a command step with multiCluster: the rule reads its role and
    scope from the step's environment, as it reads an azure-native assignment's inputs."""
    rule = rules.role_assignment_least_privilege
    assert check(rule, rules.COMMAND, ensure_step("b0d8363b-8ddd-447d-831f-62ca05bff136")) == []
    owner = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
    assert check(
        rule, rules.COMMAND, ensure_step(owner, f"/subscriptions/{SUB}"), config={"allowedRoleDefinitionIds": [owner]}
    ) == [f"Owner at subscription scope /subscriptions/{SUB} is never granted by this stack."]
    assert check(rule, rules.COMMAND, ensure_step("acdd72a7-3385-48ef-bd42-f606fba81ae7")) == [
        "role acdd72a7-3385-48ef-bd42-f606fba81ae7 is not an allowed built-in role (allowedRoleDefinitionIds)."
    ]
    assert (
        check(
            rule,
            rules.COMMAND,
            {"create": "bash steps/refresh_managed_private_endpoints.sh", "environment": {"MPE_NAME": "x"}},
        )
        == []
    )
    plan = run("dev", {"multiCluster": "true", "assignMonitoringDataReader": "true"})
    assert not [v for v in policy_check.evaluate(plan) if v.policy == rule.name]
    allowed_elsewhere = {rule.name: {"allowedRoleDefinitionIds": ["43d0d8ad-25c7-4714-9337-8ba259a9fe05"]}}
    assert [
        v.urn.rsplit("::", 1)[-1] for v in policy_check.evaluate(plan, allowed_elsewhere) if v.policy == rule.name
    ] == ["grafana-datasources-shared-monitoring-data-reader"]


# --- required-tags ---------------------------------------------------------------------------------------
def test_tags_pass():
    assert check(rules.required_tags, rules.MPE, {"tags": {"managed-by": "aks-gpu-observability"}}) == []
    assert check(rules.required_tags, rules.EXTENSION, {}) == []  # takes no tags
    assert (
        check(
            rules.required_tags,
            rules.MPE,
            {"tags": {"managed-by": "x", "costCenter": "1"}},
            config={"requiredTags": ["costCenter"]},
        )
        == []
    )


def test_tags_fail():
    assert check(rules.required_tags, rules.MPE, {}) == ["missing required tags: managed-by."]
    assert check(
        rules.required_tags,
        rules.GRAFANA,
        {"tags": {"managed-by": "x"}},
        config={"requiredTags": ["costCenter", "owner"]},
    ) == ["missing required tags: costCenter, owner."]


def test_taggable_types_match_the_azure_native_sdk():
    """TAGGABLE_TYPES (the policy pack cannot import azure-native) agrees with the SDK's signatures."""
    plans = [run("dev"), run("dev", {"createGrafana": "true", "createMonitorWorkspace": "true"})]
    types = {r.type for p in plans for r in p.resources if r.type.startswith("azure-native:") and r.custom}
    for type_ in types:
        _, module, name = type_.split(":")
        cls = getattr(importlib.import_module(f"pulumi_azure_native.{module}"), name)
        takes = "tags" in inspect.signature(cls._internal_init).parameters
        assert takes == (type_ in rules.TAGGABLE_TYPES), type_


# --- no-plaintext-secrets --------------------------------------------------------------------------------
def test_secrets_pass():
    env = {"GRAFANA_ENDPOINT": "https://x", "SCRIPT_SHA256": "ab" * 32, "DATASOURCE": '{"uid":"local-pyroscope"}'}
    assert check(rules.no_plaintext_secrets, rules.COMMAND, {"environment": env}) == []
    assert check(rules.no_plaintext_secrets, rules.RELEASE, release()) == []


@pytest.mark.parametrize(
    "type_,props,where",
    [
        (rules.COMMAND, {"environment": {"GRAFANA_TOKEN": "abc123"}}, "environment.GRAFANA_TOKEN"),
        (
            rules.COMMAND,
            {"environment": {"BODY": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl"}},
            "environment.BODY",
        ),
        (rules.RELEASE, {"values": {"minio": {"rootPassword": "supersecret"}}}, "values.minio.rootPassword"),
        (
            rules.RELEASE,
            {"values": {"x": {"conn": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc=="}}},
            "values.x.conn",
        ),
        # The analyzer hands a rule the plain value of a Pulumi secret: a credential is caught either way.
        (rules.COMMAND, {"environment": {"API_TOKEN": secret("t0ken")}}, "environment.API_TOKEN"),
        # Lists reach rules as proxies, not list: they are walked too (once they were not).
        (
            rules.RELEASE,
            {"values": {"pyroscope": {"extraArgs": ["--x", {"client_secret": "s3cr3t"}]}}},
            "values.pyroscope.extraArgs[1].client_secret",
        ),
    ],
)
def test_secrets_fail(type_, props, where):
    assert check(rules.no_plaintext_secrets, type_, props) == [f"{where} holds a credential-looking value."]


def test_unknown_values_skip_only_themselves():
    """At preview a datasource step's DATASOURCE is not known; the rule still checks the other values (once
    one unknown value skipped the whole resource)."""
    env = {"DATASOURCE": UNKNOWN_STRING_VALUE, "GRAFANA_TOKEN": "abc123"}
    assert check(rules.no_plaintext_secrets, rules.COMMAND, {"environment": env}) == [
        "environment.GRAFANA_TOKEN holds a credential-looking value."
    ]
    owner = {
        "roleDefinitionId": f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/"
        "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
        "scope": UNKNOWN_STRING_VALUE,
        "principalId": "p",
    }
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, owner) == [
        "role 8e3af657-a8ff-443c-a75c-2fe8c4bcb635 is not an allowed built-in role (allowedRoleDefinitionIds)."
    ]


def test_load_balancer_inside_a_list_is_found():
    values = {"extraServices": [{"type": "LoadBalancer", "annotations": {}}]}
    assert check(rules.pyroscope_service_internal, rules.RELEASE, {"values": values}) == [
        f'values.extraServices[0] is a LoadBalancer Service without {INTERNAL}: "true"; it would get a public IP.'
    ]


# --- the pack as a whole ---------------------------------------------------------------------------------
def test_every_rule_is_described_and_named():
    names = [p.name for p in rules.POLICIES]
    assert len(names) == len(set(names))
    for policy in rules.POLICIES:
        assert policy.name == policy.name.lower() and " " not in policy.name and "_" not in policy.name
        assert policy.description and policy.remediation_steps and policy.enforcement_level is not None


#: A plan's Pyroscope pinned by digest (well-formed digests; nothing is pulled offline).
PINNED_BY_DIGEST = {"pyroscopeChart": f"{OCI}@{DIGEST}", "pyroscopeImageTag": f"1.15.0@{DIGEST}"}
PINNED_ARGS = ("--set", f"pyroscopeChart={OCI}@{DIGEST}", "--set", f"pyroscopeImageTag=1.15.0@{DIGEST}")


def test_dev_plan_has_no_mandatory_violation():
    violations = policy_check.evaluate(run("dev"))
    assert [v.level for v in violations] == ["advisory", "advisory", "advisory"]
    assert {v.policy for v in violations} == {
        "private-link-visibility",
        "extension-version-pinned",
        "pyroscope-pinned-by-digest",
    }
    assert (
        policy_check.evaluate(
            run("dev", {"extensionVersion": "0.46.0", "privateLinkVisibility": SUB, **PINNED_BY_DIGEST})
        )
        == []
    )


def test_created_grafana_plan_is_clean_but_for_advisories():
    violations = policy_check.evaluate(run("dev", {"createGrafana": "true", "createMonitorWorkspace": "true"}))
    assert {v.policy for v in violations} == {
        "private-link-visibility",
        "grafana-public-network-access-disabled",
        "extension-version-pinned",
        "pyroscope-pinned-by-digest",
    }
    assert all(v.level == "advisory" for v in violations)


def test_pack_config_raises_and_disables():
    plan = run("dev", {"createGrafana": "true"})
    raised = policy_check.evaluate(
        plan,
        {
            "grafana-public-network-access-disabled": "mandatory",
            "private-link-visibility": "disabled",
            "extension-version-pinned": "disabled",
            "pyroscope-pinned-by-digest": "disabled",
        },
    )
    assert [(v.policy, v.level) for v in raised] == [("grafana-public-network-access-disabled", "mandatory")]
    tagged = policy_check.evaluate(run("dev"), {"required-tags": {"requiredTags": ["costCenter"]}})
    assert any(v.policy == "required-tags" and "costCenter" in v.message for v in tagged)
    with pytest.raises(policy_check.PolicyConfigError, match="no such policy"):
        policy_check.evaluate(plan, {"no-such-rule": "mandatory"})
    with pytest.raises(policy_check.PolicyConfigError, match="required-tags"):
        policy_check.evaluate(plan, {"required-tags": {"requiredTags": "costCenter"}})
    production = run("dev", {"production": "true", "extensionVersion": "0.46.0", **PINNED_BY_DIGEST})
    assert {v.level for v in policy_check.evaluate(production, {"all": "advisory"})} == {"advisory"}
    assert {
        v.level
        for v in policy_check.evaluate(
            production, {"all": "advisory", "private-link-visibility-production": "mandatory"}
        )
    } == {"mandatory"}
    # remediate on a validate-only rule is mandatory, as in the analyzer
    assert {v.level for v in policy_check.evaluate(plan, {"grafana-public-network-access-disabled": "remediate"})} >= {
        "mandatory"
    }


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "offline.plan", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_cli_policy_exit_codes(tmp_path):
    ok = cli("--stack", "dev", "--policy")  # stack policies on a first preview's outputs, as pulumi preview
    assert ok.returncode == 0, ok.stderr
    assert "[advisory]  private-link-visibility" in ok.stdout
    after_up = cli("--stack", "dev", "--policy", "--policy-mode", "up")
    assert after_up.returncode == 0 and "[mandatory]" not in after_up.stdout, after_up.stdout
    bad = cli("--stack", "dev", "--policy", "--set", "production=true", "--set", "privateLinkVisibility=*")
    assert bad.returncode == 1
    assert (
        "[mandatory]  private-link-visibility-production  (kubernetes:core/v1:Service: pyroscope-private-link)"
        in bad.stdout
    )
    # .ci/run greps for this line; the unpinned extension fails the same plan too
    assert re.search(r"^\s*- \[mandatory\]  private-link-visibility-production", bad.stdout, re.M)
    assert (
        "[mandatory]  extension-version-pinned-in-production  "
        "(azure-native:kubernetesconfiguration:Extension: inspektor-gadget-extension)"
        in bad.stdout
    )
    assert (
        "[mandatory]  pyroscope-pinned-by-digest-in-production  (kubernetes:helm.sh/v3:Release: pyroscope-release)"
        in bad.stdout
    )
    pinned = cli(
        "--stack",
        "dev",
        "--policy",
        "--set",
        "production=true",
        "--set",
        "extensionVersion=0.46.0",
        "--set",
        f"privateLinkVisibility={SUB}",
        *PINNED_ARGS,
    )
    assert pinned.returncode == 0 and "[mandatory]" not in pinned.stdout and "[advisory]" not in pinned.stdout, (
        pinned.stdout
    )
    unpinned = cli(
        "--stack", "dev", "--policy", "--set", "production=true", "--set", f"privateLinkVisibility={SUB}", *PINNED_ARGS
    )
    assert unpinned.returncode == 1 and "[mandatory]  extension-version-pinned-in-production" in unpinned.stdout
    by_tag = cli(
        "--stack",
        "dev",
        "--policy",
        "--set",
        "production=true",
        "--set",
        "extensionVersion=0.46.0",
        "--set",
        f"privateLinkVisibility={SUB}",
    )
    assert by_tag.returncode == 1 and "[mandatory]  pyroscope-pinned-by-digest-in-production" in by_tag.stdout, (
        by_tag.stdout
    )
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"private-link-visibility-production": {"allowedWildcardStacks": ["dev"]}}))
    allowed = cli(
        "--stack",
        "dev",
        "--policy-config",
        str(config),
        "--set",
        "production=true",
        "--set",
        "extensionVersion=0.46.0",
        *PINNED_ARGS,
    )
    assert allowed.returncode == 0, allowed.stdout
    as_json = json.loads(cli("--json", "--policy", "--set", "production=true").stdout)
    assert {v["policy"] for v in as_json["policyViolations"]} == {
        "private-link-visibility-production",
        "extension-version-pinned-in-production",
        "pyroscope-pinned-by-digest-in-production",
    }
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    fail = cli("--policy-config", str(broken))
    assert (
        fail.returncode == 2
        and fail.stderr.startswith("error: --policy-config: cannot read")
        and len(fail.stderr.splitlines()) == 1
    )


def test_policy_pack_files():
    import yaml

    pack = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert pack["runtime"]["name"] == "python"
    main = (ROOT / "policy" / "__main__.py").read_text()
    assert "PolicyPack(" in main and "POLICIES" in main
    assert "pulumi-policy" in (ROOT / "policy" / "requirements.txt").read_text()


#: The pack's venv setup the docs give (PulumiPolicy.yaml: virtualenv venv; the CLI does not create it for a
#: local --policy-pack folder, docs/policy.md has the sources).
VENV_SETUP = re.compile(
    r"python3 -m venv policy/(\w+) && policy/\1/bin/pip install --require-hashes -r policy/requirements\.lock"
)


@pytest.mark.parametrize("doc", ["README.md", "docs/policy.md"])
def test_docs_create_the_pack_venv_before_any_policy_pack_command(doc):
    import yaml

    text = "\n".join(re.findall(r"```[^\n]*\n(.*?)```", (ROOT / doc).read_text(encoding="utf-8"), re.S))  # commands
    uses = [m.start() for m in re.finditer(r"--policy-pack policy\b", text)]
    setup = VENV_SETUP.search(text)
    assert uses and setup, doc
    assert setup.start() < min(uses), f"{doc}: the venv is created after `--policy-pack policy` is first used"
    pack = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert setup.group(1) == pack["runtime"]["options"]["virtualenv"]
    assert (ROOT / "policy" / "requirements.txt").exists()


def test_the_readme_counts_the_pack_s_rules():
    """The README's Policy pack paragraph says how many rules the pack has; it counts POLICIES (it said 12 while the
    pack had 16)."""
    readme = (ROOT / "README.md").read_text()
    said = re.search(r"\((\d+) rules:", readme)
    assert said and int(said.group(1)) == len(rules.POLICIES), (said and said.group(1), len(rules.POLICIES))


PRODUCTION_PACK_CONFIG = ROOT / "policy" / "production.json"


@pytest.mark.parametrize("config", [{}, {"production": "false"}])
def test_the_deploys_pack_config_holds_a_stack_to_production_whatever_its_file_says(config):
    """The deploy passes policy/production.json: a stack whose own config leaves ``production`` unset (or false) gets
    exactly the violations, levels and rules of one that sets it, so a pull request that edits the stack's file cannot
    take a deployed stack out of the production rules."""
    broken = {"pyroscopePersistence": "false", "pyroscopeNetworkPolicy": "false"}
    forced = policy_check.evaluate(run("dev", {**broken, **config}),
                                   policy_check.load_pack_config(str(PRODUCTION_PACK_CONFIG)), "up")
    declared = policy_check.evaluate(run("dev", {**broken, "production": "true"}), None, "up")
    seen = sorted((v.policy, v.level, v.urn) for v in forced)
    assert seen == sorted((v.policy, v.level, v.urn) for v in declared)
    assert {p for p, level, _ in seen if level == "mandatory"} >= {
        "extension-version-pinned-in-production", "pyroscope-pinned-by-digest-in-production",
        "private-link-visibility-production", "pyroscope-persistent-in-production",
        "pyroscope-network-policy-in-production"}
    assert not any(p in ("extension-version-pinned", "private-link-visibility") for p, _, _ in seen), "no trial advice"


def test_the_production_pack_config_names_every_rule_that_tells_production_from_a_trial():
    """A rule added later that reads the production switch is in the deploy's pack config, or it would judge a deployed
    stack as a trial; and the config names nothing else, each entry with the switch on: the CLI accepts a misspelt
    policy or property silently (pulumi/pulumi v3.230.0 pkg/resource/analyzer/config.go validates only the pack's
    policies' schemas, which allow extra properties), so this test is what catches one."""
    from policy.values import FORCED

    aware = {p.name for p in rules.POLICIES if p.config_schema and FORCED in (p.config_schema.properties or {})}
    config = json.loads(PRODUCTION_PACK_CONFIG.read_text())
    assert set(config) == aware and all(entry.get(FORCED) is True for entry in config.values())
    policy_check.configure(config)  # what the CLI checks: each entry fits its rule's schema (allowedWildcardStacks)
    readers = {p.name for p in rules.POLICIES
               if "stack_is_production" in inspect.getsource(p.validate) or p.name.endswith(("-in-production",
                                                                                              "-production"))}
    assert readers <= aware
