"""What the policy pack's tests share: one rule run on one resource as the analyzer runs it (:func:`check`),
and the resources they check.
"""

from __future__ import annotations

import contextvars

import pulumi
from pulumi.runtime.config import set_all_config
from pulumi_policy import ResourceValidationArgs
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import unknown_checking_proxy

from offline import canned, policy_check

INTERNAL = "service.beta.kubernetes.io/azure-load-balancer-internal"
VIS = "service.beta.kubernetes.io/azure-pls-visibility"
SUB = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"


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


def release(annotations=None, service_type="LoadBalancer", version="1.15.0",
            chart="oci://ghcr.io/grafana/helm-charts/pyroscope", **extra):
    service = {"type": service_type, "port": 4040,
               "annotations": annotations if annotations is not None else {INTERNAL: "true", VIS: SUB}}
    return {"chart": chart, "version": version, "values": {"pyroscope": {"service": service}}, **extra}


# --- pyroscope-persistent-in-production (mandatory) --------------------------------------------------------
def persistent_release(persistence):
    props = release()
    props["values"]["pyroscope"]["persistence"] = persistence
    return props


#: The Inspektor Gadget extension as the stack declares it.
EXT = {"extensionType": "microsoft.inspektorgadget", "autoUpgradeMinorVersion": True, "releaseTrain": "preview",
       "configurationSettings": {"azureMonitor.enabled": "true", "gpuObservability.enabled": "true"}}


def outputs(type_, name, inputs, mode):
    """A created resource's outputs as the engine records them (offline.canned): after ``up`` or in a first preview."""
    return canned.resource_state(type_, name, inputs)[1] if mode == "up" else canned.preview_outputs(type_, inputs)
