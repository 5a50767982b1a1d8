"""What tests of the dev stack's plans share beyond its configuration values (tests/support/config_values.py): the
Grafana endpoint the canned lookup answers, a plan resource with its references to removed resources dropped, a
refusal before anything registers, and a cluster read from a stack reference whose outputs are secret or plain."""

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


def refused_before_anything(overrides: dict, config: dict | None = None, stack_outputs: dict | None = None,
                            secret_outputs: dict | None = None) -> tuple[str, list[str]]:
    """Run the dev stack's program offline with ``overrides`` (invoke token -> handler) and ``config``, expecting a
    ConfigError: (its one line, the types of what was registered before it). ``stack_outputs``, ``secret_outputs``:
    the referenced stacks' outputs and the names of the secret ones (offline.program.run)."""
    import pytest

    from offline import program
    from stack_config.schema import ConfigError

    monitor = program.RecordingMonitor(program.CannedMocks("eastus2", overrides, stack_outputs, secret_outputs))
    original = program.RecordingMonitor
    try:
        program.RecordingMonitor = lambda _mocks: monitor
        with pytest.raises(ConfigError) as caught:
            program.run("dev", dict(config or {}), overrides, stack_outputs=stack_outputs,
                        secret_outputs=secret_outputs)
    finally:
        program.RecordingMonitor = original
    return str(caught.value), [r.type for r in monitor.recorded]


#: A platform stack (``clusterStack``) exporting the cluster's name and resource group: values no other name of the
#: dev stack contains, so a leak cannot hide in another value.
HIDDEN_PLATFORM = "acme/platform-aks/hidden"
HIDDEN_CLUSTER, HIDDEN_GROUP = "aks-hidden-41", "rg-hidden-41"


def cluster_stack(secret: bool) -> dict:
    """Keyword arguments of :func:`refused_before_anything` for the dev stack with its cluster read from
    :data:`HIDDEN_PLATFORM`, whose clusterName and clusterResourceGroup outputs are secret there (``secret``) or
    plain (the ``plan`` fixture takes ``config``'s items as keyword arguments beside the other two)."""
    outputs = {"clusterName": HIDDEN_CLUSTER, "clusterResourceGroup": HIDDEN_GROUP}
    return {"config": {"clusterStack": HIDDEN_PLATFORM, "clusterName": "", "clusterResourceGroup": ""},
            "stack_outputs": {HIDDEN_PLATFORM: outputs},
            "secret_outputs": {HIDDEN_PLATFORM: sorted(outputs) if secret else []}}


def shows_the_cluster(line: str, secret: bool) -> bool:
    """Whether ``line`` shows what users need of the :func:`cluster_stack` cluster: with ``secret``, neither its name
    nor its resource group in any case, and ``[secret]`` where they were; otherwise its name (users need it to act on
    the line), and no ``[secret]``."""
    if secret:
        return HIDDEN_CLUSTER not in line.lower() and HIDDEN_GROUP not in line.lower() and "[secret]" in line
    return HIDDEN_CLUSTER in line and "[secret]" not in line


def error_hooks_of(*runs: tuple[dict, bool]) -> list[dict[str, list[str]]]:
    """For each ``(program.run keyword arguments, preview)``: resource name -> the names of the error hooks the program
    binds to it in that run of the dev stack (the offline engine's RegisterResource requests)."""
    from offline import program

    seen: dict[str, list[str]] = {}
    original = program.RecordingMonitor.RegisterResource

    def record(self, request):
        seen[request.name] = list(request.hooks.on_error)
        return original(self, request)

    program.RecordingMonitor.RegisterResource = record
    found = []
    try:
        for arguments, preview in runs:
            seen.clear()
            program.run("dev", preview=preview, **arguments)
            found.append(dict(seen))
    finally:
        program.RecordingMonitor.RegisterResource = original
    return found
