"""The index page of the simulated rules: ``python -m offline.rules_index > docs/offline.md``.

Owns: the rendering of ``docs/offline-rules.yaml`` (one record per rule the offline plan, the lifecycle stand-ins
and the stand-in ``az`` simulate) as the short page ``docs/offline.md``: the intro, then per kind a table
``id | summary | tests``. Input: the YAML file (:data:`RULES`). Output: the page on stdout. Errors: a malformed
file raises ``KeyError``/``yaml.YAMLError``; its content is checked by ``tests/offline/test_rules_index.py``.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

RULES = Path(__file__).resolve().parent.parent / "docs" / "offline-rules.yaml"
COMMAND = "python -m offline.rules_index > docs/offline.md"


def load(path: Path = RULES) -> dict[str, Any]:
    """The YAML document: ``title``, ``intro``, ``kinds`` (kind, title, intro) and ``rules`` (one per rule)."""
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _tests_cell(rule: dict[str, Any]) -> str:
    """The test files holding a rule, each with how many of its tests do; the fidelity when it is not ``same``."""
    files = Counter(node.split("::", 1)[0] for node in rule.get("tests") or [])
    cell = ", ".join(f"`{name}` ({count})" if count > 1 else f"`{name}`" for name, count in files.items())
    if rule["fidelity"] != "same":
        cell = f"*{rule['fidelity']}*" + (f": {cell}" if cell else "")
    return cell or "—"


def render(document: dict[str, Any]) -> str:
    """The page: the title, the intro, then one table per kind in the order of ``kinds``."""
    lines = [f"# {document['title']}", "",
             "<!-- Generated from offline-rules.yaml; do not edit. Regenerate: " + COMMAND + " -->", "",
             "Each rule's full text, its sources and its tests are in [offline-rules.yaml](offline-rules.yaml), "
             "one record per id.", "", document["intro"].rstrip()]
    for kind in document["kinds"]:
        lines += ["", f"## {kind['title']}", ""]
        if kind.get("intro"):
            lines += [kind["intro"].rstrip(), ""]
        lines += ["| id | summary | tests |", "|---|---|---|"]
        for rule in document["rules"]:
            if rule["kind"] == kind["kind"]:
                summary = rule["summary"].replace("|", "\\|")
                lines.append(f"| {rule['id']} | {summary} | {_tests_cell(rule)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render(load()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
