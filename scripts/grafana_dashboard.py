"""Kept for stacks last updated by a release that ran the step as ``python3 scripts/grafana_dashboard.py``:
pulumi-command runs the delete (and hands the stdout) that a step's last create or update stored, so
``pulumi destroy`` of such a stack runs this path. It runs ``python3 -m steps.grafana_dashboard`` with the same
arguments, from the same directory (the project root, where the provider runs every step). The next ``pulumi up``
stores the new command line."""

import os
import sys

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, "-m", "steps.grafana_dashboard", *sys.argv[1:]])
