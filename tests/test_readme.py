"""The README stays honest and short: its resource table is the dev plan, its commands are the ones CI runs, its six
keys are the required ones, its links resolve, it names no file outside the repository; the full configuration is
docs/configuration.md (tests/stack_config/test_reference.py)."""

from __future__ import annotations

import re
import subprocess

import yaml

from tests.support import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)


def setup_command() -> str:
    """The README's set-up command: the one line of the first code block under "The two commands"."""
    (line,) = code_blocks(section("The two commands"))[0].strip().splitlines()
    return line


def readme_tests_command() -> str:
    """The second command: the tests' set-up (the reference artefacts), then the tests, one line."""
    (line,) = code_blocks(section("The two commands"))[1].strip().splitlines()
    return line


def test_ci_runs_the_readme_commands():
    """.ci/run runs the README's set-up command as written (the development lock with hashes, the offline plan, which
    needs no reference artefact), then the tests' set-up (the reference artefacts), the linters, and the tests; so
    does pr.yml (its set-up step is the command)."""
    ci = (ROOT / ".ci" / "run").read_text()
    lines = ci.splitlines()
    setup = setup_command()
    assert "pip install --require-hashes -r requirements-dev.lock" in setup and ".ci/fetch-reference" not in setup
    assert setup.endswith("&& .venv/bin/python -m offline.plan --stack dev")
    tests = readme_tests_command()
    assert tests == ".ci/fetch-reference && .venv/bin/python -m pytest -q -n 3"
    assert setup in lines and lines[-1] == tests, "set-up first, the README's test command last"
    assert len(code_blocks(section("The two commands"))) == 2, "two commands, a code block of one line each"
    offline = yaml.safe_load((ROOT / ".github" / "workflows" / "pr.yml").read_text())["jobs"]["offline"]
    assert [s["run"] for s in offline["steps"] if s.get("name", "").startswith("Set up")] == [setup]
    assert "policy/venv/bin/pip install --require-hashes -r policy/requirements.lock" in README
    assert "policy/venv/bin/pip install --require-hashes -r policy/requirements.lock" in ci


def test_the_outputs_page_lists_every_stack_output():
    from offline.program import run

    outputs = set(run("dev").outputs)
    page = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    assert "](docs/outputs.md)" in README
    documented = set(re.findall(r"^\| `(\w+)` \|", page.split("\n## ", 1)[0], re.M))
    assert documented == outputs


def resource_table() -> set[tuple[str, str]]:
    """(type, name) of every row of the README's resource table (a row may list several names of one type)."""
    rows = set()
    for line in section("What it deploys").splitlines():
        match = re.match(r"^\| ((?:`[^`]+`(?:, )?)+) \| `([^`]+)` \|$", line)
        if match:
            rows |= {(match.group(2), name) for name in re.findall(r"`([^`]+)`", match.group(1))}
    return rows


def test_the_resource_table_is_the_dev_plan():
    """Every resource the dev stack's plan registers, and nothing else, less the stack itself and the default
    providers the engine makes on its own: the names and types `pulumi up` would create."""
    from offline.program import run

    planned = {(r["type"], r["name"]) for r in run("dev").to_json()["resources"]
               if r["type"] != "pulumi:pulumi:Stack" and not r["name"].startswith("default_")}
    table = resource_table()
    assert table, "the README's resource table is gone"
    assert table == planned, {"planned, not in the table": sorted(planned - table),
                              "in the table, not planned": sorted(table - planned)}
    assert ("kubernetes:core/v1:Service", "pyroscope-private-link") in table


def test_readme_is_short_and_its_docs_links_resolve():
    """The README stays a front page (at most 1,200 words and 250 lines); the long guides live in docs/, and every
    docs/*.md it links to exists (and each of those guides' relative links too)."""
    assert len(README.split()) <= 1200, len(README.split())
    assert len(README.splitlines()) <= 250
    linked = set(re.findall(r"\]\((docs/[\w./-]+\.md)\)", README))
    assert {"docs/how-it-works.md", "docs/reviewing.md", "docs/teardown.md", "docs/flamegraphs.md", "docs/platform.md",
            "docs/performance.md", "docs/troubleshooting.md", "docs/policy.md", "docs/adopting.md",
            "docs/dependencies.md", "docs/configuration.md", "docs/cost.md", "docs/outputs.md",
            "docs/prerequisites.md", "docs/day-two.md"} <= linked
    for doc in sorted(linked):
        assert (ROOT / doc).is_file(), doc
        for target in re.findall(r"\]\(([\w./-]+\.(?:md|svg))\)", (ROOT / doc).read_text(encoding="utf-8")):
            assert (ROOT / doc).parent.joinpath(target).is_file(), (doc, target)


def documented_tool_commands() -> list[tuple[str, str, list]]:
    """(file, module, argv) of every ``python -m <package>.<tool> ...`` in README.md and docs/*.md, in inline code or
    a code block (a continued line joined), as a reader would type it: a placeholder (``<stack>``, ``$(...)``) filled
    in, an optional ``[...]`` and a ``...`` left out, a shell comment and what follows ``&&``, ``|`` or ``;``
    dropped."""
    import shlex

    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        fence = r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```"
        blocks = re.findall(fence, text, re.M | re.S)
        snippets = [line for block in blocks for line in re.sub(r"\\\n", " ", block).splitlines()]
        prose = re.sub(fence, "", text, flags=re.M | re.S)
        snippets += [span.replace("\n", " ") for span in re.findall(r"`([^`]+)`", prose)]
        for snippet in snippets:
            for command in re.findall(r"-m ((?:offline|ops|flamegraph)\.\w+)((?:(?!\s#)[^\n])*)", snippet):
                module, rest = command
                rest = re.sub(r"\$\([^)]*\)", "x", rest)
                rest = re.sub(r"\[[^\]]*\]", "", rest).replace("...", "")
                rest = re.sub(r"<[^>]+>", "x", rest)
                argv = []
                rest = re.split(r"&&|\|\||[|;)>]", rest)[0]  # the rest of a shell line: another command
                for token in shlex.split(rest):
                    argv.append(token)
                found.append((path.name, module, argv))
    return found


#: Modules that write a generated page (no arguments); their output is compared with the page by their own tests.
#: offline.day_two writes docs/day-two.md too, but has a parser (``--check``): its documented commands are parsed.
GENERATORS = {"offline.rules_index", "stack_config.reference"}


def test_every_documented_tool_command_parses(monkeypatch):
    """A tool's command line as README.md and docs/ show it is one the tool takes (its argparse parser accepts it;
    the tool then stops before doing anything): `python -m ops.verify --drift` without --stack would not be."""
    import importlib

    import cli

    class Parsed(Exception):
        pass

    original = cli.OneLineParser.parse_args

    def parse_only(self, args=None, namespace=None):
        original(self, args, namespace)
        raise Parsed

    monkeypatch.setattr(cli.OneLineParser, "parse_args", parse_only)
    commands = documented_tool_commands()
    modules = {module for _, module, _ in commands}
    assert modules - GENERATORS == {"offline.plan", "ops.verify", "flamegraph.hotspots", "ops.deployer_role",
                                    "ops.federation", "ops.role_assignments", "offline.day_two", "ops.repository",
                                    "ops.recover", "ops.binaries"}
    for name, module, argv in commands:
        if module in GENERATORS:
            continue
        try:
            importlib.import_module(module).main(argv)
        except Parsed:
            continue
        except cli.UsageError as error:
            raise AssertionError(f"{name}: python -m {module} {' '.join(argv)}: {error}") from None
        raise AssertionError(f"{name}: python -m {module} {' '.join(argv)}: refused by its parser")


def test_the_deploy_steps_say_what_a_self_managed_backend_asks_for():
    """With `pulumi login azblob://...` (or file://), `pulumi stack init` asks for a passphrase and every command that
    decrypts asks again, failing where nobody can answer, unless PULUMI_CONFIG_PASSPHRASE(_FILE) is set (pulumi/pulumi
    v3.230.0 pkg/secrets/passphrase/manager.go: "Enter your passphrase to protect config/secrets"); the deploy steps
    say so before `pulumi stack init`, and name the other way, --secrets-provider."""
    deploy = section("Deploy and tear down")
    block = deploy.split("```sh", 1)[1].split("```", 1)[0]
    assert block.index("PULUMI_CONFIG_PASSPHRASE") < block.index("pulumi stack init")
    assert "--secrets-provider azurekeyvault://" in deploy and "self-managed" in deploy


def test_the_deploy_steps_set_the_six_required_keys_as_the_example_stack_does():
    """The six keys a first stack needs are the ones docs/configuration.md lists as required, set in the deploy steps
    to the example stack's (Pulumi.dev.yaml) values, before `pulumi up`."""
    from stack_config import reference

    block = code_blocks(section("Deploy and tear down"))[0]
    set_here = dict(re.findall(r"^pulumi config set (\w+) (\S+)$", block, re.M))
    required = [key for key, decl in reference.declared().items() if reference.required(decl)]
    assert list(set_here) == required and len(required) == 6, (set_here, required)
    example = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    assert set_here == {key: example[f"aks-gpu-observability:{key}"] for key in required}
    assert block.index("pulumi config set clusterName") < block.index("pulumi up") < block.index("pulumi destroy")


def test_the_prerequisites_install_the_pinned_pulumi_cli():
    """The README states one Pulumi CLI version and gives the official installer's line for exactly that version."""
    (version,) = re.findall(r"\*\*Pulumi CLI v([\d.]+)\*\*", README)
    assert f"`curl -fsSL https://get.pulumi.com | sh -s -- --version {version}`" in section("Prerequisites")


#: Where a newcomer looks for a change to (a) the datasource step, (b) the flame-graph SVG, (c) the offline diff's
#: replacement rules, (d) a config key's validation: the folder map names each.
PLACES = ["steps/grafana_datasource.py", "components/grafana_datasources.py", "flamegraph/", "SVG renderer",
          "offline/replacement.py", "stack_config/rules.py"]


def test_the_map_says_where_things_are():
    """The folder map, docs/layout.md (the README links to it), names the places above and every top-level folder
    a change starts in, and each path it names exists."""
    assert "](docs/layout.md)" in README
    where = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    for place in PLACES:
        assert place in where, place
    named = re.findall(r"^\| `([^`]+)` \|", where, re.M)
    assert {"components/", "stack_config/", "existing/", "stack/", "steps/", "offline/", "flamegraph/", "ops/", "cli/",
            "policy/", "bench/", ".ci/", "tests/", "docs/decisions/"} <= set(named), named
    paths = set(named) | set(re.findall(r"`((?:[\w.]+/)+[\w.]*)`", where))
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, missing


def test_nothing_points_at_files_outside_the_repository():
    """No file names the design brief or another file that is not in this repository: what a reader needs is here.
    (A local copy of the reference artefacts beside the clone is a source .ci/fetch-reference may read, not a
    document to read.)"""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    outside = re.compile(r"DESIGN\.md|DESIGN §|shared/DESIGN|design brief", re.I)
    found = set()
    for name in tracked:
        path = ROOT / name
        if name.startswith("tests/reference/") or not path.is_file() or name == "tests/test_readme.py":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if outside.search(text):
            found.add(name)
    assert not found, sorted(found)


BEFORE = "Before your first `pulumi up`"


def before_first_up() -> str:
    """The README's "Before your first `pulumi up`" section, its lines joined (a sentence may wrap)."""
    return " ".join(section(BEFORE).split())


def test_before_the_first_up_names_the_requests_the_node_pool_check_holds_pools_to():
    """The node Pyroscope needs is stated with the requests the pre-check (existing/node_pools.py) compares each pool
    with for the default configuration: the largest pod's, single-binary with no pyroscopeResources override."""
    from components.pyroscope import largest_requests
    from stack_config import reference, rules

    declared = reference.declared()
    resources = rules.resources(declared["pyroscopeResources"]["default"])
    requests = largest_requests(declared["pyroscopeMode"]["default"], resources)
    text = before_first_up()
    assert f"{requests['cpu']} CPU and {requests['memory']} memory requested" in text, requests
    assert f"(limit {resources['limits']['memory']})" in text
    assert "](docs/sizing.md#placement-off-gpu-nodes)" in text


def step_bound_seconds(resource: dict) -> int:
    """How long a planned resource may take before Pulumi fails it, as the plan sets it (0 where the plan sets none):
    a step command's TIMEOUT_SECONDS, the Helm release's timeout, a customTimeouts create."""
    inputs = resource.get("inputs") or {}
    environment = inputs.get("environment") if isinstance(inputs.get("environment"), dict) else {}
    if "TIMEOUT_SECONDS" in environment:
        return int(environment["TIMEOUT_SECONDS"])
    if resource["type"] == "kubernetes:helm.sh/v3:Release":
        return int(inputs["timeout"])
    create = ((resource.get("options") or {}).get("customTimeouts") or {}).get("create")
    return int(create.rstrip("s")) if create else 0


def test_before_the_first_up_gives_the_worst_case_the_dev_plans_timeouts_add_up_to():
    """The worst case is the longest chain of dependent steps in the dev plan, each taking its whole timeout (a
    stalled step fails at its timeout, so a run that does not fail ends sooner); the extension's timeout, on a chain of
    its own, is said apart. The private link Service's wait for its load balancer is no key but pulumi-kubernetes'
    default (provider/pkg/await/service.go DefaultServiceTimeoutMins, 10): the README adds it in words. The typical
    time is docs/performance.md's simulated dev figure."""
    from offline.program import run

    resources = {r["urn"]: r for r in run("dev").to_json()["resources"]}
    longest: dict[str, int] = {}

    def chain(urn: str) -> int:
        if urn not in longest:
            resource = resources[urn]
            longest[urn] = step_bound_seconds(resource) + max(
                [chain(d) for d in resource.get("dependencies") or [] if d in resources], default=0)
        return longest[urn]

    worst = max(chain(urn) for urn in resources)
    extension = next(r for r in resources.values() if r["type"] == "azure-native:kubernetesconfiguration:Extension")
    text = before_first_up()
    assert worst % 60 == 0 and f"{worst // 60} minutes along the chain" in text, worst
    assert f"the extension's {step_bound_seconds(extension) // 60} minutes beside it" in text
    performance = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    typical = re.search(r"^\| dev \(an existing Grafana\) \| \d+ s \(([\d.]+) min\)", performance, re.M).group(1)
    assert f"about {round(float(typical))} minutes" in text, typical


def test_the_provider_location_gives_no_resource_its_region():
    """azure-native fills `location` into a resource that has none from the provider's `location` config
    (pulumi/pulumi-azure-native provider/pkg/provider/provider.go getDefaultLocation); every resource this stack can
    create that takes a location sets its own, so `azure-native:location` decides no region, as the README says."""
    import importlib

    from offline.program import run

    plans = [run("dev"), run("dev", {"createGrafana": "true", "createMonitorWorkspace": "true",
                                     "pyroscopeMode": "microservices"})]
    checked = set()
    for plan in plans:
        for resource in plan.to_json()["resources"]:
            provider, module, kind = resource["type"].split(":")
            if provider != "azure-native":
                continue
            if hasattr(getattr(importlib.import_module(f"pulumi_azure_native.{module}"), f"{kind}Args"), "location"):
                assert (resource.get("inputs") or {}).get("location"), resource["name"]
                checked.add(resource["type"])
    assert "azure-native:dashboard:Grafana" in checked and "azure-native:storage:StorageAccount" in checked, checked
    assert "the provider's default for a resource that names no region" in before_first_up()
