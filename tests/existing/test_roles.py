"""existing/roles.py: a Monitoring Data Reader assignment Azure's onboarding made (linking Grafana to the workspace)
is left as it is with ``auto``, refused in one line with ``true``, and the stack's own counts as its; likewise a
``grafanaViewers`` principal's Grafana Viewer made elsewhere is left as it is, with an info line. SIMULATED: the
offline plan's canned world (offline/canned.py ROLE_HOLDERS) and the stand-in az (tests/support/fake_world.py)."""

from __future__ import annotations

import pytest

from existing import roles
from offline import canned
from stack.specs import GRAFANA_VIEWER, MONITORING_DATA_READER, role_assignment_name, role_definition_id
from stack_config.schema import ConfigError
from steps.azcli import AzError

WORKSPACE = canned.monitor_workspace_id("rg-observability-dev", "amw-gpu-dev")
PRINCIPAL = canned.grafana({"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"},
                           "eastus2")["identity"]["principalId"]
ROLE = role_definition_id(canned.SUBSCRIPTION_ID, MONITORING_DATA_READER)
LINKED = "6c3f5e1e-2b8d-4f0a-9d7e-1a2b3c4d5e6f"  # a random name, as the portal's linking gives it
ROLE_RESOURCE = "grafana-datasources-monitoring-data-reader"


@pytest.fixture
def held(monkeypatch):
    """Put assignments of Monitoring Data Reader to Grafana's identity on the workspace into the canned world."""
    def put(*names):
        monkeypatch.setitem(canned.ROLE_HOLDERS, (WORKSPACE.lower(), PRINCIPAL, ROLE), list(names))
    return put


def test_an_assignment_made_by_linking_is_left_as_it_is_and_none_is_made(plan, held):
    """A first `pulumi up` after the portal linked Grafana failed half way on ARM's 409 RoleAssignmentExists."""
    assert plan().named(ROLE_RESOURCE)  # nothing held: the stack assigns it
    held(LINKED)
    names = {r.name for r in plan().resources}
    assert ROLE_RESOURCE not in names and "grafana-datasources-prometheus" in names


def test_true_with_an_assignment_made_elsewhere_is_refused_in_one_line_before_anything(plan, held):
    held(LINKED)
    with pytest.raises(ConfigError) as caught:
        plan(assignMonitoringDataReader="true")
    message = str(caught.value)
    assert caught.value.key == "assignMonitoringDataReader" and "\n" not in message
    assert f"(assignment {LINKED}, made outside this stack" in message and "set it to auto" in message


def test_the_stacks_own_assignment_is_its_own(plan, held):
    ours = role_assignment_name(WORKSPACE, MONITORING_DATA_READER, PRINCIPAL)
    held(ours)
    assert plan().named(ROLE_RESOURCE)
    held(ours, LINKED)  # another one made later: the stack keeps its own
    assert plan(assignMonitoringDataReader="true").named(ROLE_RESOURCE)


def test_no_lookup_where_no_assignment_can_be_the_stacks_to_make(plan, monkeypatch):
    def refuse(*_):
        raise AssertionError("no lookup")

    monkeypatch.setattr(canned, "role_holders", refuse)
    names = {r.name for r in plan(multiCluster="true").resources}  # the shared step takes an existing one
    assert ROLE_RESOURCE not in names
    assert ROLE_RESOURCE not in {r.name for r in plan(assignMonitoringDataReader="false").resources}


def test_az_lists_the_assignments_at_exactly_the_workspace(tmp_path, monkeypatch):
    """``az role assignment list --scope`` lists the inherited ones too (``$filter=atScope()``: the scope and those
    above it); only one at the scope itself is what ARM refuses a second of."""
    from tests.support.scenarios import fake_az_env

    rules = [{"match": ["role", "assignment", "list", "--scope", WORKSPACE], "responses": [{"json": [
        {"name": LINKED, "scope": WORKSPACE, "roleDefinitionId": ROLE, "principalId": PRINCIPAL},
        {"name": "inherited", "scope": WORKSPACE.split("/providers/")[0], "roleDefinitionId": ROLE,
         "principalId": PRINCIPAL}]}]}]
    for key, value in fake_az_env(tmp_path, rules).items():
        monkeypatch.setenv(key, value)
    assert roles._az_holders(WORKSPACE, PRINCIPAL, ROLE) == [LINKED]


def test_an_az_that_cannot_list_is_a_warning_and_the_stack_assigns(plan, monkeypatch):
    """A deployer who may not read role assignments keeps today's behaviour: the stack assigns as configured."""
    def fail(*_):
        raise AzError(["role", "assignment", "list"], "ERROR: (AuthorizationFailed) no read")

    monkeypatch.setattr(canned, "role_holders", fail)
    assert plan().named(ROLE_RESOURCE)


# --- grafanaViewers: Grafana Viewer on the Grafana workspace ------------------------------------------------------
GRAFANA = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
VIEWER_ROLE = role_definition_id(canned.SUBSCRIPTION_ID, GRAFANA_VIEWER)
TEAM, ALICE = "0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
VIEWERS = {"grafanaViewers[0]": TEAM, "grafanaViewers[1]": f"User:{ALICE}"}
PORTAL = "3a7c9e1b-5d2f-4a6c-8e0b-2d4f6a8c0e1b"  # a random name, as the portal's Access control gives it


def viewer_assignments(plan) -> dict:
    """principalId -> the inputs of each Grafana Viewer assignment in ``plan``."""
    return {r.inputs["principalId"]: r.inputs for r in plan.by_type("azure-native:authorization:RoleAssignment")
            if r.inputs["roleDefinitionId"].endswith(GRAFANA_VIEWER)}


def test_a_viewer_holding_grafana_viewer_elsewhere_is_left_alone_and_said(plan, monkeypatch):
    """A viewer given Grafana Viewer in the portal before the stack would fail `pulumi up` on ARM's 409
    RoleAssignmentExists; the stack leaves that assignment as it is (not in its state, so no destroy deletes it),
    says so in one info line, and still assigns the others."""
    lines = []
    monkeypatch.setattr(roles.masking, "info", lines.append)
    monkeypatch.setitem(canned.ROLE_HOLDERS, (GRAFANA.lower(), ALICE, VIEWER_ROLE), [PORTAL])
    made = viewer_assignments(plan(paths=VIEWERS))
    assert list(made) == [TEAM]
    assert lines == [f"grafanaViewers[1]: {ALICE} already holds Grafana Viewer on {GRAFANA} (assignment {PORTAL}, "
                     "made outside this stack): left as it is, none assigned"]


def test_a_viewers_assignment_made_by_the_stack_stays_the_stacks(plan, monkeypatch):
    ours = role_assignment_name(GRAFANA, GRAFANA_VIEWER, ALICE)
    monkeypatch.setitem(canned.ROLE_HOLDERS, (GRAFANA.lower(), ALICE, VIEWER_ROLE), [ours])
    assert viewer_assignments(plan(paths=VIEWERS))[ALICE]["roleAssignmentName"] == ours


def test_an_az_that_cannot_list_the_viewers_assignments_warns_once_and_the_stack_assigns(plan, monkeypatch):
    lines = []
    monkeypatch.setattr(roles.masking, "warn", lines.append)

    def fail(scope, *_):
        if "Microsoft.Dashboard" in scope:
            raise AzError(["role", "assignment", "list"], "ERROR: (AuthorizationFailed) no read")
        return []

    monkeypatch.setattr(canned, "role_holders", fail)
    assert list(viewer_assignments(plan(paths=VIEWERS))) == [TEAM, ALICE]
    assert len(lines) == 1 and lines[0].startswith(f"grafanaViewers: could not list the role assignments on {GRAFANA}")


def test_no_viewer_lookup_for_a_grafana_the_stack_creates_nor_without_viewers(plan, monkeypatch):
    """A Grafana the stack creates holds no assignment yet (and has no id before `pulumi up`)."""
    asked = []
    monkeypatch.setattr(canned, "role_holders", lambda scope, *_: asked.append(scope) or [])
    plan()
    assert not [scope for scope in asked if "Microsoft.Dashboard" in scope]
    assert set(viewer_assignments(plan(createGrafana="true", paths=VIEWERS))) == {TEAM, ALICE}
    assert not [scope for scope in asked if "Microsoft.Dashboard" in scope]
