"""The outputs contract (stack/outputs.py), its documentation, and an example consumer of it."""

from __future__ import annotations

import gc
import json
import re
import warnings

import pulumi
import pytest

from offline.program import run
from stack.outputs import CONTRACT
from tests.support import ROOT
from tests.support.consumer import run_consumer

#: The contract as first published. Renaming or removing any of these breaks consumers' stack references:
#: this list only ever grows (add new outputs to CONTRACT and here together).
PUBLISHED = {
    "dashboardUrl", "grafanaEndpoint", "pyroscopeDatasourceUid", "prometheusDatasourceUid",
    "pyroscopePrivateUrl", "privateLinkServiceId", "managedPrivateEndpointId", "extensionId",
    "pyroscopeDatasource", "prometheusDatasource", "dashboardDefinition",  # drift: what the steps set
}


def test_published_outputs_are_in_the_contract():
    assert PUBLISHED <= set(CONTRACT)


#: The fields of ``dashboardDefinition`` consumers and ``ops.verify`` read; this set only ever grows as well.
#: ``profileType``: the flame graph's Pyroscope profile type ID (dashboardProfileType).
DEFINITION_FIELDS = {"uid", "source", "sha256", "datasources", "inputs", "profileType"}


@pytest.mark.parametrize("overrides", [{}, {"multiCluster": "true"}])
def test_the_dashboard_definition_keeps_its_fields_and_documents_them(overrides):
    definition = run("dev", overrides).outputs["dashboardDefinition"]
    assert DEFINITION_FIELDS <= set(definition)
    assert definition["profileType"] == "process_cpu:malloc:bytes::"
    readme = (ROOT / "docs" / "outputs.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `dashboardDefinition` |"))
    meaning = CONTRACT["dashboardDefinition"][1]
    for name in DEFINITION_FIELDS:
        assert f"`{name}`" in row and name in meaning, name


@pytest.mark.parametrize("overrides",
                         [{}, {"createGrafana": "true", "createMonitorWorkspace": "true"}, {"multiCluster": "true"}])
def test_every_contract_output_is_exported_with_its_type(overrides):
    outputs = run("dev", overrides).outputs
    for name, (kind, _meaning) in CONTRACT.items():
        assert name in outputs, f"output {name} disappeared"
        assert isinstance(outputs[name], kind) and outputs[name], (name, outputs[name])


def test_contract_is_documented_in_the_readme():
    readme = (ROOT / "docs" / "outputs.md").read_text()
    section = readme.split("# Outputs", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^\| `(\w+)` \| (\w+) \|", section, re.M))
    for name, (kind, _meaning) in CONTRACT.items():
        assert documented.get(name) == {"str": "string", "dict": "object"}[kind.__name__], name


def test_the_outputs_made_from_steps_are_documented_as_secret_once_config_holds_a_secret(tmp_path, monkeypatch):
    """docs/outputs.md "Secret outputs" lists what a secret config value makes secret (offline/program.py applies the
    steps' additional secret outputs as the engine does; measured under the real CLI, docs/real-engine-agreement.md)."""
    from offline import program, wire

    path = tmp_path / "Pulumi.s.yaml"
    path.write_text((ROOT / "Pulumi.dev.yaml").read_text() + "  aks-gpu-observability:pyroscopeDatasourceName:\n"
                    "    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)
    outputs = program.run("s", preview=False).outputs
    secret = {name for name, value in outputs.items() if wire.SECRET in json.dumps(value)}
    section = (ROOT / "docs" / "outputs.md").read_text().split("## Secret outputs", 1)[1]
    listed = set(re.findall(r"`(\w+)`", section.split("The others", 1)[0])) & set(outputs)
    assert secret == listed, (secret, listed)


def test_example_consumer_reads_the_outputs_through_a_stack_reference():
    outputs = run("dev").outputs
    created = run_consumer(outputs).created
    data = created["kubernetes:core/v1:ConfigMap"]["data"]
    assert data["dashboardUrl"] == outputs["dashboardUrl"]
    assert data["pyroscopeDatasourceUid"] == "local-pyroscope"
    assert data["cluster"] == "aks-gpu-dev"
    assert data["flameGraphUrl"].startswith(outputs["grafanaEndpoint"] + "/explore?")
    assert created["kubernetes:core/v1:ConfigMap"]["metadata"]["namespace"] == "ml-inference"


# The SDK leaves unawaited Output coroutines and a failed task behind a program that failed on purpose; they
# are collected when this test ends. Silence exactly that here, not elsewhere.
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_example_consumer_fails_loudly_on_a_missing_output():
    outputs = {k: v for k, v in run("dev").outputs.items() if k != "pyroscopeDatasourceUid"}
    message = ""
    try:
        run_consumer(outputs)
    except Exception as error:  # noqa: BLE001 - the consumer's own failure is the point
        message = str(error)
    assert "pyroscopeDatasourceUid" in message
    with warnings.catch_warnings():  # collect them now, while this test's filters apply
        warnings.simplefilter("ignore", RuntimeWarning)
        pulumi.runtime.settings.SETTINGS.rpc_manager.clear()  # as pulumi.runtime.mocks.test does
        pulumi.runtime.settings.SETTINGS.outputs.clear()
        gc.collect()
