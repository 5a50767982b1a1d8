"""ops.role_assignments: which of the three deployer roles a stack needs, on which scopes, with which condition; and
docs/deployer-role.md's example is its real output for the dev stack. SIMULATED: no Azure (the commands are printed,
and checked by `bash -n`)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from components.pyroscope_storage import derived_account_name
from ops import deployer_role as dr
from ops import role_assignments as ra
from stack.specs import GRAFANA_ADMIN, MONITORING_DATA_READER, STORAGE_BLOB_DATA_CONTRIBUTOR
from tests.support.scenarios import ROOT

DOC = ROOT / "docs" / "deployer-role.md"
DEPLOYER, PRIVATE_LINK, STORAGE = (dr.load_role(path)["Name"] for path in dr.ROLE_FILES)
SUB = "/subscriptions/$SUB/resourceGroups"
ME = "11111111-2222-3333-4444-555555555555"
GRAFANA_PRINCIPAL = "66666666-7777-8888-9999-000000000000"
OBJECT_IDS = ["--deployer-object-id", ME, "--grafana-principal-id", GRAFANA_PRINCIPAL, "--node-resource-group",
              "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"]
NODE = f"{SUB}/MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"
DENY_ALL = dr.condition([])
RA = r"Microsoft\.Authorization/roleAssignments"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = ra.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys, *sets: str, extra: tuple = ()) -> list:
    """The --json assignments of the dev stack with ``sets`` (``KEY=VALUE``) and the given ids."""
    argv = [*OBJECT_IDS, *extra, "--json"]
    for item in sets:
        argv += ["--set", item]
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


# --- The dev stack ----------------------------------------------------------------------------------------------------
def test_dev_assigns_the_deployer_role_on_its_groups_and_the_approver_on_the_node_resource_group(capsys):
    found = listed(capsys)
    assert pairs(found) == [
        (DEPLOYER, f"{SUB}/rg-aks-gpu-dev"),
        (DEPLOYER, f"{SUB}/rg-observability-dev"),  # Grafana's and the workspace's: one group, one assignment
        (PRIVATE_LINK, NODE),
        ("Grafana Admin", f"{SUB}/rg-observability-dev/providers/Microsoft.Dashboard/grafana/amg-gpu-dev"),
    ]
    cluster, observability, approver, grafana_admin = (a["condition"] for a in found)
    assert cluster == DENY_ALL, "the stack assigns no role in the cluster's group"
    assert clauses(observability) == [
        ("Request", MONITORING_DATA_READER, "PrincipalId", GRAFANA_PRINCIPAL),
        ("Resource", MONITORING_DATA_READER, "PrincipalId", GRAFANA_PRINCIPAL)]
    assert approver is None and grafana_admin is None


def test_the_documented_example_is_the_generators_output_for_dev(capsys):
    code, out, _ = run(capsys, "--stack", "dev")
    assert code == 0
    text = DOC.read_text(encoding="utf-8")
    example = text.split("### Example: the `dev` stack", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert example == out
    assert "<deployer-object-id>" in out and "<grafana-principal-id>" in out and "<node-resource-group>" in out
    subprocess.run(["bash", "-n"], input=out, text=True, check=True)


def test_the_printed_definitions_are_the_role_files_on_the_stacks_groups(capsys):
    code, out, _ = run(capsys, "--stack", "dev", *OBJECT_IDS, "--set", "pyroscopeMode=microservices",
                       "--set", "pyroscopeStorageAccountResourceGroup=rg-pyroscope-dev")
    assert code == 0
    bodies = re.findall(r"<<EOF\n(.*?)\nEOF\naz role definition create --role-definition @/tmp/(\S+)\.json\n", out,
                        re.S)
    assert [name for _, name in bodies] == [path.stem for path in dr.ROLE_FILES]
    for (body, _), path in zip(bodies, dr.ROLE_FILES):
        printed, role = json.loads(body), dr.load_role(path)
        assert {k: v for k, v in printed.items() if k != "AssignableScopes"} == {
            k: v for k, v in role.items() if k != "AssignableScopes"}
        assert printed["AssignableScopes"] == {
            DEPLOYER: [f"{SUB}/rg-aks-gpu-dev", f"{SUB}/rg-observability-dev"], PRIVATE_LINK: [NODE],
            STORAGE: [f"{SUB}/rg-pyroscope-dev"]}[role["Name"]]
    subprocess.run(["bash", "-n"], input=out, text=True, check=True)


# --- Pyroscope's storage ----------------------------------------------------------------------------------------------
def test_microservices_with_a_group_of_its_own_assigns_the_storage_role_on_that_group(capsys):
    found = listed(capsys, "pyroscopeMode=microservices", "pyroscopeStorageAccountResourceGroup=rg-pyroscope-dev")
    storage = [a for a in found if a["role"] == STORAGE]
    assert pairs(storage) == [(STORAGE, f"{SUB}/rg-pyroscope-dev")]
    assert clauses(storage[0]["condition"]) == [
        ("Request", STORAGE_BLOB_DATA_CONTRIBUTOR, "PrincipalType", "'ServicePrincipal'"),
        ("Resource", STORAGE_BLOB_DATA_CONTRIBUTOR, "PrincipalType", "'ServicePrincipal'")]


def test_microservices_in_the_clusters_group_assigns_the_storage_role_on_the_account_and_identity(capsys):
    subscription = "0b1f6471-1bf0-4dda-aec3-cb9272f09590"
    found = listed(capsys, "pyroscopeMode=microservices", extra=("--subscription-id", subscription))
    group = f"/subscriptions/{subscription}/resourceGroups/rg-aks-gpu-dev"
    account = derived_account_name(f"{group}/providers/Microsoft.ContainerService/managedClusters/aks-gpu-dev")
    assert pairs([a for a in found if a["role"] == STORAGE]) == [
        (STORAGE, f"{group}/providers/Microsoft.Storage/storageAccounts/{account}"),
        (STORAGE, f"{group}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-pyroscope-aks-gpu-dev")]
    account_row, identity_row = (a for a in found if a["role"] == STORAGE)
    assert role_ids(account_row["condition"]) == {STORAGE_BLOB_DATA_CONTRIBUTOR}
    assert identity_row["condition"] == DENY_ALL, "no role is assigned on the identity"
    code, out, _ = run(capsys, "--stack", "dev", "--set", "pyroscopeMode=microservices")
    assert code == 0 and "storageAccounts/<storage-account>" in out
    assert "# Pyroscope's storage shares resource group rg-aks-gpu-dev with the stack" in out
    assert "a NEW stack's first pulumi up needs the group scope" in out


def test_a_brought_account_is_named_by_the_stack(capsys):
    found = listed(capsys, "pyroscopeMode=microservices", "pyroscopeStorageAccount=pyroprofiles")
    account = f"{SUB}/rg-aks-gpu-dev/providers/Microsoft.Storage/storageAccounts/pyroprofiles"
    assert account in [a["scope"] for a in found]


# --- Grafana and the workspace ----------------------------------------------------------------------------------------
def test_a_created_grafana_allows_grafana_admin_to_the_deployer_and_the_reader_to_a_service_principal(capsys):
    found = listed(capsys, "createGrafana=true")
    observability = next(a for a in found if a["scope"] == f"{SUB}/rg-observability-dev")
    assert clauses(observability["condition"]) == [
        ("Request", GRAFANA_ADMIN, "PrincipalId", ME),
        ("Request", MONITORING_DATA_READER, "PrincipalType", "'ServicePrincipal'"),
        ("Resource", GRAFANA_ADMIN, "PrincipalId", ME),
        ("Resource", MONITORING_DATA_READER, "PrincipalType", "'ServicePrincipal'")]
    assert "Grafana Admin" not in [a["role"] for a in found], "the stack assigns it itself"


def test_separate_grafana_and_workspace_groups_get_only_their_own_role(capsys):
    found = listed(capsys, "createGrafana=true", "grafanaResourceGroup=rg-grafana-dev")
    by_scope = {a["scope"]: a["condition"] for a in found if a["role"] == DEPLOYER}
    assert list(by_scope) == [f"{SUB}/rg-aks-gpu-dev", f"{SUB}/rg-grafana-dev", f"{SUB}/rg-observability-dev"]
    assert role_ids(by_scope[f"{SUB}/rg-grafana-dev"]) == {GRAFANA_ADMIN}
    assert role_ids(by_scope[f"{SUB}/rg-observability-dev"]) == {MONITORING_DATA_READER}


def test_multi_cluster_leaves_the_shared_reader_role_out_unless_asked(capsys):
    found = listed(capsys, "multiCluster=true")
    assert all(a["condition"] == DENY_ALL for a in found if a["role"] == DEPLOYER)
    found = listed(capsys, "multiCluster=true", "assignMonitoringDataReader=true")
    assert role_ids(next(a["condition"] for a in found if a["scope"] == f"{SUB}/rg-observability-dev")) == {
        MONITORING_DATA_READER}


# --- The private link service -----------------------------------------------------------------------------------------
def test_a_pls_elsewhere_needs_the_node_resource_group_too_unless_the_subnet_is_given(capsys):
    found = listed(capsys, "privateLinkServiceResourceGroup=rg-pls-dev")
    assert pairs([a for a in found if a["role"] == PRIVATE_LINK]) == [
        (PRIVATE_LINK, f"{SUB}/rg-pls-dev"), (PRIVATE_LINK, NODE)]
    found = listed(capsys, "privateLinkServiceResourceGroup=rg-pls-dev", "privateLinkSubnet=snet-pls")
    assert pairs([a for a in found if a["role"] == PRIVATE_LINK]) == [(PRIVATE_LINK, f"{SUB}/rg-pls-dev")]


# --- What the old single role got wrong, checked on the JSON the assignments name -------------------------------------
VARIANTS = {
    "dev": (),
    "microservices-own-group": ("pyroscopeMode=microservices", "pyroscopeStorageAccountResourceGroup=rg-pyroscope"),
    "microservices-default-group": ("pyroscopeMode=microservices",),
    "created-grafana": ("createGrafana=true", "createMonitorWorkspace=true"),
    "multi-cluster": ("multiCluster=true", "assignMonitoringDataReader=true"),
}
ROLES = {role["Name"]: role for role in dr.load_roles()}
ESCALATING = ("Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/write",
              "Microsoft.Storage/storageAccounts/write")
STACK_GROUPS = {f"{SUB}/{name}".lower() for name in ("rg-aks-gpu-dev", "rg-observability-dev")} | {NODE.lower()}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_assignment_reaches_the_subscription_or_lets_the_holder_escalate(capsys, variant):
    found = listed(capsys, *VARIANTS[variant])
    assigned = {MONITORING_DATA_READER, GRAFANA_ADMIN, STORAGE_BLOB_DATA_CONTRIBUTOR}
    for row in found:
        assert "/resourceGroups/" in row["scope"], row
        role = ROLES.get(row["role"])
        if role is None:
            assert row["role"] == "Grafana Admin" and "/providers/Microsoft.Dashboard/grafana/" in row["scope"]
            continue
        assert all("/resourceGroups/" in scope for scope in role["AssignableScopes"]), role["Name"]
        if any(action in role["Actions"] for action in ESCALATING):
            assert row["scope"].lower() not in STACK_GROUPS, (role["Name"], row["scope"])
        if "Microsoft.Authorization/roleAssignments/write" in role["Actions"]:
            assert row["condition"] == DENY_ALL or constrained(row["condition"]), row
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


def test_the_documented_conditions_name_the_roles_each_custom_role_may_assign(capsys):
    """The doc's condition table lists, per custom role, the roles some configuration lets it assign."""
    text = DOC.read_text(encoding="utf-8").split("## The conditions on role assignments", 1)[1]
    documented = set(re.findall(r"^\| (aks-gpu-observability [^|]+?) \| [^|]+ \| `([0-9a-f-]{36})` \|", text, re.M))
    generated = set()
    for sets in VARIANTS.values():
        for row in listed(capsys, *sets):
            generated |= {(row["role"], guid) for guid in role_ids(row["condition"] or "")}
    assert documented == generated


# --- Bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["--deployer-object-id", "me"], "error: --deployer-object-id: expected an object id (a GUID"),
    (["--grafana-principal-id", "x"], "error: --grafana-principal-id: expected an object id (a GUID"),
    (["--node-resource-group", "bad/name"], "error: --node-resource-group: expected a resource group name"),
    (["--subscription-id", "sub"], "error: --subscription-id: expected a subscription id"),
    (["--principal-type", "Group"], "error: argument --principal-type: invalid choice: 'Group'"),
    (["--set", "pyroscopeMode"], "error: --set: expected KEY=VALUE (got 'pyroscopeMode')"),
    (["--set", "pyroscopeMode=fast"], "error: pyroscopeMode: "),
    (["--set", "clusterResourceGrup=x"], "error: "),
    (["--stack", "nosuch"], "error: stack: no stack file Pulumi.nosuch.yaml"),
])
def test_bad_input_is_one_line_naming_the_option_or_key(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(message), err


def test_the_principal_type_comes_from_the_option_or_the_stack(capsys):
    code, out, _ = run(capsys, "--stack", "dev", "--principal-type", "ServicePrincipal")
    assert code == 0 and out.count("--assignee-principal-type ServicePrincipal") == 4
    code, out, _ = run(capsys, "--stack", "dev", "--set", "deployerPrincipalType=ServicePrincipal")
    assert code == 0 and "--assignee-principal-type User" not in out


# --- The preview identity: Reader where a preview reads, never where a production stack's nonce is -----------------
def production_stack(**values):
    """A production stack's configuration as the checkout would hold it (``production: "true"``)."""
    return ra.stack_config("dev", [f"{key}={value}" for key, value in {"production": "true", **values}.items()])


def test_the_preview_reads_the_stacks_groups_with_reader_only(capsys):
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


def test_the_preview_is_refused_a_group_holding_a_production_stacks_grafana():
    """A previewable stack on production's Grafana: Reader on that group reads the managed private endpoint's
    requestMessage, production's approval nonce. Refused, naming the group and the stack."""
    cfg = ra.stack_config("dev")
    prod = production_stack(clusterName="aks-prod", clusterResourceGroup="rg-aks-prod")
    assert prod.grafana_resource_group == cfg.grafana_resource_group == "rg-observability-dev"
    with pytest.raises(ra.PreviewRefused, match=r"^resource group rg-observability-dev holds production stack prod's "
                                                 r"Grafana: Reader there reads its approval nonce"):
        ra.preview_assignments("dev", cfg, production={"prod": prod})
    with pytest.raises(ra.PreviewRefused, match="prod's private link service"):
        ra.preview_assignments("dev", cfg, production={"prod": production_stack(
            grafanaResourceGroup="rg-grafana-prod", privateLinkServiceResourceGroup="rg-aks-gpu-dev")})
    separate = production_stack(grafanaResourceGroup="rg-grafana-prod", clusterResourceGroup="rg-aks-prod")
    assert [a.role for a in ra.preview_assignments("dev", cfg, production={"prod": separate})] == ["Reader"] * 3


def test_a_production_stack_is_previewed_only_with_reviewers(capsys):
    code, out, err = run(capsys, "--preview", "--set", "production=true")
    assert code == 1 and out == ""
    assert err.startswith("error: preview: stack dev sets production: \"true\"") and len(err.splitlines()) == 1
    assert "--reviewed" in err
    code, out, err = run(capsys, "--preview", "--reviewed", "--set", "production=true", "--json")
    assert code == 0 and {a["role"] for a in json.loads(out)} == {"Reader"}, err


def test_the_checkouts_stacks_give_the_preview_no_production_group():
    """The repository's own stack files: previewing each non-production one reads no production stack's groups."""
    production = ra.production_stacks()
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi."):-len(".yaml")]
        cfg = ra.stack_config(name)
        if not cfg.production:
            ra.preview_assignments(name, cfg, production=production)
