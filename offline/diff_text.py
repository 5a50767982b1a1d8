"""The offline preview diff as a reviewer reads it: the text ``python -m offline.plan --diff-against`` prints.

Owns: :func:`render_text` (label, summary, replacements first with their order and reasons, then updates, creates,
deletes and reads with their field diffs, a line holding a canned value marked as the plan marks it, then the
engine's order) and :func:`summary_line` (Pulumi's words for the counts). Input: a :class:`~offline.diff.Diff`.
Output: text. Errors: none. Upstream (the wording it follows):
https://github.com/pulumi/pulumi/tree/v3.230.0/pkg/engine/lifecycletest/testdata/output
"""

from __future__ import annotations

import json
from typing import Any

from offline import canned
from offline.diff import LABEL, Diff, input_diffs

_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-", "same": " ", "read": ">"}


def summary_line(diff: Diff) -> str:
    """Pulumi's words: ``+ 1 to create, ~ 2 to update, +-1 to replace, - 0 to delete, 14 unchanged``, then how many of
    the replacements and updates are there only while a value is unknown in preview."""
    n = diff.summary
    line = (f"+ {n['create']} to create, ~ {n['update']} to update, +-{n['replace']} to replace, "
            f"- {n['delete']} to delete, {n['same']} unchanged") + (f", {n['read']} to read" if n["read"] else "")
    if diff.preview_only:
        names = ", ".join(_name(u) for u in diff.preview_only)
        line += (f" ({len(diff.preview_only)} of the {n['replace']} replacements only while a value is unknown in "
                 f"preview; with the canned answers `pulumi up` keeps {names})")
    done = {(a.kind, a.urn) for a in diff.order}
    kept = [s.name for s in diff.steps if s.op == "update" and diff.order and ("update", s.urn) not in done]
    if kept:
        line += (f" ({len(kept)} of the {n['update']} updates only while a value is unknown in preview; with the "
                 f"canned answers `pulumi up` keeps {', '.join(kept)})")
    return line


def _values(old: Any, new: Any, width: int = 120) -> tuple[str, str]:
    """Both sides as JSON text; long ones cut to a window around where they first differ."""
    texts = ["(absent)" if v is None else json.dumps(v, sort_keys=True) for v in (old, new)]
    if max(len(t) for t in texts) <= width:
        return texts[0], texts[1]
    first = next((i for i, (a, b) in enumerate(zip(*texts)) if a != b), min(len(t) for t in texts))
    start = max(0, first - width // 3)
    return tuple(("..." if start else "") + t[start:start + width] + ("..." if len(t) > start + width else "")
                 for t in texts)


def _expanded(diff: dict) -> list[tuple[str, Any, Any]]:
    """A changed string that holds JSON on both sides (a step's environment value) as the changed paths inside it,
    ``environment.DATASOURCE{jsonData.url}``, so a long value is not cut where it differs."""
    old, new = diff["old"], diff["new"]
    try:
        parsed = json.loads(old), json.loads(new)
    except (TypeError, ValueError):
        return [(diff["path"], old, new)]
    if not all(isinstance(v, (dict, list)) for v in parsed):
        return [(diff["path"], old, new)]
    inner = input_diffs(parsed[0], parsed[1], "", {}, {})
    return [(f"{diff['path']}{{{d['path']}}}", d["old"], d["new"]) for d in inner] or [(diff["path"], old, new)]


def render_text(diff: Diff, title: str) -> str:
    """The PR-comment text: label, summary, replacements first (order and reasons), then updates, creates and
    deletes with their field diffs, then the engine's order."""
    lines = [title, LABEL, ""] + [f"WARNING: {w}" for w in diff.warnings] + [f"ERROR: {e}" for e in diff.errors]
    lines += ["Resources: " + summary_line(diff)]
    groups = (("Replacements", "replace"), ("Updates", "update"), ("Creates", "create"), ("Deletes", "delete"),
              ("Reads", "read"))
    for heading, op in groups:
        chosen = [s for s in diff.steps if s.op == op]
        if not chosen:
            continue
        lines += ["", f"{heading}:"]
        for step in chosen:
            order = f" ({step.replace_order})" if step.replace_order else ""
            lines.append(f" {_SYMBOL[op]:<2} {step.type}  {step.name}  {op}{order}")
            lines += [f"       because {reason}" for reason in step.reasons if op in ("replace", "update", "delete")]
            lines += [canned.marked("       ~ {}: {} => {}".format(path, *_values(old, new))) for d in step.diffs
                      for path, old, new in _expanded(d)]
    lines += ["", "Engine order (pulumi up" + (", with the canned answers: the replacements that exist only in "
                                               "preview are not made)" if diff.preview_only else ")") + ":"]
    if not diff.order:
        lines.append("    (nothing to do)")
    for i, action in enumerate(diff.order, 1):
        note = f"  ({action.note})" if action.note else ""
        lines.append(f"  {i:>3}. {action.kind:<18} {_name(action.urn)}{note}")
    return "\n".join(lines)


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]
