"""The Pulumi wire format as the offline plan reads it (offline/wire.py)."""

from __future__ import annotations

import pytest

from offline import engine, wire


@pytest.mark.parametrize("key, written", [
    ("service.beta.kubernetes.io/azure-pls-name", '["service.beta.kubernetes.io/azure-pls-name"]'),
    ('a"b', '["a\\"b"]'), ("a[0]", '["a[0]"]'),
    ("a/b", ".a/b"), ("a b", ".a b"), ("0x", ".0x"), ("x-y", ".x-y"),  # no ."[] : written plain
])
def test_detailed_diff_paths_are_bracketed_as_pulumi_kubernetes_writes_them(key, written):
    """pulumi-kubernetes provider/pkg/provider/provider.go @ 94977969 addPatchValueToDiff: a key is written
    ``["..."]`` (only ``"`` escaped) exactly when ``strings.ContainsAny(v, `."[]`)``, otherwise ``.key``; the result
    parses back to the same keys."""
    path = wire.join_path("values", key)
    assert path == "values" + written
    assert engine.parse_property_path(path) == ("values", key)


def test_plain_prints_secrets_unknowns_and_references_as_the_plan_shows_them():
    assert wire.plain({wire.SIG: wire.SECRET_SIG, "value": "hush"}) == wire.SECRET
    assert wire.plain({wire.SIG: wire.OUTPUT_SIG, "secret": True, "value": "hush"}) == wire.SECRET
    assert wire.plain({wire.SIG: wire.OUTPUT_SIG}) == wire.UNKNOWN
    assert wire.plain([wire.COMPUTED, 2.0]) == [wire.UNKNOWN, 2]
    assert wire.plain({wire.SIG: wire.RESOURCE_SIG, "urn": "urn:x"}) == "urn:x"


def test_a_secret_is_revealed_only_for_its_fingerprint_and_masked_where_it_reappears():
    value = {"env": {"A": {wire.SIG: wire.SECRET_SIG, "value": "hush"}, "B": "plain"}}
    assert wire.reveal(value) == {"env": {"A": "hush", "B": "plain"}}
    assert set(wire.secret_fingerprints("command:local:Command", value)) >= {"env.A"}
    assert wire.mask({"url": "https://x/hush/y", "n": 1}, ["hush"]) == {"url": wire.SECRET, "n": 1}
