"""Recovering a deployed dev stack under the real engine, as docs/troubleshooting.md tells a user to: an interrupted
`pulumi up`, Grafana's endpoint deleted by hand, the private link Service deleted by hand, a forced refresh step, and
a targeted destroy of Pyroscope with what depends on it. Each ends with the stack converged and nothing lost."""

from __future__ import annotations

import subprocess
import time

from offline import canned
from tests.support import fake_world, processes
from tests.support.azure_provider import HOLD_ENV

STACK = "dev"
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
GRAFANA_ID = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")


def urn(ws, name: str) -> str:
    return next(r["urn"] for r in ws.state(STACK)["resources"] if r["urn"].endswith(f"::{name}"))


def converged(aks, ws) -> None:
    """Nothing left to change, and the private link approved end to end."""
    changes = {op: n for op, n in ws.preview(STACK)["changeSummary"].items() if op != "same"}
    assert changes == {}, changes
    world = aks.world()
    assert [(m["status"], m["ip"]) for m in world["mpes"].values()] == [("Approved", canned.MPE_PRIVATE_IP)]
    connections = [c["status"] for p in world["pls"].values() for c in p["connections"]]
    assert connections == ["Approved"], connections
    assert set(next(iter(world["grafana"].values()))["datasources"]) == {"local-pyroscope", "azure-monitor-prometheus"}


def deployed(aks, engine_tools, chart, tmp_path):
    ws = aks.workspace(tmp_path / "ws", engine_tools, chart)
    ws.init(STACK, {"pyroscopeChart": chart.reference})
    return ws


def test_an_up_killed_while_the_endpoint_is_created_is_recovered_by_cancel_and_an_import(
        aks, engine_tools, chart, tmp_path):
    ws = deployed(aks, engine_tools, chart, tmp_path)
    # The CLI is killed while ARM's PUT of the endpoint is in flight: Azure has it, the state has a pending create.
    # Under the reaper: the kill takes the CLI and everything it started, as a vanished runner does, and leaves no
    # plugin running after the test.
    up = processes.popen(["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", STACK],
                         cwd=ws.project, env={**ws.env, HOLD_ENV: MPE}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not aks.world()["mpes"]:
        assert up.poll() is None and time.monotonic() < deadline, "the endpoint was never created"
        time.sleep(0.5)
    time.sleep(1)
    up.kill()
    up.wait()
    pending = [p["resource"]["urn"] for p in ws.state(STACK).get("pending_operations") or []]
    assert len(pending) == 1 and MPE in pending[0]
    # As docs/troubleshooting.md says: the stack is locked; unlock it, import what Azure made, then up.
    locked = ws.up(STACK, check=False)
    assert "locked" in locked.stdout + locked.stderr
    ws.pulumi("cancel", "--yes", stack=STACK)
    mpe_id = f"{GRAFANA_ID}/managedPrivateEndpoints/pyroscope-mpe"
    ws.pulumi("import", "--yes", MPE, "grafana-private-link-mpe", mpe_id, "--parent", urn(ws, "grafana-private-link"),
              "--protect=false", "--generate-code=false", stack=STACK)
    ws.up(STACK)
    converged(aks, ws)


def test_an_endpoint_deleted_by_hand_comes_back_after_a_refresh(aks, engine_tools, chart, tmp_path):
    ws = deployed(aks, engine_tools, chart, tmp_path)
    ws.up(STACK)
    with fake_world.locked(str(aks.world_path)) as world:
        fake_world.delete_mpe(world, GRAFANA_ID, "pyroscope-mpe")
        world["arm"] = {k: v for k, v in world["arm"].items() if not k.startswith(MPE + " ")}
    ws.refresh(STACK)
    assert not any(r["type"] == MPE for r in ws.state(STACK)["resources"])
    ws.up(STACK)  # created again: a new creation time, so approved and refreshed again
    converged(aks, ws)


def test_the_private_link_service_deleted_by_hand_comes_back_with_a_refresh_and_a_new_endpoint(
        aks, engine_tools, chart, tmp_path):
    ws = deployed(aks, engine_tools, chart, tmp_path)
    ws.up(STACK)
    aks.cp.api().delete(f"{aks.cp.server}/api/v1/namespaces/gadget/services/pyroscope-private-link",
                        timeout=10).raise_for_status()
    deadline = time.monotonic() + 60
    while aks.world()["pls"]:  # the cloud provider deletes the PLS with its connections
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert [m["status"] for m in aks.world()["mpes"].values()] == ["Disconnected"]
    ws.refresh(STACK)
    ws.up(STACK, "--replace", urn(ws, "grafana-private-link-mpe"))
    converged(aks, ws)


def test_a_forced_refresh_step_changes_nothing_else(aks, engine_tools, chart, tmp_path):
    ws = deployed(aks, engine_tools, chart, tmp_path)
    ws.up(STACK)
    done = ws.up(STACK, "--replace", urn(ws, "grafana-private-link-refresh"))
    assert "+-1 replaced" in done.stdout and "unchanged" in done.stdout
    converged(aks, ws)


def test_a_targeted_destroy_of_the_release_takes_what_depends_on_it_first(aks, engine_tools, chart, tmp_path):
    ws = deployed(aks, engine_tools, chart, tmp_path)
    ws.up(STACK)
    ws.destroy(STACK, "--target", urn(ws, "pyroscope-release"), "--target-dependents")
    names = {r["urn"].rsplit("::", 1)[-1] for r in ws.state(STACK)["resources"]}
    assert not names & {"pyroscope-release", "pyroscope-private-link", "grafana-private-link-mpe",
                        "grafana-datasources-pyroscope"}
    world = aks.world()
    assert world["mpes"] == {} and world["pls"] == {}
    assert aks.cp.get("/api/v1/namespaces/gadget/services/pyroscope-private-link") is None
    ws.up(STACK)
    converged(aks, ws)


def test_fields_taken_over_with_kubectl_are_taken_back_by_the_next_up_that_changes_them(
        aks, engine_tools, chart, tmp_path):
    """pulumi/pulumi-kubernetes#2491, #2750: after someone takes a field of an object the stack owns outright with
    `kubectl` (here a server-side apply under another field manager, as a platform team's GitOps or `kubectl apply
    --server-side --force-conflicts` does), the next `pulumi up` that changes that field failed on a field-manager
    conflict. The real kubectl edits, against the real API server; the real engine and provider take the stack's
    values back (pulumi.com/patchForce), and the stack converges."""
    ws = deployed(aks, engine_tools, chart, tmp_path)
    ws.up(STACK)
    kubectl = [str(engine_tools.bin / "kubectl"), "--kubeconfig", str(aks.cp.kubeconfig), "-n", "gadget"]
    taken = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: pyroscope}
spec:
  podSelector: {matchLabels: {app.kubernetes.io/name: pyroscope}}
  ingress: [{from: [{ipBlock: {cidr: 10.99.0.0/16}}], ports: [{port: 4040, protocol: TCP}]}]
---
apiVersion: v1
kind: Service
metadata:
  name: pyroscope-private-link
  annotations: {service.beta.kubernetes.io/azure-pls-visibility: "*"}
"""
    subprocess.run([*kubectl, "apply", "--server-side", "--field-manager=platform-team", "--force-conflicts", "-f",
                    "-"], input=taken, text=True, check=True, capture_output=True)
    ws.pulumi("config", "set", "--path", "pyroscopeAllowedCidrs[0]", "10.10.0.0/16", stack=STACK)
    ws.pulumi("config", "set", "privateLinkVisibility", canned.SUBSCRIPTION_ID, stack=STACK)
    ws.up(STACK)
    policy = aks.cp.get("/apis/networking.k8s.io/v1/namespaces/gadget/networkpolicies/pyroscope")
    cidrs = [peer["ipBlock"]["cidr"] for rule in policy["spec"]["ingress"] for peer in rule.get("from") or []
             if "ipBlock" in peer]
    assert cidrs == ["10.10.0.0/16"], policy["spec"]["ingress"]
    service = aks.cp.get("/api/v1/namespaces/gadget/services/pyroscope-private-link")
    annotations = service["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/azure-pls-visibility"] == canned.SUBSCRIPTION_ID
    converged(aks, ws)
