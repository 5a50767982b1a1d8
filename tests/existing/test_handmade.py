"""existing/handmade.py: on a cluster whose namespace gadget does not carry the stack's mark, what a run of the
published procedure by hand left (the extension, the Helm release pyroscope, the managed private endpoint) is refused
in one line before anything is registered; on the stack's own namespace nothing more is looked up. SIMULATED: the
offline plan's canned world (offline/canned.py NAMESPACE, HELM_RELEASES, TAKEN) and a stand-in kubectl for the
wrapper; tests/e2e/test_existing.py runs the real kubectl against a real API server."""

from __future__ import annotations

import json
import os
import stat

import pytest

from existing import handmade, taken
from offline import canned
from ops import deployer_role
from stack.specs import STACK_ANNOTATION, arm_type
from stack_config.schema import ConfigError
from steps.azcli import AzError
from tests.support.plans import cluster_stack, shows_the_cluster

CLUSTER = canned.cluster_id("rg-aks-gpu-dev", "aks-gpu-dev")
GRAFANA = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")
EXTENSION = f"{CLUSTER}/providers/Microsoft.KubernetesConfiguration/extensions/inspektor-gadget"
ENDPOINT = f"{GRAFANA}/managedPrivateEndpoints/pyroscope-mpe"
MARK = "aks-gpu-observability/dev"
#: Namespace gadget as the extension's agent (or `helm install --create-namespace`) makes it: no mark, no Pulumi.
BY_HAND = {"name": "gadget", "managedFields": [{"manager": "helm", "operation": "Update"}]}
RECORDS = ["secret/sh.helm.release.v1.pyroscope.v1"]


@pytest.fixture
def cluster(monkeypatch):
    """cluster(namespace metadata or None, releases=..., arm={id: tags}, datasources={name: uid}): the canned world
    of this test."""
    def put(namespace, releases=(), arm=None, datasources=None):
        monkeypatch.setattr(canned, "NAMESPACE", namespace)
        monkeypatch.setattr(canned, "DATASOURCES", dict(datasources or {}))
        monkeypatch.setattr(canned, "HELM_RELEASES", {"pyroscope": list(releases)} if releases else {})
        for resource_id, tags in (arm or {}).items():
            monkeypatch.setitem(canned.TAKEN, resource_id.lower(), tags)
    return put


NAMESPACE_TOO = (f"namespace gadget (no {STACK_ANNOTATION}={MARK} annotation; pulumi-kubernetes creates nothing that "
                 "exists)")
DELETE_EXTENSION = ("az k8s-extension delete --cluster-type managedClusters --cluster-name aks-gpu-dev "
                    "--resource-group rg-aks-gpu-dev --name inspektor-gadget")
DELETE_ENDPOINT = ("az grafana mpe delete --workspace-name amg-gpu-dev --resource-group rg-observability-dev "
                   "--name pyroscope-mpe")
WAY_OUT = "(a run by hand?): bring them under the stack (docs/adopting.md), or delete them ("
#: The namespace's delete command, its warning, and the context the helm and kubectl commands need.
DELETE_NAMESPACE = ("kubectl delete namespace gadget, which deletes all in it, Pyroscope's volumes and profiles too: "
                    "kubectl get pvc,all --namespace gadget shows them; the helm and kubectl ones on the cluster's "
                    "context: az aks get-credentials --resource-group rg-aks-gpu-dev --name aks-gpu-dev")


@pytest.mark.parametrize("namespace, releases, arm, key, expected", [
    (BY_HAND, (), {EXTENSION: {}}, "extensionName",
     f"extensionName: extension {EXTENSION}, {NAMESPACE_TOO} already exist and this stack did not make them {WAY_OUT}"
     f"{DELETE_EXTENSION}; {DELETE_NAMESPACE}), and the stack makes its own"),
    (None, (), {EXTENSION: {}}, "extensionName",
     f"extensionName: extension {EXTENSION} already exists and this stack did not make it (a run by hand?): bring it "
     f"under the stack (docs/adopting.md), or delete it ({DELETE_EXTENSION}), and the stack makes its own"),
    (BY_HAND, RECORDS, {}, "clusterName",
     f"clusterName: Helm release pyroscope in namespace gadget, {NAMESPACE_TOO} already exist and this stack did not "
     f"make them {WAY_OUT}helm uninstall pyroscope --namespace gadget; {DELETE_NAMESPACE}), and the stack "
     "makes its own"),
    (None, (), {ENDPOINT: {}}, "managedPrivateEndpointName",
     f"managedPrivateEndpointName: managed private endpoint {ENDPOINT} (no managed-by=aks-gpu-observability tag) "
     f"already exists and this stack did not make it (a run by hand?): bring it under the stack (docs/adopting.md), "
     f"or delete it ({DELETE_ENDPOINT}), and the stack makes its own"),
    (BY_HAND, RECORDS, {EXTENSION: {}, ENDPOINT: {}}, "extensionName",
     f"extensionName: extension {EXTENSION}, Helm release pyroscope in namespace gadget, managed private endpoint "
     f"{ENDPOINT} (no managed-by=aks-gpu-observability tag), {NAMESPACE_TOO} already exist and this stack did not "
     f"make them {WAY_OUT}{DELETE_EXTENSION}; helm uninstall pyroscope --namespace gadget; {DELETE_ENDPOINT}; "
     f"{DELETE_NAMESPACE}), and the stack makes its own"),
    (None, (), {ENDPOINT: {"managed-by": "aks-gpu-observability"}}, "managedPrivateEndpointName",
     f"managedPrivateEndpointName: {ENDPOINT} already exists and another stack of this project made it (for another "
     f"cluster?): set managedPrivateEndpointName to a free name, or multiCluster to true, or delete it if nothing uses "
     f"it ({DELETE_ENDPOINT})"),
    (BY_HAND, (), {}, "clusterName",
     f"clusterName: {NAMESPACE_TOO} already exists and this stack did not make it (a run by hand?): bring it under "
     f"the stack (docs/adopting.md), or delete it ({DELETE_NAMESPACE}), and the stack makes its own"),
], ids=["extension", "extension-namespace-gone", "release", "endpoint", "all-four", "endpoint-of-another-stack",
        "namespace-alone"])
def test_what_a_run_by_hand_left_is_refused_in_one_line_before_anything(plan, cluster, namespace, releases, arm, key,
                                                                        expected):
    """pulumi-kubernetes 4.29.0+ ("already exists"), azure-native ("cannot create already existing resource") and Helm
    ("cannot re-use a name that is still in use") stopped the first `pulumi up` half way, after what came before. The
    line names everything, and the commands that delete it in an order that works."""
    cluster(namespace, releases, arm)
    with pytest.raises(ConfigError) as caught:
        plan()
    assert caught.value.key == key and str(caught.value) == expected, str(caught.value)


KEEP_UID = ("Grafana does not change a datasource's uid, so for datasource 'amw-gpu-dev' under uid 'bf2k9zq1m0xyz' "
            "(not 'azure-monitor-prometheus') keep the uid (pulumi config set prometheusDatasourceUid bf2k9zq1m0xyz) "
            "or rename or delete it in Grafana")


def test_a_datasource_of_the_stacks_name_under_another_uid_is_named_before_anything(plan, cluster):
    """The procedure's Prometheus datasource (the workspace's name, a uid Grafana picked): the datasource step stops
    there, writing nothing, but after everything before it; on a first run the program names it first."""
    cluster(None, datasources={"amw-gpu-dev": "bf2k9zq1m0xyz", "local-pyroscope": "local-pyroscope"})
    with pytest.raises(ConfigError) as caught:
        plan()
    assert caught.value.key == "prometheusDatasourceUid"
    assert str(caught.value) == f"prometheusDatasourceUid: {KEEP_UID} (docs/adopting.md)"
    cluster(BY_HAND, datasources={"amw-gpu-dev": "bf2k9zq1m0xyz"})
    with pytest.raises(ConfigError) as caught:
        plan()
    assert caught.value.key == "clusterName" and str(caught.value).endswith(
        f"({DELETE_NAMESPACE}), and the stack makes its own; {KEEP_UID}"), str(caught.value)
    cluster(None, datasources={"amw-gpu-dev": "bf2k9zq1m0xyz"})
    assert plan(prometheusDatasourceUid="bf2k9zq1m0xyz").named("gadget-namespace")  # the way out the line gives


def test_datasources_are_not_looked_up_for_a_grafana_the_stack_creates(plan, cluster, monkeypatch):
    cluster(None)
    monkeypatch.setattr(canned, "datasource_uid", lambda *_: pytest.fail("no datasource lookup"))
    assert plan(createGrafana="true").named("managed-grafana")


def test_on_the_stacks_own_namespace_nothing_more_is_looked_up(plan, cluster, monkeypatch):
    """What is in a namespace the stack marked is its own, or imported into it (docs/adopting.md marks it)."""
    cluster({"name": "gadget", "annotations": {STACK_ANNOTATION: MARK}}, RECORDS, {EXTENSION: {}, ENDPOINT: {}})
    monkeypatch.setattr(canned, "helm_releases", lambda *_: pytest.fail("no release lookup"))
    monkeypatch.setattr(canned, "resource_tags", lambda *_: pytest.fail("no ARM lookup"))
    monkeypatch.setattr(canned, "datasource_uid", lambda *_: pytest.fail("no Grafana lookup"))
    assert plan().named("gadget-namespace")


def test_a_namespace_pulumi_kubernetes_applied_without_the_mark_is_the_stacks(plan, cluster):
    """Stacks deployed before the mark: pulumi-kubernetes' server-side apply manager is on it; the next `up` adds the
    mark."""
    cluster({"name": "gadget", "managedFields": [{"manager": "pulumi-kubernetes-a1b2c3d4", "operation": "Apply"}]},
            RECORDS, {EXTENSION: {}})
    assert plan().named("gadget-namespace")


def test_another_stacks_namespace_is_refused_with_the_way_out_of_a_rename(plan, cluster):
    cluster({"name": "gadget", "annotations": {STACK_ANNOTATION: "aks-gpu-observability/staging"}})
    with pytest.raises(ConfigError) as caught:
        plan()
    assert caught.value.key == "clusterName"
    assert str(caught.value).endswith(
        f"kubectl annotate --overwrite namespace gadget {STACK_ANNOTATION}={MARK}"), str(caught.value)


def test_a_namespace_kubectl_cannot_read_is_a_warning_and_the_stack_goes_on(plan, cluster, monkeypatch):
    cluster(BY_HAND, RECORDS, {EXTENSION: {}})

    def kubectl_fails(*_):
        raise handmade.KubectlError("error: You must be logged in to the server (Unauthorized)")

    monkeypatch.setattr(canned, "namespace_metadata", kubectl_fails)
    assert plan().named("gadget-namespace")


def test_an_az_that_cannot_tell_is_a_warning_and_the_stack_goes_on(plan, cluster, monkeypatch):
    cluster(None)

    def az_fails(_):
        raise AzError(["resource", "show"], "ERROR: (AuthorizationFailed) no read")

    monkeypatch.setattr(canned, "resource_tags", az_fails)
    assert plan().named("gadget-namespace")


def test_releases_kubectl_cannot_list_leave_the_namespace_refused_alone(plan, cluster, monkeypatch):
    """No list of Secrets (an RBAC Reader): the release is not named, the namespace that holds it still is."""
    cluster(BY_HAND, RECORDS)

    def kubectl_fails(*_):
        raise handmade.KubectlError('Error from server (Forbidden): secrets is forbidden')

    monkeypatch.setattr(canned, "helm_releases", kubectl_fails)
    with pytest.raises(ConfigError, match="^clusterName: namespace gadget .* already exists"):
        plan()


def test_kubectl_gets_the_kubeconfig_in_a_private_file_and_its_errors_are_one_line(tmp_path, monkeypatch):
    """The wrapper: KUBECONFIG names a file only its owner may read, gone afterwards; stderr's last line on failure."""
    seen = tmp_path / "seen.json"
    script = tmp_path / "kubectl"
    script.write_text("#!/bin/sh\npython3 -c 'import json,os,stat,sys; p=os.environ[\"KUBECONFIG\"]; "
                      "json.dump({\"args\": sys.argv[1:], \"mode\": stat.S_IMODE(os.stat(p).st_mode), "
                      f"\"text\": open(p).read(), \"path\": p}}, open(\"{seen}\", \"w\"))' \"$@\"\n"
                      "[ \"$1\" = --request-timeout=30s ] && [ \"$2\" = fail ] && { echo 'E1 first' >&2; "
                      "echo 'error: the server has asked for the client to provide credentials' >&2; exit 1; }\n"
                      "echo '{\"metadata\": {\"name\": \"gadget\"}}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv(handmade.KUBECTL_ENV, str(script))
    assert handmade._namespace("apiVersion: v1\nkind: Config\n") == {"name": "gadget"}
    got = json.loads(seen.read_text())
    assert got["args"] == ["--request-timeout=30s", "get", "namespace", "gadget", "--ignore-not-found",
                           "--show-managed-fields", "--output", "json"]
    assert got["mode"] == 0o600 and got["text"] == "apiVersion: v1\nkind: Config\n"
    assert not os.path.exists(got["path"])
    with pytest.raises(handmade.KubectlError) as caught:
        handmade.kubectl("x", "fail")
    assert caught.value.last_line == "error: the server has asked for the client to provide credentials"
    monkeypatch.setenv(handmade.KUBECTL_ENV, str(tmp_path / "missing"))
    with pytest.raises(handmade.KubectlError, match="kubectl did not run"):
        handmade._releases("x", "pyroscope")


def test_az_shows_the_extension_and_endpoint_at_the_pinned_api_versions_with_the_types_read(tmp_path, monkeypatch):
    from tests.support.scenarios import calls_in, fake_az_env

    assert [arm_type(i) for i in (EXTENSION, ENDPOINT, GRAFANA)] == [
        "Microsoft.KubernetesConfiguration/extensions", "Microsoft.Dashboard/grafana/managedPrivateEndpoints",
        "Microsoft.Dashboard/grafana"]
    not_found = {"exit": 3, "stderr": "ERROR: (ResourceNotFound) The Resource was not found."}
    rules = [{"match": ["resource", "show", "--ids", EXTENSION], "responses": [{"json": {"id": EXTENSION,
                                                                                         "tags": None}}]},
             {"match": ["resource", "show", "--ids", ENDPOINT], "responses": [not_found]}]
    for key, value in fake_az_env(tmp_path, rules).items():
        monkeypatch.setenv(key, value)
    assert [taken._az_tags(i) for i in (EXTENSION, ENDPOINT)] == [{}, None]
    calls = [call["argv"] for call in calls_in(tmp_path)]
    assert [c[c.index("--api-version") + 1] for c in calls] == ["2023-05-01", "2024-10-01"]
    assert [deployer_role.az_permission(c).actions for c in calls] == [
        ("Microsoft.KubernetesConfiguration/extensions/read",),
        ("Microsoft.Dashboard/grafana/managedPrivateEndpoints/read",)]
    assert deployer_role.missing_for_calls(calls, deployer_role.union(deployer_role.load_roles())) == []


@pytest.mark.parametrize("secret", [True, False], ids=["secret-reference", "plain-reference"])
def test_what_a_run_by_hand_left_on_a_cluster_from_a_secret_output_is_refused_masked(plan, cluster, monkeypatch,
                                                                                      caplog, secret):
    """The refusal's commands (`az aks get-credentials`) and the warning of an extension az cannot tell about (its ARM
    id) name the cluster and its group: [secret] when clusterStack's outputs are secret, named when plain."""
    cluster(BY_HAND)

    def az_fails(_):
        raise AzError(["resource", "show"], "ERROR: (AuthorizationFailed) no read")

    monkeypatch.setattr(canned, "resource_tags", az_fails)
    reference = cluster_stack(secret)
    with pytest.raises(ConfigError) as caught:
        plan(stack_outputs=reference["stack_outputs"], secret_outputs=reference["secret_outputs"],
             **reference["config"])
    message = str(caught.value)
    assert "az aks get-credentials --resource-group " in message and shows_the_cluster(message, secret), message
    [warning] = [r.getMessage() for r in caplog.records
                 if r.getMessage().startswith("could not tell whether a run by hand left /subscriptions/")
                 and "/extensions/" in r.getMessage()]
    assert shows_the_cluster(warning, secret), warning
