"""The offline plan tool: its flags, text and JSON (the interface docs/reviewing.md describes), run in-process and as a
real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from offline import plan as plan_tool
from offline.program import run
from tests.support import EXTENSION, K8S_PROVIDER, RELEASE, ROOT


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "offline.plan", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def dev_json():
    result = cli("--stack", "dev", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_json_shape(dev_json):
    assert set(dev_json) == {"project", "stack", "resources", "invokes", "createOrder", "destroyOrder", "outputs",
                             "secretFingerprints", "secretFingerprintKey", "config"}
    assert dev_json["project"] == "aks-gpu-observability" and dev_json["stack"] == "dev"
    for r in dev_json["resources"]:
        assert set(r) == {"urn", "type", "name", "custom", "parent", "provider", "inputs", "dependencies",
                          "propertyDependencies", "options"}
        assert isinstance(r["urn"], str) and r["urn"].startswith("urn:pulumi:dev::aks-gpu-observability::")
        assert isinstance(r["custom"], bool) and isinstance(r["inputs"], dict)
        assert r["parent"] is None or isinstance(r["parent"], str)
        assert r["provider"] is None or isinstance(r["provider"], str)
        assert all(isinstance(d, str) for d in r["dependencies"])
        # "aliases" only where the program gives some (the component's children: components/gpu_observability.py)
        assert set(r["options"]) - {"aliases"} == {"protect", "deleteBeforeReplace", "retainOnDelete",
                                                   "ignoreChanges", "customTimeouts", "replaceWith",
                                                   "replaceOnChanges"}
        assert isinstance(r["options"].get("aliases", []), list)
        assert isinstance(r["options"]["ignoreChanges"], list)
        assert isinstance(r["options"]["replaceWith"],
                          list) and set(r["options"]["replaceWith"]) <= {x["urn"] for x in dev_json["resources"]}
    for invoke in dev_json["invokes"]:
        assert set(invoke) == {"token", "args"}
    assert isinstance(dev_json["outputs"], dict)


def test_json_lists_extension_release_and_providers(dev_json):
    types = [r["type"] for r in dev_json["resources"]]
    for expected in (EXTENSION, RELEASE, K8S_PROVIDER, "pulumi:providers:azure-native", "pulumi:pulumi:Stack"):
        assert expected in types
    urns = {r["urn"] for r in dev_json["resources"]}
    for r in dev_json["resources"]:
        assert set(r["dependencies"]) <= urns
        assert r["parent"] is None or r["parent"] in urns
        assert r["provider"] is None or r["provider"] in urns


def test_orders_are_consistent_with_dependencies_parents_and_providers(dev_json):
    urns = [r["urn"] for r in dev_json["resources"]]
    create, destroy = dev_json["createOrder"], dev_json["destroyOrder"]
    assert sorted(create) == sorted(urns) and sorted(destroy) == sorted(urns)
    for r in dev_json["resources"]:
        for before in r["dependencies"] + [p for p in (r["parent"], r["provider"]) if p]:
            assert create.index(before) < create.index(r["urn"]), (before, r["urn"])
            assert destroy.index(r["urn"]) < destroy.index(before), (r["urn"], before)


def test_secrets_masked_everywhere(dev_json):
    providers = {r["name"]: r for r in dev_json["resources"] if r["type"] == K8S_PROVIDER}
    assert sorted(providers) == ["aks", "aks-claims"]  # aks-claims: Pyroscope's claims (pyroscopePersistence)
    for provider in providers.values():
        assert provider["inputs"]["kubeconfig"] == "[secret]", provider["name"]
    # The config's key names are no secret (kubeloginMode); its values and everything else must not leak.
    text = json.dumps({**dev_json, "config": sorted(dev_json["config"].values())})
    for leaked in ("BEGIN CERTIFICATE", "kubelogin", "get-token", "client-key-data"):
        assert leaked not in text


def test_text_output_reads_like_a_preview():
    result = cli("--stack", "dev")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Previewing update (dev)")
    for expected in ("azure-native:kubernetesconfiguration:Extension", "inspektor-gadget-extension",
                     "kubernetes:helm.sh/v3:Release", "pyroscope-release", "pulumi:providers:kubernetes",
                     "pulumi:providers:azure-native",
                     "pyroscope-data-0 <- gadget-namespace, pyroscope-claims-identity  [provider: aks-claims]",
                     "pyroscope-release <- gadget-namespace, pyroscope-data-0  [provider: aks]",
                     "pyroscope-private-link <- gadget-namespace, pyroscope-release  [provider: aks]",
                     "Create order:", "Destroy order (pulumi destroy):", "+ 30 to create"):
        assert expected in out, expected
    assert "kubelogin" not in out


def test_text_output_shows_inputs_so_reviewers_see_changes():
    pinned = cli("--set", "extensionVersion=0.46.0").stdout
    default = cli().stdout
    assert '      version: "0.46.0"' in pinned and "autoUpgradeMinorVersion: false" in pinned
    assert "autoUpgradeMinorVersion: true" in default and '"0.46.0"' not in default
    # Both providers, the kubeconfig a secret on each; only aks-claims adopts existing objects.
    assert ('  + pulumi:providers:kubernetes aks\n      kubeconfig: "[secret]"\n  + ' in default)
    assert ('  + pulumi:providers:kubernetes aks-claims\n      kubeconfig: "[secret]"\n'
            '      upsertExistingObjects: "true"\n  + ' in default)
    assert default.count("upsertExistingObjects") == 1


def test_reads_and_retained_resources_are_told_apart():
    out = cli("--set", "clusterStack=acme/aks/prod", "--set", "multiCluster=true").stdout
    assert " >   └─ pulumi:pulumi:StackReference" in out or " >   ├─ pulumi:pulumi:StackReference" in out
    assert "    > 1 to read" in out and "    + 29 to create" in out  # multiCluster: no role assignment
    assert "  > pulumi:pulumi:StackReference acme/aks/prod" in out
    assert "gpu-dashboard-upload  (retainOnDelete: left in place, removed from the state only)" in out
    assert "      (options: retainOnDelete)" in out
    assert ("pyroscope-release <- gadget-namespace, pyroscope-data-0  [provider: aks]  "
            "[replaced whenever gadget-namespace, pyroscope-data-0 is replaced]") in out
    assert ("grafana-private-link-wait-for-pls <- pyroscope-private-link  [provider: default_1_2_1]  "
            "[replaced whenever pyroscope-private-link-identity, pyroscope-private-link is replaced]") in out
    # The PLS's Service is the stack's own: nothing in single-binary mode is replaced with the release.
    assert "pyroscope-release is replaced]" not in out


def test_mermaid_graph():
    result = cli("--graph", "mermaid")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "graph TD"
    ids = {line.split("[")[0].strip().replace("subgraph ", ""): line for line in lines if "[" in line}
    ns = next(i for i, node in ids.items() if "gadget-namespace<br/>" in node)
    ext = next(i for i, node in ids.items() if "inspektor-gadget-extension<br/>" in node)
    rel = next(i for i, node in ids.items() if "pyroscope-release<br/>" in node)
    claim = next(i for i, node in ids.items() if "pyroscope-data-0<br/>" in node)
    aks = next(i for i, node in ids.items() if node.strip().startswith(f"{i}[\"aks<br/>"))
    claims = next(i for i, node in ids.items() if node.strip().startswith(f"{i}[\"aks-claims<br/>"))
    assert f"  {ns} --> {rel}" in lines and f"  {ns} --> {ext}" in lines
    assert f"  {ext} --> {rel}" not in lines
    assert f"  {aks} -.-> {rel}" in lines and f"  {claims} -.-> {rel}" not in lines
    assert f"  {claims} -.-> {claim}" in lines and f"  {aks} -.-> {claim}" not in lines
    assert f"  {claim} --> {rel}" in lines


@pytest.mark.parametrize(
    "args,line",
    [
        (["--set", "clusterName="], "error: clusterName: required and must not be empty"),
        (["--set", "managedPrivateEndpointName=x"],
         "error: managedPrivateEndpointName: expected a managed private endpoint name"),
        (["--set", "clustername=aks"], "error: clustername: unknown config key"),
        (["--set", "clusterName"], "error: --set: expected KEY=VALUE"),
        (["--stack", "nosuch"], "error: stack: no stack file Pulumi.nosuch.yaml"),
        (["--set", "aks-gpu-observability:extensionVerison=0.46.0"],
         "error: extensionVerison: unknown config key (did you mean extensionVersion?)"),
        (["--json", "--graph", "mermaid"], "error: argument --graph: not allowed with argument --json"),
        (["--graph", "dot"], "error: argument --graph: invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, line):
    result = cli(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(line), result.stderr


def test_namespaced_set_passes_through():
    assert run("dev", {"aks-gpu-observability:clusterName": "other"}).one(EXTENSION).inputs["clusterName"] == "other"


def test_runs_are_isolated_and_deterministic():
    first = run("dev", {"extensionVersion": "0.46.0"}).to_json()
    second = run("dev").to_json()
    third = run("dev").to_json()
    # Registration and dependency-gathering order vary between runs; the plan must not (a flaky CI run
    # showed the engine-reported dependency order leaking into the JSON).
    for _ in range(4):
        assert run("dev").to_json() == second
    assert second == third
    assert first != second
    assert json.dumps(second, sort_keys=True) == json.dumps(third, sort_keys=True)


def test_main_in_process_returns_exit_codes(capsys):
    assert plan_tool.main(["--stack", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stack"] == "dev"
    assert plan_tool.main(["--set", "privateLinkIpAddressCount=9"]) == 2
    assert (capsys.readouterr().err.strip()
            == "error: privateLinkIpAddressCount: expected an integer from 1 to 8 (got 9)")


def test_the_text_marks_every_value_a_canned_answer_made_up():
    """A newcomer read "Approved" and http://10.0.4.36:4040 in the offline plan as real: each line holding a value
    that came from a canned answer now says so, and a line of the user's own values does not."""
    from offline import canned
    from offline.plan import render_text

    text = render_text(run("dev"))
    lines = text.splitlines()
    assert "[canned: ...]" in lines[1]
    marked = {line.split(":", 1)[0].strip(): line for line in lines if line.startswith("    ") and ": " in line}
    assert marked["pyroscopePrivateUrl"].endswith("[canned: endpoint private IP]")
    assert marked["managedPrivateEndpointState"].endswith("[canned: endpoint state]")
    assert marked["grafanaEndpoint"].endswith("[canned: Grafana endpoint]")
    assert marked["nodeResourceGroup"].endswith("[canned: node resource group]")
    assert "[canned" not in marked["clusterName"] and "[canned" not in marked["pyroscopeInClusterUrl"]
    for pattern, what in canned.CANNED_VALUES[:3]:
        assert all("[canned" in line and what in line.rsplit("[canned", 1)[1] for line in lines
                   if pattern.search(line) and not line.startswith(("Previewing", "(values"))), what


def test_the_text_shows_ignore_changes_beside_delete_before_replace():
    """The release's ignoreChanges (the claim template's size and class: the engine keeps the state's value there, so a
    change of either is no diff) was in the JSON only; a reviewer reading the text saw the release's
    deleteBeforeReplace but not what it leaves alone."""
    from offline.plan import render_text

    lines = render_text(run("dev")).splitlines()
    release = lines.index(f"  + {RELEASE} pyroscope-release")
    options = next(line for line in lines[release:] if line.startswith("      (options: "))
    assert options == ('      (options: deleteBeforeReplace, ignoreChanges ["values.pyroscope.persistence.size", '
                       '"values.pyroscope.persistence.storageClassName"])')
    assert sum("ignoreChanges" in line for line in lines) == 1  # no other resource ignores anything
    assert "ignoreChanges" not in render_text(run("dev", {"pyroscopePersistence": "false"}))


def test_a_cluster_from_a_stack_reference_is_not_marked_canned_where_the_clusters_answer_is():
    """clusterName and clusterResourceGroup read from clusterStack come from a stack reference (the user's platform
    stack), not from a canned Azure answer: their lines carry no [canned] mark; what the canned getManagedCluster made
    of them (the node resource group, the cluster's id with the canned subscription) does."""
    from offline.plan import render_text
    from tests.support.plans import HIDDEN_CLUSTER, HIDDEN_GROUP, cluster_stack

    reference = cluster_stack(False)
    text = render_text(run("dev", reference["config"], stack_outputs=reference["stack_outputs"]))
    outputs = {line.split(":", 1)[0].strip(): line for line in text.split("\nOutputs ", 1)[1].splitlines()
               if line.startswith("    ") and ": " in line}
    assert outputs["clusterName"] == f'    clusterName: "{HIDDEN_CLUSTER}"'
    assert outputs["clusterResourceGroup"] == f'    clusterResourceGroup: "{HIDDEN_GROUP}"'
    assert outputs["nodeResourceGroup"].endswith("[canned: node resource group]")
    assert outputs["clusterId"].endswith("[canned: subscription id]")
    assert all("[canned" not in line for line in text.splitlines()
               if HIDDEN_CLUSTER in line and "MC_" not in line and "/subscriptions/" not in line)
