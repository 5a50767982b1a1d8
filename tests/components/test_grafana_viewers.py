"""components/grafana_viewers.py under mocks: each ``grafanaViewers`` principal's Grafana Viewer assignment as the
engine receives it (scope, role definition id, principal and its type, the ARM name), names that do not move when the
list changes, and nothing registered without viewers."""

from __future__ import annotations

import uuid

from offline import canned

ROLE = "azure-native:authorization:RoleAssignment"
COMPONENT = "aks-gpu-observability:index:GrafanaViewers"
VIEWER = "60921a7e-fef1-4a43-9b16-a26c52ad4769"  # Grafana Viewer (Azure built-in roles reference)
GRAFANA = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
TEAM, ALICE = "0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
ROBOT = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"


def viewers(plan) -> dict:
    """principalId -> the Grafana Viewer assignment of ``plan``."""
    return {r.inputs["principalId"]: r for r in plan.by_type(ROLE) if r.inputs["roleDefinitionId"].endswith(VIEWER)}


def listed(*items: str) -> dict:
    return {f"grafanaViewers[{i}]": item for i, item in enumerate(items)}


def test_each_viewer_gets_grafana_viewer_on_the_grafana_workspace_with_its_type(plan):
    """The role ML engineers need to open the flame graphs, on the one workspace, and ARM told each principal's type
    (azure-native's SDK would otherwise send User, which ARM refuses for a group: UnmatchedPrincipalType)."""
    made = viewers(plan(paths=listed(TEAM.upper(), f"User:{ALICE}", f"ServicePrincipal:{ROBOT}")))
    assert set(made) == {TEAM, ALICE, ROBOT}
    for principal, kind in ((TEAM, "Group"), (ALICE, "User"), (ROBOT, "ServicePrincipal")):
        inputs = made[principal].inputs
        assert inputs["scope"] == GRAFANA
        assert inputs["roleDefinitionId"] == (f"/subscriptions/{canned.SUBSCRIPTION_ID}/providers/"
                                              f"Microsoft.Authorization/roleDefinitions/{VIEWER}")
        assert inputs["principalType"] == kind
        # The ARM name: a UUID of scope, role and principal, as for Monitoring Data Reader (scope lower-cased).
        assert inputs["roleAssignmentName"] == str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                              f"{GRAFANA.lower()}|{VIEWER}|{principal}"))
        assert made[principal].options["deleteBeforeReplace"] is True  # ARM refuses a second one (409)
        assert made[principal].name == f"grafana-viewers-{principal}"
        assert made[principal].parent.endswith(f"::{COMPONENT}::grafana-viewers")


def test_a_viewers_assignment_does_not_move_when_the_list_changes(plan):
    """Adding, removing or reordering viewers leaves every other viewer's assignment (URN and inputs) as it was:
    a name by position would re-create them, and drop access while ARM deletes and re-adds."""
    before = viewers(plan(paths=listed(TEAM, f"User:{ALICE}")))
    after = viewers(plan(paths=listed(f"ServicePrincipal:{ROBOT}", f"User:{ALICE}", TEAM)))
    fewer = viewers(plan(paths=listed(f"User:{ALICE}")))
    for principal in (TEAM, ALICE):
        assert (after[principal].urn, after[principal].inputs) == (before[principal].urn, before[principal].inputs)
    assert (fewer[ALICE].urn, fewer[ALICE].inputs) == (before[ALICE].urn, before[ALICE].inputs)


def test_without_viewers_nothing_is_registered(plan):
    """The default (none): the dev stack's plan is what it was, no component, no assignment."""
    p = plan()
    assert not p.by_type(COMPONENT) and not viewers(p)


def test_a_created_grafanas_viewers_wait_for_it_and_take_its_id(plan):
    made = viewers(plan(createGrafana="true", paths=listed(TEAM)))
    workspace = next(r.urn for r in plan(createGrafana="true").by_type("azure-native:dashboard:Grafana"))
    assert made[TEAM].property_dependencies["scope"] == [workspace]
    assert made[TEAM].property_dependencies["roleAssignmentName"] == [workspace]
