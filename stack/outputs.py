"""The stack's outputs: the contract consumers may read, and reading a deployed stack's outputs.

``CONTRACT``: names and types are stable: renaming or removing one is a breaking change (the contract test fails).
Add new outputs freely. Types are the Python types of the values ``pulumi stack output --json`` prints (``str``: a
JSON string, ``dict``: a JSON object). :func:`read_outputs` reads a stack's outputs (the Pulumi CLI, or a file saved
from it) for the operator commands and the flame-graph reader, as :class:`StackOutputs`, which masks the secret ones
in what is printed. Errors: ``OutputsError``, one line. Upstream: pulumi/pulumi
``pkg/cmd/pulumi/stack/stack_output.go``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, Optional, Sequence

CONTRACT: dict[str, tuple[type, str]] = {
    "dashboardUrl": (str, "URL of the Advanced GPU Observability dashboard: <grafanaEndpoint>/d/<uid>"),
    "grafanaEndpoint": (str, "https URL of the Azure Managed Grafana workspace"),
    "grafanaName": (str, "name of the Grafana workspace"),
    "pyroscopeDatasourceUid": (str, "uid of this cluster's Pyroscope datasource"),
    "prometheusDatasourceUid": (str, "uid of this cluster's Azure Monitor Prometheus datasource"),
    "pyroscopePrivateUrl": (str, "http://<managed private endpoint IP>:4040, Pyroscope as Grafana reaches it"),
    "privateLinkServiceId": (str, "ARM id of the private link service in front of Pyroscope"),
    "managedPrivateEndpointId": (str, "ARM id of Grafana's managed private endpoint to it"),
    "managedPrivateEndpointState": (str, "its connection state; Approved once the stack is up"),
    "extensionId": (str, "ARM id of the Inspektor Gadget cluster extension"),
    "clusterName": (str, "the AKS cluster"),
    "clusterResourceGroup": (str, "its resource group"),
    "clusterId": (str, "ARM id of the AKS cluster"),
    "nodeResourceGroup": (str, "the cluster's node resource group"),
    "monitorWorkspaceId": (str, "ARM id of the Azure Monitor workspace"),
    "pyroscopeInClusterUrl": (str, "Pyroscope inside the cluster: http://pyroscope.gadget.svc.cluster.local:4040"),
    "privateLinkServiceName": (str, "name of the private link service"),
    "privateLinkServiceResourceGroup": (str, "its resource group"),
    # What the Grafana steps set, for `python -m ops.verify --drift` (commands are never refreshed).
    "pyroscopeDatasource": (dict, "the Pyroscope datasource as the stack sets it: "
                                  "uid, name, type, access, url, jsonData"),
    "prometheusDatasource": (dict, "the Prometheus datasource as the stack sets it: "
                                   "uid, name, type, access, url, jsonData"),
    "dashboardDefinition": (dict, "how the stack uploads the dashboard: uid, source, sha256 (of the source), "
                                  "profileType "
                                  "(the Pyroscope profile type ID its GPU-memory flame graphs ask for, "
                                  "dashboardProfileType), "
                                  "datasources (the variable defaults it sets), inputs (the datasource each "
                                  "__inputs plugin "
                                  "maps to); both {} when shared"),
}


class OutputsError(ValueError):
    """The stack's outputs could not be read or lack what the command needs (one line)."""


SECRET = "[secret]"


class StackOutputs(dict):
    """A stack's outputs, in plaintext, and ``secrets``: the strings among them that are Pulumi secrets (longest
    first). :meth:`mask` replaces each in text verify prints, as the CLI prints a secret: ``[secret]``."""

    def __init__(self, outputs: dict, secrets: Sequence[str] = ()) -> None:
        super().__init__(outputs)
        self.secrets = tuple(sorted({s for s in secrets if s}, key=lambda s: (-len(s), s)))
        self._pattern = re.compile("|".join(map(re.escape, self.secrets))) if self.secrets else None

    def mask(self, text: str) -> str:
        """``text`` with every occurrence of a secret replaced by ``[secret]`` (one pass: a mask is never masked)."""
        return self._pattern.sub(SECRET, text) if self._pattern else text

    def mask_json(self, value: Any) -> Any:
        """``value`` (JSON-like) with :meth:`mask` applied to every string, keys included, before it is serialised
        (a secret JSON escapes would no longer be found in the text)."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask(str(key)): self.mask_json(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.mask_json(item) for item in value]
        return value


def _strings(value: Any) -> list[str]:
    """Every string in ``value`` (JSON), at any depth; numbers and booleans as their JSON text."""
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [] if value is None else [value if isinstance(value, str) else json.dumps(value)]


def secret_strings(masked: Any, shown: Any) -> list[str]:
    """The plaintext strings of ``shown`` (``pulumi stack output --json --show-secrets``) where ``masked`` (the same
    without ``--show-secrets``) holds ``"[secret]"``: the CLI prints a secret at any depth as that string (pulumi/pulumi
    v3.230.0 ``pkg/cmd/pulumi/stack/stack_output.go``, ``display.MassageSecrets`` in
    ``pkg/backend/display/json.go``)."""
    if masked == SECRET and shown != SECRET:
        return _strings(shown)
    if isinstance(masked, dict) and isinstance(shown, dict):
        return [s for key in masked if key in shown for s in secret_strings(masked[key], shown[key])]
    if isinstance(masked, list) and isinstance(shown, list):
        return [s for pair in zip(masked, shown) for s in secret_strings(*pair)]
    return []


def _has_secret(value: Any) -> bool:
    return value == SECRET or (isinstance(value, (dict, list)) and any(
        _has_secret(item) for item in (value.values() if isinstance(value, dict) else value)))


def _stack_output(stack: str, *flags: str) -> Any:
    """``pulumi stack output --json [flags] --stack <stack>``, parsed; OutputsError when it fails."""
    try:
        done = subprocess.run(["pulumi", "stack", "output", "--json", *flags, "--stack", stack],
                              capture_output=True, text=True)
    except FileNotFoundError:
        raise OutputsError("the Pulumi CLI is not on PATH; install it, or pass --outputs-file") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise OutputsError(f"pulumi stack output --stack {stack} failed: {last}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise OutputsError(f"pulumi stack output --stack {stack} printed no JSON") from None


def read_outputs(stack: str, outputs_file: Optional[str], needed: Sequence[str] = ()) -> StackOutputs:
    """The stack's outputs (``pulumi stack output --json --stack``, or the file); OutputsError if they cannot
    be read or lack one of ``needed``.

    From the CLI, secrets are read in plaintext (``--show-secrets``: a secret cluster or Grafana name makes the ids
    verify calls secret) and remembered as secrets (:class:`StackOutputs`): the CLI is asked once without
    ``--show-secrets``, whose JSON holds ``"[secret]"`` where an output (or part of one) is secret, and, only when
    one is, once more with it; the strings found there are masked in everything verify prints. A file is taken as
    it is; one saved without ``--show-secrets`` that holds ``"[secret]"`` where verify needs a value is refused."""
    if outputs_file:
        try:
            outputs = json.loads(Path(outputs_file).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise OutputsError(f"--outputs-file: cannot read {outputs_file}: {error}") from None
        secrets: list[str] = []
    else:
        outputs = _stack_output(stack)
        secrets = []
        if _has_secret(outputs):
            shown = _stack_output(stack, "--show-secrets")
            secrets, outputs = secret_strings(outputs, shown), shown
    if not isinstance(outputs, dict):
        raise OutputsError(f"{outputs_file or 'pulumi stack output'}: expected a JSON object of outputs")
    missing = [name for name in needed if not outputs.get(name)]
    if missing:
        raise OutputsError(f"stack {stack} has no output {missing[0]}; was `pulumi up` completed with this version?")
    masked = [name for name in needed if _has_secret(outputs[name])] if outputs_file else []
    if masked:
        raise OutputsError(f"--outputs-file: output {masked[0]} is {SECRET} in {outputs_file}; save the outputs with "
                           "`pulumi stack output --json --show-secrets`")
    return StackOutputs(outputs, secrets)
