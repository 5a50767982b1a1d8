"""The Grafana side of the plan, under mocks: the Monitoring Data Reader role assignment, the datasource steps'
definitions (engine-level JSON), the order of the chain and of teardown, and the optional Grafana and Azure Monitor
workspace the stack creates."""

from __future__ import annotations

import json
import uuid

from offline import canned
from stack.specs import role_assignment_name
from steps.command import script_hash
from tests.support import RELEASE
from tests.support.config_values import named
from tests.support.plans import ENDPOINT

COMMAND = "command:local:Command"
ROLE = "azure-native:authorization:RoleAssignment"
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
SUB = canned.SUBSCRIPTION_ID
WORKSPACE_ID = canned.monitor_workspace_id("rg-observability-dev", "amw-gpu-dev")
GRAFANA_PRINCIPAL = canned.guid("grafana-identity", "rg-observability-dev", "amg-gpu-dev")


def test_monitoring_data_reader_role_assignment(plan):
    role = named(plan(), "grafana-datasources-monitoring-data-reader")
    assert role.type == ROLE
    assert role.inputs["scope"] == WORKSPACE_ID
    assert role.inputs["roleDefinitionId"] == (f"/subscriptions/{SUB}/providers/Microsoft.Authorization"
                                               "/roleDefinitions/b0d8363b-8ddd-447d-831f-62ca05bff136")
    assert role.inputs["principalId"] == GRAFANA_PRINCIPAL
    assert role.inputs["principalType"] == "ServicePrincipal"
    assert role.options["deleteBeforeReplace"] is True  # a derived, fixed name azure-native will not create twice
    name = role.inputs["roleAssignmentName"]
    assert uuid.UUID(name) and name == role_assignment_name(WORKSPACE_ID, "b0d8363b-8ddd-447d-831f-62ca05bff136",
                                                            GRAFANA_PRINCIPAL)


def test_shared_monitoring_data_reader_is_an_ensure_step(plan):
    """multiCluster with assignMonitoringDataReader true: the same assignment (name, role, principal, scope), made by
    steps/ensure_role_assignment.sh, an action step (its hash in triggers) with no delete; another workspace or
    identity is another assignment (triggers)."""
    step = named(plan(multiCluster="true", assignMonitoringDataReader="true"),
                 "grafana-datasources-shared-monitoring-data-reader")
    assert step.type == "command:local:Command" and step.inputs["create"] == "bash steps/ensure_role_assignment.sh"
    assert "delete" not in step.inputs
    assert step.options["retainOnDelete"] is False and step.options["deleteBeforeReplace"] is False
    reader = "b0d8363b-8ddd-447d-831f-62ca05bff136"
    assert step.inputs["environment"] == {
        "ASSIGNMENT_NAME": role_assignment_name(WORKSPACE_ID, reader, GRAFANA_PRINCIPAL),
        "DESCRIPTION": "Azure Managed Grafana reads Inspektor Gadget metrics (aks-gpu-observability)",
        "PRINCIPAL_ID": GRAFANA_PRINCIPAL, "PRINCIPAL_TYPE": "ServicePrincipal",
        "ROLE_DEFINITION_ID": f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{reader}",
        "SCOPE": WORKSPACE_ID, "TIMEOUT_SECONDS": "300"}
    assert step.inputs["triggers"] == [script_hash("ensure_role_assignment.sh"), WORKSPACE_ID, GRAFANA_PRINCIPAL]


def test_role_assignment_name_is_deterministic_and_distinct(plan):
    first = named(plan(), "grafana-datasources-monitoring-data-reader").inputs["roleAssignmentName"]
    assert first == named(plan(), "grafana-datasources-monitoring-data-reader").inputs["roleAssignmentName"]
    assert role_assignment_name(WORKSPACE_ID.upper(), "r", "p") == role_assignment_name(WORKSPACE_ID, "r", "p")
    assert role_assignment_name(WORKSPACE_ID, "r", "p") != role_assignment_name(WORKSPACE_ID, "r", "q")


def test_role_assignment_can_be_left_out(plan):
    p = plan(assignMonitoringDataReader="false")
    assert not p.by_type(ROLE)
    assert named(p, "grafana-datasources-prometheus").dependencies == []


def test_pyroscope_datasource_definition(plan):
    ds = named(plan(), "grafana-datasources-pyroscope")
    assert ds.inputs["create"] == "python3 -m steps.grafana_datasource apply"
    assert ds.inputs["delete"] == "python3 -m steps.grafana_datasource delete"
    env = ds.inputs["environment"]
    assert env["GRAFANA_ENDPOINT"] == ENDPOINT and env["RETRY_FORBIDDEN"] == "false" and env["TIMEOUT_SECONDS"] == "300"
    # A delete asks ARM whether the workspace still exists; a refusal names the key that sets the uid.
    assert env["GRAFANA_ID"] == canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
    assert env["API_VERSION"] == "2024-10-01"
    assert env["UID_CONFIG_KEY"] == "pyroscopeDatasourceUid"
    assert env["DATASOURCE"] == json.dumps(json.loads(env["DATASOURCE"]), sort_keys=True, separators=(",", ":"))
    # As the published procedure creates it (MicrosoftDocs/azure-aks-docs articles/aks/gpu-profiling.md).
    assert json.loads(env["DATASOURCE"]) == {
        "access": "proxy", "jsonData": {"keepCookies": ["pyroscope_git_session"]}, "name": "local-pyroscope",
        "type": "grafana-pyroscope-datasource", "uid": "local-pyroscope", "url": f"http://{canned.MPE_PRIVATE_IP}:4040"}
    # An owner step: identity in triggers (a change replaces, old deleted first), script hash in the
    # environment (an edit updates in place); its owner token reaches updates and the delete through stdout.
    assert ds.inputs["triggers"] == [ENDPOINT, "local-pyroscope"]
    assert env["SCRIPT_SHA256"] == script_hash("grafana_datasource.py")
    assert ds.options["deleteBeforeReplace"] is True
    assert ds.inputs["addPreviousOutputInEnv"] is True


def test_prometheus_datasource_definition(plan):
    env = named(plan(), "grafana-datasources-prometheus").inputs["environment"]
    assert json.loads(env["DATASOURCE"]) == {
        "access": "proxy",
        "jsonData": {"azureCredentials": {"authType": "msi"}, "httpMethod": "POST"},
        "name": "amw-gpu-dev", "type": "prometheus", "uid": "azure-monitor-prometheus",  # named after the workspace
        "url": canned.query_endpoint("amw-gpu-dev", "eastus2")}


def test_datasource_uids_and_names_configurable(plan):
    p = plan(pyroscopeDatasourceUid="pyro-a", pyroscopeDatasourceName="Pyroscope A", prometheusDatasourceUid="prom-a")
    assert json.loads(named(p, "grafana-datasources-pyroscope").inputs["environment"]["DATASOURCE"])["uid"] == "pyro-a"
    assert json.loads(named(p, "grafana-datasources-prometheus").inputs["environment"]["DATASOURCE"])["uid"] == "prom-a"
    assert p.outputs["pyroscopeDatasourceUid"] == "pyro-a" and p.outputs["prometheusDatasourceUid"] == "prom-a"
    defaults = json.loads(named(p, "gpu-dashboard-upload").inputs["environment"]["DATASOURCES"])
    assert defaults["pyroscope_ds"] == {"name": "Pyroscope A", "uid": "pyro-a"}


def test_outputs(plan):
    outputs = plan().outputs
    assert outputs["dashboardUrl"] == f"{ENDPOINT}/d/AdvancedGPUObservability"
    assert outputs["grafanaEndpoint"] == ENDPOINT
    assert outputs["pyroscopeDatasourceUid"] == "local-pyroscope"
    assert outputs["prometheusDatasourceUid"] == "azure-monitor-prometheus"
    assert outputs["pyroscopePrivateUrl"] == f"http://{canned.MPE_PRIVATE_IP}:4040"
    assert outputs["monitorWorkspaceId"] == WORKSPACE_ID


def test_dependency_chain(plan):
    p = plan()
    refresh, pyro = named(p, "grafana-private-link-refresh"), named(p, "grafana-datasources-pyroscope")
    prom, role, upload = (named(p, "grafana-datasources-prometheus"),
                          named(p, "grafana-datasources-monitoring-data-reader"), named(p, "gpu-dashboard-upload"))
    assert refresh.urn in pyro.dependencies
    # Neither reads what the role assignment or the datasources make (components/grafana_datasources.py,
    # components/gpu_dashboard.py): they run beside the private link chain.
    assert role.urn not in prom.dependencies and prom.dependencies == []
    assert upload.dependencies == []


def test_destroy_order_datasource_mpe_release_namespace(plan):
    p = plan()
    d = p.destroy_order.index
    pyroscope = named(p, "grafana-datasources-pyroscope").urn
    mpe, release = p.one(MPE).urn, p.one(RELEASE).urn
    extension = p.one("azure-native:kubernetesconfiguration:Extension").urn
    namespace = p.one("kubernetes:core/v1:Namespace").urn
    assert d(pyroscope) < d(mpe) < d(release) < d(namespace)
    assert d(extension) < d(namespace)
