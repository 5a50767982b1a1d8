"""The component as a Pulumi package: the plugin the CLI runs for ``aks-gpu-observability:index:GpuObservability``.

Serves :class:`~components.gpu_observability.GpuObservability` through Pulumi's component provider host, which infers
the package's schema from the component's annotations (one input per argument, one output per stack output, each
described). Run by the CLI (``PulumiPlugin.yaml``), never by hand; the package's version is the Python package's.
Upstream: pulumi/pulumi ``sdk/python/lib/pulumi/provider/experimental/host.py``. How a program adds it:
docs/component.md.
"""

from pulumi.provider.experimental import component_provider_host

from aks_gpu_observability import GpuObservability, __version__

#: The package's name: the first part of the component's type token.
NAME = "aks-gpu-observability"

if __name__ == "__main__":
    component_provider_host([GpuObservability], name=NAME, version=__version__)
