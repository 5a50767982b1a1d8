"""What came in secret goes out secret: inputs and exports that carry a secret config value are Pulumi secrets.

A value is secret config when it is set with ``pulumi config set --secret`` or comes from a secret output of
``clusterStack``/``grafanaStack`` (``StackConfig.secret_keys``, components/stack_inputs.py). The program handles
the values themselves as plain strings, since the lookups that decide what it registers need them (the cluster and
Grafana invokes). So secrecy is restored where values leave the program: :class:`Secrecy` marks as secret every
string that *contains* a secret value, wherever it ends up,

- in the inputs of every resource registered after :meth:`Secrecy.install` (a stack transformation, Python SDK
  ``pulumi.runtime.register_stack_transformation``; it sees each resource's properties before they are sent,
  ``pulumi/resource.py`` ``Resource.__init__``), including input-type objects and lists/maps at any depth;
- in the outputs each component registers (``register_outputs``), which the engine keeps in the state;
- in the stack's exports (:meth:`Secrecy.export`);
- in what the step scripts print: each step command gets the values to mask in its environment, logs only its masked
  stderr, and keeps its stdout secret (steps/command.py ``with_secret_mask``).

"Contains" covers what is derived from a value: the cluster's ARM id and node resource group carry its name, the
Grafana endpoint carries the workspace's. An Output is secret if it already was or if its value, once known,
contains a secret value. Over-marking (a plain value that happens to contain a secret one) is the safe side.

What cannot be covered, by Pulumi's design: resource IDs and URNs are never secret, and azure-native IDs are ARM ids
(the extension's contains the cluster's name); invoke arguments are not secrets either (the SDK unwraps them; the
engine neither stores nor shows them; the offline plan masks them, offline/program.py ``mask``). Names that Grafana
shows to every viewer are refused instead (components/stack_inputs.py ``refuse_secret_names_in_grafana``).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, Optional

import pulumi
from pulumi import _types

from steps import command as scripts
from components.config import StackConfig


class Secrecy:
    """Marks as secret whatever contains one of ``values`` (plain strings, longest first)."""

    def __init__(self, values: tuple[str, ...]) -> None:
        self.values = tuple(v for v in values if v)

    def contains(self, value: Any) -> bool:
        """True if a string anywhere in ``value`` (plain JSON-like data) contains a secret value."""
        if isinstance(value, str):
            return any(secret in value for secret in self.values)
        if isinstance(value, dict):
            return any(self.contains(k) or self.contains(v) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return any(self.contains(item) for item in value)
        return False

    def taint(self, value: Any) -> Any:
        """``value`` with every part that carries a secret value made secret: a string becomes
        ``Output.secret``; an Output becomes secret when its value (once known) does; maps, lists and input-type
        objects are copied with their items tainted; anything else is returned as it is."""
        if not self.values:
            return value
        if isinstance(value, str):
            return pulumi.Output.secret(value) if self.contains(value) else value
        if isinstance(value, pulumi.Output):
            return self._taint_output(value)
        if isinstance(value, dict):
            return {key: self.taint(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.taint(item) for item in value)
        if _types.is_input_type(type(value)):
            tainted = copy.copy(value)
            for key, item in vars(value).items():
                pulumi.set(tainted, key, self.taint(item))
            return tainted
        return value

    def _taint_output(self, output: pulumi.Output) -> pulumi.Output:
        async def is_secret() -> bool:
            if await output.is_secret():
                return True
            return self.contains(await output.future())

        # An Output with the same resources, value and knownness, and a secretness that also looks at the value
        # (the SDK builds StackReference outputs the same way, pulumi/stack_reference.py ``get_output``).
        return pulumi.Output(output.resources(), output.future(), output.is_known(), asyncio.ensure_future(is_secret()))

    def transformation(self, args: pulumi.ResourceTransformationArgs) -> Optional[pulumi.ResourceTransformationResult]:
        """A stack transformation: taint the resource's properties; for a component, also what it registers as
        outputs."""
        if isinstance(args.resource, pulumi.ComponentResource):
            register = args.resource.register_outputs
            args.resource.register_outputs = lambda outputs: register(self.taint(outputs))  # type: ignore[method-assign]
        props, opts = dict(args.props), args.opts
        if args.type_ == "command:local:Command":  # a step script: mask the values in what it logs
            props, opts = scripts.with_secret_mask(props, opts, self.values)
        return pulumi.ResourceTransformationResult(self.taint(props), opts)

    def install(self) -> "Secrecy":
        """Register :meth:`transformation` for every resource registered from now on (nothing when no value is
        secret). Returns self."""
        if self.values:
            pulumi.runtime.register_stack_transformation(self.transformation)
        return self

    def export(self, name: str, value: Any) -> None:
        """``pulumi.export`` of ``value``, tainted."""
        pulumi.export(name, self.taint(value))


def keep_secret(cfg: StackConfig) -> Secrecy:
    """The installed :class:`Secrecy` for ``cfg``'s secret values (``StackConfig.secret_values``)."""
    return Secrecy(cfg.secret_values).install()
