"""ops.role_assignments: which of the four deployer roles a stack needs, on which scopes, with which condition;
the preview identity's Reader, refused where it would read a production stack's approval nonce; the drift identity's
read-only roles, and no more than the drift check's calls need; the example docs/deployer-role.md links
(docs/deployer-role-dev-example.sh) is its real output for the dev stack. SIMULATED: no Azure (the commands are
printed, and checked by `bash -n`)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from components.pyroscope_storage import derived_account_name
from ops import deployer_role as dr
from ops import role_assignments as ra
from stack.specs import GRAFANA_ADMIN, GRAFANA_VIEWER, MONITORING_DATA_READER, STORAGE_BLOB_DATA_CONTRIBUTOR
from tests.support.scenarios import ROOT

DOC = ROOT / "docs" / "deployer-role.md"
#: The dev stack's script, as docs/deployer-role.md links it.
EXAMPLE = ROOT / "docs" / "deployer-role-dev-example.sh"
BASE_NAMES = [dr.load_role(path)["Name"] for path in dr.ROLE_FILES]
#: The roles as the dev stack creates them: each custom role's name carries the stack.
DEPLOYER, ASSIGNER, PRIVATE_LINK, STORAGE = (f"{name} (dev)" for name in BASE_NAMES)
SUB = "/subscriptions/$SUB/resourceGroups"
ME = "11111111-2222-3333-4444-555555555555"
GRAFANA_PRINCIPAL = "66666666-7777-8888-9999-000000000000"
OBJECT_IDS = ["--deployer-object-id", ME, "--grafana-principal-id", GRAFANA_PRINCIPAL, "--node-resource-group",
              "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"]
NODE = f"{SUB}/MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"
RA = r"Microsoft\.Authorization/roleAssignments"
SBDC_CLAUSES = [("Request", STORAGE_BLOB_DATA_CONTRIBUTOR, "PrincipalType", "'ServicePrincipal'"),
                ("Resource", STORAGE_BLOB_DATA_CONTRIBUTOR, "PrincipalType", "'ServicePrincipal'")]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = ra.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys, *sets: str, extra: tuple = ()) -> list:
    """The --json assignments of the dev stack with ``sets`` (``KEY=VALUE``; ``KEY[i]=VALUE``, a list key's item, as
    ``--set-path``) and the given ids."""
    argv = [*OBJECT_IDS, *extra, "--json"]
    for item in sets:
        argv += ["--set-path" if "[" in item.split("=", 1)[0] else "--set", item]
    code, out, err = run(capsys, "--stack", "dev", *argv)
    assert code == 0, err
    return json.loads(out)


def pairs(found: list) -> list:
    return [(a["role"], a["scope"]) for a in found]


def clauses(condition: str) -> list:
    """(source, role id, principal attribute or None, value) of every RoleDefinitionId test in ``condition``."""
    pattern = (rf"@(Request|Resource)\[{RA}:RoleDefinitionId\] ForAnyOfAnyValues:GuidEquals \{{([^}}]*)\}}"
               rf"(?: AND @\1\[{RA}:(PrincipalId|PrincipalType)\] ForAnyOfAnyValues:\w+ \{{([^}}]*)\}})?")
    return re.findall(pattern, condition)


def constrained(condition: str) -> bool:
    """Whether every role the condition allows is also limited to a principal, for writes and deletes alike."""
    found = clauses(condition)
    return bool(found) and all(attribute for _, _, attribute, _ in found)


def role_ids(condition: str) -> set:
    return {guid.strip() for _, ids, _, _ in clauses(condition) for guid in ids.split(",")}


def base_name(role: str) -> str:
    """A printed custom role's name without its `` (<stack>)``."""
    return re.sub(r" \([^)]*\)$", "", role)


# --- The dev stack ----------------------------------------------------------------------------------------------------
def test_dev_assigns_the_deployer_role_on_its_groups_and_the_assigner_only_where_it_assigns_a_role(capsys):
    found = listed(capsys)
    assert pairs(found) == [
        (DEPLOYER, f"{SUB}/rg-aks-gpu-dev"),
        (DEPLOYER, f"{SUB}/rg-observability-dev"),  # Grafana's and the workspace's: one group, one assignment
        (ASSIGNER, f"{SUB}/rg-observability-dev"),  # Monitoring Data Reader on the workspace; nothing in the cluster's
        (PRIVATE_LINK, NODE),
        ("Grafana Admin", f"{SUB}/rg-observability-dev/providers/Microsoft.Dashboard/grafana/amg-gpu-dev"),
    ]
    cluster, observability, assigner, approver, grafana_admin = (a["condition"] for a in found)
    assert cluster is None and observability is None, "the deployer role assigns no role"
    assert clauses(assigner) == [
        ("Request", MONITORING_DATA_READER, "PrincipalId", GRAFANA_PRINCIPAL),
        ("Resource", MONITORING_DATA_READER, "PrincipalId", GRAFANA_PRINCIPAL)]
    assert approver is None and grafana_admin is None


def test_the_documented_example_is_the_generators_output_for_dev(capsys):
    code, out, _ = run(capsys, "--stack", "dev")
    assert code == 0
    assert f"]({EXAMPLE.name})" in DOC.read_text(encoding="utf-8")
    assert EXAMPLE.read_text(encoding="utf-8") == out
    assert "<deployer-object-id>" in out and "<grafana-principal-id>" in out and "<node-resource-group>" in out
    subprocess.run(["bash", "-n"], input=out, text=True, check=True)


def test_the_printed_definitions_are_the_role_files_named_for_the_stack_on_its_groups(capsys):
    code, out, _ = run(capsys, "--stack", "dev", *OBJECT_IDS, "--set", "pyroscopeMode=microservices",
                       "--set", "pyroscopeStorageAccountResourceGroup=rg-pyroscope-dev", "--pyroscope-group-dedicated")
    assert code == 0
    bodies = re.findall(r"<<'EOF'\n(.*?)\nEOF\naz role definition create --role-definition @\"\$dir/(\S+)\.json\"\n"
                        r"# re-run after a change of groups: az role definition update --role-definition "
                        r"@\"\$dir/\2\.json\"\n", out, re.S)
    assert [name for _, name in bodies] == [path.stem for path in dr.ROLE_FILES]
    for (body, _), path in zip(bodies, dr.ROLE_FILES):
        printed, role = json.loads(body), dr.load_role(path)
        assert printed["Name"] == f"{role['Name']} (dev)"
        assert {k: v for k, v in printed.items() if k not in ("Name", "AssignableScopes")} == {
            k: v for k, v in role.items() if k not in ("Name", "AssignableScopes")}
        assert printed["AssignableScopes"] == {
            DEPLOYER: [f"{SUB}/rg-aks-gpu-dev", f"{SUB}/rg-observability-dev"],
            ASSIGNER: [f"{SUB}/rg-observability-dev"], PRIVATE_LINK: [NODE],
            STORAGE: [f"{SUB}/rg-pyroscope-dev"]}[printed["Name"]]
    assert re.findall(r'--role "(aks-gpu-observability [^"]+)"', out) == [
        DEPLOYER, DEPLOYER, ASSIGNER, PRIVATE_LINK, STORAGE]
    subprocess.run(["bash", "-n"], input=out, text=True, check=True)


def test_each_stack_creates_roles_of_its_own_name():
    """Custom role names are unique in a tenant: a second stack's create would fail on the first stack's name."""
    cfg = ra.stack_config("dev")
    found = [a for a in ra.assignments("prod-eu", cfg) if isinstance(a, ra.Assignment) and a.definition]
    assert {a.role for a in found} == {f"{name} (prod-eu)" for name in BASE_NAMES[:3]}
    out = ra.script("prod-eu", found, ra.Principals())
    assert re.findall(r'"Name": "([^"]+)"', out) == [f"{name} (prod-eu)" for name in BASE_NAMES[:3]]


# --- Pyroscope's storage ----------------------------------------------------------------------------------------------
def storage_rows(found: list) -> list:
    return [a for a in found if a["role"] == STORAGE]


def test_a_group_of_its_own_gets_the_storage_role_only_when_confirmed_to_hold_nothing_else(capsys):
    sets = ("pyroscopeMode=microservices", "pyroscopeStorageAccountResourceGroup=rg-pyroscope-dev")
    found = storage_rows(listed(capsys, *sets, extra=("--pyroscope-group-dedicated",)))
    assert pairs(found) == [(STORAGE, f"{SUB}/rg-pyroscope-dev")]
    assert clauses(found[0]["condition"]) == SBDC_CLAUSES
    unconfirmed = storage_rows(listed(capsys, *sets))
    assert pairs(unconfirmed) == [
        (STORAGE, f"{SUB}/rg-pyroscope-dev/providers/Microsoft.Storage/storageAccounts/<storage-account>"),
        (STORAGE, f"{SUB}/rg-pyroscope-dev/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
                  "id-pyroscope-aks-gpu-dev")]
    code, out, _ = run(capsys, "--stack", "dev", *(arg for item in sets for arg in ("--set", item)))
    assert code == 0 and "not on resource group rg-pyroscope-dev (no --pyroscope-group-dedicated" in out


def test_a_brought_account_in_a_shared_group_gets_the_role_on_its_container_and_the_identity_only(capsys):
    """storageAccounts/write, federated credentials on every identity and SBDC to any service principal, on the whole
    shared data group, were what a brought account's group scope gave."""
    found = storage_rows(listed(capsys, "pyroscopeMode=microservices", "pyroscopeStorageAccount=acct",
                                "pyroscopeStorageAccountResourceGroup=rg-shared-data"))
    assert pairs(found) == [
        (STORAGE, f"{SUB}/rg-shared-data/providers/Microsoft.Storage/storageAccounts/acct/blobServices/default/"
                  "containers/pyroscope"),
        (STORAGE, f"{SUB}/rg-shared-data/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"
                  "id-pyroscope-aks-gpu-dev")]
    assert all(clauses(row["condition"]) == SBDC_CLAUSES for row in found)


def test_the_clusters_group_gets_the_storage_role_on_the_account_and_identity(capsys):
    subscription = "0b1f6471-1bf0-4dda-aec3-cb9272f09590"
    found = listed(capsys, "pyroscopeMode=microservices", extra=("--subscription-id", subscription))
    group = f"/subscriptions/{subscription}/resourceGroups/rg-aks-gpu-dev"
    account = derived_account_name(f"{group}/providers/Microsoft.ContainerService/managedClusters/aks-gpu-dev")
    assert pairs(storage_rows(found)) == [
        (STORAGE, f"{group}/providers/Microsoft.Storage/storageAccounts/{account}"),
        (STORAGE, f"{group}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-pyroscope-aks-gpu-dev")]
    assert all(clauses(row["condition"]) == SBDC_CLAUSES for row in storage_rows(found))
    code, out, _ = run(capsys, "--stack", "dev", "--set", "pyroscopeMode=microservices")
    assert code == 0 and "storageAccounts/<storage-account>" in out
    assert "not on resource group rg-aks-gpu-dev (it is also the stack's cluster's group)" in out
    assert "a NEW stack's first pulumi up needs the group scope" in out and "--pyroscope-group-dedicated." in out


@pytest.mark.parametrize("sets, message", [
    ((), "error: --pyroscope-group-dedicated: only with pyroscopeMode microservices (the stack has no Pyroscope "
         "storage)"),
    (("pyroscopeMode=microservices",), "error: --pyroscope-group-dedicated: the storage role stays off resource group "
                                       "rg-aks-gpu-dev: it is also the stack's cluster's group"),
    (("pyroscopeMode=microservices", "pyroscopeStorageAccountResourceGroup=rg-observability-dev"),
     "error: --pyroscope-group-dedicated: the storage role stays off resource group rg-observability-dev: it is also "
     "the stack's Grafana's group"),
    (("pyroscopeMode=microservices", "pyroscopeStorageAccount=acct",
      "pyroscopeStorageAccountResourceGroup=rg-shared-data"),
     "error: --pyroscope-group-dedicated: the storage role stays off resource group rg-shared-data: it holds an "
     "account the stack does not create (pyroscopeStorageAccount)"),
])
def test_the_dedicated_group_flag_is_refused_where_the_group_scope_does_not_apply(capsys, sets, message):
    code, out, err = run(capsys, "--stack", "dev", "--pyroscope-group-dedicated",
                         *(arg for item in sets for arg in ("--set", item)))
    assert code == 2 and out == "" and err == message + "\n"


# --- Grafana and the workspace ----------------------------------------------------------------------------------------
def test_a_created_grafana_allows_grafana_admin_to_the_deployer_and_the_reader_to_a_service_principal(capsys):
    """Before its first up a created Grafana has no identity: Monitoring Data Reader to any service principal; run again
    with --grafana-principal-id and the condition names Grafana's identity."""
    code, out, err = run(capsys, "--stack", "dev", "--deployer-object-id", ME, "--node-resource-group",
                         "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2", "--set", "createGrafana=true", "--json")
    assert code == 0, err
    found = json.loads(out)
    assigner = [a for a in found if a["role"] == ASSIGNER]
    assert pairs(assigner) == [(ASSIGNER, f"{SUB}/rg-observability-dev")]
    assert clauses(assigner[0]["condition"]) == [
        ("Request", GRAFANA_ADMIN, "PrincipalId", ME),
        ("Request", MONITORING_DATA_READER, "PrincipalType", "'ServicePrincipal'"),
        ("Resource", GRAFANA_ADMIN, "PrincipalId", ME),
        ("Resource", MONITORING_DATA_READER, "PrincipalType", "'ServicePrincipal'")]
    assert "Grafana Admin" not in [a["role"] for a in found], "the stack assigns it itself"
    known = [a for a in listed(capsys, "createGrafana=true") if a["role"] == ASSIGNER]
    assert ("Request", MONITORING_DATA_READER, "PrincipalId", GRAFANA_PRINCIPAL) in clauses(known[0]["condition"])


def test_separate_grafana_and_workspace_groups_get_only_their_own_role(capsys):
    found = listed(capsys, "createGrafana=true", "grafanaResourceGroup=rg-grafana-dev")
    assert [a["scope"] for a in found if a["role"] == DEPLOYER] == [
        f"{SUB}/rg-aks-gpu-dev", f"{SUB}/rg-grafana-dev", f"{SUB}/rg-observability-dev"]
    by_scope = {a["scope"]: a["condition"] for a in found if a["role"] == ASSIGNER}
    assert list(by_scope) == [f"{SUB}/rg-grafana-dev", f"{SUB}/rg-observability-dev"]
    assert role_ids(by_scope[f"{SUB}/rg-grafana-dev"]) == {GRAFANA_ADMIN}
    assert role_ids(by_scope[f"{SUB}/rg-observability-dev"]) == {MONITORING_DATA_READER}


def test_grafana_viewers_let_the_role_assigner_give_grafana_viewer_to_each_of_them_on_grafanas_group(capsys):
    """Without the role assigner on Grafana's group (an existing Grafana in a group of its own) the stack's first
    viewer assignment fails on AuthorizationFailed; its condition names Grafana Viewer and each viewer's object id,
    nothing else, so the deployer cannot hand the role (or any other) to anyone else."""
    team, alice = "0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
    found = listed(capsys, "grafanaResourceGroup=rg-grafana-dev", f"grafanaViewers[0]={team}",
                   f"grafanaViewers[1]=User:{alice.upper()}")
    by_scope = {a["scope"]: a["condition"] for a in found if a["role"] == ASSIGNER}
    assert sorted(by_scope) == [f"{SUB}/rg-grafana-dev", f"{SUB}/rg-observability-dev"]
    assert clauses(by_scope[f"{SUB}/rg-grafana-dev"]) == [
        (source, GRAFANA_VIEWER, "PrincipalId", principal) for source in ("Request", "Resource")
        for principal in (team, alice)]
    assert role_ids(by_scope[f"{SUB}/rg-observability-dev"]) == {MONITORING_DATA_READER}
    without = listed(capsys, "grafanaResourceGroup=rg-grafana-dev")
    assert [a["scope"] for a in without if a["role"] == ASSIGNER] == [f"{SUB}/rg-observability-dev"]


def test_multi_cluster_leaves_the_shared_reader_role_out_unless_asked(capsys):
    assert ASSIGNER not in [a["role"] for a in listed(capsys, "multiCluster=true")]
    found = listed(capsys, "multiCluster=true", "assignMonitoringDataReader=true")
    assert [(a["scope"], role_ids(a["condition"])) for a in found if a["role"] == ASSIGNER] == [
        (f"{SUB}/rg-observability-dev", {MONITORING_DATA_READER})]


# --- The private link service -----------------------------------------------------------------------------------------
def test_a_pls_elsewhere_needs_the_node_resource_group_too_unless_the_subnet_is_given(capsys):
    found = listed(capsys, "privateLinkServiceResourceGroup=rg-pls-dev")
    assert pairs([a for a in found if a["role"] == PRIVATE_LINK]) == [
        (PRIVATE_LINK, f"{SUB}/rg-pls-dev"), (PRIVATE_LINK, NODE)]
    found = listed(capsys, "privateLinkServiceResourceGroup=rg-pls-dev", "privateLinkSubnet=snet-pls")
    assert pairs([a for a in found if a["role"] == PRIVATE_LINK]) == [(PRIVATE_LINK, f"{SUB}/rg-pls-dev")]


# --- What the old roles got wrong, checked on the JSON the assignments name -------------------------------------------
VARIANTS = {
    "dev": (),
    "microservices-own-group": ("pyroscopeMode=microservices", "pyroscopeStorageAccountResourceGroup=rg-pyroscope"),
    "microservices-default-group": ("pyroscopeMode=microservices",),
    "microservices-brought-account": ("pyroscopeMode=microservices", "pyroscopeStorageAccount=acct",
                                      "pyroscopeStorageAccountResourceGroup=rg-shared-data"),
    "created-grafana": ("createGrafana=true", "createMonitorWorkspace=true"),
    "multi-cluster": ("multiCluster=true", "assignMonitoringDataReader=true"),
    "grafana-viewers": ("grafanaViewers[0]=0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b",
                        "grafanaViewers[1]=User:9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"),
}
ROLES = {role["Name"]: role for role in dr.load_roles()}
ESCALATING = ("Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/write",
              "Microsoft.Storage/storageAccounts/write")
GROUP_SCOPE = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_assignment_reaches_the_subscription_or_lets_the_holder_escalate(capsys, variant):
    """Without --pyroscope-group-dedicated no escalating action is granted on a whole group, and every role-assigning
    assignment names a role and a principal for each assignment it allows (none is a deny-all)."""
    found = listed(capsys, *VARIANTS[variant])
    assigned = {MONITORING_DATA_READER, GRAFANA_ADMIN, GRAFANA_VIEWER, STORAGE_BLOB_DATA_CONTRIBUTOR}
    for row in found:
        assert "/resourceGroups/" in row["scope"], row
        role = ROLES.get(base_name(row["role"]))
        if role is None:
            assert row["role"] == "Grafana Admin" and "/providers/Microsoft.Dashboard/grafana/" in row["scope"]
            continue
        assert row["role"] == f"{role['Name']} (dev)"
        assert all("/resourceGroups/" in scope for scope in role["AssignableScopes"]), role["Name"]
        if any(action in role["Actions"] for action in ESCALATING):
            assert not GROUP_SCOPE.fullmatch(row["scope"]), (role["Name"], row["scope"])
        if "Microsoft.Authorization/roleAssignments/write" in role["Actions"]:
            assert constrained(row["condition"]), row
            assert role_ids(row["condition"]) <= assigned
        else:
            assert row["condition"] is None


def test_the_constraint_check_refuses_a_condition_on_the_role_alone():
    """The old condition named only the role ids: Storage Blob Data Contributor to anyone (the holder included)."""
    old = ("((!(ActionMatches{'Microsoft.Authorization/roleAssignments/write'})) OR "
           "(@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals "
           f"{{{STORAGE_BLOB_DATA_CONTRIBUTOR}}})) AND "
           "((!(ActionMatches{'Microsoft.Authorization/roleAssignments/delete'})) OR "
           "(@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals "
           f"{{{STORAGE_BLOB_DATA_CONTRIBUTOR}}}))")
    assert role_ids(old) == {STORAGE_BLOB_DATA_CONTRIBUTOR} and not constrained(old)
    deny_all = ("((!(ActionMatches{'Microsoft.Authorization/roleAssignments/write'}))) AND "
                "((!(ActionMatches{'Microsoft.Authorization/roleAssignments/delete'})))")
    assert not constrained(deny_all)


def test_the_documented_conditions_name_the_roles_each_custom_role_may_assign(capsys):
    """The doc's condition table lists, per custom role, the roles some configuration lets it assign."""
    text = DOC.read_text(encoding="utf-8").split("## The conditions on role assignments", 1)[1]
    documented = set(re.findall(r"^\| (aks-gpu-observability [^|]+?) \| [^|]+ \| `([0-9a-f-]{36})` \|", text, re.M))
    generated = set()
    for sets in VARIANTS.values():
        for row in listed(capsys, *sets):
            generated |= {(base_name(row["role"]), guid) for guid in role_ids(row["condition"] or "")}
    assert documented == generated


# --- Bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["--deployer-object-id", "me"], "error: --deployer-object-id: expected an object id (a GUID"),
    (["--grafana-principal-id", "x"], "error: --grafana-principal-id: expected an object id (a GUID"),
    (["--node-resource-group", "bad/name"], "error: --node-resource-group: expected a resource group name"),
    (["--subscription-id", "sub"], "error: --subscription-id: expected a subscription id"),
    (["--principal-type", "Group"], "error: argument --principal-type: invalid choice: 'Group'"),
    (["--set", "pyroscopeMode"], "error: --set: expected KEY=VALUE (got 'pyroscopeMode')"),
    (["--set-path", "grafanaViewers[0]"], "error: --set-path: expected PATH=VALUE (got 'grafanaViewers[0]')"),
    (["--set-path", "grafanaViewers[0]=team"], "error: grafanaViewers[0]: expected a Microsoft Entra ID object id"),
    (["--set", "pyroscopeMode=fast"], "error: pyroscopeMode: "),
    (["--set", "clusterResourceGrup=x"], "error: "),
    (["--stack", "nosuch"], "error: stack: no stack file Pulumi.nosuch.yaml"),
    # The reviewed shortcut is gone: no reviewer setting opens a production stack to a pull request's preview.
    (["--preview", "--reviewed"], "error: unrecognized arguments: --reviewed"),
    (["--preview", "--principal-type", "User"], "error: --principal-type: the preview identity is a service principal"),
    (["--preview", "--pyroscope-group-dedicated"], "error: --pyroscope-group-dedicated: not with --preview"),
])
def test_bad_input_is_one_line_naming_the_option_or_key(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(message), err


def test_the_principal_type_comes_from_the_option_or_the_stack(capsys):
    code, out, _ = run(capsys, "--stack", "dev", "--principal-type", "ServicePrincipal")
    assert code == 0 and out.count("--assignee-principal-type ServicePrincipal") == 5
    code, out, _ = run(capsys, "--stack", "dev", "--set", "deployerPrincipalType=ServicePrincipal")
    assert code == 0 and "--assignee-principal-type User" not in out


# --- The preview identity: Reader where a preview reads, never where a production stack's nonce is -----------------
def production_stack(**values) -> "ra.ProductionStack":
    """A production stack as the guard sees it: the dev stack file with ``values`` (camelCase keys) on top."""
    cfg = ra.stack_config("dev", [f"{key}={value}" for key, value in values.items()])
    return ra.ProductionStack.of(cfg, ra.LISTED)


@pytest.fixture
def no_listed_stacks(tmp_path, monkeypatch):
    """A deploy/stacks.json that lists no stack, so the dev stack file is a previewable stack's."""
    path = tmp_path / "stacks.json"
    path.write_text('{"stacks": []}', encoding="utf-8")
    monkeypatch.setattr(ra, "STACKS_FILE", path)


def test_the_preview_reads_the_stacks_groups_with_reader_only(capsys, no_listed_stacks):
    code, out, err = run(capsys, "--preview", "--json", "--node-resource-group",
                         "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2")
    assert code == 0, err
    assert json.loads(out) == [{"role": "Reader", "scope": f"{SUB}/{name}", "condition": None}
                               for name in ("rg-aks-gpu-dev", "rg-observability-dev",
                                            "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2")]
    code, out, _ = run(capsys, "--preview")
    assert code == 0
    assert '--assignee-object-id "<preview-object-id>" --assignee-principal-type ServicePrincipal' in out
    assert "role definition create" not in out and "--role Reader" in out
    subprocess.run(["bash", "-n"], input=out, text=True, check=True)


def test_the_preview_prints_its_other_grants_commented_out(capsys, no_listed_stacks):
    """The Kubernetes, state and key grants the generator cannot scope offline: one commented-out line each."""
    code, out, _ = run(capsys, "--preview")
    assert code == 0
    commented = re.findall(r"^# az role assignment create .*--role (\"[^\"]+\"|\S+) --scope (\S+)$", out, re.M)
    cluster = f'"{SUB}/rg-aks-gpu-dev/providers/Microsoft.ContainerService/managedClusters/aks-gpu-dev"'
    assert commented == [
        ('"Azure Kubernetes Service Cluster User Role"', cluster),
        ('"Azure Kubernetes Service RBAC Reader"', cluster),
        ('"Storage Blob Data Reader"',
         '"<state-storage-account-id>/blobServices/default/containers/<state-container>"'),
        ('"Key Vault Crypto User"', '"<preview-key-vault-id>/keys/<preview-key>"')]
    assert re.findall(r"^az role assignment create .*--role (\S+)", out, re.M) == ["Reader"] * 3
    assert "# only on an Entra ID cluster with local accounts disabled" in out


def test_a_stack_deploy_stacks_json_lists_is_never_previewed(capsys):
    """dev is in deploy/stacks.json, so the production identity deploys it, whatever its production key says. With
    reviewers on `preview` it was once allowed: the one approving may be the pull request's author, and the preview
    then read production's approval nonce and secrets."""
    assert "dev" in ra.production_stacks() and not ra.stack_config("dev").production
    code, out, err = run(capsys, "--preview", "--stack", "dev")
    assert code == 1 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("error: preview: stack dev is deployed by the production identity (deploy/stacks.json")
    assert "a stack of its own that deploy/stacks.json does not list" in err and "--reviewed" not in err


def test_production_stacks_are_the_listed_ones_and_those_that_set_production(tmp_path, monkeypatch):
    path = tmp_path / "stacks.json"
    path.write_text(json.dumps({"stacks": [{"stack": "org/aks-gpu-observability/prod-eu",
                                            "grafana": "rg-grafana-eu/amg-eu"}]}), encoding="utf-8")
    found = ra.production_stacks(path)
    assert found == {"prod-eu": ra.ProductionStack(ra.LISTED, "rg-grafana-eu", cluster_from_reference=True)}, (
        "dev is neither listed nor production")
    # Listed without a stack file: its cluster is unknown, so no preview may be on it as far as the generator knows.
    with pytest.raises(ra.PreviewRefused, match="^production stack prod-eu names its cluster through a stack "):
        ra.preview_assignments("dev", ra.stack_config("dev", ["grafanaResourceGroup=rg-grafana-eu",
                                                              "privateLinkServiceResourceGroup=rg-pls-dev"]),
                               production=found)
    path.write_text('{"stacks": [{"stack": "dev"}]}', encoding="utf-8")
    with pytest.raises(ra.ConfigError, match=r"^stacks\.json: expected"):
        ra.production_stacks(path)


def test_the_preview_is_refused_a_group_holding_a_production_stacks_grafana():
    """A previewable stack on production's Grafana: Reader on that group reads the managed private endpoint's
    requestMessage, production's approval nonce. Refused, naming the group and the stack."""
    cfg = ra.stack_config("dev")
    prod = production_stack(clusterName="aks-prod", clusterResourceGroup="rg-aks-prod")
    assert prod.grafana_group == cfg.grafana_resource_group == "rg-observability-dev"
    with pytest.raises(ra.PreviewRefused, match=r"^resource group rg-observability-dev holds production stack prod's "
                                                 r"Grafana: Reader there reads its approval nonce"):
        ra.preview_assignments("dev", cfg, production={"prod": prod})
    with pytest.raises(ra.PreviewRefused, match="prod's private link service"):
        ra.preview_assignments("dev", cfg, production={"prod": production_stack(
            grafanaResourceGroup="rg-grafana-prod", privateLinkServiceResourceGroup="rg-aks-gpu-dev",
            clusterName="aks-prod")})
    separate = production_stack(grafanaResourceGroup="rg-grafana-prod", clusterResourceGroup="rg-aks-prod")
    assert [a.role for a in ra.preview_assignments("dev", cfg, production={"prod": separate})] == ["Reader"] * 3


def test_the_preview_is_refused_the_node_resource_group_of_a_production_stacks_cluster():
    """Two stacks on one cluster share its node resource group, where a PLS goes by default: Reader there reads the
    production stack's Pending connection's description."""
    cfg = ra.stack_config("dev")
    same_cluster = production_stack(grafanaResourceGroup="rg-grafana-prod", monitorWorkspaceResourceGroup="rg-mon")
    with pytest.raises(ra.PreviewRefused, match=r"^stack dev is on production stack prod's cluster "
                                                 r"\(rg-aks-gpu-dev/aks-gpu-dev\): its private link service is in "
                                                 r"the cluster's node resource group"):
        ra.preview_assignments("dev", cfg, production={"prod": same_cluster})


def test_the_preview_is_refused_a_production_stacks_cluster_even_with_a_pls_group_of_its_own():
    """A failing input found once: with its own privateLinkServiceResourceGroup a stack on production's cluster passed
    (exit 0), with Reader on the cluster's group and AKS Cluster User there, which reads production's Kubernetes
    objects."""
    same_cluster = production_stack(grafanaResourceGroup="rg-grafana-prod", monitorWorkspaceResourceGroup="rg-mon")
    own_pls = ra.stack_config("dev", ["privateLinkServiceResourceGroup=rg-pls-dev"])
    with pytest.raises(ra.PreviewRefused, match=r"^stack dev is on production stack prod's cluster "
                                                 r"\(rg-aks-gpu-dev/aks-gpu-dev\): the preview's AKS Cluster User"):
        ra.preview_assignments("dev", own_pls, production={"prod": same_cluster})
    elsewhere = ra.stack_config("dev", ["privateLinkServiceResourceGroup=rg-pls-dev", "clusterName=aks-preview"])
    assert len(ra.preview_assignments("dev", elsewhere, production={"prod": same_cluster})) == 3


@pytest.mark.parametrize("values, message", [
    ({"grafanaStack": "org/aks-grafana/prod", "grafanaResourceGroup": "", "grafanaName": "", "clusterName": "aks-prod"},
     "^production stack prod takes its Grafana from a stack reference \\(grafanaStack\\)"),
    ({"clusterStack": "org/aks-cluster/prod", "clusterResourceGroup": "", "clusterName": "",
      "grafanaResourceGroup": "rg-grafana-prod"},
     "^production stack prod names its cluster through a stack reference \\(clusterStack\\)"),
])
def test_a_production_stack_whose_groups_come_from_a_stack_reference_is_refused(values, message):
    cfg = ra.stack_config("dev", ["privateLinkServiceResourceGroup=rg-pls-dev"])
    production = {"prod": production_stack(**values)}
    with pytest.raises(ra.PreviewRefused, match=message):
        ra.preview_assignments("dev", cfg, production=production)


def test_a_production_stack_is_never_previewed(capsys, no_listed_stacks):
    code, out, err = run(capsys, "--preview", "--set", "production=true")
    assert code == 1 and out == ""
    assert err.startswith("error: preview: stack dev sets production: \"true\"") and len(err.splitlines()) == 1


def test_the_checkouts_stacks_give_the_preview_no_production_group():
    """The repository's own stacks: each listed in deploy/stacks.json is production, each stack file that is not
    previews without reading a production stack's groups, and each production one is refused without reviewers."""
    production = ra.production_stacks()
    assert set(ra.listed_stacks()) <= set(production)
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi."):-len(".yaml")]
        cfg = ra.stack_config(name)
        if name in production:
            with pytest.raises(ra.PreviewRefused, match=f"^stack {name} "):
                ra.preview_assignments(name, cfg, production=production)
        else:
            ra.preview_assignments(name, cfg, production=production)


@pytest.mark.parametrize("argv,message", [
    # Without the node resource group the generator cannot see that the storage group is the cluster's MC_ group.
    (("--deployer-object-id", ME), "pass --node-resource-group too"),
    (("--node-resource-group", "MC_other"), "looks like a node resource group (MC_...)"),
])
def test_the_dedicated_storage_group_is_never_the_clusters_node_resource_group(capsys, argv, message):
    """The node resource group holds the kubelet's and agent pools' identities: the storage role (federated-credential
    writes) on it would let a deployer act as them."""
    code, out, err = run(capsys, "--stack", "dev", *argv, "--set", "pyroscopeMode=microservices", "--set",
                         "pyroscopeStorageAccountResourceGroup=MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2",
                         "--pyroscope-group-dedicated", "--json")
    assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1, err


def test_a_listed_stack_without_a_stack_file_guards_its_unknown_cluster():
    """deploy/stacks.json may list a stack whose file is not in the checkout: its cluster, and so the node resource
    group holding its PLS, is unknown: a preview is refused whatever groups it reads."""
    cfg = ra.stack_config("dev", ["clusterResourceGroup=rg-preview", "clusterName=aks-preview",
                                  "grafanaResourceGroup=rg-grafana-preview",
                                  "monitorWorkspaceResourceGroup=rg-grafana-preview"])
    production = {"prod": ra.ProductionStack(ra.LISTED, "rg-grafana-prod", cluster_from_reference=True)}
    with pytest.raises(ra.PreviewRefused, match="has no stack file here"):
        ra.preview_assignments("preview", cfg, production=production)
    with pytest.raises(ra.PreviewRefused, match="has no stack file here"):
        ra.preview_assignments("preview", ra.stack_config("dev", ["clusterName=aks-preview",
                                                                  "privateLinkServiceResourceGroup=rg-pls"]),
                               production=production)


def test_a_printed_condition_survives_the_shell_unchanged(capsys):
    """Conditions go in single quotes: bash, interactive or not, hands az exactly the condition (no '!' history
    expansion, no '{}' or '$' touched)."""
    code, out, _ = run(capsys, "--stack", "dev", *OBJECT_IDS)
    line = next(line for line in out.splitlines() if "--condition " in line)
    expected = [a["condition"] for a in listed(capsys) if a["condition"]][0]
    argv = subprocess.run(["bash", "-c", "printf '%s\\n' " + line.split("--condition ", 1)[1].rsplit(
        " --condition-version", 1)[0]], capture_output=True, text=True, check=True).stdout
    assert argv == expected + "\n"


# --- The drift identity: reads, never writes --------------------------------------------------------------------------
#: The roles the drift identity may be given, by name and by id, each of which only reads. Grafana Viewer: dashboards,
#: and datasource settings where Grafana does not enforce data source permissions; Storage Blob Data Reader: the
#: state's blobs. Not Key Vault Crypto User: besides decrypt it may encrypt, sign and update a key (disable it).
READ_ONLY_ROLES = {"Grafana Viewer": "60921a7e-fef1-4a43-9b16-a26c52ad4769",
                   "Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"}
#: Custom roles the drift identity may be given: the data actions each may hold, reads only.
READ_ONLY_CUSTOM = {"aks-gpu-observability state decrypt": {"Microsoft.KeyVault/vaults/keys/decrypt/action"}}
GRAFANA = f"{SUB}/rg-observability-dev/providers/Microsoft.Dashboard/grafana/amg-gpu-dev"


def not_read_only(script: str) -> list:
    """Each role the script assigns or defines, commented out or not, that is not in the read-only allow-lists."""
    found = []
    for role in re.findall(r"^(?:# )?az role assignment create .*--role (\"[^\"]+\"|\S+) --scope", script, re.M):
        if role.strip('"') not in {*READ_ONLY_ROLES, *READ_ONLY_ROLES.values(), *READ_ONLY_CUSTOM}:
            found.append(f"assigns {role}")
    bodies = re.findall(r"^(?:# )?(?:cat|sed \"[^\"]*\") > \S+ <<'EOF'\n(?:# )?(.*?)\n(?:# )?EOF$", script, re.M | re.S)
    for body in bodies:
        role = json.loads(re.sub(r"^# ", "", body, flags=re.M))
        allowed = READ_ONLY_CUSTOM.get(role["Name"])
        if allowed is None or role["Actions"] or not set(role["DataActions"]) <= allowed:
            found.append(f"defines {role['Name']}: {role['Actions']} {role['DataActions']}")
    if len(bodies) != script.count("az role definition create"):
        found.append("a role definition the check cannot read")
    return found


def test_the_drift_identity_gets_read_only_roles_only(capsys):
    """--drift: Grafana Viewer on the stack's Grafana, assigned; production's state container (read) and key
    (decrypt only) for a self-managed backend, commented out. Nothing the allow-lists do not name, no condition, no
    role that writes."""
    code, out, err = run(capsys, "--drift", "--stack", "dev", "--deployer-object-id", ME)
    assert code == 0, err
    subprocess.run(["bash", "-n"], input=out, text=True, check=True)
    assert not_read_only(out) == []
    assert re.findall(r"^az role assignment create .*--role (\S+) --scope (\S+)$", out, re.M) == [
        (READ_ONLY_ROLES["Grafana Viewer"], f'"{GRAFANA}"')]
    commented = re.findall(r"^# az role assignment create .*--role (\"[^\"]+\"|\S+) --scope (\S+)$", out, re.M)
    assert commented == [
        ('"Storage Blob Data Reader"', f'"{ra.STATE_CONTAINER}"'),
        ('"aks-gpu-observability state decrypt"', '"<production-key-vault-id>/keys/<production-key>"')]
    assert f"--assignee-object-id {ME} --assignee-principal-type ServicePrincipal" in out
    assert "--condition" not in out and "Key Vault Crypto User" not in out
    code, out, _ = run(capsys, "--drift", "--stack", "dev", "--json")
    assert code == 0 and json.loads(out) == [{"role": "Grafana Viewer", "scope": GRAFANA, "condition": None}]


@pytest.mark.parametrize("line", [
    "az role assignment create --assignee-object-id x --assignee-principal-type ServicePrincipal "
    f"--role {GRAFANA_ADMIN} --scope /g",
    "# az role assignment create --assignee-object-id x --assignee-principal-type ServicePrincipal "
    '--role "Key Vault Crypto User" --scope /k',
    "az role assignment create --assignee-object-id x --assignee-principal-type ServicePrincipal "
    "--role Contributor --scope /g",
    '# cat > "$dir/r.json" <<\'EOF\'\n# {"Name": "aks-gpu-observability state decrypt", "Actions": [], "DataActions": '
    '["Microsoft.KeyVault/vaults/keys/decrypt/action", "Microsoft.KeyVault/vaults/keys/update/action"]}\n# EOF\n'
    '# az role definition create --role-definition @"$dir/r.json"',
])
def test_the_read_only_check_refuses_a_role_that_writes(line):
    assert not_read_only(line + "\n")


def test_the_drift_check_needs_no_more_than_its_roles(tmp_path):
    """Every az call `ops.verify --drift` makes (the stand-in az's log) needs Grafana Viewer at most and no ARM action:
    so the drift identity needs no Reader anywhere. The state and its key are read by the Pulumi CLI (the commented-out
    grants)."""
    from tests.support.verify_runs import check_drift

    done, calls = check_drift(tmp_path)
    assert done.returncode == 0, done.stderr
    needs = [dr.az_permission(call["argv"]) for call in calls]
    assert needs and {need.kind for need in needs} <= {"grafana", "none"}
    highest = max(dr.GRAFANA_ROLES.index(need.grafana_role) for need in needs if need.kind == "grafana")
    assert dr.GRAFANA_ROLES[highest] == "Viewer"


@pytest.mark.parametrize("argv,message", [
    (["--drift", "--principal-type", "User"], "error: --principal-type: the drift identity is a service principal"),
    (["--drift", "--preview"], "error: --drift: not with --preview"),
    (["--drift", "--pyroscope-group-dedicated"], "error: --pyroscope-group-dedicated: not with --drift"),
])
def test_drift_bad_input_is_one_line_naming_the_option(capsys, argv, message):
    code, out, err = run(capsys, "--stack", "dev", *argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and err.startswith(message), err
