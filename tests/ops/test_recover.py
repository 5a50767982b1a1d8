"""ops/recover.py: the commands that bring back a stack whose run was killed, from its state; run against stand-in
`pulumi`, `az` and `helm` commands that record their calls. The real CLI, provider and API server play every kill
point in tests/e2e/test_kill_points.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops import recover
from tests.support import ROOT
from tests.support.kill_points import table

SUB = "00000000-0000-0000-0000-000000000001"
STACK_URN = "urn:pulumi:dev::aks-gpu-observability::pulumi:pulumi:Stack::aks-gpu-observability-dev"
SECRET = "4dabf18193072939515e22adb298388d"


def resource(type_: str, name: str, inputs: dict, parent: str = STACK_URN) -> dict:
    return {"urn": f"urn:pulumi:dev::aks-gpu-observability::{type_}::{name}", "type": type_, "inputs": inputs,
            "parent": parent}


EXTENSION = resource("azure-native:kubernetesconfiguration:Extension", "inspektor-gadget-extension", {
    "resourceGroupName": "rg-aks", "clusterRp": "Microsoft.ContainerService", "clusterResourceName": "managedClusters",
    "clusterName": "aks-1", "extensionName": "inspektor-gadget", "autoUpgradeMinorVersion": True})
MPE = resource("azure-native:dashboard:ManagedPrivateEndpoint", "grafana-private-link-mpe", {
    "resourceGroupName": "rg-obs", "workspaceName": "amg-1", "managedPrivateEndpointName": "pyroscope-mpe"})
ROLE = resource("azure-native:authorization:RoleAssignment", "grafana-datasources-monitoring-data-reader", {
    "scope": f"/subscriptions/{SUB}/resourceGroups/rg-obs/providers/Microsoft.Monitor/accounts/amw-1",
    "roleAssignmentName": "0b1c", "principalId": {SECRET: "1b47e6e0a", "plaintext": '"abc"'}})
NAMESPACE = resource("kubernetes:core/v1:Namespace", "gadget-namespace", {"metadata": {"name": "gadget"}})
CLAIM = resource("kubernetes:core/v1:PersistentVolumeClaim", "pyroscope-data-0",
                 {"metadata": {"name": "data-pyroscope-0", "namespace": "gadget"}})
RELEASE = resource("kubernetes:helm.sh/v3:Release", "pyroscope-release", {"name": "pyroscope", "namespace": "gadget"})
COMMAND = resource("command:local:Command", "grafana-private-link-approve-connection", {"create": "sh approve.sh"})


def pending(*ops: tuple[str, dict]) -> dict:
    return {"resources": [], "pending_operations": [{"type": kind, "resource": r} for kind, r in ops]}


@pytest.mark.parametrize("res, expected", [
    (NAMESPACE, "gadget"),
    (CLAIM, "gadget/data-pyroscope-0"),
    (RELEASE, "gadget/pyroscope"),
    (EXTENSION, f"/subscriptions/{SUB}/resourceGroups/rg-aks/providers/Microsoft.ContainerService/managedClusters/"
                "aks-1/providers/Microsoft.KubernetesConfiguration/extensions/inspektor-gadget"),
    (MPE, f"/subscriptions/{SUB}/resourceGroups/rg-obs/providers/Microsoft.Dashboard/grafana/amg-1/"
          "managedPrivateEndpoints/pyroscope-mpe"),
    (ROLE, f"/subscriptions/{SUB}/resourceGroups/rg-obs/providers/Microsoft.Monitor/accounts/amw-1/providers/"
           "Microsoft.Authorization/roleAssignments/0b1c"),
    (COMMAND, None),
])
def test_each_type_is_imported_under_the_id_its_inputs_give(res, expected):
    assert recover.import_id(res, SUB) == expected


def test_an_azure_id_without_a_subscription_is_refused_naming_the_resource():
    with pytest.raises(recover.RecoverError, match="inspektor-gadget-extension: the subscription is needed"):
        recover.import_id(EXTENSION, None)


def test_what_azure_has_is_imported_then_the_pending_creates_are_cleared():
    state = pending(("creating", EXTENSION), ("creating", COMMAND), ("creating", NAMESPACE), ("updating", MPE))
    present = {EXTENSION["urn"]: recover.import_id(EXTENSION, SUB)}
    commands = recover.plan(state, "dev", {}, present, "/tmp/i.json")
    assert commands == [
        ["pulumi", "cancel", "--yes", "--stack", "dev"],
        ["pulumi", "import", "--yes", "--stack", "dev", "--file", "/tmp/i.json", "--protect=false",
         "--generate-code=false"],
        ["pulumi", "refresh", "--yes", "--stack", "dev", "--clear-pending-creates"]]
    document = recover.import_file(state, present)
    assert document["resources"] == [{"type": EXTENSION["type"], "name": "inspektor-gadget-extension",
                                      "id": present[EXTENSION["urn"]], "inputs": EXTENSION["inputs"],
                                      "parent": "parent0"}]
    assert document["nameTable"] == {"parent0": STACK_URN}


def test_a_secret_input_goes_to_the_import_file_as_its_value():
    """The import file is the CLI's input: a state's secret envelope is not an input value (the CLI would take the
    envelope as an object); the file lives in a private temporary folder and is removed after ``--run``."""
    document = recover.import_file(pending(("creating", ROLE)), {ROLE["urn"]: "id"})
    assert document["resources"][0]["inputs"]["principalId"] == "abc"


@pytest.mark.parametrize("status, expected", [
    ("pending-install", ["helm", "uninstall", "pyroscope", "--namespace", "gadget", "--wait"]),
    ("pending-upgrade", ["helm", "rollback", "pyroscope", "--namespace", "gadget", "--wait"]),
    ("pending-rollback", ["helm", "rollback", "pyroscope", "--namespace", "gadget", "--wait"]),
])
def test_a_release_helm_left_pending_is_uninstalled_or_rolled_back(status, expected):
    kind = "creating" if status == "pending-install" else "updating"
    commands = recover.plan(pending((kind, RELEASE)), "dev", {"gadget/pyroscope": status}, {}, "f")
    assert commands[1] == expected


def test_a_deployed_release_is_left_alone_and_an_unlocked_stack_only_gets_the_harmless_cancel():
    commands = recover.plan(pending(("updating", RELEASE)), "dev", {"gadget/pyroscope": "deployed"}, {}, "f")
    assert commands == [["pulumi", "cancel", "--yes", "--stack", "dev"]]


# --- the tool, against recording stand-ins ---

def stand_ins(folder: Path, state: dict, backend: str, fail: str = "", azure: tuple = (), cluster: tuple = (),
              server: str = "") -> dict:
    """`pulumi`, `az`, `helm` and `kubectl` that log their argv to calls.jsonl; pulumi answers export and whoami; az
    answers account show, and resource show for the ids in ``azure``; kubectl get prints the objects in ``cluster``
    (``Kind/name``) and nothing for others, as with ``--ignore-not-found``, and config view a kubeconfig of ``server``;
    a command starting with ``fail`` exits 1."""
    bin_ = folder / "bin"
    bin_.mkdir()
    log = folder / "calls.jsonl"
    (folder / "state.json").write_text(json.dumps({"version": 3, "deployment": state}))
    script = f'''#!{sys.executable}
import json, os, sys
argv = [os.path.basename(sys.argv[0])] + sys.argv[1:]
open({str(log)!r}, "a").write(json.dumps(argv) + "\\n")
if " ".join(argv).startswith({fail!r}) and {fail!r}:
    print("error: it failed", file=sys.stderr); sys.exit(1)
if argv[:3] == ["pulumi", "stack", "export"]:
    print(open({str(folder / "state.json")!r}).read())
elif argv[:2] == ["pulumi", "whoami"]:
    print(json.dumps({{"user": "me", "url": {backend!r}}}))
elif argv[:3] == ["az", "account", "show"]:
    print(json.dumps({{"id": {SUB!r}}}))
elif argv[:3] == ["az", "resource", "show"]:
    if argv[argv.index("--ids") + 1] not in {list(azure)!r}:
        print("ERROR: (ResourceNotFound) The Resource was not found", file=sys.stderr); sys.exit(3)
    print("{{}}")
elif argv[:2] == ["helm", "status"]:
    print(json.dumps({{"info": {{"status": "pending-install"}}}}))
elif argv[:3] == ["kubectl", "config", "view"]:
    print(json.dumps({{"current-context": "c", "contexts": [{{"name": "c", "context": {{"cluster": "k"}}}}],
                      "clusters": [{{"name": "k", "cluster": {{"server": {server!r}}}}}]}}))
elif argv[:2] == ["kubectl", "get"] and f"{{argv[2]}}/{{argv[3]}}" in {list(cluster)!r}:
    print(f"{{argv[2].split('.')[0].lower()}}/{{argv[3]}}")
'''
    for name in ("pulumi", "az", "helm", "kubectl"):
        (bin_ / name).write_text(script)
        (bin_ / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}


def run(folder: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ops.recover", *args], cwd=folder, env=env, capture_output=True,
                          text=True)


def calls(folder: Path) -> list[list[str]]:
    return [json.loads(line) for line in (folder / "calls.jsonl").read_text().splitlines()]


def test_run_repairs_the_state_file_then_runs_each_command_in_order(tmp_path):
    """The kill left ``dev.json.attrs`` empty (gocloud.dev fileblob truncates it before writing), so the CLI cannot
    read the state ("failed to load checkpoint: EOF"): the empty companion goes first; a whole one stays."""
    stacks = tmp_path / "state" / ".pulumi" / "stacks" / "proj"
    stacks.mkdir(parents=True)
    (stacks / "dev.json.attrs").write_text("")
    (stacks / "dev.json.bak.attrs").write_text('{"user.cache_control":""}\n')
    state = pending(("creating", EXTENSION), ("creating", RELEASE), ("creating", COMMAND))
    eid = recover.import_id(EXTENSION, SUB)
    env = stand_ins(tmp_path, state, f"file://{tmp_path / 'state'}", azure=(eid,))
    done = run(tmp_path, env, "--stack", "dev", "--run")
    assert done.returncode == 0, done.stderr
    assert not (stacks / "dev.json.attrs").exists() and (stacks / "dev.json.bak.attrs").exists()
    ran = [c[:3] for c in calls(tmp_path) if c[:2] not in (["pulumi", "whoami"], ["pulumi", "stack"])
           and c[:2] != ["az", "account"]]
    assert ran == [["az", "resource", "show"], ["helm", "status", "pyroscope"], ["pulumi", "cancel", "--yes"],
                   ["helm", "uninstall", "pyroscope"], ["pulumi", "import", "--yes"], ["pulumi", "refresh", "--yes"]]
    printed = done.stdout.splitlines()
    assert printed[0] == f"rm {stacks / 'dev.json.attrs'}"
    imports = [c for c in calls(tmp_path) if c[:2] == ["pulumi", "import"]][0]
    assert not Path(imports[imports.index("--file") + 1]).exists(), "the import file outlived --run"


def test_without_run_it_only_prints(tmp_path):
    env = stand_ins(tmp_path, pending(("creating", COMMAND)), "https://api.pulumi.com")
    done = run(tmp_path, env, "--stack", "dev")
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["pulumi cancel --yes --stack dev",
                                        "pulumi refresh --yes --stack dev --clear-pending-creates"]
    assert [c[:2] for c in calls(tmp_path)] == [["pulumi", "whoami"], ["pulumi", "stack"]]


def test_a_failed_command_stops_in_one_line_naming_it(tmp_path):
    env = stand_ins(tmp_path, pending(("creating", COMMAND)), "https://api.pulumi.com", fail="pulumi refresh")
    done = run(tmp_path, env, "--stack", "dev", "--run")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == \
        "error: `pulumi refresh --yes` failed (exit 1; output above)"


def test_an_unreadable_state_is_one_line(tmp_path):
    env = stand_ins(tmp_path, {}, "https://api.pulumi.com", fail="pulumi stack export")
    done = run(tmp_path, env, "--stack", "dev")
    assert (done.returncode, done.stderr.strip()) == (
        2, "error: `pulumi stack export --stack dev` failed: error: it failed")


def test_a_missing_stack_argument_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "ops.recover"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: the following arguments are required: --stack"]


def test_the_kill_point_page_shows_the_table_the_tests_play():
    page = (ROOT / "docs" / "kill-points.md").read_text()
    generated = page.split("<!-- kill-points:begin -->\n", 1)[1].split("<!-- kill-points:end -->", 1)[0]
    assert generated == table(), "docs/kill-points.md: run `python -m tests.support.kill_points` and paste the table"


def test_a_kill_between_the_halves_of_a_delete_first_replacement_takes_the_state_entry_as_azure_has_it():
    """The kill came after the old endpoint was deleted and while Azure created the new one: the state holds the old
    entry ``pendingReplacement`` and a pending create of the same URN. `pulumi import` cannot add a URN the state holds
    and the next `up` would create it again ("cannot create already existing resource", seen under the real CLI): the
    entry takes the new inputs and is no longer pending replacement, through `pulumi stack import`."""
    old = {**MPE, "id": "old-id", "pendingReplacement": True, "inputs": {**MPE["inputs"], "privateLinkResourceId": "a"},
           "dependencies": ["x"]}
    new = {**MPE, "inputs": {**MPE["inputs"], "privateLinkResourceId": "b"}}
    state = {"resources": [old], "pending_operations": [{"type": "creating", "resource": new}]}
    mpe_id = recover.import_id(MPE, SUB)
    edited = recover.replaced(state, {MPE["urn"]: mpe_id})
    (entry,) = edited["resources"]
    assert "pendingReplacement" not in entry and entry["inputs"]["privateLinkResourceId"] == "b"
    assert entry["id"] == mpe_id and entry["dependencies"] == ["x"]
    assert state["resources"][0]["pendingReplacement"] is True, "the export is not changed in place"
    commands = recover.plan(state, "dev", {}, {}, "imports.json", "state.json")
    assert commands[1] == ["pulumi", "stack", "import", "--stack", "dev", "--file", "state.json"]
    assert recover.replaced(pending(("creating", MPE)), {MPE["urn"]: mpe_id}) is None


AKS = "urn:pulumi:dev::aks-gpu-observability::pulumi:providers:kubernetes::aks::0d6a4c1e"
POLICY = {**resource("kubernetes:networking.k8s.io/v1:NetworkPolicy", "pyroscope-network-policy",
                     {"metadata": {"name": "pyroscope", "namespace": "gadget"}}), "provider": AKS}


@pytest.mark.parametrize("type_, expected", [
    ("kubernetes:core/v1:Namespace", "Namespace"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "NetworkPolicy.v1.networking.k8s.io"),
])
def test_kubectl_is_asked_for_the_kind_the_pulumi_type_names(type_, expected):
    assert recover.kubectl_resource(type_) == expected


def test_a_kubernetes_object_the_cluster_has_is_added_to_the_state_as_the_program_asked_for_it(tmp_path):
    """pulumi/pulumi-kubernetes#2926: from 4.29.0 the provider creates with a plain create, refused for an object that
    exists ("already exists") on a provider without ``upsertExistingObjects``; after a kill during the create of the
    NetworkPolicy the cluster has it. It goes into the state with the pending create's inputs, under the program's
    provider and parent, not through ``pulumi import``, whose read would make the live fields the program does not
    set (a Service's clusterIP, a bound claim's volumeName) its inputs, and the next run replace it. The claim the
    cluster lacks stays a pending create, cleared by the refresh, and is created again."""
    claim = {**CLAIM, "provider": AKS}
    state = pending(("creating", POLICY), ("creating", claim))
    env = stand_ins(tmp_path, state, "https://api.pulumi.com",
                    cluster=("NetworkPolicy.v1.networking.k8s.io/pyroscope",))
    done = run(tmp_path, env, "--stack", "dev")
    assert done.returncode == 0, done.stderr
    asked = [c for c in calls(tmp_path) if c[:2] == ["kubectl", "get"]]
    assert asked == [["kubectl", "get", "NetworkPolicy.v1.networking.k8s.io", "pyroscope", "--ignore-not-found", "-o",
                      "name", "--namespace", "gadget"],
                     ["kubectl", "get", "PersistentVolumeClaim", "data-pyroscope-0", "--ignore-not-found", "-o",
                      "name", "--namespace", "gadget"]]
    lines = [line.split() for line in done.stdout.splitlines() if not line.startswith("#")]
    assert [line[:3] for line in lines] == [["pulumi", "cancel", "--yes"], ["pulumi", "stack", "import"],
                                            ["pulumi", "refresh", "--yes"]]
    edited = json.loads(Path(lines[1][lines[1].index("--file") + 1]).read_text())["deployment"]
    assert edited["resources"] == [{**POLICY, "custom": True, "id": "gadget/pyroscope", "outputs": POLICY["inputs"]}]
    assert lines[2][-2:] == ["--target", POLICY["urn"]], "the refresh reads what was added, nothing else"
    assert edited["pending_operations"] == [{"type": "creating", "resource": claim}]


def test_a_cluster_kubectl_cannot_reach_is_one_line_naming_the_object(tmp_path):
    env = stand_ins(tmp_path, pending(("creating", POLICY)), "https://api.pulumi.com", fail="kubectl get")
    done = run(tmp_path, env, "--stack", "dev")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {POLICY['urn']}: cannot tell whether NetworkPolicy.v1.networking.k8s.io pyroscope exists: "
        "error: it failed"]


def kubeconfig(server: str) -> str:
    return (f"apiVersion: v1\nkind: Config\ncurrent-context: aks-1\nclusters:\n- name: aks-1\n  cluster:\n"
            f"    server: {server}\ncontexts:\n- name: aks-1\n  context:\n    cluster: aks-1\n    user: u\n")


def with_provider(state: dict, server: str) -> dict:
    """``state`` with the stack's ``aks`` provider, its kubeconfig a secret as ``--show-secrets`` exports it."""
    provider = {"urn": AKS.rsplit("::", 1)[0], "type": "pulumi:providers:kubernetes", "custom": True, "id": "0d6a4c1e",
                "inputs": {"kubeconfig": {SECRET: "1b47061264138c4ac30d75fd1eb44270",
                                          "plaintext": json.dumps(kubeconfig(server))}}}
    return {**state, "resources": [provider, *state["resources"]]}


def test_another_clusters_context_is_refused_before_anything_runs(tmp_path):
    """In a fleet every cluster has gadget/pyroscope: with kubectl's context on another cluster, `helm uninstall` and
    `kubectl get` would act there. ops.recover compares the current context's server with the kubeconfig of the
    stack's provider and stops in one line naming both and the command that sets the context."""
    state = with_provider(pending(("creating", RELEASE), ("creating", POLICY)), "https://aks-1.hcp.eastus2.azmk8s.io:443")
    env = stand_ins(tmp_path, state, "https://api.pulumi.com", server="https://aks-2.hcp.westeurope.azmk8s.io:443")
    done = run(tmp_path, env, "--stack", "dev", "--run")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: kubectl's current context is https://aks-2.hcp.westeurope.azmk8s.io:443, not the stack's cluster "
        "(https://aks-1.hcp.eastus2.azmk8s.io:443): run `az aks get-credentials --resource-group <group> --name "
        "<cluster>` (then `kubelogin convert-kubeconfig -l azurecli` on an Entra ID cluster) and run this again"]
    assert [c for c in calls(tmp_path) if c[0] == "helm" or c[:2] == ["kubectl", "get"] or
            c[:2] in (["pulumi", "cancel"], ["pulumi", "import"])] == []
    assert "kind: Config" not in done.stdout + done.stderr, "the kubeconfig is never printed"


def test_the_stacks_own_cluster_passes_the_check(tmp_path):
    server = "https://aks-1.hcp.eastus2.azmk8s.io:443"
    env = stand_ins(tmp_path, with_provider(pending(("creating", POLICY)), server), "https://api.pulumi.com",
                    server=server)
    done = run(tmp_path, env, "--stack", "dev")
    assert done.returncode == 0, done.stderr
    assert [c[:3] for c in calls(tmp_path) if c[0] == "kubectl"] == [
        ["kubectl", "config", "view"], ["kubectl", "get", "NetworkPolicy.v1.networking.k8s.io"]]


@pytest.mark.parametrize("arm_subscription, source", [("", "az account show"),
                                                      ("11111111-2222-3333-4444-555555555555", "ARM_SUBSCRIPTION_ID")])
def test_azures_pending_creates_are_looked_up_in_the_stacks_subscription(tmp_path, arm_subscription, source):
    """`az` may point at another subscription than the stack's: there the resource is not found, and the pending
    create would be dropped instead of imported. ``ARM_SUBSCRIPTION_ID`` (what azure-native uses) comes first, then an
    ARM id in the state, then az's default; the line printed says which."""
    env = stand_ins(tmp_path, pending(("creating", EXTENSION)), "https://api.pulumi.com")
    if arm_subscription:
        env["ARM_SUBSCRIPTION_ID"] = arm_subscription
    done = run(tmp_path, env, "--stack", "dev")
    assert done.returncode == 0, done.stderr
    expected = arm_subscription or SUB
    assert f"# subscription {expected} ({source})" in done.stdout.splitlines()
    shown = [c for c in calls(tmp_path) if c[:3] == ["az", "resource", "show"]]
    assert [c[c.index("--ids") + 1].split("/")[2] for c in shown] == [expected]


def test_an_arm_id_in_the_state_names_the_subscription_before_azs_default(tmp_path):
    other = "99999999-8888-7777-6666-555555555555"
    role = {**ROLE, "custom": True, "id": f"/subscriptions/{other}/resourceGroups/rg-obs/providers/x/y"}
    state = {**pending(("creating", EXTENSION)), "resources": [role]}
    env = stand_ins(tmp_path, state, "https://api.pulumi.com")
    done = run(tmp_path, env, "--stack", "dev")
    assert f"# subscription {other} (the id of grafana-datasources-monitoring-data-reader in the state)" in \
        done.stdout.splitlines()


def test_the_refresh_reads_only_the_stacks_root_when_nothing_was_added():
    """A refresh of everything turns each secret input a provider answers in plain (the endpoint's request message,
    which holds the approval nonce) into a change, and the next run would replace Grafana's endpoint: the refresh that
    clears the pending creates targets what the recovery added, else the stack's root, which reads nothing."""
    root = {"urn": STACK_URN, "type": "pulumi:pulumi:Stack", "custom": False}
    state = {**pending(("creating", COMMAND)), "resources": [root]}
    commands = recover.plan(state, "dev", {}, {}, "imports.json")
    assert commands[-1] == ["pulumi", "refresh", "--yes", "--stack", "dev", "--clear-pending-creates", "--target",
                            STACK_URN]
