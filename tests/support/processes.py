"""Starting the tests' processes so that none outlives the test run, even one killed with SIGKILL
(docs/decisions/test-servers.md).

:func:`popen` and :func:`run` are ``subprocess.Popen`` and ``subprocess.run`` with the command run under
tests/support/reaper.py: the command and everything it starts (a Pulumi CLI's plugins, language host and program,
which the CLI puts in process groups of their own) are killed when the test process dies, when ``kill()`` is called, or
when the command exits and leaves something behind. The processes are started from one thread that lives as long as
the test process, as ``PR_SET_PDEATHSIG`` fires when the thread that started a process exits, not the process; no
Python runs in the forked child (``preexec_fn`` did, and aborted a child forked while gRPC's threads ran).
``Popen.pid`` is the reaper's; signals sent to it reach the command.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

REAPER = Path(__file__).with_name("reaper.py")


class Guarded(subprocess.Popen):
    """A command under the reaper: ``kill()`` kills the command and all it started."""

    def send_signal(self, sig: int) -> None:
        super().send_signal(signal.SIGUSR1 if sig == signal.SIGKILL else sig)


class _Spawner:
    """One daemon thread, started once, that starts every guarded process."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], Future]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _serve(self) -> None:
        while True:
            make, future = self._requests.get()
            try:
                future.set_result(make())
            except BaseException as error:  # handed to the caller, as Popen would raise it there
                future.set_exception(error)

    def __call__(self, make: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="test-process-spawner", daemon=True)
                self._thread.start()
        future: Future = Future()
        self._requests.put((make, future))
        return future.result()


_spawn = _Spawner()


def guarded_argv(argv: list[str]) -> list[str]:
    return [sys.executable, "-I", "-S", str(REAPER), str(os.getpid()), "--", *map(str, argv)]


def popen(argv: list, **kwargs) -> Guarded:
    """``subprocess.Popen(argv, **kwargs)``, the command under the reaper. ``preexec_fn`` is refused."""
    if "preexec_fn" in kwargs:
        raise ValueError("popen: preexec_fn is not supported (the child must run no Python before exec)")
    return _spawn(lambda: Guarded(guarded_argv(argv), **kwargs))


def run(argv: list, *, input=None, capture_output: bool = False, timeout: float | None = None,
        check: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` with :func:`popen`: on a timeout the command and all it started are killed."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with popen(argv, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise subprocess.TimeoutExpired(argv, timeout) from None
        except BaseException:
            process.kill()
            process.wait()
            raise
        code = process.poll()
    if check and code:
        raise subprocess.CalledProcessError(code, argv, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(argv, code, stdout, stderr)
