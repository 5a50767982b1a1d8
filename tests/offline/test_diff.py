"""Day-two changes: for each change a user makes (and `pulumi up --replace` of each step), the offline preview
diff predicts op, order and reasons; then the steps run in the engine's order for that diff against the stateful
stand-in az (tests/support/lifecycle.py, tests/support/fake_world.py) from a deployed base, and the end state must equal
a fresh deploy of the new configuration and hold exactly the stack's objects: one datasource per uid with the new
definition, the dashboard, one managed private endpoint, approved and refreshed, on the PLS the release names.
SIMULATED: Azure, Grafana and the engine's executor; the scripts are real.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from offline import canned, consequences, deployed_world, diff_text, engine, program, replacement
from offline import diff as plan_diff
from offline.program import run
from stack.specs import private_link_policy_spec
from tests.support import ROOT, fake_world, reference
from tests.support.day_two_cases import CHANGES, GRACE_PATH, REPLACE_WITH_APPROVAL, settings
from tests.support.day_two_cases import dashboards as make_dashboards
from tests.support.lifecycle import DASHBOARD_URL, OWNER_KEY, Deployment, EngineError, comparable, uploaded
from tests.support.plans import without_references


@dataclass
class Outcome:
    diff: plan_diff.Diff
    head: dict
    changed: Optional[Deployment] = None
    error: Optional[str] = None



#: One xdist worker runs this module: its lifecycle fixture plays every change (a minute), once per run.
pytestmark = pytest.mark.xdist_group("offline-diff-lifecycle")


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory):
    """Every change predicted (sequentially: the SDK's mocks are per process) and applied to a copy of one
    deployed base (concurrently: the scripts mostly wait on subprocesses). name -> Outcome."""
    tmp = tmp_path_factory.mktemp("lifecycle")
    dashboards = make_dashboards(tmp)
    downloads = {url: path for url, (path, _) in dashboards.items()}
    base_plan = run("dev")
    base = base_plan.to_json()
    deployed = Deployment(tmp / "base", downloads)
    deployed.deploy(base)
    names = {r.name: r.urn for r in base_plan.resources}
    outcomes = {}
    for change in CHANGES:
        sets = settings(change, dashboards)
        diff, known = plan_diff.preview(base, lambda pending, sets=sets: run("dev", sets, pending=pending),
                                        [names[t] for t in change.targets])
        outcomes[change.name] = Outcome(diff, known.to_json())

    def simulate(name: str) -> None:
        outcome = outcomes[name]
        try:
            outcome.changed = deployed.copy(tmp / name / "changed")
            outcome.changed.apply(outcome.diff, outcome.head)
        except EngineError as error:
            outcome.error = str(error)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(simulate, outcomes))
    return {"base": base, "deployed": deployed, "outcomes": outcomes, "dashboards": dashboards}


@pytest.mark.parametrize("change", CHANGES, ids=[c.name for c in CHANGES])
def test_predicted_diff(change, lifecycle):
    diff = lifecycle["outcomes"][change.name].diff
    for step in diff.steps:
        if step.name not in change.expect:
            assert step.op == "same", (step.name, step.op, step.reasons, step.diffs)
            continue
        op, order, reasons, paths = change.expect[step.name]
        assert (step.op, step.replace_order) == (op, order), (step.name, step.reasons)
        for reason in reasons:
            assert any(reason in r for r in step.reasons), (step.name, reason, step.reasons)
        assert set(paths) <= {d["path"] for d in step.diffs}, (step.name, step.diffs)
    assert {s.name for s in diff.steps if s.op != "same"} == set(change.expect)


@pytest.mark.parametrize("change", CHANGES, ids=[c.name for c in CHANGES])
def test_end_state(change, lifecycle):
    """Exactly the new configuration's objects, each as a fresh deploy of it would make them (the base
    deployment is that fresh deploy for the base configuration, checked by the same function)."""
    outcome = lifecycle["outcomes"][change.name]
    assert outcome.error is None, outcome.error
    assert_holds_exactly(outcome.changed, outcome.head, lifecycle["dashboards"])


def test_the_base_deployment_holds_exactly_the_base(lifecycle):
    assert_holds_exactly(lifecycle["deployed"], lifecycle["base"], lifecycle["dashboards"])


def assert_holds_exactly(deployment: Deployment, plan: dict, dashboard_files: dict) -> None:
    world = deployment.world()
    head = {r["urn"].rsplit("::", 1)[-1]: r for r in plan["resources"]}
    # One datasource per uid, holding the new definition; nothing else in any Grafana.
    wanted = {}
    for name in ("grafana-datasources-pyroscope", "grafana-datasources-prometheus"):
        env = head[name]["inputs"]["environment"]
        definition = json.loads(env["DATASOURCE"])
        wanted[(env["GRAFANA_ENDPOINT"].split("//", 1)[1], definition["uid"])] = definition
    stored = {(host, uid): ds for host, g in world["grafana"].items() for uid, ds in g["datasources"].items()}
    assert set(stored) == set(wanted)
    for key, definition in wanted.items():
        assert {k: stored[key][k] for k in definition if k != "jsonData"} == {k: v for k,
                                                                              v in definition.items()
                                                                              if k != "jsonData"}
        assert {k: v for k, v in stored[key]["jsonData"].items() if k != OWNER_KEY} == definition["jsonData"]
    # The dashboard, under its uid, and no other, with the content the step uploads from its source.
    upload = head["gpu-dashboard-upload"]["inputs"]["environment"]
    host = upload["GRAFANA_ENDPOINT"].split("//", 1)[1]
    dashboards = {(h, uid) for h, g in world["grafana"].items() for uid in g["dashboards"]}
    assert dashboards == {(host, upload["DASHBOARD_UID"])}
    source = json.loads(Path(dashboard_files[upload["DASHBOARD_SOURCE"]][0]).read_bytes())
    expected = uploaded(source, json.loads(upload["DATASOURCES"]), upload["DASHBOARD_PROFILE_TYPE"])
    assert comparable(world["grafana"][host]["dashboards"][upload["DASHBOARD_UID"]]) == comparable(expected)
    # One managed private endpoint, approved and refreshed, the only connection on the one PLS the release names.
    mpe = head["grafana-private-link-mpe"]["inputs"]
    assert [(m["endpoint"], m["status"], bool(m["ip"])) for m in world["mpes"].values()] == [
        (f"grafana-{mpe['workspaceName']}-{mpe['managedPrivateEndpointName']}", "Approved", True)]
    assert list(world["pls"]) == [mpe["privateLinkResourceId"].lower()]
    (pls,) = world["pls"].values()
    assert [(c["endpoint"].rsplit("/", 1)[1], c["status"]) for c in pls["connections"]] == [
        (f"grafana-{mpe['workspaceName']}-{mpe['managedPrivateEndpointName']}", "Approved")]
    # The ARM resources and the Helm release the plan declares (a shared role assignment: the one its step ensures),
    # and nothing else; no orphaned PLS.
    ensured = {fake_world.arm_key(ROLE_TYPE, {"roleAssignmentName": r["inputs"]["environment"]["ASSIGNMENT_NAME"],
                                              "scope": r["inputs"]["environment"]["SCOPE"]})
               for r in plan["resources"] if r["type"] == "command:local:Command"
               and r["inputs"]["create"] == "bash steps/ensure_role_assignment.sh"}
    assert set(world["arm"]) == ensured | {deployment.arm_key(r["type"], r["inputs"]) for r in plan["resources"]
                                           if r["type"].startswith("azure-native:") and r["custom"]}
    (resource,) = [r for r in plan["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release"]
    release = resource["inputs"]
    key = fake_world.release_key(plan["outputs"]["clusterId"], release["namespace"], release["name"])
    assert list(world["releases"]) == [key]
    # The claim template's size and class are ignoreChanges: the release keeps those of its first install.
    installed = engine.process_ignore_changes(release, {**release, "values": world["releases"][key]["values"]},
                                              resource["options"].get("ignoreChanges") or [])
    assert world["releases"][key] == {"version": release["version"], "values": installed["values"]}
    # The PLS is the one AKS made for the stack's private link Service, the only LoadBalancer (no chart Service has a
    # frontend), and the cloud provider refused nothing on the way.
    (service,) = [r["inputs"]["metadata"] for r in plan["resources"] if r["name"] == "pyroscope-private-link"]
    service_key = fake_world.release_key(plan["outputs"]["clusterId"], service["namespace"], service["name"])
    assert world["services"] == {service_key: pls["frontend"]}
    assert pls["tags"]["k8s-azure-owner-service"] == "gadget/pyroscope-private-link"
    assert world["events"] == []
    # The claims are the plan's, each at its size and class.
    assert {key: (claim["size"], claim["class"]) for key, claim in world["claims"].items()} == {
        fake_world.release_key(plan["outputs"]["clusterId"], c["metadata"]["namespace"], c["metadata"]["name"]):
            (c["spec"]["resources"]["requests"]["storage"], c["spec"]["storageClassName"])
        for c in (r["inputs"] for r in plan["resources"] if r["type"] == "kubernetes:core/v1:PersistentVolumeClaim")}
    # Grafana's connections come from the PLS's NAT IPs as the world has them now: the NAT NetworkPolicy admits exactly
    # those, as many as the Service's annotations ask for.
    addresses = deployment.world_nat_addresses(plan)
    assert len(addresses) == int(service["annotations"][canned.PLS_COUNT_ANNOTATION])
    assert deployment.nat_policy_spec() == private_link_policy_spec(addresses)


def test_the_mpe_rename_done_criterion(tmp_path):
    """`--replace` of the MPE: replace/delete-first with a reason, approval and refresh replaced after it;
    the dev plan's MPE is deleteBeforeReplace with a replaceWith option."""
    base = tmp_path / "base.json"

    def plan(*args):
        done = subprocess.run([sys.executable, "-m", "offline.plan", "--stack", "dev", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    base.write_text(plan("--json"))
    mpe = next(r for r in json.loads(base.read_text())["resources"]
               if r["type"] == "azure-native:dashboard:ManagedPrivateEndpoint")
    assert mpe["options"]["deleteBeforeReplace"] is True and mpe["options"]["replaceWith"]
    result = json.loads(plan("--set", "managedPrivateEndpointName=pyro-mpe2", "--diff-against", str(base), "--json"))
    assert set(result) == {"summary", "steps", "order", "previewOnly", "warnings", "errors"}
    # the refresh reads the MPE's creation time (its triggers), so it goes with the MPE's delete-first replacement too
    # A renamed endpoint, a new nonce first (its step's ENDPOINT moved), then the endpoint's delete-first chain.
    assert [(a["kind"], a["urn"].rsplit("::", 1)[-1]) for a in result["order"]][:5] == [
        ("update", "grafana-private-link-approval-nonce"), ("delete", "grafana-private-link-approve-connection"),
        ("delete", "grafana-private-link-refresh"),
        ("delete", "grafana-private-link-mpe"), ("create-replacement", "grafana-private-link-mpe")]
    # A newcomer's reading: the endpoint re-created cuts Grafana off from Pyroscope for minutes, now said.
    assert result["previewOnly"] == [] and result["errors"] == []
    assert result["warnings"] == [consequences.ENDPOINT_RECREATED]
    steps = {s["urn"].rsplit("::", 1)[-1]: s for s in result["steps"]}
    assert steps["grafana-private-link-mpe"]["op"] == "replace"
    assert steps["grafana-private-link-mpe"]["replaceOrder"] == "delete-first"
    assert any("managedPrivateEndpointName" in r for r in steps["grafana-private-link-mpe"]["reasons"])
    order = [s["urn"].rsplit("::", 1)[-1] for s in result["steps"]]
    for after in ("grafana-private-link-approve-connection", "grafana-private-link-refresh"):
        assert steps[after]["op"] == "replace"
        assert order.index(after) > order.index("grafana-private-link-mpe")
    assert result["summary"] == {"create": 0, "update": 2, "replace": 3, "delete": 0, "read": 0,
                                 "same": len(result["steps"]) - 5}
    text = plan("--set", "managedPrivateEndpointName=pyro-mpe2", "--diff-against", str(base))
    assert "OFFLINE ESTIMATE" in text and "not the cloud's answer" in text
    assert (f"Resources: + 0 to create, ~ 2 to update, +-3 to replace, - 0 to delete, "
            f"{len(result['steps']) - 5} unchanged") in text
    assert text.index("Replacements:") < text.index("Updates:")
    engine = text.split("Engine order (pulumi up):", 1)[1]
    assert (engine.index("delete             grafana-private-link-mpe")
            < engine.index("create-replacement grafana-private-link-mpe")
            < engine.index("create-replacement grafana-private-link-approve-connection")
            < engine.index("create-replacement grafana-private-link-refresh"))


def test_a_pls_rename_by_service_update_is_refused_by_the_cloud_provider(lifecycle, tmp_path):
    """Why the PLS identity's annotations replace the Service, as the stand-in sees it: updated in place, the
    Service's azure-pls-name changes; the cloud provider finds the Service's PLS by its load balancer frontend
    and refuses the rename ("cannot change existing private link service name (old) to (new)",
    kubernetes-sigs/cloud-provider-azure azure_privatelinkservice_test.go TestGetPrivateLinkServiceName), so the old PLS
    stays, connection and all, and the wait for the new name never ends."""
    outcome = lifecycle["outcomes"]["pls-name"]
    head = {r["urn"].rsplit("::", 1)[-1]: r for r in outcome.head["resources"]}
    deployment = lifecycle["deployed"].copy(tmp_path / "old-program")
    before = deployment.world()["pls"]
    deployment._update(head["pyroscope-private-link"], outcome.head)  # an update in place instead of the replacement
    world = deployment.world()
    assert world["pls"] == before  # the same PLS, name, frontend and the approved connection on it
    # getPrivateLinkServiceName's error, which reconcilePrivateLinkService returns as it is (no wrapping)
    assert world["events"] == [
        "getPrivateLinkServiceName(gadget/pyroscope-private-link) failed: cannot change existing private link "
        "service name (pyroscope-pls) to (pyroscope-pls-2)"]
    with pytest.raises(EngineError, match="private link service pyroscope-pls-2 did not appear"):
        deployment._create(head["grafana-private-link-wait-for-pls"], outcome.head)


def test_a_pls_resource_group_change_by_service_update_would_orphan_the_old_pls(lifecycle, tmp_path):
    """What an in-place upgrade would do with a new azure-pls-resource-group: the cloud provider looks the Service's PLS
    up in the annotated group only (kubernetes-sigs/cloud-provider-azure pkg/provider/azure_privatelinkservice.go
    reconcilePrivateLinkService, plsRepo.Get with getPLSResourceGroup; pkg/provider/privatelinkservice/cache.go lists
    that group; @ 7b31c76c), finds nothing there, refuses nothing and creates a second PLS; when the Service then goes,
    only the PLS in its annotated group is deleted, and the old one is orphaned."""
    outcome = lifecycle["outcomes"]["pls-resource-group"]
    head = {r["urn"].rsplit("::", 1)[-1]: r for r in outcome.head["resources"]}
    deployment = lifecycle["deployed"].copy(tmp_path / "old-program")
    (old,) = deployment.world()["pls"].values()
    deployment._update(head["pyroscope-private-link"], outcome.head)
    world = deployment.world()
    assert world["events"] == [] and len(world["pls"]) == 2
    new = world["pls"][fake_world.pls_id("rg-network", outcome.head["outputs"]["privateLinkServiceName"],
                                         canned.SUBSCRIPTION_ID).lower()]
    assert new["frontend"] == old["frontend"] and new["connections"] == []
    deployment._delete(head["pyroscope-private-link"]["urn"], deployment.states[head["pyroscope-private-link"]["urn"]])
    assert list(deployment.world()["pls"]) == [old["id"].lower()]  # orphaned: no Service names it any more


def test_a_pls_resource_group_change_ends_with_one_pls_in_the_new_group(lifecycle):
    """The product's way: the identity replaces the Service, delete-first, so the old Service goes with its old
    annotations (its PLS, looked up in the old group, is deleted) before the new one gets its PLS in the new group."""
    outcome = lifecycle["outcomes"]["pls-resource-group"]
    assert outcome.error is None, outcome.error
    world = outcome.changed.world()
    (pls,) = world["pls"].values()
    assert fake_world.in_group(pls, "rg-network", canned.SUBSCRIPTION_ID)
    assert pls["id"].lower() == fake_world.pls_id("rg-network", outcome.head["outputs"]["privateLinkServiceName"],
                                                  canned.SUBSCRIPTION_ID).lower()
    assert [c["status"] for c in pls["connections"]] == ["Approved"] and world["events"] == []


def test_the_private_link_service_is_replaced_when_its_pls_annotations_change(plan):
    """The private link Service lists the PLS's name and resource group annotations in replace_on_changes (the engine's
    path syntax, as pulumi-kubernetes writes its detailed diff); the release lists only what a StatefulSet update
    refuses (persistence turned on or off) and the mode, never the PLS; read from the registration here, and recorded
    in the plan (D14)."""
    from components import pyroscope

    assert pyroscope.PLS_IDENTITY_PATHS == (
        'metadata.annotations["service.beta.kubernetes.io/azure-pls-name"]',
        'metadata.annotations["service.beta.kubernetes.io/azure-pls-resource-group"]')
    seen = {}
    original = program.RecordingMonitor.RegisterResource

    def record(self, request):
        seen[request.name] = (list(request.replaceOnChanges), list(request.ignoreChanges))
        return original(self, request)

    program.RecordingMonitor.RegisterResource = record
    try:
        p = plan()
    finally:
        program.RecordingMonitor.RegisterResource = original
    assert seen["pyroscope-private-link"] == (list(pyroscope.PLS_IDENTITY_PATHS), [])
    assert seen["pyroscope-release"] == (["values.pyroscope.persistence.enabled", *pyroscope.MODE_PATHS],
                                         ["values.pyroscope.persistence.size",
                                          "values.pyroscope.persistence.storageClassName"])
    release = next(r for r in p.resources if r.name == "pyroscope-release")
    claim = next(r for r in p.resources if r.name == "pyroscope-data-0")
    assert claim.urn in release.options["replaceWith"] and claim.urn in release.dependencies
    identity = next(r for r in p.resources if r.name == "pyroscope-private-link-identity")
    assert identity.inputs["triggers"] == ["pyroscope-pls", "", "gadget/pyroscope-private-link"]
    for name in ("grafana-private-link-wait-for-pls", "grafana-private-link-mpe"):
        step = next(r for r in p.resources if r.name == name)
        service = next(r for r in p.resources if r.name == "pyroscope-private-link")
        assert step.options["replaceWith"] == sorted([service.urn, identity.urn])
    assert not [r for r in p.resources if r.name == "pyroscope-local-traffic"]


def test_a_create_first_mpe_replacement_is_refused_by_the_provider(lifecycle, tmp_path):
    """Why the MPE is delete-first, as the harness sees it: the same --replace with the MPE create-first (the
    program without the option) fails on azure-native's 'cannot create already existing resource'."""
    outcome = lifecycle["outcomes"]["replace-mpe"]
    steps = [plan_diff.Step(s.urn, s.type, s.op,
                            "create-first" if s.name == "grafana-private-link-mpe" else s.replace_order,
                            s.reasons, s.diffs) for s in outcome.diff.steps]
    old_program = plan_diff.Diff(steps, plan_diff.engine_order(steps, lifecycle["base"], outcome.head))
    deployment = lifecycle["deployed"].copy(tmp_path / "old-program")
    with pytest.raises(EngineError, match="grafana-private-link-mpe: cannot create already existing resource"):
        deployment.apply(old_program, outcome.head)


def test_owner_steps_end_right_in_both_orders(lifecycle, tmp_path):
    """--replace of a datasource and of the dashboard, each forced into the order it does not use: the end state
    still holds the object, with this step's definition."""
    for name in ("replace-pyroscope-datasource", "replace-dashboard"):
        outcome = lifecycle["outcomes"][name]
        flipped = {"delete-first": "create-first", "create-first": "delete-first"}
        steps = [plan_diff.Step(s.urn, s.type, s.op, flipped.get(s.replace_order), s.reasons,
                                s.diffs) for s in outcome.diff.steps]
        other_order = plan_diff.Diff(steps, plan_diff.engine_order(steps, lifecycle["base"], outcome.head))
        deployment = lifecycle["deployed"].copy(tmp_path / name)
        deployment.apply(other_order, outcome.head)
        assert deployment.snapshot() == lifecycle["deployed"].snapshot(), name


def test_secrets_stay_secret_in_the_diff(lifecycle):
    diff = lifecycle["outcomes"]["kubelogin-mode"].diff
    step = diff.step("aks")
    assert step.diffs == [{"path": "kubeconfig", "old": "[secret]", "new": "[secret]"}]
    text = json.dumps(diff.to_json())
    for leaked in ("workloadidentity", "kubelogin", "BEGIN CERTIFICATE", "get-token"):
        assert leaked not in text


def test_a_base_plan_without_fingerprints_shows_secrets_as_changed_and_says_why():
    base = run("dev").to_json()
    del base["secretFingerprints"]
    diff = plan_diff.compute(base, run("dev").to_json())
    provider = diff.step("aks")
    assert provider.op == "update" and provider.diffs == [{"path": "kubeconfig", "old": "[secret]", "new": "[secret]"}]
    assert any("has no fingerprint for this secret" in r for r in provider.reasons)
    # So does the MPE's requestMessage, which carries the approval nonce (create-only: a replacement, and the approval
    # and refresh with it).
    mpe = diff.step("grafana-private-link-mpe")
    assert mpe.op == "replace" and any("has no fingerprint for this secret" in r for r in mpe.reasons), mpe.reasons
    assert {s.name for s in diff.steps if s.op != "same"} == {
        "aks", "aks-claims", "grafana-private-link-mpe", "grafana-private-link-approve-connection",
        "grafana-private-link-refresh"}


def test_secret_fingerprints_are_keyed_per_machine(tmp_path, monkeypatch):
    """An unkeyed sha256 of a secret in a shared plan can be brute-forced; HMAC under a per-machine key cannot be
    tested against guesses without the key, which is created on first use with mode 0600 and stays on the machine."""
    value = "kubeconfig: the secret"
    monkeypatch.setenv(replacement.KEY_DIR_ENV, str(tmp_path / "one"))
    first = replacement.fingerprint(value)
    key_file = tmp_path / "one" / replacement.KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert first == replacement.fingerprint(value)  # the same key on the next use
    assert first != hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
    key_id = replacement.fingerprint_key_id()
    assert key_id not in key_file.read_text()
    monkeypatch.setenv(replacement.KEY_DIR_ENV, str(tmp_path / "two"))
    assert replacement.fingerprint(value) != first and replacement.fingerprint_key_id() != key_id
    plan = run("dev").to_json()
    assert plan["secretFingerprintKey"] == replacement.fingerprint_key_id()
    assert value not in json.dumps(plan)


def test_a_base_plan_from_another_machine_shows_secrets_as_changed_and_says_why(tmp_path, monkeypatch):
    head = run("dev").to_json()
    assert {s.name for s in plan_diff.compute(run("dev").to_json(), head).steps if s.op != "same"} == set()
    monkeypatch.setenv(replacement.KEY_DIR_ENV, str(tmp_path / "elsewhere"))
    base = run("dev").to_json()
    assert base["secretFingerprintKey"] != head["secretFingerprintKey"]
    diff = plan_diff.compute(base, head)
    provider = diff.step("aks")
    assert provider.op == "update" and provider.diffs == [{"path": "kubeconfig", "old": "[secret]", "new": "[secret]"}]
    assert any("keyed on another machine" in r for r in provider.reasons), provider.reasons
    # The MPE's requestMessage (it carries the approval nonce) is a secret too: replaced, with the approval and refresh.
    assert {s.name for s in diff.steps if s.op != "same"} == {
        "aks", "aks-claims", "grafana-private-link-mpe", "grafana-private-link-approve-connection",
        "grafana-private-link-refresh"}
    assert any("keyed on another machine" in w for w in plan_diff._warnings(base, head))


def test_a_changed_cluster_replaces_the_kubernetes_provider_and_the_release():
    """pulumi-kubernetes DiffConfig: a kubeconfig whose active cluster changes replaces the provider, and a
    resource whose provider is replaced is replaced with it: the namespace (first registered, delete-first), whose
    delete-first replacement deletes the release before it (replaceWith) and re-creates it afterwards."""
    base = run("dev").to_json()
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {"clusterName": "aks-gpu-dev2"}, pending=pending))
    provider = diff.step("aks")
    assert provider.op == "replace" and any("active cluster" in r for r in provider.reasons)
    namespace = diff.step("gadget-namespace")
    assert (namespace.op, namespace.replace_order) == ("replace", "delete-first")
    assert any("provider aks is replaced" in r for r in namespace.reasons)
    release = diff.step("pyroscope-release")
    assert (release.op, release.replace_order) == ("replace", "delete-first")
    assert any("the engine deletes it before gadget-namespace" in r for r in release.reasons)
    kinds = [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order]
    assert kinds.index(("delete", "pyroscope-release")) < kinds.index(("delete", "gadget-namespace")) \
        < kinds.index(("create-replacement",
                       "gadget-namespace")) < kinds.index(("create-replacement", "pyroscope-release"))


def test_outputs_of_updated_resources_are_taken_as_known():
    """docs/offline.md D8 (a divergence): a created Grafana that is only updated keeps its outputs known here, so the
    datasources that read its endpoint stay unchanged; a real preview may show them unknown."""
    settings = {"createGrafana": "true"}
    base = run("dev", settings).to_json()
    changed = {**settings, "grafanaPublicNetworkAccess": "Disabled"}
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", changed, pending=pending))
    assert diff.step("managed-grafana-workspace").op == "update"
    assert {s.name for s in diff.steps if s.op != "same"} == {"managed-grafana-workspace"}


def test_removed_resources_and_bad_input():
    base = run("dev").to_json()
    diff = plan_diff.compute(base, run("dev", {"assignMonitoringDataReader": "false"}).to_json())
    role = diff.step("grafana-datasources-monitoring-data-reader")
    assert role.op == "delete" and diff.order[-1].urn == role.urn and diff.order[-1].kind == "delete"
    with pytest.raises(ValueError, match="names 2 resources"):
        plan_diff.Diff([plan_diff.Step("a::x", "t", "same"), plan_diff.Step("b::x", "t", "same")], []).step("x")


@pytest.mark.parametrize("args,line", [
    (["--replace", "x"], "error: --replace: needs --diff-against BASE.json"),
    (["--diff-against", "/nonexistent.json"], "error: --diff-against: cannot read /nonexistent.json"),
    (["--diff-against", "/nonexistent.json", "--policy"], "error: --policy: run it on the plan itself"),
])
def test_diff_usage_errors(args, line, capsys):
    from offline import plan as plan_tool

    assert plan_tool.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and len(err.splitlines()) == 1, err


def test_diff_refuses_an_unknown_replace_target_and_a_non_plan(tmp_path):
    from offline import plan as plan_tool

    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("dev").to_json()))
    assert plan_tool.main(["--diff-against", str(base), "--replace", "nosuch"]) == 2
    (tmp_path / "not-a-plan.json").write_text("{}")
    assert plan_tool.main(["--diff-against", str(tmp_path / "not-a-plan.json")]) == 2


def test_mermaid_marks_changed_nodes(tmp_path, capsys):
    from offline import plan as plan_tool

    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("dev").to_json()))
    assert plan_tool.main(["--set", "managedPrivateEndpointName=pyro-mpe2", "--diff-against", str(base), "--graph",
                           "mermaid"]) == 0
    graph = capsys.readouterr().out
    assert graph.startswith("graph TD")
    assert ("+- grafana-private-link-mpe (delete-first)<br/>" in graph
            and "~ grafana-datasources-pyroscope<br/>" in graph)
    node = next(line.split("[")[0].strip() for line in graph.splitlines() if "+- grafana-private-link-mpe" in line)
    assert f"class {node} replace" in graph and "classDef replace " in graph


def _plan(resources: list[dict]) -> dict:
    """A plan JSON of ``resources`` (name, type, inputs, and optional deps/options), in the given order."""
    def urn(name, type_):
        return f"urn:pulumi:dev::p::{type_}::{name}"

    packages = sorted({r["type"].split(":")[0] for r in resources})
    out = [{"urn": urn("default", f"pulumi:providers:{p}"), "type": f"pulumi:providers:{p}", "name": "default",
            "custom": True, "parent": None, "provider": None, "inputs": {}, "dependencies": [],
            "propertyDependencies": {},
            "options": {"protect": False, "deleteBeforeReplace": False, "retainOnDelete": False, "ignoreChanges": [],
                        "customTimeouts": None, "replaceWith": []}} for p in packages]
    for r in resources:
        options = {"protect": False, "deleteBeforeReplace": bool(r.get("dbr")), "retainOnDelete": False,
                   "ignoreChanges": [], "customTimeouts": None, "replaceWith": [urn(n, t) for n,
                                                                                t in r.get("replace_with", [])]}
        deps = {k: [urn(n, t) for n, t in v] for k, v in r.get("property_deps", {}).items()}
        out.append({"urn": urn(r["name"], r["type"]), "type": r["type"], "name": r["name"], "custom": True,
                    "parent": None,
                    "provider": urn("default", "pulumi:providers:" + r["type"].split(":")[0]), "inputs": r["inputs"],
                    "dependencies": sorted({u for v in deps.values() for u in v}),
                    "propertyDependencies": deps, "options": options})
    order = [r["urn"] for r in out]
    return {"project": "p", "stack": "dev", "resources": out, "createOrder": order, "destroyOrder": order[::-1],
            "outputs": {}, "invokes": []}


MPE_T, CMD_T = "azure-native:dashboard:ManagedPrivateEndpoint", "command:local:Command"


def test_a_dependent_replaced_for_its_own_reasons_is_not_deleted_before_the_root():
    """step_generator.go calculateDependentReplacements: a dependent goes into a delete-first chain only when its
    provider's Diff, with the inputs that come from the root made unknown, asks for a replacement. Here the command's
    input from the MPE is its environment (an update), so although the command is replaced anyway (its own trigger
    changed), it is not deleted before the MPE: it is replaced create-first when it is registered, its old copy
    deleted at the end. (The earlier model put every replaced dependent in the chain.)"""
    def plan(mpe_name, trigger):
        return _plan([
            {"name": "mpe", "type": MPE_T, "dbr": True, "inputs": {"managedPrivateEndpointName": mpe_name}},
            {"name": "step", "type": CMD_T, "inputs": {"environment": {"MPE": mpe_name}, "triggers": [trigger]},
             "property_deps": {"environment": [("mpe", MPE_T)]}},
        ])
    head = plan("b", "t2")
    diff = plan_diff.compute(plan("a", "t1"), head,
                             property_dependencies={r["urn"]: r["propertyDependencies"] for r in head["resources"]})
    assert (diff.step("mpe").op, diff.step("mpe").replace_order) == ("replace", "delete-first")
    assert (diff.step("step").op, diff.step("step").replace_order) == ("replace", "create-first")
    assert [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order] == [
        ("delete", "mpe"), ("create-replacement", "mpe"), ("create-replacement", "step"), ("delete", "step")]


def test_a_dependent_whose_trigger_comes_from_the_root_is_deleted_first_and_says_why():
    """The same program with the MPE in the command's triggers: the provider's Diff with that input unknown replaces
    (triggers are replaceOnChanges), so the engine deletes the command before the MPE and re-creates it after."""
    def plan(mpe_name):
        return _plan([
            {"name": "mpe", "type": MPE_T, "dbr": True, "inputs": {"managedPrivateEndpointName": mpe_name}},
            {"name": "step", "type": CMD_T, "inputs": {"triggers": [mpe_name]},
             "property_deps": {"triggers": [("mpe", MPE_T)]}},
        ])
    diff = plan_diff.compute(plan("a"), plan("b"))
    assert [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order] == [
        ("delete", "step"), ("delete", "mpe"), ("create-replacement", "mpe"), ("create-replacement", "step")]
    step = diff.step("step")
    assert step.replace_order == "delete-first"
    assert any("come from a replaced resource" in r and "before mpe" in r for r in step.reasons), step.reasons
    assert diff.order[0].note.startswith("its inputs triggers come from a replaced resource")


def test_nested_outputs_of_a_resource_being_replaced_are_unknown_at_preview():
    """azure-native's PreviewOutputs (provider/pkg/convert/previewOutputs.go @ 604cfd52) echoes an object input
    only where the input has the property: a created Grafana being replaced has identity.type but not
    identity.principalId, so the Monitoring Data Reader assignment's principalId (create-only: forceNewMap) is
    unknown in the preview and the assignment is replaced with it."""
    settings = {"createGrafana": "true"}
    base = run("dev", settings).to_json()
    grafana = next(r["urn"] for r in base["resources"] if r["type"] == "azure-native:dashboard:Grafana")
    previewed = run("dev", {**settings, "azure-native:location": "northeurope"}, pending={grafana}).to_json()
    role = next(r for r in previewed["resources"] if r["name"] == "grafana-datasources-monitoring-data-reader")
    assert role["inputs"]["principalId"] == "[unknown]"
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {**settings, "azure-native:location": "northeurope"},
                                                          pending=pending))
    step = diff.step("grafana-datasources-monitoring-data-reader")
    assert (step.op, step.replace_order) == ("replace", "delete-first")


# --- the Monitoring Data Reader assignment a multi-cluster stack is told to make -------------------------------------
MULTI_ROLE = {"multiCluster": "true", "assignMonitoringDataReader": "true"}
ROLE_TYPE = "azure-native:authorization:RoleAssignment"


def role_assignments(deployment: Deployment) -> list[dict]:
    """The role assignments in the world (ARM): made by azure-native or by ``az role assignment create``."""
    return [v for k, v in deployment.world()["arm"].items() if k.startswith(ROLE_TYPE + " ")]


def test_a_retained_delete_first_role_assignment_cannot_be_replaced(lifecycle, tmp_path):
    """The fault as the harness sees it: the engine skips the provider Delete of a retained resource even inside a
    replacement (pulumi/pulumi v3.230.0 pkg/resource/deploy/step.go DeleteStep.Apply), so the assignment the program
    made with multiCluster before (retainOnDelete and deleteBeforeReplace, a derived fixed name), replaced by
    `pulumi up --replace`, is created again while it still exists, and azure-native refuses."""
    base = copy.deepcopy(lifecycle["base"])
    role = next(r for r in base["resources"] if r["name"] == "grafana-datasources-monitoring-data-reader")
    role["options"]["retainOnDelete"] = True  # as that program registered it, with the same inputs
    deployment = lifecycle["deployed"].copy(tmp_path / "retained")
    deployment.states[role["urn"]]["options"] = role["options"]
    diff = plan_diff.compute(base, base, [role["urn"]])
    assert (diff.step(role["urn"]).op, diff.step(role["urn"]).replace_order) == ("replace", "delete-first")
    with pytest.raises(EngineError,
                       match="grafana-datasources-monitoring-data-reader: cannot create already existing resource"):
        deployment.apply(diff, base)
    assert any(a.startswith("forget ") and role["urn"] in a for a in deployment.actions), deployment.actions[-3:]


def test_replacing_the_shared_role_assignment_converges_and_destroy_keeps_it(lifecycle, tmp_path):
    """multiCluster with assignMonitoringDataReader true: `pulumi up --replace` of what makes the assignment ends with
    the assignment in place and the stack as a fresh deploy leaves it; `pulumi destroy` empties the state and keeps
    the assignment (other clusters' Prometheus datasources rely on it)."""
    base = run("dev", MULTI_ROLE).to_json()
    downloads = {url: path for url, (path, _) in lifecycle["dashboards"].items()}
    deployment = Deployment(tmp_path / "multi", downloads)
    deployment.deploy(base)
    assert_holds_exactly(deployment, base, lifecycle["dashboards"])
    (role,) = [r for r in base["resources"] if r["name"].endswith("monitoring-data-reader")]
    diff, known = plan_diff.preview(base, lambda pending: run("dev", MULTI_ROLE, pending=pending), [role["urn"]])
    assert {s.name for s in diff.steps if s.op != "same"} == {role["name"]}
    head = known.to_json()
    deployment.apply(diff, head)
    assert_holds_exactly(deployment, head, lifecycle["dashboards"])
    (kept,) = role_assignments(deployment)
    deployment.destroy(head)
    assert deployment.states == {}
    assert role_assignments(deployment) == [kept]


def _old_multi_cluster_program(head: dict, single: dict) -> dict:
    """The plan of ``head`` (multiCluster, assignMonitoringDataReader true) as the program before the shared step
    registered it: the azure-native assignment, retainOnDelete and deleteBeforeReplace, in place of the step."""
    (step,) = [r for r in head["resources"] if r["name"] == "grafana-datasources-shared-monitoring-data-reader"]
    old = copy.deepcopy(next(r for r in single["resources"]
                             if r["name"] == "grafana-datasources-monitoring-data-reader"))
    old["options"]["retainOnDelete"] = True
    plan = copy.deepcopy(head)
    plan["resources"] = [old if r["urn"] == step["urn"] else r for r in plan["resources"]]
    for order in ("createOrder", "destroyOrder"):
        plan[order] = [old["urn"] if u == step["urn"] else u for u in plan[order]]
    return plan


def test_the_first_up_after_upgrading_keeps_the_shared_assignment(lifecycle, tmp_path):
    """A multi-cluster stack deployed by the program before (the retained azure-native assignment in its state): the
    new program no longer registers it, so the engine forgets it (its recorded retainOnDelete) and the step finds the
    assignment in place (az's answer to RoleAssignmentExists). One assignment, kept, and the state holds the step."""
    head = run("dev", MULTI_ROLE).to_json()
    base = _old_multi_cluster_program(head, lifecycle["base"])
    downloads = {url: path for url, (path, _) in lifecycle["dashboards"].items()}
    deployment = Deployment(tmp_path / "upgrade", downloads)
    deployment.deploy(base)
    (before,) = role_assignments(deployment)
    diff = plan_diff.compute(base, head)
    changed = {s.name: s.op for s in diff.steps if s.op != "same"}
    assert changed == {"grafana-datasources-shared-monitoring-data-reader": "create",
                       "grafana-datasources-monitoring-data-reader": "delete"}
    deployment.apply(diff, head)
    assert role_assignments(deployment) == [before]
    assert_holds_exactly(deployment, head, lifecycle["dashboards"])
    assert not any(r.endswith("::grafana-datasources-monitoring-data-reader") for r in deployment.states)


def test_the_shared_step_prints_its_principals_assignment_when_another_principal_holds_the_role_first(lifecycle,
                                                                                                      tmp_path):
    """offline.md L8: az's answer to RoleAssignmentExists is the first assignment of the role on the
    scope, whoever's (Azure/azure-cli role/custom.py @ 01ce0346, ``list_role_assignments`` with assignee None under
    ``--assignee-object-id``). Another principal holding the role on the workspace first, the step still ends with
    Grafana's own assignment (read with ``az role assignment list --assignee-object-id``), and creates nothing."""
    head = run("dev", MULTI_ROLE).to_json()
    base = _old_multi_cluster_program(head, lifecycle["base"])
    downloads = {url: path for url, (path, _) in lifecycle["dashboards"].items()}
    deployment = Deployment(tmp_path / "other-first", downloads)
    deployment.deploy(base)
    (ours,) = role_assignments(deployment)
    other = "d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6"
    world = deployment.world()
    fake_world.answer(["role", "assignment", "create", "--assignee-object-id", other, "--assignee-principal-type",
                       "User",
                       "--role", ours["roleDefinitionId"], "--scope", ours["scope"],
                       "--name", "00000000-0000-4000-8000-000000000001"], world)
    deployment._save(world)
    first = fake_world.answer(["role", "assignment", "create", "--assignee-object-id", ours["principalId"],
                               "--role", ours["roleDefinitionId"], "--scope", ours["scope"]], deployment.world())
    assert first["json"]["principalId"] == other  # the stand-in answers as that azure-cli does
    deployment.apply(plan_diff.compute(base, head), head)
    (step,) = [u for u in deployment.states if u.endswith("::grafana-datasources-shared-monitoring-data-reader")]
    assert deployment.states[step]["stdout"].endswith("/roleAssignments/" + ours["roleAssignmentName"])
    assert sorted(a["principalId"] for a in role_assignments(deployment)) == sorted([other, ours["principalId"]])


def test_turning_multi_cluster_on_with_the_role_forget_the_owned_assignment_first(lifecycle, tmp_path):
    """A single-cluster stack owns its assignment (no retainOnDelete). Turned into a multi-cluster one that keeps
    assigning the role, the step ensures the assignment and the engine then deletes the owned resource it no longer
    registers (deletes of removed resources come last): the assignment is gone. `pulumi state delete` of the owned
    resource first (docs/platform.md) leaves it to the step, kept."""
    settings = {**MULTI_ROLE}
    diff, known = plan_diff.preview(lifecycle["base"], lambda pending: run("dev", settings, pending=pending))
    head = known.to_json()
    role = diff.step("grafana-datasources-monitoring-data-reader")
    kinds = [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order]
    assert role.op == "delete" and kinds.index(("delete", role.name)) > kinds.index(
        ("create", "grafana-datasources-shared-monitoring-data-reader"))
    plain = lifecycle["deployed"].copy(tmp_path / "plain")
    plain.apply(diff, head)
    assert role_assignments(plain) == []
    forgotten = lifecycle["deployed"].copy(tmp_path / "forgotten")
    del forgotten.states[role.urn]  # pulumi state delete <urn>: out of the state, left in Azure
    base = copy.deepcopy(lifecycle["base"])
    base["resources"] = [r for r in base["resources"] if r["urn"] != role.urn]
    for order in ("createOrder", "destroyOrder"):
        base[order] = [u for u in base[order] if u != role.urn]
    diff, known = plan_diff.preview(base, lambda pending: run("dev", settings, pending=pending))
    forgotten.apply(diff, known.to_json())
    assert_holds_exactly(forgotten, known.to_json(), lifecycle["dashboards"])
    assert len(role_assignments(forgotten)) == 1


# --- a managed private endpoint deleted by hand, then `pulumi up --refresh` ------------------------------------------
MPE_NAME = "grafana-private-link-mpe"


def as_refreshed(plan: dict, dropped) -> dict:
    """``plan`` (plan JSON) as the state a refresh leaves when it dropped ``dropped`` (URNs): the base of the next
    diff."""
    gone = set(dropped)
    state = copy.deepcopy(plan)
    state["resources"] = [without_references(r, gone) for r in state["resources"] if r["urn"] not in gone]
    for order in ("createOrder", "destroyOrder"):
        state[order] = [u for u in state[order] if u not in gone]
    return state


def test_an_mpe_deleted_by_hand_comes_back_approved_after_refresh_and_up(lifecycle, tmp_path):
    """The endpoint is deleted by hand; `pulumi up --refresh` drops it (ARM 404) and creates it again under the same
    name (the same ARM id), which puts a new Pending connection on the PLS. The approval is keyed on the endpoint's
    creation time, so it and the refresh run again: the new connection ends Approved and the datasource points at
    the endpoint's private IP."""
    deployment = lifecycle["deployed"].copy(tmp_path / "lost-mpe")
    deployment.lose_mpe("rg-observability-dev", "amg-gpu-dev", "pyroscope-mpe")
    dropped = deployment.refresh()
    assert [u.rsplit("::", 1)[-1] for u in dropped] == [MPE_NAME]
    diff, known = plan_diff.preview(as_refreshed(lifecycle["base"], dropped),
                                    lambda pending: run("dev", pending=pending))
    head = known.to_json()
    deployment.apply(diff, head)
    world = deployment.world()
    assert [(m["status"], m["ip"]) for m in world["mpes"].values()] == [("Approved", fake_world.PRIVATE_IP)]
    (pls,) = world["pls"].values()
    assert [c["status"] for c in pls["connections"]] == ["Approved"]
    (grafana,) = world["grafana"].values()
    assert grafana["datasources"]["local-pyroscope"]["url"] == f"http://{fake_world.PRIVATE_IP}:4040"
    assert_holds_exactly(deployment, head, lifecycle["dashboards"])


def test_the_offline_diff_predicts_the_new_approval_after_an_mpe_lost_and_refreshed(lifecycle):
    """Base: the deployed plan without the endpoint (as the refresh leaves the state). The endpoint is created, and its
    creation time (the approval's trigger) is unknown in the preview: the approval is replaced, and the refresh with
    it."""
    mpe = next(r["urn"] for r in lifecycle["base"]["resources"] if r["name"] == MPE_NAME)
    diff, _ = plan_diff.preview(as_refreshed(lifecycle["base"], [mpe]), lambda pending: run("dev", pending=pending))
    changed = {s.name: (s.op, s.replace_order) for s in diff.steps if s.op != "same"}
    assert changed == {MPE_NAME: ("create", None),
                       "grafana-private-link-approve-connection": ("replace", "create-first"),
                       "grafana-private-link-refresh": ("replace", "create-first"),
                       "grafana-datasources-pyroscope": ("update", None)}
    approval = diff.step("grafana-private-link-approve-connection")
    assert any("is unknown during preview (it comes from grafana-private-link-mpe)" in r
               for r in approval.reasons), approval.reasons
    assert any(REPLACE_WITH_APPROVAL in r for r in diff.step("grafana-private-link-refresh").reasons)
    kinds = [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order]
    assert (kinds.index(("create", MPE_NAME))
            < kinds.index(("create-replacement", "grafana-private-link-approve-connection"))
            < kinds.index(("create-replacement", "grafana-private-link-refresh")))


def test_a_plain_rerun_predicts_nothing(lifecycle):
    diff = plan_diff.compute(lifecycle["base"], run("dev").to_json())
    assert diff.summary["same"] == len(diff.steps) and diff.order == []


def test_a_step_left_alone_whose_actual_triggers_changed_is_caught(lifecycle, tmp_path):
    """The harness's own check: the re-created endpoint has a new createdAt in the world (fake_world.next_created_at),
    so at `pulumi up` the approval's triggers differ from those it ran with; a played diff that creates only the
    endpoint (what the offline diff said before the approval was keyed on it) is refused as the engine would not
    leave the approval alone."""
    deployment = lifecycle["deployed"].copy(tmp_path / "stale")
    first = next(iter(deployment.world()["mpes"].values()))["createdAt"]
    deployment.lose_mpe("rg-observability-dev", "amg-gpu-dev", "pyroscope-mpe")
    dropped = deployment.refresh()
    base = as_refreshed(lifecycle["base"], dropped)
    head = run("dev").to_json()
    only_the_endpoint = [plan_diff.Step(s.urn, s.type,
                                        "create" if s.urn in dropped else "same") for s in plan_diff.decide(base, head)]
    with pytest.raises(EngineError, match="grafana-private-link-approve-connection: at `pulumi up` its triggers are"):
        deployment.apply(plan_diff.Diff(only_the_endpoint, plan_diff.engine_order(only_the_endpoint, base, head)), head)
    assert next(iter(deployment.world()["mpes"].values()))["createdAt"] > first


def test_the_first_up_after_keying_the_approval_on_the_endpoint_runs_it_once_more(lifecycle, tmp_path):
    """docs/how-it-works.md, "Upgrading": a stack deployed before the approval's triggers held the endpoint's creation
    time gets the approval and the refresh replaced once (a new trigger), both of which find their work done; the next
    run predicts nothing."""
    old = copy.deepcopy(lifecycle["base"])
    approval = next(r for r in old["resources"] if r["name"] == "grafana-private-link-approve-connection")
    approval["inputs"]["triggers"] = approval["inputs"]["triggers"][:2]  # [script hash, PLS id]
    diff, known = plan_diff.preview(old, lambda pending: run("dev", pending=pending))
    changed = {s.name: (s.op, s.replace_order) for s in diff.steps if s.op != "same"}
    assert changed == {"grafana-private-link-approve-connection": ("replace", "create-first"),
                       "grafana-private-link-refresh": ("replace", "create-first"),
                       "grafana-datasources-pyroscope": ("update", None)}
    deployment = lifecycle["deployed"].copy(tmp_path / "upgrade")
    deployment.states[approval["urn"]]["inputs"] = approval["inputs"]
    deployment.apply(diff, known.to_json())
    assert deployment.snapshot() == lifecycle["deployed"].snapshot()
    assert plan_diff.compute(known.to_json(), run("dev").to_json()).order == []


def test_replacing_a_retained_named_resource_is_refused_in_the_diff():
    """A retainOnDelete azure-native resource replaced under the same name (here by --replace): the engine skips its
    Delete (step.go DeleteStep.Apply), so azure-native's create of the new one meets the old one and refuses. The diff
    says so as an error instead of predicting a clean replacement (the stack no longer has such a resource; this
    keeps it from coming back)."""
    role_t = "azure-native:authorization:RoleAssignment"
    def plan(retain):
        built = _plan([{"name": "role", "type": role_t, "dbr": True,
                        "inputs": {"roleAssignmentName": "fixed", "scope": "/s", "principalId": "p"}}])
        built["resources"][-1]["options"]["retainOnDelete"] = retain
        return built
    retained = plan(True)
    diff = plan_diff.compute(retained, retained, [retained["resources"][-1]["urn"]])
    assert diff.step("role").op == "replace"
    assert diff.errors and "role: replacing it will fail: it is retainOnDelete" in diff.errors[0]
    assert plan_diff.compute(plan(False), plan(False), [plan(False)["resources"][-1]["urn"]]).errors == []
    assert "ERROR: role: replacing it will fail" in diff_text.render_text(diff, "t")


def test_a_replace_with_target_never_registered_is_refused():
    """pulumi/pulumi v3.230.0 snapshot.go VerifyIntegrity: the state an update writes may not name a replaceWith
    target that is missing. The offline engine fails the update with the engine's words, and the offline plan refuses
    such a program before anything else (offline/program.py)."""
    offline = engine.Engine({})

    def program(monitor):
        monitor.register("pkgA:m:typA", "resA", replace_with=["urn:pulumi:test::test::pkgA:m:typA::ghost"])

    result = offline.update(program)
    assert result.error == (
        "snapshot integrity failure: resource urn:pulumi:test::test::pkgA:m:typA::resA is specified "
        "as being replaced with urn:pulumi:test::test::pkgA:m:typA::ghost, which is missing")
    from offline import program
    resource = program.Resource("urn:pulumi:dev::p::t::a", "t", "a", True, None, None, {}, [], {},
                                    replace_with=["urn:pulumi:dev::p::t::ghost"])
    with pytest.raises(program.IntegrityError,
                       match="is specified as being replaced with urn:pulumi:dev::p::t::ghost, which is missing"):
        program._check_integrity([resource], set())


def test_a_location_spelled_another_way_is_no_change():
    """azure-native applyAzureSpecificDiff (provider/pkg/provider/diff.go @ 03707ff7): a top-level location that
    differs only in case and spaces is not a change, so it replaces nothing."""
    def plan(location):
        return _plan([{"name": "mpe", "type": MPE_T, "dbr": True,
                       "inputs": {"managedPrivateEndpointName": "m", "location": location}}])
    assert plan_diff.compute(plan("eastus"), plan("East US")).step("mpe").op == "same"
    assert plan_diff.compute(plan("eastus"), plan("westus")).step("mpe").op == "replace"


def test_a_chain_member_says_why_it_goes_delete_first():
    """The approval goes delete-first because it is in the MPE's chain, not by its own option: its reasons say that
    and never that the option alone decides (the option is not set)."""
    base = run("dev").to_json()
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {"managedPrivateEndpointName": "pyro-mpe2"},
                                                          pending=pending))
    approval = diff.step("grafana-private-link-approve-connection")
    assert approval.replace_order == "delete-first"
    assert any(r.startswith("delete-first: it goes in the delete-first chain of grafana-private-link-mpe")
               for r in approval.reasons)
    assert not any("option alone, which is not set" in r for r in approval.reasons), approval.reasons
    assert not any("may find nothing to do here" in r for s in diff.steps for r in s.reasons if s.op == "replace")


def test_a_stack_reference_is_a_read_not_a_create():
    base = run("dev").to_json()
    head = run("dev", {"clusterStack": "myorg/aks/dev"}).to_json()
    diff = plan_diff.compute(base, head)
    (read,) = [s for s in diff.steps if s.type == "pulumi:pulumi:StackReference"]
    assert read.op == "read" and diff.summary["create"] == 0 and diff.summary["read"] == 1
    assert "1 to read" in diff_text.summary_line(diff)


def test_a_base_of_another_stack_blames_no_setting_and_an_old_base_is_flagged():
    base = run("dev").to_json()
    # Every URN renamed, the references too: a state whose parents named the dev stack's would be refused.
    renamed = json.loads(json.dumps({k: base[k] for k in ("resources", "createOrder", "destroyOrder")}).replace(
        "urn:pulumi:dev::", "urn:pulumi:staging::"))
    other = {**base, "stack": "staging", **renamed}
    diff = plan_diff.compute(other, base)
    assert all(s.reasons == ["not in the new program"] for s in diff.steps if s.op == "delete")
    old = {k: v for k, v in base.items() if k not in ("config", "secretFingerprints")}
    warnings = plan_diff.compute(old, base).warnings
    assert any("older offline.plan (no secretFingerprints, config)" in w for w in warnings), warnings


def test_removing_the_role_assignment_warns_what_grafana_loses():
    """multiCluster on with assignMonitoringDataReader true: the owned assignment's delete removes the very assignment
    the new shared step ensures; the diff warns and names the way out (docs/platform.md)."""
    base = run("dev").to_json()
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {"multiCluster": "true",
                                                                  "assignMonitoringDataReader": "true"},
                                                          pending=pending))
    (warning,) = [w for w in diff.warnings if w.startswith("grafana-datasources-monitoring-data-reader:")]
    assert "the same assignment grafana-datasources-shared-monitoring-data-reader ensures" in warning
    assert "pulumi state delete" in warning
    assert "WARNING: grafana-datasources-monitoring-data-reader" in diff_text.render_text(diff, "t")


@pytest.mark.parametrize("target, message", [
    ("gadget",
     "is a component, and replacing one replaces nothing under it; name the resource to replace: gadget-namespace"),
    ("pyroscope-mpe", "names no resource in this plan (resource names with it: "),
])
def test_replace_names_what_to_give(target, message, tmp_path, capsys):
    from offline import plan as plan_tool
    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("dev").to_json()))
    assert plan_tool.main(["--stack", "dev", "--diff-against", str(base), "--replace", target]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    if "names no resource" in message:
        assert "grafana-private-link-mpe" in err.split("(resource names with it: ", 1)[1]


def _two_clusters(tmp_path: Path, settings: dict) -> tuple[dict, Deployment, Deployment]:
    """Stacks of clusters aks-gpu-a and aks-gpu-b (with ``settings``) and one world for both: the first deployed, the
    second ready to deploy into the same Azure (one Grafana, one PLS resource group)."""
    dashboard = reference("grafana-dashboards/AdvancedGPUObservability.json")
    plans = {name: run("dev", {**settings, "clusterName": name, "clusterResourceGroup": f"rg-{name}"}).to_json()
             for name in ("aks-gpu-a", "aks-gpu-b")}
    first = Deployment(tmp_path / "a", {DASHBOARD_URL: str(dashboard)})
    first.deploy(plans["aks-gpu-a"])
    second = Deployment(tmp_path / "b", {})
    second.world_path = first.world_path
    second.env["FAKE_AZ_WORLD"] = str(first.world_path)
    return plans, first, second


def _endpoint_pls(world: dict, plan: dict) -> dict:
    """The PLS that holds the connection of ``plan``'s managed private endpoint."""
    mpe = next(r["inputs"] for r in plan["resources"] if r["type"] == "azure-native:dashboard:ManagedPrivateEndpoint")
    endpoint = f"grafana-{mpe['workspaceName']}-{mpe['managedPrivateEndpointName']}"
    (pls,) = [p for p in world["pls"].values() if any(c["endpoint"].endswith("/" + endpoint) for c in p["connections"])]
    return pls


def test_two_clusters_in_one_pls_resource_group_each_reach_their_own_pyroscope(tmp_path):
    """Two multiCluster stacks with one privateLinkServiceResourceGroup. Before, both named their PLS pyroscope-pls: the
    second cluster's Service got no PLS (the name was taken), its wait found the first cluster's at once, and its
    endpoint (so its Pyroscope datasource) reached the other cluster's Pyroscope. Now each cluster's endpoint is
    connected to the PLS of its own Service, on its own load balancer."""
    plans, first, second = _two_clusters(tmp_path, {"multiCluster": "true",
                                                    "privateLinkServiceResourceGroup": "rg-network"})
    second.deploy(plans["aks-gpu-b"])
    world = first.world()
    assert world["events"] == [] and len(world["pls"]) == 2
    for plan in plans.values():
        pls = _endpoint_pls(world, plan)
        assert pls["id"].lower() == fake_world.pls_id("rg-network", plan["outputs"]["privateLinkServiceName"],
                                                     canned.SUBSCRIPTION_ID).lower()
        scope = fake_world.load_balancer_scope(plan["outputs"]["clusterId"], plan["outputs"]["nodeResourceGroup"])
        assert pls["frontend"].lower().startswith(scope.lower())
        assert [c["status"] for c in pls["connections"]] == ["Approved"]


def test_a_pls_name_set_twice_in_one_group_stops_the_second_cluster_before_it_connects(tmp_path):
    """The same name set by hand on both stacks: the second cluster's wait finds a PLS that serves the first cluster's
    load balancer and stops in one line; no endpoint of the second cluster is created, nothing connects to the first
    cluster's PLS."""
    shared = {"multiCluster": "true", "privateLinkServiceResourceGroup": "rg-network",
              "privateLinkServiceName": "pyroscope-pls"}
    plans, first, second = _two_clusters(tmp_path, shared)
    with pytest.raises(EngineError) as caught:
        second.deploy(plans["aks-gpu-b"])
    (line,) = [row for row in str(caught.value).splitlines() if "error:" in row]
    assert "private link service pyroscope-pls in rg-network is not this cluster's" in line
    assert "give this stack its own privateLinkServiceName" in line
    assert caught.value.args[0].startswith("grafana-private-link-wait-for-pls:")
    world = first.world()
    (pls,) = world["pls"].values()
    assert _endpoint_pls(world, plans["aks-gpu-a"]) is not None and len(pls["connections"]) == 1
    assert len(world["mpes"]) == 1


def _one_pending_connection() -> tuple[dict, dict]:
    world = fake_world.empty()
    frontend = fake_world.new_frontend(canned.cluster_id("rg-aks", "aks"), "MC_rg-aks_aks_eastus2")
    fake_world.ensure_service_pls(world, "gadget/pyroscope", frontend, "MC_rg-aks_aks_eastus2", "pyroscope-pls", ["*"],
                                  canned.SUBSCRIPTION_ID)
    (pls,) = world["pls"].values()
    fake_world.connect(world, pls["id"], "grafana-amg-pyro-mpe")
    return world, pls


def _approve(group: str, service: str, connection: str) -> list[str]:
    return ["network", "private-link-service", "connection", "update", "--resource-group", group, "--service-name",
            service, "--name", connection, "--connection-status", "Approved", "--description", "ok"]


def test_the_approval_put_answers_the_connection_with_its_new_state():
    """ARM answers PrivateLinkServices_UpdatePrivateEndpointConnection with the connection (azure-rest-api-specs
    Microsoft.Network stable/2024-05-01 privateLinkService.json: 200 PrivateEndpointConnection), as az prints it
    flattened: the approval step's --query privateLinkServiceConnectionState.status reads Approved at once."""
    world, pls = _one_pending_connection()
    (connection,) = pls["connections"]
    answer = fake_world.answer(_approve("MC_rg-aks_aks_eastus2", "pyroscope-pls", connection["name"]), world)
    body = answer["json"]
    assert (body["name"] == connection["name"]
            and body["id"] == f"{pls['id']}/privateEndpointConnections/{connection['name']}")
    assert body["privateLinkServiceConnectionState"] == {"status": "Approved", "description": "ok",
                                                         "actionsRequired": "None"}
    assert body["privateEndpoint"]["id"].endswith("/grafana-amg-pyro-mpe")


@pytest.mark.parametrize("group, service", [("rg-other", "pyroscope-pls"), ("MC_rg-aks_aks_eastus2", "other-pls")])
def test_the_approval_of_a_connection_on_a_pls_that_is_not_there_is_a_404(group, service):
    """--resource-group and --service-name name the PLS: a connection of the same name elsewhere is not approved."""
    world, pls = _one_pending_connection()
    (connection,) = pls["connections"]
    answer = fake_world.answer(_approve(group, service, connection["name"]), world)
    assert answer["exit"] == 3 and "ResourceNotFound" in answer["stderr"] and service in answer["stderr"]
    assert connection["status"] == "Pending"


def test_the_first_up_after_the_approval_nonce_replaces_the_endpoint_delete_first():
    """A stack deployed before the approval nonce (docs/how-it-works.md, "Upgrading"): its state has no nonce step and a
    plain requestMessage. The head creates the nonce, so the MPE's requestMessage (create-only in the dashboard REST
    spec) changes: the offline diff predicts a delete-first replacement of the MPE, and the approval and refresh with
    it, and no other change."""
    head = run("dev").to_json()
    base = copy.deepcopy(head)
    nonce = next(r for r in base["resources"] if r["name"] == "grafana-private-link-approval-nonce")
    base["resources"].remove(nonce)
    for key in ("createOrder", "destroyOrder"):
        if key in base:
            base[key] = [u for u in base[key] if u != nonce["urn"]]
    for r in base["resources"]:
        r["dependencies"] = [d for d in r.get("dependencies", []) if d != nonce["urn"]]
        r["propertyDependencies"] = {k: [d for d in v if d != nonce["urn"]] for k,
                                     v in (r.get("propertyDependencies") or {}).items()}
        if r["type"] == "azure-native:dashboard:ManagedPrivateEndpoint":
            r["inputs"]["requestMessage"] = "Azure Managed Grafana amg-gpu-dev to Pyroscope on AKS cluster aks-gpu-dev"
            base.get("secretFingerprints", {}).get(r["urn"], {}).pop("requestMessage", None)
        if r["name"] == "grafana-private-link-approve-connection":
            env = r["inputs"]["environment"]
            env.pop("APPROVAL_NONCE"), env.pop("APPROVAL_MARKER")
            base.get("secretFingerprints", {}).pop(r["urn"], None)
    diff = plan_diff.compute(base, head)
    mpe = diff.step("grafana-private-link-mpe")
    assert mpe.op == "replace" and mpe.replace_order == "delete-first", (mpe.op, mpe.replace_order)
    assert any(r.startswith("requestMessage: create-only") for r in mpe.reasons), mpe.reasons
    assert diff.step("grafana-private-link-approval-nonce").op == "create"
    changed = {s.name for s in diff.steps if s.op != "same"}
    assert {"grafana-private-link-approve-connection", "grafana-private-link-refresh"} <= changed, changed


def test_turning_persistence_on_for_a_deployed_stack_converges_in_one_up(tmp_path):
    """A stack deployed with Pyroscope's profiles in an emptyDir (as before persistence was the default) gets its
    volume in one `pulumi up`: a StatefulSet's volumeClaimTemplates cannot be updated (kubernetes/kubernetes
    pkg/apis/apps/validation/validation.go ValidateStatefulSetUpdate), so the release, which lists its persistence
    values in replace_on_changes, is reinstalled delete-first after the new claim, the private link left alone, and the
    diff warns that the emptyDir's profiles are lost; the re-run predicts nothing."""
    dashboards = make_dashboards(tmp_path)
    base = run("dev", {"pyroscopePersistence": "false"}).to_json()
    deployment = Deployment(tmp_path / "base", {url: path for url, (path, _) in dashboards.items()})
    deployment.deploy(base)
    diff, known = plan_diff.preview(base, lambda pending: run("dev", {}, pending=pending), [])
    steps = {s.name: s for s in diff.steps}
    release = steps["pyroscope-release"]
    assert (release.op, release.replace_order) == ("replace", "delete-first"), release.reasons
    assert any("values.pyroscope.persistence.enabled: listed in replaceOnChanges" in r for r in release.reasons)
    assert consequences.PERSISTENCE_ON in diff.warnings, diff.warnings
    assert {name: step.op for name, step in steps.items() if step.op != "same"} == {
        "aks-claims": "create", "pyroscope-data-0": "create", "pyroscope-claims-identity": "create",
        "pyroscope-release": "replace"}
    order = [(a.kind, _short(a.urn)) for a in diff.order]
    assert order.index(("create", "pyroscope-data-0")) < order.index(("create-replacement", "pyroscope-release"))
    head = known.to_json()
    deployment.apply(diff, head)
    assert_holds_exactly(deployment, head, dashboards)
    rerun = plan_diff.compute(head, run("dev").to_json())
    assert rerun.summary["same"] == len(rerun.steps) and rerun.order == []


def test_switching_to_microservices_and_back_is_predicted_and_converges(tmp_path):
    """A deployed single-binary stack set to pyroscopeMode microservices: the storage side is created,
    the release is reinstalled delete-first (values.pyroscope.components appears: listed in replaceOnChanges), the
    stack's Service pyroscope for the exporter is created after it, the ingesters' claims before it, and the private
    link Service selects the read path (updated in place: its PLS and Grafana's endpoint stay); the diff says what the
    switch loses. Going back: the Service pyroscope is deleted before the release (its replaceWith names
    the release, and the engine's findResourcesReplacedWith also ranges over resources no longer in the program), so
    the chart's own Service pyroscope can be installed; the diff warns that the blob container's profiles are left and a
    created account is deleted with them. Each end state equals a fresh deploy; each re-run predicts nothing."""
    dashboards = make_dashboards(tmp_path)
    micro = {"pyroscopeMode": "microservices"}
    base = run("dev", {}).to_json()
    deployment = Deployment(tmp_path / "base", {url: path for url, (path, _) in dashboards.items()})
    deployment.deploy(base)

    diff, known = plan_diff.preview(base, lambda pending: run("dev", micro, pending=pending), [])
    steps = {s.name: s for s in diff.steps}
    release = steps["pyroscope-release"]
    assert (release.op, release.replace_order) == ("replace", "delete-first"), release.reasons
    assert any(r.startswith("values.pyroscope.structuredConfig.storage.backend: listed in replaceOnChanges")
               for r in release.reasons), release.reasons
    for name in ("pyroscope-storage-account", "pyroscope-storage-container", "pyroscope-storage-identity",
                 "pyroscope-storage-federated-credential", "pyroscope-storage-blob-data-contributor",
                 "pyroscope-write-path"):
        assert steps[name].op == "create", name
    for name in ("pyroscope-ingester-data-0", "pyroscope-ingester-data-1", "pyroscope-ingester-data-2"):
        assert steps[name].op == "create", name
    assert steps["pyroscope-data-0"].op == "delete"
    assert steps["pyroscope-private-link"].op == "update"
    assert [d["path"] for d in steps["pyroscope-private-link"].diffs] == [
        'spec.selector["app.kubernetes.io/component"]']
    for name in ("grafana-private-link-wait-for-pls", "grafana-private-link-mpe",
                 "grafana-private-link-approve-connection", "grafana-private-link-refresh"):
        assert steps[name].op == "same", (name, steps[name].reasons)
    order = [(a.kind, _short(a.urn)) for a in diff.order]
    assert order.index(("create",
                        "pyroscope-storage-blob-data-contributor")) < order.index(("create-replacement",
                                                                                   "pyroscope-release"))
    assert order.index(("delete", "pyroscope-release")) < order.index(("create-replacement", "pyroscope-release")) \
        < order.index(("create", "pyroscope-write-path"))
    assert [w for w in diff.warnings if "pyroscope-release" in w] == [consequences.MODE_SWITCH[True]]
    head = known.to_json()
    deployment.apply(diff, head)
    assert_holds_exactly(deployment, head, dashboards)
    assert plan_diff.compute(head, run("dev", micro).to_json()).order == []

    # Going back, from a microservices stack deployed as such.
    deployment = Deployment(tmp_path / "micro", {url: path for url, (path, _) in dashboards.items()})
    deployment.deploy(head)
    back, known_back = plan_diff.preview(head, lambda pending: run("dev", {}, pending=pending), [])
    steps = {s.name: s for s in back.steps}
    assert (steps["pyroscope-release"].op, steps["pyroscope-release"].replace_order) == ("replace", "delete-first")
    order = [(a.kind, _short(a.urn)) for a in back.order]
    assert order.index(("delete", "pyroscope-write-path")) < order.index(("delete", "pyroscope-release")) \
        < order.index(("create-replacement", "pyroscope-release"))
    assert steps["pyroscope-storage-account"].op == "delete"
    assert [w for w in back.warnings if "pyroscope-release" in w] == [consequences.MODE_SWITCH[False]]
    final = known_back.to_json()
    deployment.apply(back, final)
    assert_holds_exactly(deployment, final, dashboards)
    assert plan_diff.compute(final, run("dev").to_json()).order == []


def _short(urn: str) -> str:
    return urn.split("::")[-1]


def test_a_single_binary_stack_upgrading_to_this_code_sees_no_change():
    """The upgrade path from the release before microservices mode: tests/data/plan-dev-before-microservices.json is
    `python -m offline.plan --stack dev --json` of commit 982d30a, the last one before pyroscopeMode existed. The same
    stack planned with this code (pyroscopeMode single-binary, the default, written out or not) changes only Pyroscope's
    access: the first NetworkPolicy updated in place (its PLS-subnet range gone), the second, admitting the PLS's NAT
    IPs, created, and the wait for the PLS run again (its script changed); the dashboard step updated in place, once,
    with dashboardProfileType's default and its changed script (it runs again and, the published ID being the default,
    finds the dashboard up to date: tests/steps/test_grafana_dashboard.py); the release upgraded in place for the
    shutdown grace period (:func:`test_an_existing_stack_upgrades_the_release_in_place_for_the_grace_period`); nothing
    else created, replaced, updated or deleted, and the release's other inputs (the Helm values) byte for byte equal."""
    stored = json.loads((ROOT / "tests" / "data" / "plan-dev-before-microservices.json").read_text())
    for overrides in ({}, {"pyroscopeMode": "single-binary"}):
        base = stored
        head = run("dev", overrides).to_json()
        # The stored fingerprints were keyed on the machine that planned the base (offline/replacement.py
        # fingerprint_key); its secrets are the canned ones this run holds (the kubeconfig, the nonce), at the same
        # paths, so this session's fingerprints stand in for them.
        fingerprints = head_fingerprints_for(base, head)
        assert {u: sorted(v) for u, v in base["secretFingerprints"].items()} == \
            {u: sorted(v) for u, v in fingerprints.items() if u in base["secretFingerprints"]}
        base = {**base, "secretFingerprints": fingerprints,
                "secretFingerprintKey": head.get("secretFingerprintKey")}
        diff = plan_diff.compute(base, head)
        changed = {s.name: s.op for s in diff.steps if s.op != "same"}
        # The wait for the PLS is a new step: its script now also waits for the NAT IP configurations (its hash is
        # among the triggers), so it runs once more and finds the PLS as it is. The step scripts moved from scripts/
        # to the steps package: the approval's and the refresh's hashes changed (each re-runs, idempotent), and the
        # owner steps run `python3 -m steps.<name>` (an update: apply finds Grafana up to date and writes nothing).
        # And the private link moves to the stack's own Service, once (test_a_stack_deployed_before_...).
        assert changed == {**PRIVATE_LINK_MOVE, "grafana-private-link-nat-network-policy": "create",
                           "grafana-datasources-prometheus": "update"}, overrides
        moved = {"create": "python3 -m steps.{} apply", "delete": "python3 -m steps.{} delete"}
        for name, script in [("gpu-dashboard-upload", "grafana_dashboard"), ("grafana-datasources-pyroscope",
                                                                             "grafana_datasource"),
                             ("grafana-datasources-prometheus", "grafana_datasource")]:
            paths = {d["path"]: d.get("new") for d in diff.step(name).diffs}
            assert {key: paths[key] for key in moved} == {key: line.format(script) for key, line in moved.items()}
        dashboard = diff.step("gpu-dashboard-upload")
        assert [(d["path"], d.get("old"), d.get("new")) for d in dashboard.diffs
                if d["path"] not in ("environment.SCRIPT_SHA256", "create", "delete")] == [
            ("environment.DASHBOARD_PROFILE_TYPE", None, "process_cpu:malloc:bytes::")], dashboard.diffs
        for name in ("grafana-datasources-pyroscope", "grafana-datasources-prometheus"):
            assert {d["path"] for d in diff.step(name).diffs} == {"create", "delete", "environment.SCRIPT_SHA256"}
        policy = diff.step("pyroscope-network-policy")
        assert {d["path"] for d in policy.diffs} - {"metadata.annotations"} == {"spec.ingress"} or \
            all(d["path"].startswith("spec.ingress") for d in policy.diffs if d["path"] != "metadata.annotations"), \
            policy.diffs
        assert [d["path"] for d in diff.step("pyroscope-release").diffs] == [*LIMIT_PATHS, *CHART_SERVICE_PATHS,
                                                                             GRACE_PATH]
        old, new = ([r for r in plan["resources"] if r["name"] == "pyroscope-release"][0]["inputs"]
                    for plan in (base, head))
        new, old = copy.deepcopy(new), copy.deepcopy(old)
        del new["values"]["pyroscope"]["terminationGracePeriodSeconds"]
        for flag in ("distributor.ingestion-burst-size-mb", "distributor.ingestion-rate-limit-mb",
                     "querier.max-query-length"):  # LIMIT_PATHS
            del new["values"]["pyroscope"]["extraArgs"][flag]
        old["values"]["pyroscope"]["service"] = new["values"]["pyroscope"]["service"]
        assert json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)


def head_fingerprints_for(base: dict, head: dict) -> dict:
    """The head's secret fingerprints keyed by the base's URNs (a base of the layout before the component holds
    every resource at the stack's root; a name names one resource in both)."""
    by_name = {r["urn"].rsplit("::", 1)[-1]: r["urn"] for r in base["resources"]}
    return {by_name.get(urn.rsplit("::", 1)[-1], urn): value for urn, value in head["secretFingerprints"].items()}


#: What the chart's Service loses when the stack's own Service takes the private link over: its PLS annotations, and
#: LoadBalancer for ClusterIP.
CHART_SERVICE_PATHS = ["values.pyroscope.service.annotations", "values.pyroscope.service.type"]
#: The one-time move of the private link to the stack's Service, as any stack deployed before it sees it.
PRIVATE_LINK_MOVE = {"aks-claims": "create", "pyroscope-data-0": "create", "pyroscope-private-link": "create",
                     "pyroscope-release": "update", "grafana-private-link-wait-for-pls": "replace",
                     "grafana-private-link-mpe": "replace", "grafana-private-link-approve-connection": "replace",
                     "grafana-private-link-refresh": "replace", "grafana-private-link-nat-network-policy": "update",
                     "grafana-datasources-pyroscope": "update", "pyroscope-private-link-identity": "replace",
                     "pyroscope-local-traffic": "delete",
                     # Not the private link's: the namespace's owner mark, added in place (existing/handmade.py).
                     "gadget-namespace": "update",
                     # Nor this: the component everything moved into (components/gpu_observability.py), made once,
                     # no cloud object; every child takes its old URN through an alias.
                     "gpu-observability": "create",
                     # Nor these: the claims' identity step, made once (components/pyroscope.py); the NetworkPolicy's
                     # patchForce annotation (stack/specs.py PATCH_FORCE); the Grafana steps' scripts or shared helpers
                     # changed (they run again and find the dashboard and the datasource up to date).
                     "pyroscope-claims-identity": "create", "pyroscope-network-policy": "update",
                     "gpu-dashboard-upload": "update", "grafana-datasources-prometheus": "update",
                     # A new PLS, a new endpoint: a nonce of its own (replaceWith the Service).
                     "grafana-private-link-approval-nonce": "replace"}
#: Pyroscope's flags added since: the query length and the ingestion limits (components/pyroscope.py extra_args), a
#: Helm upgrade in place.
LIMIT_PATHS = ['values.pyroscope.extraArgs["distributor.ingestion-burst-size-mb"]',
               'values.pyroscope.extraArgs["distributor.ingestion-rate-limit-mb"]',
               'values.pyroscope.extraArgs["querier.max-query-length"]']


@pytest.mark.parametrize("overrides,seconds", [({}, 600), ({"pyroscopeTerminationGracePeriodSeconds": "900"}, 900)])
def test_an_existing_stack_upgrades_the_release_in_place_for_the_grace_period(overrides, seconds):
    """tests/data/plan-dev-before-grace-period.json is `python -m offline.plan --stack dev --json` of commit e1a7bb3,
    the last one before pyroscopeTerminationGracePeriodSeconds. The next `pulumi up` of that dev stack updates the
    release in place, one Helm value added (the pod template: a Helm upgrade rolls pyroscope-0, no reinstall), besides
    the private link's one move to the stack's own Service (:data:`PRIVATE_LINK_MOVE`)."""
    base = json.loads((ROOT / "tests" / "data" / "plan-dev-before-grace-period.json").read_text())
    head = run("dev", overrides).to_json()
    base = {**base, "secretFingerprints": head_fingerprints_for(base, head),
            "secretFingerprintKey": head.get("secretFingerprintKey")}  # keyed per machine, as above
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", overrides, pending=pending))
    assert {s.name: s.op for s in diff.steps if s.op != "same"} == PRIVATE_LINK_MOVE
    release = diff.step("pyroscope-release")
    assert release.replace_order is None and [d["path"] for d in release.diffs] == [*LIMIT_PATHS, *CHART_SERVICE_PATHS,
                                                                                    GRACE_PATH]
    assert release.diffs[-1] == {"path": GRACE_PATH, "old": None, "new": seconds}
    assert diff.errors == []


NAT_POLICY = "grafana-private-link-nat-network-policy"


def _nat_blocks(plan: dict) -> list:
    (policy,) = [r for r in plan["resources"] if r["name"] == NAT_POLICY]
    return policy["inputs"]["spec"]["ingress"][0]["from"]


@pytest.mark.parametrize("sets, blocks", [
    ({"privateLinkIpAddressCount": "2"}, ["10.224.0.10/32", "10.224.0.9/32"]),
    # A named subnet: the canned addresses are in its own range (offline/canned.py pls_nat_addresses).
    ({"privateLinkSubnet": "snet-pls"}, [f"{canned.pls_nat_addresses('snet-pls', 1)[0]}/32"]),
], ids=["ip-address-count-1-to-2", "pls-subnet"])
def test_a_nat_ip_configuration_change_updates_the_nat_policy_after_the_wait(sets, blocks):
    """A failing input found once: with privateLinkIpAddressCount 1 -> 2 (or a privateLinkSubnet) the diff listed the
    release and the wait but not the NAT NetworkPolicy, whose NAT IPs the cloud provider rebuilds (the canned PLS
    answered one NAT IP in snet-aks whatever the Service's annotations said)."""
    base = run("dev").to_json()
    assert _nat_blocks(base) == [{"ipBlock": {"cidr": f"{canned.PLS_NAT_ADDRESS}/32"}}]
    diff, known = plan_diff.preview(base, lambda pending: run("dev", sets, pending=pending))
    assert {s.name: s.op for s in diff.steps if s.op != "same"} == {
        "pyroscope-private-link": "update", "grafana-private-link-wait-for-pls": "update", NAT_POLICY: "update"}
    assert not diff.preview_only
    assert [block["ipBlock"]["cidr"] for block in _nat_blocks(known.to_json())] == blocks
    order = [(action.kind, _short(action.urn)) for action in diff.order]
    # After the wait: the PLS lookup that feeds the policy waits for it (components/grafana_private_link.py).
    assert order == [("update", "pyroscope-private-link"), ("update", "grafana-private-link-wait-for-pls"),
                     ("update", NAT_POLICY)]
    assert diff_text.render_text(diff, "dev").splitlines()[-1].split() == ["3.", "update", NAT_POLICY]


ENDPOINT_CHAIN = ("grafana-private-link-mpe", "grafana-private-link-approve-connection",
                  "grafana-private-link-refresh")


@pytest.mark.parametrize("sets", [{"privateLinkIpAddressCount": "2"}, {"privateLinkSubnet": "snet-pls"}],
                         ids=["ip-address-count", "pls-subnet"])
def test_a_nat_ip_configuration_change_previews_the_endpoint_chain_as_up_keeps_it(sets):
    """A review hazard: a new IP count or subnet of the PLS showed Grafana's managed private endpoint, its approval and
    refresh replaced in the preview (the real CLI's too), while `pulumi up` updates the PLS in place (the same ARM id)
    and keeps all three. The preview now keys the chain on the PLS id read before anything is registered, from the
    world the deployed base left (offline/canned.py deployed): unchanged, no replacement, none only in the preview; the
    Pyroscope datasource, whose URL comes after the refresh, unchanged too. A renamed PLS still replaces the chain, in
    the preview and at `up`."""
    base = run("dev").to_json()
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", sets, pending=pending))
    ops = {s.name: s.op for s in diff.steps}
    assert [ops[name] for name in ENDPOINT_CHAIN] == ["same"] * 3 and ops["grafana-datasources-pyroscope"] == "same"
    assert diff.summary["replace"] == 0 and not diff.preview_only
    headline = next(row for row in diff_text.render_text(diff, "t").splitlines() if row.startswith("Resources: "))
    assert headline == "Resources: + 0 to create, ~ 3 to update, +-0 to replace, - 0 to delete, 27 unchanged"

    rename = {**sets, "privateLinkServiceName": "pyroscope-pls-2"}
    renamed, _ = plan_diff.preview(base, lambda pending: run("dev", rename, pending=pending))
    assert [renamed.step(name).op for name in ENDPOINT_CHAIN] == ["replace"] * 3
    assert not set(renamed.preview_only) & {renamed.step(name).urn for name in ENDPOINT_CHAIN}


def test_the_deployed_base_holds_its_pls_in_the_canned_world_only_while_it_is_diffed():
    """The head evaluated against a deployed base finds the PLS the base made (existing/taken.py reads it before
    anything is registered); a plan with no base, or of another PLS name, finds none; the canned world is left as it
    was."""
    base = run("dev").to_json()
    node_group = base["outputs"]["nodeResourceGroup"]
    assert canned.private_link_service_owner(node_group, "pyroscope-pls") is None
    with deployed_world.deployed(base):
        frontend, owner, pls_id = canned.private_link_service_owner(node_group, "pyroscope-pls")
        assert canned.private_link_service_owner(node_group, "pyroscope-pls-2") is None
    assert canned.private_link_service_owner(node_group, "pyroscope-pls") is None
    assert pls_id == base["outputs"]["privateLinkServiceId"] and owner == "gadget/pyroscope-private-link"
    assert frontend.lower().startswith(fake_world.load_balancer_scope(base["outputs"]["clusterId"], node_group).lower())


def _older_stack(tmp_path, overrides: dict, base_file: str = "plan-dev-before-private-link-service.json"):
    """A stack deployed with the version whose chart Service carried the PLS (``base_file``, in tests/data), its
    fingerprints keyed on this machine as the head's: (base plan, its deployment, the dashboards)."""
    dashboards = make_dashboards(tmp_path)
    base = json.loads((ROOT / "tests" / "data" / base_file).read_text())
    head = run("dev", overrides).to_json()
    base = {**base, "secretFingerprints": head_fingerprints_for(base, head),
            "secretFingerprintKey": head.get("secretFingerprintKey")}  # keyed per machine
    deployment = Deployment(tmp_path / "base", {url: path for url, (path, _) in dashboards.items()})
    deployment.deploy(base)
    return base, deployment, dashboards


@pytest.mark.parametrize("base_file,overrides", [
    ("plan-dev-before-private-link-service.json", {}),
    ("plan-dev-before-private-link-service-microservices.json", {"pyroscopeMode": "microservices"}),
], ids=["single-binary", "microservices"])
def test_a_stack_deployed_before_the_private_link_service_moves_it_once(base_file, overrides, tmp_path):
    """tests/data/plan-dev-before-private-link-service*.json are `python -m offline.plan --stack dev --json` (and with
    pyroscopeMode=microservices) of commit 9115e02, the last one whose chart Service carried the PLS. The next `pulumi
    up` moves the private link to the stack's own Service, once, and says why: the chart's Service becomes ClusterIP
    (AKS deletes its PLS with Grafana's connection), the new Service gets a PLS of the same name, the wait (a new owner
    in its triggers) and the endpoint are replaced, approved and refreshed; the claims the StatefulSet made are adopted
    with their profiles (the claims' provider upserts), not re-created; the end state equals a fresh deploy, and the
    re-run, and a later reinstall of the release, leave the private link alone."""
    base, deployment, dashboards = _older_stack(tmp_path, overrides, base_file)
    world = deployment.world()
    (old_pls,) = world["pls"].values()
    owner = "gadget/pyroscope-query-frontend" if overrides else "gadget/pyroscope"
    assert old_pls["tags"]["k8s-azure-owner-service"] == owner
    world["claims"] = {key: {**claim, "profiles": "kept"} for key, claim in world["claims"].items()}
    deployment._save(world)

    diff, known = plan_diff.preview(base, lambda pending: run("dev", overrides, pending=pending))
    changed = {s.name: s.op for s in diff.steps if s.op != "same"}
    claims = ([f"pyroscope-ingester-data-{i}" for i in range(3)] if overrides else ["pyroscope-data-0"])
    assert changed == {**{k: v for k, v in PRIVATE_LINK_MOVE.items() if k != "pyroscope-data-0"},
                       **({"pyroscope-write-path": "update"} if overrides else {}),  # its patchForce annotation
                       **dict.fromkeys(claims, "create")}
    assert consequences.PRIVATE_LINK_MOVE in diff.warnings and diff.errors == []
    identity = diff.step("pyroscope-private-link-identity")  # says why: a new owner Service, so a new PLS
    assert identity.diffs == [{"path": "triggers", "old": ["pyroscope-pls", ""],
                               "new": ["pyroscope-pls", "", "gadget/pyroscope-private-link"]}], identity.diffs
    order = [(a.kind, _short(a.urn)) for a in diff.order]
    # The chart's Service frees the PLS name before the stack's Service asks for it.
    assert order.index(("update", "pyroscope-release")) < order.index(("create", "pyroscope-private-link")) \
        < order.index(("create-replacement", "grafana-private-link-wait-for-pls"))
    head = known.to_json()
    deployment.apply(diff, head)
    assert_holds_exactly(deployment, head, dashboards)
    assert all(claim.get("profiles") == "kept" for claim in deployment.world()["claims"].values())
    assert plan_diff.compute(head, run("dev", overrides).to_json()).order == []
    names = {r["name"]: r["urn"] for r in head["resources"]}
    again, _ = plan_diff.preview(head, lambda pending: run("dev", overrides, pending=pending),
                                 [names["pyroscope-release"]])
    # (In microservices mode the write path's Service goes with the release: its replaceWith names it.)
    assert {s.name: s.op for s in again.steps if s.op != "same"} == {
        "pyroscope-release": "replace", **({"pyroscope-write-path": "replace"} if overrides else {})}
    # The adopted claims grow in place: their forced apply takes the size over from kube-controller-manager.
    grown = {**overrides, "pyroscopeStorageSize": "128Gi"}
    growth, known_grown = plan_diff.preview(head, lambda pending: run("dev", grown, pending=pending))
    assert {s.name: s.op for s in growth.steps if s.op != "same"} == dict.fromkeys(claims, "update")
    deployment.apply(growth, known_grown.to_json())
    assert {(c["size"], c.get("profiles")) for c in deployment.world()["claims"].values()} == {("128Gi", "kept")}


def test_without_the_claims_provider_upsert_the_adopting_create_fails(tmp_path):
    """Why the claims have their own provider with upsertExistingObjects: pulumi-kubernetes 4.29.0+ creates with a
    client-side create, which the API server refuses for the claim the StatefulSet made ("already exists")."""
    base, deployment, _ = _older_stack(tmp_path, {})
    diff, known = plan_diff.preview(base, lambda pending: run("dev", {}, pending=pending))
    head = known.to_json()
    for resource in head["resources"]:
        if resource["name"] == "aks-claims":
            del resource["inputs"]["upsertExistingObjects"]
    with pytest.raises(EngineError, match='persistentvolumeclaims "data-pyroscope-0" already exists'):
        deployment.apply(diff, head)


def test_a_smaller_disk_is_refused_in_one_line(lifecycle, tmp_path):
    """pyroscopeStorageSize 64Gi -> 32Gi: the offline diff refuses it in one line naming the key (a claim cannot
    shrink); `pulumi up` would send the update, which the API server refuses (kubernetes ValidatePersistentVolumeClaim
    Update), and the claim's error hook turns that refusal into the same advice (components/pyroscope.py
    claim_recovery). Nothing else changes: the release and the private link are not touched."""
    from components.pyroscope import claim_recovery

    diff, known = plan_diff.preview(lifecycle["base"], lambda pending: run("dev", {"pyroscopeStorageSize": "32Gi"},
                                                                          pending=pending))
    assert diff.errors == ["pyroscopeStorageSize: 32Gi is smaller than claim data-pyroscope-0's 64Gi, and a claim "
                           "cannot shrink (Kubernetes refuses it); set 64Gi or more"]
    assert {s.name: s.op for s in diff.steps if s.op != "same"} == {"pyroscope-data-0": "update"}
    deployment = lifecycle["deployed"].copy(tmp_path / "shrink")
    before = deployment.world()
    with pytest.raises(EngineError) as refused:
        deployment.apply(diff, known.to_json())
    line = claim_recovery([str(refused.value)], "data-pyroscope-0", "32Gi")
    assert line and line.startswith("pyroscopeStorageSize: 32Gi is smaller than the claim gadget/data-pyroscope-0")
    after = deployment.world()
    assert (after["claims"], after["releases"], after["pls"]) == (before["claims"], before["releases"], before["pls"])


def test_the_ingesters_disks_grow_in_place_in_microservices_mode(tmp_path):
    """Microservices mode: the three ingesters' claims updated in place, nothing else; the end state is a fresh
    deploy's with the larger claims and the release as installed."""
    dashboards = make_dashboards(tmp_path)
    micro = {"pyroscopeMode": "microservices"}
    base = run("dev", micro).to_json()
    deployment = Deployment(tmp_path / "base", {url: path for url, (path, _) in dashboards.items()})
    deployment.deploy(base)
    grown = {**micro, "pyroscopeStorageSize": "256Gi"}
    diff, known = plan_diff.preview(base, lambda pending: run("dev", grown, pending=pending))
    assert {s.name: s.op for s in diff.steps if s.op != "same"} == {
        f"pyroscope-ingester-data-{i}": "update" for i in range(3)}
    head = known.to_json()
    deployment.apply(diff, head)
    assert_holds_exactly(deployment, head, dashboards)
    assert {c["size"] for c in deployment.world()["claims"].values()} == {"256Gi"}


def test_an_upgrade_that_also_changes_the_storage_class_is_refused_and_fails_as_predicted(tmp_path):
    """The upgrade from a stack whose StatefulSet made the claim, with pyroscopeStorageClass changed in the same
    `pulumi up`: the offline diff refuses it (exit 1 from `offline.plan`); played anyway, the adopting create is
    refused by the API server, and the claim's error hook names the key."""
    from components.pyroscope import claim_recovery

    sets = {"pyroscopeStorageClass": "managed-csi-premium"}
    base_file = ROOT / "tests" / "data" / "plan-dev-before-private-link-service.json"
    base, deployment, _ = _older_stack(tmp_path, sets)
    diff, known = plan_diff.preview(base, lambda pending: run("dev", sets, pending=pending))
    assert [e.split(":", 1)[0] for e in diff.errors] == ["pyroscopeStorageClass"]
    with pytest.raises(EngineError) as refused:
        deployment.apply(diff, known.to_json())
    assert claim_recovery([str(refused.value)], "data-pyroscope-0", "64Gi").startswith("pyroscopeStorageClass, ")
    done = subprocess.run([sys.executable, "-m", "offline.plan", "--stack", "dev", "--set",
                           "pyroscopeStorageClass=managed-csi-premium", "--diff-against", str(base_file)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "ERROR: pyroscopeStorageClass: claim data-pyroscope-0" in done.stdout


def test_without_patch_force_growing_an_adopted_claim_conflicts(tmp_path):
    """Why the claims carry pulumi.com/patchForce: the claim the StatefulSet made belongs to kube-controller-manager,
    and an unforced server-side apply of a larger size conflicts with it (structured-merge-diff merge/update.go)."""
    base, deployment, _ = _older_stack(tmp_path, {})
    diff, known = plan_diff.preview(base, lambda pending: run("dev", {}, pending=pending))
    head = known.to_json()
    deployment.apply(diff, head)  # adopted at the same size: no conflict, forced or not
    grown, known_grown = plan_diff.preview(head, lambda pending: run("dev", {"pyroscopeStorageSize": "128Gi"},
                                                                    pending=pending))
    unforced = copy.deepcopy(known_grown.to_json())
    for resource in unforced["resources"]:
        if resource["type"] == "kubernetes:core/v1:PersistentVolumeClaim":
            del resource["inputs"]["metadata"]["annotations"]["pulumi.com/patchForce"]
    with pytest.raises(EngineError, match='conflict with "kube-controller-manager": .spec.resources.requests.storage'):
        deployment.copy(tmp_path / "unforced").apply(grown, unforced)
    deployment.apply(grown, known_grown.to_json())
    assert {c["size"] for c in deployment.world()["claims"].values()} == {"128Gi"}


def test_an_updated_step_answers_its_outputs_unknown_only_when_an_input_it_had_changes():
    """pulumi-go-provider v1.3.0 markComputed: stdout of an updated Command is unknown in a preview when an input the
    old state had changed or went; an input added where there was none leaves it known (a review finding)."""
    from offline.diff import _outputs_unknown

    urn = "urn:pulumi:dev::p::command:local:Command::wait"
    base = {"resources": [{"urn": urn, "inputs": {"create": "x", "environment": {"A": "1"}}}]}

    def step(*diffs):
        return plan_diff.Step(urn, "command:local:Command", "update", diffs=[{"path": p, "old": o, "new": n}
                                                                            for p, o, n in diffs])

    assert _outputs_unknown(step(("environment.A", "1", "2")), base)
    assert _outputs_unknown(step(("create", "x", None)), base)  # removed
    assert not _outputs_unknown(step(("dir", None, "/tmp")), base)  # added: outputs stay known
    other = plan_diff.Step(urn, "kubernetes:core/v1:Service", "update", diffs=[{"path": "spec", "old": 1, "new": 2}])
    assert not _outputs_unknown(other, base)


def test_adding_or_removing_a_viewer_creates_or_deletes_its_assignment_and_nothing_else():
    """grafanaViewers on the deployed dev stack: the first viewer brings its assignment and the component holding it
    (no Azure call), a second one only its assignment, a removed one only the delete of its own; reordering changes
    nothing. No other resource is updated or replaced, no warning: giving ML engineers Grafana touches nothing that
    serves the flame graphs."""
    team, alice = "0b2f6c1e-3a4d-4e5f-8a9b-1c2d3e4f5a6b", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"

    def head(*items):
        sets = [(f"grafanaViewers[{i}]", item, True) for i, item in enumerate(items)]
        return lambda pending: run("dev", config_sets=sets, pending=pending)

    def changes(base, evaluate):
        diff, _ = plan_diff.preview(base, evaluate)
        assert not diff.warnings and not diff.errors
        return {step.name: step.op for step in diff.steps if step.op != "same"}

    deployed = run("dev").to_json()
    assert changes(deployed, head(team)) == {"grafana-viewers": "create", f"grafana-viewers-{team}": "create"}
    one = head(team)(frozenset()).to_json()
    assert changes(one, head(team, f"User:{alice}")) == {f"grafana-viewers-{alice}": "create"}
    two = head(team, f"User:{alice}")(frozenset()).to_json()
    assert changes(two, head(f"User:{alice}")) == {f"grafana-viewers-{team}": "delete"}
    assert changes(two, head(f"User:{alice}", team)) == {}
    assert changes(one, head()) == {"grafana-viewers": "delete", f"grafana-viewers-{team}": "delete"}
