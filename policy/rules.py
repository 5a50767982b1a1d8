"""The rules of the aks-gpu-observability policy pack (Pulumi CrossGuard, pulumi-policy for Python).

Owns: each rule (kebab-case name, description, enforcement level overridable in the pack's config, remediation)
and :data:`POLICIES`, the pack; the Pyroscope production rules are in :mod:`pyroscope_production`, what rules read
in :mod:`values` (both re-exported here). Input: resources as the engine sends them (type tokens, camelCase
properties; inputs for resource policies, outputs for the stack policy ``approval-targets-one-connection``) and the
stack's config (``aks-gpu-observability:production``). Output: violations reported through pulumi-policy.
Errors: none raised; a value not known yet (preview) raises ``UnknownValueError`` and the rule skips that value.
Imported by ``policy/__main__.py`` (the pack), the tests and ``python -m offline.plan --policy``. Research:
docs/decisions/offline-policy-rules.md. Upstream:
https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/resource/deploy/step_generator.go
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Callable, Optional

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

# The pack runs rules.py as a top-level module (policy/__main__.py, started by pulumi in policy/); the tests and
# `python -m offline.plan --policy` import the package policy.
try:
    from policy.pyroscope_production import pyroscope_network_policy_in_production, pyroscope_persistent_in_production
    from policy.values import (
        COMMAND,
        EXTENSION,
        GRAFANA,
        INTERNAL_LB,
        MPE,
        NETWORK_POLICY,
        NOT_KNOWN,
        PACK_NAME,
        PLS_VISIBILITY,
        RELEASE,
        ROLE_ASSIGNMENT,
        SERVICE,
        annotations_in,
        is_pyroscope_chart,
        known,
        leaves,
        load_balancer_services,
        mappings,
        production_schema,
        stack_is_production,
    )
except ModuleNotFoundError:
    from pyroscope_production import pyroscope_network_policy_in_production, pyroscope_persistent_in_production
    from values import (
        COMMAND,
        EXTENSION,
        GRAFANA,
        INTERNAL_LB,
        MPE,
        NETWORK_POLICY,
        NOT_KNOWN,
        PACK_NAME,
        PLS_VISIBILITY,
        RELEASE,
        ROLE_ASSIGNMENT,
        SERVICE,
        annotations_in,
        is_pyroscope_chart,
        known,
        leaves,
        load_balancer_services,
        mappings,
        production_schema,
        stack_is_production,
    )


#: azure-native resource types the stack uses that take ``tags`` (checked against the SDK in the tests).
TAGGABLE_TYPES = frozenset({MPE, GRAFANA, "azure-native:monitor:AzureMonitorWorkspace"})

#: Built-in roles (Azure RBAC) allowed by default: Monitoring Data Reader, Monitoring Reader, Grafana
#: Admin, Grafana Editor, Grafana Viewer, Storage Blob Data Contributor (pyroscopeMode microservices).
DEFAULT_ALLOWED_ROLES = [
    "b0d8363b-8ddd-447d-831f-62ca05bff136",
    "43d0d8ad-25c7-4714-9337-8ba259a9fe05",
    "22926164-76b3-42b3-bc55-97df8dab3e41",
    "a79a5197-3a5c-4973-a920-486035ffd60f",
    "60921a7e-fef1-4a43-9b16-a26c52ad4769",
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe",  # Storage Blob Data Contributor: Pyroscope's identity on its container
]
#: Grafana Admin, Editor, Viewer: granted on one Grafana workspace only (:data:`_GRAFANA_SCOPE`).
GRAFANA_ROLES = {
    "22926164-76b3-42b3-bc55-97df8dab3e41": "Grafana Admin",
    "a79a5197-3a5c-4973-a920-486035ffd60f": "Grafana Editor",
    "60921a7e-fef1-4a43-9b16-a26c52ad4769": "Grafana Viewer",
}
#: Owner, Contributor, User Access Administrator: never at subscription scope, whatever the config says.
BROAD_ROLES = {
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
    "b24988ac-6180-42a0-ab88-20f7382dd24c": "Contributor",
    "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9": "User Access Administrator",
}

_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?"
)
_ROLE_ID = re.compile(
    r"(?:/subscriptions/[0-9a-fA-F-]{36})?/providers/Microsoft\.Authorization/roleDefinitions/([0-9a-fA-F-]{36})",
    re.IGNORECASE,
)
_GRAFANA_SCOPE = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Dashboard/grafana/[^/]+",
                            re.IGNORECASE)
_SECRET_KEY = re.compile(
    r"password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|connection[_-]?string|"
    r"sas[_-]?(?:token|url)|credential",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----|"
    r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}|AccountKey=|SharedAccessKey=|[?&]sig=[\w%]{20,}"
)


def _service_internal(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == RELEASE:
        for path, service in load_balancer_services(args.props.get("values") or {}):
            annotations = service.get("annotations") or {}
            if str(annotations.get(INTERNAL_LB, "")).lower() != "true":
                report(f"{path} is a LoadBalancer Service without {INTERNAL_LB}: \"true\"; it would get a public IP.")
    elif args.resource_type == SERVICE:
        spec = args.props.get("spec") or {}
        annotations = (args.props.get("metadata") or {}).get("annotations") or {}
        if spec.get("type") == "LoadBalancer" and str(annotations.get(INTERNAL_LB, "")).lower() != "true":
            report(f"Service is type LoadBalancer without {INTERNAL_LB}: \"true\"; it would get a public IP.")


pyroscope_service_internal = ResourceValidationPolicy(
    name="pyroscope-service-internal",
    description="Services of type LoadBalancer (Pyroscope's included) use Azure's internal "
                "load balancer, never a public IP.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_service_internal,
    remediation_steps=f"Set the annotation {INTERNAL_LB}: \"true\" on the Service (its metadata.annotations; in "
                      "Helm values a Service's annotations), or use type ClusterIP.",
)


def _chart_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (RELEASE, "kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Chart"):
        return
    version = args.props.get("version")
    if not isinstance(version, str) or not _SEMVER.fullmatch(version):
        report(f"chart version {version!r} is not an exact version (no ranges, no empty, no 'latest').")
    chart = str(args.props.get("chart") or "")
    repo = str(((args.props.get("repositoryOpts") or {}).get("repo")) or "")
    if not chart.startswith("oci://") and not repo.startswith("https://"):
        report(f"chart {chart!r} comes neither from an oci:// registry nor from an https:// "
               f"repository ({repo or 'none'}).")


helm_chart_pinned = ResourceValidationPolicy(
    name="helm-chart-pinned",
    description="Helm releases pin an exact chart version and come from an oci:// registry or an https:// repository.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_chart_pinned,
    remediation_steps="Set version to an exact chart version such as 1.15.0, and chart to oci://... or "
                      "repositoryOpts.repo to https://...",
)


def _gpu_observability(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != EXTENSION:
        return
    if str(args.props.get("extensionType", "")).lower() != "microsoft.inspektorgadget":
        return
    settings = args.props.get("configurationSettings") or {}
    if str(settings.get("gpuObservability.enabled", "")).lower() != "true":
        report("the Inspektor Gadget extension must keep configurationSettings gpuObservability.enabled=true.")
    if args.props.get("version") and args.props.get("autoUpgradeMinorVersion") is not False:
        report(f"version {args.props.get('version')} is pinned but autoUpgradeMinorVersion is not false.")


inspektor_gadget_gpu_observability = ResourceValidationPolicy(
    name="inspektor-gadget-gpu-observability",
    description="The Inspektor Gadget extension keeps GPU observability on; a pinned version turns "
                "minor-version auto-upgrade off.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gpu_observability,
    remediation_steps="Keep extensionGpuObservability true; with extensionVersion set, the stack sets "
                      "autoUpgradeMinorVersion false.",
)


def _extension_unpinned(args: ResourceValidationArgs) -> Optional[str]:
    """Why a cluster extension can move under the stack (None when pinned): no ``version``, or minor-version
    auto-upgrade not off. pulumi-azure-native ``kubernetesconfiguration.Extension`` (the ARM extension's
    schema): ``version`` is the "User-specified version of the extension for this extension to 'pin'. To use
    'version', autoUpgradeMinorVersion must be 'false'", and ``releaseTrain`` is the train "this extension
    participates in for auto-upgrade"; unpinned, the extension moves with its train (Inspektor Gadget's
    ``preview`` here, a privileged DaemonSet)."""
    if args.resource_type != EXTENSION:
        return None
    version = args.props.get("version")
    if not isinstance(version, str) or not version.strip():
        return f"has no pinned version (releaseTrain {args.props.get('releaseTrain') or 'Stable'!r}, auto-upgrade)"
    if args.props.get("autoUpgradeMinorVersion") is not False:
        return f"pins version {version} but autoUpgradeMinorVersion is not false"
    return None


def _trial_and_production(name: str, reason: Callable[[ResourceValidationArgs], Optional[str]],
                          subject: Callable[[ResourceValidationArgs], str], fix: str, trial: str, production: str,
                          remediation_steps: str) -> tuple[ResourceValidationPolicy, ResourceValidationPolicy]:
    """Two rules on one finding: ``<name>`` (advisory, outside production: "<subject> <reason>; fine for a trial, not
    for production.") and ``<name>-in-production`` (mandatory when config production=true: "production stack '<stack>':
    <subject> <reason>; <fix>"). ``reason`` returns None when the resource is fine; ``trial`` and ``production`` are
    the two rules' descriptions."""
    def advisory(args: ResourceValidationArgs, report: ReportViolation) -> None:
        why = reason(args)
        if why and not stack_is_production(args):
            report(f"{subject(args)} {why}; fine for a trial, not for production.")

    def mandatory(args: ResourceValidationArgs, report: ReportViolation) -> None:
        why = reason(args)
        if why and stack_is_production(args):
            report(f"production stack {pulumi.get_stack()!r}: {subject(args)} {why}; {fix}")

    return (ResourceValidationPolicy(name=name, description=trial, enforcement_level=EnforcementLevel.ADVISORY,
                                     validate=advisory, remediation_steps=remediation_steps,
                                     config_schema=production_schema()),
            ResourceValidationPolicy(name=f"{name}-in-production", description=production,
                                     enforcement_level=EnforcementLevel.MANDATORY, validate=mandatory,
                                     remediation_steps=remediation_steps, config_schema=production_schema()))


extension_version_pinned, extension_version_pinned_in_production = _trial_and_production(
    "extension-version-pinned", _extension_unpinned,
    lambda args: f"cluster extension {args.props.get('extensionType') or args.name!r}",
    "set extensionVersion to the version to run.",
    trial="In a non-production stack, a cluster extension without a pinned version "
          "(autoUpgradeMinorVersion false) is reported.",
    production="In a production stack (config production=true), a cluster extension has version set and "
               "autoUpgradeMinorVersion false.",
    remediation_steps="Set extensionVersion to an exact version (the stack then sets autoUpgradeMinorVersion false).",
)


_DIGEST_PIN = re.compile(r"@sha256:[a-f0-9]{64}\Z")  # at the end: the digest of the whole reference


def _pyroscope_unpinned(args: ResourceValidationArgs) -> Optional[str]:
    """Why the Pyroscope release can change under the stack although its versions are exact (None when pinned by
    digest): a tag can be pushed again. The chart: an ``oci://...@sha256:<64 hex>`` reference is pulled by that
    digest (helm/helm ``pkg/registry/client.go`` ``ValidateReference`` at v3.17.3 and v3.20.2), a reference with a tag
    as well (``pyroscope:1.15.0@sha256:...``) is not: Helm 3.17.3 pulls it by the tag; an https:// chart
    repository has no such pin. The image: the chart writes ``<repository>:<tag>`` (chart 1.15.0
    ``templates/deployments-statefulsets.yaml``), so a tag ``<tag>@sha256:<64 hex>`` makes the reference a digest.
    Only a Release of chart ``pyroscope``."""
    if args.resource_type != RELEASE:
        return None
    if not is_pyroscope_chart(args.props):
        return None
    chart = str(args.props.get("chart") or "")
    reasons = []
    if not chart.startswith("oci://"):
        repo = str(((args.props.get("repositoryOpts") or {}).get("repo")) or "no repository")
        reasons.append(f"chart {chart!r} comes from {repo}, a chart repository, which cannot pin a digest")
    elif not _DIGEST_PIN.search(chart):
        reasons.append(f"chart {chart!r} is pinned by tag (version {args.props.get('version')}), not by digest")
    elif chart.count("@") != 1 or ":" in chart.split("@", 1)[0].rsplit("/", 1)[-1]:
        # <repository>:<tag>@sha256:<d>: Helm 3.17.3 pulls this by its tag, not the digest (helm/helm
        # pkg/registry/reference.go@v3.17.3 String); stack_config/rules.py _chart refuses it too.
        reasons.append(f"chart {chart!r} is not a digest-only reference (oci://.../pyroscope@sha256:<digest>); "
                       "Helm 3.17 pulls a reference that also names a tag by the tag")
    images = [(path, m["image"]) for path,
              m in mappings(args.props.get("values")) if isinstance(m.get("image"), Mapping)]
    if not images:
        reasons.append("values set no image, so the chart's default image goes by tag")
    for path, image in images:
        tag = image.get("tag")
        if not (isinstance(tag, str) and _DIGEST_PIN.search(tag)):
            reasons.append(f"image tag {tag!r} at {path}.image.tag has no @sha256: digest")
    return "; ".join(reasons) or None


pyroscope_pinned_by_digest, pyroscope_pinned_by_digest_in_production = _trial_and_production(
    "pyroscope-pinned-by-digest", _pyroscope_unpinned, lambda args: "Pyroscope release:",
    "set pyroscopeChart to oci://.../pyroscope@sha256:<digest> and pyroscopeImageTag to <tag>@sha256:<digest> "
    "(docs/how-it-works.md, \"Pins that cannot move\").",
    trial="In a non-production stack, a Pyroscope release whose chart or image goes by tag (not "
          "by sha256 digest) is reported.",
    production="In a production stack (config production=true), the Pyroscope release pins its oci:// chart "
               "and its image by sha256 digest.",
    remediation_steps="Set pyroscopeChart to oci://<registry>/<path>/pyroscope@sha256:<chart manifest "
                      "digest> and pyroscopeImageTag "
                      "to <tag>@sha256:<image index digest>; docs/how-it-works.md gives the "
                      "commands that print both digests.",
)


def _wildcard_visibility(args: ResourceValidationArgs) -> bool:
    """A Service (the stack's private link Service) or a release's Helm values asking for a PLS visible to '*'."""
    if args.resource_type == SERVICE:
        found = [(args.props.get("metadata") or {}).get("annotations") or {}]  # a Mapping, as the Helm values
    elif args.resource_type == RELEASE:
        found = list(annotations_in(args.props.get("values") or {}))
    else:
        return False
    return any(str(a.get(PLS_VISIBILITY, "")).split() == ["*"] for a in found)


def _visibility_advisory(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if _wildcard_visibility(args) and not stack_is_production(args):
        report("the private link service is visible to every subscription (azure-pls-visibility '*'); fine "
               "for a trial, not for production.")


def _visibility_production(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not (_wildcard_visibility(args) and stack_is_production(args)):
        return
    if pulumi.get_stack() in (args.get_config().get("allowedWildcardStacks") or []):
        return
    report(f"production stack {pulumi.get_stack()!r} exposes the private link service to every subscription "
           "(azure-pls-visibility '*'); Azure does not document the subscription Grafana's managed private endpoints "
           "come from, so narrowing may shut Grafana out: allow-list the stack in allowedWildcardStacks (the approval "
           "step approves only the connection carrying the stack's nonce, "
           "docs/security.md), or set privateLinkVisibility "
           "to subscription ids you have seen Grafana's connection come from.")


private_link_visibility = ResourceValidationPolicy(
    name="private-link-visibility",
    description="In a non-production stack, a private link service visible to every subscription ('*') is reported.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_visibility_advisory,
    config_schema=production_schema(),
    remediation_steps="For production, allow-list the stack in private-link-visibility-production's "
                      "allowedWildcardStacks, or set privateLinkVisibility to subscription ids Grafana's connection is "
                      "known to come from (docs/security.md).",
)

private_link_visibility_production = ResourceValidationPolicy(
    name="private-link-visibility-production",
    description="In a production stack (config production=true), the private link service is not visible to every "
                "subscription ('*'), unless the stack is allow-listed.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_visibility_production,
    config_schema=production_schema(
        allowedWildcardStacks={"type": "array", "items": {"type": "string"}, "default": []}),
    remediation_steps="Add the stack to this policy's allowedWildcardStacks (the approval nonce guards a '*' PLS: "
                      "docs/security.md), or set privateLinkVisibility to subscription ids Grafana's connection is "
                      "known to come from (not documented by Azure).",
)


def _request_message(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == MPE and not str(args.props.get("requestMessage") or "").strip():
        report("the managed private endpoint has no requestMessage; the PLS owner cannot "
               "tell who asks for the connection.")


managed_private_endpoint_request_message = ResourceValidationPolicy(
    name="managed-private-endpoint-request-message",
    description="Managed private endpoints carry a request message naming who asks for the connection.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_request_message,
    remediation_steps="Set requestMessage on the ManagedPrivateEndpoint (the stack names the Grafana and the cluster).",
)


#: A managed private endpoint's ARM id (case-insensitive, as ARM ids are).
_MPE_ID = re.compile(r"/providers/Microsoft\.Dashboard/grafana/([^/]+)/managedPrivateEndpoints/([^/]+)/?$",
                     re.IGNORECASE)


def connection_name(endpoint: Any) -> Optional[str]:
    """``grafana-<workspace>-<endpoint name>`` (lower case), the name the PLS connection of a managed private
    endpoint ends with, from the endpoint's outputs: its ARM ``id``
    (``…/providers/Microsoft.Dashboard/grafana/<workspace>/managedPrivateEndpoints/<name>``). ``name`` alone
    lacks the workspace and input-only ``workspaceName``/``managedPrivateEndpointName`` are not outputs.
    None while the id is not known (a first preview: azure-native reports it unknown) or names no endpoint."""
    rid = known(lambda: endpoint.props.get("id"))
    match = _MPE_ID.search(rid) if isinstance(rid, str) else None
    return f"grafana-{match.group(1)}-{match.group(2)}".lower() if match else None


def _approvals(args: StackValidationArgs, report: ReportViolation) -> None:
    """Stack policies see outputs: an MPE is known by its ``id``, an approval (a local Command, whose outputs
    include its inputs) by ``create`` and ``environment``. What is not known yet is not held against the
    stack; what is known is checked, counting unidentified endpoints against the approvals left for them."""
    endpoints: dict[str, Any] = {}
    unidentified = []
    for resource in args.resources:
        if resource.resource_type == MPE:
            name = connection_name(resource)
            if name:
                endpoints[name] = resource
            else:
                unidentified.append(resource)
    targeted: dict[str, list] = {}
    open_approvals = 0  # approvals whose target is not known yet: they may approve any endpoint
    for step in args.resources:
        create = known(lambda: str(step.props.get("create") or "")) if step.resource_type == COMMAND else ""
        if create is not NOT_KNOWN and "approve_private_endpoint_connection" not in create:
            continue
        target = known(lambda: str((step.props.get("environment") or {}).get("PRIVATE_ENDPOINT_NAME") or ""))
        if create is NOT_KNOWN or target is NOT_KNOWN:
            open_approvals += 1
        elif not target or any(ch in target for ch in "*?[]"):
            report(f"approval {step.name} does not name exactly one private endpoint "
                   f"(PRIVATE_ENDPOINT_NAME={target!r}).", step.urn)
        else:
            targeted.setdefault(target.lower(), []).append(step)
    for name, endpoint in endpoints.items():
        count = len(targeted.get(name, []))
        if count > 1 or (count == 0 and not open_approvals):
            report(f"managed private endpoint {endpoint.name} has {count} approvals of its connection "
                   f"{name!r}; expected exactly one.", endpoint.urn)
    strays = {name: steps for name, steps in targeted.items() if name not in endpoints}
    for name, steps in strays.items():
        if len(steps) > 1:
            report(f"{len(steps)} approvals ({', '.join(s.name for s in steps)}) target {name!r}; expected exactly "
                   "one.", steps[1].urn)
        if not unidentified:
            for step in steps:
                report(f"approval {step.name} targets {name!r}, which is no managed private endpoint of this stack.",
                       step.urn)
    if unidentified and len(strays) > len(unidentified):
        report(f"approvals target {len(strays)} endpoints ({', '.join(sorted(strays))}) "
               "that are not among this stack's "
               f"identified ones, but only {len(unidentified)} endpoint(s) are not identified yet.")
    for endpoint in unidentified[len(strays) + open_approvals:]:
        report(f"managed private endpoint {endpoint.name} has no approval: "
               f"{len(unidentified)} endpoint(s) not identified "
               f"yet, {len(strays) + open_approvals} approval(s) left for them.", endpoint.urn)


approval_targets_one_connection = StackValidationPolicy(
    name="approval-targets-one-connection",
    description="Every managed private endpoint's connection is approved by exactly one step, "
                "which names exactly that endpoint "
                "(checked on outputs: the endpoint's id, the approval command's environment).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_approvals,
    remediation_steps="Approve with steps/approve_private_endpoint_connection.sh and "
                      "PRIVATE_ENDPOINT_NAME=grafana-<grafanaName>-<mpeName>, once per endpoint.",
)


def _grafana_tier(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != GRAFANA:
        return
    sku = str(((args.props.get("sku") or {}).get("name")) or "")
    if sku != "Standard":
        report(f"Azure Managed Grafana is {sku or 'without a'} tier; managed private endpoints need Standard.")
    identity = str(((args.props.get("identity") or {}).get("type")) or "")
    if "SystemAssigned" not in identity:
        report("Azure Managed Grafana has no system-assigned identity; the Prometheus datasource authenticates "
               "with it.")


grafana_standard_with_identity = ResourceValidationPolicy(
    name="grafana-standard-with-identity",
    description="An Azure Managed Grafana the stack creates is Standard tier with a system-assigned identity.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_grafana_tier,
    remediation_steps="Create Grafana with sku Standard and identity SystemAssigned (the stack's ManagedGrafana does).",
)


def _grafana_private(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == GRAFANA and ((args.props.get("properties") or {}).get("publicNetworkAccess")
                                          or "Enabled") != "Disabled":
        report("Azure Managed Grafana allows public network access.")


grafana_public_network_access_disabled = ResourceValidationPolicy(
    name="grafana-public-network-access-disabled",
    description="An Azure Managed Grafana the stack creates has public network access disabled (advisory by default; "
                "raise it to mandatory in the pack config).",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_grafana_private,
    remediation_steps="Set grafanaPublicNetworkAccess to Disabled and reach Grafana through a private endpoint.",
)


def _role_fields(args: ResourceValidationArgs) -> Optional[tuple[Any, Callable[[], Any]]]:
    """(role definition id, a reader of the scope) of a role assignment the stack makes: an azure-native
    RoleAssignment, or a step that ensures one (``steps/ensure_role_assignment.sh``: ``ROLE_DEFINITION_ID`` and
    ``SCOPE`` in its environment); None for anything else."""
    if args.resource_type == ROLE_ASSIGNMENT:
        return args.props.get("roleDefinitionId"), lambda: args.props.get("scope")
    if args.resource_type == COMMAND:
        environment = args.props.get("environment") or {}
        if isinstance(environment, Mapping) and "ROLE_DEFINITION_ID" in environment:
            return environment["ROLE_DEFINITION_ID"], lambda: environment.get("SCOPE")
    return None


def _roles(args: ResourceValidationArgs, report: ReportViolation) -> None:
    fields = _role_fields(args)
    if fields is None:
        return
    role_id = str(fields[0] or "")
    match = _ROLE_ID.fullmatch(role_id)
    if not match:
        report(f"roleDefinitionId {role_id!r} is not a role definition id "
               "(…/providers/Microsoft.Authorization/roleDefinitions/<guid>).")
        return
    role = match.group(1).lower()
    allowed = [r.lower() for r in (args.get_config().get("allowedRoleDefinitionIds") or DEFAULT_ALLOWED_ROLES)]

    def scope() -> Optional[str]:
        try:  # read last: the scope is not known at preview when the stack creates what it points at
            return str(fields[1]() or "")
        except UnknownValueError:
            return None

    if role in BROAD_ROLES:
        where = scope() or ""
        if re.fullmatch(r"/subscriptions/[^/]+/?", where):
            report(f"{BROAD_ROLES[role]} at subscription scope {where} is never granted by this stack.")
            return
    if role not in allowed:
        report(f"role {role} is not an allowed built-in role (allowedRoleDefinitionIds).")
        return
    # A Grafana role on a resource group or subscription reaches every Grafana in it, present and future; and no
    # role-assignment condition can limit the scope (docs/deployer-role.md), so the rule does.
    where = scope() if role in GRAFANA_ROLES else None
    if where is not None and not _GRAFANA_SCOPE.fullmatch(where.rstrip("/")):
        report(f"{GRAFANA_ROLES[role]} at scope {where or '(none)'}: a Grafana role is granted on one Grafana "
               "workspace (…/providers/Microsoft.Dashboard/grafana/<name>) only.")


role_assignment_least_privilege = ResourceValidationPolicy(
    name="role-assignment-least-privilege",
    description="Role assignments (and steps that ensure one) use an allowed built-in role id, never Owner, "
                "Contributor or User Access Administrator at subscription scope, and a Grafana role (Admin, Editor, "
                "Viewer) only on one Grafana workspace.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_roles,
    config_schema=PolicyConfigSchema(
        properties={"allowedRoleDefinitionIds": {"type": "array", "items": {"type": "string"},
                                                 "default": DEFAULT_ALLOWED_ROLES}}
    ),
    remediation_steps="Use Monitoring Data Reader (b0d8363b-…) on the workspace and Grafana roles on the Grafana "
                      "workspace; add other built-in roles to allowedRoleDefinitionIds.",
)


def _tags(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in TAGGABLE_TYPES:
        return
    tags = args.props.get("tags") or {}
    missing = [key for key in (args.get_config().get("requiredTags") or []) if not str(tags.get(key) or "").strip()]
    if missing:
        report(f"missing required tags: {', '.join(missing)}.")


required_tags = ResourceValidationPolicy(
    name="required-tags",
    description="Azure resources that take tags carry the required tags.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_tags,
    config_schema=PolicyConfigSchema(
        properties={"requiredTags": {"type": "array", "items": {"type": "string"}, "default": ["managed-by"]}}
    ),
    remediation_steps="Add the tags with the stack's tags config (pulumi config set --path 'tags[0]' key=value); "
                      "the stack always sets managed-by.",
)


def _secrets(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == COMMAND:
        scope, where = args.props.get("environment") or {}, "environment"
    elif args.resource_type == RELEASE:
        scope, where = args.props.get("values") or {}, "values"
    else:
        return
    for path, text in leaves(scope):
        leaf = re.split(r"[.\[]", path)[-1]
        if isinstance(text, str) and text and (_SECRET_KEY.search(leaf) or _SECRET_VALUE.search(text)):
            report(f"{where}.{path} holds a credential-looking value.")


no_plaintext_secrets = ResourceValidationPolicy(
    name="no-plaintext-secrets",
    description="Command environments and Helm values carry no credentials (passwords, tokens, keys, connection "
                "strings). Rules cannot tell a Pulumi secret from plain text (the analyzer unwraps secrets), and "
                "either way the value lands in a process environment or a Helm release, so none are allowed.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_secrets,
    remediation_steps="Let the step get a token at run time (the scripts use az and your sign-in); for Helm, reference "
                      "a Kubernetes Secret (existingSecret) instead of a value.",
)


POLICIES = [
    pyroscope_service_internal,
    helm_chart_pinned,
    inspektor_gadget_gpu_observability,
    extension_version_pinned,
    extension_version_pinned_in_production,
    pyroscope_pinned_by_digest,
    pyroscope_pinned_by_digest_in_production,
    pyroscope_persistent_in_production,
    pyroscope_network_policy_in_production,
    private_link_visibility,
    private_link_visibility_production,
    managed_private_endpoint_request_message,
    approval_targets_one_connection,
    grafana_standard_with_identity,
    grafana_public_network_access_disabled,
    role_assignment_least_privilege,
    required_tags,
    no_plaintext_secrets,
]


#: What the pack, the tests and ``python -m offline.plan --policy`` read as ``rules.<name>``.
__all__ = ["BROAD_ROLES", "COMMAND", "DEFAULT_ALLOWED_ROLES", "EXTENSION", "GRAFANA", "GRAFANA_ROLES", "MPE",
           "NETWORK_POLICY", "NOT_KNOWN", "PACK_NAME", "POLICIES", "RELEASE", "ROLE_ASSIGNMENT", "SERVICE",
           "TAGGABLE_TYPES",
           "approval_targets_one_connection", "connection_name", "extension_version_pinned",
           "extension_version_pinned_in_production", "grafana_public_network_access_disabled",
           "grafana_standard_with_identity", "helm_chart_pinned", "inspektor_gadget_gpu_observability", "known",
           "managed_private_endpoint_request_message", "no_plaintext_secrets", "private_link_visibility",
           "private_link_visibility_production", "pyroscope_network_policy_in_production",
           "pyroscope_persistent_in_production", "pyroscope_pinned_by_digest",
           "pyroscope_pinned_by_digest_in_production", "pyroscope_service_internal", "required_tags",
           "role_assignment_least_privilege"]
