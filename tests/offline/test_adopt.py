"""Adopting a setup made by hand (docs/adopting.md): Pulumi's bulk import file from ``offline.plan --import-file``, and
the first ``pulumi up`` after ``pulumi import`` against the procedure's objects. SIMULATED: Azure, Grafana and the
engine's executor (tests/support/lifecycle.py, tests/support/fake_world.py); the plan, the import file and the step
scripts are real.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from importlib import metadata

import pytest

from offline import adopt, canned
from offline import diff as plan_diff
from offline.program import run
from stack.specs import MONITORING_DATA_READER, role_assignment_name
from tests.support import ROOT, fake_world, reference
from tests.support.lifecycle import DASHBOARD_URL, OWNER_KEY, Deployment, EngineError, comparable, uploaded
from tests.support.plans import without_references
from tests.support.scenarios import HAND_MADE_UID

#: pulumi/pulumi v3.230.0 pkg/cmd/pulumi/operations/import.go: the JSON tags of ``importFile``
#: (``nameTable,omitempty``, ``resources,omitempty``) and of ``importSpec`` (``type``, ``name``, ``id,omitempty``,
#: ``parent,omitempty``, ``provider,omitempty``, ``version,omitempty``, ``pluginDownloadUrl,omitempty``,
#: ``properties,omitempty``, ``component,omitempty``, ``remote,omitempty``, ``logicalName,omitempty``).
IMPORT_FILE_TAGS = {"nameTable", "resources"}
IMPORT_SPEC_TAGS = {"type", "name", "id", "parent", "provider", "version", "pluginDownloadUrl", "properties",
                    "component",
                    "remote", "logicalName"}
REAL_SUBSCRIPTION = "0b1f6471-1bf0-4dda-aec3-cb9272f09590"
REAL_PRINCIPAL = "7d3c9e41-5a2b-4c6d-8e9f-0a1b2c3d4e5f"
EXTENSION_NAME, MPE_NAME = "inspektor-gadget-extension", "grafana-private-link-mpe"
ROLE_NAME = "grafana-datasources-monitoring-data-reader"


def implied_urn(entry: dict, document: dict, stack: str, project: str = "aks-gpu-observability") -> str:
    """The URN ``parseImportFile`` (import.go, v3.230.0) gives an entry: ``resource.NewURN(stack, project, parent's
    qualified type, type, logicalName)``, the parent found in ``nameTable`` or among the file's entries; a
    qualified type is the parent's own qualified type ``$`` its type."""
    by_name = {e["name"]: e for e in document["resources"]}

    def qualified(item: dict) -> str:
        parent = item.get("parent")
        if not parent:
            return item["type"]
        if parent in document.get("nameTable", {}):
            return document["nameTable"][parent].split("::")[2] + "$" + item["type"]
        return qualified(by_name[parent]) + "$" + item["type"]

    return f"urn:pulumi:{stack}::{project}::{qualified(entry)}::{entry.get('logicalName') or entry['name']}"


def write(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    path = tmp_path / "import.json"
    done = subprocess.run([sys.executable, "-m", "offline.plan", "--import-file", str(path), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done, json.loads(path.read_text())


@pytest.fixture(scope="module")
def dev_file(tmp_path_factory):
    return write(tmp_path_factory.mktemp("import"))


def test_import_file_has_the_bulk_import_format(dev_file):
    _, document = dev_file
    assert set(document) <= IMPORT_FILE_TAGS
    names = [e["name"] for e in document["resources"]]
    assert len(names) == len(set(names))  # a name used as a parent must be unambiguous (parseImportFile)
    for entry in document["resources"]:
        assert set(entry) <= IMPORT_SPEC_TAGS and entry["type"] and entry["name"]
        assert ("id" in entry) != bool(entry.get("component")), entry  # custom: an id; component: none
        assert "remote" not in entry and "properties" not in entry  # all of the resource's inputs are read
        if "parent" in entry:
            assert entry["parent"] in names[:names.index(entry["name"])] or entry["parent"] in document["nameTable"]
        if "provider" in entry:
            assert entry["provider"] in document["nameTable"] and entry["provider"] not in names
    assert {e["type"] for e in document["resources"] if "id" in e} == set(adopt.ADOPTED)


def test_every_entry_lands_on_the_programs_urn(dev_file):
    _, document = dev_file
    plan = run("dev")
    urns = {r.urn for r in plan.resources}
    for entry in document["resources"]:
        assert implied_urn(entry, document, "dev") in urns, entry
    assert set(document["nameTable"].values()) <= urns


def test_import_ids_from_config_and_lookups(dev_file):
    done, document = dev_file
    plan = run("dev")
    outputs = plan.outputs
    ids = {e["name"]: e["id"] for e in document["resources"] if "id" in e}
    principal = canned.guid("grafana-identity", "rg-observability-dev", "amg-gpu-dev")
    assert ids == {
        "gadget-namespace": "gadget",  # pulumi-kubernetes' id of a cluster-scoped object: its name
        EXTENSION_NAME: f"{outputs['clusterId']}/providers/Microsoft.KubernetesConfiguration/extensions/"
                        "inspektor-gadget",
        "pyroscope-release": "gadget/pyroscope",
        MPE_NAME: f"{canned.grafana_id('rg-observability-dev', 'amg-gpu-dev')}/managedPrivateEndpoints/pyroscope-mpe",
        ROLE_NAME: f"{outputs['monitorWorkspaceId']}/providers/Microsoft.Authorization/roleAssignments/"
                   f"{role_assignment_name(outputs['monitorWorkspaceId'], MONITORING_DATA_READER, principal)}",
    }
    for name, id_ in ids.items():
        assert f"    {name}" in done.stdout and id_ in done.stdout
    assert "note: ids use the offline plan's canned lookups" in done.stderr


def test_providers_default_by_version_explicit_by_name_table(dev_file):
    done, document = dev_file
    component = "urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:GpuObservability::gpu-observability"
    provider = ("urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:GpuObservability"
                "$pulumi:providers:kubernetes::aks")
    assert document["nameTable"] == {"aks": provider}
    by_name = {e["name"]: e for e in document["resources"]}
    for name in ("gadget-namespace", "pyroscope-release"):
        assert by_name[name]["provider"] == "aks" and "version" not in by_name[name]
    for name in (EXTENSION_NAME, MPE_NAME, ROLE_NAME):
        assert by_name[name]["version"] == metadata.version("pulumi_azure_native") and "provider" not in by_name[name]
    # The provider's parent, the component, is targeted with it: a targeted resource needs its parent created.
    assert f"pulumi up --target '{component}' --target '{provider}'" in done.stdout


def test_written_as_the_cli_writes_it(tmp_path, dev_file):
    """writeImportFile (import.go): encoding/json with a four-space indent and a final newline, fields in the
    structs' order."""
    _, document = dev_file
    write(tmp_path)
    assert (tmp_path / "import.json").read_text() == json.dumps(document, indent=4) + "\n"
    release = next(e for e in document["resources"] if e["name"] == "pyroscope-release")
    assert list(release) == ["type", "name", "id", "parent", "provider"]
    assert list(document) == ["nameTable", "resources"]


def test_real_lookups_name_the_real_resources(tmp_path):
    _, document = write(tmp_path, "--subscription-id", REAL_SUBSCRIPTION, "--grafana-principal-id", REAL_PRINCIPAL)
    text = json.dumps(document)
    assert canned.SUBSCRIPTION_ID not in text
    role = next(e["id"] for e in document["resources"] if e["name"] == ROLE_NAME)
    workspace = (
        f"/subscriptions/{REAL_SUBSCRIPTION}/resourceGroups/rg-observability-dev/providers/Microsoft.Monitor/accounts/amw-gpu-dev")
    assert role == (f"{workspace}/providers/Microsoft.Authorization/roleAssignments/"
                    f"{role_assignment_name(workspace, MONITORING_DATA_READER, REAL_PRINCIPAL)}")


def test_ids_follow_config_and_skip_leaves_out(tmp_path):
    _, document = write(tmp_path, "--set", "extensionName=gadget", "--set", "managedPrivateEndpointName=mpe-hand",
                        "--set", "assignMonitoringDataReader=false", "--skip", "pyroscope-release",
                        "--skip", "gadget-namespace")
    ids = {e["name"]: e["id"] for e in document["resources"] if "id" in e}
    assert set(ids) == {EXTENSION_NAME, MPE_NAME}
    assert (ids[EXTENSION_NAME].endswith("/extensions/gadget")
            and ids[MPE_NAME].endswith("/managedPrivateEndpoints/mpe-hand"))
    assert "nameTable" not in document  # omitempty: no explicit provider without the namespace and the release
    assert {e["name"] for e in document["resources"] if e.get("component")} == {"gpu-observability",
                                                                                "inspektor-gadget",
                                                                                "grafana-private-link"}


@pytest.mark.parametrize("args,line", [
    (["--skip", ROLE_NAME], "error: --skip: needs --import-file FILE"),
    (["--import-file", "x.json", "--skip", "nosuch"], "error: --skip: 'nosuch' is not imported by this stack"),
    (["--import-file", "x.json", "--json"], "error: --import-file: writes the import file only"),
    (["--import-file", "x.json", "--subscription-id", "sub"], "error: --subscription-id: expected a GUID (got 'sub')"),
    (["--import-file", "/nonexistent/dir/import.json"],
     "error: --import-file: cannot write /nonexistent/dir/import.json"),
    (["--import-file", "x.json", "--set", "clusterName="], "error: clusterName: required and must not be empty"),
])
def test_bad_input_is_one_line(args, line, capsys, tmp_path, monkeypatch):
    from offline import plan as plan_tool

    monkeypatch.chdir(tmp_path)
    assert plan_tool.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and len(err.splitlines()) == 1, err
    assert not (tmp_path / "x.json").exists()


# --- the first `pulumi up` after `pulumi import`, against the procedure's objects -----------------------------------

GRAFANA_HOST = canned.grafana({"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"},
                              "eastus2")["properties"]["endpoint"].split("//", 1)[1]
#: What the procedure made in Grafana (MicrosoftDocs/azure-aks-docs articles/aks/gpu-profiling.md steps 3-5), and two
#: objects of someone else's that must stay as they are.
PROCEDURE_PYROSCOPE = {"access": "proxy", "jsonData": {"keepCookies": ["pyroscope_git_session"]},
                       "name": "local-pyroscope",
                       "type": "grafana-pyroscope-datasource", "uid": "local-pyroscope",
                       "url": f"http://{fake_world.PRIVATE_IP}:4040",
                       "id": 2, "orgId": 1, "version": 1, "readOnly": False}
PROCEDURE_PROMETHEUS = {"access": "proxy", "jsonData": {"azureCredentials": {"authType": "msi"}, "httpMethod": "POST"},
                        "name": "amw-gpu-dev", "type": "prometheus", "uid": HAND_MADE_UID,
                        "url": canned.query_endpoint("amw-gpu-dev", "eastus2"), "id": 3, "orgId": 1, "version": 1,
                        "readOnly": False}
OTHERS = {"loki-team": {"access": "proxy", "jsonData": {}, "name": "Loki (team)", "type": "loki", "uid": "loki-team",
                        "url": "http://loki.example.test", "id": 4, "orgId": 1, "version": 2, "readOnly": False},
          "azure-monitor-oob": {"access": "proxy", "jsonData": {"azureAuthType": "msi"}, "name": "Azure Monitor",
                                "type": "grafana-azure-monitor-datasource", "uid": "azure-monitor-oob", "id": 1,
                                "orgId": 1,
                                "version": 1, "readOnly": True}}
TEAM_DASHBOARD = {"uid": "team-overview", "title": "Team overview", "panels": [], "id": 20, "version": 5}


def imported_base(head: dict, skip: tuple) -> dict:
    """The stack's state after `pulumi up --target <aks provider>` and `pulumi import --file` of the import file:
    the stack, the providers, the file's components and resources with the inputs the providers' Read gives for the
    procedure's objects (azure-native: what ARM returns; the MPE the procedure made has no requestMessage and no
    privateLinkResourceRegion; Helm: chart by name, values without the address-count annotation)."""
    document = adopt.import_file(run("dev"), skip)
    names = {e["name"] for e in document["resources"]}
    kept = []
    for resource in head["resources"]:
        name = resource["urn"].rsplit("::", 1)[-1]
        if not (resource["type"].startswith("pulumi:") or name in names):
            continue
        resource = copy.deepcopy(resource)
        if resource["type"] == adopt.MPE:
            for key in ("requestMessage", "privateLinkResourceRegion", "tags"):
                resource["inputs"].pop(key, None)
        if resource["type"] == adopt.RELEASE:
            resource["inputs"] = procedure_release(resource["inputs"], head)
        kept.append(resource)
    urns = {r["urn"] for r in kept}
    # An imported resource refers only to what the import brought in (the engine refuses a state that names others).
    gone = {r["urn"] for r in head["resources"]} - urns
    kept = [without_references(r, gone) for r in kept]
    return {**head, "resources": kept, "createOrder": [u for u in head["createOrder"] if u in urns],
            "destroyOrder": [u for u in head["destroyOrder"] if u in urns],
            "secretFingerprints": {u: f for u, f in head["secretFingerprints"].items() if u in urns}}


def procedure_release(inputs: dict, head: dict) -> dict:
    """The procedure's release: the chart's own Service is the internal LoadBalancer with the PLS annotations (those
    of the stack's private link Service, less the address count, which the procedure does not set)."""
    values = copy.deepcopy(inputs["values"])
    (service,) = [r["inputs"] for r in head["resources"] if r["name"] == "pyroscope-private-link"]
    annotations = dict(service["metadata"]["annotations"])
    del annotations["service.beta.kubernetes.io/azure-pls-ip-configuration-ip-address-count"]
    values["pyroscope"]["service"] = {"annotations": annotations, "port": 4040, "type": "LoadBalancer"}
    return {"chart": "pyroscope", "name": "pyroscope", "namespace": "gadget", "version": inputs["version"],
            "values": values}


def seed(deployment: Deployment, base: dict, dashboard_file: str) -> None:
    """The world as the procedure left it (the objects in ``base`` and Grafana's), and the state as the import left
    it."""
    world = deployment.world()
    node_rg = "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"
    pls = fake_world.pls_id(node_rg, "pyroscope-pls", canned.SUBSCRIPTION_ID)
    endpoint = "grafana-amg-gpu-dev-pyroscope-mpe"
    grafana = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
    cluster = canned.cluster_id("rg-aks-gpu-dev", "aks-gpu-dev")
    release = fake_world.release_key(cluster, "gadget", "pyroscope")
    world["services"][release] = frontend = fake_world.new_frontend(cluster, node_rg)
    world["pls"][pls.lower()] = {"id": pls, "visibility": ["*"], "frontend": frontend, "tags": {
        fake_world.OWNER_SERVICE_TAG: "gadget/pyroscope", fake_world.CLUSTER_NAME_TAG: "kubernetes"}, "connections": [
        {"name": f"{endpoint}.f072a430-2d82-4470-ab30-d23fcfee58d1", "status": "Approved",
         "endpoint": "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/managed-rg/providers/"
                     f"Microsoft.Network/privateEndpoints/{endpoint}"}]}
    world["mpes"][f"{grafana}/pyroscope-mpe".lower()] = {"grafana": grafana, "endpoint": endpoint, "pls": pls,
                                                          "status": "Approved", "ip": fake_world.PRIVATE_IP}
    for resource in base["resources"]:
        if resource["type"].startswith("azure-native:"):
            world["arm"][deployment.arm_key(resource["type"], resource["inputs"])] = resource["inputs"]
        if resource["type"] == adopt.RELEASE:
            world["releases"][release] = {"version": resource["inputs"]["version"],
                                          "values": resource["inputs"]["values"]}
            persistence = resource["inputs"]["values"]["pyroscope"]["persistence"]
            if persistence.get("enabled"):  # the claim the procedure's StatefulSet made
                world["claims"][fake_world.release_key(cluster, "gadget", "data-pyroscope-0")] = {
                    "size": persistence["size"], "class": persistence["storageClassName"], "profiles": "kept"}
        deployment.states[resource["urn"]] = {"type": resource["type"], "inputs": resource["inputs"], "stdout": ""}
    procedure_dashboard = {**json.loads(open(dashboard_file, encoding="utf-8").read()), "id": 10, "version": 1}
    procedure_dashboard["description"] = "imported from the main branch by hand"
    g = fake_world.grafana(world, GRAFANA_HOST)
    g["datasources"] = {ds["uid"]: copy.deepcopy(ds) for ds in (PROCEDURE_PYROSCOPE, PROCEDURE_PROMETHEUS,
                                                                *OTHERS.values())}
    g["dashboards"] = {"AdvancedGPUObservability": procedure_dashboard, "team-overview": dict(TEAM_DASHBOARD)}
    g["next_id"] = 30
    deployment.world_path.write_text(json.dumps(world, indent=1, sort_keys=True))


def first_up(sets: dict, tmp_path):
    """The first `pulumi up` after the import, planned with config ``sets``: (head plan JSON, diff, known, deployment
    seeded with the procedure's objects), the deployment not yet applied."""
    pinned = reference("grafana-dashboards/AdvancedGPUObservability.json")
    head = run("dev", sets).to_json()
    base = imported_base(head, (ROLE_NAME,))  # the procedure makes no role assignment: `pulumi up` creates it
    diff, known = plan_diff.preview(base, lambda pending: run("dev", sets, pending=pending))
    deployment = Deployment(tmp_path / "world", {DASHBOARD_URL: str(pinned)})
    seed(deployment, base, str(pinned))
    return head, diff, known, deployment


def test_first_up_without_the_uid_stops_at_the_prometheus_datasource_and_names_it(tmp_path):
    """Without ``prometheusDatasourceUid``, the Prometheus step finds the procedure's datasource by name under the
    uid Grafana picked; Grafana refuses to change a uid, so it writes nothing and names the config to set, in one
    line."""
    head, diff, known, deployment = first_up({}, tmp_path)
    with pytest.raises(EngineError) as failure:
        deployment.apply(diff, known.to_json())
    step, _, stderr = str(failure.value).partition(":")
    assert step == "grafana-datasources-prometheus"
    (line,) = [line for line in stderr.splitlines() if "error: " in line]
    assert f"`pulumi config set prometheusDatasourceUid {HAND_MADE_UID}`, then `pulumi up`" in line
    g = deployment.world()["grafana"][GRAFANA_HOST]
    assert g["datasources"][HAND_MADE_UID] == PROCEDURE_PROMETHEUS


@pytest.mark.parametrize("sets,prometheus_uid", [({"prometheusDatasourceUid": HAND_MADE_UID}, HAND_MADE_UID)],
                         ids=["kept-under-its-uid"])
def test_first_up_after_import_adopts_the_procedures_setup(sets, prometheus_uid, tmp_path):
    """Exactly one datasource per name, with the stack's definitions and this stack's owner ids; the procedure's
    Prometheus datasource is the same Grafana object (its id) under its own uid (docs/adopting.md: Grafana does not
    change a datasource's uid); the dashboard is the stack's, stamped; the MPE is replaced (create-only inputs the
    procedure left unset) and approved; nothing that was not adopted is touched, on `up` or on `destroy`."""
    pinned = reference("grafana-dashboards/AdvancedGPUObservability.json")
    head, diff, known, deployment = first_up(sets, tmp_path)
    ops = {s.name: (s.op, s.replace_order) for s in diff.steps}
    assert ops[EXTENSION_NAME] == ("same", None)
    assert ops["pyroscope-release"] == ("update", None)
    assert ops[MPE_NAME] == ("replace", "delete-first")
    assert any(r.startswith("requestMessage: create-only") for r in diff.step(MPE_NAME).reasons)
    for created in (ROLE_NAME, "grafana-private-link-approve-connection", "grafana-private-link-refresh",
                    "grafana-datasources-pyroscope", "grafana-datasources-prometheus", "gpu-dashboard-upload",
                    "pyroscope-private-link", "pyroscope-data-0"):
        assert ops[created] == ("create", None), created

    deployment.apply(diff, known.to_json())

    world = deployment.world()
    # The private link moved to the stack's Service (the procedure's chart Service is ClusterIP now), the claim the
    # procedure's StatefulSet made is adopted with its profiles, and the one PLS has the new endpoint approved.
    (pls,) = world["pls"].values()
    assert pls["tags"][fake_world.OWNER_SERVICE_TAG] == "gadget/pyroscope-private-link"
    assert [c["status"] for c in pls["connections"]] == ["Approved"]
    assert [c.get("profiles") for c in world["claims"].values()] == ["kept"]
    g = world["grafana"][GRAFANA_HOST]
    by_name: dict[str, list] = {}
    for ds in g["datasources"].values():
        by_name.setdefault(ds["name"], []).append(ds)
    assert {name: len(found) for name, found in by_name.items()} == {
        "local-pyroscope": 1, "amw-gpu-dev": 1, "Loki (team)": 1, "Azure Monitor": 1}
    resources = {r["urn"].rsplit("::", 1)[-1]: r for r in head["resources"]}
    for step, grafana_id in (("grafana-datasources-pyroscope", 2), ("grafana-datasources-prometheus", 3)):
        definition = json.loads(resources[step]["inputs"]["environment"]["DATASOURCE"])
        stored = g["datasources"][definition["uid"]]
        owner = deployment.states[resources[step]["urn"]]["stdout"].split("owner=", 1)[1]
        assert {k: stored[k] for k in definition} == {**definition,
                                                      "jsonData": {**definition["jsonData"], OWNER_KEY: owner}}
        assert stored["id"] == grafana_id  # the procedure's object, adopted in place (not deleted and made anew)
    assert g["datasources"][prometheus_uid]["name"] == "amw-gpu-dev"
    for uid, other in OTHERS.items():
        assert g["datasources"][uid] == other
    upload = resources["gpu-dashboard-upload"]
    dashboard = g["dashboards"]["AdvancedGPUObservability"]
    assert dashboard[OWNER_KEY] == deployment.states[upload["urn"]]["stdout"].split("owner=", 1)[1]
    expected = uploaded(json.loads(pinned.read_bytes()), json.loads(upload["inputs"]["environment"]["DATASOURCES"]),
                        upload["inputs"]["environment"]["DASHBOARD_PROFILE_TYPE"])
    assert comparable(dashboard) == comparable(expected)
    assert expected["templating"]["list"] and any(v.get("current", {}).get("value") == prometheus_uid
                                                  for v in dashboard["templating"]["list"])
    assert g["dashboards"]["team-overview"] == TEAM_DASHBOARD
    (mpe,) = world["mpes"].values()
    assert (mpe["status"], mpe["ip"]) == ("Approved", fake_world.PRIVATE_IP)
    (pls,) = world["pls"].values()
    assert [c["status"] for c in pls["connections"]] == ["Approved"]
    release = fake_world.release_key(canned.cluster_id("rg-aks-gpu-dev", "aks-gpu-dev"), "gadget", "pyroscope")
    assert world["releases"][release]["values"] == resources["pyroscope-release"]["inputs"]["values"]

    deployment.destroy(head)
    g = deployment.world()["grafana"][GRAFANA_HOST]
    assert g["datasources"] == OTHERS and g["dashboards"] == {"team-overview": TEAM_DASHBOARD}


def test_adoption_by_name_never_sends_a_uid_change(scenario_results):
    """A datasource found by name under another uid gets no PUT at all (Grafana answers one that changes the uid with
    400, or 500 in some releases: tests/support/fake_world.py uid_change_answer); no write of any kind."""
    result = scenario_results["datasource-made-by-hand-under-another-uid-names-the-uid-to-set"]
    assert [c["argv"][2] for c in result.calls if c["argv"][0] == "rest"] == ["get", "get"]


def test_docs_commands_are_the_tools():
    """docs/adopting.md's offline.plan flags are the tool's, its --skip names a resource the file holds, and its
    provider URN is the one the tool prints."""
    import re

    text = (ROOT / "docs" / "adopting.md").read_text(encoding="utf-8")
    command = re.sub(r"\$\([^)]*\)", "", text.split("python -m offline.plan", 1)[1].split("```", 1)[0])  # not az's
    flags = set(re.findall(r"(?<![\w-])(--[a-z-]+)", command))
    parser_flags = {"--stack", "--import-file", "--subscription-id", "--grafana-principal-id", "--skip"}
    assert flags == parser_flags
    source = (ROOT / "offline" / "plan.py").read_text(encoding="utf-8")
    assert all(f'"{flag}"' in source for flag in parser_flags)
    skipped = re.findall(r"--skip ([\w-]+)", text)
    assert skipped and set(skipped) == {ROLE_NAME}
    plan = run("dev")
    (urn,) = adopt.import_file(plan)["nameTable"].values()
    targets = " ".join(f"--target '{u.replace(':dev::', ':<stack>::')}'" for u in adopt.provider_targets(plan, urn))
    assert f"pulumi up {targets}" in text
    assert adopt.import_command("import.json") in text


#: Every flag `pulumi import` declares, pulumi/pulumi v3.230.0 pkg/cmd/pulumi/operations/import.go (newImportCmd), and
#: which of them are booleans (cobra takes `--flag=false` only for those).
IMPORT_FLAGS = {"config-file", "debug", "diff", "event-log", "exec-agent", "exec-kind", "file", "from", "generate-code",
                "generate-resources", "json", "message", "out", "parallel", "parent", "preview-only", "properties",
                "protect", "provider", "skip-preview", "stack", "suppress-outputs", "suppress-permalink",
                "suppress-progress", "urns", "yes"}
IMPORT_BOOLEANS = {"debug", "diff", "generate-code", "json", "preview-only", "protect", "skip-preview",
                   "suppress-outputs",
                   "suppress-progress", "urns", "yes"}


def test_the_import_hint_and_the_guide_give_one_command_pulumi_import_takes():
    """What `offline.plan --import-file` prints next and what docs/adopting.md says are the same `pulumi import` line,
    and every flag in it is one `pulumi import --file` accepts in v3.230.0 (a boolean where it is given `=false`)."""
    text = (ROOT / "docs" / "adopting.md").read_text(encoding="utf-8")
    hint = adopt.render(adopt.import_file(run("dev")), "import.json", "aks-gpu-observability/dev")
    commands = set(re.findall(r"pulumi import --file \S+(?: --[\w-]+(?:=\w+)?)*", hint + "\n" + text))
    assert commands == {adopt.import_command("import.json")}, commands
    for flag, value in re.findall(r"--([\w-]+)(?:=(\w+))?", adopt.import_command("import.json")):
        assert flag in IMPORT_FLAGS, flag
        assert not value or (flag in IMPORT_BOOLEANS and value in ("true", "false")), flag


def test_the_import_hint_and_the_guide_mark_the_namespace_as_the_program_reads_it():
    """The namespace's mark the hint prints and docs/adopting.md gives is the one existing/handmade.py takes for this
    stack's (stack.specs.stack_mark)."""
    from stack.specs import STACK_ANNOTATION, stack_mark

    hint = adopt.render(adopt.import_file(run("dev")), "import.json", stack_mark("aks-gpu-observability", "dev"))
    command = f"kubectl annotate namespace gadget {STACK_ANNOTATION}="
    assert f"{command}{stack_mark('aks-gpu-observability', 'dev')}" in hint
    assert f"{command}{stack_mark('aks-gpu-observability', '<stack>')}" in (ROOT / "docs" / "adopting.md").read_text()
