"""aks-gpu-observability: GPU-memory profiling on an existing AKS cluster (see README's diagram).

    config ─► existing AKS cluster, Grafana, Azure Monitor workspace (lookups and prerequisite checks)
      ├─► Kubernetes provider ─► namespace gadget ─┬─► Inspektor Gadget extension (beside the chain below)
      │                                           └─► claims ─► Pyroscope Helm release ─► Service with the PLS
      │     └─► Grafana private link: wait for PLS ─┬─► MPE ─► approve ─► refresh ─► private IP ─► Pyroscope datasource
      │                                             └─► NetworkPolicy admitting the PLS's NAT IPs
      └─► [created Azure Monitor workspace, Grafana] ─► role; Prometheus datasource; dashboard; viewers (each beside)

The whole graph is one component, components/gpu_observability.py, where each edge's reason is in a comment where it
is made (tests/test_main.py pins the whole set); this stack is its first consumer: config in, component out. The
unavoidable chain is release ─► Service ─► PLS ─► MPE ─► approval ─► refresh ─► Pyroscope datasource; the Service is
the stack's own, so no change of the release re-creates it.
"""

import pulumi

from components.gpu_observability import GpuObservability
from stack_config.load import load
from stack_config.references import resolve

# The stack's config, with what clusterStack and grafanaStack export filled in (StackReferences, the stack's own).
observability = GpuObservability("gpu-observability", resolve(load()))

# Outputs (docs/outputs.md): the component's, by their documented names.
for name, value in observability.stack_outputs.items():
    pulumi.export(name, value)
