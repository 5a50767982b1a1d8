"""Pyroscope profile-type IDs: ``name:sampleType:sampleUnit:periodType:periodUnit``.

The stack (config ``dashboardProfileType``), the flame-graph reader and ``ops.verify`` read them from here.
``PUBLISHED`` is what the pinned dashboard's GPU-memory panel asks for; ``GADGET_054`` is what Pyroscope v1.15.0
holds for the GPU memory that Inspektor Gadget v0.54.0 and later sends. Why the two differ:
docs/decisions/profile-types.md. Source: grafana/pyroscope v1.15.0 ``pkg/phlaredb/labels/labels.go``.
"""

from __future__ import annotations

import re

#: The ID the published dashboard's GPU-memory queries ask for.
PUBLISHED = "process_cpu:malloc:bytes::"
#: The ID Pyroscope v1.15.0 holds for Inspektor Gadget v0.54.0+ GPU memory (period type ``process_cuda``).
GADGET_054 = "process_cpu:malloc:bytes:process_cuda:bytes"
#: A well-formed profile-type ID (five fields, the last two may be empty).
ID = re.compile(r"[^:\s]+:[^:\s]+:[^:\s]+:[^:\s]*:[^:\s]*")
#: The sample type and unit of GPU memory.
GPU_MEMORY = ("malloc", "bytes")


def is_gpu_memory(profile_type: str) -> bool:
    """True for a well-formed ID whose sample type and unit are GPU memory's (``*:malloc:bytes:*:*``)."""
    return bool(ID.fullmatch(profile_type)) and tuple(profile_type.split(":")[1:3]) == GPU_MEMORY
