"""InspektorGadget: the extension's engine-level inputs, options and place in the stack."""

from __future__ import annotations

import pytest

from components.inspektor_gadget import extension_settings
from tests.support import EXTENSION


def test_extension_inputs_default(plan):
    ext = plan().one(EXTENSION)
    assert ext.inputs == {
        "clusterRp": "Microsoft.ContainerService",
        "clusterResourceName": "managedClusters",
        "clusterName": "aks-gpu-dev",
        "resourceGroupName": "rg-aks-gpu-dev",
        "extensionName": "inspektor-gadget",
        "extensionType": "microsoft.inspektorgadget",
        "releaseTrain": "preview",
        "autoUpgradeMinorVersion": True,
        "configurationSettings": {"azureMonitor.enabled": "true", "gpuObservability.enabled": "true"},
    }
    assert "version" not in ext.inputs


def test_extension_is_a_child_of_the_component_with_timeouts(plan):
    p = plan(extensionTimeoutSeconds=900)
    ext = p.one(EXTENSION)
    component = p.one("aks-gpu-observability:index:InspektorGadget")
    assert ext.parent == component.urn
    assert ext.name == "inspektor-gadget-extension"
    assert ext.options["customTimeouts"] == {"create": "900s", "update": "900s", "delete": "900s"}
    assert ext.provider.startswith("urn:pulumi:dev::aks-gpu-observability::pulumi:providers:azure-native::default")


def test_pinned_version_turns_auto_upgrade_off_and_keeps_the_configured_train(plan):
    ext = plan(extensionVersion="0.46.0").one(EXTENSION)
    assert ext.inputs["version"] == "0.46.0"
    assert ext.inputs["autoUpgradeMinorVersion"] is False
    # Not azure-native's implicit default "Stable": the preview version lives in the preview train.
    assert ext.inputs["releaseTrain"] == "preview"


@pytest.mark.parametrize("gpu,monitor", [("true", "false"), ("false", "false"), ("false", "true")])
def test_settings_follow_config(plan, gpu, monitor):
    ext = plan(extensionGpuObservability=gpu, extensionAzureMonitor=monitor).one(EXTENSION)
    assert ext.inputs["configurationSettings"] == {"azureMonitor.enabled": monitor, "gpuObservability.enabled": gpu}


def test_release_train_and_name_configurable(plan):
    ext = plan(extensionReleaseTrain="stable", extensionName="ig").one(EXTENSION)
    assert ext.inputs["releaseTrain"] == "stable"
    assert ext.inputs["extensionName"] == "ig"


def test_settings_are_sorted_strings():
    settings = extension_settings(True, False)
    assert list(settings) == sorted(settings)
    assert settings == {"azureMonitor.enabled": "false", "gpuObservability.enabled": "true"}


def test_extension_id_is_exported(plan):
    p = plan()
    assert p.outputs["extensionId"].endswith(
        "/managedClusters/aks-gpu-dev/providers/Microsoft.KubernetesConfiguration/extensions/inspektor-gadget"
    )
