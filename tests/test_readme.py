"""The README stays honest: its config table mirrors Pulumi.yaml, its commands are the ones CI runs."""

from __future__ import annotations

import re

from stack_config import rules, schema
from tests.support import ROOT

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
    declared = schema.declared()
    assert set(table) == set(declared)
    for key, decl in declared.items():
        kind, default = table[key]
        assert kind == decl["type"], key
        if key in rules.REQUIRED_UNLESS:
            assert default == "required*", key
        elif "default" not in decl:
            assert default == "required", key
        else:
            shown = default.strip("`")
            expected = str(decl["default"]).lower() if isinstance(decl["default"], bool) else str(decl["default"])
            assert shown == (expected if expected else '""'), key


def setup_command() -> str:
    """The README's set-up command: the one line of the code block under "The two commands"."""
    section = README.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    (line,) = section.split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    return line


def test_ci_runs_the_readme_commands():
    """.ci/run runs the README's set-up command as written (the lock with hashes, the reference artefacts, the offline
    plan) and its test command; so does pr.yml's set-up step."""
    import yaml

    ci = (ROOT / ".ci" / "run").read_text()
    setup = setup_command()
    assert "pip install --require-hashes -r requirements.lock" in setup and ".ci/fetch-reference" in setup
    assert ".venv/bin/python -m offline.plan --stack dev" in setup
    assert setup in ci.splitlines()
    assert ".venv/bin/python -m pytest -q" in README and ".venv/bin/python -m pytest -q" in ci
    offline = yaml.safe_load((ROOT / ".github" / "workflows" / "pr.yml").read_text())["jobs"]["offline"]
    assert [s["run"] for s in offline["steps"] if s.get("name", "").startswith("Set up")] == [setup]
    assert "policy/venv/bin/pip install --require-hashes -r policy/requirements.lock" in README
    assert "policy/venv/bin/pip install --require-hashes -r policy/requirements.lock" in ci


def test_outputs_table_lists_every_stack_output():
    from offline.program import run

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
            "docs/performance.md", "docs/troubleshooting.md", "docs/policy.md", "docs/adopting.md",
            "docs/dependencies.md"} <= linked
    for doc in sorted(linked):
        assert (ROOT / doc).is_file(), doc
        for target in re.findall(r"\]\(([\w./-]+\.(?:md|svg))\)", (ROOT / doc).read_text(encoding="utf-8")):
            assert (ROOT / doc).parent.joinpath(target).is_file(), (doc, target)


def documented_tool_commands() -> list[tuple[str, str, list]]:
    """(file, module, argv) of every ``python -m tools.<tool> ...`` in README.md and docs/*.md, in inline code or a
    code block (a continued line joined), as a reader would type it: a placeholder (``<stack>``, ``$(...)``) filled
    in, an optional ``[...]`` and a ``...`` left out, a shell comment and what follows ``&&``, ``|`` or ``;`` dropped."""
    import shlex

    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        fence = r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```"
        blocks = re.findall(fence, text, re.M | re.S)
        snippets = [line for block in blocks for line in re.sub(r"\\\n", " ", block).splitlines()]
        prose = re.sub(fence, "", text, flags=re.M | re.S)
        snippets += [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", prose)]
        for snippet in snippets:
            for command in re.findall(r"-m ((?:offline|ops|flamegraph)\.\w+)((?:(?!\s#)[^\n])*)", snippet):
                module, rest = command
                rest = re.sub(r"\$\([^)]*\)", "x", rest)
                rest = re.sub(r"\[[^\]]*\]", "", rest).replace("...", "")
                rest = re.sub(r"<[^>]+>", "x", rest)
                argv = []
                rest = re.split(r"&&|\|\||[|;)>]", rest)[0]  # the rest of a shell line: another command
                for token in shlex.split(rest):
                    argv.append(token)
                found.append((path.name, module, argv))
    return found


def test_every_documented_tool_command_parses(monkeypatch):
    """A tool's command line as README.md and docs/ show it is one the tool takes (its argparse parser accepts it;
    the tool then stops before doing anything): `python -m ops.verify --drift` without --stack would not be."""
    import importlib

    import cli

    class Parsed(Exception):
        pass

    original = cli.OneLineParser.parse_args

    def parse_only(self, args=None, namespace=None):
        original(self, args, namespace)
        raise Parsed

    monkeypatch.setattr(cli.OneLineParser, "parse_args", parse_only)
    commands = documented_tool_commands()
    assert {module for _, module, _ in commands} == {"offline.plan", "ops.verify", "flamegraph.hotspots", "ops.deployer_role"}
    for name, module, argv in commands:
        try:
            importlib.import_module(module).main(argv)
        except Parsed:
            continue
        except cli.UsageError as error:
            raise AssertionError(f"{name}: python -m {module} {' '.join(argv)}: {error}") from None
        raise AssertionError(f"{name}: python -m {module} {' '.join(argv)}: refused by its parser")


def test_the_deploy_steps_say_what_a_self_managed_backend_asks_for():
    """With `pulumi login azblob://...` (or file://), `pulumi stack init` asks for a passphrase and every command that
    decrypts asks again, failing where nobody can answer, unless PULUMI_CONFIG_PASSPHRASE(_FILE) is set (pulumi/pulumi
    v3.230.0 pkg/secrets/passphrase/manager.go: "Enter your passphrase to protect config/secrets"); the deploy steps
    say so before `pulumi stack init`, and name the other way, --secrets-provider."""
    section = README.split("## Deploy and tear down", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    assert block.index("PULUMI_CONFIG_PASSPHRASE") < block.index("pulumi stack init")
    assert "--secrets-provider azurekeyvault://" in section and "self-managed" in section
