"""The real Pulumi CLI, Python language host and pulumi-kubernetes provider (toolchain/build), run on a copy of the
project against a real API server (tests/support/control_plane.py) and the simulated Azure (tests/support/fake_world.py)
with the provider plugins of ours where nothing real builds here (tests/support/azure_provider.py,
tests/support/command_provider.py). docs/real-engine.md says what is real and what stands in.

:func:`tools` finds the built tools (``AKS_GPU_OBS_ENGINE_TOOLS``, default ``.tools/engine``) and refuses a missing or
stale build in one line naming ``toolchain/build``: a skip outside CI, a failure under ``REQUIRE_ENGINE_TOOLS=1``.
:class:`Workspace` is one project copy with its own file backend and ``PULUMI_HOME``, nothing leaving loopback (but
PyPI, for a Python plugin's ``get-schema`` under the 3.68 host: tests/e2e/test_component_consumers.py):
:meth:`Workspace.pulumi` runs the CLI (tests/support/processes.py: the CLI and all it starts die with the test
process), :meth:`Workspace.up`/``preview``/``destroy``/``refresh`` the usual commands (``--json`` previews parsed),
:meth:`Workspace.state` the exported deployment. The ``command`` plugin is the real one
when ``AKS_GPU_OBS_COMMAND_PLUGIN`` names a binary, else the stand-in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from tests.support import ROOT, latency, processes

TOOLS_ENV = "AKS_GPU_OBS_ENGINE_TOOLS"
#: A file a running toolchain/build writes its exit code to when it ends (.ci/run sets it: the tests that need no tools
#: run meanwhile); :func:`tools` waits for it.
BUILDING_ENV = "AKS_GPU_OBS_TOOLS_BUILD_RC"
COMMAND_PLUGIN_ENV = "AKS_GPU_OBS_COMMAND_PLUGIN"
BUILD = "toolchain/build"
#: What a stack needs of the project: the program, its packages and step scripts, its project and stack files.
PROGRAM = ("Pulumi.yaml", "Pulumi.dev.yaml", "__main__.py", "requirements.txt", "components", "existing", "stack",
           "stack_config", "steps", "scripts")
PASSPHRASE = "e2e-passphrase"
#: How a state file marks a secret.
SECRET_SIG = "4dabf18193072939515e22adb298388d"
TOOL_NAMES = ("pulumi", "pulumi-language-python", "pulumi-language-python-exec", "pulumi-language-yaml",
              "pulumi-resource-kubernetes", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
              "kwok", "kubelogin", "kubectl")


@dataclass(frozen=True)
class Tools:
    folder: Path

    @property
    def bin(self) -> Path:
        return self.folder / "bin"

    @property
    def kwok_stages(self) -> Path:
        return self.folder / "kwok-stages.yaml"


def building() -> bool:
    """Whether a toolchain/build that :data:`BUILDING_ENV` names is still running: its file is missing, or empty (a
    shell's ``echo > file`` creates the file before it writes the code)."""
    if not os.environ.get(BUILDING_ENV):
        return False
    rc = Path(os.environ[BUILDING_ENV])
    return not rc.exists() or not rc.read_text().strip()


def tools() -> Tools:
    """The tools toolchain/build made, checked against the current inputs (toolchain/stamp); first, the end of a
    build that :data:`BUILDING_ENV` names (a failed one fails in one line naming its log)."""
    if os.environ.get(BUILDING_ENV):
        while building():
            time.sleep(5)
        code = Path(os.environ[BUILDING_ENV]).read_text().strip()
        if code != "0":
            pytest.fail(f"{BUILD} failed (exit {code}): its log is .tools/build.log", pytrace=False)
    folder = Path(os.environ.get(TOOLS_ENV) or ROOT / ".tools" / "engine")
    missing = [name for name in TOOL_NAMES if not (folder / "bin" / name).exists()]
    problem = ""
    if missing:
        problem = f"the real engine's tools are not built ({', '.join(missing)} missing in {folder / 'bin'})"
    else:
        stamp = folder / "stamp"
        current = subprocess.run([str(ROOT / "toolchain" / "stamp")], capture_output=True, text=True).stdout.strip()
        if not stamp.exists() or stamp.read_text().strip() != current:
            problem = f"the real engine's tools in {folder} are stale (built from other inputs than toolchain/)"
    if problem:
        message = f"{problem}: run {BUILD} (10 to 20 minutes cold, seconds warm)"
        if os.environ.get("REQUIRE_ENGINE_TOOLS") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return Tools(folder)


def plugin_wrapper(path: Path, target: str) -> None:
    """An executable ``path`` that runs ``python TARGET ARGS`` with the project on ``PYTHONPATH``."""
    path.write_text(f"#!/bin/sh\nexport PYTHONPATH='{ROOT}'\nexec '{sys.executable}' {target} \"$@\"\n")
    path.chmod(0o755)


class Workspace:
    """A project copy in ``folder``/project (or the program folder ``project``), its backend in ``folder``/state, its
    ``PULUMI_HOME`` in ``folder``/home."""

    def __init__(self, folder: Path, tools_: Tools, world_path: Path, extra_env: Optional[dict] = None,
                 project: Optional[Path] = None) -> None:
        self.folder = folder
        self.project = project or folder / "project"
        for name in PROGRAM if project is None else ():
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, self.project / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif source.exists():
                self.project.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, self.project / name)
        for sub in ("state", "home", "bin"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        stand_ins = folder / "bin"
        plugin_wrapper(stand_ins / "az", f"'{ROOT / 'tests' / 'support' / 'fake_az.py'}'")
        plugin_wrapper(stand_ins / "pulumi-resource-azure-native", "-m tests.support.azure_provider")
        real_command = os.environ.get(COMMAND_PLUGIN_ENV)
        if real_command:
            (stand_ins / "pulumi-resource-command").symlink_to(real_command)
        else:
            plugin_wrapper(stand_ins / "pulumi-resource-command", "-m tests.support.command_provider")
        self.command_plugin = "real" if real_command else "stand-in"
        venv_bin = ROOT / ".venv" / "bin"
        self.env = {
            "PATH": os.pathsep.join([str(stand_ins), str(tools_.bin), str(venv_bin), os.environ.get("PATH", "")]),
            "HOME": str(folder / "home"), "PULUMI_HOME": str(folder / "home"),
            "PULUMI_BACKEND_URL": f"file://{folder / 'state'}", "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true", "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            "PULUMI_DEBUG_COMMANDS": "true",  # --event-log (pkg/cmd/pulumi/operations/up.go at v3.230.0)
            "LANG": "C.UTF-8", "FAKE_AZ_WORLD": str(world_path), "FAKE_AZ_LOG": str(folder / "az-calls.jsonl"),
            "AZURE_CORE_COLLECT_TELEMETRY": "false", "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost", **latency.env(),  # Azure's latencies for the stand-ins, if set
            **(extra_env or {}),
        }
        self.log = folder / "pulumi.log"

    def with_policy_pack(self, pack: Path, config: dict[str, str]) -> None:
        """Let ``--policy-pack`` run ``pack`` (its own ``venv``) under the 3.68 language host: today's CLI starts a
        Python pack through the host's ``RunPlugin`` without the ``Program`` field that host reads, so it runs ``python
        "" <engine address>`` (sdk/go/common/resource/plugin/analyzer_plugin.go ``NewPolicyAnalyzer`` at v3.230.0), and
        that host does not hand on the request's environment, where the CLI puts the stack's config (``PULUMI_CONFIG``,
        ``constructEnv`` there). A ``PULUMI_PYTHON_CMD`` shim runs the pack's Python on the pack for that call
        (unbuffered: the engine reads the pack's port from its first line) with ``config`` (project-qualified keys) as
        ``PULUMI_CONFIG``, and the project's Python otherwise. Tests only: the official CLI's own host does both."""
        shim = self.folder / "bin" / "python-shim"
        config_file = self.folder / "policy-config.json"
        config_file.write_text(json.dumps(config))
        shim.write_text("#!/bin/sh\n"
                        'if [ "$#" -gt 0 ] && [ -z "$1" ]; then shift; '
                        f'PULUMI_CONFIG="$(cat \'{config_file}\')"; export PULUMI_CONFIG; '
                        f'exec \'{pack / "venv" / "bin" / "python"}\' -u \'{pack}\' "$@"; fi\n'
                        f"exec '{ROOT / '.venv' / 'bin' / 'python'}' \"$@\"\n")
        shim.chmod(0o755)
        self.env["PULUMI_PYTHON_CMD"] = str(shim)

    def pulumi(self, *args: str, check: bool = True, timeout: float = 900, stack: Optional[str] = None,
               cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
        """Run ``pulumi ARGS`` (``--stack`` when given, ``--non-interactive``); output appended to ``pulumi.log``;
        ``check``: a non-zero exit fails the test with the output's end."""
        argv = ["pulumi", *args, "--non-interactive"] + (["--stack", stack] if stack else [])
        started = time.monotonic()
        done = processes.run(argv, cwd=cwd or self.project, env=self.env, capture_output=True, text=True,
                             timeout=timeout)
        seconds = time.monotonic() - started
        with self.log.open("a") as log:
            log.write(f"$ {' '.join(argv)}\n{done.stdout}\n{done.stderr}\n(exit {done.returncode}, {seconds:.1f} s)\n")
        if check and done.returncode != 0:
            pytest.fail(f"`{' '.join(argv)}` exited {done.returncode}:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}",
                        pytrace=False)
        return done

    def init(self, stack: str, config: dict[str, str], secrets: Optional[dict[str, str]] = None) -> None:
        self.pulumi("stack", "init", stack)
        for key, value in config.items():
            self.pulumi("config", "set", key, value, stack=stack)
        for key, value in (secrets or {}).items():
            self.pulumi("config", "set", "--secret", key, value, stack=stack)

    def up(self, stack: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.pulumi("up", "--yes", "--skip-preview", "--diff", *args, stack=stack, check=check)

    def preview(self, stack: str, *args: str) -> dict:
        """``pulumi preview --json``: the engine's step list and change summary."""
        done = self.pulumi("preview", "--json", *args, stack=stack)
        return json.loads(done.stdout)

    def destroy(self, stack: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.pulumi("destroy", "--yes", "--skip-preview", *args, stack=stack, check=check)

    def refresh(self, stack: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.pulumi("refresh", "--yes", "--skip-preview", *args, stack=stack, check=check)

    def state(self, stack: str) -> dict:
        return json.loads(self.pulumi("stack", "export", stack=stack).stdout)["deployment"]

    def outputs(self, stack: str, show_secrets: bool = False) -> dict:
        args = ["stack", "output", "--json"] + (["--show-secrets"] if show_secrets else [])
        return json.loads(self.pulumi(*args, stack=stack).stdout)
