"""renovate.json: the bot proposes bumps of the locks (the Azure CLI's among them), the pinned actions, kubelogin,
the Pyroscope chart and the Pulumi CLI (everywhere it is pinned, in one pull request), can re-run the locks'
pip-compile commands, and labels a bump that needs deploy/binaries.json locked again."""

from __future__ import annotations

import json
import re

import yaml

from tests.support import ROOT
from tests.support.workflows import (
    WORKFLOW_FILES,
    WORKFLOWS,
    load,
    steps,
)

RENOVATE = ROOT / "renovate.json"
#: The Go module the Pulumi CLI is built from (toolchain/pulumi/go.mod), whose releases are the CLI's.
CLI_MODULE = "github.com/pulumi/pulumi/pkg/v3"
CLI_MODULES = [CLI_MODULE, "github.com/pulumi/pulumi/sdk/v3"]


def renovate() -> dict:
    return json.loads(RENOVATE.read_text())


def js_pattern(pattern: str) -> "re.Pattern":
    """A Renovate managerFilePatterns entry (/regex/) as a Python regex."""
    assert pattern.startswith("/") and pattern.endswith("/"), pattern
    return re.compile(pattern[1:-1])


def js_regex(pattern: str) -> str:
    """A Renovate matchStrings regex (JavaScript named groups) in Python's syntax."""
    return re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", pattern)


def tracked_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                  if p.is_file() and not {".git", ".venv", ".tools", ".azcli", "venv", "__pycache__"} & set(p.parts))


def test_renovate_covers_the_locks_the_actions_the_chart_and_kubelogin():
    """The bot proposes bumps of: the three Python locks (pip-compile manager on the lock files), every pinned action
    (github-actions, digests), kubelogin's release and digest, the Pyroscope chart. Keys checked against Renovate's
    published schema (renovate 44.121.2 renovate-schema.json, validated when this file was written); here: the
    structure, and each pattern against the files it must find."""
    config = renovate()
    assert set(config) <= {"$schema", "description", "enabledManagers", "baseBranchPatterns", "labels",
                           "prConcurrentLimit", "minimumReleaseAge", "pip-compile", "rangeStrategy",
                           "lockFileMaintenance", "github-actions", "gomod", "postUpdateOptions", "customManagers",
                           "packageRules"}, set(config)
    assert config["$schema"] == "https://docs.renovatebot.com/renovate-schema.json"
    assert set(config["enabledManagers"]) == {"pip-compile", "github-actions", "gomod", "custom.regex"}
    assert config["baseBranchPatterns"] == ["main"], "bumps are pull requests to main, where pr.yml runs"
    files = tracked_files()

    locks = [f for f in files if any(js_pattern(p).search(f) for p in config["pip-compile"]["managerFilePatterns"])]
    assert locks == [".ci/azure-cli.lock", "policy/requirements.lock", "requirements-dev.lock",
                     "requirements.lock"], locks
    assert config["rangeStrategy"] == "update-lockfile" and config["lockFileMaintenance"]["enabled"] is True

    workflows = [f for f in files if any(js_pattern(p).search(f)
                                         for p in config["github-actions"]["managerFilePatterns"])]
    assert sorted(workflows) == sorted(f".github/workflows/{n}" for n in WORKFLOW_FILES)
    assert config["github-actions"]["pinDigests"] is True

    managers = {m["depNameTemplate"]: m for m in config["customManagers"]}
    assert set(managers) == {"Azure/kubelogin", "pyroscope", "grafana/pyroscope", CLI_MODULE}
    kubelogin = managers["Azure/kubelogin"]
    assert kubelogin["datasourceTemplate"] == "github-release-attachments"
    found = []
    for name in WORKFLOW_FILES:
        text = (WORKFLOWS / name).read_text()
        for pattern in kubelogin["matchStrings"]:
            found += [(name, m.group("currentValue"),
                       m.group("currentDigest")) for m in re.finditer(js_regex(pattern), text)]
    expected = []
    for name in WORKFLOW_FILES:
        for job in load(name)["jobs"].values():
            for step in steps(job):
                if step.get("name") == "Install kubelogin":
                    expected.append((name, step["env"]["KUBELOGIN_VERSION"], step["env"]["KUBELOGIN_SHA256"]))
    # 4: pr.yml, drift.yml, and deploy-stacks.yml twice (cluster and grafana jobs, 649ccb4)
    assert len(expected) == 4 and sorted(found) == sorted(expected), (found, expected)

    chart = managers["pyroscope"]
    assert (chart["datasourceTemplate"] == "helm"
            and chart["registryUrlTemplate"] == "https://grafana.github.io/helm-charts")
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    matched = [m.group("currentValue") for p in chart["matchStrings"]
               for m in re.finditer(js_regex(p), (ROOT / "Pulumi.yaml").read_text())]
    assert matched == [project["config"]["pyroscopeChartVersion"]["default"]] == ["1.15.0"]
    assert [f for f in files if any(js_pattern(p).search(f) for p in chart["managerFilePatterns"])] == ["Pulumi.yaml"]


def test_the_bot_can_rerun_the_locks_commands():
    """Renovate's pip-compile manager re-runs the command in a lock's header and accepts only some options
    (renovatebot/renovate lib/modules/manager/pip-compile/common.ts, allowedPipOptions: --allow-unsafe,
    --generate-hashes, --no-emit-index-url, --strip-extras, --output-file, ...): the headers use no others."""
    allowed = {"--allow-unsafe", "--generate-hashes", "--strip-extras", "--no-emit-index-url"}
    for lock in ("requirements.lock", "policy/requirements.lock", ".ci/azure-cli.lock"):
        header = re.search(r"^#    pip-compile (.*)$", (ROOT / lock).read_text(), re.M).group(1).split()
        options = {o for o in header if o.startswith("--") and not o.startswith("--output-file=")}
        assert options <= allowed, (lock, options - allowed)


def test_the_azure_cli_lock_is_bumped_on_its_own():
    """The Azure CLI's lock (.ci/azure-cli.lock, its own venv and azure-cli's exact pins) is a pip-compile file the
    bot refreshes, in a pull request of its own: a later rule than the python locks' group names its own group."""
    config = renovate()
    # The rules that name a group: a later one wins for the files it matches (a rule that only adds labels is no group).
    rules = [r for r in config["packageRules"] if "pip-compile" in r.get("matchManagers", []) and "groupName" in r]
    lock = ".ci/azure-cli.lock"
    applies = [r for r in rules if not r.get("matchFileNames") or lock in r["matchFileNames"]]
    assert applies[-1]["groupName"] == "azure-cli lock"
    others = [r for r in rules if not r.get("matchFileNames") or "requirements.lock" in r["matchFileNames"]]
    assert others[-1]["groupName"] == "python locks"


def test_the_pyroscope_chart_and_image_move_in_one_pull_request():
    """The stack refuses a chart and an image of different majors (stack_config/rules.py check_pyroscope_majors), so
    the bot bumps both in one grouped pull request: the image's manager finds Pulumi.yaml's default tag, and one rule
    groups it with the chart. A grouped pair of one major passes the configuration check."""
    config = renovate()
    managers = {m["depNameTemplate"]: m for m in config["customManagers"]}
    image = managers["grafana/pyroscope"]
    assert image["datasourceTemplate"] == "docker"
    text = (ROOT / "Pulumi.yaml").read_text()
    project = yaml.safe_load(text)
    matched = [m.group("currentValue") for p in image["matchStrings"] for m in re.finditer(js_regex(p), text)]
    assert matched == [project["config"]["pyroscopeImageTag"]["default"]]
    groups = [r for r in config["packageRules"] if r.get("groupName") == "pyroscope"]
    assert len(groups) == 1 and set(groups[0]["matchDepNames"]) == {"pyroscope", "grafana/pyroscope"}
    assert not any(r.get("separateMajorMinor") is False or r.get("matchUpdateTypes") for r in groups)


def test_a_provider_sdk_bump_is_labelled_to_lock_the_binaries_again():
    """A bump of an SDK whose plugin deploy/binaries.json pins (its version read from requirements.lock) moves the
    plugin the engine asks for; the jobs install only locked plugins. The bot cannot make the lock (each sha256 is
    computed from the downloaded tarball and cross-checked against its release's checksums file: ops/binaries.py),
    so the pull request that moves such an SDK, whatever group it is in, carries the label saying so, and
    tests/ops/test_binaries.py::test_the_committed_lock_pins_the_readme_cli_and_the_locked_sdks fails on it until
    `python -m ops.binaries --lock` has run on its branch."""
    from ops import binaries

    pinned = {f"pulumi-{e['name']}" for e in binaries.read_lock(ROOT) if e["version_from"].startswith(
        "requirements.lock: ")}
    assert pinned == {"pulumi-azure-native", "pulumi-kubernetes", "pulumi-command"}
    rules = [r for r in renovate()["packageRules"]
             if "needs-binaries-lock" in r.get("addLabels", []) and "pip-compile" in r.get("matchManagers", [])]
    assert len(rules) == 1 and set(rules[0]["matchDepNames"]) == pinned
    assert rules[0]["matchManagers"] == ["pip-compile"] and "matchFileNames" not in rules[0]
    assert "labels" not in rules[0], "addLabels: merged with the group's labels, not replacing them"
    locked = (ROOT / "requirements.lock").read_text()
    assert all(re.search(rf"^{re.escape(dep)}==", locked, re.M) for dep in pinned)


def cli_matches(root, config: dict) -> list[tuple[str, str, tuple[int, int]]]:
    """(file, currentValue, its span) for every place the CLI's regex managers find under ``root``."""
    found = []
    for manager in config["customManagers"]:
        if manager["depNameTemplate"] != CLI_MODULE:
            continue
        for name in tracked_files():
            if any(js_pattern(p).search(name) for p in manager["managerFilePatterns"]):
                text = (root / name).read_text(encoding="utf-8")
                for pattern in manager["matchStrings"]:
                    found += [(name, m.group("currentValue"), m.span("currentValue"))
                              for m in re.finditer(js_regex(pattern), text)]
    return found


def winning(rules: list[dict], key: str, manager: str, dep: str):
    """The value of ``key`` the last package rule matching (manager, dep) sets, as Renovate applies rules in order."""
    value = None
    for rule in rules:
        if key in rule and manager in rule.get("matchManagers", [manager]) and dep in rule.get("matchDepNames", [dep]):
            value = rule[key]
    return value


def test_one_pull_request_moves_the_pulumi_cli_everywhere_it_is_pinned(tmp_path):
    """The CLI is pinned in the README (what users install), deploy/binaries.json (what CI installs) and
    toolchain/pulumi/go.mod (what the end-to-end tests build): one Renovate pull request moves them together, from
    the Go module proxy's releases of pkg/v3. The regex managers find every place the lock derives from the version
    (a bump applied at the found places leaves the lock entry ops.binaries --lock would write, but its sha256), gomod
    reads only that go.mod and there only pkg/v3 and sdk/v3 (go mod tidy moves the rest), and one group labelled
    needs-binaries-lock holds them all."""
    from ops import binaries

    config = renovate()
    version = binaries.readme_cli_version(ROOT)
    found = cli_matches(ROOT, config)
    assert sorted((name, value) for name, value, _ in found) == (
        [("README.md", version)] * 2 + [("deploy/binaries.json", version)] * 4), found
    for manager in (m for m in config["customManagers"] if m["depNameTemplate"] == CLI_MODULE):
        assert manager["datasourceTemplate"] == "go"
        extract = re.compile(js_regex(manager["extractVersionTemplate"]))
        assert extract.fullmatch("v3.278.0").group("version") == "3.278.0"
        assert not extract.fullmatch("v3.278.0-alpha.1"), "a pre-release is no CLI release"

    # The bump, as Renovate writes it: the new value at each place found.
    bumped = tmp_path / "project"
    for name in ("README.md", "deploy/binaries.json", "requirements.lock"):
        (bumped / name).parent.mkdir(parents=True, exist_ok=True)
        (bumped / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    for name in ("README.md", "deploy/binaries.json"):
        text = (bumped / name).read_text(encoding="utf-8")
        for _, _, (start, end) in sorted((s for s in found if s[0] == name), key=lambda s: -s[2][0]):
            text = text[:start] + "3.999.0" + text[end:]
        (bumped / name).write_text(text, encoding="utf-8")
    stated, source = binaries.sources(bumped)["pulumi"]
    assert stated == "3.999.0"
    entry = next(e for e in binaries.read_lock(bumped) if e["name"] == "pulumi")
    expected = binaries.entry_for("pulumi", stated, source)
    assert {k: entry[k] for k in expected if k != "sha256"} == {k: v for k, v in expected.items() if k != "sha256"}

    gomod = [f for f in tracked_files() if any(js_pattern(p).search(f)
                                                 for p in config["gomod"]["managerFilePatterns"])]
    assert gomod == ["toolchain/pulumi/go.mod"], gomod
    assert "gomodTidy" in config["postUpdateOptions"], "go.sum and the transitive requirements follow pkg/v3"
    required = dict(re.findall(r"^\s*(\S+) (v\S+)(?: // indirect)?$",
                               (ROOT / "toolchain" / "pulumi" / "go.mod").read_text(), re.M))
    assert [required[m] for m in CLI_MODULES] == [f"v{version}"] * 2
    rules = config["packageRules"]
    for module in required:
        enabled = winning(rules, "enabled", "gomod", module)
        assert enabled is (module in CLI_MODULES), (module, enabled)
    for manager, dep in [("custom.regex", CLI_MODULE), ("gomod", CLI_MODULES[0]), ("gomod", CLI_MODULES[1])]:
        assert winning(rules, "groupName", manager, dep) == "pulumi cli", (manager, dep)
        assert "needs-binaries-lock" in winning(rules, "addLabels", manager, dep), (manager, dep)
