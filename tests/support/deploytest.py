"""The Go test framework of pulumi/pulumi v3.230.0 (commit ae2e269861eabd2b692984e7286bec78777ba352)
``pkg/engine/lifecycletest`` on the offline engine (:mod:`offline.engine`), and the fakes its ported cases share.
The cases are in tests/offline/engine/lifecycletest/, one file per upstream test file: the same program, the same
provider fakes, the same sequence of operations and the same assertions on steps, provider calls and the state
written. docs/offline-rules.yaml (kind ``upstream case``; index docs/offline.md, "Upstream lifecycle cases") lists
them with what each proves for this stack and the cases not modelled. Cases that v3.277.0 (the CLI the README pins)
added or changed are ported from that release: ``deleted_with_replace_test.go`` (the ``deletedWith`` cascade of
v3.260.0) as read at HEAD, and the pending-replacement cases of v3.264.0.

How the Go test framework is translated:

- ``deploytest.Provider``: :func:`deploytest` gives a :class:`Provider` whose unset callables behave as deploytest's
  do (``Create``: a fresh UUID and *no* outputs; ``Diff``/``DiffConfig``: an unknown answer, so the engine compares
  inputs; ``Read``: the state as it is; ``Update``: the new inputs; ``Delete``: success).
- ``plugin.DiffResult{}`` is ``DiffResult()`` (changes unknown); ``Changes: DiffSome`` is ``changes=True``,
  ``DiffNone`` is ``changes=False``; a ``ReplaceKeys`` without ``Changes`` keeps ``changes=None``: the engine then
  compares inputs and replaces only when some input changed (``diffResource``).
- ``lt.TestPlan.Run`` runs a preview first, which must succeed (or fail, for ``ExpectFailure``, and then the update
  is not run): :func:`run_plan`. ``lt.TestOp(...).RunStep`` runs the operation alone.
- ``SuccessfulSteps(entries)`` is :func:`successful`: the steps the engine ran, without those that failed.
- ``deploytest.ResourceMonitor`` takes a provider *reference* ``urn::id``; the offline monitor takes the provider's URN
  and looks the id up. A ``--target`` glob is given as the one URN it matches in that test.
- Upstream loads a snapshot whose custom resources name no provider by prepending a default provider
  (``deployment.go`` ``addDefaultProviders``); the snapshots built by hand in the Go tests rely on it, the offline
  engine takes states as recorded (all with providers), so :func:`add_default_providers` does it here.
- The offline monitor parents a resource registered without a parent to the stack (the Python SDK does that);
  ``deploytest``'s monitor does not. No case below depends on it.
"""

from __future__ import annotations

import uuid
from typing import Iterable, Optional

from offline.engine import DiffResult, Engine, Provider, Result, State, verify_integrity

COMMIT = "ae2e269861eabd2b692984e7286bec78777ba352"
TYP = "pkgA:m:typA"
PROV_TYPE = "pulumi:providers:pkgA"
DEFAULT_PROVIDER = "urn:pulumi:test::test::pulumi:providers:pkgA::default"


def urn(type_: str, name: str, stack: str = "test", project: str = "test") -> str:
    return f"urn:pulumi:{stack}::{project}::{type_}::{name}"


def deploytest(diff=None, diff_config=None, create=None, update=None, delete=None, read=None) -> Provider:
    """``deploytest.Provider`` with its defaults for the callables left unset (``CreateF`` nil: a new UUID and an
    empty property map)."""
    return Provider(diff=diff, diff_config=diff_config,
                    create=create or (lambda _urn, _inputs, _preview: (str(uuid.uuid4()), {})),
                    update=update, delete=delete, read=read)


def successful(result: Result) -> list[tuple[str, str]]:
    """``SuccessfulSteps``: ``(op, urn)`` of the steps that did not fail."""
    return [(s.op, s.urn) for s in result.steps if not s.note.startswith(("failed", "refused"))]


def run_plan(engine: Engine, program, snapshot=(), *, expect_failure: bool = False, skip_preview: bool = False,
             **options) -> Optional[Result]:
    """``lt.TestPlan.Run`` with one step: a preview (its error asserted), then the update unless a failure was
    expected (the framework stops after the failed preview). Returns the update's result."""
    if not skip_preview:
        preview = engine.update(program, snapshot, preview=True, **options)
        if expect_failure:
            assert preview.error, "the preview was expected to fail"
            return None
        assert preview.error is None, preview.error
    result = engine.update(program, snapshot, **options)
    if expect_failure:
        assert result.error
    else:
        assert result.error is None, result.error
    return result


def names(snapshot: Iterable[State]) -> list[str]:
    return [s.name for s in snapshot]


def add_default_providers(resources: list[State], stack: str = "test", project: str = "test") -> list[State]:
    """``deployment.go`` ``addDefaultProviders``: each custom, non-provider resource that names no provider gets its
    package's default provider (a new UUID, the package config as inputs and outputs), prepended to the state."""
    prepend, refs = [], {}
    for res in resources:
        if res.type.startswith("pulumi:providers:") or not res.custom or res.provider:
            continue
        package = res.type.split(":")[0]
        if package not in refs:
            provider_urn = urn(f"pulumi:providers:{package}", "default", stack, project)
            provider_id = str(uuid.uuid4())
            prepend.append(State(urn=provider_urn, type=f"pulumi:providers:{package}", id=provider_id))
            refs[package] = f"{provider_urn}::{provider_id}"
        res.provider = refs[package]
    return prepend + resources


COMPLEX_NAMES = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L"]


def complex_graph():
    """``generateComplexTestDependencyGraph``: A, C and D are pkgA providers; the old state (``newResource``: an
    input ``"foo"`` per property dependency key) and the program that registers all twelve again.

    ::

                     A
            _________|_________
            B        C        D
                  ___|___  ___|___
                  E  F  G  H  I  J
                     |__|
                     K  L
    """
    urns = {n: urn(PROV_TYPE if n in "ACD" else TYP, n) for n in COMPLEX_NAMES}

    def new_resource(name, id_, provider="", deps=(), prop_deps=None, outputs=None):
        prop_deps = prop_deps or {}
        return State(urn=urns[name], type=urns[name].split("::")[2], id=id_, provider=provider or None,
                     inputs={k: "foo" for k in prop_deps}, outputs=dict(outputs or {}),
                     dependencies=[urns[d] for d in deps],
                     property_dependencies={k: [urns[d] for d in v] for k, v in prop_deps.items()})

    old = [
        new_resource("A", "0", outputs={"A": "foo"}),
        new_resource("B", "1", provider=urns["A"] + "::0"),
        new_resource("C", "2", deps=["A"], prop_deps={"A": ["A"]}, outputs={"A": "bar"}),
        new_resource("D", "3", deps=["A"], prop_deps={"B": ["A"]}),
        new_resource("E", "4", provider=urns["C"] + "::2"),
        new_resource("F", "5", deps=["C"], prop_deps={"A": ["C"]}),
        new_resource("G", "6", deps=["C"], prop_deps={"B": ["C"]}),
        new_resource("H", "4", provider=urns["D"] + "::3"),
        new_resource("I", "5", deps=["D"], prop_deps={"A": ["D"]}),
        new_resource("J", "6", deps=["D"], prop_deps={"B": ["D"]}),
        new_resource("K", "7", deps=["F", "G"], prop_deps={"A": ["F", "G"]}),
        new_resource("L", "8", deps=["F", "G"], prop_deps={"B": ["F", "G"]}),
    ]
    assert verify_integrity(old) is None

    def program(monitor):
        def register(name, provider=None, inputs=None):
            type_ = urns[name].split("::")[2]
            return monitor.register(type_, name, True, provider=provider, inputs=inputs or {})

        register("A", inputs={"A": "bar"})
        register("B", provider=urns["A"])
        register("C")
        register("D")
        register("E", provider=urns["C"])
        register("F")
        register("G")
        register("H", provider=urns["D"])
        register("I")
        register("J")
        register("K")
        register("L")

    return urns, old, program


def changed_a_diff(urn_, old: State, new_inputs, preview):
    """The graph tests' DiffF: ``ReplaceKeys [A]`` (changes unknown) when ``A`` differs from the old output."""
    if old.outputs.get("A") != new_inputs.get("A"):
        return DiffResult(replace_keys=["A"])
    return DiffResult()


def created_id(_urn, inputs, _preview):
    return "created-id", dict(inputs)


def tracking_provider(delete_before_replace: bool = False):
    """The replace_with tests' provider: replace on ``foo``, creates numbered ``created-id-N``, calls recorded."""
    calls = {"created": [], "deleted": []}

    def diff(_urn, old, new_inputs, _preview):
        if old.outputs.get("foo") != new_inputs.get("foo"):
            return DiffResult(True, ["foo"], delete_before_replace=delete_before_replace)
        return DiffResult()

    def create(urn_, inputs, _preview):
        calls["created"].append(urn_)
        return f"created-id-{len(calls['created'])}", dict(inputs)

    return deploytest(diff=diff, create=create, delete=lambda old: calls["deleted"].append(old.urn)), calls
