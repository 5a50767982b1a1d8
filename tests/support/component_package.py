"""The component as the Python package a consumer installs (pyproject.toml): :func:`build_wheel` builds it from a copy
of what pyproject.toml names (a file it leaves out is then missing from the wheel), :func:`consumer_venv` makes a
program's virtualenv that installs it with pip. No index is reached: the build uses the project's setuptools
(``--no-build-isolation``) and the virtualenv reads the dependencies from the project's ``.venv`` (a ``.pth`` file)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from aks_gpu_observability import PARTS
from tests.support import ROOT


def build_wheel(folder: Path) -> Path:
    """``folder``/dist/aks_gpu_observability-<version>-py3-none-any.whl, built from ``folder``/src."""
    (folder / "src").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "aks_gpu_observability", *PARTS):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, folder / "src" / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, folder / "src" / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(folder / "dist"), str(folder / "src")], check=True, capture_output=True)
    return next((folder / "dist").glob("aks_gpu_observability-*.whl"))


def install(wheel: Path, target: Path) -> None:
    """The wheel's files into ``target`` (``pip install --target``), its dependencies left out."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
                    str(wheel)], check=True, capture_output=True)


def consumer_venv(venv: Path, wheel: Path) -> Path:
    """A virtualenv at ``venv`` with the wheel installed by its own pip, the dependencies (pulumi, the providers' SDKs)
    those of the project's ``.venv``; returns its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path("
                                "'purelib'))"], check=True, capture_output=True, text=True).stdout.strip())
    (site / "project-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True)
    return site
