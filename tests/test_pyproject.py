"""pyproject.toml: the component as a Python package holds exactly the packages the deployed program imports
(__main__.py and what it imports, at any depth), and asks for the same runtime dependencies as requirements.txt,
with the same bounds."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib
from pathlib import Path

from aks_gpu_observability import PARTS, __version__
from tests.support import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def normal(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines() -> dict[str, str]:
    """requirements.txt: distribution name (lower case) -> its requirement, comments dropped."""
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    return {normal(re.split(r"[<>=!~ ]", line)[0]): line.replace(" ", "") for line in lines if line}


def imported(path: Path) -> set[str]:
    """The modules a file imports, at module level or inside a function alike."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def deployed_imports() -> tuple[set[str], set[str]]:
    """From __main__.py, at any depth: the project's packages it imports, and the other top-level modules."""
    ours, others, todo, seen = set(), set(), [ROOT / "__main__.py"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imported(path):
            top = name.split(".")[0]
            if not (ROOT / top).is_dir():
                others.add(top)
                continue
            ours.add(top)
            base = ROOT.joinpath(*name.split("."))
            todo += [p for p in (base.with_suffix(".py"), base / "__init__.py") if p.exists()]
    return ours, others


def third_party_imports() -> set[str]:
    """The distributions the deployed program imports (standard library and the project's own left out)."""
    owners = importlib.metadata.packages_distributions()
    return {normal(owners[name][0]) for name in deployed_imports()[1] if name in owners}


def test_the_package_holds_the_deployed_program_and_its_front_door():
    assert deployed_imports()[0] == set(PARTS)
    assert PYPROJECT["tool"]["setuptools"]["packages"] == ["aks_gpu_observability", *sorted(PARTS)]


def test_the_dependencies_are_requirements_txt_lines_for_what_the_packages_import():
    wanted = requirement_lines()
    deps = {normal(re.split(r"[<>=!~ ]", d)[0]): d for d in PYPROJECT["project"]["dependencies"]}
    assert set(deps) == third_party_imports()
    assert {name: wanted[name] for name in deps} == deps


def test_the_version_is_the_packages():
    assert re.fullmatch(r"\d+\.\d+\.\d+", PYPROJECT["project"]["version"])
    assert __version__ == PYPROJECT["project"]["version"]
