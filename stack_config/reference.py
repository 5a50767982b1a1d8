"""The configuration reference page, docs/configuration.md, generated from Pulumi.yaml's ``config:`` block.

Owns: how the keys are grouped (required: no default, or a description that starts with "Required"; common: the
``COMMON`` list, the keys a first or typical stack sets; advanced: the rest, under Pulumi.yaml's section comments)
and how a key is shown (type, default as the CLI writes it, description). Input: Pulumi.yaml, read with PyYAML.
Output: the Markdown page on stdout. Errors: a ``COMMON`` key that Pulumi.yaml lacks raises ``KeyError``.
Regenerate: ``.venv/bin/python -m stack_config.reference > docs/configuration.md`` (tests/stack_config/
test_reference.py fails while the page differs). Mirrors the project file's config block:
https://www.pulumi.com/docs/iac/concepts/projects/project-file/#config-options
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

PROJECT_FILE = Path(__file__).resolve().parent.parent / "Pulumi.yaml"
COMMAND = ".venv/bin/python -m stack_config.reference > docs/configuration.md"

#: The keys a first or typical stack sets besides the required ones, in the order the page lists them.
COMMON = ("production", "tags", "multiCluster", "clusterStack", "grafanaStack", "kubeconfigCredentials",
          "kubeloginMode", "extensionVersion", "pyroscopeChartVersion", "pyroscopeMode", "pyroscopeStorageSize",
          "pyroscopeRetention", "pyroscopeNetworkPolicy", "privateLinkVisibility", "createGrafana",
          "createMonitorWorkspace", "assignMonitoringDataReader", "dashboardProfileType")

INTRO = """\
Every key lives in the namespace `aks-gpu-observability:` and is declared and typed in `Pulumi.yaml`; the stack
validates all of them before it registers any resource (an invalid value exits with one line naming the key). The
Pulumi CLI hands every default to the program, so a default means the same whether or not it is written out (derived
names: `""` = derive; the role: `auto`). *required\\**: required unless `clusterStack` (the cluster keys) or
`grafanaStack` (the Grafana and workspace keys) supplies it; a key set here wins over a referenced output.

An array key takes its items one by one: `pulumi config set --path 'tags[0]' costCenter=1234`, then `'tags[1]'`
(`pulumi config set tags '[...]'` stores a string, which the CLI refuses); offline:
`--set-path 'tags[0]=costCenter=1234'`."""


def declared(path: Path = PROJECT_FILE) -> dict[str, dict]:
    """Pulumi.yaml's ``config:`` block: key -> {"type", "description", "default"?}, in the file's order."""
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")).get("config") or {})


def sections(path: Path = PROJECT_FILE) -> dict[str, str]:
    """key -> the title of the ``# --- Title ---`` comment above it in Pulumi.yaml (PyYAML drops comments)."""
    found, title = {}, "Other keys"
    for line in path.read_text(encoding="utf-8").splitlines():
        if heading := re.match(r"^  # --- (.+?) -*$", line):
            title = heading.group(1)
        elif key := re.match(r"^  ([A-Za-z]\w*):\s*$", line):
            found[key.group(1)] = title
    return found


def required(decl: dict) -> bool:
    return "default" not in decl or decl.get("description", "").startswith("Required")


def shown_default(decl: dict) -> str:
    """The default as the table shows it: ``required*`` or the value as the CLI writes it (``""`` for empty)."""
    if "default" not in decl:
        return "required"
    if decl.get("description", "").startswith("Required"):
        return "required*"
    value = decl["default"]
    text = str(value).lower() if isinstance(value, bool) else "[]" if value == [] else str(value)
    return f"`{text}`" if text else '`""`'


def table(keys: list[str], config: dict[str, dict]) -> list[str]:
    rows = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    for key in keys:
        decl = config[key]
        description = " ".join(str(decl.get("description", "")).split()).replace("|", "\\|")
        rows.append(f"| `{key}` | {decl['type']} | {shown_default(decl)} | {description} |")
    return rows


def render(path: Path = PROJECT_FILE) -> str:
    config, titles = declared(path), sections(path)
    first = [key for key in config if required(config[key])]
    missing = [key for key in COMMON if key not in config]
    if missing:
        raise KeyError(f"COMMON names keys Pulumi.yaml does not declare: {', '.join(missing)}")
    common = [key for key in COMMON if key not in first]
    advanced = [key for key in config if key not in first and key not in common]
    lines = ["# Configuration", "", f"<!-- Generated from Pulumi.yaml by `{COMMAND}`; do not edit. -->", "",
             INTRO, "", f"## Required ({len(first)})", "", *table(first, config), "",
             f"## Common ({len(common)})", "", "What a first or typical stack sets besides the required keys.", "",
             *table(common, config), "", f"## Advanced ({len(advanced)})", "",
             "Everything else, grouped as in `Pulumi.yaml`."]
    for title in dict.fromkeys(titles[key] for key in advanced):
        lines += ["", f"### {title}", "", *table([key for key in advanced if titles[key] == title], config)]
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
