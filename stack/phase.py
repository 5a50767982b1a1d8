"""Whether the program runs for a preview, and a value held back in a preview until a step has run.

Owns: :func:`previewing` (``pulumi.runtime.is_dry_run``, unless :data:`AT_UP` says otherwise) and :func:`after`.
A lookup (an invoke) that reads what a step makes must not run in a preview that creates or replaces that step: the
thing is not there yet, and ARM answers 404, failing the whole preview. The engine does not hold such an invoke
back (no ``invokeDependsOn`` feature: pkg/resource/deploy/source_eval.go ``SupportsFeature``, read from v3.230.0 to
v3.259.0; the real-engine tests run v3.277.0), and the SDK then
checks only its dependencies' ids, which a provider's preview Create returns. So in a preview an invoke's argument is
passed through the step's ``stdout``, unknown while the step is created or replaced (the SDK then skips the invoke),
known from the state otherwise. ``pulumi up`` runs the invoke after the step, as ``depends_on`` orders it.
:data:`AT_UP`: set by the offline plan while it estimates what ``pulumi up`` does (offline/program.py).
Research: docs/decisions/real-engine-tools.md ("What the real engine found").
"""

from __future__ import annotations

from typing import Any, Optional

import pulumi

#: True while the offline plan estimates `pulumi up` (offline/program.py); None: ask the runtime.
AT_UP: Optional[bool] = None


def previewing() -> bool:
    return pulumi.runtime.is_dry_run() if AT_UP is None else not AT_UP


def after(step: Any, value: Any) -> Any:
    """``value`` as an invoke's argument that must wait for ``step`` (a command) in a preview (module docstring), as
    secret as ``value`` is: a step's stdout may be secret (steps/command.py), and an invoke with a secret argument
    answers secret, which would differ from `pulumi up`'s answer and preview the state's plain values as changed."""
    return pulumi.Output.unsecret(step.stdout).apply(lambda _: value) if previewing() else value
