"""``verify_integrity`` in the words of pulumi/pulumi v3.230.0 ``pkg/resource/deploy/snapshot.go``
``VerifyIntegrity``: each reference kind missing or later in the state, an unknown provider (a resource pending
replacement excepted), a duplicate URN."""

from __future__ import annotations

import pytest

from offline.engine import State, verify_integrity

A, B = "urn:pulumi:s::p::t:m:T::a", "urn:pulumi:s::p::t:m:T::b"
PROVIDER = "urn:pulumi:s::p::pulumi:providers:t::default"


def _state(urn: str, **fields) -> State:
    return State(urn=urn, type="t:m:T", id=urn.rsplit("::", 1)[-1], **fields)


REFERENCES = {
    "parent": (dict(parent=B), "child resource {a}'s parent {b} comes after it",
               "child resource {a} refers to missing parent {b}"),
    "dependency": (dict(dependencies=[B]), "resource {a}'s dependency {b} comes after it",
                   "resource {a}'s dependency {b} refers to missing resource"),
    "property": (dict(property_dependencies={"k": [B]}),
                 "resource {a}'s property dependency {b} (from property k) comes after it",
                 "resource {a}'s property dependency {b} (from property k) refers to missing resource"),
    "deletedWith": (dict(deleted_with=B), "resource {a} is specified as being deleted with {b}, which comes after it",
                    "resource {a} is specified as being deleted with {b}, which is missing"),
    "replaceWith": (dict(replace_with=[B]),
                    "resource {a} is specified as being replaced with {b}, which comes after it",
                    "resource {a} is specified as being replaced with {b}, which is missing"),
}


@pytest.mark.parametrize("kind", REFERENCES)
def test_a_reference_later_in_the_state_or_missing_is_refused(kind):
    fields, later, missing = REFERENCES[kind]
    assert verify_integrity([_state(A, **fields), _state(B)]) == later.format(a=A, b=B)
    assert verify_integrity([_state(A, **fields)]) == missing.format(a=A, b=B)
    assert verify_integrity([_state(B), _state(A, **fields)]) is None


def test_a_provider_must_come_first_unless_the_resource_is_pending_replacement():
    provider = State(urn=PROVIDER, type="pulumi:providers:t", id="id1")
    user = _state(A, provider=f"{PROVIDER}::id1")
    assert verify_integrity([provider, user]) is None
    assert verify_integrity([user, provider]) == f"resource {A} refers to unknown provider {PROVIDER}::id1"
    assert verify_integrity([_state(A, provider=f"{PROVIDER}::id2"), provider]) is not None
    pending = _state(A, provider=f"{PROVIDER}::id1", pending_replacement=True)
    assert verify_integrity([pending]) is None


def test_a_urn_twice_is_refused_unless_all_but_one_are_pending_deletion():
    assert verify_integrity([_state(A), _state(A)]) == f"duplicate resource {A} (not marked for deletion)"
    assert verify_integrity([_state(A, delete=True), _state(A)]) is None


@pytest.mark.parametrize("states,words", [
    ([State(urn="", type="t:m:T")], "resource at index 0 missing required 'urn' field"),
    ([State(urn=A, type="")], f"resource '{A}' missing required 'type' field"),
    ([State(urn=A, type="t:m:T", custom=False, id="x")], f"resource '{A}' has 'custom false but non-empty ID"),
    ([State(urn="urn:pulumi:s::p::pulumi:providers:t", type="pulumi:providers:t", id="1")],
     "provider urn:pulumi:s::p::pulumi:providers:t is not referenceable: urn:pulumi:s::p::pulumi:providers:t is not "
     "a valid URN"),
    # providers.ParseReference: no '::', or a URN that is no provider's, before any lookup.
    ([_state(A, provider="garbage")],
     f"failed to parse provider reference for resource {A}: expected '::' in provider reference 'garbage'"),
    ([_state(B), _state(A, provider=f"{B}::b")], f"failed to parse provider reference for resource {A}: invalid module "
                                                 "in type: expected 'pulumi:providers', got 't:m'"),
])
def test_the_engines_other_refusals(states, words):
    """snapshot.go VerifyIntegrity's checks before the references (pulumi/pulumi v3.230.0), in its words."""
    assert verify_integrity(states) == words


def test_a_provider_without_an_id_is_referenced_by_the_unknown_id():
    """providers.NewReference gives a provider with no id the unknown id; an empty id after '::' names nothing."""
    provider = State(urn=PROVIDER, type="pulumi:providers:t", id="")
    assert verify_integrity([provider, _state(A, provider=f"{PROVIDER}::04da6b54-80e4-46f7-96ec-b56ff0331ba9")]) is None
    assert verify_integrity([provider, _state(A, provider=f"{PROVIDER}::")]) == (
        f"resource {A} refers to unknown provider {PROVIDER}::")


def test_problems_are_named_in_state_order_and_duplicates_last():
    """The walk is in the state's order and duplicates are checked after it: a dangling parent early wins over a
    missing type later, and over a duplicate URN."""
    gone = "urn:pulumi:s::p::t:m:T::gone"
    assert verify_integrity([_state(A, parent=gone), State(urn=B, type="")]) == (
        f"child resource {A} refers to missing parent {gone}")
    assert verify_integrity([_state(B), _state(B), _state(A, parent=gone)]) == (
        f"child resource {A} refers to missing parent {gone}")
