"""The servers the end-to-end tests start serve only the test run that started them, and die with it
(docs/decisions/test-servers.md): the API server refuses an anonymous request and authorizes by RBAC, etcd refuses a
client without the control plane's client certificate, a stand-in provider plugin refuses a gRPC call from any process
but the one that started it (the engine), and a test process killed with SIGKILL while its control plane, a `pulumi up`
and its plugins run leaves none of them behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import requests
from google.protobuf import empty_pb2
from pulumi.runtime.proto import provider_pb2_grpc

from tests.support import ROOT, control_plane


@pytest.fixture(scope="module")
def cp(engine_tools):
    with control_plane.reused(engine_tools.bin, engine_tools.kwok_stages) as plane:
        yield plane


def flag(pid: int, name: str) -> str:
    """The value of ``--name`` (``--name=value`` or ``--name value``) on process ``pid``'s command line."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    for i, arg in enumerate(args):
        if arg == f"--{name}":
            return args[i + 1]
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    raise AssertionError(f"--{name} not on the command line of {pid}")


def test_the_api_server_refuses_an_anonymous_request(cp):
    plain = requests.Session()
    plain.trust_env = False
    for path in ("/version", "/api/v1/namespaces/kube-system/secrets"):
        assert plain.get(f"{cp.server}{path}", verify=str(cp.ca_file), timeout=10).status_code == 401, path
    assert cp.api().get(f"{cp.server}/version", timeout=10).status_code == 200


def test_an_identity_outside_system_masters_gets_only_what_rbac_grants(cp):
    """Authorization is RBAC, not AlwaysAllow: the admin impersonating a user with no binding is refused."""
    nobody = cp.api().get(f"{cp.server}/api/v1/namespaces/kube-system/secrets",
                          headers={"Impersonate-User": "someone-else"}, timeout=10)
    assert nobody.status_code == 403, nobody.text
    assert cp.api().get(f"{cp.server}/api/v1/namespaces/kube-system/secrets", timeout=10).status_code == 200


def test_etcd_refuses_a_client_without_the_control_planes_certificate(cp):
    apiserver = cp.processes["kube-apiserver"].pid
    endpoint = flag(apiserver, "etcd-servers")
    address = endpoint.split("://", 1)[1]
    plain = requests.Session()
    plain.trust_env = False
    for url in (f"http://{address}/version", f"https://{address}/version"):
        with pytest.raises(requests.RequestException):
            plain.get(url, verify=str(cp.ca_file), timeout=10).raise_for_status()
    certified = plain.get(f"https://{address}/version", verify=flag(apiserver, "etcd-cafile"),
                          cert=(flag(apiserver, "etcd-certfile"), flag(apiserver, "etcd-keyfile")), timeout=10)
    assert certified.status_code == 200 and "etcdserver" in certified.json()
    assert "--listen-metrics-urls" not in Path(f"/proc/{cp.processes['etcd'].pid}/cmdline").read_bytes().decode()


def test_the_control_plane_files_are_the_users_alone(cp):
    assert cp.folder.stat().st_mode & 0o077 == 0
    for path in cp.folder.iterdir():
        if path.is_file() and path.suffix in (".key", ".crt", ".csv", ".kubeconfig"):
            assert path.stat().st_mode & 0o077 == 0, path


CALL = """
import sys, grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import provider_pb2_grpc
stub = provider_pb2_grpc.ResourceProviderStub(grpc.insecure_channel(sys.argv[1]))
try:
    print(stub.GetPluginInfo(empty_pb2.Empty(), timeout=20).version)
except grpc.RpcError as e:
    print(e.code().name)
"""


def test_a_stand_in_plugin_answers_only_the_process_that_started_it(tmp_path):
    """The engine starts the plugin; another process of the same user on the same port is refused."""
    plugin = subprocess.Popen([sys.executable, "-m", "tests.support.command_provider"], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    try:
        address = f"127.0.0.1:{plugin.stdout.readline().strip()}"
        stub = provider_pb2_grpc.ResourceProviderStub(grpc.insecure_channel(address))
        assert stub.GetPluginInfo(empty_pb2.Empty(), timeout=20).version == "1.2.1"
        other = subprocess.run([sys.executable, "-c", CALL, address], cwd=ROOT, capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
        assert other.stdout.strip() == "PERMISSION_DENIED", other.stdout + other.stderr
        assert stub.GetPluginInfo(empty_pb2.Empty(), timeout=20).version == "1.2.1"
    finally:
        plugin.kill()
        plugin.wait()


# An engine: starts the stand-in plugin as the CLI does, says the plugin's pid once it serves, then waits.
ENGINE = """
import subprocess, sys, time
plugin = subprocess.Popen([sys.executable, "-m", "tests.support.command_provider"], stdout=subprocess.PIPE)
plugin.stdout.readline()
print(plugin.pid, flush=True)
time.sleep(600)
"""


def test_a_stand_in_plugin_dies_with_the_engine_that_started_it():
    """The CLI puts a plugin in its own process group and cannot stop it when it is killed itself."""
    engine = subprocess.Popen([sys.executable, "-c", ENGINE], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        plugin = int(engine.stdout.readline())
        start = Path(f"/proc/{plugin}/stat").read_text().rsplit(")", 1)[1].split()[19]
    finally:
        engine.send_signal(signal.SIGKILL)
        engine.wait()
    deadline = time.monotonic() + 10
    while alive(plugin, start) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(plugin, start):
        os.kill(plugin, signal.SIGKILL)
        pytest.fail(f"the plugin {plugin} outlived its engine")


# A test process: a control plane, then `pulumi up` of a program whose command runs until killed (the stand-in
# command plugin holds it), run by the Workspace as every end-to-end test runs the CLI.
KILLED = """
import sys
from pathlib import Path
from tests.support import control_plane, real_engine
tools = real_engine.tools()
folder = Path(sys.argv[1])
with control_plane.ControlPlane(tools.bin, tools.kwok_stages):
    (folder / "world.json").write_text("{}")
    project = folder / "program"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: killed\\nruntime:\\n  name: python\\n")
    (project / "__main__.py").write_text("from pulumi_command import local\\n"
                                         "local.Command('hold', create='sleep 600')\\n")
    ws = real_engine.Workspace(folder / "ws", tools, folder / "world.json", project=project)
    ws.pulumi("stack", "init", "killed")
    ws.up("killed")
"""


def descendants(root: int) -> dict[int, tuple[str, str]]:
    """Every live descendant of ``root``: pid -> (start time, command line), the start time telling a reused pid."""
    parents, found = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            parents[int(entry.name)] = (int(fields[1]), fields[19], command)
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, (ppid, start, name) in parents.items():
            if ppid == pid and child not in found:
                found[child] = (start, name)
                frontier.append(child)
    return found


def alive(pid: int, start: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] == start and fields[0] != "Z"


def test_a_killed_test_process_leaves_no_server_behind(tmp_path, engine_tools):
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path)], cwd=ROOT, start_new_session=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                             stderr=open(tmp_path / "child.log", "wb"))
    deadline = time.monotonic() + 400
    try:
        while not any(command.startswith("sleep 600") for _, command in descendants(child.pid).values()):
            assert child.poll() is None, (tmp_path / "child.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.5)
        time.sleep(1)
        tree = descendants(child.pid)
        started = " | ".join(command for _, command in tree.values())
        for part in ("/etcd ", "/kube-apiserver ", "/kwok ", "pulumi up ", "pulumi-language-python",
                     "tests.support.command_provider", "sleep 600"):
            assert part in started, (part, started)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    deadline = time.monotonic() + 20
    while (left := {pid: command for pid, (start, command) in tree.items() if alive(pid, start)}) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:  # never leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert left == {}
