"""The configuration reference page, docs/configuration.md, generated from Pulumi.yaml's ``config:`` block.

Owns: how the keys are grouped (required: no default, or a description that starts with "Required"; common: the
``COMMON`` list, the keys a first or typical stack sets; advanced: the rest, under Pulumi.yaml's section comments)
and how a key is shown (a list item: type, default as the CLI writes it, description without its "Required unless"
sentence, which the intro says once). Input: Pulumi.yaml, read with PyYAML.
Output: the Markdown page on stdout. Errors: a ``COMMON`` key that Pulumi.yaml lacks raises ``KeyError``.
Regenerate: ``.venv/bin/python -m stack_config.reference > docs/configuration.md`` (tests/stack_config/
test_reference.py fails while the page differs). Mirrors the project file's config block:
https://www.pulumi.com/docs/iac/concepts/projects/project-file/#config-options
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import yaml

PROJECT_FILE = Path(__file__).resolve().parent.parent / "Pulumi.yaml"
COMMAND = ".venv/bin/python -m stack_config.reference > docs/configuration.md"

#: The keys a first or typical stack sets besides the required ones, in the order the page lists them.
COMMON = ("production", "tags", "multiCluster", "clusterStack", "grafanaStack", "kubeconfigCredentials",
          "kubeloginMode", "extensionVersion", "pyroscopeChartVersion", "pyroscopeMode", "pyroscopeStorageSize",
          "pyroscopeRetention", "pyroscopeNetworkPolicy", "privateLinkVisibility", "createGrafana",
          "createMonitorWorkspace", "assignMonitoringDataReader", "grafanaViewers", "dashboardProfileType")

OPENER = "For whoever sets up or changes a stack: each config key's type, default and meaning."

INTRO = """\
Keys live in the namespace `aks-gpu-observability:`. The stack checks every value before it registers anything; an
invalid one exits with one line naming the key (for a name, the characters allowed). A default acts the same written
out or not; `""` on a name derives it. *required\\**: unless `clusterStack` or `grafanaStack` supplies it.

Set an array key item by item: `pulumi config set --path 'tags[0]' costCenter=1234`, then `'tags[1]'`
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


#: The sentence a required* key's description opens with; the page says it once, in the intro.
_REQUIRED_UNLESS = re.compile(r"^Required unless \w+ supplies it\. ")


def entries(keys: list[str], config: dict[str, dict]) -> list[str]:
    """One list item per key: ``- `key` (type, default): description``, wrapped at 120 characters."""
    lines = []
    for key in keys:
        decl = config[key]
        description = _REQUIRED_UNLESS.sub("", " ".join(str(decl.get("description", "")).split()))
        head = f"- `{key}` ({decl['type']}, {shown_default(decl)}):".replace(" ", "\0")  # kept on one line
        lines += [line.replace("\0", " ") for line in textwrap.wrap(
            f"{head} {description}", 120, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)]
    return lines


def render(path: Path = PROJECT_FILE) -> str:
    config, titles = declared(path), sections(path)
    first = [key for key in config if required(config[key])]
    missing = [key for key in COMMON if key not in config]
    if missing:
        raise KeyError(f"COMMON names keys Pulumi.yaml does not declare: {', '.join(missing)}")
    common = [key for key in COMMON if key not in first]
    advanced = [key for key in config if key not in first and key not in common]
    lines = ["# Configuration", "", OPENER, "", f"<!-- Generated from Pulumi.yaml: {COMMAND} (do not edit) -->", "",
             INTRO, "", f"## Required ({len(first)})", "", *entries(first, config), "",
             f"## Common ({len(common)})", "", *entries(common, config), "", f"## Advanced ({len(advanced)})"]
    for title in dict.fromkeys(titles[key] for key in advanced):
        lines += ["", f"### {title}", "", *entries([key for key in advanced if titles[key] == title], config)]
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
