"""steps/wait_private_link_service.sh, which waits for the private link service the release's annotations make:
every scenario of tests/support/scenarios.py that runs it, against the stand-in az (SIMULATED: Azure)."""

from __future__ import annotations

import pytest

from tests.support import scenario_checks, scenarios
from tests.support.scenarios import PLS_ID, SHOW, WAIT_ENV, Scenario, ip_configuration, pls


@pytest.mark.parametrize("scenario", scenario_checks.of("wait_private_link_service.sh"), ids=lambda s: s.name)
def test_scenario(scenario, scenario_results):
    """Each scenario of steps/wait_private_link_service.sh under the stand-in az."""
    scenario_checks.check(scenario, scenario_results[scenario.name])


def test_with_no_pls_subnet_the_wait_ignores_nat_ips_left_in_the_old_subnet(tmp_path):
    """kubernetes-sigs/cloud-provider-azure ``pkg/provider/azure_privatelinkservice.go`` @7b31c76c: with no
    ``azure-pls-ip-configuration-subnet`` the PLS's IP configurations go to the internal load balancer frontend's
    subnet, and ``reconcilePLSIpConfigs`` rebuilds every configuration whose subnet differs, in its own time. After
    ``privateLinkSubnet`` is cleared the PLS still holds its old configuration in snet-pls for a while: the wait must
    not accept it (the NAT NetworkPolicy would admit an address about to go), only one in the frontend's subnet."""
    frontend = {
        "id": scenarios.FRONTEND,
        "name": scenarios.FRONTEND.rsplit("/", 1)[-1],
        "privateIPAddress": "10.224.0.40",
        "privateIPAllocationMethod": "Dynamic",
        "subnet": {
            "id": f"/subscriptions/{scenarios.SUB}/resourceGroups/rg-aks-gpu-dev/providers/"
            "Microsoft.Network/virtualNetworks/vnet-aks/subnets/snet-aks"
        },
    }
    lb = {"id": scenarios.LB_SCOPE + "kubernetes-internal", "frontendIPConfigurations": [frontend]}
    scenario = Scenario(
        "pls-subnet-cleared",
        "wait_private_link_service.sh",
        {**WAIT_ENV, "PLS_SUBNET": ""},
        [
            {
                "match": SHOW,
                "responses": [
                    pls(ip_configurations=[ip_configuration("10.225.8.4", "snet-pls")]),
                    pls(ip_configurations=[ip_configuration("10.224.0.9", "snet-aks")]),
                ],
            },
            # Each way the wait may read the frontend's subnet is answered.
            {"match": ["network", "lb", "frontend-ip", "show"], "responses": [{"json": frontend}]},
            {"match": ["resource", "show"], "responses": [{"json": {**frontend, "properties": frontend}}]},
            {"match": ["network", "lb", "show"], "responses": [{"json": lb}]},
        ],
        stdout=PLS_ID + "\n",
    )
    result = scenarios.run(scenario, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == PLS_ID + "\n"
    assert result.count(0) == 2, ("the wait accepted the NAT IP configuration still in the old subnet", result.stderr)


def test_a_pls_is_this_clusters_by_its_frontend_and_the_owner_tag_the_cloud_provider_writes(scenario_results):
    """kubernetes-sigs/cloud-provider-azure#10975: a PLS can be reused only by sharing its load balancer frontend, and
    the cloud provider's owner tag is ``k8s-azure-owner-service`` (``<namespace>/<service>``). The wait accepts a PLS
    only with both: another frontend, another owner and no owner tag are each refused in one line."""
    for name, shown in (("pls-of-another-cluster-refused", "(k8s-azure-owner-service gadget/pyroscope)"),
                        ("pls-of-another-service-refused", "(k8s-azure-owner-service default/other-app)"),
                        ("pls-without-owner-tag-refused", "(k8s-azure-owner-service none)")):
        result = scenario_results[name]
        assert result.returncode == 1 and shown in result.stderr, name
