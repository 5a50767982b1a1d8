"""What tests of the dev stack's plans share beyond its configuration values (tests/support/config_values.py): the
Grafana endpoint the canned lookup answers, and a plan resource with its references to removed resources dropped."""

from __future__ import annotations

from offline import canned

#: The endpoint of the dev stack's Grafana, as the canned lookup answers it.
ENDPOINT = canned.grafana({"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"},
                          "eastus2")["properties"]["endpoint"]


def without_references(resource: dict, gone: set) -> dict:
    """``resource`` (plan JSON) with no reference to the URNs ``gone`` left, as a state the engine would use holds it
    after those resources left it (a refresh that dropped them, an import that never had them): dependencies and
    property dependencies on them dropped, a replaceWith naming them cleared, a deletedWith naming them unset."""
    deps = {k: [u for u in us if u not in gone] for k, us in (resource.get("propertyDependencies") or {}).items()}
    options = dict(resource["options"])
    if any(u in gone for u in options.get("replaceWith") or []):
        options["replaceWith"] = []
    if options.get("deletedWith") in gone:
        options["deletedWith"] = None
    return {**resource, "dependencies": [d for d in resource["dependencies"] if d not in gone],
            "propertyDependencies": {k: us for k, us in deps.items() if us}, "options": options}


def refused_before_anything(overrides: dict, config: dict | None = None) -> tuple[str, list[str]]:
    """Run the dev stack's program offline with ``overrides`` (invoke token -> handler) and ``config``, expecting a
    ConfigError: (its one line, the types of what was registered before it)."""
    import pytest

    from offline import program
    from stack_config.schema import ConfigError

    monitor = program.RecordingMonitor(program.CannedMocks("eastus2", overrides))
    original = program.RecordingMonitor
    try:
        program.RecordingMonitor = lambda _mocks: monitor
        with pytest.raises(ConfigError) as caught:
            program.run("dev", dict(config or {}), overrides)
    finally:
        program.RecordingMonitor = original
    return str(caught.value), [r.type for r in monitor.recorded]
