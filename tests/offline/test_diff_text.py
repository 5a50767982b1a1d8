"""offline/diff_text.py: what a reviewer reads of the offline diff (the headline, the reasons, the field diffs).
"""

from __future__ import annotations

import json

from offline import diff as plan_diff
from offline import diff_text
from offline.program import run


def _edited_wait_script(base: dict) -> dict:
    """The base as deployed with an older wait_private_link_service.sh: only the script's sha256 in triggers differs."""
    edited = json.loads(json.dumps(base))
    wait = next(r for r in edited["resources"] if r["name"] == "grafana-private-link-wait-for-pls")
    wait["inputs"]["triggers"][0] = "0" * 64
    return edited


def test_a_script_edit_does_not_headline_replacements_that_exist_only_in_preview(monkeypatch):
    """An edited wait script replaces the wait step; the PLS lookup behind it is then unknown in preview. When the PLS
    could not be read before the run either (az failed: a warning, no id), the preview (the real one too) shows the
    MPE, approval and refresh replaced. With every value known the engine keeps them, as `pulumi up` does once the
    lookup answers the same PLS: the headline says so, on the Resources line."""
    from offline import canned
    from steps.azcli import AzError

    def unreadable(*_):
        raise AzError(["network", "private-link-service", "show"], "ERROR: (AuthorizationFailed) no read")

    monkeypatch.setattr(canned, "private_link_service_owner", unreadable)
    base = _edited_wait_script(run("dev").to_json())
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", pending=pending))
    assert diff.step("grafana-private-link-wait-for-pls").op == "replace"
    only = {u.rsplit("::", 1)[-1] for u in diff.preview_only}
    assert only == {"grafana-private-link-mpe", "grafana-private-link-approve-connection",
                    "grafana-private-link-refresh"}
    assert "grafana-private-link-wait-for-pls" not in only
    text = diff_text.render_text(diff, "t")
    headline = next(row for row in text.splitlines() if row.startswith("Resources: "))
    assert "3 of the 4 replacements only while a value is unknown in preview" in headline
    assert "keeps grafana-private-link-mpe" in headline
    # The order is what `pulumi up` runs: the wait alone is replaced (its old copy deleted last).
    assert [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order] == [
        ("create-replacement", "grafana-private-link-wait-for-pls"), ("delete", "grafana-private-link-wait-for-pls")]
    assert ("Engine order (pulumi up, with the canned answers: the replacements that exist only in preview "
            "are not made):") in text


def test_a_base_plan_of_another_stack_is_flagged_before_the_counts():
    base = run("dev").to_json()
    other = {**base, "stack": "prod"}
    diff = plan_diff.compute(other, base)
    assert diff.warnings and "base plan is of stack 'prod'" in diff.warnings[0]
    text = diff_text.render_text(diff, "t")
    assert text.index("WARNING: the base plan is of stack 'prod'") < text.index("Resources: ")
    assert plan_diff.compute(base, base).warnings == []


def test_a_removal_names_the_settings_that_decide_it():
    """multiCluster on: the Monitoring Data Reader assignment leaves the program because assignMonitoringDataReader
    is `auto`, which means no assignment with multiCluster; the reason says that, not only "not in the new program"."""
    base = run("dev").to_json()
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {"multiCluster": "true"}, pending=pending))
    (reason,) = diff.step("grafana-datasources-monitoring-data-reader").reasons
    assert reason.startswith("not in the new program; settings: ")
    assert "assignMonitoringDataReader: auto (unchanged) (Give Grafana's identity Monitoring Data Reader" in reason
    assert "multiCluster: false -> true" in reason


def test_a_long_json_value_is_shown_by_the_paths_that_changed():
    """A step's environment holds its definition as one JSON string; a change inside it is shown path by path
    (environment.DATASOURCE{name}) with whole values, not a window cut in the middle of a value."""
    base = run("dev").to_json()
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {"pyroscopeDatasourceName": "Pyroscope B"},
                                                          pending=pending))
    text = diff_text.render_text(diff, "t")
    assert '~ environment.DATASOURCE{name}: "local-pyroscope" => "Pyroscope B"' in text
    assert not any("environment.DATASOURCE:" in line and "..." in line for line in text.splitlines())


def test_a_field_diff_holding_a_canned_value_is_marked_as_the_plan_marks_it():
    """The plan marked every line holding a value a canned answer made up; the diff's field lines did not, so the NAT
    IP a new subnet replaces (10.224.0.9, canned) read as the cluster's. Now they carry the same [canned: ...] mark, and
    a line of the user's own values none."""
    base = run("dev").to_json()
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {"privateLinkSubnet": "snet-pls"}, pending=pending))
    lines = diff_text.render_text(diff, "t").splitlines()
    (nat,) = [line for line in lines if line.startswith("       ~ spec: ")]
    assert '"10.224.0.9/32"' in nat and nat.endswith("  [canned: PLS NAT IP]")
    (subnet,) = [line for line in lines if line.startswith("       ~ environment.PLS_SUBNET: ")]
    assert subnet == '       ~ environment.PLS_SUBNET: "" => "snet-pls"'
