"""aks-gpu-observability as a Python package: GPU-memory profiling on an existing AKS cluster, one Pulumi component.

    from aks_gpu_observability import GpuObservability
    gpu = GpuObservability("gpu-observability", {"cluster_name": "aks-gpu", ...})

Exports :class:`GpuObservability` (components/gpu_observability.py), its arguments :class:`GpuObservabilityArgs`
(one per stack config key, docs/configuration.md) and ``__version__``. The package installs the project's own
packages as the project lays them out (:data:`PARTS`); a program's package of one of those names would hide one, so
importing this refuses it first: ``ImportError``, one line naming the package and the file that hides it. How to add
the component to a stack: docs/component.md; why it is packaged so: docs/decisions/component-package.md.
"""

import importlib.metadata
import importlib.util
import tomllib
from pathlib import Path

#: The packages the component is made of, installed beside this one.
PARTS = ("components", "existing", "stack", "stack_config", "steps")
_HOME = Path(__file__).resolve().parent.parent


def _refuse_hidden_parts() -> None:
    for name in PARTS:
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        if origin is None or origin.parent.parent != _HOME:
            raise ImportError(f"aks_gpu_observability: the package {name!r} at {origin or 'nowhere'} hides this "
                              f"package's (in {_HOME}); rename the program's {name!r}")


def _version() -> str:
    try:
        return importlib.metadata.version("aks-gpu-observability")
    except importlib.metadata.PackageNotFoundError:  # the project's checkout, not installed
        return tomllib.loads((_HOME / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


_refuse_hidden_parts()

from components.gpu_observability import GpuObservability  # noqa: E402  (after the check: it imports the parts)
from components.gpu_observability_args import GpuObservabilityArgs  # noqa: E402

__version__ = _version()
__all__ = ["GpuObservability", "GpuObservabilityArgs", "__version__"]
