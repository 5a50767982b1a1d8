"""Steps with no ARM resource, run as ``pulumi-command`` local commands over the repo's ``scripts/``.

Each step is ``bash scripts/<name>.sh`` or ``python3 scripts/<name>.py apply`` (run from the project
directory, where Pulumi starts its providers), parameters in ``environment`` (keys sorted), the sha256 of
the script and of its shared helper (``lib.sh`` or ``azcli.py``) in ``triggers`` so an edited script runs
again, stdout and stderr in the engine's log (the scripts never print tokens), and no previous output fed
back into the environment. Python steps also run ``... delete`` on destroy, with the environment they were
created with.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pulumi
from pulumi_command import local

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
#: API version of Microsoft.Dashboard the scripts use (the one azure-native 3.x uses for Grafana).
DASHBOARD_API_VERSION = "2024-10-01"


def script_hash(script: str) -> str:
    """sha256 (hex) of the shared helper (``scripts/lib.sh`` for bash, ``scripts/azcli.py`` for Python)
    followed by ``scripts/<script>``; raises FileNotFoundError."""
    helper = "lib.sh" if script.endswith(".sh") else "azcli.py"
    digest = hashlib.sha256()
    for path in (SCRIPTS / helper, SCRIPTS / script):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def script_command(
    name: str,
    script: str,
    environment: Mapping[str, pulumi.Input[str]],
    triggers: Sequence[pulumi.Input[object]] = (),
    opts: Optional[pulumi.ResourceOptions] = None,
) -> local.Command:
    """A ``command:local:Command`` that runs ``scripts/<script>`` on create and on any input change (and,
    for a Python step, ``scripts/<script> delete`` on destroy)."""
    python = script.endswith(".py")
    return local.Command(
        name,
        create=f"python3 scripts/{script} apply" if python else f"bash scripts/{script}",
        delete=f"python3 scripts/{script} delete" if python else None,
        environment={key: environment[key] for key in sorted(environment)},
        triggers=[script_hash(script), *triggers],
        logging=local.Logging.STDOUT_AND_STDERR,
        add_previous_output_in_env=False,
        opts=opts,
    )


def forwarded_depends_on(opts: Optional[pulumi.ResourceOptions]) -> list:
    """A component's ``depends_on`` as a list, to hand on to its children: Pulumi does not make a
    component's children wait for what the component depends on."""
    depends_on = opts.depends_on if opts else None
    if depends_on is None:
        return []
    return list(depends_on) if isinstance(depends_on, (list, tuple)) else [depends_on]
