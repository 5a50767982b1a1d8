"""Shared test helpers. Every plan is evaluated by offline.program.run, which sets the mocks for that
run only, on a fresh event loop and a fresh contextvars context."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The offline plan's fingerprint key (offline/replacement.py) in a temporary directory for this test session,
# not the user's cache; subprocesses (offline.plan, .ci/plan_diff.sh) inherit it, as on one CI runner.
os.environ.setdefault("AKS_GPU_OBS_FINGERPRINT_DIR", tempfile.mkdtemp(prefix="aks-gpu-obs-fingerprint-"))

from offline import program  # noqa: E402  (after the fingerprint directory is set)

#: Fixtures shared by several test folders (the real azure-cli parser: ``real_az``).
pytest_plugins = ["tests.support.real_az"]


#: The tests that run the real engine on a simulated cluster (these fixtures, or marked ``engine``): minutes each,
#: against milliseconds for most others.
ENGINE_FIXTURES = {"aks", "engine_tools"}


def pytest_collection_modifyitems(config, items):
    """The real-engine tests first (otherwise in collection order): under xdist (``--dist loadgroup``, pytest.ini: one
    test at a time to each worker, an ``xdist_group`` as one unit, the biggest group first) each worker starts on a long
    one and the quick ones fill the end of the run, rather than one long test running alone at its end. Last when the
    tools build beside the tests (.ci/run sets tests/support/real_engine.py ``BUILDING_ENV``): the others run while
    it compiles. (The same order in every worker: it depends on the variable, not on whether the build has ended.)"""
    from tests.support.real_engine import BUILDING_ENV

    last = bool(os.environ.get(BUILDING_ENV))
    items.sort(key=lambda item: (0 if ENGINE_FIXTURES & set(getattr(item, "fixturenames", ()))
                                 or item.get_closest_marker("engine") else 1) ^ last)


@pytest.fixture
def plan():
    """plan(**overrides) -> Plan for the dev stack with --set style overrides (strings, as `pulumi config set` stores
    them); ``paths={PATH: VALUE}``: then --set-path ones (`pulumi config set --path`, for list keys), in order."""

    def make(invoke_overrides=None, stack="dev", stack_outputs=None, secret_outputs=None, paths=None, **overrides):
        return program.run(stack, {k: str(v) for k, v in overrides.items()}, invoke_overrides,
                               stack_outputs=stack_outputs, secret_outputs=secret_outputs,
                               config_sets=[(k, str(v), True) for k, v in (paths or {}).items()])

    return make


@pytest.fixture(scope="session")
def scenario_results(tmp_path_factory):
    """Every scenario of tests/support/scenarios.py run once per session (concurrently: the scripts mostly wait),
    shared by the scenario tests and the azure-cli parser check, and by the xdist workers (tests/support/once.py).
    name -> scenarios.Result."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.support import scenarios
    from tests.support.once import once_per_run

    def run_all() -> dict:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {s.name: pool.submit(scenarios.run, s, tmp_path_factory.mktemp(s.name))
                       for s in scenarios.SCENARIOS}
        return {name: future.result() for name, future in futures.items()}

    return once_per_run(tmp_path_factory, "scenario-results", run_all)
