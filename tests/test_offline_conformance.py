"""docs/offline.md, the conformance table: each behaviour the offline engine, the policy runner and the
stand-in az simulate has an upstream source and a test; plus the tests for rows no other file holds."""

from __future__ import annotations

import ast
import gc
import json
import re
import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.support.scenarios import fake_az_env
from offline import program

DOC = ROOT / "docs" / "offline.md"
ROW = re.compile(r"^\| ([A-Z]\d+) \| (.+?) \| (same|divergence|real)[^|]* \| (.+?) \| (.+?) \|$")
#: The modules that simulate something; each must be covered by the table.
SIMULATORS = ("offline/program.py", "offline/stack_file.py", "offline/canned.py", "offline/policy_check.py", "tests/support/fake_az.py",
              "offline/diff.py", "offline/replacement.py", "tests/support/fake_world.py", "tests/support/lifecycle.py", "offline/adopt.py",
              "tests/support/fake_cluster.py", "offline/engine.py")


def rows() -> list[tuple[str, str, str, str, str]]:
    found = [m.groups() for m in map(ROW.match, DOC.read_text(encoding="utf-8").splitlines()) if m]
    assert len(found) >= 20, "docs/offline.md lost rows"
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


def test_every_row_names_an_upstream_source_and_existing_tests():
    ids = [r[0] for r in rows()]
    assert len(ids) == len(set(ids)), "row ids are unique"
    for row_id, behaviour, kind, source, tests in rows():
        # A source: a repository or package and a file, at a version.
        if kind != "real":  # real code runs: the package and its version are the source
            assert re.search(r"`[\w./-]+\.(go|py|ts|proto|md)`|README", source), f"{row_id}: no upstream file in {source!r}"
        assert re.search(r"v\d+\.\d+|\d+\.\d+\.\d+|@ `[0-9a-f]{8}|Python SDK|grafana/grafana", source), f"{row_id}: no version in {source!r}"
        cited = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", tests)
        assert cited, f"{row_id}: no test named"
        for path, name in cited:
            tree = parse(path)
            defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            assert name in defined, f"{row_id}: {path}::{name} does not exist"


def test_every_simulating_module_is_covered():
    text = DOC.read_text(encoding="utf-8")
    for module in SIMULATORS:
        assert module in text, f"{module} simulates something but docs/offline.md does not cover it"


#: A row of "Upstream lifecycle cases": upstream file (at HEAD for a later file), test, what it proves, kind, test.
UPSTREAM = re.compile(r"^\| `([\w.]+_test\.go)`(?: @ HEAD `([0-9a-f]{8})`)? \| (Test\w+) \| (.+?) \| "
                      r"(same|not modelled)([^|]*) \| (.+?) \|$")
PORTED = "tests/test_upstream_lifecycle.py"


def test_upstream_lifecycle_rows_name_the_ported_tests():
    """docs/offline.md, "Upstream lifecycle cases": every row parses; a row with a test names
    ``tests/test_upstream_lifecycle.py::test_<upstream test>``, which exists and whose docstring cites the upstream file,
    test and commit; a ``same`` row has a test, a ``not modelled`` row a reason; every test of the file has its row;
    at least 30 cases are the same."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Upstream lifecycle cases (tests/test_upstream_lifecycle.py)", 1)[1].split("\n## ", 1)[0]
    assert "`ae2e269861eabd2b692984e7286bec78777ba352`" in section.split("\n|", 1)[0], "the commit at the top"
    lines = [line for line in section.splitlines() if line.startswith("| `")]
    found = [m.groups() for m in map(UPSTREAM.match, lines) if m]
    assert len(found) == len(lines), "a row does not parse"
    docs = {n.name: ast.get_docstring(n) or "" for n in ast.walk(parse(PORTED))
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    same, listed = 0, set()
    for file, head, name, _proves, kind, why, test in found:
        if kind == "same":
            same += 1
        else:
            assert why.strip(" :(") and len(why) > 5, f"{name}: not modelled without a reason"
        if test == "—":
            assert kind != "same", f"{name}: a same row without its test"
            continue
        assert test == f"`{PORTED}::test_{name}`", f"{name}: the test is not named after the upstream case"
        doc = docs.get(f"test_{name}")
        assert doc is not None, f"{PORTED}::test_{name} does not exist"
        assert file in doc and name in doc and (head or "ae2e2698") in doc, f"test_{name}: its docstring cites {file}"
        listed.add(f"test_{name}")
    assert same >= 30
    assert set(docs) == listed, f"tests without a row: {sorted(set(docs) - listed)}"


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


def program(tmp_path, monkeypatch, body: str) -> None:
    """A project directory holding ``body`` as its whole ``__main__.py`` (the stack file of stack ``t``: no config)."""
    (tmp_path / "__main__.py").write_text("import pulumi\n\n" + body)
    (tmp_path / "Pulumi.t.yaml").write_text("config: {}\n")
    monkeypatch.setattr(program, "ROOT", tmp_path)


@pytest.mark.parametrize("case", sorted(DUPLICATES))
def test_the_engine_refuses_a_second_resource_with_one_urn(tmp_path, monkeypatch, case):
    """step_generator.go generateURN: registrations and reads share one set of URNs; the second gets error 2001."""
    program(tmp_path, monkeypatch, DUPLICATES[case])
    with pytest.raises(program.DuplicateURNError) as caught:
        program.run("t", {})
    assert str(caught.value) == f"Duplicate resource URN '{DUPLICATE_URNS[case]}'; try giving it a unique name"


def test_distinct_urns_are_taken(tmp_path, monkeypatch):
    program(tmp_path, monkeypatch, 'pulumi.ComponentResource("test:index:Thing", "one")\n'
                                   'pulumi.ComponentResource("test:index:Thing", "two")\n'
                                   'pulumi.ComponentResource("test:index:Other", "one")\n')
    names = sorted(r.urn.rsplit("::", 2)[1:] for r in program.run("t", {}).resources if r.type.startswith("test:"))
    assert names == [["test:index:Other", "one"], ["test:index:Thing", "one"], ["test:index:Thing", "two"]]


def test_the_plan_stops_at_a_duplicate_urn_with_one_line(tmp_path, monkeypatch, capsys):
    from offline import plan as plan_tool

    program(tmp_path, monkeypatch, DUPLICATES["two-reads"])
    assert plan_tool.main(["--stack", "t"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: Duplicate resource URN '{DUPLICATE_URNS['two-reads']}'; try giving it a unique name\n"
