"""Day-two changes: for each change a user makes (and `pulumi up --replace` of each step), the offline preview
diff predicts op, order and reasons; then the steps run in the engine's order for that diff against the stateful
stand-in az (tests/lifecycle.py, tests/fake_world.py) from a deployed base, and the end state must equal a fresh
deploy of the new configuration and hold exactly the stack's objects: one datasource per uid with the new
definition, the dashboard, one managed private endpoint, approved and refreshed, on the PLS the release names.
SIMULATED: Azure, Grafana and the engine's executor; the scripts are real.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from tests.conftest import ROOT, reference
from tests import fake_world
from tests.lifecycle import OWNER_KEY, Deployment, EngineError
from tools.offline import diff as plan_diff
from tools.offline import replacement
from tools.offline import canned, mock_engine
from tools.offline.mock_engine import run

DASHBOARD_URL = ("https://raw.githubusercontent.com/inspektor-gadget/grafana-dashboards/"
                 "494542d8a0439fe4b1a60577e70677cec5c96070/dashboards/gpu-observability/AdvancedGPUObservability.json")
OTHER_URL = "https://dashboards.example.test/gpu/AdvancedGPUObservability-v2.json"
RENAMED_URL = "https://dashboards.example.test/gpu/GpuObservabilityB.json"
SUBSCRIPTION = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"
ENGINE = "step_generator.go"
REPLACE_WITH_MPE = "replaceWith: grafana-private-link-mpe is replaced"
REPLACE_WITH_APPROVAL = "replaceWith: grafana-private-link-approve-connection is replaced"
UNKNOWN_DATASOURCE = "environment.DATASOURCE is unknown during preview (it comes from grafana-private-link-refresh)"


@dataclass
class Change:
    """A change: config ``sets`` and/or ``--replace`` ``targets`` (resource names). ``expect``: resource name ->
    (op, replace order, reason substrings, changed input paths); every resource not named must be ``same``."""

    name: str
    sets: dict = field(default_factory=dict)
    targets: list = field(default_factory=list)
    expect: dict = field(default_factory=dict)


def cascade_after_mpe(mpe_reasons: list, approval_paths: tuple = (), refresh_paths: tuple = (),
                      approval_order: str = "delete-first") -> dict:
    """The MPE replaced delete-first; its approval, whose replaceWith names the MPE, deleted before it and re-created
    after it (step_generator.go findResourcesReplacedWith: a delete-first replacement deletes them first); the refresh
    replaced create-first after the approval (replaceWith); the Pyroscope datasource's URL unknown until the refresh
    has run. When the MPE itself was deleted first for another resource's delete-first replacement, its re-creation
    (continueStepsFromImport, "re-creating") starts no chain of its own: the approval is then replaced create-first
    (``approval_order``)."""
    return {
        "grafana-private-link-mpe": ("replace", "delete-first", mpe_reasons, ()),
        "grafana-private-link-approve-connection": ("replace", approval_order, [REPLACE_WITH_MPE], approval_paths),
        "grafana-private-link-refresh": ("replace", "create-first", [REPLACE_WITH_APPROVAL], refresh_paths),
        "grafana-datasources-pyroscope": ("update", None, [UNKNOWN_DATASOURCE], ("environment.DATASOURCE",)),
    }


ANNOTATION = 'values.pyroscope.service.annotations["service.beta.kubernetes.io/azure-pls-{}"]'
RELEASE_FIRST = ["replaceWith: pyroscope-release is replaced", "the engine deletes it before pyroscope-release"]


def pls_identity_changed(identity_paths: tuple, release_paths: tuple) -> dict:
    """A new PLS name or resource group: the identity replaced, the release replaced with it delete-first, the wait and
    the endpoint (replaceWith the release) deleted before the release and created after it; the approval, whose MPE is
    re-created without a chain of its own, create-first."""
    return {"pyroscope-private-link-identity": ("replace", "create-first", ["triggers are replaceOnChanges"], identity_paths),
            "pyroscope-release": ("replace", "delete-first", ["replaceWith: pyroscope-private-link-identity is replaced",
                                                              "deleteBeforeReplace option is set"], release_paths),
            "grafana-private-link-wait-for-pls": ("replace", "delete-first", RELEASE_FIRST, ("environment.PLS_NAME",)),
            **cascade_after_mpe(RELEASE_FIRST, approval_order="create-first")}

CHANGES = [
    Change("chart-version-bump", {"pyroscopeChartVersion": "1.15.1"},
           expect={"pyroscope-release": ("update", None, [], ("version",))}),
    Change("image-tag", {"pyroscopeImageTag": "1.16.0"},
           expect={"pyroscope-release": ("update", None, [], ("values.pyroscope.image.tag",))}),
    # The AKS cloud provider cannot rename the PLS of a live Service (tests/fake_world.py ensure_service_pls): a new PLS
    # identity replaces the release, and with it (replaceWith) the wait and the endpoint, deleted before it.
    Change("pls-name", {"privateLinkServiceName": "pyroscope-pls-2"},
           expect=pls_identity_changed(("triggers[0]",), (ANNOTATION.format("name"),))),
    # A PLS resource group other clusters may share: the PLS moves there under a per-cluster name.
    Change("pls-resource-group", {"privateLinkServiceResourceGroup": "rg-network"},
           expect=pls_identity_changed(("triggers[0]", "triggers[1]"),
                                       (ANNOTATION.format("name"), ANNOTATION.format("resource-group")))),
    Change("pls-visibility", {"privateLinkVisibility": SUBSCRIPTION},
           expect={"pyroscope-release": ("update", None, [], (ANNOTATION.format("visibility"),))}),
    Change("mpe-name", {"managedPrivateEndpointName": "pyro-mpe2"},
           expect=cascade_after_mpe(["managedPrivateEndpointName: a path parameter of the ARM PUT",
                                     "delete-first: deleteBeforeReplace option is set (the provider's diff asks delete-first too)"],
                                    ("environment.PRIVATE_ENDPOINT_NAME",), ("environment.MPE_NAME",))),
    Change("grafana-name", {"grafanaName": "amg-gpu-other"},
           expect={**cascade_after_mpe(["workspaceName: a path parameter of the ARM PUT"]),
                   "grafana-private-link-mpe": ("replace", "delete-first", ["workspaceName: a path parameter"],
                                                ("workspaceName", "requestMessage")),
                   "grafana-datasources-pyroscope": ("replace", "delete-first", ["triggers[0]: triggers are replaceOnChanges"],
                                                     ("triggers[0]", "environment.GRAFANA_ENDPOINT")),
                   "grafana-datasources-prometheus": ("replace", "delete-first", ["triggers[0]"], ("triggers[0]",)),
                   "grafana-datasources-monitoring-data-reader": ("replace", "delete-first",
                                                                  ["principalId: listed in azure-native's forceNewMap"],
                                                                  ("principalId", "roleAssignmentName")),
                   "gpu-dashboard-upload": ("replace", "create-first", ["triggers[0]", "create-first"], ("triggers[0]",))}),
    Change("datasource-uid", {"pyroscopeDatasourceUid": "pyro-b"},
           expect={"grafana-datasources-pyroscope": ("replace", "delete-first", ["triggers[1]"], ("triggers[1]",)),
                   "gpu-dashboard-upload": ("update", None, [], ("environment.DATASOURCES",))}),
    Change("datasource-name", {"pyroscopeDatasourceName": "Pyroscope B"},
           expect={"grafana-datasources-pyroscope": ("update", None, [], ("environment.DATASOURCE",)),
                   "gpu-dashboard-upload": ("update", None, [], ("environment.DATASOURCES",))}),
    Change("dashboard-uid", {"dashboardUid": "GpuObservabilityB", "dashboardSource": RENAMED_URL, "dashboardSha256": "@renamed"},
           expect={"gpu-dashboard-upload": ("replace", "create-first", ["triggers[1]", "create-first"],
                                            ("triggers[1]", "environment.DASHBOARD_UID", "environment.DASHBOARD_SOURCE"))}),
    Change("dashboard-source-and-sha", {"dashboardSource": OTHER_URL, "dashboardSha256": "@other"},
           expect={"gpu-dashboard-upload": ("update", None, [], ("environment.DASHBOARD_SOURCE", "environment.DASHBOARD_SHA256"))}),
    Change("extension-version-pin", {"extensionVersion": "0.46.0"},
           expect={"inspektor-gadget-extension": ("update", None, [], ("version", "autoUpgradeMinorVersion"))}),
    # multiCluster names the PLS per cluster too (components/config.py): the release is reinstalled once.
    Change("multi-cluster-on", {"multiCluster": "true"},
           expect={**pls_identity_changed(("triggers[0]",), (ANNOTATION.format("name"),)),
                   "grafana-datasources-pyroscope": ("replace", "delete-first", ["triggers[1]"], ("triggers[1]",)),
                   "grafana-datasources-prometheus": ("replace", "delete-first", ["triggers[1]"], ("triggers[1]",)),
                   "gpu-dashboard-upload": ("update", None, [], ("environment.DATASOURCES",)),
                   "grafana-datasources-monitoring-data-reader": ("delete", None, ["not in the new program"], ())}),
    Change("kubelogin-mode", {"kubeloginMode": "workloadidentity"},
           expect={"aks": ("update", None, [], ("kubeconfig",))}),
]

REPLACED = "--replace: replacement requested on the command line"
CHANGES += [
    Change("replace-extension", targets=["inspektor-gadget-extension"],
           expect={"inspektor-gadget-extension": ("replace", "delete-first", [REPLACED, "deleteBeforeReplace option is set"], ())}),
    # The namespace's replacement takes what lives in it along (replace_with), the extension and the release
    # delete-first, and the release the private link; the extension's own replacement (above) takes nothing.
    Change("replace-namespace", targets=["gadget-namespace"],
           expect={"gadget-namespace": ("replace", "delete-first", [REPLACED, "deleteBeforeReplace option is set"], ()),
                   "inspektor-gadget-extension": ("replace", "delete-first", ["replaceWith: gadget-namespace is replaced"], ()),
                   "pyroscope-release": ("replace", "delete-first", ["replaceWith: gadget-namespace is replaced"], ()),
                   # The release, deleted first for the namespace, is re-created without a chain of its own, so the
                   # wait (replaceWith the release) is replaced create-first.
                   "grafana-private-link-wait-for-pls": ("replace", "create-first", ["replaceWith: pyroscope-release is replaced"], ()),
                   **cascade_after_mpe(["replaceWith: pyroscope-release is replaced", "deleteBeforeReplace option is set"])}),
    Change("replace-kubernetes-provider", targets=["aks"],
           expect={"aks": ("replace", "create-first", [REPLACED], ())}),
    Change("replace-release", targets=["pyroscope-release"],
           expect={"pyroscope-release": ("replace", "delete-first", [REPLACED], ()),
                   # Both name the release in replaceWith: deleted before it (findResourcesReplacedWith), re-created
                   # after it; the MPE's re-creation starts no chain, so the approval goes create-first.
                   "grafana-private-link-wait-for-pls": ("replace", "delete-first", ["replaceWith: pyroscope-release is replaced",
                                                                                     "the engine deletes it before pyroscope-release"], ()),
                   **cascade_after_mpe(["replaceWith: pyroscope-release is replaced", "the engine deletes it before pyroscope-release"],
                                       approval_order="create-first")}),
    Change("replace-wait", targets=["grafana-private-link-wait-for-pls"],
           expect={"grafana-private-link-wait-for-pls": ("replace", "create-first", [REPLACED], ()),
                   **cascade_after_mpe(["privateLinkResourceId is unknown during preview", "`pulumi up` may find nothing to do here"],
                                       ("triggers[1]",), ("triggers[1]",))}),
    Change("replace-mpe", targets=["grafana-private-link-mpe"],
           expect=cascade_after_mpe([REPLACED, "delete-first: deleteBeforeReplace option is set"])),
    Change("replace-approval", targets=["grafana-private-link-approve-connection"],
           expect={"grafana-private-link-approve-connection": ("replace", "create-first", [REPLACED], ()),
                   "grafana-private-link-refresh": ("replace", "create-first", [REPLACE_WITH_APPROVAL], ()),
                   "grafana-datasources-pyroscope": ("update", None, [UNKNOWN_DATASOURCE], ("environment.DATASOURCE",))}),
    Change("replace-refresh", targets=["grafana-private-link-refresh"],
           expect={"grafana-private-link-refresh": ("replace", "create-first", [REPLACED], ()),
                   "grafana-datasources-pyroscope": ("update", None, [UNKNOWN_DATASOURCE], ("environment.DATASOURCE",))}),
    Change("replace-role-assignment", targets=["grafana-datasources-monitoring-data-reader"],
           expect={"grafana-datasources-monitoring-data-reader": ("replace", "delete-first", [REPLACED], ())}),
    Change("replace-pyroscope-datasource", targets=["grafana-datasources-pyroscope"],
           expect={"grafana-datasources-pyroscope": ("replace", "delete-first", [REPLACED], ())}),
    Change("replace-prometheus-datasource", targets=["grafana-datasources-prometheus"],
           expect={"grafana-datasources-prometheus": ("replace", "delete-first", [REPLACED], ())}),
    Change("replace-dashboard", targets=["gpu-dashboard-upload"],
           expect={"gpu-dashboard-upload": ("replace", "create-first", [REPLACED, "create-first"], ())}),
]


@dataclass
class Outcome:
    diff: plan_diff.Diff
    head: dict
    changed: Optional[Deployment] = None
    error: Optional[str] = None


def _dashboards(tmp: Path) -> dict[str, tuple[str, str]]:
    """URL -> (local file, sha256): the pinned dashboard and two variants (another title; another uid)."""
    pinned = reference("grafana-dashboards/AdvancedGPUObservability.json")
    files = {DASHBOARD_URL: pinned}
    for url, change in ((OTHER_URL, {"title": "Advanced GPU Observability (v2)"}), (RENAMED_URL, {"uid": "GpuObservabilityB"})):
        variant = {**json.loads(pinned.read_bytes()), **change}
        path = tmp / url.rsplit("/", 1)[1]
        path.write_text(json.dumps(variant, indent=2))
        files[url] = path
    return {url: (str(path), hashlib.sha256(Path(path).read_bytes()).hexdigest()) for url, path in files.items()}


def _settings(change: Change, dashboards: dict) -> dict:
    sha = {"@other": dashboards[OTHER_URL][1], "@renamed": dashboards[RENAMED_URL][1]}
    return {key: sha.get(value, value) for key, value in change.sets.items()}


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory):
    """Every change predicted (sequentially: the SDK's mocks are per process) and applied to a copy of one
    deployed base (concurrently: the scripts mostly wait on subprocesses). name -> Outcome."""
    tmp = tmp_path_factory.mktemp("lifecycle")
    dashboards = _dashboards(tmp)
    downloads = {url: path for url, (path, _) in dashboards.items()}
    base_plan = run("dev")
    base = base_plan.to_json()
    deployed = Deployment(tmp / "base", downloads)
    deployed.deploy(base)
    names = {r.name: r.urn for r in base_plan.resources}
    outcomes = {}
    for change in CHANGES:
        sets = _settings(change, dashboards)
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
        assert {k: stored[key][k] for k in definition if k != "jsonData"} == {k: v for k, v in definition.items() if k != "jsonData"}
        assert {k: v for k, v in stored[key]["jsonData"].items() if k != OWNER_KEY} == definition["jsonData"]
    # The dashboard, under its uid, and no other, with the content the step uploads from its source.
    upload = head["gpu-dashboard-upload"]["inputs"]["environment"]
    host = upload["GRAFANA_ENDPOINT"].split("//", 1)[1]
    dashboards = {(h, uid) for h, g in world["grafana"].items() for uid in g["dashboards"]}
    assert dashboards == {(host, upload["DASHBOARD_UID"])}
    source = json.loads(Path(dashboard_files[upload["DASHBOARD_SOURCE"]][0]).read_bytes())
    expected = uploaded(source, json.loads(upload["DATASOURCES"]))
    assert comparable(world["grafana"][host]["dashboards"][upload["DASHBOARD_UID"]]) == comparable(expected)
    # One managed private endpoint, approved and refreshed, the only connection on the one PLS the release names.
    mpe = head["grafana-private-link-mpe"]["inputs"]
    assert [(m["endpoint"], m["status"], bool(m["ip"])) for m in world["mpes"].values()] == [
        (f"grafana-{mpe['workspaceName']}-{mpe['managedPrivateEndpointName']}", "Approved", True)]
    assert list(world["pls"]) == [mpe["privateLinkResourceId"].lower()]
    (pls,) = world["pls"].values()
    assert [(c["endpoint"].rsplit("/", 1)[1], c["status"]) for c in pls["connections"]] == [
        (f"grafana-{mpe['workspaceName']}-{mpe['managedPrivateEndpointName']}", "Approved")]
    # The ARM resources and the Helm release the plan declares, and nothing else; no orphaned PLS.
    assert set(world["arm"]) == {deployment.arm_key(r["type"], r["inputs"]) for r in plan["resources"]
                                 if r["type"].startswith("azure-native:") and r["custom"]}
    (release,) = [r["inputs"] for r in plan["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release"]
    key = fake_world.release_key(plan["outputs"]["clusterId"], release["namespace"], release["name"])
    assert world["releases"] == {key: {"version": release["version"], "values": release["values"]}}
    # The PLS is the one AKS made for the release's Service, and the cloud provider refused nothing on the way.
    assert pls["frontend"] == world["services"][key] and pls["tags"]["k8s-azure-owner-service"] == "gadget/pyroscope"
    assert world["events"] == []


def uploaded(source: dict, datasources: dict) -> dict:
    """The dashboard as scripts/grafana_dashboard.py uploads ``source`` (its own transformation)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import grafana_dashboard
    finally:
        sys.path.pop(0)
    return grafana_dashboard.with_datasource_defaults(source, datasources)


def comparable(dashboard: dict) -> dict:
    return {k: v for k, v in dashboard.items() if k not in ("id", "version", OWNER_KEY)}


def test_the_mpe_rename_done_criterion(tmp_path):
    """The issue's command line: MPE replace/delete-first with a reason, approval and refresh replaced after it;
    the dev plan's MPE is deleteBeforeReplace with a replaceWith option."""
    base = tmp_path / "base.json"

    def plan(*args):
        done = subprocess.run([sys.executable, "-m", "tools.plan", "--stack", "dev", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    base.write_text(plan("--json"))
    mpe = next(r for r in json.loads(base.read_text())["resources"] if r["type"] == "azure-native:dashboard:ManagedPrivateEndpoint")
    assert mpe["options"]["deleteBeforeReplace"] is True and mpe["options"]["replaceWith"]
    result = json.loads(plan("--set", "managedPrivateEndpointName=pyro-mpe2", "--diff-against", str(base), "--json"))
    assert set(result) == {"summary", "steps", "order", "previewOnly", "warnings", "errors"}
    assert [(a["kind"], a["urn"].rsplit("::", 1)[-1]) for a in result["order"]][:3] == [
        ("delete", "grafana-private-link-approve-connection"), ("delete", "grafana-private-link-mpe"),
        ("create-replacement", "grafana-private-link-mpe")]
    assert result["previewOnly"] == [] and result["warnings"] == [] and result["errors"] == []
    steps = {s["urn"].rsplit("::", 1)[-1]: s for s in result["steps"]}
    assert steps["grafana-private-link-mpe"]["op"] == "replace"
    assert steps["grafana-private-link-mpe"]["replaceOrder"] == "delete-first"
    assert any("managedPrivateEndpointName" in r for r in steps["grafana-private-link-mpe"]["reasons"])
    order = [s["urn"].rsplit("::", 1)[-1] for s in result["steps"]]
    for after in ("grafana-private-link-approve-connection", "grafana-private-link-refresh"):
        assert steps[after]["op"] == "replace"
        assert order.index(after) > order.index("grafana-private-link-mpe")
    assert result["summary"] == {"create": 0, "update": 1, "replace": 3, "delete": 0,
                                 "same": len(result["steps"]) - 4}
    text = plan("--set", "managedPrivateEndpointName=pyro-mpe2", "--diff-against", str(base))
    assert "OFFLINE ESTIMATE" in text and "not the cloud's answer" in text
    assert f"Resources: + 0 to create, ~ 1 to update, +-3 to replace, - 0 to delete, {len(result['steps']) - 4} unchanged" in text
    assert text.index("Replacements:") < text.index("Updates:")
    engine = text.split("Engine order (pulumi up):", 1)[1]
    assert engine.index("delete             grafana-private-link-mpe") < engine.index("create-replacement grafana-private-link-mpe") \
        < engine.index("create-replacement grafana-private-link-approve-connection") < engine.index("create-replacement grafana-private-link-refresh")


def test_a_pls_rename_by_release_update_is_refused_by_the_cloud_provider(lifecycle, tmp_path):
    """The fault the PLS identity fixes, as the stand-in sees it: the program before it updated the release in place.
    Helm changes the Service's azure-pls-name; the cloud provider finds the Service's PLS by its load balancer frontend
    and refuses the rename ("cannot change existing private link service name (old) to (new)",
    kubernetes-sigs/cloud-provider-azure azure_privatelinkservice_test.go TestGetPrivateLinkServiceName), so the old PLS
    stays, connection and all, and the wait for the new name never ends."""
    outcome = lifecycle["outcomes"]["pls-name"]
    head = {r["urn"].rsplit("::", 1)[-1]: r for r in outcome.head["resources"]}
    deployment = lifecycle["deployed"].copy(tmp_path / "old-program")
    before = deployment.world()["pls"]
    deployment._update(head["pyroscope-release"], outcome.head)  # what the old program's `pulumi up` did first
    world = deployment.world()
    assert world["pls"] == before  # the same PLS, name, frontend and the approved connection on it
    assert world["events"] == ["reconcilePrivateLinkService for service(gadget/pyroscope) failed: "
                               "getPrivateLinkServiceName(gadget/pyroscope) failed: cannot change existing private link "
                               "service name (pyroscope-pls) to (pyroscope-pls-2)"]
    with pytest.raises(EngineError, match="private link service pyroscope-pls-2 did not appear"):
        deployment._create(head["grafana-private-link-wait-for-pls"], outcome.head)


def test_the_release_is_replaced_when_its_pls_annotations_change(plan):
    """The release lists the PLS's name and resource group annotations in replace_on_changes (the engine's path syntax,
    as pulumi-kubernetes writes its detailed diff), for a stack whose identity resource is new; the plan JSON does not
    record the option (docs/offline.md D12), so it is read from the registration here."""
    from components import pyroscope

    assert pyroscope.PLS_IDENTITY_PATHS == (
        'values.pyroscope.service.annotations["service.beta.kubernetes.io/azure-pls-name"]',
        'values.pyroscope.service.annotations["service.beta.kubernetes.io/azure-pls-resource-group"]')
    seen = {}
    original = mock_engine.RecordingMonitor.RegisterResource

    def record(self, request):
        seen[request.name] = list(request.replaceOnChanges)
        return original(self, request)

    mock_engine.RecordingMonitor.RegisterResource = record
    try:
        p = plan()
    finally:
        mock_engine.RecordingMonitor.RegisterResource = original
    assert seen["pyroscope-release"] == list(pyroscope.PLS_IDENTITY_PATHS)
    identity = next(r for r in p.resources if r.name == "pyroscope-private-link-identity")
    assert identity.inputs["triggers"] == ["pyroscope-pls", ""] and identity.inputs["create"] == "true"
    release = next(r for r in p.resources if r.name == "pyroscope-release")
    assert identity.urn in release.options["replaceWith"]


def test_a_create_first_mpe_replacement_is_refused_by_the_provider(lifecycle, tmp_path):
    """The fault this issue fixes, as the harness sees it: the same --replace with the MPE create-first (the
    program before the fix) fails on azure-native's 'cannot create already existing resource'."""
    outcome = lifecycle["outcomes"]["replace-mpe"]
    steps = [plan_diff.Step(s.urn, s.type, s.op, "create-first" if s.name == "grafana-private-link-mpe" else s.replace_order,
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
        steps = [plan_diff.Step(s.urn, s.type, s.op, flipped.get(s.replace_order), s.reasons, s.diffs) for s in outcome.diff.steps]
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
    assert {s.name for s in diff.steps if s.op != "same"} == {"aks"}


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
        < kinds.index(("create-replacement", "gadget-namespace")) < kinds.index(("create-replacement", "pyroscope-release"))


def test_outputs_of_updated_resources_are_taken_as_known():
    """docs/offline.md D8 (a divergence): a created Grafana that is only updated keeps its outputs known here, so the
    datasources that read its endpoint stay unchanged; a real preview may show them unknown."""
    settings = {"createGrafana": "true"}
    base = run("dev", settings).to_json()
    changed = {**settings, "grafanaPublicNetworkAccess": "Disabled"}
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", changed, pending=pending))
    assert diff.step("managed-grafana-workspace").op == "update"
    assert {s.name for s in diff.steps if s.op != "same"} == {"managed-grafana-workspace"}


def test_every_type_has_a_rule_and_fixed_names_delete_first():
    """The replacement model covers every type the stack registers (createGrafana/createMonitorWorkspace
    included), and no resource whose provider asks delete-first is left create-first by its option (the plan
    JSON cannot tell an unset option from false)."""
    plan = run("dev", {"createGrafana": "true", "createMonitorWorkspace": "true"})
    for resource in plan.resources:
        if resource.custom and resource.type != "pulumi:pulumi:StackReference":
            rule = replacement.rule_for(resource.type)
            assert rule is not None, resource.type
            if rule.delete_first:
                assert resource.options["deleteBeforeReplace"] is True, resource.name
    for name in ("pyroscope-release", "gpu-dashboard-upload", "grafana-datasources-pyroscope"):
        assert next(r for r in plan.resources if r.name == name).options["deleteBeforeReplace"] is (name != "gpu-dashboard-upload")


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
    from tools import plan as plan_tool

    assert plan_tool.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and len(err.splitlines()) == 1, err


def test_diff_refuses_an_unknown_replace_target_and_a_non_plan(tmp_path):
    from tools import plan as plan_tool

    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("dev").to_json()))
    assert plan_tool.main(["--diff-against", str(base), "--replace", "nosuch"]) == 2
    (tmp_path / "not-a-plan.json").write_text("{}")
    assert plan_tool.main(["--diff-against", str(tmp_path / "not-a-plan.json")]) == 2


def test_mermaid_marks_changed_nodes(tmp_path, capsys):
    from tools import plan as plan_tool

    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("dev").to_json()))
    assert plan_tool.main(["--set", "managedPrivateEndpointName=pyro-mpe2", "--diff-against", str(base), "--graph", "mermaid"]) == 0
    graph = capsys.readouterr().out
    assert graph.startswith("graph TD")
    assert "+- grafana-private-link-mpe (delete-first)<br/>" in graph and "~ grafana-datasources-pyroscope<br/>" in graph
    node = next(line.split("[")[0].strip() for line in graph.splitlines() if "+- grafana-private-link-mpe" in line)
    assert f"class {node} replace" in graph and "classDef replace " in graph


# --- the offline engine's step generation (tools/offline/engine.py), on plans built here ---------------------------

def _plan(resources: list[dict]) -> dict:
    """A plan JSON of ``resources`` (name, type, inputs, and optional deps/options), in the given order."""
    urn = lambda name, type_: f"urn:pulumi:dev::p::{type_}::{name}"
    packages = sorted({r["type"].split(":")[0] for r in resources})
    out = [{"urn": urn("default", f"pulumi:providers:{p}"), "type": f"pulumi:providers:{p}", "name": "default",
            "custom": True, "parent": None, "provider": None, "inputs": {}, "dependencies": [], "propertyDependencies": {},
            "options": {"protect": False, "deleteBeforeReplace": False, "retainOnDelete": False, "ignoreChanges": [],
                        "customTimeouts": None, "replaceWith": []}} for p in packages]
    for r in resources:
        options = {"protect": False, "deleteBeforeReplace": bool(r.get("dbr")), "retainOnDelete": False,
                   "ignoreChanges": [], "customTimeouts": None, "replaceWith": [urn(n, t) for n, t in r.get("replace_with", [])]}
        deps = {k: [urn(n, t) for n, t in v] for k, v in r.get("property_deps", {}).items()}
        out.append({"urn": urn(r["name"], r["type"]), "type": r["type"], "name": r["name"], "custom": True, "parent": None,
                    "provider": urn("default", "pulumi:providers:" + r["type"].split(":")[0]), "inputs": r["inputs"], "dependencies": sorted({u for v in deps.values() for u in v}),
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
    diff = plan_diff.compute(plan("a", "t1"), head, property_dependencies={r["urn"]: r["propertyDependencies"] for r in head["resources"]})
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
            {"name": "step", "type": CMD_T, "inputs": {"triggers": [mpe_name]}, "property_deps": {"triggers": [("mpe", MPE_T)]}},
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
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {**settings, "azure-native:location": "northeurope"}, pending=pending))
    step = diff.step("grafana-datasources-monitoring-data-reader")
    assert (step.op, step.replace_order) == ("replace", "delete-first")


# --- what a reviewer reads (tools/offline/diff.py render_text, --json) ---------------------------------------------

def _edited_wait_script(base: dict) -> dict:
    """The base as deployed with an older wait_private_link_service.sh: only the script's sha256 in triggers differs."""
    edited = json.loads(json.dumps(base))
    wait = next(r for r in edited["resources"] if r["name"] == "grafana-private-link-wait-for-pls")
    wait["inputs"]["triggers"][0] = "0" * 64
    return edited


def test_a_script_edit_does_not_headline_replacements_that_exist_only_in_preview():
    """An edited wait script replaces the wait step; the PLS lookup behind it is then unknown in preview, so the
    preview (the real one too) shows the MPE, approval and refresh replaced. With every value known the engine keeps
    them, as `pulumi up` does once the lookup answers the same PLS: the headline says so, on the Resources line."""
    base = _edited_wait_script(run("dev").to_json())
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", pending=pending))
    assert diff.step("grafana-private-link-wait-for-pls").op == "replace"
    only = {u.rsplit("::", 1)[-1] for u in diff.preview_only}
    assert only == {"grafana-private-link-mpe", "grafana-private-link-approve-connection", "grafana-private-link-refresh"}
    assert "grafana-private-link-wait-for-pls" not in only
    headline = next(l for l in plan_diff.render_text(diff, "t").splitlines() if l.startswith("Resources: "))
    assert "3 of the 4 replacements only while a value is unknown in preview" in headline
    assert "keeps grafana-private-link-mpe" in headline


def test_a_base_plan_of_another_stack_is_flagged_before_the_counts():
    base = run("dev").to_json()
    other = {**base, "stack": "prod"}
    diff = plan_diff.compute(other, base)
    assert diff.warnings and "base plan is of stack 'prod'" in diff.warnings[0]
    text = plan_diff.render_text(diff, "t")
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
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", {"pyroscopeDatasourceName": "Pyroscope B"}, pending=pending))
    text = plan_diff.render_text(diff, "t")
    assert '~ environment.DATASOURCE{name}: "local-pyroscope" => "Pyroscope B"' in text
    assert not any("environment.DATASOURCE:" in line and "..." in line for line in text.splitlines())


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
    second cluster's Service got no PLS (the name was taken), its wait found the first cluster's at once, and its endpoint
    (so its Pyroscope datasource) reached the other cluster's Pyroscope. Now each cluster's endpoint is connected to the
    PLS of its own Service, on its own load balancer."""
    plans, first, second = _two_clusters(tmp_path, {"multiCluster": "true", "privateLinkServiceResourceGroup": "rg-network"})
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
    shared = {"multiCluster": "true", "privateLinkServiceResourceGroup": "rg-network", "privateLinkServiceName": "pyroscope-pls"}
    plans, first, second = _two_clusters(tmp_path, shared)
    with pytest.raises(EngineError) as caught:
        second.deploy(plans["aks-gpu-b"])
    (line,) = [l for l in str(caught.value).splitlines() if "error:" in l]
    assert "private link service pyroscope-pls in rg-network is not this cluster's" in line
    assert "give this stack its own privateLinkServiceName" in line
    assert caught.value.args[0].startswith("grafana-private-link-wait-for-pls:")
    world = first.world()
    (pls,) = world["pls"].values()
    assert _endpoint_pls(world, plans["aks-gpu-a"]) is not None and len(pls["connections"]) == 1
    assert len(world["mpes"]) == 1
