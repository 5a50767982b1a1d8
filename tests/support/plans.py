"""What tests of the dev stack's plans share beyond its configuration values (tests/support/config_values.py): the
Grafana endpoint the canned lookup answers."""

from __future__ import annotations

from offline import canned

#: The endpoint of the dev stack's Grafana, as the canned lookup answers it.
ENDPOINT = canned.grafana({"resourceGroupName": "rg-observability-dev", "workspaceName": "amg-gpu-dev"},
                          "eastus2")["properties"]["endpoint"]
