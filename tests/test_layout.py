"""The house rules, read from the code: no import cycle among the project's modules, the deployed program imports
nothing from the reader, the offline engine or the operator commands, no module over 700 lines outside tests, tests
mirror the source and import no other test file, and nothing is named after a review or an issue."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT

#: The packages of the program that `pulumi up` runs (__main__.py and what it imports).
DEPLOYED = ("components", "stack_config", "existing", "stack", "steps")
#: Packages the deployed program must never import.
TOOLING = ("offline", "flamegraph", "ops", "bench", "tests")
MAX_LINES = 700
GENERATED = {"flamegraph/pprof/profile_pb2.py"}


def tracked(pattern: str) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", pattern], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).exists()]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or "__main__"


def source_modules() -> dict[str, Path]:
    return {module_name(p): p for p in tracked("*.py") if not p.relative_to(ROOT).parts[0] == "tests"
            and str(p.relative_to(ROOT)) not in GENERATED}


def imports(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports, at module level or inside a function alike."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    modules = source_modules()
    known = set(modules)
    return {name: imports(path, known) - {name} for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_among_the_projects_modules():
    assert cycles(graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_deployed_program_imports_nothing_from_the_tools():
    edges = graph()
    reached, todo = set(), ["__main__"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(edges.get(name, ()))
    assert not [name for name in reached if name.split(".")[0] in TOOLING]
    assert {name.split(".")[0] for name in reached} - {"__main__"} <= set(DEPLOYED)


def test_no_module_outside_tests_is_over_700_lines():
    long = {str(p.relative_to(ROOT)): n for p in source_modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_sys_path_edits_outside_the_test_configuration():
    edits = [str(p.relative_to(ROOT)) for p in tracked("*.py")
             if "sys.path" in p.read_text(encoding="utf-8") and p.relative_to(ROOT) != Path("tests/conftest.py")
             and p != Path(__file__)]
    assert edits == []


def test_no_test_file_imports_another_test_file():
    test_files = {module_name(p) for p in tracked("tests/*.py") if p.name.startswith("test_")}
    offenders = {}
    for path in tracked("tests/*.py"):
        names = imports(path, test_files)
        if names:
            offenders[str(path.relative_to(ROOT))] = sorted(names)
    assert offenders == {}


#: Test files at the top of tests/, each for a file at the top of the repository (or the repository itself).
TOP_LEVEL_TESTS = {"test_main.py": "__main__.py", "test_readme.py": "README.md",
                   "test_requirements.py": "requirements.txt", "test_renovate.py": "renovate.json",
                   "test_layout.py": ".", "test_docs.py": "docs", "test_pytest_ini.py": "pytest.ini",
                   "test_pyproject.py": "pyproject.toml"}
#: Test folders that mirror a folder of scripts or workflows rather than a Python package.
MIRRORED_FOLDERS = {"ci": ".ci", "workflows": ".github/workflows", "toolchain": "toolchain"}
#: Tests of what every workflow (or every script) must hold, beside one file per workflow or script.
ACROSS = {"workflows": {"test_all.py", "test_production_credentials.py"}, "ci": {"test_all.py"}}


def mirrors_a_file(folder: str, stem: str, name: str) -> bool:
    """tests/ci/test_<script>.py for .ci/<script>[.sh|.js] (tests/toolchain for toolchain/),
    tests/workflows/test_<workflow>.py for its .yml."""
    if name in ACROSS.get(folder, ()):
        return True
    base = ROOT / MIRRORED_FOLDERS[folder]
    names = {stem, stem.replace("_", "-")}
    return any((base / f"{n}{suffix}").exists() for n in names for suffix in ("", ".sh", ".js", ".yml"))


def test_tests_mirror_the_source():
    """Every test file names a module of the package its folder mirrors (``tests/<package>/test_<module>.py``), or
    the package itself; a folder below a package may mirror an upstream test suite (``lifecycletest/``), and the
    top of tests/ holds only the tests of the repository's top-level files."""
    modules = set(source_modules())
    strays = []
    for path in tracked("tests/*.py"):
        relative = path.relative_to(ROOT / "tests")
        if not path.name.startswith("test_") or relative.parts[0] in ("support", "integration", "e2e"):
            continue
        if len(relative.parts) == 1:
            if not (ROOT / TOP_LEVEL_TESTS.get(path.name, "-")).exists():
                strays.append(str(relative))
            continue
        folders = relative.parts[:-1]
        if folders[0] in MIRRORED_FOLDERS and len(folders) == 1:
            if not mirrors_a_file(folders[0], path.stem[len("test_"):], path.name):
                strays.append(str(relative))
            continue
        package = ".".join(folders)
        stem = path.stem[len("test_"):]
        packages = {".".join(folders[:i]) for i in range(1, len(folders) + 1)}
        if not ({f"{package}.{stem}", package} & modules or packages & modules):
            strays.append(str(relative))
    assert strays == []


NAMED_AFTER_HISTORY = re.compile(
    r"(?<![a-z])(?:review(?:[ _-]?\d+|s? rounds?|_fixes)|rev-?\d+[a-z]?|issues?[ #]?\d+)(?![a-z])", re.I)


@pytest.mark.parametrize("kind", ["file names", "text"])
def test_nothing_is_named_after_a_review_or_an_issue(kind):
    paths = [p for p in tracked("*") if p.suffix in (".py", ".sh", ".md", ".yml", ".yaml", ".js", ".toml", "")
             and "reference" not in p.relative_to(ROOT).parts]
    if kind == "file names":
        assert [str(p.relative_to(ROOT)) for p in paths if NAMED_AFTER_HISTORY.search(p.name)] == []
        return
    hits = []
    for path in paths:
        if path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if NAMED_AFTER_HISTORY.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert hits == []
