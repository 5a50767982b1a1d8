"""The offline engine: how ``pulumi up``, ``preview``, ``destroy`` and ``refresh`` turn a program and a state into
steps.

Owns: a port of pulumi/pulumi v3.230.0's deployment engine, kept to what this stack relies on and split as upstream
splits ``pkg/resource/deploy``: :mod:`.step_generator`, :mod:`.step_executor`, :mod:`.snapshot`, :mod:`.deployment`
(the entry points), with :mod:`.resource`, :mod:`.graph` and :mod:`.property_path`. Input: a program registering
resources with a :class:`Monitor`, a state, provider fakes. Output: a :class:`Result` (steps, state written, error).
The offline diff (:mod:`offline.diff`) runs on it; the program runner is :mod:`offline.program`, not this. Every rule
is held by a case ported from ``pkg/engine/lifecycletest`` (tests/offline/engine/). Sources and what it does not
model: docs/decisions/offline-engine.md. Upstream: https://github.com/pulumi/pulumi/tree/v3.230.0/pkg/resource/deploy
"""

from offline.engine.deployment import Deployment, Engine, Monitor
from offline.engine.graph import dependencies_of, depending_on, transitive_dependencies
from offline.engine.property_path import PropertyPathError, parse_property_path, path_contains, replace_on_changes_keys
from offline.engine.resource import (
    SOURCE,
    STACK_TYPE,
    UNKNOWN,
    Bail,
    DiffResult,
    EngineError,
    Provider,
    ProviderError,
    Registered,
    Result,
    State,
    Step,
    contains_unknown,
    default_urn,
    is_provider,
    package_of,
)
from offline.engine.snapshot import rebuild_base_state, verify_integrity
from offline.engine.step_generator import process_ignore_changes, should_trigger_replace

__all__ = ["SOURCE", "STACK_TYPE", "UNKNOWN", "Bail", "Deployment", "DiffResult", "Engine", "EngineError", "Monitor",
           "PropertyPathError", "Provider", "ProviderError", "Registered", "Result", "State", "Step",
           "contains_unknown", "default_urn", "dependencies_of", "depending_on", "is_provider", "package_of",
           "parse_property_path", "path_contains", "process_ignore_changes", "rebuild_base_state",
           "replace_on_changes_keys", "should_trigger_replace", "transitive_dependencies", "verify_integrity"]
