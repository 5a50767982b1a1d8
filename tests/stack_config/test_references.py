"""stack_config/references.py: stack references in (clusterStack, grafanaStack) and many clusters sharing one Grafana
(multiCluster)."""

from __future__ import annotations

import pytest

from offline import canned
from stack_config import rules
from stack_config.schema import ConfigError
from tests.support.config_values import CLUSTERS, MPE, PLATFORM, SECRET_CLUSTER, grafana_names, named

EXTENSION = "azure-native:kubernetesconfiguration:Extension"


REF = "pulumi:pulumi:StackReference"


NO_NAMES = {k: "" for k in rules.REQUIRED_UNLESS}


def test_cluster_from_a_stack_reference(plan):
    p = plan(clusterStack="acme/platform-aks/prod", clusterName="", clusterResourceGroup="",
             invoke_overrides=None)
    ref = p.one(REF)
    assert ref.name == "acme/platform-aks/prod" and ref.inputs["name"] == "acme/platform-aks/prod"
    ext = p.one(EXTENSION)
    assert ext.inputs["clusterName"] == "aks-gpu-shared" and ext.inputs["resourceGroupName"] == "rg-aks-gpu-shared"
    assert p.outputs["clusterName"] == "aks-gpu-shared"
    lookup = next(i for i in p.invokes if i.token.endswith("getManagedCluster"))
    assert lookup.args == {"resourceGroupName": "rg-aks-gpu-shared", "resourceName": "aks-gpu-shared"}


def test_grafana_from_a_stack_reference(plan):
    p = plan(grafanaStack="shared-observability", **{k: "" for k in ("grafanaName", "grafanaResourceGroup",
             "monitorWorkspaceName", "monitorWorkspaceResourceGroup")})
    assert p.one(MPE).inputs["workspaceName"] == "amg-gpu-shared"
    assert p.one(MPE).inputs["resourceGroupName"] == "rg-observability-shared"
    lookup = next(i for i in p.invokes if i.token.endswith("getAzureMonitorWorkspace"))
    assert lookup.args == {"azureMonitorWorkspaceName": "amw-gpu-shared",
                           "resourceGroupName": "rg-observability-shared"}


def test_explicit_keys_win_over_referenced_outputs(plan):
    p = plan(clusterStack="acme/platform-aks/prod")  # the dev stack file sets clusterName itself
    assert p.one(EXTENSION).inputs["clusterName"] == "aks-gpu-dev"


def test_missing_output_is_named(plan):
    outputs = {"acme/platform-aks/prod": {"clusterName": "aks-a"}}
    with pytest.raises(ConfigError) as caught:
        plan(clusterStack="acme/platform-aks/prod", clusterName="", clusterResourceGroup="", stack_outputs=outputs)
    assert str(caught.value) == ("clusterStack: stack 'acme/platform-aks/prod' has no output 'clusterResourceGroup'; "
                                 "it must export clusterName, clusterResourceGroup (strings)")


def test_non_string_output_and_invalid_value_are_refused(plan):
    with pytest.raises(ConfigError, match="^grafanaStack: stack 'obs' has a non-string or empty output 'grafanaName'"):
        plan(grafanaStack="obs", grafanaName="",
             stack_outputs={"obs": {**canned.stack_outputs("obs"), "grafanaName": 42}})
    with pytest.raises(ConfigError, match=r"^grafanaName: expected an Azure Managed Grafana name.*\(from stack obs\)$"):
        plan(grafanaStack="obs", grafanaName="",
             stack_outputs={"obs": {**canned.stack_outputs("obs"), "grafanaName": "1-bad"}})


def test_nothing_is_registered_but_the_reference_when_an_output_is_missing():
    from offline import program

    monitor_holder = {}
    original = program.RecordingMonitor

    def capture(mocks):
        monitor_holder["m"] = original(mocks)
        return monitor_holder["m"]

    program.RecordingMonitor = capture
    try:
        with pytest.raises(ConfigError):
            program.run("dev", {"clusterStack": "x", "clusterName": "", "clusterResourceGroup": ""}, None, True,
                        {"x": {}})
    finally:
        program.RecordingMonitor = original
    assert sorted(r.type for r in monitor_holder["m"].recorded) == ["pulumi:pulumi:Stack", REF]


def test_three_clusters_against_one_grafana_never_collide(plan):
    plans = [plan(multiCluster="true", clusterName=name, clusterResourceGroup=rg) for name, rg in CLUSTERS]
    claimed = [grafana_names(p) for p in plans]
    mpes = [c["mpe"] for c in claimed]
    assert len(set(mpes)) == 3, mpes
    assert all(2 <= len(m) <= 20 and m[0].isalpha() for m in mpes)
    uids = [u for c in claimed for u in c["uids"]]
    names = [n for c in claimed for n in c["names"]]
    assert len(set(uids)) == 6 and all(len(u) <= 40 for u in uids)
    assert len(set(names)) >= 4  # equal cluster names in two groups share a display name, never a uid
    assert len({c["endpoint"] for c in claimed}) == 3
    # The dashboard is the same object for all three: same uid, no per-cluster defaults, never deleted.
    uploads = [named(p, "gpu-dashboard-upload") for p in plans]
    assert {u.inputs["environment"]["DASHBOARD_UID"] for u in uploads} == {"AdvancedGPUObservability"}
    assert {u.inputs["environment"]["DATASOURCES"] for u in uploads} == {"{}"}
    assert all(u.options["retainOnDelete"] for u in uploads)


def test_multi_cluster_stacks_leave_the_workspace_role_alone(plan):
    """Once, every cluster stack derived the same role assignment name for the shared
    workspace, so the second collided and any destroy removed the role for all. One per workspace: off by
    default with multiCluster; a stack told to make it only ensures it (a step with no delete, so nothing a
    replacement or a destroy deletes), never owns it as an azure-native resource."""
    roles = "azure-native:authorization:RoleAssignment"
    assert not plan(multiCluster="true").by_type(roles)
    assert not named(plan(multiCluster="true"), "grafana-datasources-prometheus").dependencies
    told = plan(multiCluster="true", assignMonitoringDataReader="true")
    assert not told.by_type(roles)
    step = named(told, "grafana-datasources-shared-monitoring-data-reader")
    assert step.inputs["create"] == "bash steps/ensure_role_assignment.sh" and "delete" not in step.inputs
    assert step.inputs["environment"]["ASSIGNMENT_NAME"] == plan().one(roles).inputs["roleAssignmentName"]
    assert plan().one(roles).options["retainOnDelete"] is False


def test_single_cluster_keeps_the_seed_names(plan):
    claimed = grafana_names(plan())
    assert claimed["mpe"] == "pyroscope-mpe"
    assert claimed["uids"] == {"local-pyroscope", "azure-monitor-prometheus"}
    upload = named(plan(), "gpu-dashboard-upload")
    assert upload.options["retainOnDelete"] is False


def test_explicit_names_win_in_multi_cluster(plan):
    claimed = grafana_names(plan(multiCluster="true", managedPrivateEndpointName="mine"))
    assert claimed["mpe"] == "mine"
    assert claimed["uids"] != {"local-pyroscope", "azure-monitor-prometheus"}


def secret_cluster_plan(plan, **overrides):
    return plan(clusterStack=PLATFORM, clusterName="", clusterResourceGroup="", stack_outputs=SECRET_CLUSTER,
                secret_outputs={PLATFORM: ["clusterName"]}, **overrides)


def test_a_secret_cluster_name_stays_secret_in_inputs_exports_and_the_plan(plan):
    import json

    p = secret_cluster_plan(plan)
    extension = p.one(EXTENSION)
    assert extension.inputs["clusterName"] == "[secret]" and extension.inputs["resourceGroupName"] == "rg-platform"
    for name in ("clusterName", "clusterId", "nodeResourceGroup", "extensionId", "privateLinkServiceId",
                 "privateLinkServiceResourceGroup"):
        assert p.outputs[name] == "[secret]", name
    assert p.outputs["clusterResourceGroup"] == "rg-platform", "what came in plain stays plain"
    assert "gpu-secret-7" not in json.dumps(p.to_json()), "nowhere in the plan: inputs, invokes, outputs"
    mpe = p.one(MPE)
    assert mpe.inputs["requestMessage"] == "[secret]" and mpe.inputs["workspaceName"] == "amg-gpu-dev"


def test_a_secret_cluster_name_is_refused_where_grafana_would_show_it(plan):
    """multiCluster derives names in Grafana from the cluster name; Grafana shows datasource names and uids in plain
    text to every viewer, so a secret one cannot be kept secret there: one line, naming the keys to set instead."""
    with pytest.raises(ConfigError) as caught:
        secret_cluster_plan(plan, multiCluster="true")
    assert str(caught.value) == (
        "clusterName: the value is secret, but multiCluster would derive names in Grafana from it, and Grafana shows "
        "datasource names and uids to every viewer in plain text; set managedPrivateEndpointName, "
        "pyroscopeDatasourceUid, pyroscopeDatasourceName, prometheusDatasourceUid, prometheusDatasourceName "
        "yourself, or make clusterName plain")
    named_by_hand = {"managedPrivateEndpointName": "pyro-mpe-7", "pyroscopeDatasourceUid": "pyro-7",
                     "pyroscopeDatasourceName": "Pyroscope 7", "prometheusDatasourceUid": "prom-7",
                     "prometheusDatasourceName": "Prometheus 7"}
    assert secret_cluster_plan(plan, multiCluster="true", **named_by_hand).outputs["clusterName"] == "[secret]"


def test_a_secret_grafana_name_keeps_the_grafana_side_secret(plan):
    import json

    outputs = {"obs": {**canned.stack_outputs("obs"), "grafanaName": "amg-secret-9"}}
    p = plan(grafanaStack="obs", grafanaName="", stack_outputs=outputs, secret_outputs={"obs": ["grafanaName"]})
    assert p.one(MPE).inputs["workspaceName"] == "[secret]"
    for name in ("grafanaName", "grafanaEndpoint", "dashboardUrl", "managedPrivateEndpointId"):
        assert p.outputs[name] == "[secret]", name
    assert "amg-secret-9" not in json.dumps(p.to_json())


def test_a_cluster_name_set_as_secret_config_stays_secret(tmp_path, monkeypatch):
    """`pulumi config set --secret clusterName ...`: the same rule as a secret referenced output (the offline plan
    holds a secure value as a placeholder, which is then the secret value)."""
    import json

    from offline import program
    from tests.support import ROOT

    text = (ROOT / "Pulumi.dev.yaml").read_text().replace("  aks-gpu-observability:clusterName: aks-gpu-dev\n", "")
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(text + "  aks-gpu-observability:clusterName:\n    secure: "
                           "v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)
    p = program.run("s", {})
    assert p.one(EXTENSION).inputs["clusterName"] == "[secret]" and p.outputs["clusterName"] == "[secret]"
    assert "offline-placeholder-for-secret" not in json.dumps(p.to_json())


# --- one stack for both keys ----------------------------------------------------------------------------------
def test_one_stack_named_by_both_keys_is_read_once(plan):
    """clusterStack and grafanaStack may name the same stack. Two StackReferences of one name have one URN, and the
    engine refuses the second ("Duplicate resource URN", docs/offline.md E12): one read serves both keys."""
    p = plan(clusterStack=PLATFORM, grafanaStack=PLATFORM, **NO_NAMES)
    reference = p.one(REF)
    assert reference.name == PLATFORM and reference.inputs["name"] == PLATFORM
    extension, mpe = p.one(EXTENSION), p.one(MPE)
    assert extension.inputs["clusterName"] == "aks-gpu-shared"
    assert extension.inputs["resourceGroupName"] == "rg-aks-gpu-shared"
    assert mpe.inputs["workspaceName"] == "amg-gpu-shared"
    assert mpe.inputs["resourceGroupName"] == "rg-observability-shared"
    lookup = next(i for i in p.invokes if i.token.endswith("getAzureMonitorWorkspace"))
    assert lookup.args == {"azureMonitorWorkspaceName": "amw-gpu-shared",
                           "resourceGroupName": "rg-observability-shared"}


def test_one_stack_named_by_both_keys_keeps_its_secret_outputs_secret(plan):
    outputs = {PLATFORM: {**canned.stack_outputs(PLATFORM), "clusterName": "gpu-secret-7"}}
    p = plan(clusterStack=PLATFORM, grafanaStack=PLATFORM, stack_outputs=outputs,
             secret_outputs={PLATFORM: ["clusterName"]}, **NO_NAMES)
    assert len(p.by_type(REF)) == 1
    assert p.one(EXTENSION).inputs["clusterName"] == "[secret]"
    assert p.one(MPE).inputs["workspaceName"] == "amg-gpu-shared"


def test_one_stack_named_by_both_keys_plans_clean_from_the_command_line():
    import subprocess
    import sys

    from tests.support import ROOT

    sets = [f"--set={key}=" for key in NO_NAMES] + [f"--set=clusterStack={PLATFORM}", f"--set=grafanaStack={PLATFORM}"]
    done = subprocess.run([sys.executable, "-m", "offline.plan", "--stack", "dev", *sets], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith(" >")] == \
        [line for line in done.stdout.splitlines() if REF in line and line.startswith(" >")]
    assert "> 1 to read" in done.stdout
