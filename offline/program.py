"""The program runner: run the real ``__main__.py`` under ``pulumi.runtime.set_mocks`` and record what the engine sees.

Owns: :func:`run` (a :class:`Plan` of every RegisterResource request: engine (camelCase) inputs, dependencies,
parent, provider, options; the invokes with canned answers from :mod:`offline.canned`), :class:`RecordingMonitor`,
the stack's config as the CLI hands it over. Not the engine: :mod:`offline.engine` turns plans and states into steps.
Input: a stack name, config sets, ``pending`` URNs (as a preview sees resources being created). Output: a :class:`Plan`.
Errors: ``ConfigError``, :class:`DuplicateURNError`, ``StackFileError``. A fresh event loop and ``contextvars`` context
each run. Research: docs/decisions/offline-program.md. Upstream: pulumi/pulumi v3.230.0 proto/pulumi/resource.proto
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import json
import os
import runpy
import threading
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import wait_for_rpcs

from existing import api_server, handmade, roles, taken
from offline import canned, replacement
from offline import stack_file as stack_files
from offline.wire import COMPUTED, SECRET, SECRET_SIG, SIG, UNKNOWN, mask, plain, secret_fingerprints
from stack import phase
from stack_config import cli_values
from stack_config import schema as stack_schema

ROOT = Path(__file__).resolve().parents[1]  # offline/ -> the project

InvokeHandler = Callable[[Mapping[str, Any], str], dict]


class AtUp(frozenset):
    """``pending`` for a run as ``pulumi up`` sees it once it diffs a resource again: these resources are created or
    replaced, so their outputs are new (unknown here), but an invoke that waits for them is answered."""


@dataclass
class Resource:
    """One resource as the engine would record it (an entry of the plan JSON, see offline/plan.py)."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: Optional[str]
    provider: Optional[str]
    inputs: dict
    dependencies: list[str]
    options: dict
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    wire: dict = field(default_factory=dict)  # inputs in the wire format (secrets still marked), for policies
    replace_with: list[str] = field(default_factory=list)  # the replaceWith option: replaced when these are
    #: Outputs in the wire format as the (mocked) provider returned them: the state after ``pulumi up``
    #: (:func:`offline.canned.resource_state`); None for default providers, which no mock creates.
    outputs: Optional[dict] = None
    #: property path -> fingerprint of each secret input (and of the parts a provider diffs on their own)
    secret_fingerprints: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "custom": self.custom,
            "parent": self.parent,
            "provider": self.provider,
            "inputs": self.inputs,
            "dependencies": self.dependencies,
            "propertyDependencies": self.property_dependencies,
            "options": self.options,
        }


@dataclass
class Invoke:
    """One invoke: its token, its arguments (engine names) and the resources it waits for (depends_on)."""

    token: str
    args: dict
    dependencies: list[str]

    def to_json(self) -> dict:
        return {"token": self.token, "args": self.args}


@dataclass
class Plan:
    """The outcome of one mocked run. ``error`` is set (and ``resources`` empty) when the program
    raised ConfigError before registering anything."""

    project: str
    stack: str
    resources: list[Resource]
    invokes: list[Invoke]
    outputs: dict
    create_order: list[str]
    destroy_order: list[str]
    config: dict = field(default_factory=dict)  # the stack config the program ran with (namespaced keys)
    secret_keys: list = field(default_factory=list)

    def by_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str) -> Resource:
        found = self.by_type(type_)
        if len(found) != 1:
            raise AssertionError(f"expected one {type_}, found {len(found)}: {[r.urn for r in found]}")
        return found[0]

    def named(self, name: str) -> Resource:
        """The one resource whose logical name is ``name``."""
        found = [r for r in self.resources if r.name == name]
        if len(found) != 1:
            raise AssertionError(f"expected one resource named {name}, found {len(found)}: {[r.urn for r in found]}")
        return found[0]

    def get(self, urn: str) -> Resource:
        for resource in self.resources:
            if resource.urn == urn:
                return resource
        raise KeyError(urn)

    def to_json(self) -> dict:
        return {
            "project": self.project,
            "stack": self.stack,
            "resources": [r.to_json() for r in self.resources],
            "invokes": [i.to_json() for i in self.invokes],
            "createOrder": self.create_order,
            "destroyOrder": self.destroy_order,
            "outputs": self.outputs,
            "secretFingerprints": {r.urn: r.secret_fingerprints for r in self.resources if r.secret_fingerprints},
            # Which machine's key made them (offline/replacement.py fingerprint): only plans with the same id compare.
            "secretFingerprintKey": replacement.fingerprint_key_id(),
            # The config the program ran with (secret values as "[secret]"), so a diff can say which setting changed.
            "config": {key: SECRET if key in self.secret_keys or key.split(":", 1)[-1] in self.secret_keys else value
                       for key, value in sorted(self.config.items())},
        }

    def property_dependencies(self) -> dict[str, dict[str, list[str]]]:
        """URN -> input key -> the resources that input's value came from (invokes' dependencies included)."""
        return {r.urn: r.property_dependencies for r in self.resources}


class CannedMocks(pulumi.runtime.Mocks):
    """Invokes answered from :data:`offline.canned.INVOKES` (or ``overrides``, token -> handler or dict)."""

    def __init__(self, location: str, overrides: Optional[Mapping[str, Any]] = None,
                 stack_outputs: Optional[Mapping[str, dict]] = None,
                 secret_outputs: Optional[Mapping[str, Any]] = None) -> None:
        self.location = location
        self.overrides = dict(overrides or {})
        self.stack_outputs = dict(stack_outputs or {})
        self.secret_outputs = {stack: sorted(names) for stack, names in (secret_outputs or {}).items()}
        #: plaintext of every secret output a stack reference was answered with (the plan masks it in invoke args)
        self.secret_values: set[str] = set()
        self.registered: Callable[[], list] = list  # (type, inputs) of the resources registered so far (set by run)

    def call(self, args: pulumi.runtime.MockCallArgs):
        handler = self.overrides.get(args.token, canned.INVOKES.get(args.token))
        if handler is None:
            raise NotImplementedError(f"offline plan has no canned answer for invoke {args.token}")
        answer = canned.answer(handler, args.args, self.location, self.registered())
        return copy.deepcopy(answer), []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        if args.typ == "pulumi:pulumi:StackReference":  # a read: the referenced stack's outputs
            stack = args.inputs.get("name", args.name)
            outputs = self.stack_outputs.get(stack, canned.stack_outputs(stack))
            secret = self.secret_outputs.get(stack, [])
            self.secret_values.update(str(outputs[n]) for n in secret if isinstance(outputs.get(n), str) and outputs[n])
            # As the engine reads another stack: its outputs, and the names of those that are secret (the SDK's
            # StackReference.get_output_details then answers them as secret_value; pulumi/pulumi v3.230.0
            # sdk/python/lib/pulumi/stack_reference.py).
            return stack, {"name": stack, "outputs": copy.deepcopy(outputs), "secretOutputNames": secret}
        if not args.custom:
            return "", {}
        return canned.resource_state(args.typ, args.name, args.inputs)


class DuplicateURNError(ValueError):
    """A second resource (registered or read) with a URN already taken in this deployment. The engine refuses it with
    diagnostic 2001, "Duplicate resource URN '<urn>'; try giving it a unique name" (pulumi/pulumi v3.230.0
    ``sdk/go/common/diag/errors.go`` ``GetDuplicateResourceURNError``), and the update stops."""

    def __init__(self, urn: str) -> None:
        super().__init__(f"Duplicate resource URN '{urn}'; try giving it a unique name")
        self.urn = urn


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A MockMonitor that keeps every RegisterResource request as the engine would record it, and refuses a URN
    taken before in the deployment as the engine does."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        # URNs being created or replaced: no ID, unknown outputs (module docstring).
        self.pending: frozenset = frozenset()
        self.recorded: list[Resource] = []
        self.default_providers: dict[str, Resource] = {}
        self.thread_loops: list[asyncio.AbstractEventLoop] = []
        self.invokes: list[Invoke] = []
        #: Every URN taken in this deployment, and the first duplicate refused (``claim``).
        self.urns: set[str] = set()
        self.duplicate: Optional[DuplicateURNError] = None
        self._lock = threading.RLock()  # claim() is called with it held (_default_provider)

    def _thread_loop(self) -> None:
        """MockMonitor makes an event loop in each executor thread it is called on and never closes it;
        make it here instead and keep it, so :func:`run` can close it (no ResourceWarning per test)."""
        if threading.current_thread() is threading.main_thread():
            return
        try:
            asyncio.get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            with self._lock:
                self.thread_loops.append(loop)

    def GetDeploymentInfo(self, request):
        """As MockMonitor's, plus INVOKE_DEPENDS_ON: the SDK then names an invoke's dependencies, for the plan."""
        info = super().GetDeploymentInfo(request)
        info.supportedFeatures.append(resource_pb2.RESOURCE_MONITOR_FEATURE_INVOKE_DEPENDS_ON)
        return info

    def Invoke(self, request):
        self._thread_loop()
        # Held back in a preview behind a dependency being made (stack/phase.py); at `up` (AtUp) answered as it exists.
        if not isinstance(self.pending, AtUp) and self.pending.intersection(request.dependsOn):
            response = resource_pb2.ResourceInvokeResponse(unknown=True)
        else:
            response = super().Invoke(request)
        if request.tok != "pulumi:pulumi:getResource":
            args = mask(plain(json_format.MessageToDict(request.args, preserving_proto_field_name=True)),
                        getattr(self.mocks, "secret_values", ()))
            with self._lock:
                self.invokes.append(Invoke(request.tok, args, sorted(set(request.dependsOn))))
        return response

    def claim(self, urn: str) -> None:
        """Take ``urn`` for this deployment, or raise DuplicateURNError if it is taken. As the engine's step generator
        does for every registration (``GenerateSteps``) and every read (``GenerateReadSteps``): both call
        ``generateURN``, which refuses a URN already in its one set ``sg.urns`` (pulumi/pulumi v3.230.0
        ``pkg/resource/deploy/step_generator.go``), so a read and a registration cannot share a URN either. The error
        is kept too: the SDK may report a failed registration its own way, and :func:`run` raises this one."""
        with self._lock:
            if urn in self.urns:
                if self.duplicate is None:
                    self.duplicate = DuplicateURNError(urn)
                raise DuplicateURNError(urn)
            self.urns.add(urn)

    def ReadResource(self, request):
        """Reads (StackReference) are recorded like registrations: the engine keeps them in state too."""
        self._thread_loop()
        urn = self.make_urn(request.parent, request.type, request.name)
        self.claim(urn)
        raw = json_format.MessageToDict(request.properties, preserving_proto_field_name=True)
        resource = Resource(
            urn=urn, type=request.type, name=request.name,
            custom=True, parent=request.parent or None, provider=request.provider.rsplit("::", 1)[0] or None,
            inputs=plain(raw), dependencies=sorted(set(request.dependencies)), options=_options(None), wire=raw)
        self.recorded.append(resource)
        response = super().ReadResource(request)
        resource.outputs = json_format.MessageToDict(response.properties, preserving_proto_field_name=True)
        return response

    def close(self) -> None:
        for loop in self.thread_loops:
            loop.close()
        self.thread_loops.clear()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """URNs as the engine forms them: the parent's whole type chain, and none for the stack's children
        (MockMonitor keeps only the parent's last type and prefixes the stack's)."""
        qualified = type_
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != "pulumi:pulumi:Stack":
                qualified = f"{parent_type}${type_}"
        return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{qualified}::{name}"

    def _default_provider(self, type_: str, version: str) -> str:
        package = type_.split(":")[0]
        name = "default" + (("_" + version.replace(".", "_").replace("-", "_")) if version else "")
        urn = f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::pulumi:providers:{package}::{name}"
        with self._lock:  # one default provider per package and version, whichever thread asks first
            if urn not in self.default_providers:
                self.claim(urn)  # the engine registers its default providers through the same step generator
                provider = Resource(urn, f"pulumi:providers:{package}", name, True, None, None,
                                    {"version": version} if version else {}, [], _options(None))
                self.default_providers[urn] = provider
                self.recorded.append(provider)
        return urn

    def RegisterResource(self, request):
        self._thread_loop()
        urn = self.make_urn(request.parent, request.type, request.name)
        self.claim(urn)
        raw = json_format.MessageToDict(request.object, preserving_proto_field_name=True)
        provider = request.provider.rsplit("::", 1)[0] if request.provider else None
        if request.custom and not provider and not request.type.startswith("pulumi:providers:"):
            provider = self._default_provider(request.type, request.version)
        resource = Resource(
            urn=urn,
            type=request.type,
            name=request.name,
            custom=bool(request.custom),
            parent=request.parent or None,
            provider=provider,
            inputs=plain(raw),
            dependencies=sorted(set(request.dependencies)),  # the SDK gathers them from a set: any order
            options=_options(request),
            # Sorted like ``dependencies``: the SDK gathers each property's from a set, in hash order.
            property_dependencies={
                key: sorted(value.urns) for key, value in sorted(request.propertyDependencies.items())
            },
            wire=raw,
            replace_with=sorted(request.replace_with),
            secret_fingerprints=secret_fingerprints(request.type, raw),
        )
        self.recorded.append(resource)
        response = super().RegisterResource(request)
        if urn in self.pending:
            # As a provider's preview Create answers: no ID; inputs echoed, every other output unknown; azure-native
            # does so at every depth of an object property (identity.principalId is unknown, identity.type echoed).
            state = json_format.MessageToDict(response.object)
            nested = request.type.startswith("azure-native:")
            unknown = {key: (_preview_output(raw[key], value) if nested else raw[key]) if key in raw else COMPUTED
                       for key, value in state.items()}
            outputs = json_format.ParseDict(unknown, response.object.__class__())
            response = resource_pb2.RegisterResourceResponse(urn=response.urn, id="", object=outputs)
        # The engine makes these outputs secret, in the state and for the program (step_executor.go at v3.230.0), and
        # an output named like a secret input ("If an input secret is potentially leaked as an output").
        secret_inputs = {key for key, value in raw.items() if isinstance(value, dict) and value.get(SIG) == SECRET_SIG}
        for key in (set(request.additionalSecretOutputs) | secret_inputs) & set(response.object.fields) - {"id"}:
            value = json_format.MessageToDict(response.object.fields[key])
            secret = isinstance(value, dict) and value.get(SIG) == SECRET_SIG
            response.object[key] = value if secret else {SIG: SECRET_SIG, "value": value}
        resource.outputs = json_format.MessageToDict(response.object, preserving_proto_field_name=True)
        return response


def _preview_output(given: Any, output: Any) -> Any:
    """azure-native's ``previewOutputValue`` (``provider/pkg/convert/previewOutputs.go`` @ 604cfd52): an object's
    output properties are the input's where the input has them and unknown elsewhere, recursively; arrays map their
    input items; scalars, secrets and untyped values are the input as given."""
    if isinstance(given, dict) and SIG not in given and isinstance(output, dict) and SIG not in output:
        return {key: _preview_output(given[key], value) if key in given else COMPUTED for key, value in output.items()}
    if isinstance(given, list) and isinstance(output, list):
        return [_preview_output(item, output[i] if i < len(output) else None) for i, item in enumerate(given)]
    return given


def _options(request) -> dict:
    if request is None:
        return {"protect": False, "deleteBeforeReplace": False, "retainOnDelete": False,
                "ignoreChanges": [], "customTimeouts": None, "replaceWith": [], "replaceOnChanges": []}
    timeouts = None
    if request.HasField("customTimeouts"):
        t = request.customTimeouts
        timeouts = {k: v for k, v in (("create", t.create), ("update", t.update), ("delete", t.delete)) if v}
    aliases = [json_format.MessageToDict(alias) for alias in request.aliases]
    aliases = [alias.get("spec", alias) for alias in aliases]  # a spec, or {"urn": ...}
    return {
        **({"aliases": aliases} if aliases else {}),  # absent when none: plans from before keep their shape
        "protect": bool(request.protect),
        "deleteBeforeReplace": bool(request.deleteBeforeReplace),
        "retainOnDelete": bool(request.retainOnDelete),
        "ignoreChanges": list(request.ignoreChanges),
        "customTimeouts": timeouts or None,
        "replaceWith": sorted(request.replace_with),
        "replaceOnChanges": list(request.replaceOnChanges),
    }


def _kahn(edges: dict[str, set[str]], nodes: list[str]) -> list[str]:
    """A topological order of ``nodes`` where each node comes after ``edges[node]``; each round takes every
    ready node, stack first, then by URN (registration order varies from run to run; plans must diff)."""
    sorter: TopologicalSorter = TopologicalSorter()
    for node in nodes:
        sorter.add(node, *sorted(edges.get(node, set())))
    sorter.prepare()
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=lambda urn: ("::pulumi:pulumi:Stack::" not in urn, urn))
        order.extend(ready)
        sorter.done(*ready)
    return order


def orders(resources: list[Resource]) -> tuple[list[str], list[str]]:
    """(create order, destroy order) over dependencies, parents and providers. Create: a resource after
    what it depends on. Destroy, computed on the reversed graph as the engine walks it: a resource as soon
    as nothing left depends on it, so dependents go before their dependencies and children before their
    parents."""
    known = [r.urn for r in resources]
    before: dict[str, set[str]] = {}
    for resource in resources:
        deps = set(resource.dependencies) | {u for u in (resource.parent, resource.provider) if u}
        before[resource.urn] = deps & set(known)
    after: dict[str, set[str]] = {urn: set() for urn in known}
    for urn, deps in before.items():
        for dep in deps:
            after[dep].add(urn)
    destroy = _kahn(after, known)
    return _kahn(before, known), destroy


def stack_file(stack: str) -> Path:
    return ROOT / f"Pulumi.{stack}.yaml"


class ConfigSet(NamedTuple):
    """One ``pulumi config set [--path] KEY VALUE`` (offline: ``--set KEY=VALUE``, ``--set-path PATH=VALUE``)."""

    key: str
    value: str
    path: bool = False


def read_stack_config(stack: str,
                      config_sets: Sequence[tuple[str, str, bool]] = ()) -> tuple[dict[str, str], list[str]]:
    """The stack's config as the CLI passes it: namespaced keys -> strings (an object value as its JSON), plus the
    secret keys (:func:`offline.stack_file.read`: a ``secure:`` value becomes a placeholder and stays secret). The stack
    file's config, then each of ``config_sets`` (``ConfigSet`` or ``(key, value, path)``) applied in order as
    ``pulumi config set [--path]`` would store it (:func:`offline.stack_file.config_set`; a key it sets is plain,
    no longer secret), then checked as the CLI checks it before the program runs.
    Raises StackFileError for a file the CLI would refuse or misread, ConfigError for a missing file, a set the CLI
    refuses, or a value of the wrong declared type, as the CLI refuses them
    (stack_config.cli_values.check_cli_types)."""
    path = stack_file(stack)
    if not path.exists():
        raise stack_schema.ConfigError("stack", f"no stack file {path.name}; expected "
                                                "Pulumi.<stack>.yaml next to Pulumi.yaml")
    string_keys = frozenset(key for key, decl in stack_schema.declared().items()
                            if decl.get("type", "string") == "string")
    held, secrets = stack_files.read(path, stack_schema.PROJECT, string_keys)
    for key, value, by_path in config_sets:
        try:
            top = stack_files.config_set(held, key, value, by_path, stack_schema.PROJECT)
        except stack_files.ConfigSetError as error:
            command = "pulumi config set --path" if by_path else "pulumi config set"
            raise stack_schema.ConfigError(key, f"{error.message} (`{command}` refuses it too)") from None
        secrets = [name for name in secrets if name != top]
    cli_values.check_cli_types({key: value for key, value in held.items() if key not in secrets})
    values = {key: json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
              for key, value in held.items()}
    return values, secrets


def run(
    stack: str = "dev",
    overrides: Optional[Mapping[str, str]] = None,
    invoke_overrides: Optional[Mapping[str, Any]] = None,
    preview: bool = True,
    stack_outputs: Optional[Mapping[str, dict]] = None,
    pending: Optional[set] = None,
    secret_outputs: Optional[Mapping[str, Any]] = None,
    config_sets: Sequence[tuple[str, str, bool]] = (),
    program: Optional[Path] = None,
) -> Plan:
    """Evaluate ``__main__.py`` for ``stack`` under mocks and return the recorded :class:`Plan`.

    ``overrides``: ``--set`` pairs, each stored as ``pulumi config set KEY VALUE`` stores it (a string).
    ``config_sets``: then each ``ConfigSet`` (``--set`` and ``--set-path`` in command-line order;
    :func:`read_stack_config`). ``invoke_overrides``: token -> canned answer (dict) or handler
    ``(args, location) -> dict``. ``stack_outputs``: referenced stack name -> its outputs (default: canned
    outputs of a platform stack). ``secret_outputs``: referenced stack name -> the names of its outputs that are
    secret (answered as the engine answers a secret output). ``pending``: URNs a real preview would see being created
    or replaced (docs/decisions/offline-program.md). ``program``: another file to run as ``__main__.py`` (a test's
    earlier layout). Raises ConfigError (before any resource is registered), and more.
    """
    sets = [ConfigSet(k, v) for k, v in (overrides or {}).items()] + [ConfigSet(*item) for item in config_sets]
    values, secrets = read_stack_config(stack, sets)
    # As the CLI does before the program runs: every Pulumi.yaml default the stack leaves out is written in.
    values = cli_values.cli_defaults(values)
    location = values.get("azure-native:location") or "eastus2"
    mocks = CannedMocks(location, invoke_overrides, stack_outputs, secret_outputs)
    mocks.secret_values.update(values[key] for key in secrets if values.get(key))  # secure: config, masked in invokes
    monitor = RecordingMonitor(mocks)
    mocks.registered = lambda: [(r.type, r.inputs) for r in list(monitor.recorded)]
    monitor.pending = pending if isinstance(pending, AtUp) else frozenset(pending or ())

    def evaluate() -> Plan:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        previous = os.getcwd()
        saved_env = os.environ.pop("PULUMI_CONFIG", None)
        try:
            os.chdir(ROOT)
            # As pulumi.runtime.mocks.test does: output tasks left by an earlier run that failed would
            # otherwise be awaited on this run's (new) loop.
            pulumi.runtime.settings.SETTINGS.outputs.clear()
            set_all_config(values, secrets)
            pulumi.runtime.set_mocks(mocks, project=stack_schema.PROJECT, stack=stack, preview=preview, monitor=monitor)
            phase.AT_UP = isinstance(pending, AtUp) or None  # at `up`, lookups run after their steps (stack/phase.py)
            roles.LOOKUP = canned.role_holders  # no `az` offline: the assignments of the canned world
            taken.LOOKUP = canned.resource_tags  # and what it holds that the stack would create
            taken.PLS_LOOKUP = canned.private_link_service_owner
            api_server.REACH = canned.api_server_reach  # no network offline: the canned world says what answers
            handmade.NAMESPACE_LOOKUP = canned.namespace_metadata  # no cluster offline: namespace gadget canned
            handmade.RELEASE_LOOKUP = canned.helm_releases
            handmade.DATASOURCE_LOOKUP = canned.datasource_uid
            loop.set_exception_handler(_quiet_duplicates)
            try:
                try:
                    runpy.run_path(str(program or ROOT / "__main__.py"), run_name="__main__")
                except BaseException:
                    _drain(loop)  # let the stack's own registration finish, so the error is all that is printed
                    raise
                loop.run_until_complete(wait_for_rpcs())
            except BaseException:
                if monitor.duplicate is not None:  # the engine stops the update there: its error is the one reported
                    raise monitor.duplicate from None
                raise
            if monitor.duplicate is not None:  # refused, whatever the program made of the failed registration
                raise monitor.duplicate
            outputs = loop.run_until_complete(_stack_outputs())
        finally:
            phase.AT_UP = None
            os.chdir(previous)
            loop.run_until_complete(loop.shutdown_default_executor())
            monitor.close()
            if saved_env is not None:
                os.environ["PULUMI_CONFIG"] = saved_env
            asyncio.set_event_loop(None)
            loop.close()
        stack_urn = f"urn:pulumi:{stack}::{stack_schema.PROJECT}::pulumi:pulumi:Stack::{stack_schema.PROJECT}-{stack}"
        resources = list(monitor.recorded)
        for resource in resources:  # the engine parents top-level resources (not default providers) to the stack
            if not resource.parent and resource.urn != stack_urn and resource.urn not in monitor.default_providers:
                resource.parent = stack_urn
        invokes = sorted(monitor.invokes, key=lambda i: (i.token, json.dumps(i.args, sort_keys=True)))  # stable
        _check_integrity(resources, set(monitor.default_providers))
        create, destroy = orders(resources)
        position = {urn: i for i, urn in enumerate(create)}
        resources.sort(key=lambda r: position[r.urn])  # stable listing, whatever the registration order
        return Plan(stack_schema.PROJECT, stack, resources, invokes, outputs, create, destroy, values, secrets)

    try:
        return contextvars.Context().run(evaluate)
    except stack_schema.SecretValueError as error:
        # A `secure:` value of the stack file is a placeholder here: what its rule refused is the placeholder, not the
        # user's value (offline.stack_file.read). Say so, and how to check a value offline.
        if values.get(f"{stack_schema.PROJECT}:{error.key}") == stack_files.SECRET_PLACEHOLDER:
            raise stack_schema.ConfigError(
                error.key, "a `secure:` value, which the offline plan cannot decrypt (it has no secrets provider), "
                "so it cannot check it or plan with it; give a plain value for the plan with "
                f"--set {error.key}=<value>") from None
        raise


class IntegrityError(ValueError):
    """The state the update would write names a resource the program never registered: the engine's checkpoint
    check refuses it and the update fails (pulumi/pulumi v3.230.0 ``pkg/resource/deploy/snapshot.go``
    ``VerifyIntegrity``; a preview writes no checkpoint, so only ``pulumi up`` finds it)."""


def _check_integrity(resources: list[Resource], default_providers: set[str]) -> None:
    """Raise IntegrityError for a ``replaceWith``, dependency or parent naming no registered resource, in
    ``VerifyIntegrity``'s words."""
    known = {r.urn for r in resources} | default_providers
    for r in resources:
        for target in r.replace_with:
            if target not in known:
                raise IntegrityError(f"resource {r.urn} is specified as being replaced with {target}, which is missing")
        for dep in r.dependencies:
            if dep not in known:
                raise IntegrityError(f"resource {r.urn}'s dependency {dep} refers to missing resource")
        if r.parent and r.parent not in known:
            raise IntegrityError(f"child resource {r.urn} refers to missing parent {r.parent}")


def _quiet_duplicates(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The run loop's exception handler: the SDK leaves the futures of a refused registration's outputs unread, and
    asyncio would log each when it is collected; :func:`run` reports the DuplicateURNError once. Others as asyncio
    does."""
    if isinstance(context.get("exception"), DuplicateURNError):
        return
    loop.default_exception_handler(context)


def _drain(loop: asyncio.AbstractEventLoop) -> None:
    try:
        loop.run_until_complete(wait_for_rpcs())
    except Exception:  # the program's own error is the one to report
        pass


async def _stack_outputs() -> dict:
    root = pulumi.runtime.settings.get_root_resource()
    result: dict = {}
    for name, value in (getattr(root, "outputs", None) or {}).items():
        output = pulumi.Output.from_input(value)
        if await output.is_secret():
            result[name] = SECRET
        elif not await output.is_known():
            result[name] = UNKNOWN
        else:
            result[name] = await output.future()
    return result
