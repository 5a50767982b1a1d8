"""docs/offline-rules.yaml and its index docs/offline.md (offline/rules_index.py): each rule the offline plan, the
lifecycle stand-ins and the stand-in az simulate has an upstream source and existing tests, and the page is generated.
"""

from __future__ import annotations

import ast
import functools
import gc
import re

import yaml

from offline import rules_index
from tests.support import ROOT

DOC = ROOT / "docs" / "offline.md"
RULES = ROOT / "docs" / "offline-rules.yaml"
FIDELITIES = {"same", "divergence", "real", "not modelled"}
#: The modules that simulate something; each must be covered by a rule or a section title.
SIMULATORS = ("offline/program.py", "offline/stack_file.py", "offline/canned.py", "offline/policy_check.py",
              "tests/support/fake_az.py", "offline/diff.py", "offline/replacement.py", "tests/support/fake_world.py",
              "tests/support/lifecycle.py", "offline/adopt.py", "tests/support/fake_cluster.py", "offline/engine/")
#: The source of an upstream lifecycle case: the file and test at v3.230.0's commit or at HEAD's, or in the Go module
#: v3.277.0 (the CLI the README pins; the module proxy's copy names no commit).
UPSTREAM = re.compile(r"^pulumi/pulumi (?:(?:v3\.230\.0|HEAD) \(commit `([0-9a-f]{8})`\)"
                      r"|(v3\.277\.0) \(Go module `pkg/v3@v3\.277\.0`\)) "
                      r"`pkg/engine/lifecycletest/([\w.]+_test\.go)` \(`(Test\w+)`\)$")
#: Where the cases of upstream's ``pkg/engine/lifecycletest/<name>_test.go`` are ported: ``test_<name>.py`` here.
PORTED = ROOT / "tests" / "offline" / "engine" / "lifecycletest"


def document() -> dict:
    with open(RULES, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def rules(kind: str | None = None) -> list[dict]:
    found = [r for r in document()["rules"] if kind is None or r["kind"] == kind]
    assert len(found) >= 20, "docs/offline-rules.yaml lost rules"
    return found


@functools.lru_cache(maxsize=None)
def parse(path):
    """ast.parse with the collector off: on CPython 3.11.7 a finalizer that runs inside the parse (earlier tests'
    Pulumi futures being collected) raises SystemError "AST constructor recursion depth mismatch". Once per file: a
    collection in a worker that ran many tests takes a fair fraction of a second, and rules name the same files."""
    gc.collect()
    gc.disable()
    try:
        return ast.parse((ROOT / path).read_text(encoding="utf-8"))
    finally:
        gc.enable()


def test_every_rule_names_an_upstream_source_and_existing_tests():
    ids = [r["id"] for r in rules()]
    assert len(ids) == len(set(ids)), "rule ids are unique"
    kinds = [k["kind"] for k in document()["kinds"]]
    for rule in rules():
        row_id, source = rule["id"], "; ".join(rule["sources"])
        assert rule["kind"] in kinds, f"{row_id}: kind {rule['kind']!r} has no section"
        assert rule["fidelity"] in FIDELITIES, f"{row_id}: fidelity {rule['fidelity']!r}"
        assert rule["summary"] and rule["detail"], f"{row_id}: a summary and a detail"
        assert len(rule["summary"]) <= 120, f"{row_id}: summary longer than 120 characters"
        # A source: a repository or package and a file, at a version.
        assert rule["sources"], f"{row_id}: no source"
        if rule["fidelity"] != "real":  # real code runs: the package and its version are the source
            assert re.search(r"`[\w./-]+\.(go|py|ts|proto|md)`|README",
                             source), f"{row_id}: no upstream file in {source!r}"
        assert re.search(r"v\d+\.\d+|\d+\.\d+\.\d+|@ `[0-9a-f]{8}|Python SDK|grafana/grafana|commit `[0-9a-f]{8}`",
                         source), f"{row_id}: no version in {source!r}"
        if rule["kind"] == "upstream case":
            continue  # held below, against the ported file
        assert rule["tests"], f"{row_id}: no test named"
        for node in rule["tests"]:
            path, name = re.fullmatch(r"(tests/[\w/]+\.py)::(\w+)(?:\[.+\])?", node).groups()
            tree = parse(path)
            defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            assert name in defined, f"{row_id}: {path}::{name} does not exist"


def test_every_simulating_module_is_covered():
    text = RULES.read_text(encoding="utf-8")
    for module in SIMULATORS:
        assert module in text, f"{module} simulates something but docs/offline-rules.yaml does not cover it"


def test_the_index_page_is_generated_from_the_rules():
    assert DOC.read_text(encoding="utf-8") == rules_index.render(document()), \
        f"docs/offline.md is not the index of docs/offline-rules.yaml; regenerate it: {rules_index.COMMAND}"


def test_upstream_lifecycle_rows_name_the_ported_tests():
    """docs/offline-rules.yaml, kind "upstream case": every source names the upstream file, test and commit; a rule
    with a test names ``tests/offline/engine/lifecycletest/test_<upstream file>.py::test_<upstream test>``, which
    exists and whose docstring cites the upstream file, test and commit; a ``same`` rule has a test, a ``not
    modelled`` one a reason; every test of those files has its rule; at least 30 cases are the same."""
    section = next(k for k in document()["kinds"] if k["kind"] == "upstream case")
    assert "`ae2e269861eabd2b692984e7286bec78777ba352`" in section["intro"], "the commit at the top"
    docs = {}  # (file, test name) -> docstring
    for path in sorted(PORTED.glob("test_*.py")):
        relative = path.relative_to(ROOT).as_posix()
        docs.update({(relative, n.name): ast.get_docstring(n) or "" for n in ast.walk(parse(relative))
                     if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")})
    same, listed = 0, set()
    for rule in rules("upstream case"):
        name = rule["id"]
        assert len(rule["sources"]) == 1, f"{name}: one upstream case"
        found = UPSTREAM.match(rule["sources"][0])
        assert found, f"{name}: the source does not parse"
        commit, module, file, test_name = found.groups()
        commit = commit or module
        assert test_name == name, f"{name}: the id is the upstream test"
        if rule["fidelity"] == "same":
            same += 1
        else:
            assert rule["fidelity"] == "not modelled", f"{name}: same or not modelled"
            assert len(rule.get("note", "").strip()) > 3, f"{name}: not modelled without a reason"
        if not rule["tests"]:
            assert rule["fidelity"] != "same", f"{name}: a same rule without its test"
            continue
        ported = f"{PORTED.relative_to(ROOT).as_posix()}/test_{file.removesuffix('_test.go')}.py"
        assert rule["tests"] == [f"{ported}::test_{name}"], f"{name}: the test is not named after the upstream case"
        doc = docs.get((ported, f"test_{name}"))
        assert doc is not None, f"{ported}::test_{name} does not exist"
        assert file in doc and name in doc and commit in doc, f"test_{name}: its docstring cites {file}"
        listed.add((ported, f"test_{name}"))
    assert same >= 30
    assert set(docs) == listed, f"tests without a rule: {sorted(set(docs) - listed)}"
