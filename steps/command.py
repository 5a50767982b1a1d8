"""Steps with no ARM resource, run as ``pulumi-command`` local commands over the repo's ``steps/``.

Owns :func:`script_command` (``bash steps/<name>.sh`` or ``python3 -m steps.<name> apply``, run from the project
directory or the installed package's, :func:`scripts_dir`; parameters in ``environment`` with keys sorted, stdout and
stderr in the engine's log), :func:`script_hash` (the sha256 of the script and its shared helpers :data:`HELPERS`,
part of the inputs, so an edited script runs again), :func:`with_secret_mask` and :func:`forwarded_depends_on`. Two
kinds of step: *actions* (bash: wait, approve, refresh) own nothing, have no delete, and carry the hash in
``triggers``; *owners* (Python: a datasource, the dashboard) own an object in Grafana, stamp it with the step's owner
id (``steps/azcli.py``; printed as ``<uid> owner=<id>``) and on destroy delete it unless another step's id is on it.
Why, and how both replacement orders end: docs/decisions/step-commands.md. Upstream: pulumi-command v1.2.1
``local/commandOutputs.go``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pulumi
from pulumi_command import local

SCRIPTS = Path(__file__).resolve().parent
#: API version of Microsoft.Dashboard the scripts use (the one azure-native 3.x uses for Grafana).
DASHBOARD_API_VERSION = "2024-10-01"


#: The shared helpers a step script runs with: bash steps source ``lib.sh``; the Python (Grafana) steps import
#: ``azcli.py`` and ``grafana_server.py`` (which Grafana it is, and what its version changes).
HELPERS = {".sh": ("lib.sh",), ".py": ("azcli.py", "grafana_server.py")}


def script_hash(script: str) -> str:
    """sha256 (hex) of the shared helpers (:data:`HELPERS`) followed by ``steps/<script>``; raises
    FileNotFoundError."""
    digest = hashlib.sha256()
    for path in [SCRIPTS / helper for helper in HELPERS[Path(script).suffix]] + [SCRIPTS / script]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def scripts_dir() -> Optional[str]:
    """The ``dir`` a step runs from: None (the command provider's, the program's directory) when the program is this
    project; for a program that installed the package (or the package's plugin, which the CLI also starts in the
    program's directory), the folder holding ``steps/``, relative to the program's directory when inside it (a
    virtualenv in the project: the same input on every machine with that Python), else absolute."""
    root, here = SCRIPTS.parent, Path.cwd().resolve()
    if root == here:
        return None
    try:
        relative = Path(os.path.relpath(root, here))
    except ValueError:  # another drive
        return str(root)
    return str(root) if relative.parts[0] == ".." else relative.as_posix()


def script_command(
    name: str,
    script: str,
    environment: Mapping[str, pulumi.Input[str]],
    triggers: Sequence[pulumi.Input[object]] = (),
    opts: Optional[pulumi.ResourceOptions] = None,
    delete_first: bool = True,
) -> local.Command:
    """A ``command:local:Command`` for ``steps/<script>``: an action (``.sh``) or an owner (``.py``, with
    ``apply``/``delete``), as the module docstring describes. ``triggers``: for an action, extra values
    that re-run it (after the script hash); for an owner, the identity of what it owns. ``delete_first``:
    an owner's replacement deletes the old object before creating the new one (either order is safe, see the
    module docstring; this picks the one for identity changes)."""
    owner = script.endswith(".py")
    env = dict(environment)
    if owner:
        env["SCRIPT_SHA256"] = script_hash(script)
    return local.Command(
        name,
        create=f"python3 -m steps.{Path(script).stem} apply" if owner else f"bash steps/{script}",
        delete=f"python3 -m steps.{Path(script).stem} delete" if owner else None,
        environment={key: env[key] for key in sorted(env)},
        triggers=list(triggers) if owner else [script_hash(script), *triggers],
        dir=scripts_dir(),
        logging=local.Logging.STDOUT_AND_STDERR,
        add_previous_output_in_env=owner,  # an owner's update and delete read their owner id from it
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(delete_before_replace=owner and delete_first)),
    )


#: The environment variable with the values a step must never print (steps/lib.sh ``mask``, steps/azcli.py ``mask``).
#: Its name says nothing of secrets: the policy pack's mandatory no-plaintext-secrets rule refuses an environment key
#: that looks like a credential's (policy/rules.py ``_SECRET_KEY``).
MASK_VALUES = "MASK_VALUES"


def is_step(props: Mapping[str, object]) -> bool:
    """True for the properties of a :func:`script_command` (``create`` runs ``steps/<name>``)."""
    return str(props.get("create") or "").startswith(("bash steps/", "python3 -m steps."))


def with_secret_mask(props: Mapping[str, object], opts: pulumi.ResourceOptions,
                     values: Sequence[str]) -> tuple[dict, pulumi.ResourceOptions]:
    """A step's properties and options (a ``command:local:Command`` of :func:`script_command`, as a stack
    transformation sees them: stack/secrecy.py) for a stack whose config has secret ``values``. The engine masks
    only what it knows is secret in its own events, not a secret that reached a script as a plain substring (a node
    resource group or an ARM id carries the cluster's or Grafana's name, and so does what the script prints). So:

    - ``environment`` gains ``MASK_VALUES``, the values one per line, longest first, as a Pulumi secret; the
      scripts' logging (steps/lib.sh ``log``, steps/azcli.py ``Step.log``) prints each as ``[secret]``;
    - ``logging`` becomes ``stderr``: the engine logs the (masked) stderr, not stdout, which carries the step's result
      whole (the PLS id, the connection's name) because the next resource reads it;
    - ``stdout`` and ``stderr`` are additional secret outputs, so the state and any display of the result keep them
      secret.

    Anything that is not a step, or no ``values``, is returned as it is."""
    values = tuple(sorted({v for v in values if v}, key=lambda v: (-len(v), v)))
    if not values or not is_step(props):
        return dict(props), opts
    env = {**dict(props.get("environment") or {}), MASK_VALUES: pulumi.Output.secret("\n".join(values))}
    masked = {**props, "environment": {key: env[key] for key in sorted(env)}, "logging": local.Logging.STDERR}
    return masked, pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(additional_secret_outputs=["stdout", "stderr"]))


def forwarded_depends_on(opts: Optional[pulumi.ResourceOptions]) -> list:
    """A component's ``depends_on`` as a list, to hand on to its children: Pulumi does not make a
    component's children wait for what the component depends on."""
    depends_on = opts.depends_on if opts else None
    if depends_on is None:
        return []
    return list(depends_on) if isinstance(depends_on, (list, tuple)) else [depends_on]
