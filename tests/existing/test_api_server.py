"""existing/api_server.py: a private cluster, or one with authorized IP ranges, whose API server this machine cannot
reach is refused in one line before anything is registered; where it answers, the stack deploys. SIMULATED: the
offline plan's canned world says which API server answers (offline/canned.py UNREACHABLE); :func:`reach` itself is
run against real sockets on loopback."""

from __future__ import annotations

import base64
import socket

import pytest

from existing import api_server
from offline import canned
from stack_config.schema import ConfigError
from tests.support import RELEASE
from tests.support.plans import HIDDEN_CLUSTER, HIDDEN_GROUP, cluster_stack, refused_before_anything, shows_the_cluster

SERVER = canned._server({"resourceGroupName": "rg-aks-gpu-dev", "resourceName": "aks-gpu-dev"}, "eastus2")
HOST = SERVER.split("//")[1].split(":")[0]


def cluster_with(**access):
    def handler(args, location):
        return {**canned.managed_cluster(args, location), "apiServerAccessProfile": access}

    return {"azure-native:containerservice:getManagedCluster": handler}


@pytest.fixture
def unreachable(monkeypatch):
    monkeypatch.setattr(canned, "UNREACHABLE", {HOST: "the name does not resolve here (Name or service not known)"})


def test_a_private_cluster_out_of_reach_is_refused_in_one_line_before_anything_registers(unreachable):
    """Parallels/prl-devops-service PR #520, ministryofjustice/cloud-platform#8159: with
    ``apiServerAccessProfile.enablePrivateCluster`` hosted runners and most laptops cannot reach the API server, and
    what followed was read as "the cluster is gone" (pulumi/pulumi-kubernetes#3846)."""
    message, registered = refused_before_anything(cluster_with(enablePrivateCluster=True))
    assert message == (
        f"clusterName: cluster 'aks-gpu-dev' is a private cluster (apiServerAccessProfile.enablePrivateCluster) and "
        f"its API server {HOST}:443 cannot be reached from this machine: the name does not resolve here (Name or "
        "service not known); run pulumi on the cluster's network (a self-hosted runner or a VM in its virtual network "
        "or a peered one, or over VPN or ExpressRoute: docs/platform.md#private-clusters)")
    assert registered == ["pulumi:pulumi:Stack"]


def test_a_private_cluster_deploys_from_its_network(plan):
    """The same cluster from a machine that reaches its API server (a runner in its virtual network): nothing
    refused, the stack as on a public cluster."""
    assert plan(invoke_overrides=cluster_with(enablePrivateCluster=True)).one(RELEASE)


def test_authorized_ranges_without_this_machine_name_the_command_that_adds_it(plan, unreachable):
    with pytest.raises(ConfigError) as caught:
        plan(invoke_overrides=cluster_with(authorizedIPRanges=["203.0.113.0/24"]))
    message = str(caught.value)
    assert message.startswith("clusterName: cluster 'aks-gpu-dev' admits API server clients only from "
                              "apiServerAccessProfile.authorizedIPRanges (203.0.113.0/24)")
    assert ("az aks update -g rg-aks-gpu-dev -n aks-gpu-dev --api-server-authorized-ip-ranges "
            "203.0.113.0/24,<this machine's address>/32") in message
    assert "\n" not in message


def test_a_public_cluster_open_to_all_is_not_probed(plan, monkeypatch):
    monkeypatch.setattr(canned, "api_server_reach", lambda _: pytest.fail("no probe for a public cluster"))
    assert plan().one(RELEASE)


def _kubeconfig(host: str, port: int) -> str:
    return f"apiVersion: v1\nclusters:\n- cluster:\n    server: https://{host}:{port}\n  name: c\n"


def test_reach_opens_a_connection_and_says_why_not():
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        assert api_server.reach(_kubeconfig("127.0.0.1", port)) is None
    assert "refused" in api_server.reach(_kubeconfig("127.0.0.1", port)).lower()
    # RFC 6761: names under .invalid never resolve.
    assert api_server.reach(_kubeconfig("aks.privatelink.invalid", 443)).startswith("the name does not resolve here")


def test_the_server_is_read_from_the_kubeconfig_aks_returns():
    kubeconfig = canned.user_credentials({"resourceGroupName": "rg-aks-gpu-dev", "resourceName": "aks-gpu-dev"},
                                         "eastus2")["kubeconfigs"][0]["value"]
    assert api_server.server_of(base64.b64decode(kubeconfig).decode()) == (HOST, 443)


@pytest.mark.parametrize("secret", [True, False], ids=["secret-reference", "plain-reference"])
def test_a_private_cluster_from_a_secret_output_is_refused_with_its_name_masked(monkeypatch, secret):
    """The name comes from ARM's answer and the API server's host carries it: both [secret] when clusterStack's
    outputs are secret, named when they are plain."""
    server = canned._server({"resourceGroupName": HIDDEN_GROUP, "resourceName": HIDDEN_CLUSTER}, "eastus2")
    monkeypatch.setattr(canned, "UNREACHABLE", {server.split("//")[1].split(":")[0]: "no answer within 10 s"})
    message, _ = refused_before_anything(cluster_with(enablePrivateCluster=True), **cluster_stack(secret))
    assert "is a private cluster" in message and shows_the_cluster(message, secret), message
