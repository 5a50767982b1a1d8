"""components/grafana_viewers.py under mocks: each ``grafanaViewers`` principal's Grafana Viewer assignment as the
engine receives it (scope, role definition id, principal and its type, the ARM name), names that do not move when the
list changes, and nothing registered without viewers."""

from __future__ import annotations

import uuid

from offline import canned
from tests.support.plans import error_hooks_of

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
        assert made[principal].parent.endswith(f"${COMPONENT}::grafana-viewers")


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


def test_arms_refusals_of_a_viewer_get_one_line_naming_the_key_and_never_a_retry(capsys):
    """A group created minutes ago (PrincipalNotFound while Entra ID replicates: "Troubleshoot Azure RBAC"), or an
    item of the wrong type (UnmatchedPrincipalType, ARM's words as Azure/modern-web-app-pattern-dotnet#129 quotes
    them): the line says which item and what to do, rather than ARM's text alone."""
    import pulumi

    from components import grafana_viewers

    def hook_line(errors, principal_type="Group"):
        args = pulumi.ErrorHookArgs(urn="urn", id="", name=f"grafana-viewers-{TEAM}", type=ROLE,
                                    failed_operation="create", errors=errors)
        assert grafana_viewers._explain(TEAM, principal_type)(args) is False  # never a retry
        return capsys.readouterr().err

    missing = (f"PrincipalNotFound: Principal {TEAM.replace('-', '')} does not exist in the directory "
               "72f988bf-86f1-41af-91ab-2d7cd011db47. Check that you have the correct principal ID. If you are "
               "creating this principal and then immediately assigning a role, this error might be related to a "
               "replication delay.")
    line = hook_line([missing])
    assert f"grafanaViewers: ARM finds no principal {TEAM} in the directory" in line and "`pulumi up` again" in line
    mismatch = (f"UnmatchedPrincipalType: The PrincipalId '{TEAM.replace('-', '')}' has type 'User' , which is "
                "different from specified PrincipalType 'Group'.")
    assert f"grafanaViewers: {TEAM} is a User, not a Group; write the item as User:{TEAM}" in hook_line([mismatch])
    assert grafana_viewers.viewer_recovery(["AuthorizationFailed: no write"], TEAM, "Group") is None
    # A killed run's create still gets the recovery's line, as every Azure resource of the stack does.
    assert "ops.recover" in hook_line(["cannot create already existing resource"])


def test_the_viewers_error_hook_is_bound_in_an_update_only():
    viewer = {"config_sets": [("grafanaViewers[0]", TEAM, True)]}
    previewed, updated = error_hooks_of((viewer, True), (viewer, False))
    assert previewed[f"grafana-viewers-{TEAM}"] == []  # a preview runs no ARM call
    assert updated[f"grafana-viewers-{TEAM}"] == [f"grafana-viewers-{TEAM}-principal"]
