"""What the engine works on: resource states, provider fakes, steps and results.

Owns: :class:`State` (``resource.State``), :class:`DiffResult` (``plugin.DiffResult``), :class:`Provider` (a
``deploytest.Provider``), :class:`Step`, :class:`Registered`, :class:`Result`, the engine's errors and URNs
(``resource.NewURN``). No behaviour beyond those values. Upstream:
https://github.com/pulumi/pulumi/blob/v3.230.0/sdk/go/common/resource/resource_state.go
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

UNKNOWN = "[unknown]"
STACK_TYPE = "pulumi:pulumi:Stack"
SOURCE = "pulumi/pulumi v3.230.0"


class EngineError(Exception):
    """The engine stopped the operation (``result.BailErrorf`` upstream); ``str()`` is its message."""


class ProviderError(Exception):
    """A provider call failed; the step fails and the operation stops after it."""


@dataclass
class State:
    """One resource in the state (``resource.State``): ``provider`` is a reference ``<provider urn>::<id>``."""

    urn: str
    type: str
    custom: bool = True
    id: str = ""
    inputs: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    parent: Optional[str] = None
    provider: Optional[str] = None
    dependencies: list = field(default_factory=list)
    property_dependencies: dict = field(default_factory=dict)
    protect: bool = False
    retain_on_delete: bool = False
    deleted_with: Optional[str] = None
    replace_with: list = field(default_factory=list)
    replace_on_changes: list = field(default_factory=list)
    ignore_changes: list = field(default_factory=list)
    replacement_trigger: Any = None
    delete: bool = False
    pending_replacement: bool = False
    external: bool = False
    taint: bool = False

    def all_dependencies(self) -> list[tuple[str, str]]:
        """``(kind, urn)`` pairs as ``State.GetAllDependencies`` lists them (the provider apart)."""
        deps = [("parent", self.parent)] if self.parent else []
        deps += [("dependency", u) for u in self.dependencies if u]
        deps += [("property", u) for us in self.property_dependencies.values() for u in us if u]
        deps += [("deletedWith", self.deleted_with)] if self.deleted_with else []
        deps += [("replaceWith", u) for u in self.replace_with if u]
        return deps

    @property
    def provider_urn(self) -> Optional[str]:
        return self.provider.rsplit("::", 1)[0] if self.provider else None

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass
class DiffResult:
    """``plugin.DiffResult``: ``changes`` None (unknown: the engine compares inputs), True (some) or False (none)."""

    changes: Optional[bool] = None
    replace_keys: list = field(default_factory=list)
    delete_before_replace: bool = False
    changed_keys: list = field(default_factory=list)

    @property
    def replace(self) -> bool:
        return bool(self.replace_keys)


@dataclass
class Provider:
    """A provider as ``deploytest.Provider`` fakes one: each callable may be None for the default.

    ``diff(urn, old: State, new_inputs, preview) -> DiffResult`` (default: unknown, so inputs are compared);
    ``diff_config(urn, old_inputs, new_inputs) -> DiffResult`` for the provider resource itself;
    ``create(urn, inputs, preview) -> (id, outputs)`` (default: a fresh id, outputs = inputs);
    ``update(urn, old: State, new_inputs, preview) -> outputs``; ``delete(old: State) -> None``;
    ``read(old: State) -> outputs or None`` (None: the resource is gone). Raise ProviderError to fail a call.
    """

    diff: Optional[Callable[..., DiffResult]] = None
    diff_config: Optional[Callable[..., DiffResult]] = None
    create: Optional[Callable[..., tuple[str, dict]]] = None
    update: Optional[Callable[..., dict]] = None
    delete: Optional[Callable[..., None]] = None
    read: Optional[Callable[..., Optional[dict]]] = None


@dataclass(frozen=True)
class Step:
    """One step as the engine reports it: ``op`` is the engine's name (``same``, ``create``, ``update``, ``replace``,
    ``create-replacement``, ``delete``, ``delete-replaced``, ``read``, ``refresh``, ``remove-pending-replace``)
    and ``keys`` the replace keys where they apply. ``note`` says why the step sits where it does."""

    op: str
    urn: str
    keys: tuple = ()
    note: str = ""

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass
class Registered:
    """What ``RegisterResource`` answers the program: the URN, the ID (empty in preview for new resources), the
    outputs, and ``unknown``: a create ``--target`` skipped, whose outputs the SDK then leaves unknown instead of
    empty (``RegisterResourceResponse.unknown``, v3.256.0)."""

    urn: str
    id: str
    outputs: dict
    unknown: bool = False


@dataclass
class Result:
    """One operation: ``steps`` in the order run, ``snapshot`` the state written after it, ``error`` the message the
    operation stopped with (None when it succeeded), ``diagnostics`` the errors reported without stopping (a preview
    goes on to show everything), ``aliases`` the old URNs new resources took."""

    steps: list[Step]
    snapshot: list[State]
    error: Optional[str] = None
    diagnostics: list[str] = field(default_factory=list)
    #: new URN -> the old URN it took through an alias (``sg.aliases``)
    aliases: dict[str, str] = field(default_factory=dict)

    def ops(self, *kinds: str) -> list[tuple[str, str]]:
        """``(op, resource name)`` of the steps, only of ``kinds`` when given."""
        return [(s.op, s.name) for s in self.steps if not kinds or s.op in kinds]

    def state(self, name_or_urn: str) -> list[State]:
        """The states of one resource (by name or URN) in the written snapshot."""
        return [s for s in self.snapshot if name_or_urn in (s.urn, s.name)]


def default_urn(stack: str, project: str, type_: str, name: str, parent: Optional[str]) -> str:
    """``resource.NewURN``: the parent's type chain (none under the stack) ``$`` the type, then the name."""
    chain = type_
    if parent and parent.split("::")[2] != STACK_TYPE:
        chain = parent.split("::")[2] + "$" + type_
    return f"urn:pulumi:{stack}::{project}::{chain}::{name}"


def contains_unknown(value: Any) -> bool:
    if value == UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_unknown(v) for v in value)
    return False


def package_of(type_: str) -> str:
    return type_.split(":")[2] if type_.startswith("pulumi:providers:") else type_.split(":")[0]


def is_provider(type_: str) -> bool:
    """``providers.IsProviderType``: module ``pulumi:providers`` and a type name."""
    return type_.startswith("pulumi:providers:") and type_ != "pulumi:providers:"


class Bail(Exception):
    """``result.BailErrorf``: the operation stops here; ``str()`` is the message."""
