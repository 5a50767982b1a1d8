"""The policy pack, rule by rule: a passing and a failing resource each (engine-level camelCase props, in
the wire format the analyzer deserialises), then the pack over the dev stack's offline plan."""

from __future__ import annotations

import contextvars
import inspect
import importlib
import json
import subprocess
import sys

import pulumi
import pytest
from pulumi.runtime.config import set_all_config
from pulumi_policy import PolicyResource, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policy import rules
from tests.conftest import ROOT
from tools import policy_check
from tools.mock_engine import run

SECRET_SIG = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
INTERNAL = "service.beta.kubernetes.io/azure-load-balancer-internal"
VIS = "service.beta.kubernetes.io/azure-pls-visibility"
SUB = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"


def secret(value):
    return {**SECRET_SIG, "value": value}


def analyzer_props(props):
    """Properties as pulumi-policy's analyzer hands them to a rule: secrets unwrapped, unknown-checking."""
    return unknown_checking_proxy(deserialize_properties(props))


def check(policy, type_, props, config=None, production=False, stack="dev"):
    """Messages the policy reports for one resource (props in wire format); [] also when the rule is
    skipped because it read a value not known yet, as in the analyzer."""
    messages: list[str] = []

    def go():
        set_all_config({"aks-gpu-observability:production": str(production).lower()})
        pulumi.runtime.configure(pulumi.runtime.Settings(project="aks-gpu-observability", stack=stack, dry_run=True))
        _, cfg = policy_check.policy_settings(policy, {policy.name: config or {}})
        args = ResourceValidationArgs(type_, analyzer_props(props), f"urn:pulumi:{stack}::p::{type_}::r", "r",
                                      None, None, cfg, {})
        policy_check._skipping_unknowns(policy, args, lambda message, urn=None: messages.append(message))

    contextvars.Context().run(go)
    return messages


def release(annotations=None, service_type="LoadBalancer", version="1.15.0", chart="oci://ghcr.io/grafana/helm-charts/pyroscope", **extra):
    service = {"type": service_type, "port": 4040, "annotations": annotations if annotations is not None else {INTERNAL: "true", VIS: SUB}}
    return {"chart": chart, "version": version, "values": {"pyroscope": {"service": service}}, **extra}


# --- pyroscope-service-internal ---------------------------------------------------------------------------
def test_service_internal_pass():
    assert check(rules.pyroscope_service_internal, rules.RELEASE, release()) == []
    assert check(rules.pyroscope_service_internal, rules.RELEASE, release(annotations={}, service_type="ClusterIP")) == []
    assert check(rules.pyroscope_service_internal, rules.SERVICE,
                 {"spec": {"type": "LoadBalancer"}, "metadata": {"annotations": {INTERNAL: "true"}}}) == []


def test_service_internal_fail():
    assert check(rules.pyroscope_service_internal, rules.RELEASE, release(annotations={VIS: "*"})) == [
        f'values.pyroscope.service is a LoadBalancer Service without {INTERNAL}: "true"; it would get a public IP.']
    assert check(rules.pyroscope_service_internal, rules.RELEASE, release(annotations={INTERNAL: "false"}))
    assert check(rules.pyroscope_service_internal, rules.SERVICE, {"spec": {"type": "LoadBalancer"}, "metadata": {}})


# --- helm-chart-pinned -----------------------------------------------------------------------------------
def test_chart_pinned_pass():
    assert check(rules.helm_chart_pinned, rules.RELEASE, release()) == []
    assert check(rules.helm_chart_pinned, rules.RELEASE,
                 release(chart="pyroscope", repositoryOpts={"repo": "https://grafana.github.io/helm-charts"})) == []


@pytest.mark.parametrize("version", ["", "latest", "^1.15.0", "~1.15", ">=1.0.0", "1.15.x", "1.15", None])
def test_chart_pinned_fail_version(version):
    props = release(version=version) if version is not None else {k: v for k, v in release().items() if k != "version"}
    assert any("not an exact version" in m for m in check(rules.helm_chart_pinned, rules.RELEASE, props))


def test_chart_pinned_fail_source():
    assert any("neither from an oci:// registry" in m for m in check(
        rules.helm_chart_pinned, rules.RELEASE, release(chart="pyroscope", repositoryOpts={"repo": "http://charts.example.com"})))
    assert check(rules.helm_chart_pinned, rules.RELEASE, release(chart="./charts/pyroscope"))


# --- inspektor-gadget-gpu-observability ------------------------------------------------------------------
EXT = {"extensionType": "microsoft.inspektorgadget", "autoUpgradeMinorVersion": True, "releaseTrain": "preview",
       "configurationSettings": {"azureMonitor.enabled": "true", "gpuObservability.enabled": "true"}}


def test_gpu_observability_pass():
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, EXT) == []
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, {**EXT, "version": "0.46.0", "autoUpgradeMinorVersion": False}) == []
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, {"extensionType": "microsoft.flux"}) == []


def test_gpu_observability_fail():
    off = {**EXT, "configurationSettings": {"gpuObservability.enabled": "false"}}
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, off) == [
        "the Inspektor Gadget extension must keep configurationSettings gpuObservability.enabled=true."]
    assert check(rules.inspektor_gadget_gpu_observability, rules.EXTENSION, {**EXT, "version": "0.46.0"}) == [
        "version 0.46.0 is pinned but autoUpgradeMinorVersion is not false."]


# --- private-link-visibility (advisory) and -production (mandatory) ---------------------------------------
def test_visibility_pass():
    assert check(rules.private_link_visibility, rules.RELEASE, release()) == []
    assert check(rules.private_link_visibility_production, rules.RELEASE, release(), production=True) == []
    wildcard = release(annotations={INTERNAL: "true", VIS: "*"})
    assert check(rules.private_link_visibility, rules.RELEASE, wildcard, production=True) == []
    assert check(rules.private_link_visibility_production, rules.RELEASE, wildcard, production=False) == []
    assert check(rules.private_link_visibility_production, rules.RELEASE, wildcard, production=True,
                 config={"allowedWildcardStacks": ["prod-eu"]}, stack="prod-eu") == []


def test_visibility_fail():
    wildcard = release(annotations={INTERNAL: "true", VIS: "*"})
    assert check(rules.private_link_visibility, rules.RELEASE, wildcard)
    assert check(rules.private_link_visibility_production, rules.RELEASE, wildcard, production=True, stack="prod-eu") == [
        "production stack 'prod-eu' exposes the private link service to every subscription (azure-pls-visibility '*'); "
        "set privateLinkVisibility to your Grafana's subscription id(s), or allow-list the stack in allowedWildcardStacks."]
    assert check(rules.private_link_visibility_production, rules.RELEASE, wildcard, production=True,
                 config={"allowedWildcardStacks": ["other"]}, stack="prod-eu")
    assert rules.private_link_visibility.enforcement_level.value == "advisory"
    assert rules.private_link_visibility_production.enforcement_level.value == "mandatory"


# --- managed-private-endpoint-request-message ------------------------------------------------------------
def test_request_message():
    assert check(rules.managed_private_endpoint_request_message, rules.MPE, {"requestMessage": "Grafana amg to Pyroscope"}) == []
    assert check(rules.managed_private_endpoint_request_message, rules.MPE, {"requestMessage": "  "})
    assert check(rules.managed_private_endpoint_request_message, rules.MPE, {})


# --- approval-targets-one-connection (stack policy) ------------------------------------------------------
def stack_check(policy, resources):
    messages: list[str] = []
    subjects = [PolicyResource(t, analyzer_props(p), f"urn::{n}", n, None, None, None, [], {})
                for t, n, p in resources]
    policy.validate(StackValidationArgs(subjects, {}, {}), lambda message, urn=None: messages.append(message))
    return messages


def approval(name, target):
    return (rules.COMMAND, name, {"create": "bash scripts/approve_private_endpoint_connection.sh",
                                  "environment": {"PRIVATE_ENDPOINT_NAME": target}})


MPE_RES = (rules.MPE, "mpe", {"workspaceName": "amg", "managedPrivateEndpointName": "pyro", "requestMessage": "x"})


def test_approvals_pass():
    assert stack_check(rules.approval_targets_one_connection, [MPE_RES, approval("a", "grafana-amg-pyro")]) == []


@pytest.mark.parametrize("approvals,expected", [
    ([], "has 0 approvals"),
    ([approval("a", "grafana-amg-pyro"), approval("b", "grafana-amg-pyro")], "has 2 approvals"),
    ([approval("a", "grafana-amg-*")], "does not name exactly one private endpoint"),
    ([approval("a", "grafana-amg-pyro"), approval("b", "grafana-other-x")], "which is no managed private endpoint"),
])
def test_approvals_fail(approvals, expected):
    assert any(expected in m for m in stack_check(rules.approval_targets_one_connection, [MPE_RES, *approvals]))


# --- grafana-standard-with-identity and grafana-public-network-access-disabled ---------------------------
GRAFANA = {"sku": {"name": "Standard"}, "identity": {"type": "SystemAssigned"}, "properties": {"publicNetworkAccess": "Disabled"}}


def test_grafana_pass():
    assert check(rules.grafana_standard_with_identity, rules.GRAFANA, GRAFANA) == []
    assert check(rules.grafana_public_network_access_disabled, rules.GRAFANA, GRAFANA) == []


def test_grafana_fail():
    assert check(rules.grafana_standard_with_identity, rules.GRAFANA, {**GRAFANA, "sku": {"name": "Essential"}}) == [
        "Azure Managed Grafana is Essential tier; managed private endpoints need Standard."]
    assert check(rules.grafana_standard_with_identity, rules.GRAFANA, {**GRAFANA, "identity": {"type": "None"}})
    assert check(rules.grafana_public_network_access_disabled, rules.GRAFANA, {**GRAFANA, "properties": {"publicNetworkAccess": "Enabled"}})
    assert check(rules.grafana_public_network_access_disabled, rules.GRAFANA, {**GRAFANA, "properties": {}})


# --- role-assignment-least-privilege ---------------------------------------------------------------------
def role(guid, scope=f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Monitor/accounts/amw"):
    return {"roleDefinitionId": f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{guid}", "scope": scope, "principalId": "p"}


def test_roles_pass():
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role("b0d8363b-8ddd-447d-831f-62ca05bff136")) == []
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role("22926164-76b3-42b3-bc55-97df8dab3e41")) == []
    reader = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role(reader), config={"allowedRoleDefinitionIds": [reader]}) == []


def test_roles_fail():
    owner = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role(owner, f"/subscriptions/{SUB}"),
                 config={"allowedRoleDefinitionIds": [owner]}) == [f"Owner at subscription scope /subscriptions/{SUB} is never granted by this stack."]
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role("b24988ac-6180-42a0-ab88-20f7382dd24c", f"/subscriptions/{SUB}/"))
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, role("acdd72a7-3385-48ef-bd42-f606fba81ae7"))
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, {"roleDefinitionId": "Monitoring Data Reader", "scope": "x"})


# --- required-tags ---------------------------------------------------------------------------------------
def test_tags_pass():
    assert check(rules.required_tags, rules.MPE, {"tags": {"managed-by": "aks-gpu-observability"}}) == []
    assert check(rules.required_tags, rules.EXTENSION, {}) == []  # takes no tags
    assert check(rules.required_tags, rules.MPE, {"tags": {"managed-by": "x", "costCenter": "1"}}, config={"requiredTags": ["costCenter"]}) == []


def test_tags_fail():
    assert check(rules.required_tags, rules.MPE, {}) == ["missing required tags: managed-by."]
    assert check(rules.required_tags, rules.GRAFANA, {"tags": {"managed-by": "x"}}, config={"requiredTags": ["costCenter", "owner"]}) == [
        "missing required tags: costCenter, owner."]


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


@pytest.mark.parametrize("type_,props,where", [
    (rules.COMMAND, {"environment": {"GRAFANA_TOKEN": "abc123"}}, "environment.GRAFANA_TOKEN"),
    (rules.COMMAND, {"environment": {"BODY": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl"}}, "environment.BODY"),
    (rules.RELEASE, {"values": {"minio": {"rootPassword": "supersecret"}}}, "values.minio.rootPassword"),
    (rules.RELEASE, {"values": {"x": {"conn": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc=="}}}, "values.x.conn"),
    # The analyzer hands a rule the plain value of a Pulumi secret: a credential is caught either way.
    (rules.COMMAND, {"environment": {"API_TOKEN": secret("t0ken")}}, "environment.API_TOKEN"),
    # Lists reach rules as proxies, not list: they are walked too (a fault found in review).
    (rules.RELEASE, {"values": {"pyroscope": {"extraArgs": ["--x", {"client_secret": "s3cr3t"}]}}}, "values.pyroscope.extraArgs[1].client_secret"),
])
def test_secrets_fail(type_, props, where):
    assert check(rules.no_plaintext_secrets, type_, props) == [f"{where} holds a credential-looking value."]


def test_unknown_values_skip_only_themselves():
    """At preview a datasource step's DATASOURCE is not known; the rule still checks the other values (a
    fault found in review: one unknown value skipped the whole resource)."""
    env = {"DATASOURCE": UNKNOWN_STRING_VALUE, "GRAFANA_TOKEN": "abc123"}
    assert check(rules.no_plaintext_secrets, rules.COMMAND, {"environment": env}) == [
        "environment.GRAFANA_TOKEN holds a credential-looking value."]
    owner = {"roleDefinitionId": f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
             "scope": UNKNOWN_STRING_VALUE, "principalId": "p"}
    assert check(rules.role_assignment_least_privilege, rules.ROLE_ASSIGNMENT, owner) == [
        "role 8e3af657-a8ff-443c-a75c-2fe8c4bcb635 is not an allowed built-in role (allowedRoleDefinitionIds)."]


def test_load_balancer_inside_a_list_is_found():
    values = {"extraServices": [{"type": "LoadBalancer", "annotations": {}}]}
    assert check(rules.pyroscope_service_internal, rules.RELEASE, {"values": values}) == [
        f'values.extraServices[0] is a LoadBalancer Service without {INTERNAL}: "true"; it would get a public IP.']


# --- the pack as a whole ---------------------------------------------------------------------------------
def test_every_rule_is_described_and_named():
    names = [p.name for p in rules.POLICIES]
    assert len(names) == len(set(names))
    for policy in rules.POLICIES:
        assert policy.name == policy.name.lower() and " " not in policy.name and "_" not in policy.name
        assert policy.description and policy.remediation_steps and policy.enforcement_level is not None


def test_dev_plan_has_no_mandatory_violation():
    violations = policy_check.evaluate(run("dev"))
    assert [v.level for v in violations] == ["advisory"]
    assert violations[0].policy == "private-link-visibility"


def test_created_grafana_plan_is_clean_but_for_advisories():
    violations = policy_check.evaluate(run("dev", {"createGrafana": "true", "createMonitorWorkspace": "true"}))
    assert {v.policy for v in violations} == {"private-link-visibility", "grafana-public-network-access-disabled"}
    assert all(v.level == "advisory" for v in violations)


def test_pack_config_raises_and_disables():
    plan = run("dev", {"createGrafana": "true"})
    raised = policy_check.evaluate(plan, {"grafana-public-network-access-disabled": "mandatory", "private-link-visibility": "disabled"})
    assert [(v.policy, v.level) for v in raised] == [("grafana-public-network-access-disabled", "mandatory")]
    tagged = policy_check.evaluate(run("dev"), {"required-tags": {"requiredTags": ["costCenter"]}})
    assert any(v.policy == "required-tags" and "costCenter" in v.message for v in tagged)
    with pytest.raises(policy_check.PolicyConfigError, match="no such policy"):
        policy_check.evaluate(plan, {"no-such-rule": "mandatory"})
    with pytest.raises(policy_check.PolicyConfigError, match="required-tags"):
        policy_check.evaluate(plan, {"required-tags": {"requiredTags": "costCenter"}})
    production = run("dev", {"production": "true"})
    assert {v.level for v in policy_check.evaluate(production, {"all": "advisory"})} == {"advisory"}
    assert {v.level for v in policy_check.evaluate(production, {"all": "advisory", "private-link-visibility-production": "mandatory"})} == {"mandatory"}
    # remediate on a validate-only rule is mandatory, as in the analyzer
    assert {v.level for v in policy_check.evaluate(plan, {"grafana-public-network-access-disabled": "remediate"})} >= {"mandatory"}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "tools.plan", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_cli_policy_exit_codes(tmp_path):
    ok = cli("--stack", "dev", "--policy")
    assert ok.returncode == 0, ok.stderr
    assert "[advisory]  private-link-visibility" in ok.stdout
    bad = cli("--stack", "dev", "--policy", "--set", "production=true", "--set", "privateLinkVisibility=*")
    assert bad.returncode == 1
    assert "[mandatory]  private-link-visibility-production  (kubernetes:helm.sh/v3:Release: pyroscope-release)" in bad.stdout
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"private-link-visibility-production": {"allowedWildcardStacks": ["dev"]}}))
    allowed = cli("--stack", "dev", "--policy-config", str(config), "--set", "production=true")
    assert allowed.returncode == 0, allowed.stdout
    as_json = json.loads(cli("--json", "--policy", "--set", "production=true").stdout)
    assert as_json["policyViolations"][0]["policy"] == "private-link-visibility-production"
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    fail = cli("--policy-config", str(broken))
    assert fail.returncode == 2 and fail.stderr.startswith("error: --policy-config: cannot read") and len(fail.stderr.splitlines()) == 1


def test_policy_pack_files():
    import yaml

    pack = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert pack["runtime"]["name"] == "python"
    main = (ROOT / "policy" / "__main__.py").read_text()
    assert "PolicyPack(" in main and "POLICIES" in main
    assert "pulumi-policy" in (ROOT / "policy" / "requirements.txt").read_text()
