"""The component's arguments, from the one source of keys: ``Pulumi.yaml``'s ``config:`` block.

Owns: :func:`render` (the text of ``components/gpu_observability_args.py``: a ``TypedDict`` with one snake_case field
per config key, typed and documented from its declaration), :func:`to_config` (arguments -> a validated
:class:`~stack_config.schema.StackConfig`), ``STACK_ONLY`` (the keys that stay the stack's). Errors:
:class:`~stack_config.schema.ConfigError` naming the argument (``cluster_name (clusterName): ...``), or ``TypeError``
for an argument no key declares. ``python -m stack_config.component_args`` rewrites the file and
:func:`packaged_keys` (the installed package's copy of the keys); tests hold both equal. Upstream: pulumi/pulumi
``sdk/python/lib/pulumi/provider/experimental/analyzer.py`` (a ``TypedDict``'s ``__optional_keys__``, attribute
docstrings read from the source).
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Mapping

import yaml

from stack_config.load import parse
from stack_config.rules import REQUIRED_UNLESS
from stack_config.schema import PACKAGED_KEYS, ConfigError, declared, snake

#: Keys that name other stacks (read through StackReferences): the stack's, not arguments of the component.
STACK_ONLY = ("clusterStack", "grafanaStack")
TARGET = Path(__file__).resolve().parent.parent / "components" / "gpu_observability_args.py"
_TYPES = {"string": "str", "integer": "int", "boolean": "bool", "array": "list[str]"}


def keys() -> dict[str, dict]:
    """The declared keys the component takes, in ``Pulumi.yaml`` order."""
    return {key: decl for key, decl in declared().items() if key not in STACK_ONLY}


def render() -> str:
    """The source of ``components/gpu_observability_args.py``."""
    lines = [
        '"""Arguments of :class:`components.gpu_observability.GpuObservability`: one per stack config key.',
        "",
        "GENERATED from Pulumi.yaml by ``python -m stack_config.component_args``; edit the key there. Each field is",
        "the key in snake_case (the Pulumi package's property is the key itself); unset fields take the key's default.",
        "Values are plain (no Outputs): the component checks the cluster and Grafana before any child registers.",
        '"""',
        "",
        "# No `from __future__ import annotations`: the schema analyzer reads these annotations as types.",
        "from typing import Required, TypedDict",
        "",
        "",
        "class GpuObservabilityArgs(TypedDict, total=False):",
        '    """GPU-memory profiling on an existing AKS cluster: the cluster, Grafana and the Azure Monitor workspace',
        '    (the six required fields), and every optional setting of the stack (docs/configuration.md)."""',
        "",
    ]
    for key, decl in keys().items():
        kind = _TYPES[decl.get("type", "string")]
        lines.append(f"    {snake(key)}: {'Required[' + kind + ']' if key in REQUIRED_UNLESS else kind}")
        text = " ".join(str(decl.get("description", "")).split())
        text = re.sub(r"^Required unless \w+Stack supplies it\. ", "", text)  # the stack references are no arguments
        # One string without line breaks (the schema's description is the literal's value): adjacent literals.
        wrapped = textwrap.wrap(text, 108, break_long_words=False, break_on_hyphens=False) or [""]
        pieces = [json.dumps(piece + (" " if i < len(wrapped) - 1 else "")) for i, piece in enumerate(wrapped)]
        if len(pieces) == 1:
            lines.append(f"    {pieces[0]}")
        else:
            lines.append(f"    ({pieces[0]}")
            lines.extend(f"     {piece}" for piece in pieces[1:-1])
            lines.append(f"     {pieces[-1]})")
    return "\n".join(lines) + "\n"


def _cli_text(key: str, kind: str, value: Any) -> str:
    """``value`` as the CLI would pass the key (the form :func:`~stack_config.load.parse` reads)."""
    if kind == "array":
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ConfigError(key, f"expected a list of strings (got {value!r})")
        return json.dumps(list(value))
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if kind == "string" and isinstance(value, str):
        return value
    raise ConfigError(key, f"expected a{'n' if kind == 'integer' else ''} {kind} (got {value!r})")


def to_config(args: Mapping[str, Any]):
    """Validate the component's arguments (snake_case, or the keys themselves) into a StackConfig, checked as
    ``pulumi config`` would be. ConfigError's key reads ``<argument> (<key>)``."""
    by_name = {snake(key): key for key in keys()} | {key: key for key in keys()}
    unknown = sorted(set(args) - set(by_name))
    if unknown:
        raise TypeError(f"GpuObservability: no argument {unknown[0]!r} (the arguments: "
                        f"components/gpu_observability_args.py, docs/configuration.md)")
    raw: dict[str, str] = {}
    try:
        for name, value in args.items():
            key = by_name[name]
            if value is not None:
                raw[key] = _cli_text(key, keys()[key].get("type", "string"), value)
        return parse(raw)
    except ConfigError as error:
        raise ConfigError(f"{snake(error.key)} ({error.key})", error.message) from None


def packaged_keys() -> str:
    """The text of :data:`~stack_config.schema.PACKAGED_KEYS`: Pulumi.yaml's ``config:`` block, as YAML."""
    return ("# GENERATED from Pulumi.yaml by `python -m stack_config.component_args`: the keys an installed package\n"
            "# reads (it has no Pulumi.yaml). Edit the key there.\n"
            + yaml.safe_dump({"config": declared()}, sort_keys=False, allow_unicode=True, width=120))


if __name__ == "__main__":
    TARGET.write_text(render())
    PACKAGED_KEYS.write_text(packaged_keys(), encoding="utf-8")
    sys.stdout.write(f"wrote {TARGET} and {PACKAGED_KEYS}\n")
