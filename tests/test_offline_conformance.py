"""docs/offline-rules.yaml, the conformance table: each behaviour the offline engine, the policy runner and the
stand-in az simulate has an upstream source and a test; plus the tests for rows no other file holds."""

from __future__ import annotations

import ast
import gc
import json
import re
import subprocess
import sys

import pytest
import yaml

from tests.support import ROOT
from tests.support.scenarios import fake_az_env
from offline import program, rules_index

DOC = ROOT / "docs" / "offline.md"
RULES = ROOT / "docs" / "offline-rules.yaml"
FIDELITIES = {"same", "divergence", "real", "not modelled"}
#: The modules that simulate something; each must be covered by a rule or a section title.
SIMULATORS = ("offline/program.py", "offline/stack_file.py", "offline/canned.py", "offline/policy_check.py",
              "tests/support/fake_az.py", "offline/diff.py", "offline/replacement.py", "tests/support/fake_world.py",
              "tests/support/lifecycle.py", "offline/adopt.py", "tests/support/fake_cluster.py", "offline/engine.py")
#: The source of an upstream lifecycle case: the file and test at v3.230.0's commit or at HEAD's.
UPSTREAM = re.compile(r"^pulumi/pulumi (?:v3\.230\.0|HEAD) \(commit `([0-9a-f]{8})`\) "
                      r"`pkg/engine/lifecycletest/([\w.]+_test\.go)` \(`(Test\w+)`\)$")
PORTED = "tests/test_upstream_lifecycle.py"


def document() -> dict:
    with open(RULES, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def rules(kind: str | None = None) -> list[dict]:
    found = [r for r in document()["rules"] if kind is None or r["kind"] == kind]
    assert len(found) >= 20, "docs/offline-rules.yaml lost rules"
    return found


def parse(path):
    """ast.parse with the collector off: on CPython 3.11.7 a finalizer that runs inside the parse (earlier tests'
    Pulumi futures being collected) raises SystemError "AST constructor recursion depth mismatch"."""
    gc.collect()
    gc.disable()
    try:
        return ast.parse((ROOT / path).read_text(encoding="utf-8"))
    finally:
        gc.enable()


def test_every_rule_names_an_upstream_source_and_existing_tests():
    ids = [r["id"] for r in rules()]
    assert len(ids) == len(set(ids)), "rule ids are unique"
    kinds = [k["kind"] for k in document()["kinds"]]
    for rule in rules():
        row_id, source = rule["id"], "; ".join(rule["sources"])
        assert rule["kind"] in kinds, f"{row_id}: kind {rule['kind']!r} has no section"
        assert rule["fidelity"] in FIDELITIES, f"{row_id}: fidelity {rule['fidelity']!r}"
        assert rule["summary"] and rule["detail"], f"{row_id}: a summary and a detail"
        assert len(rule["summary"]) <= 120, f"{row_id}: summary longer than 120 characters"
        # A source: a repository or package and a file, at a version.
        assert rule["sources"], f"{row_id}: no source"
        if rule["fidelity"] != "real":  # real code runs: the package and its version are the source
            assert re.search(r"`[\w./-]+\.(go|py|ts|proto|md)`|README", source), f"{row_id}: no upstream file in {source!r}"
        assert re.search(r"v\d+\.\d+|\d+\.\d+\.\d+|@ `[0-9a-f]{8}|Python SDK|grafana/grafana|commit `[0-9a-f]{8}`",
                         source), f"{row_id}: no version in {source!r}"
        if rule["kind"] == "upstream case":
            continue  # held below, against the ported file
        assert rule["tests"], f"{row_id}: no test named"
        for node in rule["tests"]:
            path, name = re.fullmatch(r"(tests/[\w/]+\.py)::(\w+)(?:\[.+\])?", node).groups()
            tree = parse(path)
            defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            assert name in defined, f"{row_id}: {path}::{name} does not exist"


def test_every_simulating_module_is_covered():
    text = RULES.read_text(encoding="utf-8")
    for module in SIMULATORS:
        assert module in text, f"{module} simulates something but docs/offline-rules.yaml does not cover it"


def test_the_index_page_is_generated_from_the_rules():
    assert DOC.read_text(encoding="utf-8") == rules_index.render(document()), \
        f"docs/offline.md is not the index of docs/offline-rules.yaml; regenerate it: {rules_index.COMMAND}"


def test_upstream_lifecycle_rows_name_the_ported_tests():
    """docs/offline-rules.yaml, kind "upstream case": every source names the upstream file, test and commit; a rule
    with a test names ``tests/test_upstream_lifecycle.py::test_<upstream test>``, which exists and whose docstring
    cites the upstream file, test and commit; a ``same`` rule has a test, a ``not modelled`` one a reason; every test
    of the file has its rule; at least 30 cases are the same."""
    section = next(k for k in document()["kinds"] if k["kind"] == "upstream case")
    assert "`ae2e269861eabd2b692984e7286bec78777ba352`" in section["intro"], "the commit at the top"
    docs = {n.name: ast.get_docstring(n) or "" for n in ast.walk(parse(PORTED))
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    same, listed = 0, set()
    for rule in rules("upstream case"):
        name = rule["id"]
        assert len(rule["sources"]) == 1, f"{name}: one upstream case"
        found = UPSTREAM.match(rule["sources"][0])
        assert found, f"{name}: the source does not parse"
        commit, file, test_name = found.groups()
        assert test_name == name, f"{name}: the id is the upstream test"
        if rule["fidelity"] == "same":
            same += 1
        else:
            assert rule["fidelity"] == "not modelled", f"{name}: same or not modelled"
            assert len(rule.get("note", "").strip()) > 3, f"{name}: not modelled without a reason"
        if not rule["tests"]:
            assert rule["fidelity"] != "same", f"{name}: a same rule without its test"
            continue
        assert rule["tests"] == [f"{PORTED}::test_{name}"], f"{name}: the test is not named after the upstream case"
        doc = docs.get(f"test_{name}")
        assert doc is not None, f"{PORTED}::test_{name} does not exist"
        assert file in doc and name in doc and commit in doc, f"test_{name}: its docstring cites {file}"
        listed.add(f"test_{name}")
    assert same >= 30
    assert set(docs) == listed, f"tests without a rule: {sorted(set(docs) - listed)}"


# --- rows held here -----------------------------------------------------------------------------------------
def test_secure_stack_values_stay_secret(tmp_path, monkeypatch):
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text((ROOT / "Pulumi.dev.yaml").read_text() + "  other:token:\n    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)
    values, secrets = program.read_stack_config("s")
    assert secrets == ["other:token"] and values["other:token"] != "v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA=="
    plan = program.run("s", {})
    assert plan.secret_keys == ["other:token"]


def test_urns_carry_the_parent_type_chain():
    plan = program.run("dev", {})
    release = plan.one("kubernetes:helm.sh/v3:Release")
    assert release.urn == ("urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:Pyroscope"
                           "$kubernetes:helm.sh/v3:Release::pyroscope-release")
    gadget = next(r for r in plan.resources if r.type == "aks-gpu-observability:index:InspektorGadget")
    assert gadget.urn == "urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:InspektorGadget::inspektor-gadget"


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
    assert "Outputs (as after `pulumi up` with the canned answers; a real preview shows computed ones as unknown)" in out
    gated = [i for i in program.run("dev", {}).invokes if i.dependencies]
    assert {i.token for i in gated} >= {"azure-native:network:getPrivateLinkService",
                                        "azure-native:dashboard:getManagedPrivateEndpoint"}


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
    "a-read-and-a-registration": "urn:pulumi:t::aks-gpu-observability::pulumi:pulumi:StackReference::acme/platform/prod",
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
    assert captured.err == f"error: Duplicate resource URN '{DUPLICATE_URNS['two-reads']}'; try giving it a unique name\n"
