"""offline/canned.py and the stand-in az: simulated Azure answers have the shapes of the real ones (the SDK's result
types; az's output through knack).
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.scenarios import fake_az_env


@pytest.mark.parametrize("query,output,expected", [
    ("{ip: privateLinkServicePrivateIP, n: name}", "tsv", "None\tpe\n"),  # null in a row prints None
    ("privateLinkServicePrivateIP", "tsv", ""),       # a null result prints nothing
    ("enabled", "tsv", "true\n"),
    ("[name, count]", "tsv", "pe\n2\n"),             # a list result: one row per item
    ("missing", "json", ""),                          # a None result prints nothing
    ("name", "json", '"pe"\n'),
])
def test_stand_in_az_renders_through_knack(tmp_path, query, output, expected):
    body = {"name": "pe", "count": 2, "enabled": True, "privateLinkServicePrivateIP": None}
    env = fake_az_env(tmp_path, [{"match": ["resource", "show"], "responses": [{"json": body}]}])
    result = subprocess.run(["az", "resource", "show", "--ids", "x", "--query", query, "-o", output],
                            env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def output_names(token: str) -> set[str]:
    """Engine (camelCase) names of the properties of the SDK's result type for invoke ``token``: what the
    program can read of an invoke's answer (the SDK builds the typed result from these names only)."""
    import importlib

    package, module, function = token.split(":")
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", function).lower()
    sdk = importlib.import_module(f"pulumi_azure_native.{module}.{snake}")
    result = getattr(sdk, function[0].upper() + function[1:] + "Result")
    return {p.fget._pulumi_name for p in vars(result).values() if isinstance(p, property)}


@pytest.mark.parametrize("token", sorted(__import__("offline.canned", fromlist=["INVOKES"]).INVOKES))
def test_canned_invoke_answers_have_the_sdk_result_shape(token):
    from offline import canned

    args = {"resourceName": "aks-gpu-dev", "resourceGroupName": "rg-aks-gpu-dev", "workspaceName": "amg-gpu-dev",
            "azureMonitorWorkspaceName": "amw-gpu-dev", "privateLinkServiceName": "pyroscope-pls",
            "managedPrivateEndpointName": "pyroscope-mpe", "serviceName": "pyroscope-pls",
            "virtualNetworkName": "vnet-aks", "subnetName": "snet-aks"}
    answer = canned.INVOKES[token](args, "eastus2")
    unknown = set(answer) - output_names(token)
    assert not unknown, f"{token}: canned keys the SDK's result type does not have: {sorted(unknown)}"
