"""existing/grafana.py: an existing Grafana must be Standard tier with a system-assigned identity; an existing Azure
Monitor workspace must report its query endpoint."""

from __future__ import annotations

import pytest

from offline import canned
from stack_config.schema import ConfigError


def test_grafana_must_be_standard_tier(plan):
    def essential(args, location):
        answer = canned.grafana(args, location)
        answer["sku"] = {"name": "Essential"}
        return answer

    with pytest.raises(ConfigError,
                       match="^grafanaName: Azure Managed Grafana 'amg-gpu-dev' is on the Essential tier; managed "
                             "private endpoints need Standard"):
        plan(invoke_overrides={"azure-native:dashboard:getGrafana": essential})


def test_existing_grafana_needs_a_system_identity(plan):
    def no_identity(args, location):
        answer = canned.grafana(args, location)
        answer["identity"] = {"type": "None"}
        return answer

    with pytest.raises(ConfigError,
                       match="^grafanaName: Azure Managed Grafana 'amg-gpu-dev' has no system-assigned identity"):
        plan(invoke_overrides={"azure-native:dashboard:getGrafana": no_identity})


def test_workspace_without_query_endpoint_is_refused(plan):
    def bare(args, location):
        answer = canned.monitor_workspace(args, location)
        answer["metrics"] = {}
        return answer

    with pytest.raises(ConfigError, match="^monitorWorkspaceName: Azure Monitor workspace 'amw-gpu-dev' reports no"):
        plan(invoke_overrides={"azure-native:monitor:getAzureMonitorWorkspace": bare})


#: A shared observability stack (grafanaStack) whose Grafana name and group are secret; distinct values.
OBSERVABILITY = "acme/observability/hidden"
HIDDEN = {"grafanaName": "amg-hidden-52", "grafanaResourceGroup": "rg-obs-hidden-52"}
SECRECY = pytest.mark.parametrize("secret", [True, False], ids=["secret-reference", "plain-reference"])


def refusal_with_grafana_from(plan, secret: bool, lookup) -> str:
    """The refusal's line when getGrafana answers with ``lookup`` and the Grafana comes from grafanaStack
    :data:`OBSERVABILITY`, its name and group secret there (``secret``) or plain."""
    outputs = {**canned.stack_outputs(OBSERVABILITY), **HIDDEN}
    with pytest.raises(ConfigError) as caught:
        plan(invoke_overrides={"azure-native:dashboard:getGrafana": lookup}, grafanaStack=OBSERVABILITY,
             grafanaName="", grafanaResourceGroup="", stack_outputs={OBSERVABILITY: outputs},
             secret_outputs={OBSERVABILITY: sorted(HIDDEN) if secret else []})
    message = str(caught.value)
    assert message.startswith("grafanaName: Azure Managed Grafana ") and "\n" not in message, message
    if secret:
        assert "[secret]" in message and not [v for v in HIDDEN.values() if v in message.lower()], message
    else:
        assert "'amg-hidden-52'" in message and "[secret]" not in message, message
    return message


@SECRECY
def test_a_grafana_from_a_secret_output_is_refused_with_its_name_masked(plan, secret):
    """A secret output of grafanaStack formatted into a refusal: the engine masks only the stack's own secret config,
    so the line says [secret]; a plain output is named, as users need."""
    def essential(args, location):
        return {**canned.grafana(args, location), "sku": {"name": "Essential"}}

    assert "tier" in refusal_with_grafana_from(plan, secret, essential)


@SECRECY
def test_a_grafana_that_cannot_be_read_is_refused_in_one_line_with_a_secret_name_masked(plan, secret):
    """A Grafana ARM cannot find: the failed invoke's text names it and its group; it was printed as a traceback."""
    def not_found(args, location):
        raise Exception(f"invoke of azure-native:dashboard:getGrafana failed: Status=404 Code=\"ResourceNotFound\" "
                        f"Message=\"The Resource 'Microsoft.Dashboard/grafana/{args['workspaceName']}' under resource "
                        f"group '{args['resourceGroupName']}' was not found.\"")

    assert "ResourceNotFound" in refusal_with_grafana_from(plan, secret, not_found)
