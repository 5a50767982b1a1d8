"""What tests of the dev stack's plans share: a resource by name, the Grafana endpoint the canned lookup answers, a
dashboard file of the project with its digest, and a platform stack whose cluster name is secret."""

from __future__ import annotations

from offline import canned

#: The endpoint of the dev stack's Grafana, as the canned lookup answers it.
ENDPOINT = canned.grafana({"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"},
                          "eastus2")["properties"]["endpoint"]
#: A dashboard file in the project (tests/data), and its sha256.
LOCAL_DASHBOARD, LOCAL_SHA256 = ("tests/data/local-dashboard.json",
                                 "8b3f52176383b242a873e0ecdd6d0d68eb99a7ae44d3ae3d68b1d2f1c173a220")
PLATFORM = "acme/platform-aks/prod"
#: A platform stack whose cluster name is secret; the names are distinct so a leak cannot hide in another value.
SECRET_CLUSTER = {PLATFORM: {"clusterName": "gpu-secret-7", "clusterResourceGroup": "rg-platform"}}


def named(plan, name):
    """The resource of ``plan`` registered as ``name``."""
    return next(r for r in plan.resources if r.name == name)
