"""The component installed as a Python package (pyproject.toml): the wheel holds the deployed packages, the step
scripts and the keys; installed away from the checkout it reads the keys from its copy, runs the steps from where it
is installed (relative to the program's directory when inside it), and refuses a program's package that hides one of
its own. The program under the real engine: tests/e2e/test_component_consumers.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from aks_gpu_observability import PARTS
from tests.support import ROOT
from tests.support.component_package import build_wheel, install

#: What the consumer's interpreter prints about the installed package.
PROBE = """
import json, aks_gpu_observability as p
from stack_config import schema
from steps.command import script_hash, scripts_dir
print(json.dumps({"version": p.__version__, "file": p.__file__, "in_checkout": schema.in_checkout(),
                  "keys": schema.declared(), "dir": scripts_dir(), "hash": script_hash("lib.sh")}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def consumer_python(program_dir: Path, site: Path, code: str) -> subprocess.CompletedProcess:
    """``code`` run by the project's interpreter from ``program_dir`` with only ``site`` (and the interpreter's own
    packages, the dependencies) on its path: the checkout is not."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-c", code], cwd=program_dir, env=env, capture_output=True, text=True)


def test_the_wheel_holds_the_deployed_packages_their_scripts_and_the_keys(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    listed = subprocess.run(["git", "ls-files", "aks_gpu_observability", *PARTS], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    wanted = {name for name in listed if name.endswith((".py", ".sh"))} | {"stack_config/keys.yaml"}
    assert wanted <= names
    assert not {n for n in names if not n.startswith(("aks_gpu_observability", *PARTS))}


def test_installed_it_reads_its_keys_and_runs_its_steps_from_inside_the_program(wheel, tmp_path):
    program = tmp_path / "infra"
    site = program / "venv" / "lib" / "site-packages"
    install(wheel, site)
    done = consumer_python(program, site, PROBE)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert Path(seen["file"]).is_relative_to(site) and not seen["in_checkout"]
    assert seen["keys"] == yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    assert seen["dir"] == "venv/lib/site-packages"
    assert seen["version"] == "0.1.0" and len(seen["hash"]) == 64


def test_installed_outside_the_program_its_steps_run_from_an_absolute_dir(wheel, tmp_path):
    site = tmp_path / "site"
    install(wheel, site)
    (tmp_path / "infra").mkdir()
    done = consumer_python(tmp_path / "infra", site, PROBE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dir"] == str(site.resolve())


@pytest.mark.parametrize("part", PARTS)
def test_a_programs_package_of_the_same_name_is_refused_in_one_line(wheel, tmp_path, part):
    program = tmp_path / "infra"
    (program / part).mkdir(parents=True)
    (program / part / "__init__.py").write_text("")
    install(wheel, tmp_path / "site")
    done = consumer_python(program, tmp_path / "site", "import aks_gpu_observability")
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1
    assert last == (f"ImportError: aks_gpu_observability: the package {part!r} at {(program / part / '__init__.py')}"
                    f" hides this package's (in {(tmp_path / 'site').resolve()}); rename the program's {part!r}")
