"""ops/stack_matrix.py run as the deploy workflow runs it: deploy/stacks.json grouped by Grafana into the matrix
(GITHUB_OUTPUT), the warnings for stacks the pin rules do not treat as production, and a bad stacks file in one line.
SIMULATED: GitHub Actions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT


def stack_matrix(tmp_path, document, stack_files=None, env=None):
    """Run the matrix script on ``document`` (written as the stacks file) from ``tmp_path`` (the checkout, holding
    ``stack_files``: stack -> Pulumi.<stack>.yaml text). Returns the process and the parsed matrix (or None)."""
    (tmp_path / "deploy").mkdir(exist_ok=True)
    (tmp_path / "deploy" / "stacks.json").write_text(document if isinstance(document, str) else json.dumps(document))
    for stack, text in (stack_files or {}).items():
        (tmp_path / f"Pulumi.{stack}.yaml").write_text(text)
    done = subprocess.run([sys.executable, str(ROOT / "ops" / "stack_matrix.py"), "deploy/stacks.json"],
                          cwd=tmp_path, capture_output=True, text=True, env={"PATH": os.environ["PATH"], **(env or {})})
    return done, (json.loads(done.stdout.split("=", 1)[1]) if done.returncode == 0 else None)


def test_a_fleet_is_grouped_by_grafana_in_file_order(tmp_path):
    fleet = {"stacks": [{"stack": "eastus-a", "grafana": "rg-obs/amg-shared"},
                        {"stack": "westeu", "grafana": "rg-eu/amg-eu"},
                        {"stack": "eastus-b", "grafana": "RG-OBS/amg-shared"},
                        {"stack": "acme/gpu/eastus-c", "grafana": "rg-obs/amg-shared"}]}
    done, grafanas = stack_matrix(tmp_path, fleet)
    assert done.returncode == 0, done.stderr
    assert grafanas == [{"grafana": "rg-obs/amg-shared", "stacks": ["eastus-a", "eastus-b", "acme/gpu/eastus-c"],
                         "groups": [["eastus-a"], ["eastus-b"], ["acme/gpu/eastus-c"]]},
                        {"grafana": "rg-eu/amg-eu", "stacks": ["westeu"], "groups": [["westeu"]]}]


@pytest.mark.parametrize("runners, sizes", [("", [1] * 50), ("40", [2] * 25), ("20", [3] * 16 + [2]),
                                            ("60", [1] * 50)])
def test_phase_1_runs_in_one_wave_of_jobs_on_the_runners_there_are(tmp_path, runners, sizes):
    """FLEET_RUNNERS (default 20): 50 stacks on one Grafana in ceil(50 / runners) stacks per job, in order."""
    stacks = [f"s{i:02}" for i in range(50)]
    done, grafanas = stack_matrix(tmp_path, {"stacks": [{"stack": s, "grafana": "rg/amg"} for s in stacks]},
                                  env={"FLEET_RUNNERS": runners or "50"} if runners else None)
    assert done.returncode == 0, done.stderr
    groups = grafanas[0]["groups"]
    assert [len(g) for g in groups] == (sizes if runners else [3] * 16 + [2])
    assert [s for g in groups for s in g] == stacks


def test_a_runner_count_that_is_not_a_number_is_refused_in_one_line(tmp_path):
    done, _ = stack_matrix(tmp_path, {"stacks": [{"stack": "a", "grafana": "rg/amg"}]}, env={"FLEET_RUNNERS": "many"})
    assert done.returncode == 1
    assert done.stderr == ("stack-matrix: error: FLEET_RUNNERS (the repository variable): expected a whole number of "
                           "runners >= 1 (Free 20, Pro 40, Team 60, Enterprise 500; unset: 20), got 'many'\n")


def test_the_matrix_goes_to_github_output(tmp_path):
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "stacks.json").write_text(json.dumps({"stacks": [{"stack": "dev", "grafana": "rg/amg-a"}]}))
    output = tmp_path / "github_output"
    done = subprocess.run([sys.executable, str(ROOT / "ops" / "stack_matrix.py"), "deploy/stacks.json"], cwd=tmp_path,
                          capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(output)})
    assert done.returncode == 0 and done.stdout.startswith("::warning title=Held to the production rules::stack dev ")
    assert len(done.stdout.splitlines()) == 1, done.stdout  # the only line: the warning (no Pulumi.dev.yaml here)
    assert output.read_text() == 'grafanas=[{"grafana":"rg/amg-a","stacks":["dev"],"groups":[["dev"]]}]\n'


@pytest.mark.parametrize("text,warns", [
    ('config:\n  aks-gpu-observability:production: "true"\n', False),
    ("config:\n  aks-gpu-observability:production: true   # mandatory pins\n", False),
    ("config:\n  aks-gpu-observability:production: 'True'\n", False),
    ('config:\n  aks-gpu-observability:production: "false"\n', True),
    ("config:\n  aks-gpu-observability:production: yes\n", True),   # pulumi.Config.get_bool refuses it
    ("config:\n  other-project:production: \"true\"\n", True),
    ("config:\n  azure-native:location: eastus2\n", True),
    (None, True),  # no Pulumi.<stack>.yaml in the checkout
])
def test_the_deploy_matrix_warns_for_each_stack_the_pin_rules_do_not_treat_as_production(tmp_path, text, warns):
    """deploy.yml deploys every listed stack through environment `production` and holds it to the production rules
    (policy/production.json) whatever its production key says. A listed stack without the key: one ::warning:: line
    (stderr here, where stdout is the output; stdout in CI), and the matrix is unchanged. --list (drift) does
    not warn."""
    done, grafanas = stack_matrix(tmp_path, {"stacks": [{"stack": "eu", "grafana": "rg-obs/amg-real"}]},
                                  {"eu": text} if text else None)
    assert done.returncode == 0 and grafanas == [{"grafana": "rg-obs/amg-real", "stacks": ["eu"],
                                                 "groups": [["eu"]]}], done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("::warning")]
    assert len(warnings) == (1 if warns else 0), done.stderr
    if warns:
        assert "stack eu is deployed through the production environment and" in warnings[0]
        assert "holds it to the mandatory production rules all the same (policy/production.json)" in warnings[0]
    listed = subprocess.run([sys.executable, str(ROOT / "ops" / "stack_matrix.py"), "--list", "deploy/stacks.json"],
                            cwd=tmp_path, capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr


STACK_FILE = ("config:\n  azure-native:location: eastus2\n  aks-gpu-observability:grafanaName: amg-real\n"
              "  aks-gpu-observability:grafanaResourceGroup: rg-obs\n")


@pytest.mark.parametrize("document,stack_files,message", [
    ("not json", None, "deploy/stacks.json: cannot read it as JSON"),
    ({"stacks": []}, None, "with at least one stack"),
    ({"stacks": [{"stack": "dev"}]}, None,
     "stacks[0].grafana (dev): expected '<resource group>/<Grafana name>', got None"),
    ({"stacks": [{"stack": "a b", "grafana": "rg/amg-a"}]}, None, "stacks[0].stack: expected a stack name"),
    ({"stacks": [{"stack": "dev", "grafana": "rg/amg-a"}, {"stack": "dev", "grafana": "rg/amg-a"}]}, None,
     "stack dev is listed twice; list each stack once"),
    ({"stacks": [{"stack": "dev", "grafana": "rg-obs/amg-other"}]}, {"dev": STACK_FILE},
     "stack dev writes to Grafana rg-obs/amg-real (its Pulumi.<stack>.yaml), not rg-obs/amg-other; fix its grafana "
     "entry"),
])
def test_a_bad_stacks_file_is_one_line_naming_what_to_fix(tmp_path, document, stack_files, message):
    done, _ = stack_matrix(tmp_path, document, stack_files)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("stack-matrix: error: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert message in done.stderr, done.stderr


def test_a_stack_file_that_agrees_or_names_no_grafana_passes(tmp_path):
    files = {"dev": STACK_FILE, "other": "config:\n  aks-gpu-observability:grafanaStack: acme/obs/prod\n"}
    done, grafanas = stack_matrix(tmp_path, {"stacks": [{"stack": "dev", "grafana": "rg-obs/amg-real"},
                                                        {"stack": "other", "grafana": "rg-obs/AMG-real"}]}, files)
    assert done.returncode == 0, done.stderr
    assert grafanas == [{"grafana": "rg-obs/amg-real", "stacks": ["dev", "other"], "groups": [["dev"], ["other"]]}]
