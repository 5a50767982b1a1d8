"""renovate.json: the bot proposes bumps of the locks (the Azure CLI's among them), the pinned actions, kubelogin
and the Pyroscope chart, can re-run the locks' pip-compile commands, and labels a provider SDK bump that needs
deploy/binaries.json locked again."""

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
                           "lockFileMaintenance", "github-actions", "customManagers", "packageRules"}, set(config)
    assert config["$schema"] == "https://docs.renovatebot.com/renovate-schema.json"
    assert set(config["enabledManagers"]) == {"pip-compile", "github-actions", "custom.regex"}
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
    assert set(managers) == {"Azure/kubelogin", "pyroscope", "grafana/pyroscope"}
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
    rules = [r for r in renovate()["packageRules"] if "needs-binaries-lock" in r.get("addLabels", [])]
    assert len(rules) == 1 and set(rules[0]["matchDepNames"]) == pinned
    assert rules[0]["matchManagers"] == ["pip-compile"] and "matchFileNames" not in rules[0]
    assert "labels" not in rules[0], "addLabels: merged with the group's labels, not replacing them"
    locked = (ROOT / "requirements.lock").read_text()
    assert all(re.search(rf"^{re.escape(dep)}==", locked, re.M) for dep in pinned)
