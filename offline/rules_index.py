"""The index page of the simulated rules: ``python -m offline.rules_index > docs/offline.md``.

Owns: the rendering of ``docs/offline-rules.yaml`` (one record per rule the offline plan, the lifecycle stand-ins
and the stand-in ``az`` simulate) as the short page ``docs/offline.md``: the opener and intro, then per kind its
title (without its parenthesis), its lead, and one line per rule (id, fidelity unless ``same``, summary), or, for a
kind with ``index: counts``, how many rules it has of each fidelity (its ``counted`` says of what). Input: the YAML
file (:data:`RULES`). Output: the page on stdout. Errors: a malformed file raises ``KeyError``/``yaml.YAMLError``;
its content is checked by ``tests/offline/test_rules_index.py``.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

RULES = Path(__file__).resolve().parent.parent / "docs" / "offline-rules.yaml"
COMMAND = "python -m offline.rules_index > docs/offline.md"
WIDTH = 120


def load(path: Path = RULES) -> dict[str, Any]:
    """The YAML document: ``title``, ``opener``, ``intro``, ``kinds`` (kind, title, lead, index) and ``rules``."""
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _wrap(text: str, indent: str = "") -> list[str]:
    """``text`` as lines of at most :data:`WIDTH` characters, continuation lines indented by ``indent``."""
    return textwrap.wrap(" ".join(text.split()), WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def _rule(rule: dict[str, Any]) -> list[str]:
    """One list item: the id, the fidelity when it is not ``same``, the summary."""
    fidelity = "" if rule["fidelity"] == "same" else f" *({rule['fidelity']})*"
    return _wrap(f"- **{rule['id']}**{fidelity} {rule['summary']}", "  ")


def _counts(kind: dict[str, Any], rules: list[dict[str, Any]]) -> list[str]:
    """How many rules of a kind there are (``counted`` names them), by fidelity (``same`` first)."""
    counts = Counter(rule["fidelity"] for rule in rules)
    parts = [f"{counts.pop('same', 0)} ported the same, each to a test of its name"]
    parts += [f"{n} *{fidelity}*" for fidelity, n in sorted(counts.items())]
    why = " (why: [offline-rules.yaml](offline-rules.yaml))."
    return _wrap(f"{len(rules)} {kind['counted']}: " + "; ".join(parts) + why)


def render(document: dict[str, Any]) -> str:
    """The page: the title, the opener, the comment naming the generator, the intro, then one section per kind in
    the order of ``kinds``."""
    lines = [f"# {document['title']}", "", *_wrap(document["opener"]), "",
             "<!-- Generated from offline-rules.yaml; do not edit. Regenerate: " + COMMAND + " -->", "",
             *_wrap(document["intro"])]
    for kind in document["kinds"]:
        title = re.sub(r"\s*\([^()]*\)", "", kind["title"])
        lines += ["", f"## {title}", ""]
        if kind.get("lead"):
            lines += [*_wrap(kind["lead"]), ""]
        rules = [rule for rule in document["rules"] if rule["kind"] == kind["kind"]]
        if kind.get("index") == "counts":
            lines += _counts(kind, rules)
        else:
            lines += [line for rule in rules for line in _rule(rule)]
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render(load()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
