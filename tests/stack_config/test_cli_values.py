"""stack_config/cli_values.py: config as the real Pulumi CLI hands it to the program.

Every Pulumi.yaml default is written into the stack's config before the program runs (pulumi v3.230.0
``sdk/go/common/workspace/config.go``, ``mergeConfig`` and ``createConfigValue``), so the program cannot tell a default
from a value the user wrote. Once, with ``multiCluster: true`` and the defaults written out, the stack kept
``pyroscope-mpe``, ``local-pyroscope``, ``azure-monitor-prometheus`` and created the workspace's Monitoring Data Reader
assignment, so a second cluster stack collided with the first in the shared Grafana: these tests hold that shut.
Also: the CLI's type checks, stack file scalars and numbers as yaml.v3 and Go's JSON make them, unknown keys."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from offline import program
from stack_config import cli_values, schema
from tests.support import ROOT
from tests.support.config_values import CLUSTERS, grafana_names


@pytest.mark.parametrize("written, passed", [("1.20", "1.2"), ("1.0", "1"), ("1e3", "1000"), ("2.50", "2.5")])
def test_the_program_refuses_a_yaml_number_the_cli_would_change_for_a_string_key(tmp_path, written, passed):
    """Under the real CLI too: the program reads its stack file (Pulumi.<stack>.yaml) for a number given for a string
    key, which the CLI passes on as Go's JSON text of it (cli_values.go_json_number)."""
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(f"config:\n  aks-gpu-observability:extensionTimeoutSeconds: 900\n  pyroscopeImageTag: {written}\n")
    with pytest.raises(schema.ConfigError) as caught:
        cli_values.check_stack_file_numbers(path)
    assert str(caught.value) == (f'pyroscopeImageTag: Pulumi.t.yaml:3:22: {written} is a YAML number, which the Pulumi '
                                 f'CLI passes on as "{passed}"; quote it to keep it as written: '
                                 f'pyroscopeImageTag: "{written}"')
    for fine in ('"1.20"', "2", "1.2"):  # quoted, or a number the CLI passes on as written
        path.write_text(f"config:\n  pyroscopeImageTag: {fine}\n")
        cli_values.check_stack_file_numbers(path)
    cli_values.check_stack_file_numbers(tmp_path / "Pulumi.missing.yaml")


def test_unknown_project_keys_are_rejected_with_a_suggestion():
    cli_values.check_known(["aks-gpu-observability:clusterName", "azure-native:location", "other:anything"])
    with pytest.raises(schema.ConfigError) as caught:
        cli_values.check_known(["aks-gpu-observability:extensionVerison"])
    assert str(caught.value) == (
        "extensionVerison: unknown config key (did you mean extensionVersion?); the keys are declared in Pulumi.yaml"
    )


ROLE = "azure-native:authorization:RoleAssignment"


def every_default_written_out() -> dict[str, object]:
    """Every default the dev stack file leaves out, as the CLI writes it into the stack's config
    (``createConfigValue``): a primitive as its ``%v`` text, an array as an object value (a list; `pulumi config set`
    could only store a string)."""
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    return {
        key: decl["default"] if isinstance(decl["default"], (list, dict)) else cli_values.cli_value(decl["default"])
        for key, decl in schema.declared().items()
        if f"{schema.PROJECT}:{key}" not in stack and "default" in decl
    }


@pytest.fixture
def written_out(tmp_path, monkeypatch):
    """run(overrides) for the dev stack with every default its file leaves out written in
    (:func:`every_default_written_out`)."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"].update({f"{schema.PROJECT}:{key}": value for key, value in every_default_written_out().items()})
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))

    def run(overrides):
        with monkeypatch.context() as patch:
            patch.setattr(program, "stack_file", lambda stack: path)
            return program.run("dev", overrides)

    return run


def test_cli_value_formats_defaults_like_create_config_value():
    # Go's %v for primitives; json.Marshal (compact) for arrays and maps, as an object value.
    assert cli_values.cli_value(True) == "true" and cli_values.cli_value(False) == "false"
    assert cli_values.cli_value(1800) == "1800"
    assert cli_values.cli_value("") == "" and cli_values.cli_value("pyroscope-pls") == "pyroscope-pls"
    assert cli_values.cli_value([]) == "[]" and cli_values.cli_value(["a=b", "c=d"]) == '["a=b","c=d"]'


def test_the_offline_plan_writes_every_default_into_the_config_as_the_cli_does():
    plan = program.run("dev", {})
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    for key, decl in schema.declared().items():
        full = f"{schema.PROJECT}:{key}"
        assert plan.config[full] == (str(stack[full]) if full in stack else cli_values.cli_value(decl["default"])), key


def test_a_default_means_the_same_whether_or_not_it_is_written_out(written_out):
    for overrides in ({}, {"multiCluster": "true"}, {"createGrafana": "true"}):
        left_out = program.run("dev", overrides).to_json()
        written = written_out(overrides).to_json()
        assert left_out["resources"] == written["resources"], overrides
        assert left_out["outputs"] == written["outputs"], overrides


def test_three_clusters_with_every_default_written_out_never_collide(written_out):
    """The failing input of fault 1: each cluster stack as the CLI runs it."""
    plans = [
        written_out({"multiCluster": "true", "clusterName": name, "clusterResourceGroup": rg})
        for name, rg in CLUSTERS
    ]
    claimed = [grafana_names(p) for p in plans]
    assert len({c["mpe"] for c in claimed}) == 3 and "pyroscope-mpe" not in {c["mpe"] for c in claimed}
    uids = [u for c in claimed for u in c["uids"]]
    assert len(set(uids)) == 6 and not {"local-pyroscope", "azure-monitor-prometheus"} & set(uids)
    assert not any(p.by_type(ROLE) for p in plans), ("one Monitoring Data Reader assignment per workspace, "
                                                     "not per cluster")


@pytest.mark.parametrize("shared", [{"multiCluster": "true"}, {"privateLinkServiceResourceGroup": "rg-network"}],
                         ids=["multi-cluster", "shared-pls-resource-group"])
def test_three_clusters_never_claim_one_private_link_service(written_out, shared):
    """Two clusters, one PLS resource group: before, every stack named its PLS pyroscope-pls, so the second cluster's
    wait found the first cluster's PLS and its endpoint and datasource went to the other cluster's Pyroscope. Each
    cluster's PLS (the annotation of the stack's Service pyroscope-private-link, the wait and the lookup) now has a
    name of its own."""
    plans = [written_out({**shared, "clusterName": name, "clusterResourceGroup": rg}) for name, rg in CLUSTERS]
    names = []
    for p in plans:
        service = p.named("pyroscope-private-link")
        assert service.type == "kubernetes:core/v1:Service"
        annotations = service.inputs["metadata"]["annotations"]
        wait = next(r for r in p.by_type("command:local:Command") if r.name == "grafana-private-link-wait-for-pls")
        lookup = next(i for i in p.invokes if i.token == "azure-native:network:getPrivateLinkService")
        name = annotations["service.beta.kubernetes.io/azure-pls-name"]
        assert (wait.inputs["environment"]["PLS_NAME"] == lookup.args["serviceName"]
                == p.outputs["privateLinkServiceName"] == name)
        names.append(name)
    assert len(set(names)) == 3 and "pyroscope-pls" not in names


# --- types: what the CLI refuses before the program runs (project.go ValidateConfigValue) ----------------
@pytest.mark.parametrize("key,value,kind", [
    ("multiCluster", "True", "boolean"),      # pulumi.Config.get_bool would take it; the CLI does not
    ("multiCluster", "yes", "boolean"),
    ("extensionTimeoutSeconds", "1.5", "integer"),
    ("extensionTimeoutSeconds", "ten", "integer"),
    ("tags", "a=b", "array<string>"),
    ("tags", '["a=b"]', "array<string>"),      # `pulumi config set tags '["a=b"]'` stores the string, not a list
    ("tags", "[]", "array<string>"),
])
def test_set_values_of_the_wrong_type_are_refused_as_the_cli_refuses_them(key, value, kind):
    with pytest.raises(schema.ConfigError) as caught:
        program.run("dev", {key: value})
    assert str(caught.value).startswith(f"{key}: must be of type '{kind}'")


def stack_file_with(tmp_path, monkeypatch, lines: str) -> None:
    base = (ROOT / "Pulumi.dev.yaml").read_text()
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(base + lines)
    monkeypatch.setattr(program, "stack_file", lambda stack: path)


@pytest.mark.parametrize("line,kind", [
    ("  aks-gpu-observability:multiCluster: yes\n", "boolean"),   # yaml.v3: a string, not a bool
    ("  aks-gpu-observability:multiCluster: 1\n", "boolean"),
    ("  aks-gpu-observability:extensionTimeoutSeconds: 90.5\n", "integer"),
    ("  aks-gpu-observability:clusterStack: [a]\n", "string"),
    ("  aks-gpu-observability:tags: costCenter=1\n", "array<string>"),
])
def test_stack_file_values_of_the_wrong_type_are_refused(tmp_path, monkeypatch, line, kind):
    stack_file_with(tmp_path, monkeypatch, line)
    with pytest.raises(schema.ConfigError, match=f"must be of type '{kind}'"):
        program.run("t", {})


def test_stack_file_scalars_reach_the_program_as_the_cli_hands_them(tmp_path, monkeypatch):
    stack_file_with(tmp_path, monkeypatch, "  aks-gpu-observability:multiCluster: TRUE\n"
                                           "  aks-gpu-observability:extensionTimeoutSeconds: 900\n"
                                           "  aks-gpu-observability:tags: [team=ml]\n")
    plan = program.run("t", {})
    assert plan.config["aks-gpu-observability:multiCluster"] == "true"
    assert plan.config["aks-gpu-observability:extensionTimeoutSeconds"] == "900"
    assert json.loads(plan.config["aks-gpu-observability:tags"]) == ["team=ml"]


def test_stack_file_numbers_reach_the_program_as_yaml_v3_and_go_json_make_them(tmp_path, monkeypatch):
    """go-yaml v3 ``resolve.go`` reads a plain scalar as a number where YAML 1.1 (PyYAML) may not, or the other way
    round, and the CLI passes the number on as Go's JSON text of it (cli_values.go_json_number)."""
    stack_file_with(tmp_path, monkeypatch, "  aks-gpu-observability:extensionTimeoutSeconds: 0x384\n"
                                           "  aks-gpu-observability:pyroscopeReleaseTimeoutSeconds: 1_200\n"
                                           "  aks-gpu-observability:grafanaTimeoutSeconds: 6e2\n"
                                           "  aks-gpu-observability:pyroscopeDatasourceName: 1:20\n")
    config = program.run("t", {}).config
    assert config["aks-gpu-observability:extensionTimeoutSeconds"] == "900"
    assert config["aks-gpu-observability:pyroscopeReleaseTimeoutSeconds"] == "1200"
    assert config["aks-gpu-observability:grafanaTimeoutSeconds"] == "600"  # PyYAML: the string "6e2"
    assert config["aks-gpu-observability:pyroscopeDatasourceName"] == "1:20"  # PyYAML: 80 (base 60); yaml.v3: a string


# --- stack files as the CLI reads them (offline/stack_file.py) -----------------------------------------------
def test_bare_and_old_style_keys_are_put_in_their_namespace_as_the_cli_does(tmp_path, monkeypatch):
    """loaders.go stackConfigNamespacedWithProject: a bare key is the project's; key.go ParseKey: ns:config:name."""
    base = (ROOT / "Pulumi.dev.yaml").read_text().replace("  aks-gpu-observability:clusterName: aks-gpu-dev\n", "")
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(base + "  clusterName: aks-gpu-bare\n  aks-gpu-observability:config:extensionVersion: 0.46.0\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)
    plan = program.run("t", {})
    assert plan.config["aks-gpu-observability:clusterName"] == "aks-gpu-bare"
    assert plan.config["aks-gpu-observability:extensionVersion"] == "0.46.0"
    assert not [key for key in plan.config if key.count(":") != 1]


def test_a_key_without_value_is_an_empty_string_as_the_cli_passes_it(tmp_path, monkeypatch):
    """loaders.go checkForEmptyConfig: the CLI warns and passes "" (the program accepts it where "" is valid and
    refuses it where a value is required: tests/cli/test_bad_input.py)."""
    stack_file_with(tmp_path, monkeypatch,
                    "  aks-gpu-observability:extensionVersion:\n  aks-gpu-observability:privateLinkSubnet: ~\n")
    plan = program.run("t", {})
    assert plan.config["aks-gpu-observability:extensionVersion"] == ""
    assert plan.config["aks-gpu-observability:privateLinkSubnet"] == ""


# --- `pulumi config set` and `pulumi config set --path` (pkg/cmd/pulumi/config/config.go, config/map.go) --------------
TAGS = "aks-gpu-observability:tags"


def test_a_list_set_as_text_is_refused_with_the_path_form_to_use(capsys):
    """`pulumi config set tags '["a=b"]'` stores a string; the CLI's type check then refuses it for an array key."""
    from offline import plan as plan_tool

    assert plan_tool.main(["--set", 'tags=["costCenter=1234"]']) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("error: tags: must be of type 'array<string>'")
    assert "pulumi config set --path 'tags[0]' <item>" in err and "--set-path 'tags[0]=<item>'" in err


def test_set_path_gives_the_program_what_config_set_path_stores(tmp_path, monkeypatch):
    """`pulumi config set --path 'tags[0]' costCenter=1234` then `'tags[1]' owner=ml-platform` store the list that a
    stack file holding it gives: the program receives the same config and registers the same resources."""
    sets = [("tags[0]", "costCenter=1234", True), ("tags[1]", "owner=ml-platform", True)]
    by_path = program.run("dev", config_sets=sets)
    assert json.loads(by_path.config[TAGS]) == ["costCenter=1234", "owner=ml-platform"]
    stack_file_with(tmp_path, monkeypatch, f"  {TAGS}:\n  - costCenter=1234\n  - owner=ml-platform\n")
    monkeypatch.setattr(program, "stack_file", lambda stack, path=tmp_path / "Pulumi.t.yaml": path)
    in_file = program.run("dev", {})
    assert by_path.config == in_file.config
    assert by_path.to_json() == in_file.to_json()
    mpe = by_path.one("azure-native:dashboard:ManagedPrivateEndpoint")
    assert mpe.inputs["tags"] == {"costCenter": "1234", "managed-by": "aks-gpu-observability", "owner": "ml-platform"}


def test_set_path_on_the_command_line(capsys):
    from offline import plan as plan_tool

    assert plan_tool.main(["--json", "--set-path", "tags[0]=costCenter=1234", "--set", "multiCluster=true",
                           "--set-path", "tags[1]=owner=ml-platform"]) == 0
    document = json.loads(capsys.readouterr().out)
    sets = [("tags[0]", "costCenter=1234", True), ("multiCluster", "true", False),
            ("tags[1]", "owner=ml-platform", True)]
    assert document["resources"] == program.run("dev", config_sets=sets).to_json()["resources"]
    mpe = next(r for r in document["resources"] if r["type"] == "azure-native:dashboard:ManagedPrivateEndpoint")
    assert mpe["inputs"]["tags"] == {"costCenter": "1234", "managed-by": "aks-gpu-observability",
                                     "owner": "ml-platform"}


def test_config_set_in_command_line_order_as_the_cli_runs_them():
    """Each --set and --set-path is one `pulumi config set` on the stack's config, in the order given: a plain set
    after a path set replaces the list with a string, a path set after a plain set replaces the string."""
    with pytest.raises(schema.ConfigError, match="^tags: must be of type 'array<string>'"):
        program.run("dev", config_sets=[("tags[0]", "a=b", True), ("tags", "a=b", False)])
    plan = program.run("dev", config_sets=[("tags", "a=b", False), ("tags[0]", "c=d", True)])
    assert json.loads(plan.config[TAGS]) == ["c=d"]


@pytest.mark.parametrize("sets,refused", [
    ([("tags[0]", "true", True)], "must be of type 'array<string>'"),      # --path stores true as a boolean
    ([("tags[0]", "1234", True)], "must be of type 'array<string>'"),      # and an integer as a number
    ([("tags[1]", "a=b", True)], "must be of type 'array<string>'"),       # [null, "a=b"]: tags[0] is null
    ([("tags[0]", "a=b", True), ("tags[2]", "c=d", True)], "tags[2]: array index out of range"),
    ([("tags.team", "ml", True)], "must be of type 'array<string>'"),      # a map
    ([("tags[x]", "ml", True)], "invalid config key path: invalid array index"),
])
def test_set_path_values_the_cli_would_refuse_are_refused(sets, refused):
    with pytest.raises(schema.ConfigError, match=re.escape(refused)):
        program.run("dev", config_sets=sets)


def test_list_keys_are_set_with_the_path_form_everywhere():
    """README shows the CLI's way to set an array key; no doc, script or workflow sets one as text (`--set tags=[...]`,
    `pulumi config set tags '[...]'`), which the CLI stores as a string and refuses (C3)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pulumi config set --path 'tags[0]'" in readme
    files = [ROOT / "README.md", ROOT / ".ci" / "run", *(ROOT / "docs").glob("*.md"),
             *(ROOT / ".github" / "workflows").glob("*.yml"),
             *(ROOT / "steps").glob("*.sh"), *(ROOT / ".ci").glob("*.sh"), *(ROOT / "bench").glob("*.py")]
    as_text = re.compile(r"""--set[ =]['"]?tags=['"]?\[|config set (?:--plaintext )?['"]?tags['"]? +['"]?\[""")
    offenders = [f"{path.relative_to(ROOT)}: {line.strip()}" for path in files if path.is_file()
                 for line in path.read_text(encoding="utf-8").splitlines()
                 if as_text.search(line) and "is refused" not in line and "stores a" not in line]
    assert not offenders, offenders
