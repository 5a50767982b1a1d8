"""Every secret value the stack knows, and the lines the stack prints with them masked.

Owns: :func:`forget` and :func:`know` (the values: each secret config value, stack_config/load.py ``load``, and each
secret output read from ``clusterStack``/``grafanaStack``, stack_config/references.py ``read_outputs``),
:func:`masked` (a line with each value as ``[secret]``), and :func:`warn`/:func:`info` (``pulumi.log`` of a masked
line). ConfigError masks its own line (stack_config/schema.py), so a refusal built anywhere is masked where it is
made. Why: the engine masks only the stack's own secret config in what it prints (pulumi/pulumi v3.230.0
``pkg/engine/events.go`` ``makeEventEmitter``), not a secret output of another stack that the program formats into
a line. The research: docs/decisions/secrecy.md.
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Optional

import pulumi

#: What a secret value shows as (the engine's word, pulumi/pulumi v3.230.0 ``pkg/engine/events.go``).
SECRET = "[secret]"

_values: set[str] = set()
_pattern: Optional[re.Pattern] = None


def forget() -> None:
    """Start over with no value known: a new program run."""
    global _pattern
    _values.clear()
    _pattern = None


def know(values: Iterable[object]) -> None:
    """Add ``values`` (strings; anything else is ignored) to the values :func:`masked` masks; one that is a JSON
    array or object (how the CLI hands a structured config value to the program) adds the strings in it too."""
    global _pattern
    for value in values:
        if isinstance(value, str):
            _values.add(value)
            _values.update(_strings_in(value))
    _pattern = None


def _strings_in(text: str) -> list[str]:
    """The strings (and numbers, as text) inside ``text`` when it is a JSON array or object, keys aside; else none."""
    if not text.lstrip().startswith(("[", "{")):
        return []
    try:
        found, todo = [], [json.loads(text)]
    except ValueError:
        return []
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            todo += list(item.values())  # not its keys: names such as "owner", no secret
        elif isinstance(item, list):
            todo += item
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
            found.append(str(item))
    return found


def maskable(value: str) -> bool:
    """Whether :func:`masked` masks ``value``: not one shorter than 3 characters, nor ``true``/``false``. The
    engine's own filter draws the same line (pulumi/pulumi v3.230.0 ``sdk/go/common/util/logging/log.go``
    ``CreateFilter``): a one- or two-character value would turn half of every line into ``[secret]`` and is no
    secret a line could hide, and a secret boolean would mask every ``true`` the line says."""
    return len(value) >= 3 and value.lower() not in ("true", "false")


def masked(text: str) -> str:
    """``text`` with each known value (:func:`maskable` ones) replaced by ``[secret]``: as it is, and JSON-escaped
    (as the engine also masks it); longest first, so a value inside a longer one leaves nothing of the longer one
    behind; whatever the case, since ARM ids and names come back in another case than the one configured (``MC_``
    node resource groups, lower-cased ids)."""
    global _pattern
    if _pattern is None:
        forms = {form for value in _values if maskable(value) for form in (value, json.dumps(value)[1:-1])}
        if not forms:
            return text
        ordered = sorted(forms, key=lambda form: (-len(form), form))
        _pattern = re.compile("|".join(re.escape(form) for form in ordered), re.IGNORECASE)
    return _pattern.sub(SECRET, text)


def warn(message: str) -> None:
    """``pulumi.log.warn`` of :func:`masked` ``message``."""
    pulumi.log.warn(masked(message))


def info(message: str) -> None:
    """``pulumi.log.info`` of :func:`masked` ``message``."""
    pulumi.log.info(masked(message))
