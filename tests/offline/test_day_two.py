"""docs/day-two.md (offline/day_two.py): a representative change for every key of Pulumi.yaml and what the next
`pulumi up` does, from the offline diff; the page is generated, and a change that re-creates the private link chain,
reinstalls Pyroscope or loses profiles says why. SIMULATED: Azure, Grafana and the cluster (offline/canned.py)."""

from __future__ import annotations

import re

import pytest

from offline import day_two
from tests.support import ROOT

#: One xdist worker runs this module: its table fixture plans every key (a minute), once per run.
pytestmark = pytest.mark.xdist_group("day-two-table")


@pytest.fixture(scope="module")
def table() -> dict[str, day_two.Row]:
    """Every key's row, computed once (sequentially: the SDK's mocks are per process)."""
    return {r.key: r for r in day_two.rows()}


def test_every_key_of_the_project_has_a_row_and_nothing_else_does(table):
    keys = day_two.keys()
    assert len(keys) == len(set(keys)) and len(keys) >= 60
    assert set(day_two.CHANGES) == set(keys), {"no row": sorted(set(keys) - set(day_two.CHANGES)),
                                               "not a key": sorted(set(day_two.CHANGES) - set(keys))}
    assert list(table) == keys  # Pulumi.yaml's order
    for key, (sets, base, _) in day_two.CHANGES.items():  # each change sets its own key
        assert key in {name.split("[")[0] for name in sets}, key
        assert not set(sets) & set(base), key


def items(page: str) -> dict[str, tuple[str, str]]:
    """key -> (the section it is listed in, its item's text with the wrapped lines joined), for each key's item above
    "## Pyroscope 2" (an item starts with the key's change, which starts with the key)."""
    found, section, key = {}, "", None
    for line in page.split("## Pyroscope 2")[0].splitlines():
        if line.startswith("## "):
            section, key = line[3:].rsplit(" (", 1)[0], None
        elif match := re.match(r"^- `(\w+)[=\[]", line):
            key = match.group(1)
            assert key not in found, f"{key} listed twice"
            found[key] = (section, line)
        elif key and line.startswith("  "):
            found[key] = (section, found[key][1] + " " + line.strip())
        else:
            key = None
    return found


def test_the_page_is_generated(table):
    """The page is the generator's; each key has one item, in the section of its verdict, the sections' keys in
    Pulumi.yaml's order, and each section says how many keys it lists."""
    page = day_two.render(list(table.values()))
    assert (ROOT / "docs" / "day-two.md").read_text(encoding="utf-8") == page, \
        f"docs/day-two.md is not the table of today's diff; regenerate it: {day_two.COMMAND}"
    listed, titles, order = items(page), dict(day_two.SECTIONS), day_two.keys()
    assert set(listed) == set(order)
    for key, (section, _) in listed.items():
        assert section == titles[table[key].kind], key
    for kind, title in day_two.SECTIONS:
        keys = [key for key in listed if listed[key][0] == title]
        assert keys == [key for key in order if key in keys], f"{title}: not in Pulumi.yaml's order"
        assert (f"## {title} ({len(keys)})" in page) == bool(keys), title


def test_a_costly_change_says_why_in_the_table(table):
    """A change that re-creates the private link chain, replaces the Pyroscope release, deletes or replaces what holds
    profiles, or draws a warning from the diff names why in its item."""
    page = day_two.render(list(table.values()))
    listed = items(page)
    costly = [r for r in table.values() if r.needs_why]
    assert {"privateLinkServiceName", "pyroscopeStorageClass", "pyroscopePersistence", "pyroscopeMode",
            "assignMonitoringDataReader", "pyroscopeStorageAccount"} <= {r.key for r in costly}
    for r in costly:
        assert r.why.strip(), f"{r.key}: {r.does}, and CHANGES gives no why"
        assert listed[r.key][1].endswith(" " + day_two._cell(r.why)), r.key


def test_nothing_is_refused_and_every_row_is_one_kind(table):
    """The representative changes are valid ones (a refusal would be a stale change); each row is one of the kinds."""
    assert {r.key: r.message for r in table.values() if r.kind == "refused"} == {}
    assert {r.kind for r in table.values()} <= set(day_two.KINDS)


def test_a_larger_volume_grows_the_claim_in_place(table):
    r = table["pyroscopeStorageSize"]
    assert (r.kind, r.ops) == ("in place", (("updates", ("pyroscope-data-0",)),))


@pytest.mark.parametrize("key", ["pyroscopeChartVersion", "pyroscopeImageTag",
                                 "pyroscopeTerminationGracePeriodSeconds"])
def test_a_release_upgrade_leaves_the_private_link_alone(table, key):
    r = table[key]
    assert (r.kind, r.ops) == ("in place", (("updates", (day_two.RELEASE,)),))
    assert not {name for _, names in r.ops for name in names} & set(day_two.CHAIN)


def test_a_new_private_link_service_name_re_creates_the_chain(table):
    r = table["privateLinkServiceName"]
    assert r.kind == day_two.CHAIN_KIND
    assert set(day_two.CHAIN) <= set(r.touched("replaces"))
    assert day_two.RELEASE not in r.touched("replaces") and not r.lost


def test_a_smaller_volume_and_a_bad_value_are_refused():
    shrink = day_two.row("pyroscopeStorageSize", ({"pyroscopeStorageSize": "32Gi"}, {}, ""))
    assert shrink.kind == "refused" and "cannot shrink" in shrink.message
    assert shrink.does.startswith("refused: pyroscopeStorageSize: 32Gi is smaller than claim")
    bad = day_two.row("pyroscopeStorageSize", ({"pyroscopeStorageSize": "5Gi"}, {}, ""))
    assert bad.kind == "refused" and bad.message.startswith("pyroscopeStorageSize: ")


def test_the_command_writes_the_page_and_checks_it(table, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(day_two, "rows", lambda: list(table.values()))
    monkeypatch.setattr(day_two, "DOC", tmp_path / "day-two.md")
    assert day_two.main(["--check"]) == 1
    assert "run python -m offline.day_two" in capsys.readouterr().err
    assert day_two.main([]) == 0
    assert day_two.DOC.read_text(encoding="utf-8") == day_two.render(list(table.values()))
    assert day_two.main(["--check"]) == 0
    assert day_two.main(["--nonsense"]) == 2


def test_pyroscope_2_is_a_move_of_both_keys_on_v1_storage_and_half_a_move_is_refused():
    """Chart 2.0.0 with image 1.15.0 previewed as one quiet update (a pod that cannot start), and image 2.0.1 under
    chart 1.15.0 too (a quiet move to v1-v2-dual storage): now refused before anything registers; both together are
    an in-place update of the release, pinned to v1 storage, with the diff's warning."""
    rows = {key: day_two.row(key, change) for key, change in day_two.MAJOR_CHANGES.items()}
    both = rows["both"]
    assert both.kind == "in place" and both.ops == (("updates", ("pyroscope-release",)),), both.ops
    assert [w.split(":", 1)[0] for w in both.warnings] == ["pyroscope-release"]
    assert "Pyroscope 1.x to 2.x, in place on the v1 storage" in both.warnings[0]
    for half, key in (("the chart alone", "pyroscopeChartVersion"), ("the image alone", "pyroscopeImageTag")):
        assert rows[half].kind == "refused" and rows[half].message.startswith(f"{key}: "), rows[half]
        assert "set both to the same major" in rows[half].message


@pytest.mark.parametrize("key", ["privateLinkSubnet", "privateLinkIpAddressCount"])
def test_a_nat_ip_configuration_change_leaves_the_endpoint_chain_alone_in_the_preview_too(key):
    """The row said *may update* Grafana's endpoint, its approval and refresh and the Pyroscope datasource: the preview
    showed them replaced (the PLS id unknown behind the updated wait) where `pulumi up` kept them. The preview now keys
    them on the PLS id the deployed stack already has (components/grafana_private_link.py preview_pls_id): the row
    names the PLS's Service, the wait and the NAT NetworkPolicy only."""
    r = day_two.row(key)
    assert (r.kind, r.ops) == ("in place", (("updates", ("pyroscope-private-link", "grafana-private-link-wait-for-pls",
                                                         "grafana-private-link-nat-network-policy")),))
