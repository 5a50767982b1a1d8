"""examples/consumer run offline: its program folder under Pulumi mocks, as the language host runs it (``runpy`` of the
folder, so its own modules import), with the stack's config as the CLI hands it over (Pulumi.yaml's defaults written
in). The referenced stack's outputs are answered as a StackReference reads them, listClusterUserCredential as AKS
answers it (offline/canned.py, kubelogin devicecode); every registration is recorded with its provider and options by
offline.program's RecordingMonitor, and :class:`ConsumerMocks` keeps the inputs and invokes as the mocks see them
(secrets unwrapped). SIMULATED: no engine, no Azure, no cluster."""

from __future__ import annotations

import asyncio
import contextvars
import runpy
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import yaml
from pulumi.runtime.config import set_all_config

from offline import canned
from offline.program import RecordingMonitor
from offline.wire import SECRET_SIG, SIG
from tests.support import ROOT

FOLDER = ROOT / "examples" / "consumer"
PROJECT = yaml.safe_load((FOLDER / "Pulumi.yaml").read_text())["name"]
CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
#: The config a first stack of the consumer sets (README): the observability stack, fully qualified.
CONFIG = {"observabilityStack": "acme/aks-gpu-observability/dev"}


def reveal(value: Any) -> Any:
    """``value`` with every secret the mocks receive (``{SIG: SECRET_SIG, "value": v}``) replaced by its value."""
    if isinstance(value, dict):
        if value.get(SIG) == SECRET_SIG:
            return reveal(value.get("value"))
        return {key: reveal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [reveal(item) for item in value]
    return value


@dataclass(frozen=True)
class Call:
    token: str
    args: dict
    provider: str  # "urn::id" of the provider instance, "" for a default provider


class ConsumerMocks(pulumi.runtime.Mocks):
    """The observability stack's outputs, as a StackReference would read them; the cluster's user credentials as
    AKS returns them for whichever cluster is asked (SIMULATED)."""

    def __init__(self, outputs: dict) -> None:
        self.outputs = outputs
        self.created: dict[str, dict] = {}  # type -> the inputs of its last registration
        self.inputs: dict[tuple[str, str], dict] = {}  # (type, name) -> inputs, secrets unwrapped
        self.calls: list[Call] = []
        self.monitor: Optional[RecordingMonitor] = None

    def new_resource(self, args):
        if args.typ == "pulumi:pulumi:StackReference":
            return args.inputs["name"], {"name": args.inputs["name"], "outputs": self.outputs, "secretOutputNames": []}
        self.created[args.typ] = args.inputs
        self.inputs[(args.typ, args.name)] = reveal(args.inputs)
        return f"{args.name}-id", args.inputs

    def call(self, args):
        self.calls.append(Call(args.token, dict(args.args), args.provider or ""))
        if args.token == CREDENTIALS:
            return canned.user_credentials(args.args, "eastus2"), []
        return {}, []

    def registered(self, type_: str) -> list:
        """The recorded registrations (offline.program.Resource) of ``type_``."""
        return [r for r in self.monitor.recorded if r.type == type_]

    def program_resources(self) -> list:
        """What the program registered: every recorded registration but the stack's own (the mocks make it)."""
        return [r for r in self.monitor.recorded if r.type != "pulumi:pulumi:Stack"]


def stack_config(config: Optional[dict[str, Any]] = None) -> dict[str, str]:
    """The consumer's config as the CLI hands it to the program: ``config`` over :data:`CONFIG` (a key given None is
    left unset), then every Pulumi.yaml default the stack leaves out written in; keys project-qualified."""
    values = {**CONFIG, **(config or {})}
    declared = yaml.safe_load((FOLDER / "Pulumi.yaml").read_text()).get("config") or {}
    for key, spec in declared.items():
        if key not in values and isinstance(spec, dict) and "default" in spec:
            values[key] = spec["default"]
    return {f"{PROJECT}:{key}": str(value) for key, value in values.items() if value is not None}


def run_consumer(outputs: dict, config: Optional[dict[str, Any]] = None,
                 mocks: Optional[ConsumerMocks] = None) -> ConsumerMocks:
    """Run examples/consumer against a stack with ``outputs``; return the mocks (``.monitor`` the recorder). The
    program's own error propagates; pass ``mocks`` to look at what was registered before it."""
    mocks = mocks or ConsumerMocks(outputs)
    mocks.monitor = RecordingMonitor(mocks)

    def go():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            pulumi.runtime.settings.SETTINGS.outputs.clear()
            set_all_config(stack_config(config))
            pulumi.runtime.set_mocks(mocks, project=PROJECT, stack="dev", preview=False, monitor=mocks.monitor)
            runpy.run_path(str(FOLDER), run_name="__main__")
            loop.run_until_complete(pulumi.runtime.stack.wait_for_rpcs())
        finally:
            try:  # let a failed program's remaining output tasks finish on this loop
                loop.run_until_complete(pulumi.runtime.stack.wait_for_rpcs())
            except Exception:
                pass
            pulumi.runtime.settings.SETTINGS.outputs.clear()
            loop.run_until_complete(loop.shutdown_default_executor())
            mocks.monitor.close()
            asyncio.set_event_loop(None)
            loop.close()

    contextvars.Context().run(go)
    return mocks
