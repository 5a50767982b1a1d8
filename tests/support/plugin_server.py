"""What the provider plugins of ours share: serving Pulumi's gRPC provider protocol as the engine starts a plugin, and
the wire format of property values.

The engine starts a resource plugin with the engine's address as its first argument and reads the port it listens
on from the plugin's first line of stdout (pulumi/pulumi v3.230.0 ``sdk/go/common/resource/plugin/plugin.go``
``newPlugin``). :func:`serve` does that for a ``ResourceProviderServicer`` on 127.0.0.1, with the protos the
``pulumi`` package ships (``pulumi.runtime.proto``). Property values cross as ``google.protobuf.Struct``: a secret is
``{SECRET_SIG: SECRET_VALUE, "value": ...}`` and an unknown the string :data:`UNKNOWN`
(``sdk/go/common/resource/plugin/rpc.go``); :func:`to_dict`/:func:`to_struct` keep both as they are, and
:func:`reveal`/:func:`has_unknowns` read them. :func:`log` writes to the engine's log as a
provider does (``Engine.Log``), which the CLI prints beside the resource.

The protocol has no authentication, so :func:`serve` answers only the process that started the plugin (the engine):
:class:`EngineOnly` refuses, PERMISSION_DENIED, a call over a connection that process does not hold; and the plugin
dies with it (:func:`die_with_engine`). docs/decisions/test-servers.md says why and what that costs.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import struct
import sys
import threading
from concurrent import futures
from typing import Any, Callable, Optional

import grpc
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc, provider_pb2, provider_pb2_grpc

SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
#: The engine's gRPC messages can be large (a Helm release's manifest, a dashboard): as the engine allows.
MAX_MESSAGE = 400 * 1024 * 1024


def to_dict(struct: Optional[struct_pb2.Struct]) -> dict:
    """A Struct as a dict in the wire format (secrets and unknowns as they came); numbers are floats, as JSON's."""
    return json_format.MessageToDict(struct) if struct is not None else {}


def to_struct(value: dict) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(_integral(value))
    return struct


def _integral(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_integral(v) for v in value]
    return value


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG) == SECRET_VALUE


def reveal(value: Any) -> Any:
    """``value`` with every secret wrapper removed (what a provider acts on)."""
    if is_secret(value):
        return reveal(value.get("value"))
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal(v) for v in value]
    return value


def has_unknowns(value: Any) -> bool:
    if value == UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(has_unknowns(v) for v in value.values())
    if isinstance(value, list):
        return any(has_unknowns(v) for v in value)
    return False


def _key_path(path: str, key: str) -> str:
    """``path`` extended by ``key`` as the engine writes property paths: ``a.b``, or ``a["b-c"]`` for a key that is not
    letters, digits and ``_`` (sdk/go/common/resource/properties_path.go ``String``)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'


def property_diff(old: Any, new: Any, path: str = "") -> dict[str, str]:
    """``{path: add|delete|update}`` for every property path that differs (objects by key, arrays by index, the extra
    elements of a longer array added or deleted), as ``resource.PropertyMap.Diff`` and
    ``plugin.NewDetailedDiffFromObjectDiff`` report them (sdk/go/common/resource/properties_diff.go at v3.230.0): an
    unknown new value is an update, and so is a value that only turned secret or plain (``DeepEquals`` compares
    secretness)."""
    if old == new and not has_unknowns(new):
        return {}
    if isinstance(old, dict) and isinstance(new, dict) and not is_secret(old) and not is_secret(new):
        found: dict[str, str] = {}
        for key in sorted(set(old) | set(new)):
            sub = _key_path(path, key)
            if key not in new or new[key] is None:
                if old.get(key) is not None:
                    found[sub] = "delete"
            elif key not in old or old[key] is None:
                found[sub] = "add"
            else:
                found.update(property_diff(old[key], new[key], sub))
        return found
    if isinstance(old, list) and isinstance(new, list):
        found = {}
        for i in range(max(len(old), len(new))):
            sub = f"{path}[{i}]"
            if i >= len(new) or new[i] is None:
                if i < len(old) and old[i] is not None:
                    found[sub] = "delete"
            elif i >= len(old) or old[i] is None:
                found[sub] = "add"
            else:
                found.update(property_diff(old[i], new[i], sub))
        return found
    return {path: "update"}


KIND = {"add": provider_pb2.PropertyDiff.ADD, "delete": provider_pb2.PropertyDiff.DELETE,
        "update": provider_pb2.PropertyDiff.UPDATE, "add-replace": provider_pb2.PropertyDiff.ADD_REPLACE,
        "delete-replace": provider_pb2.PropertyDiff.DELETE_REPLACE,
        "update-replace": provider_pb2.PropertyDiff.UPDATE_REPLACE}


def diff_response(changes: dict[str, str], forces: Callable[[str], bool], delete_first: bool = False,
                  input_diff: bool = True) -> provider_pb2.DiffResponse:
    """A DiffResponse with a detailed diff of ``changes``; a change at a path for which ``forces(path)`` holds (the
    path's top-level key for the command provider) replaces, delete-first when ``delete_first``."""
    detailed, replaces = {}, []
    for path, kind in changes.items():
        top = re.split(r"[.\[]", path, maxsplit=1)[0]
        if forces(path) or forces(top):
            kind += "-replace"
            replaces.append(top)
        detailed[path] = provider_pb2.PropertyDiff(kind=KIND[kind], inputDiff=input_diff)
    return provider_pb2.DiffResponse(
        changes=provider_pb2.DiffResponse.DIFF_SOME if changes else provider_pb2.DiffResponse.DIFF_NONE,
        replaces=sorted(set(replaces)), deleteBeforeReplace=bool(replaces) and delete_first,
        diffs=sorted({re.split(r"[.\[]", p, maxsplit=1)[0] for p in changes}), detailedDiff=detailed,
        hasDetailedDiff=True)


class EngineLog:
    """The engine's log service at the address the engine started the plugin with (None: nowhere)."""

    SEVERITY = {"debug": engine_pb2.DEBUG, "info": engine_pb2.INFO, "warning": engine_pb2.WARNING,
                "error": engine_pb2.ERROR}

    def __init__(self, address: Optional[str]) -> None:
        self._stub = engine_pb2_grpc.EngineStub(grpc.insecure_channel(address)) if address else None

    def __call__(self, severity: str, message: str, urn: str = "", ephemeral: bool = False) -> None:
        """``ephemeral``: a status line, shown while the step runs and left out of the diagnostics (a provider's
        ``InfoStatus``)."""
        if self._stub is None:
            return
        try:
            self._stub.Log(engine_pb2.LogRequest(severity=self.SEVERITY[severity], message=message, urn=urn,
                                                 ephemeral=ephemeral))
        except grpc.RpcError:  # the engine went away: nothing left to tell
            pass


PR_SET_PDEATHSIG = 1


def die_with_engine() -> int:
    """SIGKILL for this process when the process that started it (the engine) dies, also when the engine is killed
    and cannot stop its plugins (``PR_SET_PDEATHSIG``; it fires when the engine's thread that started the plugin
    exits, which for the Go CLI is when the process does). Exits at once if the engine is already gone. The engine's
    pid."""
    engine = os.getppid()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != engine:
        os._exit(1)
    return engine


NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST = 4, 20, 1
#: 127.0.0.1 as an IPv4 and as an IPv4-mapped IPv6 socket has it (gRPC's Python sockets are IPv6 ones).
LOOPBACK = ((socket.AF_INET, socket.inet_pton(socket.AF_INET, "127.0.0.1") + bytes(12)),
            (socket.AF_INET6, socket.inet_pton(socket.AF_INET6, "::ffff:127.0.0.1")))


def client_socket_inode(client_port: int, server_port: int) -> Optional[int]:
    """The inode of the TCP socket 127.0.0.1:``client_port`` -> 127.0.0.1:``server_port``, by the kernel's exact
    lookup (sock_diag, ``SOCK_DIAG_BY_FAMILY`` without a dump: linux include/uapi/linux/inet_diag.h); None if there
    is none. Reading ``/proc/net/tcp`` instead costs milliseconds a call."""
    for family, address in LOOPBACK:
        sockid = struct.pack("!HH", client_port, server_port) + address + address + struct.pack(
            "=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)  # no interface, INET_DIAG_NOCOOKIE
        request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as netlink:
            netlink.sendto(struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0)
                           + request, (0, 0))
            answer = netlink.recv(65536)
        if struct.unpack_from("=IH", answer)[1] == SOCK_DIAG_BY_FAMILY:  # else NLMSG_ERROR: not in this family
            return struct.unpack_from("=I", answer, 16 + 68)[0]  # struct inet_diag_msg's idiag_inode
    return None


class EngineOnly(grpc.ServerInterceptor):
    """Lets a call through only over a connection whose client socket is an open file of process ``engine``: the
    peer's address (``ipv4:127.0.0.1:PORT``) and our ``port`` name the client's socket
    (:func:`client_socket_inode`), whose inode must be among ``/proc/<engine>/fd``. A socket found there is
    remembered (an inode is not reused while the socket lives); each call still looks its inode up, as a peer address
    can come back on a new connection. Anything else, an unreadable ``/proc`` included, is refused with
    PERMISSION_DENIED."""

    def __init__(self, engine: int) -> None:
        self.engine = engine
        self.port = 0  # set once the server has its port
        self._allowed: set[int] = set()
        self._lock = threading.Lock()

    def allows(self, peer: str) -> bool:
        match = re.fullmatch(r"ipv4:127\.0\.0\.1:(\d+)|ipv6:\[::ffff:127\.0\.0\.1\]:(\d+)", peer)
        if not match:
            return False
        try:
            inode = client_socket_inode(int(match.group(1) or match.group(2)), self.port)
            if not inode:
                return False
            if inode in self._allowed:
                return True
            target = f"socket:[{inode}]"
            folder = f"/proc/{self.engine}/fd"
            for fd in os.listdir(folder):
                try:
                    if os.readlink(f"{folder}/{fd}") == target:
                        with self._lock:
                            self._allowed.add(inode)
                        return True
                except OSError:
                    continue
        except OSError:
            return False
        return False

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        kind = ("stream" if handler.request_streaming else "unary") + "_" + (
            "stream" if handler.response_streaming else "unary")
        behaviour = getattr(handler, kind)

        def guarded(request, context):
            if not self.allows(context.peer()):
                context.abort(grpc.StatusCode.PERMISSION_DENIED,
                              f"this plugin answers only the engine that started it (pid {self.engine})")
            return behaviour(request, context)

        return handler._replace(**{kind: guarded})


def serve(servicer: provider_pb2_grpc.ResourceProviderServicer, argv: list[str]) -> None:
    """Serve ``servicer`` as the engine expects of a plugin: listen on a loopback port, print it, run until the
    engine stops it or dies; only the engine is answered (:class:`EngineOnly`)."""
    guard = EngineOnly(die_with_engine())
    options = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=options, interceptors=[guard])
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    guard.port = port
    server.start()
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    server.wait_for_termination()


def engine_address(argv: list[str]) -> Optional[str]:
    """The engine's address among a plugin's arguments: the last one, after ``--logtostderr``, ``-v=N`` and
    ``--tracing <endpoint>`` (pulumi/pulumi ``sdk/go/common/resource/plugin/plugin.go`` ``buildPluginArguments``)."""
    return next((arg for arg in reversed(argv) if not arg.startswith("-")), None)


def abort_unknown(context: grpc.ServicerContext, what: str, name: str, provider: str) -> None:
    """Refuse a type or invoke token this stand-in does not know, naming it (never an empty answer)."""
    context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{provider} (stand-in): unknown {what} {name!r}")
