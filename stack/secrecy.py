"""What came in secret goes out secret: inputs and exports that carry a secret config value are Pulumi secrets.

Owns: :class:`Secrecy` (marks as secret every string that *contains* a secret value: the inputs of every resource
registered after :meth:`Secrecy.install`, what components register as outputs, the stack's exports, and what the
step scripts print, via steps/command.py ``with_secret_mask``) and :func:`keep_secret`. Input: the secret values
(``StackConfig.secret_values``: ``pulumi config set --secret`` or a secret output of a referenced stack). Output: a
stack transformation and :meth:`Secrecy.export`. Over-marking is the safe side; resource IDs, URNs and invoke
arguments cannot be secret. Upstream: pulumi/pulumi ``sdk/python/lib/pulumi/resource.py`` (stack transformations);
the research: docs/decisions/secrecy.md.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, Optional

import pulumi
from pulumi import _types

from steps import command as scripts


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
            args.resource.register_outputs = (  # type: ignore[method-assign]
                lambda outputs: register(self.taint(outputs)))
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


def keep_secret(values: tuple[str, ...]) -> Secrecy:
    """The installed :class:`Secrecy` for the stack's secret values (``StackConfig.secret_values``)."""
    return Secrecy(values).install()
