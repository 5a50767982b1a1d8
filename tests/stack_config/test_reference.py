"""docs/configuration.md is stack_config.reference's output: every key of Pulumi.yaml, grouped required / common /
advanced, with the type and default Pulumi.yaml declares (the list a reader sets a stack from)."""

from __future__ import annotations

import re

from stack_config import reference
from stack_config.rules import REQUIRED_UNLESS
from tests.support import ROOT

PAGE = ROOT / "docs" / "configuration.md"
REGENERATE = f"regenerate it: {reference.COMMAND}"


def page_rows() -> dict[str, list[tuple[str, str, str]]]:
    """key -> [(section, type, default shown)] for every key's list item, ``- `key` (type, default): description``,
    of the page (a key listed twice has two)."""
    rows, section = {}, ""
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].split(" (", 1)[0]
        elif match := re.match(r"^- `(\w+)` \((\w+), (.+?)\):(?: |$)", line):
            rows.setdefault(match.group(1), []).append((section, match.group(2), match.group(3)))
    return rows


def test_the_page_is_the_generators_output():
    assert PAGE.read_text(encoding="utf-8") == reference.render(), f"docs/configuration.md is out of date; {REGENERATE}"


def test_every_key_of_pulumi_yaml_is_listed_once():
    rows, declared = page_rows(), reference.declared()
    missing, unknown = sorted(set(declared) - set(rows)), sorted(set(rows) - set(declared))
    assert not missing, f"docs/configuration.md lacks {', '.join(missing)}; {REGENERATE}"
    assert not unknown, f"docs/configuration.md lists undeclared keys {', '.join(unknown)}; {REGENERATE}"
    twice = sorted(key for key, found in rows.items() if len(found) > 1)
    assert not twice, twice


def test_the_table_mirrors_pulumi_yaml():
    """Each row's type and default are Pulumi.yaml's (a boolean as the CLI writes it, empty as ``""``); the keys the
    loader requires unless a stack reference supplies them read required*, and are the Required section."""
    rows = page_rows()
    for key, decl in reference.declared().items():
        ((section, kind, default),) = rows[key]
        assert kind == decl["type"], key
        if key in REQUIRED_UNLESS:
            assert (section, default) == ("Required", "required*"), key
        elif "default" not in decl:
            assert (section, default) == ("Required", "required"), key
        else:
            shown = default.strip("`")
            expected = str(decl["default"]).lower() if isinstance(decl["default"], bool) else str(decl["default"])
            assert shown == (expected if expected else '""'), key
            assert section == ("Common" if key in reference.COMMON else "Advanced"), key


def test_the_common_keys_are_declared_and_the_groups_say_how_many():
    declared = reference.declared()
    assert set(reference.COMMON) <= set(declared), set(reference.COMMON) - set(declared)
    text = PAGE.read_text(encoding="utf-8")
    counts = {name: int(n) for name, n in re.findall(r"^## (\w+) \((\d+)\)$", text, re.M)}
    sections = [section for found in page_rows().values() for section, _, _ in found]
    assert counts == {name: sections.count(name) for name in ("Required", "Common", "Advanced")}
    assert sum(counts.values()) == len(declared)


def test_the_page_shows_how_to_set_an_array_key():
    text = PAGE.read_text(encoding="utf-8")
    assert "pulumi config set --path 'tags[0]'" in text and "--set-path 'tags[0]=" in text
