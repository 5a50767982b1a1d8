""".ci/run runs the tests while toolchain/build compiles: the tests that need the tools wait for the exit code it
writes (tests/support/real_engine.py ``BUILDING_ENV``), fail in one line when it failed, and are ordered last then
(tests/conftest.py), the same order in every xdist worker."""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass, field

import pytest

from tests import conftest
from tests.support import ROOT, real_engine


@dataclass
class Item:
    name: str
    fixturenames: tuple = ()
    markers: set = field(default_factory=set)

    def get_closest_marker(self, name):
        return name if name in self.markers else None


def order(monkeypatch, building: bool) -> list[str]:
    if building:
        monkeypatch.setenv(real_engine.BUILDING_ENV, "/nonexistent/build.rc")
    else:
        monkeypatch.delenv(real_engine.BUILDING_ENV, raising=False)
    items = [Item("quick"), Item("deploy", ("aks", "tmp_path")), Item("parse"), Item("bench", markers={"engine"})]
    conftest.pytest_collection_modifyitems(None, items)
    return [item.name for item in items]


def test_engine_tests_go_first_unless_the_tools_build_beside_them(monkeypatch):
    assert order(monkeypatch, building=False) == ["deploy", "bench", "quick", "parse"]
    assert order(monkeypatch, building=True) == ["quick", "parse", "deploy", "bench"]


def test_a_test_that_runs_the_e2e_fixtures_in_a_child_pytest_is_ordered_with_the_engine_tests():
    """The child's ``aks`` waits for the tools, so its parent must too: a cold CI run found one among the quick tests,
    its child killed by the parent's 600 s timeout while the tools were still compiling."""
    source = ROOT / "tests" / "e2e" / "test_control_plane.py"
    tests = {node.name: {arg.arg for arg in node.args.args} for node in ast.parse(source.read_text()).body
             if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    assert tests
    for name, arguments in tests.items():
        assert conftest.ENGINE_FIXTURES & arguments, name


def test_the_tools_are_awaited_and_a_failed_build_fails_in_one_line(monkeypatch, tmp_path):
    rc = tmp_path / "build.rc"
    monkeypatch.setenv(real_engine.BUILDING_ENV, str(rc))
    monkeypatch.setattr(real_engine.time, "sleep", lambda seconds: None)
    assert real_engine.building()
    rc.touch()  # created, the code not written yet (a shell's `echo > file`)
    assert real_engine.building()
    writer = threading.Timer(0.2, rc.write_text, ("2\n",))
    writer.start()
    with pytest.raises(pytest.fail.Exception, match=r"^toolchain/build failed \(exit 2\): its log is "
                                                    r"\.tools/build\.log$"):
        real_engine.tools()
    writer.join()
    assert not real_engine.building()
