"""Property paths as the engine matches ``replaceOnChanges`` against a diff.

Owns: :func:`parse_property_path` (``ParsePropertyPath``, loose as upstream), :func:`path_contains`
(``PropertyPath.Contains``) and :func:`replace_on_changes_keys` (``applyReplaceOnChanges``). Input: path strings;
output: element tuples and matching keys. Errors: :class:`PropertyPathError` with upstream's message. Upstream:
https://github.com/pulumi/pulumi/blob/v3.230.0/sdk/go/common/resource/properties_path.go
"""

from __future__ import annotations

import re
from typing import Iterable


class PropertyPathError(ValueError):
    """``ParsePropertyPath``'s error; ``str()`` is upstream's message."""


def parse_property_path(path: str) -> tuple:
    """``ParsePropertyPath``: the path's elements, ``str`` for names and quoted keys (``*`` and ``["*"]`` both give
    ``"*"``), ``int`` for indices. As upstream, loose: a name runs to the next ``.`` or ``[`` whatever its characters,
    and ``.`` before ``[`` is tolerated."""
    elements: list = []
    if path.startswith("."):
        raise PropertyPathError("expected property path to start with a name or index")
    while path:
        if path[0] == ".":
            path = path[1:]
            if not path:
                raise PropertyPathError("expected property path to end with a name or index")
        elif path[0] == "[":
            if len(path) > 1 and path[1] == '"':
                key, i = [], 2
                while True:
                    if i >= len(path):
                        raise PropertyPathError("missing closing quote in property name")
                    if path[i] == '"':
                        i += 1
                        break
                    if path[i] == "\\" and i + 1 < len(path) and path[i + 1] == '"':
                        key.append('"')
                        i += 2
                    else:
                        key.append(path[i])
                        i += 1
                if i >= len(path) or path[i] != "]":
                    raise PropertyPathError("missing closing bracket in property access")
                element, path = "".join(key), path[i:]
            else:
                rbracket = path.find("]")
                if rbracket == -1:
                    raise PropertyPathError("missing closing bracket in array index")
                segment = path[1:rbracket]
                if segment == "*":
                    element = "*"
                elif re.fullmatch(r"[+-]?[0-9]+", segment):  # strconv.ParseInt(segment, 10, 0)
                    element = int(segment)
                else:
                    raise PropertyPathError(f'invalid array index: strconv.ParseInt: parsing "{segment}": '
                                            "invalid syntax")
                path = path[rbracket:]
            elements.append(element)
            path = path[1:]
        else:
            end = next((i for i, c in enumerate(path) if c in ".["), len(path))
            elements.append(path[:end])
            path = path[end:]
    return tuple(elements)


def path_contains(listed: tuple, other: tuple) -> bool:
    """``PropertyPath.Contains``: ``listed``'s elements are a prefix of ``other``'s, a ``"*"`` in ``listed`` matching
    any one element (a name or an index) at its level."""
    if len(other) < len(listed):
        return False
    for mine, theirs in zip(listed, other):
        if isinstance(mine, int):
            if not isinstance(theirs, int) or theirs != mine:
                return False
        elif mine != "*" and (not isinstance(theirs, str) or theirs != mine):
            return False
    return True


def replace_on_changes_keys(changed: Iterable[str], replace_on_changes: Iterable[str]) -> list[str]:
    """``applyReplaceOnChanges``: the entries of ``changed`` (the provider's changed keys, which are top-level, and its
    detailed-diff paths, which the offline :class:`DiffResult` keeps together in ``changed_keys``) that a
    replaceOnChanges path contains. Without detailed-diff paths only the top-level keys are there, so only a listed
    path of one element (or ``*``) can match. A listed path that does not parse is an error (upstream returns it); a
    changed entry that does not parse is skipped (upstream skips a changed key so)."""
    listed = [parse_property_path(p) for p in replace_on_changes]
    found = []
    for key in changed:
        try:
            path = parse_property_path(key)
        except PropertyPathError:
            continue
        if any(path_contains(p, path) for p in listed):
            found.append(key)
    return found
