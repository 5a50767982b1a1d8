"""One Grafana's azure-native writes, one process at a time: the lock of the fleet's Grafana phase (docs/fleet.md).

Owns: :func:`hold` and :func:`release_after`. With ``FLEET_GRAFANA_LOCK`` naming a file, during an update (not a
preview), ``hold(value)`` resolves to ``value`` only once this process holds an exclusive ``flock`` on that file, so
the resource that takes it as an input is registered, and written, only then; ``release_after(output, held)``
unlocks once ``output`` resolves (the write's result is in) and the hold did. Holds nest within one process (a
count). The kernel drops the lock when the process exits, so a failed write never leaves it held. Without the
variable, or in a preview, ``hold`` is the identity and ``release_after`` does nothing. Upstream: flock(2) (a lock
belongs to the open file description); ``Output.apply`` awaits a callback's awaitable (pulumi/pulumi v3.230.0
``sdk/python/lib/pulumi/output.py``).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from typing import Any, Optional

import pulumi

ENV = "FLEET_GRAFANA_LOCK"


class _Lock:
    """The process's hold on the lock file: one descriptor, a count of holds."""

    def __init__(self) -> None:
        self.fd: Optional[int] = None
        self.count = 0
        self.guard: Optional[asyncio.Lock] = None

    async def acquire(self, path: str) -> None:
        self.guard = self.guard or asyncio.Lock()
        async with self.guard:  # two holds at once in this process must not open two descriptors
            if self.count == 0:
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
                await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
                self.fd = fd
            self.count += 1

    def release(self) -> None:
        if self.count == 0:
            return
        self.count -= 1
        if self.count == 0 and self.fd is not None:
            os.close(self.fd)  # closing the only descriptor releases the flock
            self.fd = None


_LOCK = _Lock()


def path() -> Optional[str]:
    """The lock file when this process serializes its Grafana writes (an update with ``FLEET_GRAFANA_LOCK`` set)."""
    if pulumi.runtime.is_dry_run():
        return None
    return os.environ.get(ENV) or None


def hold(value: Any) -> Any:
    """``value``, resolved once this process holds the lock (module docstring); ``value`` itself when unlocked."""
    where = path()
    if where is None:
        return value

    async def locked(resolved: Any) -> Any:
        await _LOCK.acquire(where)
        return resolved

    return pulumi.Output.from_input(value).apply(locked)


def release_after(output: pulumi.Output, held: Any) -> None:
    """Unlock the hold ``held`` (what :func:`hold` returned) once ``output`` resolves too: a hold that never took the
    lock (its value unknown) is never released for another."""
    if path() is not None:
        pulumi.Output.all(held, output).apply(lambda _: _LOCK.release())
