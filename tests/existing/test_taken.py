"""existing/taken.py: an object the stack would create that someone else made (the portal, Managed Prometheus
onboarding, a run by hand) is refused in one line before anything is registered; one the stack made (its managed-by
tag) is the stack's. SIMULATED: the offline plan's canned world (offline/canned.py TAKEN) and the stand-in az."""

from __future__ import annotations

import pytest

from components.pyroscope_storage import derived_account_name
from existing import taken
from offline import canned
from ops import deployer_role
from stack.specs import pyroscope_identity_name
from stack_config.schema import ConfigError
from steps.azcli import AzError
from tests.support.plans import HIDDEN_CLUSTER, HIDDEN_GROUP, cluster_stack, refused_before_anything, shows_the_cluster

SUB = canned.SUBSCRIPTION_ID
CLUSTER = canned.cluster_id("rg-aks-gpu-dev", "aks-gpu-dev")
GRAFANA = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
WORKSPACE = canned.monitor_workspace_id("rg-observability-dev", "amw-gpu-dev")
ACCOUNT = (f"/subscriptions/{SUB}/resourceGroups/rg-aks-gpu-dev/providers/Microsoft.Storage/storageAccounts/"
           f"{derived_account_name(CLUSTER)}")
IDENTITY = (f"/subscriptions/{SUB}/resourceGroups/rg-aks-gpu-dev/providers/Microsoft.ManagedIdentity/"
            f"userAssignedIdentities/{pyroscope_identity_name('aks-gpu-dev')}")
PORTAL_TAGS = {"createdBy": "portal"}
OURS = {"managed-by": "aks-gpu-observability", "env": "dev"}


@pytest.fixture
def world(monkeypatch):
    """Put an object (ARM id -> its tags) into the canned world."""
    def put(resource_id, tags):
        monkeypatch.setitem(canned.TAKEN, resource_id.lower(), tags)
    return put


@pytest.mark.parametrize("key, resource_id, sets, way_out", [
    ("createGrafana", GRAFANA, {"createGrafana": "true"}, "set createGrafana to false to use it as it is"),
    ("createMonitorWorkspace", WORKSPACE, {"createMonitorWorkspace": "true"},
     "set createMonitorWorkspace to false to use it as it is"),
    ("pyroscopeStorageAccount", ACCOUNT, {"pyroscopeMode": "microservices"},
     f"set pyroscopeStorageAccount to {derived_account_name(CLUSTER)} to bring it as it is"),
    ("pyroscopeMode", IDENTITY, {"pyroscopeMode": "microservices"}, "az identity delete --ids"),
], ids=["grafana", "monitor-workspace", "storage-account", "identity"])
def test_an_object_someone_else_made_is_refused_in_one_line_before_anything(plan, world, key, resource_id, sets,
                                                                           way_out):
    """azure-native refused the create ("cannot create already existing resource") half way through `pulumi up`."""
    assert plan(**sets).resources  # the name is free: the stack creates it
    world(resource_id, PORTAL_TAGS)
    with pytest.raises(ConfigError) as caught:
        plan(**sets)
    message = str(caught.value)
    assert caught.value.key == key and "\n" not in message
    assert f"{resource_id} already exists and this stack did not make it" in message and way_out in message


@pytest.mark.parametrize("resource_id, sets", [(GRAFANA, {"createGrafana": "true"}),
                                               (ACCOUNT, {"pyroscopeMode": "microservices"})])
def test_an_object_the_stack_made_is_its_own(plan, world, resource_id, sets):
    world(resource_id, OURS)
    assert plan(**sets).resources


def test_an_object_without_tags_is_someone_elses(plan, world):
    world(WORKSPACE, {})
    with pytest.raises(ConfigError, match="createMonitorWorkspace"):
        plan(createMonitorWorkspace="true")


def test_nothing_is_looked_up_when_the_stack_creates_none_of_them(plan, monkeypatch):
    looked_up = []
    monkeypatch.setattr(canned, "resource_tags", lambda resource_id: looked_up.append(resource_id))
    assert plan().resources  # the dev stack: an existing Grafana and workspace, single binary
    # Only what a run by hand may have left on a first run (existing/handmade.py): the extension and the endpoint.
    assert [resource_id.rsplit("/", 2)[-2] for resource_id in looked_up] == ["extensions", "managedPrivateEndpoints"]


def test_an_az_that_cannot_tell_is_a_warning_and_the_stack_goes_on(plan, monkeypatch):
    def fail(_):
        raise AzError(["resource", "show"], "ERROR: (AuthorizationFailed) no read")

    monkeypatch.setattr(canned, "resource_tags", fail)
    assert plan(createGrafana="true").named("managed-grafana")


def test_az_shows_the_tags_at_the_pinned_api_version_and_needs_only_the_types_read(tmp_path, monkeypatch):
    """ARM's GET by id: 404 is nothing there, a resource without tags answers tags null. Each call needs the type's
    read action, which the deployer's roles hold (ops/deployer_role.py)."""
    from tests.support.scenarios import calls_in, fake_az_env

    not_found = {"exit": 3, "stderr": "ERROR: (ResourceNotFound) The Resource 'Microsoft.Dashboard/grafana/"
                                      "amg-gpu-dev' under resource group 'rg-observability-dev' was not found."}
    group_gone = {"exit": 3, "stderr": "ERROR: (ResourceGroupNotFound) Resource group 'rg-aks-gpu-dev' could not be "
                                       "found.\nCode: ResourceGroupNotFound"}
    shown = [(WORKSPACE, None), (ACCOUNT, PORTAL_TAGS), (IDENTITY, OURS)]  # as ARM answers: the resource, its tags
    rules = [{"match": ["resource", "show", "--ids", GRAFANA], "responses": [not_found]},
             {"match": ["resource", "show", "--ids", GRAFANA.replace("observability", "gone")],
              "responses": [group_gone]}] + [
        {"match": ["resource", "show", "--ids", i], "responses": [{"json": {"id": i, "tags": tags}}]}
        for i, tags in shown]
    for key, value in fake_az_env(tmp_path, rules).items():
        monkeypatch.setenv(key, value)
    assert [taken._az_tags(i) for i in (GRAFANA, WORKSPACE, ACCOUNT, IDENTITY)] == [None, {}, PORTAL_TAGS, OURS]
    assert taken._az_tags(GRAFANA.replace("observability", "gone")) is None  # its group not there yet: nothing is
    calls = [call["argv"] for call in calls_in(tmp_path)][:4]
    role = deployer_role.union(deployer_role.load_roles())
    assert [c[c.index("--api-version") + 1] for c in calls] == ["2024-10-01", "2023-04-03", "2024-01-01", "2023-01-31"]
    assert [deployer_role.az_permission(c).actions for c in calls] == [
        ("Microsoft.Dashboard/grafana/read",), ("Microsoft.Monitor/accounts/read",),
        ("Microsoft.Storage/storageAccounts/read",), ("Microsoft.ManagedIdentity/userAssignedIdentities/read",)]
    assert deployer_role.missing_for_calls(calls, role) == []


@pytest.mark.parametrize("stderr", [
    "ERROR: (ResourceNotFound) The Resource 'Microsoft.Dashboard/grafana/amg-gpu-dev' under resource group "
    "'rg-observability-dev' was not found.\nCode: ResourceNotFound",
    "ERROR: (ParentResourceNotFound) Can not perform requested operation on nested resource. Parent resource "
    "'amg-gpu-dev' not found.\nCode: ParentResourceNotFound",
    "ERROR: (ResourceGroupNotFound) Resource group 'rg-aks-gpu-dev' could not be found.\nCode: ResourceGroupNotFound",
    "ERROR: (ExtensionNotFound) The extension 'inspektor-gadget' was not found.\nCode: ExtensionNotFound",
    "ERROR: Operation returned an invalid status 'Not Found'",
], ids=["resource", "parent", "group", "service-code", "no-body"])
def test_every_404_az_reports_is_nothing_there(monkeypatch, stderr):
    """az exits 3 on every 404 (azure-cli 2.91.0 core/util.py: ResourceNotFoundError); the text is what AzError keeps.
    One read as something else would warn "could not tell" and skip the check on every first run."""
    def not_found(*argv):
        raise AzError(list(argv), stderr)

    monkeypatch.setattr(taken, "az", not_found)
    assert taken._az_tags(GRAFANA) is None


def test_an_az_failure_that_is_no_404_is_raised(monkeypatch):
    def denied(*argv):
        raise AzError(list(argv), "ERROR: (AuthorizationFailed) The client does not have authorization")

    monkeypatch.setattr(taken, "az", denied)
    with pytest.raises(AzError):
        taken._az_tags(GRAFANA)


NODE_GROUP = "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"
OTHER_FRONTEND = (f"/subscriptions/{SUB}/resourceGroups/MC_rg-aks-gpu-b_aks-gpu-b_eastus2/providers/Microsoft.Network/"
                  "loadBalancers/kubernetes-internal/frontendIPConfigurations/a1b2c3")
OWN_FRONTEND = (f"/subscriptions/{SUB}/resourceGroups/{NODE_GROUP}/providers/Microsoft.Network/loadBalancers/"
                "kubernetes-internal/frontendIPConfigurations/d4e5f6")
OWN_PLS_ID = (f"/subscriptions/{SUB}/resourceGroups/{NODE_GROUP}/providers/Microsoft.Network/privateLinkServices/"
              "pyroscope-pls")
SCOPE = f"/subscriptions/{SUB}/resourceGroups/{NODE_GROUP}/providers/Microsoft.Network/loadBalancers/"


def test_a_private_link_service_of_another_cluster_is_refused_before_anything(plan, monkeypatch):
    """kubernetes-sigs/cloud-provider-azure#10943: before it, a Service whose ``azure-pls-name`` matched a private link
    service on another load balancer frontend made the cloud provider repoint that PLS to the new Service and overwrite
    its ``k8s-azure-owner-service`` tag, so the other cluster lost its PLS without an error; after it, the Service is
    refused (SyncLoadBalancerFailed) once the release and Service exist. The stack refuses the name first."""
    monkeypatch.setitem(canned.PRIVATE_LINK_SERVICES, ("rg-shared-pls", "pyroscope-pls"),
                        (OTHER_FRONTEND, "gadget/pyroscope-private-link"))
    with pytest.raises(ConfigError) as caught:
        plan(privateLinkServiceResourceGroup="rg-shared-pls", privateLinkServiceName="pyroscope-pls")
    message = str(caught.value)
    assert message.startswith(f"privateLinkServiceName: private link service pyroscope-pls in rg-shared-pls already "
                              f"serves load balancer frontend {OTHER_FRONTEND} (k8s-azure-owner-service "
                              "gadget/pyroscope-private-link), not this cluster's Service "
                              "gadget/pyroscope-private-link")
    assert "\n" not in message


@pytest.mark.parametrize("owner", ["gadget/pyroscope-private-link", "gadget/pyroscope"])
def test_the_clusters_own_private_link_service_passes_whichever_service_owns_it(plan, monkeypatch, owner):
    """A deployed stack's PLS (its frontend on a load balancer in the cluster's node resource group) passes, whatever
    the case ARM answers in: owned by the stack's Service, or by the chart's ``gadget/pyroscope`` (a stack from before
    the stack's own Service, or the published procedure's PLS, which the private link's move and the run-by-hand check
    handle)."""
    monkeypatch.setitem(canned.PRIVATE_LINK_SERVICES, (NODE_GROUP.lower(), "pyroscope-pls"),
                        (OWN_FRONTEND.upper(), owner))
    assert plan().one("kubernetes:core/v1:Service")


def test_az_shows_a_private_link_services_frontend_owner_and_id(tmp_path, monkeypatch):
    """The one read before anything is registered answers the PLS's ARM id too, as ARM spells it (the preview puts it
    in the endpoint's inputs, where `pulumi up` puts the lookup's), with no further call and no further permission."""
    from tests.support.scenarios import calls_in, fake_az_env

    body = {"id": OWN_PLS_ID.upper(), "loadBalancerFrontendIpConfigurations": [{"id": OTHER_FRONTEND}],
            "tags": {"k8s-azure-owner-service": "gadget/pyroscope-private-link"}}
    not_found = {"exit": 3, "stderr": "ERROR: (ResourceNotFound) The Resource 'Microsoft.Network/privateLinkServices/"
                                      "x' under resource group 'g' was not found.\nCode: ResourceNotFound"}
    rules = [{"match": ["network", "private-link-service", "show", "--name", "pyroscope-pls"],
              "responses": [{"json": body}]},
             {"match": ["network", "private-link-service", "show"], "responses": [not_found]}]
    for key, value in fake_az_env(tmp_path, rules).items():
        monkeypatch.setenv(key, value)
    assert taken._az_pls("g", "pyroscope-pls") == (OTHER_FRONTEND, "gadget/pyroscope-private-link",
                                                   OWN_PLS_ID.upper())
    assert taken._az_pls("g", "x") is None
    calls = [call["argv"] for call in calls_in(tmp_path)]
    assert deployer_role.missing_for_calls(calls, deployer_role.union(deployer_role.load_roles())) == []


def test_refuse_foreign_pls_returns_the_id_of_this_clusters_pls_only(monkeypatch):
    """What the preview may use for the endpoint's privateLinkResourceId (components/grafana_private_link.py): the id
    ARM answered for this cluster's PLS; None when there is none yet, when az could not tell (a warning, the stack goes
    on), or when ARM answered no id. Another cluster's is still refused, whatever its id."""
    answers = {("g", "pyroscope-pls"): (OWN_FRONTEND, "gadget/pyroscope-private-link", OWN_PLS_ID),
               ("g", "chart-owned"): (OWN_FRONTEND.upper(), "gadget/pyroscope", OWN_PLS_ID.lower()),
               ("g", "no-id"): (OWN_FRONTEND, "gadget/pyroscope-private-link", ""),
               ("g", "foreign"): (OTHER_FRONTEND, "gadget/pyroscope-private-link", OWN_PLS_ID)}

    def lookup(group, name):
        if name == "unreadable":
            raise AzError(["network", "private-link-service", "show"], "ERROR: (AuthorizationFailed) no read")
        return answers.get((group, name))

    warned = []
    monkeypatch.setattr(taken, "PLS_LOOKUP", lookup)
    monkeypatch.setattr(taken.masking, "warn", warned.append)
    owner = "gadget/pyroscope-private-link"
    assert taken.refuse_foreign_pls("pyroscope-pls", "g", SCOPE, owner) == OWN_PLS_ID
    assert taken.refuse_foreign_pls("chart-owned", "g", SCOPE, owner) == OWN_PLS_ID.lower()  # as ARM spells it
    assert taken.refuse_foreign_pls("absent", "g", SCOPE, owner) is None
    assert taken.refuse_foreign_pls("no-id", "g", SCOPE, owner) is None
    assert taken.refuse_foreign_pls("unreadable", "g", SCOPE, owner) is None
    assert [w.split(" (")[0] for w in warned] == [
        "privateLinkServiceName: could not tell whether private link service unreadable exists in g"]
    with pytest.raises(ConfigError, match="^privateLinkServiceName: private link service foreign in g already serves"):
        taken.refuse_foreign_pls("foreign", "g", SCOPE, owner)


def test_the_canned_world_answers_the_id_arm_would(monkeypatch):
    """Offline, a PLS of the canned world (offline/canned.py PRIVATE_LINK_SERVICES) answers the id its
    getPrivateLinkService answers, so the preview's id and the one `pulumi up` reads are the same string."""
    monkeypatch.setitem(canned.PRIVATE_LINK_SERVICES, (NODE_GROUP.lower(), "pyroscope-pls"),
                        (OWN_FRONTEND, "gadget/pyroscope-private-link"))
    found = canned.private_link_service_owner(NODE_GROUP, "pyroscope-pls")
    invoked = canned.private_link_service({"resourceGroupName": NODE_GROUP, "serviceName": "pyroscope-pls"}, "eastus2")
    assert found == (OWN_FRONTEND, "gadget/pyroscope-private-link", invoked["id"]) and invoked["id"] == OWN_PLS_ID
    assert canned.private_link_service_owner(NODE_GROUP, "other-pls") is None


SECRECY = pytest.mark.parametrize("secret", [True, False], ids=["secret-reference", "plain-reference"])
#: The node resource group of the cluster clusterStack names (tests/support/plans.py): it carries its name and group.
HIDDEN_NODE_GROUP = f"MC_{HIDDEN_GROUP}_{HIDDEN_CLUSTER}_eastus2"


@SECRECY
def test_a_foreign_pls_in_the_node_group_of_a_cluster_from_a_secret_output_is_refused_masked(monkeypatch, secret):
    """The PLS's group is the cluster's node resource group, which carries the cluster's name and group: [secret]
    in the line when clusterStack's outputs are secret, named when they are plain."""
    monkeypatch.setitem(canned.PRIVATE_LINK_SERVICES, (HIDDEN_NODE_GROUP.lower(), "pyroscope-pls"),
                        (OTHER_FRONTEND, "gadget/pyroscope-private-link"))
    message, _ = refused_before_anything({}, **cluster_stack(secret))
    assert message.startswith("privateLinkServiceName: private link service pyroscope-pls in ")
    assert shows_the_cluster(message, secret), message


def warnings(caplog, start: str) -> list[str]:
    """The warnings the program logged (pulumi.log, which the offline engine hands to Python logging) that start with
    ``start``."""
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.getMessage().startswith(start)]


@SECRECY
def test_a_warning_shows_a_cluster_from_a_secret_output_as_secret(plan, monkeypatch, caplog, secret):
    def fail(*_):
        raise AzError(["network", "private-link-service", "show"], "ERROR: (AuthorizationFailed) no read")

    monkeypatch.setattr(canned, "private_link_service_owner", fail)
    reference = cluster_stack(secret)
    plan(stack_outputs=reference["stack_outputs"], secret_outputs=reference["secret_outputs"], **reference["config"])
    [line] = warnings(caplog, "privateLinkServiceName: could not tell whether private link service pyroscope-pls")
    assert shows_the_cluster(line, secret), line


def test_a_warning_shows_a_secret_config_value_as_secret(monkeypatch, caplog, tmp_path):
    """`pulumi config set --secret privateLinkServiceResourceGroup`: the warning names the group as [secret], whoever
    prints it (the offline plan holds a secure value as a placeholder, which is then the secret value)."""
    from offline import program
    from offline.stack_file import SECRET_PLACEHOLDER
    from tests.support import ROOT

    path = tmp_path / "Pulumi.s.yaml"
    path.write_text((ROOT / "Pulumi.dev.yaml").read_text() + "  aks-gpu-observability:privateLinkServiceResourceGroup:"
                    "\n    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)

    def fail(*_):
        raise AzError(["network", "private-link-service", "show"], "ERROR: (AuthorizationFailed) no read")

    monkeypatch.setattr(canned, "private_link_service_owner", fail)
    program.run("s", {})
    [line] = warnings(caplog, "privateLinkServiceName: could not tell whether private link service ")
    assert " exists in [secret] (ERROR: (AuthorizationFailed) no read)" in line and SECRET_PLACEHOLDER not in line
