"""offline/program.py: the program runner records what the engine would (URNs, default providers, parents, secret
config, invokes), refuses a duplicate URN as the engine does, and writes detailed-diff paths as providers do.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from offline import program, wire
from tests.support import ROOT


def test_secure_stack_values_stay_secret(tmp_path, monkeypatch):
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text((ROOT / "Pulumi.dev.yaml").read_text()
                    + "  other:token:\n    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)
    values, secrets = program.read_stack_config("s")
    assert secrets == ["other:token"] and values["other:token"] != "v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA=="
    plan = program.run("s", {})
    assert plan.secret_keys == ["other:token"]


def test_additional_secret_outputs_are_secret_as_the_engine_marks_them(tmp_path, monkeypatch):
    """With a secret in the stack's config every step's stdout and stderr are additional secret outputs
    (steps/command.py); the engine makes them secret in the state and in what the program reads (step_executor.go at
    v3.230.0), so every output made from a step's result is secret too. Measured under the real CLI: these six."""
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text((ROOT / "Pulumi.dev.yaml").read_text()
                    + "  aks-gpu-observability:pyroscopeDatasourceName:\n"
                      "    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)
    plan = program.run("s", {}, preview=False)
    secret = {key for key, value in plan.outputs.items() if wire.SECRET in json.dumps(value)}
    assert secret == {"dashboardDefinition", "dashboardUrl", "prometheusDatasource", "prometheusDatasourceUid",
                      "pyroscopeDatasource", "pyroscopeDatasourceUid"}
    step = next(r for r in plan.resources if r.name == "grafana-datasources-prometheus")
    assert step.outputs["stdout"] == {wire.SIG: wire.SECRET_SIG, "value": step.outputs["stdout"]["value"]}
    assert step.wire.get("stdout") is None  # inputs untouched: only the outputs are made secret


def test_urns_carry_the_parent_type_chain():
    plan = program.run("dev", {})
    release = plan.one("kubernetes:helm.sh/v3:Release")
    assert release.urn == ("urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:GpuObservability"
                           "$aks-gpu-observability:index:Pyroscope$kubernetes:helm.sh/v3:Release::pyroscope-release")
    gadget = next(r for r in plan.resources if r.type == "aks-gpu-observability:index:InspektorGadget")
    assert (gadget.urn
            == "urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:GpuObservability"
                "$aks-gpu-observability:index:InspektorGadget::inspektor-gadget")


def test_default_providers_are_named_as_the_engine_names_them():
    plan = program.run("dev", {})
    providers = [r for r in plan.resources if r.type == "pulumi:providers:azure-native"]
    assert providers and all(re.fullmatch(r"default(_\d+_\d+_\d+)?", p.name) for p in providers)
    extension = plan.one("azure-native:kubernetesconfiguration:Extension")
    assert extension.provider in {p.urn for p in providers}


def test_top_level_resources_are_parented_to_the_stack():
    plan = program.run("dev", {})
    stack = plan.one("pulumi:pulumi:Stack")
    for resource in plan.resources:
        if resource is stack:
            assert resource.parent is None
        elif resource.type.startswith("pulumi:providers:") and resource.name.startswith("default"):
            assert resource.parent is None  # the engine's default providers have no parent
        else:
            assert resource.parent is not None


def test_invokes_at_preview_are_labelled_as_after_up():
    out = subprocess.run([sys.executable, "-m", "offline.plan", "--stack", "dev"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "shown as after `pulumi up`" in out.splitlines()[1]
    assert ("Outputs (as after `pulumi up` with the canned answers; a real preview shows computed ones "
            "as unknown)") in out
    gated = [i for i in program.run("dev", {}).invokes if i.dependencies]
    assert {i.token for i in gated} >= {"azure-native:network:getPrivateLinkService",
                                        "azure-native:dashboard:getManagedPrivateEndpoint"}


# --- E12: one URN per deployment ----------------------------------------------------------------------------
DUPLICATES = {
    "two-registrations": 'pulumi.ComponentResource("test:index:Thing", "same")\n'
                         'pulumi.ComponentResource("test:index:Thing", "same")\n',
    "two-custom-registrations": 'pulumi.CustomResource("test:index:Thing", "same", {})\n'
                                'pulumi.CustomResource("test:index:Thing", "same", {})\n',
    "two-reads": 'pulumi.StackReference("acme/platform/prod")\npulumi.StackReference("acme/platform/prod")\n',
    "a-read-and-a-registration": 'pulumi.StackReference("acme/platform/prod")\n'
                                 'pulumi.ComponentResource("pulumi:pulumi:StackReference", "acme/platform/prod")\n',
}
DUPLICATE_URNS = {
    "two-registrations": "urn:pulumi:t::aks-gpu-observability::test:index:Thing::same",
    "two-custom-registrations": "urn:pulumi:t::aks-gpu-observability::test:index:Thing::same",
    "two-reads": "urn:pulumi:t::aks-gpu-observability::pulumi:pulumi:StackReference::acme/platform/prod",
    "a-read-and-a-registration":
        "urn:pulumi:t::aks-gpu-observability::pulumi:pulumi:StackReference::acme/platform/prod",
}


def write_program(tmp_path, monkeypatch, body: str) -> None:
    """A project directory holding ``body`` as its whole ``__main__.py`` (the stack file of stack ``t``: no config)."""
    (tmp_path / "__main__.py").write_text("import pulumi\n\n" + body)
    (tmp_path / "Pulumi.t.yaml").write_text("config: {}\n")
    monkeypatch.setattr(program, "ROOT", tmp_path)


@pytest.mark.parametrize("case", sorted(DUPLICATES))
def test_the_engine_refuses_a_second_resource_with_one_urn(tmp_path, monkeypatch, case):
    """step_generator.go generateURN: registrations and reads share one set of URNs; the second gets error 2001."""
    write_program(tmp_path, monkeypatch, DUPLICATES[case])
    with pytest.raises(program.DuplicateURNError) as caught:
        program.run("t", {})
    assert str(caught.value) == f"Duplicate resource URN '{DUPLICATE_URNS[case]}'; try giving it a unique name"


def test_distinct_urns_are_taken(tmp_path, monkeypatch):
    write_program(tmp_path, monkeypatch, 'pulumi.ComponentResource("test:index:Thing", "one")\n'
                                   'pulumi.ComponentResource("test:index:Thing", "two")\n'
                                   'pulumi.ComponentResource("test:index:Other", "one")\n')
    names = sorted(r.urn.rsplit("::", 2)[1:] for r in program.run("t", {}).resources if r.type.startswith("test:"))
    assert names == [["test:index:Other", "one"], ["test:index:Thing", "one"], ["test:index:Thing", "two"]]


def test_the_plan_stops_at_a_duplicate_urn_with_one_line(tmp_path, monkeypatch, capsys):
    from offline import plan as plan_tool

    write_program(tmp_path, monkeypatch, DUPLICATES["two-reads"])
    assert plan_tool.main(["--stack", "t"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (captured.err
            == f"error: Duplicate resource URN '{DUPLICATE_URNS['two-reads']}'; try giving it a unique name\n")



def test_the_json_plan_is_the_same_whatever_the_hash_seed():
    """The SDK gathers a property's dependencies from a set: the recorder sorts them, so two runs under different
    hash seeds print the same plan (a reviewer diffs two plans; only a real change may show)."""
    import subprocess
    import sys

    from tests.support import ROOT

    runs = [subprocess.run([sys.executable, "-m", "offline.plan", "--stack", "dev", "--json"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": seed})
            for seed in ("1", "2")]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
