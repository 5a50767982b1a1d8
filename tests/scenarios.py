"""Scenarios for the step scripts under the stand-in ``az`` (tests/fake_az.py). SIMULATED: Azure's answers.

Each scenario: the script, its environment, the rules the stand-in answers with, and what must happen.
tests/test_scripts.py runs them all; tests/test_azure_cli.py runs them again to collect every ``az``
command line the scripts emit and checks each against the real azure-cli parser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

ROOT = Path(__file__).resolve().parent.parent
SUB = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"
NODE_RG = "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"
PLS_ID = f"/subscriptions/{SUB}/resourceGroups/{NODE_RG}/providers/Microsoft.Network/privateLinkServices/pyroscope-pls"
GRAFANA_ID = f"/subscriptions/{SUB}/resourceGroups/rg-observability-dev/providers/Microsoft.Dashboard/grafana/amg-gpu-dev"
OURS = "grafana-amg-gpu-dev-pyroscope-mpe"
FAST = {"POLL_INITIAL_SECONDS": "0", "POLL_MAX_SECONDS": "0"}

NOT_FOUND = {
    "exit": 3,
    "stderr": f"ERROR: (ResourceNotFound) The Resource 'Microsoft.Network/privateLinkServices/pyroscope-pls' under resource group '{NODE_RG}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix\nCode: ResourceNotFound",
}
CONFLICT = {
    "exit": 1,
    "stderr": 'ERROR: Conflict({"error":{"code":"ConflictInProcessing","message":"Another operation is in progress on grafana amg-gpu-dev. Retry later."}})',
}
THROTTLED = {"exit": 1, "stderr": 'ERROR: Too Many Requests({"error":{"code":"TooManyRequests","message":"Rate limit exceeded."}})'}
FORBIDDEN = {
    "exit": 1,
    "stderr": 'ERROR: Forbidden({"error":{"code":"AuthorizationFailed","message":"The client does not have authorization to perform action Microsoft.Dashboard/grafana/refreshManagedPrivateEndpoints/action."}})',
}


def pls(state: str = "Succeeded", connections: Optional[list] = None) -> dict:
    """A private link service body as ``az network private-link-service show`` returns it."""
    return {"json": {
        "id": PLS_ID, "name": "pyroscope-pls", "type": "Microsoft.Network/privateLinkServices",
        "location": "eastus2", "provisioningState": state,
        "alias": "pyroscope-pls.4c1e2f3a-aaaa-bbbb-cccc-1234567890ab.eastus2.azure.privatelinkservice",
        "privateEndpointConnections": connections,
    }}


def connection(endpoint_name: str, status: str, guid: str = "f072a430-2d82-4470-ab30-d23fcfee58d1") -> dict:
    name = f"{endpoint_name}.{guid}"
    return {
        "id": f"{PLS_ID}/privateEndpointConnections/{name}",
        "name": name,
        "privateEndpoint": {"id": f"/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/managed-rg/providers/Microsoft.Network/privateEndpoints/{endpoint_name}"},
        "privateLinkServiceConnectionState": {"status": status, "description": "", "actionsRequired": "None"},
    }


def mpe(status: Optional[str], ip: Optional[str]) -> dict:
    return {"json": {
        "id": f"{GRAFANA_ID}/managedPrivateEndpoints/pyroscope-mpe", "name": "pyroscope-mpe",
        "properties": {"provisioningState": "Succeeded", "privateLinkResourceId": PLS_ID,
                       "connectionState": {"status": status, "description": ""} if status else None,
                       "privateLinkServicePrivateIP": ip},
    }}


SHOW = ["network", "private-link-service", "show"]
APPROVE = ["network", "private-link-service", "connection", "update"]
REFRESH = ["rest", "--method", "post", "refreshManagedPrivateEndpoints"]
GET_MPE = ["rest", "--method", "get", "managedPrivateEndpoints/pyroscope-mpe"]

WAIT_ENV = {"PLS_RESOURCE_GROUP": NODE_RG, "PLS_NAME": "pyroscope-pls", "TIMEOUT_SECONDS": "60", **FAST}
APPROVE_ENV = {"PLS_RESOURCE_GROUP": NODE_RG, "PLS_NAME": "pyroscope-pls", "PRIVATE_ENDPOINT_NAME": OURS,
               "DESCRIPTION": "Approved for Azure Managed Grafana amg-gpu-dev by aks-gpu-observability",
               "TIMEOUT_SECONDS": "60", **FAST}
REFRESH_ENV = {"GRAFANA_ID": GRAFANA_ID, "MPE_NAME": "pyroscope-mpe", "API_VERSION": "2024-10-01",
               "TIMEOUT_SECONDS": "60", **FAST}


@dataclass
class Scenario:
    name: str
    script: str
    env: dict
    rules: list
    exit: int = 0
    stdout: str = ""
    stderr_has: list = field(default_factory=list)
    calls: dict = field(default_factory=dict)  # rule index -> expected number of calls
    max_seconds: float = 20.0


SCENARIOS = [
    Scenario("pls-appears-after-polls", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [NOT_FOUND, NOT_FOUND, NOT_FOUND, pls("Updating"), pls()]}],
             stdout=PLS_ID + "\n", stderr_has=["waiting up to 60s for private link service pyroscope-pls", "not there yet", "provisioningState Updating"],
             calls={0: 5}),
    Scenario("pls-never-appears", "wait_private_link_service.sh",
             {**WAIT_ENV, "TIMEOUT_SECONDS": "3", "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "1"},
             [{"match": SHOW, "responses": [NOT_FOUND]}], exit=1,
             stderr_has=["error: private link service pyroscope-pls did not appear in " + NODE_RG + " within 3s",
                         "kubectl -n gadget get svc pyroscope"], max_seconds=10),
    Scenario("pls-show-forbidden-fails-fast", "wait_private_link_service.sh", WAIT_ENV,
             [{"match": SHOW, "responses": [{"exit": 1, "stderr": "ERROR: (AuthorizationFailed) The client 'x' does not have authorization to perform action 'Microsoft.Network/privateLinkServices/read'."}]}],
             exit=1, stderr_has=["error: az network private-link-service show failed: ERROR: (AuthorizationFailed)"], calls={0: 1}),
    Scenario("pls-missing-env", "wait_private_link_service.sh", {k: v for k, v in WAIT_ENV.items() if k != "PLS_NAME"},
             [], exit=1, stderr_has=["error: environment variable PLS_NAME is required"]),
    Scenario("two-pending-only-ours-approved", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             [{"match": SHOW, "responses": [
                 pls(connections=[connection("grafana-other-grafana-pyroscope-mpe", "Pending", "11111111-2d82-4470-ab30-d23fcfee58d1"),
                                  connection(OURS, "Pending")]),
                 pls(connections=[connection("grafana-other-grafana-pyroscope-mpe", "Pending", "11111111-2d82-4470-ab30-d23fcfee58d1"),
                                  connection(OURS, "Approved")])]},
              {"match": APPROVE + ["--name", f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1"], "responses": [{"json": {}}]}],
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={0: 2, 1: 1}),
    Scenario("already-approved", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             [{"match": SHOW, "responses": [pls(connections=[connection(OURS, "Approved")])]},
              {"match": APPROVE, "responses": [{"json": {}}]}],
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", calls={0: 1}),
    Scenario("connection-appears-late", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             [{"match": SHOW, "responses": [pls(connections=None), pls(connections=[]),
                                            pls(connections=[connection(OURS, "Pending")]),
                                            pls(connections=[connection(OURS, "Approved")])]},
              {"match": APPROVE, "responses": [{"json": {}}]}],
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", stderr_has=["no connection from " + OURS + " yet"],
             calls={0: 4, 1: 1}),
    Scenario("endpoint-id-casing-differs", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             [{"match": SHOW, "responses": [pls(connections=[connection(OURS.upper(), "Approved")])]}],
             stdout=f"{OURS.upper()}.f072a430-2d82-4470-ab30-d23fcfee58d1\n"),
    Scenario("similar-name-is-not-ours", "approve_private_endpoint_connection.sh", {**APPROVE_ENV, "TIMEOUT_SECONDS": "1"},
             [{"match": SHOW, "responses": [pls(connections=[connection("x" + OURS, "Pending"),
                                                             connection(OURS + "2", "Pending")])]},
              {"match": APPROVE, "responses": [{"json": {}}]}],
             exit=1, stderr_has=["no connection from private endpoint " + OURS + " was approved on pyroscope-pls within 1s"],
             calls={1: 0}, max_seconds=10),
    Scenario("ambiguous-refused", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             [{"match": SHOW, "responses": [pls(connections=[connection(OURS, "Pending"),
                                                             connection(OURS, "Pending", "22222222-2d82-4470-ab30-d23fcfee58d1")])]},
              {"match": APPROVE, "responses": [{"json": {}}]}],
             exit=1, stderr_has=["2 connections on pyroscope-pls come from private endpoint " + OURS + "; refusing to guess"],
             calls={1: 0}),
    Scenario("rejected-connection-explains", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             [{"match": SHOW, "responses": [pls(connections=[connection(OURS, "Rejected")])]}],
             exit=1, stderr_has=["is Rejected; a Rejected connection cannot be approved", "pulumi up --replace"]),
    Scenario("approval-conflict-retried", "approve_private_endpoint_connection.sh", APPROVE_ENV,
             [{"match": SHOW, "responses": [pls(connections=[connection(OURS, "Pending")]),
                                            pls(connections=[connection(OURS, "Pending")]),
                                            pls(connections=[connection(OURS, "Approved")])]},
              {"match": APPROVE, "responses": [{"exit": 1, "stderr": "ERROR: (AnotherOperationInProgress) Another operation on this or dependent resource is in progress."}, {"json": {}}]}],
             stdout=f"{OURS}.f072a430-2d82-4470-ab30-d23fcfee58d1\n", stderr_has=["approval deferred"], calls={0: 3, 1: 2}),
    Scenario("refresh-409-twice-then-ok", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [CONFLICT, CONFLICT, {"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", stderr_has=["refresh deferred", "ConflictInProcessing", "refresh requested"],
             calls={0: 3, 1: 1}),
    Scenario("refresh-429-then-ok", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [THROTTLED, {"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", calls={0: 2}),
    Scenario("refresh-keeps-failing", "refresh_managed_private_endpoints.sh",
             {**REFRESH_ENV, "TIMEOUT_SECONDS": "3", "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "1"},
             [{"match": REFRESH, "responses": [CONFLICT]}], exit=1,
             stderr_has=["error: refreshManagedPrivateEndpoints kept failing for 3s", "ConflictInProcessing"], max_seconds=10),
    Scenario("refresh-forbidden-fails-fast", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [FORBIDDEN]}], exit=1,
             stderr_has=["error: refreshManagedPrivateEndpoints failed: ERROR: Forbidden"], calls={0: 1}),
    Scenario("private-ip-appears-late", "refresh_managed_private_endpoints.sh", REFRESH_ENV,
             [{"match": REFRESH, "responses": [{"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Pending", None), mpe("Approved", None), mpe("Approved", ""),
                                               mpe(None, None), mpe("Approved", "10.0.4.36")]}],
             stdout="10.0.4.36\n", stderr_has=["status Pending, private IP none yet"], calls={0: 2, 1: 5}),
    Scenario("private-ip-never-appears", "refresh_managed_private_endpoints.sh",
             {**REFRESH_ENV, "TIMEOUT_SECONDS": "2", "POLL_INITIAL_SECONDS": "1", "POLL_MAX_SECONDS": "1"},
             [{"match": REFRESH, "responses": [{"stdout": ""}]},
              {"match": GET_MPE, "responses": [mpe("Approved", None)]}], exit=1,
             stderr_has=["error: managed private endpoint pyroscope-mpe has no private IP after 2s (status Approved)"], max_seconds=10),
]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    calls: list  # [{"argv": [...], "rule": int|None}]

    def count(self, rule: int) -> int:
        return sum(1 for call in self.calls if call["rule"] == rule)


def run(scenario: Scenario, workdir: Path) -> Result:
    """Run ``scripts/<script>`` with the stand-in az first on PATH, from the project root (as Pulumi does)."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "az"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests" / "fake_az.py"}" "$@"\n')
    wrapper.chmod(0o755)
    scenario_file, log_file, state_file = workdir / "scenario.yaml", workdir / "calls.jsonl", workdir / "state.json"
    scenario_file.write_text(yaml.safe_dump(scenario.rules))
    for stale in (log_file, state_file):
        stale.unlink(missing_ok=True)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(workdir), "LANG": "C.UTF-8",
           "FAKE_AZ_SCENARIO": str(scenario_file), "FAKE_AZ_LOG": str(log_file), "FAKE_AZ_STATE": str(state_file),
           **scenario.env}
    started = time.monotonic()
    done = subprocess.run(["bash", f"scripts/{scenario.script}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=scenario.max_seconds + 30)
    seconds = time.monotonic() - started
    calls = [json.loads(line) for line in log_file.read_text().splitlines()] if log_file.exists() else []
    return Result(done.returncode, done.stdout, done.stderr, seconds, calls)
