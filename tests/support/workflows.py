"""The GitHub Actions workflows as data, for the tests of the workflows and of the .ci/ scripts they run:
a workflow file parsed, a job's steps, the one step using an action or running a command, and the backend values
the scripts are run with."""

from __future__ import annotations

import re
import shlex

import yaml

from tests.support import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as True
    return document


def steps(job: dict) -> list[dict]:
    """A job's steps; none for a job that calls a reusable workflow (``uses:``)."""
    return job.get("steps", [])


def uses(job: dict, action: str) -> dict:
    """The job's one step using ``action``."""
    found = [s for s in steps(job) if s.get("uses", "").startswith(action + "@")]
    assert len(found) == 1, (action, [s.get("uses") for s in steps(job)])
    return found[0]


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


WORKFLOW_FILES = ["pr.yml", "deploy.yml", "deploy-stacks.yml", "drift.yml"]
# The run steps that may get the Pulumi token: they run pulumi (or ops.verify, which reads stack outputs).
PULUMI_RUNS = ("-m ops.verify", "pulumi preview --json", "-m ops.fleet endpoints", "-m ops.fleet cluster",
               "pulumi preview --stack")


def runs_pulumi(job: dict) -> bool:
    """A job that runs pulumi (or ops.verify, which runs `pulumi stack output`)."""
    return any(command in runs(job) for command in PULUMI_RUNS)


def index(job: dict, found: dict) -> int:
    return next(i for i, step in enumerate(steps(job)) if step is found)


def run_step(job: dict, command: str) -> dict:
    found = [s for s in steps(job) if command in s.get("run", "")]
    assert len(found) == 1, (command, [s.get("run") for s in steps(job)])
    return found[0]


KEY_VAULT = "azurekeyvault://kv-platform.vault.azure.net/keys/pulumi"
AZBLOB = "azblob://pulumi-state?storage_account=stplatformstate"


# After sign-in: what a job may still run. From the first sign-in step on, the job holds a cloud credential (azure/login
# leaves az signed in; pulumi/auth-actions exports the Pulumi token to every later step), so anything downloaded or
# installed from then on runs beside it. An allow-list, not a list of known installers: any command not named here is
# refused, whatever tool it is.
SIGN_IN_ACTIONS = ("azure/login", "pulumi/auth-actions")
#: The actions a job may use after signing in: the Pulumi sign-in itself and the hand-over of results to another job.
AFTER_SIGN_IN_ACTIONS = ("pulumi/auth-actions", "actions/upload-artifact")
#: Shell words that test, print or move what is already on the runner (bash keywords are read through).
AFTER_SIGN_IN_TOOLS = {"echo", "printf", "test", "[", "set", "cat", "mkdir", "jq", "exit", "true", "false", "tail",
                       "head"}
#: pulumi subcommands that run the program or read a stack; never one that fetches code (plugin install, install,
#: new, package add, convert, import of a provider...).
PULUMI_SUBCOMMANDS = {"preview", "up", "refresh", "stack", "config", "whoami", "version", "about"}
#: The repository's own Python packages, the only modules `python -m` may run after sign-in (never pip, never tests).
OWN_PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name != "tests")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}"}
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", ";;", "|&"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")


def shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a bash run block, each as its words: leading assignments, redirections and bash
    keywords dropped; a command substitution's commands listed as commands of their own. Text it cannot read
    (unbalanced quotes, arithmetic) comes back as one command that no allow-list names."""
    script = script.replace("\\\n", " ")
    lifted: list[str] = []
    while True:
        replaced = _SUBSTITUTION.sub(lambda m: lifted.append(m.group(1) or m.group(2) or "") or " SUBSTITUTION ",
                                     script)
        if replaced == script:
            break
        script = replaced
    commands: list[list[str]] = []
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:
            commands.append([f"<unreadable: {line.strip()}>"])
            continue
        current: list[str] = []
        for token in [*tokens, ";"]:
            if token in _SEPARATORS:
                commands.append(current)
                current = []
            else:
                current.append(token)
    simple = []
    for words in commands:
        kept, skip = [], False
        for i, word in enumerate(words):
            if skip:
                skip = False
                continue
            if word and set(word) <= set("<>&"):  # a redirection: drop it, its target and the fd before it
                skip = True
                if kept and kept[-1].isdigit() and words[i - 1] == kept[-1]:
                    kept.pop()
                continue
            if not kept and (word in _KEYWORDS or _ASSIGNMENT.match(word)):
                continue
            kept.append(word)
        if kept and kept[0] != "SUBSTITUTION":
            simple.append(kept)
    return simple + [c for text in lifted for c in shell_commands(text)]


def refused_after_sign_in(words: list[str]) -> str | None:
    """Why a command may not run beside a credential, or None when it may: the repository's scripts and modules,
    pulumi on the program (PULUMI_SUBCOMMANDS), az and kubectl without what installs code, and AFTER_SIGN_IN_TOOLS."""
    command, args = words[0], words[1:]
    name = command.rsplit("/", 1)[-1]
    if command in AFTER_SIGN_IN_TOOLS:
        return None
    if name == "pulumi":
        sub = next((a for a in args if not a.startswith("-")), "")
        return None if sub in PULUMI_SUBCOMMANDS else f"runs pulumi {sub or '(no subcommand)'}, which may fetch code"
    if re.fullmatch(r"python3?(\.\d+)?", name):
        if len(args) >= 2 and args[0] == "-m" and args[1] == "ops.binaries":
            return "runs ops.binaries, which downloads the Pulumi CLI and plugins (before sign-in only)"
        if len(args) >= 2 and args[0] == "-m" and args[1].split(".")[0] in OWN_PACKAGES:
            return None
        return "runs Python other than this repository's modules (python -m <package>)"
    if name == "bash":
        script = ROOT / args[0] if args else None
        if script and args[0].startswith((".ci/", "steps/")) and script.is_file() and len(args) == 1:
            return None
        return "runs a shell other than one of this repository's scripts"
    if name == "az":
        if {"extension", "upgrade", "install-cli", "bicep"} & set(args) or any("dynamic_install" in a for a in args):
            return "installs az code (an extension, an upgrade, a tool)"
        return None
    if name == "kubectl":
        return "runs a kubectl plugin manager" if "krew" in args else None
    return "is not on the after-sign-in allow-list"


def step_label(step: dict) -> str:
    return step.get("name") or step.get("uses") or (step.get("run") or "").strip().splitlines()[0]


def code_after_sign_in(workflow: str, job_name: str, job: dict) -> list[str]:
    """What the job fetches or runs after its first sign-in step beyond the allow-lists, each naming the workflow,
    job, step and command; none for a job that never signs in."""
    found, signed_in = [], False
    for step in steps(job):
        action = step.get("uses", "").split("@", 1)[0]
        if not signed_in:
            signed_in = action in SIGN_IN_ACTIONS
            continue
        where = f"{workflow} job {job_name} step {step_label(step)!r}"
        if "uses" in step and action not in AFTER_SIGN_IN_ACTIONS:
            found.append(f"{where}: uses {step['uses']} after sign-in")
        if "run" in step:
            if step.get("shell", "bash") != "bash":
                found.append(f"{where}: a {step['shell']} run block after sign-in")
                continue
            for words in shell_commands(step["run"]):
                reason = refused_after_sign_in(words)
                if reason:
                    found.append(f"{where}: `{' '.join(words)}` {reason}")
    return found


# The Pulumi CLI and plugins: installed from deploy/binaries.json (ops/binaries.py, every sha256 checked) before the
# first sign-in, and the engine told to fetch no plugin itself, so no plugin is downloaded beside a credential.
INSTALL_BINARIES = ('python3 -m ops.binaries --install "$RUNNER_TEMP/pulumi"\n'
                    'echo "$RUNNER_TEMP/pulumi" >> "$GITHUB_PATH"\n')
#: pulumi/pulumi v3.230.0 sdk/go/common/env/env.go: env.Bool("DISABLE_AUTOMATIC_PLUGIN_ACQUISITION") with the
#: PULUMI_ prefix, true for "1" or "true"; pkg/engine/plugins.go then answers "plugin <name> <version> not installed".
NO_ACQUISITION = "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"


def binaries_problems(workflow: str, job_name: str, job: dict) -> list[str]:
    """Why the job may run a binary no sha256 pins, each naming the workflow and job; none when it may not. A job
    that signs in uses no pulumi/actions (it downloads the CLI unchecked); a job that runs pulumi installs the locked
    binaries after setup-python and before its first sign-in, and sets NO_ACQUISITION to "true" in its env, which no
    step changes (step env, $GITHUB_ENV)."""
    where, found = f"{workflow} job {job_name}", []
    signs_in = [i for i, s in enumerate(steps(job)) if s.get("uses", "").split("@")[0] in SIGN_IN_ACTIONS]
    if signs_in:
        found += [f"{where} step {step_label(s)!r}: uses {s['uses']}, which downloads the CLI unchecked"
                  for s in steps(job) if s.get("uses", "").split("@")[0] == "pulumi/actions"]
    if not runs_pulumi(job):
        return found
    installs = [i for i, s in enumerate(steps(job)) if "-m ops.binaries" in s.get("run", "")]
    setup = [i for i, s in enumerate(steps(job)) if s.get("uses", "").startswith("actions/setup-python@")]
    if len(installs) != 1 or steps(job)[installs[0]]["run"] != INSTALL_BINARIES:
        found.append(f"{where}: expected one step running exactly {INSTALL_BINARIES!r}")
    elif not setup or not signs_in or not setup[0] < installs[0] < signs_in[0]:
        found.append(f"{where}: the binaries' install must come after setup-python and before the first sign-in")
    if (job.get("env") or {}).get(NO_ACQUISITION) != "true":
        found.append(f"{where}: env {NO_ACQUISITION} must be \"true\" (else the engine fetches missing plugins)")
    for step in steps(job):
        if NO_ACQUISITION in (step.get("env") or {}) or NO_ACQUISITION in step.get("run", ""):
            found.append(f"{where} step {step_label(step)!r}: changes {NO_ACQUISITION}")
    return found
