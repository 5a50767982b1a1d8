"""A provider plugin that runs a real one behind it and holds one of its answers, for the kill-point tests: the engine
then waits on a step whose effect the world already has, and a kill there leaves the worst case (the object made or
deleted, the state with only a pending operation), however late the engine's event log reports the step.

Put first on ``PATH`` as ``pulumi-resource-<name>`` (:func:`install`), it starts the plugin :data:`REAL_ENV` names
with the same arguments (the engine's address last), reads the port from that plugin's first line of stdout, as the
engine does (pulumi/pulumi ``sdk/go/common/resource/plugin/plugin.go`` ``newPlugin``), serves the same unary calls
on a port of its own and forwards each byte for byte. :data:`HOLD_ENV` (``METHOD:NAME``, e.g.
``Create:pyroscope-network-policy``): once the real plugin has answered that call for the resource whose URN ends
``::NAME``, the answer is held until the process dies. Answers only the engine (``plugin_server.EngineOnly``); the
real plugin dies with this one.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Optional

import grpc
from pulumi.runtime.proto import provider_pb2

from tests.support import plugin_server

HOLD_ENV = "PROVIDER_HOLD"
REAL_ENV = "PROVIDER_HOLD_REAL"
SERVICE = "/pulumirpc.ResourceProvider/"
#: The calls that can be held, with the request that names the resource.
REQUESTS = {"Create": provider_pb2.CreateRequest, "Update": provider_pb2.UpdateRequest,
            "Delete": provider_pb2.DeleteRequest}


def install(folder: Path, plugin: str, real: str, method: str, name: str) -> dict[str, str]:
    """Write ``folder``/pulumi-resource-``plugin`` running this module; the environment that makes the engine start it
    (``PATH`` to prepend: ``folder``) and hold ``method`` of ``name``, with ``real`` the plugin behind it."""
    if method not in REQUESTS:
        raise ValueError(f"{HOLD_ENV}: cannot hold {method!r} (one of {', '.join(REQUESTS)})")
    from tests.support.real_engine import plugin_wrapper

    folder.mkdir(parents=True, exist_ok=True)
    plugin_wrapper(folder / f"pulumi-resource-{plugin}", "-m tests.support.provider_hold")
    return {HOLD_ENV: f"{method}:{name}", REAL_ENV: real}


def held(method: str, request: bytes, hold: str) -> bool:
    """Whether the answer to ``method`` (``/pulumirpc.ResourceProvider/Create``) for ``request`` is the one to hold."""
    wanted, _, name = hold.partition(":")
    if method != SERVICE + wanted:
        return False
    urn = REQUESTS[wanted].FromString(request).urn
    return urn.endswith("::" + name)


class Forward(grpc.GenericRpcHandler):
    """Every call the engine makes, sent on to the real plugin as it came; its answer (or error, with the status
    details a partial create carries) returned as it came."""

    def __init__(self, channel: grpc.Channel, hold: str) -> None:
        self.channel, self.hold = channel, hold

    def service(self, details: grpc.HandlerCallDetails) -> Optional[grpc.RpcMethodHandler]:
        method = details.method
        call = self.channel.unary_unary(method)

        def forward(request: bytes, context: grpc.ServicerContext) -> bytes:
            try:
                response = call(request)
            except grpc.RpcError as error:
                context.set_trailing_metadata(error.trailing_metadata() or ())
                context.abort(error.code(), error.details() or "")
            if self.hold and held(method, request, self.hold):
                threading.Event().wait()  # until the test kills the engine and, with it, this plugin
            return response

        return grpc.unary_unary_rpc_method_handler(forward)


def _die_with_parent() -> None:
    """In the real plugin's child, before exec: SIGKILL when this plugin dies (no thread runs yet here)."""
    ctypes.CDLL(None).prctl(plugin_server.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _copy(source, target) -> None:
    for line in iter(source.readline, b""):
        target.write(line)
        target.flush()


def main(argv: list[str]) -> int:
    guard = plugin_server.EngineOnly(plugin_server.die_with_engine())
    real = subprocess.Popen([os.environ[REAL_ENV], *argv], stdout=subprocess.PIPE, preexec_fn=_die_with_parent)
    port = real.stdout.readline().decode().strip()
    if not port.isdigit():
        sys.stderr.write(f"provider_hold: {os.environ[REAL_ENV]} printed no port ({port!r})\n")
        return 1
    threading.Thread(target=_copy, args=(real.stdout, sys.stdout.buffer), daemon=True).start()
    options = [("grpc.max_receive_message_length", plugin_server.MAX_MESSAGE),
               ("grpc.max_send_message_length", plugin_server.MAX_MESSAGE)]
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=options)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=options, interceptors=[guard],
                         handlers=[Forward(channel, os.environ.get(HOLD_ENV, ""))])
    guard.port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sys.stdout.write(f"{guard.port}\n")
    sys.stdout.flush()
    threading.Thread(target=lambda: (real.wait(), os._exit(real.returncode or 0)), daemon=True).start()
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
