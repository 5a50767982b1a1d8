"""The deployer's four custom roles (docs/deployer-role*.json) hold, between them, exactly what the stack and its
scripts call, each action in the one role whose scope it belongs to.

The az side comes from the stand-in az's call log (tests/support/fake_az.py ``FAKE_AZ_LOG``) of every script scenario
(tests/support/scenarios.py), ops.verify and flamegraph.hotspots; the ARM side from the offline plan (``python -m
offline.plan --json``) of the configurations that register different resources. The tables that map both to actions,
with their sources, are in ops/deployer_role.py. SIMULATED: no Azure.
"""

from __future__ import annotations

import copy
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from ops import deployer_role as dr
from tests.support.flamegraphs import query_through_az_rest
from tests.support.scenarios import ROOT, calls_in

#: Configurations that between them register every resource type and invoke the program has.
PLAN_VARIANTS = {
    "dev": (),
    "created-grafana-and-workspace": ("createGrafana=true", "createMonitorWorkspace=true"),
    "multi-cluster-shared-role": ("multiCluster=true", "assignMonitoringDataReader=true"),
    "admin-credentials": ("kubeconfigCredentials=admin",),
    "microservices": ("pyroscopeMode=microservices",),
}
DOC = ROOT / "docs" / "deployer-role.md"


#: One xdist worker runs this module: its fixtures replay every az call and plan the variants, once per run.
pytestmark = pytest.mark.xdist_group("deployer-role")


@pytest.fixture(scope="module")
def roles() -> list:
    return dr.load_roles()


@pytest.fixture(scope="module")
def role(roles) -> dict:
    """What a deployer holding all four roles may do."""
    return dr.union(roles)


@pytest.fixture(scope="module")
def az_calls(scenario_results, tmp_path_factory) -> list:
    """argv of every az call the step scripts made in every scenario, then ops.verify's and flamegraph.hotspots'."""
    from tests.support.verify_runs import rules, verify  # runs the dev plan: only when the fixture is used

    calls = [call["argv"] for result in scenario_results.values() for call in result.calls]
    _, verify_calls = verify(tmp_path_factory.mktemp("verify"), rules())
    hotspots_dir = tmp_path_factory.mktemp("hotspots")
    query_through_az_rest(hotspots_dir)
    return calls + [c["argv"] for c in verify_calls + calls_in(hotspots_dir)]


@pytest.fixture(scope="module")
def plans() -> dict:
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(dr.plan_json, "dev", sets) for name, sets in PLAN_VARIANTS.items()}
    return {name: future.result() for name, future in futures.items()}


def without(role: dict, action: str) -> dict:
    trimmed = copy.deepcopy(role)
    for key in ("Actions", "DataActions"):
        trimmed[key] = [a for a in trimmed[key] if a.lower() != action.lower()]
    return trimmed


# --- (1) the JSON -----------------------------------------------------------------------------------------------------
def test_each_role_json_has_what_az_role_definition_create_reads(roles):
    assert len(roles) == 4 and len({r["Name"] for r in roles}) == 4
    for role in roles:
        assert set(role) == set(dr.ROLE_FIELDS), set(role) ^ set(dr.ROLE_FIELDS)
        assert isinstance(role["Name"], str) and role["Name"] and role["IsCustom"] is True and role["Description"]
        for key in ("Actions", "NotActions", "DataActions", "NotDataActions", "AssignableScopes"):
            assert isinstance(role[key], list) and all(isinstance(a, str) for a in role[key]), key
        assert len({a.lower() for a in role["Actions"]}) == len(role["Actions"]), "an action is listed twice"
        assert role["NotActions"] == role["DataActions"] == role["NotDataActions"] == []
        for action in role["Actions"]:  # {Company}.{ProviderName}/{resourceType}/.../{read|write|delete|action}
            assert re.fullmatch(r"Microsoft\.\w+(/[A-Za-z]+)+/(read|write|delete|action)", action), action


def test_no_role_is_assignable_at_a_subscription(roles):
    """A subscription-wide role reaches every identity, storage account and PLS in it: each AssignableScope is one of
    the resource-group placeholders the stack's groups replace."""
    for role in roles:
        assert role["AssignableScopes"], role["Name"]
        for scope in role["AssignableScopes"]:
            assert "/resourceGroups/" in scope, (role["Name"], scope)
            prefix, _, group = scope.rpartition("/")
            assert prefix == f"/subscriptions/{dr.SUBSCRIPTION_PLACEHOLDER}/resourceGroups", scope
            assert group in dr.GROUP_PLACEHOLDERS, scope


#: Role assignments: the role assigner's, and the Pyroscope storage role's own on Pyroscope's storage.
ASSIGNING = {"microsoft.authorization/roleassignments/read", "microsoft.authorization/roleassignments/write",
             "microsoft.authorization/roleassignments/delete"}
ASSIGNER = "aks-gpu-observability role assigner"
STORAGE = "aks-gpu-observability Pyroscope storage"


def test_the_four_roles_split_what_the_tables_need_each_action_into_one_role(roles, role):
    """Each action in one role, except the role assignments the storage role also holds for its own container."""
    needed = {a.lower() for need in dr.all_needs() for a in need.actions} - {a.lower() for a in dr.EXCLUDED}
    assert dr.granted(role) == needed, dr.granted(role) ^ needed
    for index, first in enumerate(roles):
        for second in roles[index + 1:]:
            allowed = ASSIGNING if {first["Name"], second["Name"]} == {ASSIGNER, STORAGE} else set()
            shared = dr.granted(first) & dr.granted(second) - allowed
            assert shared == set(), (first["Name"], second["Name"], shared)


def test_only_the_assigner_and_the_storage_role_assign_roles(roles):
    """The deployer role is assigned on the cluster's group too, where the stack assigns nothing: it holds no
    role-assignment action, so no assignment of it needs a condition that allows nothing."""
    authorization = {r["Name"]: {a for a in dr.granted(r) if a.startswith("microsoft.authorization/")} for r in roles}
    assert authorization == {
        "aks-gpu-observability deployer": set(),
        ASSIGNER: ASSIGNING | {"microsoft.authorization/roledefinitions/read"},
        "aks-gpu-observability private link approver": set(),
        STORAGE: ASSIGNING}


def test_escalating_actions_are_only_in_the_role_for_their_own_group(roles):
    """A federated credential on any identity, or a storage account's network rules, in the cluster's group would be
    an escalation: only the Pyroscope storage role holds them. Approving connections: only the private link role."""
    by_name = {r["Name"]: dr.granted(r) for r in roles}
    storage = {name for name, actions in by_name.items() if any(a.startswith("microsoft.storage/") for a in actions)}
    assert storage == {"aks-gpu-observability Pyroscope storage"}
    for action in ("microsoft.managedidentity/userassignedidentities/federatedidentitycredentials/write",
                   "microsoft.managedidentity/userassignedidentities/write", "microsoft.storage/storageaccounts/write"):
        assert [name for name, actions in by_name.items() if action in actions] == list(storage), action
    approving = "microsoft.network/privatelinkservices/privateendpointconnections/write"
    assert [name for name, actions in by_name.items() if approving in actions] == [
        "aks-gpu-observability private link approver"]
    assert not by_name["aks-gpu-observability private link approver"] & ASSIGNING


def test_the_doc_names_each_role_with_its_file_its_count_and_its_providers(roles):
    """docs/deployer-role.md's role table (name, file, "N actions") and its section per role (the providers its
    table lists) say what the JSON files hold."""
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (aks-gpu-observability [^|]+?) \| \[([\w.-]+)\]\(\2\) \| (\d+) actions \|", text, re.M)
    assert rows == [(role["Name"], path.name, str(len(role["Actions"]))) for role, path in zip(roles, dr.ROLE_FILES)]
    assert len(re.findall(r"\d+ actions", text)) == len(rows), "a count outside the role table"
    assert re.findall(r"^### (aks-gpu-observability .+)$", text, re.M) == [role["Name"] for role in roles]
    for role in roles:
        section = text.split(f"### {role['Name']}\n", 1)[1].split("\n#", 1)[0]
        providers = re.findall(r"^\| (Microsoft\.\w+) ", section, re.M)
        assert sorted(providers) == sorted({a.split("/")[0] for a in role["Actions"]}), role["Name"]


# --- (2) every az call the scripts make -------------------------------------------------------------------------------
def test_every_az_call_the_scripts_make_maps_to_an_action_in_the_role(role, az_calls):
    assert len(az_calls) > 50
    try:
        missing = dr.missing_for_calls(az_calls, role)
    except dr.Unmapped as error:
        pytest.fail(str(error))
    assert missing == [], "\n".join(missing)


def test_every_az_table_entry_is_exercised_by_the_scenarios(az_calls):
    """No stale mapping: each az command and each ARM `az rest` shape in the tables occurs in the call log."""
    seen = [dr.az_permission(argv) for argv in az_calls]
    for need in [*dr.AZ_COMMANDS.values(), *(need for _, _, need in dr.ARM_REST)]:
        assert any(p.source == need.source for p in seen), need.source
    roles = {p.grafana_role for p in seen if p.kind == "grafana"}
    assert {"Admin", "Editor", "Viewer", "none"} <= roles, roles


def test_the_grafana_steps_need_grafana_admin_and_the_docs_say_so(az_calls):
    """Datasource writes need Admin (dashboards alone would need Editor): docs/deployer-role.md names Grafana Admin."""
    script_calls = [argv for argv in az_calls if dr.az_permission(argv).kind == "grafana"]
    highest = max(dr.GRAFANA_ROLES.index(dr.az_permission(argv).grafana_role) for argv in script_calls)
    assert dr.GRAFANA_ROLES[highest] == "Admin"
    text = DOC.read_text()
    assert "Grafana Admin" in text and dr.GRAFANA_ADMIN_ROLE_ID in text


@pytest.mark.parametrize("argv, message", [
    (["network", "vnet", "show", "--name", "x"], "unmapped az command: az network vnet show"),
    (["rest", "--method", "delete", "--url",
      "/subscriptions/s/resourceGroups/g/providers/Microsoft.Dashboard/grafana/amg"],
     "unmapped az rest call: DELETE /subscriptions/s/resourceGroups/g/providers/Microsoft.Dashboard/grafana/amg"),
    (["rest", "--method", "post", "--url", "https://amg.grafana.azure.com/api/serviceaccounts", "--resource",
      dr.GRAFANA_AUDIENCE],
     "unmapped Grafana API call: POST /api/serviceaccounts"),
])
def test_an_unmapped_az_call_fails_with_one_line_naming_it(role, argv, message):
    with pytest.raises(dr.Unmapped) as caught:
        dr.missing_for_calls([argv], role)
    assert str(caught.value) == message


def test_removing_an_action_the_scripts_need_is_named(role, az_calls):
    needed = sorted({a for argv in az_calls for a in dr.az_permission(argv).actions})
    assert "Microsoft.Network/privateLinkServices/privateEndpointConnections/write" in needed
    assert "Microsoft.Dashboard/grafana/managedPrivateEndpoints/action" in needed
    for action in needed:
        missing = dr.missing_for_calls(az_calls, without(role, action))
        assert missing and all(line.endswith(f": {action} is not in the roles") for line in missing), (action, missing)


# --- (3) every resource type and invoke of the program ----------------------------------------------------------------
def test_every_resource_type_and_invoke_maps_to_actions_in_the_role(role, plans):
    for name, plan in plans.items():
        try:
            missing, excluded = dr.missing_for_plan(plan, role)
        except dr.Unmapped as error:
            pytest.fail(f"{name}: {error}")
        assert missing == [], (name, missing)
        if name == "admin-credentials":  # left out on purpose: docs/deployer-role.md says what to grant instead
            assert excluded == ["azure-native:containerservice:listManagedClusterAdminCredentials: "
                                "Microsoft.ContainerService/managedClusters/listClusterAdminCredential/action is not "
                                "in the roles"]
        else:
            assert excluded == [], (name, excluded)


def test_the_plans_register_every_type_and_invoke_in_the_tables(plans):
    """No stale mapping: each resource type and invoke in the tables occurs in one of the plans."""
    types = {r["type"] for plan in plans.values() for r in plan["resources"]}
    tokens = {i["token"] for plan in plans.values() for i in plan["invokes"]}
    assert set(dr.RESOURCES) <= types, set(dr.RESOURCES) - types
    assert set(dr.INVOKES) <= tokens, set(dr.INVOKES) - tokens


@pytest.mark.parametrize("plan, message", [
    ({"resources": [{"type": "azure-native:keyvault:Vault"}], "invokes": []},
     "unmapped resource type: azure-native:keyvault:Vault"),
    ({"resources": [], "invokes": [{"token": "azure-native:keyvault:getSecret", "args": {}}]},
     "unmapped invoke: azure-native:keyvault:getSecret"),
])
def test_an_unknown_type_or_invoke_fails_naming_it(role, plan, message):
    with pytest.raises(dr.Unmapped) as caught:
        dr.missing_for_plan(plan, role)
    assert str(caught.value) == message


def test_removing_an_action_the_program_needs_is_named(role, plans):
    needed = sorted({a for plan in plans.values() for _, need in dr.plan_needs(plan) for a in need.actions
                     if a not in dr.EXCLUDED})
    assert "Microsoft.KubernetesConfiguration/extensions/write" in needed
    for action in needed:
        missing = [line for plan in plans.values() for line in dr.missing_for_plan(plan, without(role, action))[0]]
        assert missing and all(line.endswith(f": {action} is not in the roles") for line in missing), (action, missing)


def test_the_offline_check_exits_1_naming_what_is_missing(role, tmp_path, capsys, monkeypatch, plans):
    trimmed = tmp_path / "role.json"
    import json

    trimmed.write_text(json.dumps(without(role, "Microsoft.Network/privateLinkServices/read")))
    monkeypatch.setattr(dr, "plan_json", lambda stack, sets: plans["dev"])
    assert dr.main(["--role", str(trimmed)]) == 1
    out = capsys.readouterr().out
    assert "missing: azure-native:network:getPrivateLinkService: Microsoft.Network/privateLinkServices/read" in out
    assert dr.main([]) == 0


# --- (4) nothing more than needed -------------------------------------------------------------------------------------
def test_no_wildcards_and_no_action_that_nothing_needs(role):
    every = [*role["Actions"], *role["DataActions"]]
    assert not [a for a in every if "*" in a], "a wildcard action"
    assert dr.unused(role) == [], "in the role but needed by no mapping"
    needed = {a for need in dr.all_needs() for a in need.actions}
    have = dr.granted(role)
    assert sorted(a for a in needed if a.lower() not in have) == sorted(dr.EXCLUDED)


# --- The role assignment condition ------------------------------------------------------------------------------------
def test_the_condition_constrains_writes_by_request_and_deletes_by_the_assignment():
    """The form of the "Constrain roles and principal types" example, on one line, one OR-ed clause per role."""
    clauses = [dr.Clause("b0d8363b-8ddd-447d-831f-62ca05bff136", "PrincipalId", "11111111-1111-1111-1111-111111111111"),
               dr.Clause("ba92f5b4-2d11-453d-a403-e96b0029c9fe", "PrincipalType", "ServicePrincipal")]
    ra = "Microsoft.Authorization/roleAssignments"
    expected = " AND ".join(
        f"((!(ActionMatches{{'{ra}/{action}'}})) OR "
        f"(@{src}[{ra}:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{b0d8363b-8ddd-447d-831f-62ca05bff136}} AND "
        f"@{src}[{ra}:PrincipalId] ForAnyOfAnyValues:GuidEquals {{11111111-1111-1111-1111-111111111111}}) OR "
        f"(@{src}[{ra}:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{ba92f5b4-2d11-453d-a403-e96b0029c9fe}} AND "
        f"@{src}[{ra}:PrincipalType] ForAnyOfAnyValues:StringEqualsIgnoreCase {{'ServicePrincipal'}}))"
        for action, src in (("write", "Request"), ("delete", "Resource")))
    assert dr.condition(clauses) == expected


def test_a_condition_without_a_clause_is_refused():
    """Every documented condition form ORs an expression with the action test: one that allows nothing is not one."""
    with pytest.raises(ValueError, match=r"^clauses: expected at least one \(role, principal\) clause"):
        dr.condition([])


def test_a_clause_on_an_attribute_abac_lacks_is_refused():
    with pytest.raises(ValueError, match=r"^attribute: expected PrincipalId or PrincipalType \(got 'Scope'\)$"):
        dr.condition([dr.Clause("b0d8363b-8ddd-447d-831f-62ca05bff136", "Scope", "/subscriptions/x")])


def test_the_offline_check_reports_bad_input_in_one_line(capsys):
    assert dr.main(["--stack"]) == 2
    assert dr.main(["--set", "clusterName=-bad-"]) == 2
    assert dr.main(["--role", str(ROOT / "no-such-role.json")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("error: ") for line in lines), lines
    assert "clusterName" in lines[1]
    assert lines[2].startswith("error: --role: expected a readable role definition JSON")


def test_a_stack_that_needs_an_action_left_out_on_purpose_is_not_covered(capsys):
    """`kubeconfigCredentials: admin` needs listClusterAdminCredential, which the roles leave out on purpose: such a
    stack is not covered, since the roles alone cannot deploy it."""
    assert dr.main(["--set", "kubeconfigCredentials=admin"]) == 1
    out = capsys.readouterr().out
    assert "needs a grant outside the roles" in out and "listClusterAdminCredential" in out
    assert "the roles cover" not in out


def test_the_idempotent_role_assignment_path_can_read_role_definitions(role):
    """``az role assignment create --assignee-object-id ... --role <guid>`` answers ARM's 409
    RoleAssignmentExists (the path L8 and steps/ensure_role_assignment.sh rely on) with
    ``list_role_assignments(cmd, assignee, role, resource_group_name, scope)[0]``, and list_role_assignments lists the
    role definitions at the scope to fill in role names: ``definitions_client.list(scope=...)``, a GET of
    {scope}/providers/Microsoft.Authorization/roleDefinitions (Azure/azure-cli
    src/azure-cli/azure/cli/command_modules/role/custom.py @ 01ce0346, create_role_assignment and
    list_role_assignments). Without Microsoft.Authorization/roleDefinitions/read that read is refused and the
    "already assigned" case fails instead of succeeding."""
    argv = ["role", "assignment", "create", "--assignee-object-id", "0" * 8 + "-0000-0000-0000-" + "0" * 12,
            "--assignee-principal-type", "ServicePrincipal", "--role", "43d0d8ad-25c7-4714-9337-8ba259a9fe05",
            "--scope", "/subscriptions/x/resourceGroups/rg", "--name", "n", "--description", "d"]
    needed = {a.lower() for a in dr.az_permission(argv).actions}
    assert "microsoft.authorization/roledefinitions/read" in needed
    assert "microsoft.authorization/roledefinitions/read" in dr.granted(role)


def test_security_md_counts_and_names_the_roles_as_the_json_files_do():
    """docs/security.md's deployer row: as many custom roles as there are role files, each file linked from
    deployer-role.md, and no claim of a single custom role or a subscription-wide assignment."""
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    count = len(dr.ROLE_FILES)
    assert f"{words[count]} custom roles ([deployer-role.md](deployer-role.md))" in text
    assert "the custom role in" not in text and "at the subscription" not in text.replace("never the subscription", "")
    doc = DOC.read_text(encoding="utf-8")
    for path in dr.ROLE_FILES:
        assert f"]({path.name})" in doc, path.name
