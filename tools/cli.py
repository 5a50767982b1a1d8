"""What the command-line tools (``tools.plan``, ``tools.verify``, ``tools.hotspots``) share: bad input is one
line on stderr, ``error: <what is wrong and what is expected>``, and exit status 2."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


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
