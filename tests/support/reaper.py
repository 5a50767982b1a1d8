"""Run as ``python -I -S reaper.py SPAWNER_PID -- COMMAND ARGS...`` (tests/support/processes.py does): run COMMAND and
make sure nothing it starts outlives the test process SPAWNER_PID. Standard library only, single-threaded.

- The reaper dies with the spawner (``PR_SET_PDEATHSIG``, SIGTERM so that it can act) and is a child subreaper
  (``PR_SET_CHILD_SUBREAPER``): whatever COMMAND starts and leaves behind, even in its own process group as the Pulumi
  CLI starts its plugins, is re-parented to the reaper rather than to init. COMMAND gets ``PR_SET_PDEATHSIG`` SIGKILL
  of the reaper.
- SIGTERM after the spawner died, or SIGUSR1 (what ``Guarded.kill`` sends): SIGKILL to every descendant, then the
  reaper exits as if killed. SIGTERM from a living spawner, SIGINT, SIGHUP, SIGQUIT, SIGUSR2: handed on to COMMAND.
- When COMMAND exits, its leftovers are killed and the reaper exits with COMMAND's status (its signal, if killed).
- A spawner already gone when the reaper starts: COMMAND never runs (exit 125); COMMAND not runnable: 127, the
  reason on stderr.
"""

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
FORWARDED = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR2)


def prctl(option: int, value: int) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def descendants(root: int) -> list[int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parents[int(name)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found.extend(children)
        frontier.extend(children)
    return found


def kill_all() -> None:
    """SIGKILL every descendant until none is left (one may fork while its parent is being killed), reaping them."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = descendants(os.getpid())
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        if not left:
            return
        time.sleep(0.02)


def die(signum: int) -> None:
    kill_all()
    if signum not in (signal.SIGKILL, signal.SIGSTOP):  # these two keep their default action
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)


def main(argv: list[str]) -> None:
    spawner, command = int(argv[0]), argv[2:]
    child = 0

    def on_term(signum, frame):
        if os.getppid() != spawner or not child:
            die(signal.SIGKILL)
        os.kill(child, signum)

    def forward(signum, frame):
        if child:
            os.kill(child, signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGUSR1, lambda signum, frame: die(signal.SIGKILL))
    for signum in FORWARDED:
        signal.signal(signum, forward)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != spawner:  # the spawner died before the death signal was armed
        os._exit(125)
    reaper = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != reaper:
                os._exit(125)
            for signum in (signal.SIGTERM, signal.SIGUSR1, *FORWARDED):
                signal.signal(signum, signal.SIG_DFL)
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, f"reaper: cannot run {command[0]}: {error.strerror}\n".encode())
        os._exit(127)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    kill_all()
    if os.WIFSIGNALED(status):
        die(os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
