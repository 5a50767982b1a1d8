"""Run the policy pack's rules (policy/rules.py) over an offline plan, as `pulumi preview --policy-pack` would.

Owns: the analyzer host (SIMULATED; the rules and pulumi-policy's argument types and property handling are real):
:func:`configure` and :func:`load_pack_config` (CrossGuard pack config, validated against each policy's schema),
:func:`evaluate` (resource policies see inputs, the stack policy outputs, per :data:`MODES` ``preview`` or ``up``),
:func:`render`. Input: a :class:`~offline.program.Plan`, the pack config, the mode. Output: :class:`Violation` s.
Errors: ``ValueError`` for a bad pack config file. Research (what each policy sees, unknowns, enforcement levels):
docs/decisions/offline-policy-check.md. Upstream:
https://github.com/pulumi/pulumi-policy/blob/v1.21.0/sdk/python/lib/pulumi_policy/policy.py
"""

from __future__ import annotations

import contextvars
import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import jsonschema
import pulumi
from pulumi.runtime.config import set_all_config
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from offline import canned
from offline.program import Plan, Resource
from policy import rules

PACK_VERSION = "0.1.0"
#: ``"preview"``: stack policies see a first preview's outputs; ``"up"``: the outputs after ``pulumi up``.
MODES = ("preview", "up")


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str  # "mandatory" or "advisory" (remediate counts as mandatory: our rules only validate)
    description: str
    message: str
    urn: Optional[str]
    resource: str  # "<type>: <name>" or "" for the stack

    def to_json(self) -> dict:
        return {"policy": self.policy, "enforcementLevel": self.level, "message": self.message, "urn": self.urn}


class PolicyConfigError(ValueError):
    """Pack config that names no policy, or does not fit a policy's config schema (one line)."""


def _level(value: Any, where: str) -> str:
    if value not in ("advisory", "mandatory", "remediate", "disabled"):
        raise PolicyConfigError(f"{where}: enforcementLevel must be advisory, mandatory, remediate or "
                                f"disabled (got {json.dumps(value)})")
    return "mandatory" if value == "remediate" else value  # our rules only validate


def check_pack_config(pack_config: Mapping[str, Any]) -> None:
    """Refuse what the CLI's parser refuses before any policy runs (pulumi/pulumi v3.230.0
    ``pkg/resource/analyzer/config.go`` ``parsePolicyPackConfig``, ``extractEnforcementLevel``): each entry,
    ``"all"`` included, is a level string or an object whose ``enforcementLevel``, if present, is one. Raises
    PolicyConfigError naming the entry (in the file's order)."""
    for name, entry in pack_config.items():
        if isinstance(entry, str):
            _level(entry, name)
        elif isinstance(entry, dict):
            if "enforcementLevel" in entry:
                _level(entry["enforcementLevel"], name)
        else:
            raise PolicyConfigError(f"{name}: expected an enforcement level string or an "
                                    f"object (got {json.dumps(entry)})")


def policy_settings(policy, pack_config: Mapping[str, Any]) -> tuple[str, dict]:
    """(enforcement level, config) of one policy under the pack config."""
    everyone = pack_config.get("all")
    if isinstance(everyone, dict):
        everyone = everyone.get("enforcementLevel")
    level = everyone or (policy.enforcement_level or EnforcementLevel.ADVISORY).value
    entry = pack_config.get(policy.name, {})
    if isinstance(entry, str):
        entry = {"enforcementLevel": entry}
    entry = dict(entry)
    level = _level(entry.pop("enforcementLevel", level), policy.name)
    schema = policy.config_schema
    properties = schema.properties if schema else {}
    config = {key: spec["default"] for key, spec in properties.items() if "default" in spec}
    config.update(entry)
    try:
        jsonschema.validate(config, {"type": "object", "properties": properties, "additionalProperties": False,
                                     "required": (schema.required or []) if schema else []})
    except jsonschema.ValidationError as error:
        where = ".".join([policy.name, *map(str, error.absolute_path)])  # the offending property, when there is one
        raise PolicyConfigError(f"{where}: {error.message}") from None
    return level, config


def _options(resource: Resource) -> PolicyResourceOptions:
    timeouts = resource.options.get("customTimeouts") or {}
    return PolicyResourceOptions(
        protect=resource.options["protect"], ignore_changes=resource.options["ignoreChanges"],
        delete_before_replace=resource.options["deleteBeforeReplace"], aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0) if not timeouts else PolicyCustomTimeouts(
            *(float(str(timeouts.get(k, "0")).rstrip("s") or 0) for k in ("create", "update", "delete"))),
        additional_secret_outputs=[], parent=resource.parent)


def stack_properties(resource: Resource, mode: str = "preview") -> dict:
    """The properties (wire format) the engine hands stack policies for ``resource`` in ``mode`` (see the
    module docstring): a resource being created in a preview gets :func:`offline.canned.preview_outputs` of
    its inputs; otherwise, the outputs the (mocked) provider returned, or the inputs where none did (default
    providers: a provider's outputs are its inputs)."""
    if mode == "preview" and resource.custom:
        shaped = canned.preview_outputs(resource.type, resource.wire)
        if shaped is not None:
            return shaped
    return resource.outputs if resource.outputs is not None else resource.wire


def _policy_resources(subjects: list[Resource], props_of) -> dict[str, PolicyResource]:
    """urn -> PolicyResource with ``props_of(resource)`` as the analyzer hands them over, parents and
    dependencies linked as in pulumi-policy's ``AnalyzeStack``."""
    by_urn = {r.urn: PolicyResource(r.type, unknown_checking_proxy(deserialize_properties(props_of(r))), r.urn,
                                    r.name, _options(r), None, None, [], {}) for r in subjects}
    for resource in subjects:
        by_urn[resource.urn].dependencies = [by_urn[d] for d in resource.dependencies if d in by_urn]
        by_urn[resource.urn].parent = by_urn.get(resource.parent or "")
    return by_urn


def configure(pack_config: Optional[Mapping[str, Any]] = None,
              policies: Optional[list] = None) -> dict[str, tuple[str, dict]]:
    """policy name -> (enforcement level, config) under ``pack_config``, for ``policies`` (default
    :data:`policy.rules.POLICIES`); needs no plan, so a bad pack config is refused before anything is planned.
    Raises PolicyConfigError naming the entry: a malformed one (:func:`check_pack_config`), one that names no
    policy, or a config that does not fit its policy's schema (:func:`policy_settings`)."""
    policies = rules.POLICIES if policies is None else policies
    pack_config = dict(pack_config or {})
    check_pack_config(pack_config)
    names = {p.name for p in policies}
    unknown = [name for name in pack_config if name not in names and name != "all"]
    if unknown:
        raise PolicyConfigError(f"{unknown[0]}: no such policy in {rules.PACK_NAME}; "
                                f"policies: {', '.join(sorted(names))}")
    return {p.name: policy_settings(p, pack_config) for p in policies}


def evaluate(plan: Plan, pack_config: Optional[Mapping[str, Any]] = None, mode: str = "preview",
             policies: Optional[list] = None) -> list[Violation]:
    """Every violation the pack reports for ``plan`` (resources in plan order, then stack policies), stack
    policies seeing the outputs of ``mode`` (:data:`MODES`). ``policies``: the rules to run (default
    :data:`policy.rules.POLICIES`). Raises PolicyConfigError for a bad pack config, ValueError for a bad mode."""
    if mode not in MODES:
        raise ValueError(f"--policy-mode: expected one of {', '.join(MODES)} (got {mode!r})")
    policies = rules.POLICIES if policies is None else policies
    settings = configure(pack_config, policies)

    def run() -> list[Violation]:
        set_all_config(plan.config, plan.secret_keys)
        pulumi.runtime.configure(pulumi.runtime.Settings(project=plan.project, stack=plan.stack,
                                                         dry_run=mode == "preview"))
        found: list[Violation] = []
        subjects = [r for r in plan.resources if r.type != "pulumi:pulumi:Stack"]
        checked = _policy_resources(subjects, lambda r: r.wire)
        final = _policy_resources(subjects, lambda r: stack_properties(r, mode))
        for policy in policies:
            level, config = settings[policy.name]
            if level == "disabled":
                continue

            def report(message: str, urn: Optional[str] = None, *, subject: Optional[Resource] = None) -> None:
                target = subject or next((r for r in subjects if r.urn == urn), None)
                found.append(Violation(policy.name, level, policy.description, message,
                                       target.urn if target else urn,
                                       f"{target.type}: {target.name}" if target else ""))

            def cannot_run(message: str) -> None:
                found.append(Violation(policy.name, "advisory", policy.description, message, None, ""))

            if isinstance(policy, ResourceValidationPolicy):
                for resource in subjects:
                    subject = checked[resource.urn]
                    args = ResourceValidationArgs(resource.type, subject.props, resource.urn, resource.name,
                                                  subject.opts, None, config, {})
                    _skipping_unknowns(policy, args,
                                       lambda message, urn=None, s=resource: report(message, urn, subject=s),
                                       cannot_run)
            else:
                _skipping_unknowns(policy, StackValidationArgs(list(final.values()), config, {}), report, cannot_run)
        return found

    return contextvars.Context().run(run)


def _skipping_unknowns(policy, args, report, on_unknown=None) -> None:
    """The analyzer's handling: a rule that reads a value not known yet stops; ``on_unknown`` gets the
    advisory message the analyzer reports instead (pulumi-policy 1.21.0 ``policy.py``)."""
    try:
        policy.validate(args, report)
    except UnknownValueError as error:
        if on_unknown:
            on_unknown(f"can't run policy '{policy.name}' from policy pack '{rules.PACK_NAME}@v{PACK_VERSION}' "
                       f"during preview: {error.message}")


def render(violations: list[Violation]) -> str:
    """Like the Pulumi CLI's "Policies:" section."""
    mandatory = any(v.level == "mandatory" for v in violations)
    mark = "❌" if mandatory else ("⚠️" if violations else "✅")
    lines = ["Policies:", f"    {mark} {rules.PACK_NAME}@v{PACK_VERSION} (local: policy)"]
    for v in violations:
        where = f"  ({v.resource})" if v.resource else ""
        lines += [f"        - [{v.level}]  {v.policy}{where}", f"          {v.description}", f"          {v.message}"]
    if not violations:
        lines.append("        no violations")
    return "\n".join(lines)


def load_pack_config(path: str) -> dict:
    """A pack config file (JSON, as for `pulumi preview --policy-pack-config`)."""
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, json.JSONDecodeError) as error:
        raise PolicyConfigError(f"--policy-config: cannot read {path}: {error}") from None
    if not isinstance(value, dict):
        raise PolicyConfigError(f"--policy-config: {path} must hold a JSON object")
    return value
