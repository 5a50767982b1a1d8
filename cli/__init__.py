"""What the command-line tools (``offline.plan``, ``ops.verify``, ``flamegraph.hotspots``) share: bad input is one
line on stderr, ``error: <what is wrong and what is expected>``, and exit status 2; a closed stdout ends them quietly
(:func:`exit_code`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
from typing import Callable, Iterator, Optional, Sequence


class UsageError(Exception):
    """A command line argparse refused; ``str(error)`` is argparse's one-line message."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error raises :class:`UsageError` instead of printing the usage and exiting, so the
    tool prints one line (``error: ...``) and returns 2 like for every other bad input."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message)

    def parse_or_report(self, argv: Optional[Sequence[str]]) -> Optional[argparse.Namespace]:
        """``parse_args(argv)``, or None after printing ``error: <argparse's message>`` on stderr (the tool then
        returns 2)."""
        try:
            return self.parse_args(argv)
        except UsageError as error:
            print(f"error: {error}", file=sys.stderr)
            return None


def exit_code(main: Callable[[], int]) -> int:
    """``main()``'s exit status, for ``sys.exit`` in a tool's ``__main__`` block; when the reader of stdout goes away
    early (``python -m flamegraph.hotspots ... --json | head``) the tool stops quietly, as a Unix tool killed by SIGPIPE
    does: no traceback, status 128 + SIGPIPE (141). Python ignores SIGPIPE and raises BrokenPipeError instead; stdout
    is pointed at /dev/null so that the flush at exit does not raise again (Python docs, ``signal``, "Note on
    SIGPIPE")."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


@contextlib.contextmanager
def require_virtualenv(module: str) -> Iterator[None]:
    """Around a tool's imports of the project's requirements: run as ``python -m <module>`` by a Python without them
    (a bare ``python`` outside the project's virtualenv), the tool prints one line saying how to set it up and run it
    there, and exits with status 2, instead of a ModuleNotFoundError traceback. Imported as a module (tests), the error
    is raised as it is."""
    try:
        yield
    except ModuleNotFoundError as missing:
        if sys.argv[0] in ("-m", "") or not sys.argv[0].endswith(module.replace(".", os.sep) + ".py"):
            raise
        command = shlex.join([".venv/bin/python", "-m", module, *sys.argv[1:]])
        print(f"error: Python module {missing.name!r} is not installed for {sys.executable}: set up the project's "
              "virtualenv once (python3 -m venv .venv && .venv/bin/pip install --require-hashes -r "
              f"requirements-dev.lock), then run {command}", file=sys.stderr)
        sys.exit(2)
