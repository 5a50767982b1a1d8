"""The benchmarks run as their documented commands (``python -m bench.<name> ...``) from the project root."""

from __future__ import annotations

import subprocess
import sys

from tests.support import ROOT


def bench(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
