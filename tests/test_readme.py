"""The README stays honest: its config table mirrors Pulumi.yaml, its commands are the ones CI runs."""

from __future__ import annotations

import re

from components import config
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def config_table() -> dict[str, tuple[str, str]]:
    rows = {}
    section = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        match = re.match(r"\| `(\w+)` \| (\w+) \| (.+?) \|", line)
        if match:
            rows[match.group(1)] = (match.group(2), match.group(3))
    return rows


def test_config_table_mirrors_pulumi_yaml():
    table = config_table()
    declared = config.declared()
    assert set(table) == set(declared)
    for key, decl in declared.items():
        kind, default = table[key]
        assert kind == decl["type"], key
        if key in config.REQUIRED_UNLESS:
            assert default == "required*", key
        elif "default" not in decl:
            assert default == "required", key
        else:
            shown = default.strip("`")
            expected = str(decl["default"]).lower() if isinstance(decl["default"], bool) else str(decl["default"])
            assert shown == (expected if expected else '""'), key


def test_ci_runs_the_readme_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest -q" in README and ".venv/bin/python -m pytest -q" in ci
    assert ".venv/bin/python -m tools.plan --stack dev" in README and ".venv/bin/python -m tools.plan --stack dev" in ci
    assert "pip install -r requirements.txt" in README and "-r requirements.txt" in ci


def test_outputs_table_lists_every_stack_output():
    from tools.offline.mock_engine import run

    outputs = set(run("dev").outputs)
    section = README.split("## Outputs", 1)[1].split("##", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert documented == outputs


def test_readme_is_short_and_its_docs_links_resolve():
    """The README stays a front page (at most 250 lines); the long guides live in docs/, and every docs/*.md it links
    to exists (and each of those guides' relative links too)."""
    assert len(README.splitlines()) <= 250
    linked = set(re.findall(r"\]\((docs/[\w./-]+\.md)\)", README))
    assert {"docs/how-it-works.md", "docs/reviewing.md", "docs/teardown.md", "docs/flamegraphs.md", "docs/platform.md",
            "docs/performance.md", "docs/troubleshooting.md", "docs/policy.md", "docs/adopting.md"} <= linked
    for doc in sorted(linked):
        assert (ROOT / doc).is_file(), doc
        for target in re.findall(r"\]\(([\w./-]+\.(?:md|svg))\)", (ROOT / doc).read_text(encoding="utf-8")):
            assert (ROOT / doc).parent.joinpath(target).is_file(), (doc, target)
