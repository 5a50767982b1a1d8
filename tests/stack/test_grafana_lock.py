"""stack/grafana_lock.py: the Grafana writes of an update wait for the lock file; previews and plain runs never lock."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import threading

import pytest

from offline import program
from offline.program import run
from stack import grafana_lock

MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
WORKSPACE = "azure-native:dashboard:Grafana"

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def locked_elsewhere(path) -> bool:
    """True when another open file description holds the lock (flock's LOCK_NB refuses)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def registrations(monkeypatch, path):
    """Run the program recording, at each Grafana write's registration, whether the lock was held."""
    seen: list[tuple[str, bool]] = []
    original = program.CannedMocks.new_resource

    def recording(self, args):
        if args.typ in (MPE, WORKSPACE):
            seen.append((args.typ, os.path.exists(path) and locked_elsewhere(path)))
        return original(self, args)

    monkeypatch.setattr(program.CannedMocks, "new_resource", recording)
    return seen


def test_an_update_registers_the_endpoint_and_the_workspace_only_under_the_lock_and_unlocks_after(
        monkeypatch, tmp_path):
    path = str(tmp_path / "grafana.lock")
    monkeypatch.setenv(grafana_lock.ENV, path)
    seen = registrations(monkeypatch, path)
    run("dev", {"createGrafana": "true"}, preview=False)
    assert sorted(seen) == [(WORKSPACE, True), (MPE, True)]
    assert not locked_elsewhere(path)


@pytest.mark.parametrize("preview, env", [(True, True), (False, False)])
def test_a_preview_or_a_run_without_the_variable_never_locks(monkeypatch, tmp_path, preview, env):
    path = str(tmp_path / "grafana.lock")
    if env:
        monkeypatch.setenv(grafana_lock.ENV, path)
    else:
        monkeypatch.delenv(grafana_lock.ENV, raising=False)
    seen = registrations(monkeypatch, path)
    run("dev", preview=preview)
    assert seen == [(MPE, False)]
    assert not os.path.exists(path)


def test_a_write_waits_while_another_process_holds_the_lock(tmp_path):
    path = str(tmp_path / "grafana.lock")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        lock, acquired = grafana_lock._Lock(), threading.Event()
        waiter = threading.Thread(target=lambda: (asyncio.run(lock.acquire(path)), acquired.set()))
        waiter.start()
        assert not acquired.wait(0.5)  # the other process holds it
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert acquired.wait(30)
        assert locked_elsewhere(path)
        lock.release()
        assert not locked_elsewhere(path)
    finally:
        holder.kill()
        holder.wait()


def test_holds_nest_and_a_process_that_dies_holding_the_lock_leaves_it_free(tmp_path):
    path = str(tmp_path / "grafana.lock")
    lock = grafana_lock._Lock()

    async def twice():
        await lock.acquire(path)
        await lock.acquire(path)

    asyncio.run(twice())
    lock.release()
    assert locked_elsewhere(path)  # one hold left
    lock.release()
    assert not locked_elsewhere(path)
    dying = subprocess.run([sys.executable, "-c", "import asyncio, sys; from stack import grafana_lock as g; "
                            "asyncio.run(g._LOCK.acquire(sys.argv[1])); sys.exit(3)", path],
                           cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert dying.returncode == 3
    assert not locked_elsewhere(path)


def test_the_fleet_names_the_same_variable():
    """ops/fleet.py runs on the runner's own python3 without pulumi, so it spells the variable itself."""
    from ops import fleet

    assert fleet.GRAFANA_LOCK_ENV == grafana_lock.ENV


def test_the_fleets_refresh_speaks_the_steps_api_version():
    from ops import fleet
    from steps.command import DASHBOARD_API_VERSION

    assert fleet.DASHBOARD_API_VERSION == DASHBOARD_API_VERSION
