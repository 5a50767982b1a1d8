"""STAND-IN for the pulumi-command provider plugin (``pulumi-resource-command``), which the Go module proxy refuses: a
plugin on Pulumi's real gRPC provider protocol (tests/support/plugin_server.py) that runs ``command:local:Command``
as upstream v1.2.1 does. The end-to-end tests use it only when no real ``command`` plugin is given
(``AKS_GPU_OBS_COMMAND_PLUGIN``, tests/support/real_engine.py).

Behaviour, from pulumi/pulumi-command v1.2.1 ``provider/pkg/provider/local/commandController.go``, ``commandOutputs.go``
(``run``), ``logging.go``, ``common/inputs.go`` and pulumi/pulumi-go-provider v1.3.0 ``infer/resource.go`` (``diff``,
``markComputed``, ``markSecret``), which it is built on:

- Check returns the inputs. Diff compares the old inputs with the new (``ignoreChanges`` paths keep the state's value),
  per property path; only ``triggers`` is replaceOnChanges, every other change an in-place update; never delete-first.
- No command runs in a preview. Create runs ``create``; Update runs ``update``, else ``create``; Delete runs ``delete``
  with the state of the last create or update; Read keeps the state.
- A command runs as ``interpreter`` + command (default ``/bin/sh -c``) in ``dir`` (default: the plugin's working
  directory, the project's, where the engine starts plugins), with the plugin's environment plus ``environment``,
  ``PULUMI_COMMAND_STDOUT``/``_STDERR`` of the state when ``addPreviousOutputInEnv`` is not false, ``stdin``; each
  line goes to the engine's log as a status line (ephemeral) per ``logging`` (default both streams); a failure is
  ``<exit status>: running "<command>":`` and the output. ``assetPaths`` globs files under ``dir`` into ``assets``.
- Outputs are the inputs plus ``stdout``/``stderr`` (trailing newline cut). A preview's create reports them unknown, as
  an update's when an input changed or is unknown. A secret input stays secret where it is; ``stdout`` is not made
  secret by it (measured with the real v1.2.1 plugin under the real engine: a program that needs it secret says so,
  ``additionalSecretOutputs``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Optional

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

from tests.support import plugin_server as wire

TYPE = "command:local:Command"
VERSION = "1.2.1"
REPLACE_ON_CHANGES = ("triggers",)
OUTPUTS = ("stdout", "stderr")
ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"
#: TEST-ONLY: a resource name whose command, once it has run, never answers the engine (a step that did its work
#: while the CLI was killed), for the kill-point tests (tests/support/kill_points.py).
HOLD_ENV = "COMMAND_STANDIN_HOLD_AFTER"


def with_ignored(news: dict, state: dict, ignore_changes: list[str]) -> dict:
    """``news`` with each top-level ``ignoreChanges`` key set to the state's value (go-provider ``diff``)."""
    news = dict(news)
    for key in ignore_changes:
        if key in state:
            news[key] = state[key]
    return news


def glob_assets(directory: str, patterns: list[str]) -> dict:
    """``globAssets``: files under ``directory`` matching the patterns in order (``!`` excludes), as path assets."""
    found: dict[str, Any] = {}
    files = sorted(str(p.relative_to(directory)) for p in Path(directory).rglob("*") if p.is_file())
    for pattern in patterns:
        exclude = pattern.startswith("!")
        for name in fnmatch.filter(files, pattern.lstrip("!")):
            if exclude:
                found.pop(name, None)
            else:
                digest = hashlib.sha256(Path(directory, name).read_bytes()).hexdigest()
                found[name] = {wire.SECRET_SIG: ASSET_SIG, "path": str(Path(directory, name)), "hash": digest}
    return found


class CommandFailed(Exception):
    pass


class CommandProvider(provider_pb2_grpc.ResourceProviderServicer):
    def __init__(self, log: wire.EngineLog) -> None:
        self.log = log

    # --- the plugin and its configuration ---
    def GetPluginInfo(self, request, context):
        return plugin_pb2.PluginInfo(version=VERSION)

    def CheckConfig(self, request, context):
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request, context):
        return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)

    def Configure(self, request, context):
        return provider_pb2.ConfigureResponse(acceptSecrets=True, supportsPreview=True, acceptResources=True)

    def Cancel(self, request, context):
        return empty_pb2.Empty()

    def _type(self, urn: str, context) -> None:
        type_ = urn.split("::")[-2].split("$")[-1]
        if type_ != TYPE:
            wire.abort_unknown(context, "resource type", type_, "pulumi-resource-command")

    # --- resources ---
    def Check(self, request, context):
        self._type(request.urn, context)
        return provider_pb2.CheckResponse(inputs=request.news)

    def Diff(self, request, context):
        self._type(request.urn, context)
        state, news = wire.to_dict(request.olds), wire.to_dict(request.news)
        old_inputs = wire.to_dict(request.old_inputs) if request.HasField("old_inputs") else {
            k: v for k, v in state.items() if k not in OUTPUTS + ("assets", "archive")}
        news = with_ignored(news, state, list(request.ignoreChanges))
        news = {k: v for k, v in news.items() if k != "version" and not k.startswith("__")}
        # go-provider passes inputDiff false (NewDetailedDiffFromObjectDiff(objDiff, false), infer/resource.go).
        return wire.diff_response(wire.property_diff(old_inputs, news), lambda key: key in REPLACE_ON_CHANGES,
                                  input_diff=False)

    def Create(self, request, context):
        self._type(request.urn, context)
        inputs = wire.to_dict(request.properties)
        name = request.urn.rsplit("::", 1)[-1]
        rid = f"{name}{secrets.token_hex(4)}"
        if request.preview:
            return provider_pb2.CreateResponse(id=rid, properties=wire.to_struct(
                {**inputs, **dict.fromkeys(OUTPUTS, wire.UNKNOWN)}))
        outputs = self._run_step(request.urn, inputs.get("create"), inputs, {}, context)
        return provider_pb2.CreateResponse(id=rid, properties=wire.to_struct(outputs))

    def Update(self, request, context):
        self._type(request.urn, context)
        state, news = wire.to_dict(request.olds), wire.to_dict(request.news)
        old_inputs = wire.to_dict(request.old_inputs) if request.HasField("old_inputs") else state
        previous = {k: state[k] for k in OUTPUTS if k in state}
        if request.preview:
            # markComputed: an input that is unknown, or that was there before and changed (added ones do not count).
            changed = any(value == wire.UNKNOWN or (key in old_inputs and wire.property_diff(old_inputs[key], value))
                          for key, value in news.items())
            outputs = {**news, **(dict.fromkeys(OUTPUTS, wire.UNKNOWN) if changed else previous)}
            return provider_pb2.UpdateResponse(properties=wire.to_struct(outputs))
        command = news.get("update") or news.get("create")
        outputs = self._run_step(request.urn, command, news, previous, context)
        return provider_pb2.UpdateResponse(properties=wire.to_struct(outputs))

    def Delete(self, request, context):
        self._type(request.urn, context)
        state = wire.to_dict(request.properties)
        if state.get("delete"):
            self._run_step(request.urn, state["delete"], state, {k: state[k] for k in OUTPUTS if k in state}, context)
        return empty_pb2.Empty()

    def Read(self, request, context):
        self._type(request.urn, context)
        return provider_pb2.ReadResponse(id=request.id, properties=request.properties, inputs=request.inputs)

    # --- running a command ---
    def _run_step(self, urn: str, command: Optional[Any], inputs: dict, previous: dict, context) -> dict:
        outputs = {**inputs, **{k: previous.get(k, "") for k in OUTPUTS}}
        if not command:
            return outputs
        plain = wire.reveal(inputs)
        try:
            stdout, stderr = self._run(urn, wire.reveal(command), plain, wire.reveal(previous))
        except CommandFailed as failure:
            context.abort(grpc.StatusCode.UNKNOWN, str(failure))
        outputs.update(stdout=stdout, stderr=stderr)
        if os.environ.get(HOLD_ENV) and urn.endswith("::" + os.environ[HOLD_ENV]):
            threading.Event().wait()
        directory = plain.get("dir") or os.getcwd()
        if plain.get("assetPaths") is not None:
            outputs["assets"] = glob_assets(directory, plain["assetPaths"])
        return outputs

    def _run(self, urn: str, command: str, inputs: dict, previous: dict) -> tuple[str, str]:
        argv = [*(inputs.get("interpreter") or ["/bin/sh", "-c"]), command]
        env = {**os.environ, **(inputs.get("environment") or {})}
        if inputs.get("addPreviousOutputInEnv", True) is not False:
            for key, name in (("stdout", "PULUMI_COMMAND_STDOUT"), ("stderr", "PULUMI_COMMAND_STDERR")):
                if previous.get(key):
                    env[name] = previous[key]
        logging = inputs.get("logging") or "stdoutAndStderr"
        process = subprocess.Popen(argv, cwd=inputs.get("dir") or os.getcwd(), env=env, text=True,
                                   stdin=subprocess.PIPE if inputs.get("stdin") else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        combined: list[str] = []
        lock = threading.Lock()

        def pump(stream, into: list[str], logged: bool) -> None:
            for line in stream:
                into.append(line)
                with lock:
                    combined.append(line)
                if logged:  # util.LogOutput: InfoStatus, an ephemeral status line
                    self.log("info", line.rstrip("\n"), urn, ephemeral=True)

        out, err = [], []
        threads = [threading.Thread(target=pump, args=(process.stdout, out, logging in ("stdout", "stdoutAndStderr"))),
                   threading.Thread(target=pump, args=(process.stderr, err, logging in ("stderr", "stdoutAndStderr")))]
        for thread in threads:
            thread.start()
        if inputs.get("stdin"):
            process.stdin.write(inputs["stdin"])
            process.stdin.close()
        code = process.wait()
        for thread in threads:
            thread.join()
        if code != 0:
            raise CommandFailed(f"exit status {code}: running {json.dumps(command, ensure_ascii=False)}:\n"
                                f"{''.join(combined)}")
        return "".join(out).removesuffix("\n"), "".join(err).removesuffix("\n")


def main(argv: list[str]) -> None:
    wire.serve(CommandProvider(wire.EngineLog(wire.engine_address(argv))), argv)


if __name__ == "__main__":
    main(sys.argv[1:])
