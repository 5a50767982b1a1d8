"""Run the policy pack's rules (policy/rules.py) over an offline plan, as `pulumi preview --policy-pack`
would over a real preview. SIMULATED: the analyzer host. Real: the rules, pulumi-policy's own argument
types, and what its analyzer does to properties before a rule sees them (``deserialize_properties`` without
the secret marker, then ``unknown_checking_proxy``; a rule that reads a value not known yet is skipped for
that resource).

Pack config follows CrossGuard's format: ``{"<policy>": "advisory"|"mandatory"|"remediate"|"disabled"}``
or ``{"<policy>": {"enforcementLevel": ..., <the policy's config properties>}}``, and ``"all"`` sets the
level of every policy not named; missing properties take the defaults of the policy's config schema, and
the result is validated against it (jsonschema). ``remediate`` on a rule that only validates counts as
mandatory, as in the analyzer.
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

from policy import rules
from tools.mock_engine import Plan, Resource

PACK_VERSION = "0.1.0"


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
        raise PolicyConfigError(f"{where}: enforcementLevel must be advisory, mandatory, remediate or disabled (got {value!r})")
    return "mandatory" if value == "remediate" else value  # our rules only validate


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
        raise PolicyConfigError(f"{policy.name}: {error.message}") from None
    return level, config


def _options(resource: Resource) -> PolicyResourceOptions:
    timeouts = resource.options.get("customTimeouts") or {}
    return PolicyResourceOptions(
        protect=resource.options["protect"], ignore_changes=resource.options["ignoreChanges"],
        delete_before_replace=resource.options["deleteBeforeReplace"], aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0) if not timeouts else PolicyCustomTimeouts(
            *(float(str(timeouts.get(k, "0")).rstrip("s") or 0) for k in ("create", "update", "delete"))),
        additional_secret_outputs=[], parent=resource.parent)


def evaluate(plan: Plan, pack_config: Optional[Mapping[str, Any]] = None) -> list[Violation]:
    """Every violation the pack reports for ``plan`` (resources in plan order, then stack policies)."""
    pack_config = dict(pack_config or {})
    names = {p.name for p in rules.POLICIES}
    unknown = sorted(set(pack_config) - names - {"all"})
    if unknown:
        raise PolicyConfigError(f"{unknown[0]}: no such policy in {rules.PACK_NAME}; policies: {', '.join(sorted(names))}")
    settings = {p.name: policy_settings(p, pack_config) for p in rules.POLICIES}

    def run() -> list[Violation]:
        set_all_config(plan.config, plan.secret_keys)
        pulumi.runtime.configure(pulumi.runtime.Settings(project=plan.project, stack=plan.stack, dry_run=True))
        found: list[Violation] = []
        subjects = [r for r in plan.resources if r.type != "pulumi:pulumi:Stack"]
        by_urn: dict[str, PolicyResource] = {}
        for resource in subjects:
            props = unknown_checking_proxy(deserialize_properties(resource.wire))
            by_urn[resource.urn] = PolicyResource(resource.type, props, resource.urn, resource.name, _options(resource),
                                                  None, None, [], {})
        for resource in subjects:
            by_urn[resource.urn].dependencies = [by_urn[d] for d in resource.dependencies if d in by_urn]
            by_urn[resource.urn].parent = by_urn.get(resource.parent or "")
        for policy in rules.POLICIES:
            level, config = settings[policy.name]
            if level == "disabled":
                continue

            def report(message: str, urn: Optional[str] = None, *, subject: Optional[Resource] = None) -> None:
                target = subject or next((r for r in subjects if r.urn == urn), None)
                found.append(Violation(policy.name, level, policy.description, message,
                                       target.urn if target else urn, f"{target.type}: {target.name}" if target else ""))

            try_validate = _skipping_unknowns
            if isinstance(policy, ResourceValidationPolicy):
                for resource in subjects:
                    subject = by_urn[resource.urn]
                    args = ResourceValidationArgs(resource.type, subject.props, resource.urn, resource.name,
                                                  subject.opts, None, config, {})
                    try_validate(policy, args, lambda message, urn=None, s=resource: report(message, urn, subject=s))
            else:
                try_validate(policy, StackValidationArgs(list(by_urn.values()), config, {}), report)
        return found

    return contextvars.Context().run(run)


def _skipping_unknowns(policy, args, report) -> None:
    """The analyzer's handling: a rule that reads a value not known yet is not applied to that resource."""
    try:
        policy.validate(args, report)
    except UnknownValueError:
        pass


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
