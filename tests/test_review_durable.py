"""Review of the durable-Pyroscope merge (80e3708): checks against upstream source that the change does not meet yet.

Each test names the upstream source it encodes; they fail on rev-durable as merged.
"""

from __future__ import annotations

import pytest

from tools.offline.engine import DiffResult, Engine, Provider


def _engine_replaces(listed: str, detailed_key: str) -> bool:
    """Run the offline engine: a resource whose provider reports ``detailed_key`` changed, with ``listed`` in
    replaceOnChanges; True when the engine replaces it."""
    inputs = {"values": {"v": 1}}

    def diff(_urn, old, new_inputs, _preview):
        changed = old.inputs != new_inputs
        return DiffResult(changed, [], False, ["values", detailed_key] if changed else [])

    engine = Engine({"pkgA": Provider(diff=diff, create=lambda _u, i, _p: ("id", dict(i)))})

    def program(monitor):
        monitor.register("pkgA:index:typ", "res", True, inputs=dict(inputs), replace_on_changes=[listed])

    first = engine.update(program, [])
    assert first.error is None
    inputs["values"] = {"v": 2}
    second = engine.update(program, first.snapshot, preview=True)
    assert second.error is None
    return any(s.op == "replace" for s in second.steps)


@pytest.mark.parametrize("listed, detailed_key", [
    # resource.PropertyPath.Contains (pulumi/pulumi v3.230.0 sdk/go/common/resource/properties_path.go): the listed
    # path's segments are a prefix of the changed path's, whatever the spelling.
    ("values.pyroscope.tolerations", "values.pyroscope.tolerations[0]"),  # an index below the listed path
    ('values.pyroscope.service.annotations', 'values.pyroscope.service.annotations["a.b/c"]'),  # a quoted key below
    ('values["pyroscope"].persistence', "values.pyroscope.persistence.size"),  # the same path, bracket spelling
    ("values.*.persistence", "values.pyroscope.persistence.size"),  # "*" matches one segment at its level
])
def test_offline_replace_on_changes_matches_as_property_path_contains(listed, detailed_key):
    """pulumi/pulumi v3.230.0 pkg/resource/deploy/step_generator.go applyReplaceOnChanges parses both sides with
    resource.ParsePropertyPath and replaces when ``replaceOnChangePath.Contains(diffPath)``; the offline engine
    (tools/offline/engine.py steps_from_diff) matches strings, ``k == p or k.startswith(p + ".") or p == "*"``, so an
    index or quoted key directly below the listed path, a bracket spelling, or an inner "*" is missed."""
    assert _engine_replaces(listed, detailed_key)


def test_offline_replace_on_changes_harness_control():
    """Control for the harness above: a dotted path below the listed one is matched today."""
    assert _engine_replaces("values.pyroscope.persistence", "values.pyroscope.persistence.size")
    assert not _engine_replaces("values.pyroscope.persistence", "values.pyroscope.service.port")
