"""Import and install cost of the program.

    python -m bench.import_cost [--repeat 5]

Cold import time of the program's modules (a fresh interpreter each time, importing what ``__main__.py``
imports and loading the azure-native submodules it uses, which the SDK otherwise loads lazily on first
use), which ``pulumi_azure_native`` submodules that loads (and that the whole SDK is not), and the
installed size of each requirement (its files as recorded in the installed distribution's metadata).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json, sys, time
started = time.perf_counter()
import pulumi
from pulumi_azure_native import authorization
import components.gpu_dashboard, components.grafana_datasources, components.grafana_private_link
import components.inspektor_gadget, components.managed_grafana, components.monitor_workspace, components.pyroscope
import existing.cluster, existing.grafana, existing.kubeconfig, stack.secrecy, stack.specs
import stack_config.load, stack_config.references
import pulumi_azure_native
for name in USED:  # what the program touches when it runs: load those submodules for real
    getattr(getattr(pulumi_azure_native, name), "__all__", None)  # any attribute access loads a lazy module
elapsed = time.perf_counter() - started
import importlib.util
# pulumi_azure_native registers every submodule lazily (importlib.util.LazyLoader): a _LazyModule entry in
# sys.modules costs nothing until first used. Count the ones really loaded.
native = sorted(m.split(".")[1] for m, mod in list(sys.modules.items())
                if m.startswith("pulumi_azure_native.") and m.count(".") == 1 and not m.split(".")[1].startswith("_")
                and type(mod).__name__ != "_LazyModule")
print(json.dumps({"seconds": elapsed, "native": native, "modules": len(sys.modules)}))
"""


def used_submodules() -> list[str]:
    """azure-native submodules the program imports (from pulumi_azure_native import a, b)."""
    names = set()
    for path in [ROOT / "__main__.py",
                 *sorted(p for d in ("components", "existing", "stack") for p in (ROOT / d).glob("*.py"))]:
        for match in re.finditer(r"from pulumi_azure_native import ([\w, ]+)", path.read_text()):
            names.update(n.strip() for n in match.group(1).split(","))
    return sorted(names)


def requirement_names() -> list[str]:
    names = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(re.split(r"[<>=!~\[ ]", line, 1)[0])
    return names


def installed_size(name: str) -> float:
    """MB on disk of a distribution's recorded files."""
    dist = metadata.distribution(name)
    total = 0
    for file in dist.files or []:
        path = Path(dist.locate_file(file))
        if path.is_file():
            total += path.stat().st_size
    return total / 1e6


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.import_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    runs = []
    for _ in range(args.repeat):
        probe = f"USED = {used_submodules()!r}\n" + PROBE
        done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout))
    seconds = [r["seconds"] for r in runs]
    native = runs[0]["native"]
    from pulumi_azure_native import __path__ as sdk_path

    all_native = sorted(p.name for p in Path(sdk_path[0]).iterdir() if p.is_dir() and not p.name.startswith("_"))
    print(f"Cold import of the program's modules: median {statistics.median(seconds):.2f} s "
          f"(min {min(seconds):.2f}, max {max(seconds):.2f}, {args.repeat} fresh interpreters)")
    print(f"  azure-native submodules loaded: {len(native)} of {len(all_native)}: {', '.join(native)}"
          " (the rest are registered lazily and never loaded)")
    print(f"  the whole SDK is not imported: {'yes' if len(native) < len(all_native) else 'NO'}")
    print("Installed size of the requirements:")
    total = 0.0
    for name in requirement_names():
        try:
            size = installed_size(name)
        except metadata.PackageNotFoundError:
            print(f"  {name:<22} not installed")
            continue
        total += size
        print(f"  {name:<22} {size:8.1f} MB")
    print(f"  {'direct requirements':<22} {total:8.1f} MB (runtime and test requirements.txt entries)")
    everything = 0.0
    for dist in metadata.distributions():
        try:
            everything += installed_size(dist.metadata["Name"])
        except Exception:  # a broken or duplicate record: left out of the sum
            continue
    print(f"  {'everything installed':<22} {everything:8.1f} MB (all distributions in this environment)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
