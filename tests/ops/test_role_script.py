"""The shell script ops.role_assignments prints, run for real by bash as a deployer on a machine shared with others.

The deployer's roles reach az through files: a file at a path another local user can make first would let that user
choose the role az creates and the script then assigns to the deployer. These tests run the printed script with a
stand-in az (below: it records each call and the bytes of every ``@file`` it is given, reading them as az would)
after another user has planted files and a symlink at the old fixed /tmp paths; as root, that other user is uid
65534 and the deployer a second unprivileged uid, and the other user tries to read and write the script's directory
while az holds it open. They also check that a failing az call stops the script before anything after it, and that
shellcheck passes on every printed mode. SIMULATED: no Azure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from ops import deployer_role as dr
from ops import role_assignments as ra

ME = "11111111-2222-3333-4444-555555555555"
GRAFANA_PRINCIPAL = "66666666-7777-8888-9999-000000000000"
NODE_GROUP = "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"
#: What the stand-in `az account show --query id --output tsv` prints.
SUBSCRIPTION = "0b1f6471-1bf0-4dda-aec3-cb9272f09590"
IDS = ["--deployer-object-id", ME, "--grafana-principal-id", GRAFANA_PRINCIPAL, "--node-resource-group", NODE_GROUP]
#: The other local user, and (as root) the deployer: two unprivileged uids.
OTHER_UID, DEPLOYER_UID = 65534, 65533
AS_ROOT = os.geteuid() == 0
#: The role the other user would have created: everything, on the whole subscription.
THEIRS = json.dumps({"Name": "aks-gpu-observability deployer (dev)", "IsCustom": True, "Description": "planted",
                     "Actions": ["*"], "NotActions": [], "DataActions": [], "NotDataActions": [],
                     "AssignableScopes": [f"/subscriptions/{SUBSCRIPTION}"]}) + "\n"

FAKE_AZ = r"""#!/bin/bash
# A stand-in az: records each call's arguments (NUL-separated) and the bytes of each @file argument, read as the
# caller (az reads them the same way), with the mode and owner of the directory holding it. AZ_FAIL: the call whose
# words contain it fails. AZ_PAUSE: the first call containing it waits for $AZ_CALLS/resume.
set -u
calls=${AZ_CALLS:?}
n=$(find "$calls" -maxdepth 1 -name '*.argv' | wc -l)
printf '%s\0' "$@" > "$calls/$n.argv"
k=0
for arg in "$@"; do
  if [[ $arg == @* ]]; then
    cat -- "${arg#@}" > "$calls/$n.file$k" || { echo "ERROR: cannot read ${arg#@}" >&2; exit 1; }
    stat -c '%a %u' -- "$(dirname -- "${arg#@}")" > "$calls/$n.dir$k"
    k=$((k + 1))
  fi
done
if [[ -n ${AZ_PAUSE:-} && " $* " == *" $AZ_PAUSE "* && ! -e $calls/resume ]]; then
  touch "$calls/paused"
  for _ in $(seq 600); do [[ -e $calls/resume ]] && break; sleep 0.05; done
fi
if [[ -n ${AZ_FAIL:-} && " $* " == *" $AZ_FAIL "* ]]; then
  echo "ERROR: (stand-in) $AZ_FAIL failed" >&2
  exit 1
fi
if [[ $* == "account show --query id --output tsv" ]]; then
  printf '%s\n' "${AZ_SUBSCRIPTION-}"
fi
exit 0
"""


def printed(monkeypatch, capsys, *argv: str) -> str:
    """The script ops.role_assignments prints for ``argv`` (stack dev, a stacks.json listing none: --preview too)."""
    stacks = Path(tempfile.mkdtemp()) / "stacks.json"
    stacks.write_text('{"stacks": []}', encoding="utf-8")
    monkeypatch.setattr(ra, "STACKS_FILE", stacks)
    code = ra.main(["--stack", "dev", *argv])
    out, err = capsys.readouterr()
    shutil.rmtree(stacks.parent)
    assert code == 0, err
    return out


class Workspace:
    """The deployer's own directory: the stand-in az on PATH, the saved script, the calls az recorded."""

    def __init__(self, root: Path, uid: int):
        self.root, self.uid = root, uid
        self.bin, self.calls = root / "bin", root / "calls"
        for path in (self.bin, self.calls):
            path.mkdir()
        (self.bin / "az").write_text(FAKE_AZ)
        (self.bin / "az").chmod(0o755)
        self.own(root, self.bin, self.calls, self.bin / "az")

    def own(self, *paths: Path) -> None:
        """As root: make ``paths`` the deployer's."""
        for path in paths if AS_ROOT else ():
            os.chown(path, self.uid, self.uid)

    def env(self, **extra: str) -> dict:
        return {"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(self.root), "LANG": "C.UTF-8",
                "AZ_CALLS": str(self.calls), "AZ_SUBSCRIPTION": SUBSCRIPTION, **extra}

    def start(self, script: str, **extra: str) -> subprocess.Popen:
        """bash running the saved script as the deployer (no TMPDIR: mktemp uses /tmp, where the other user is)."""
        saved = self.root / "roles.sh"
        saved.write_text(script)
        self.own(saved)
        user = {"user": self.uid, "group": self.uid, "extra_groups": []} if AS_ROOT else {}
        return subprocess.Popen(["bash", str(saved)], env=self.env(**extra), cwd=self.root, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **user)

    def run(self, script: str, **extra: str) -> tuple[int, str, list]:
        process = self.start(script, **extra)
        _, err = process.communicate(timeout=60)
        return process.returncode, err, self.recorded()

    def recorded(self) -> list:
        """Each call: {argv, files: [(bytes, 'mode uid' of its directory, path)]}, in order."""
        found = []
        for n in range(len(list(self.calls.glob("*.argv")))):
            argv = (self.calls / f"{n}.argv").read_bytes().decode().split("\0")[:-1]
            paths = [arg[1:] for arg in argv if arg.startswith("@")]
            files = [((self.calls / f"{n}.file{k}").read_text(), (self.calls / f"{n}.dir{k}").read_text().strip(),
                      path) for k, path in enumerate(paths) if (self.calls / f"{n}.file{k}").exists()]
            found.append({"argv": argv, "files": files})
        return found


@pytest.fixture
def workspace(tmp_path):
    """As root: a directory of the deployer's (uid 65533) under /tmp; else tmp_path."""
    if not AS_ROOT:
        yield Workspace(tmp_path, os.getuid())
        return
    root = Path(tempfile.mkdtemp(prefix="role-script-", dir="/tmp"))
    try:
        yield Workspace(root, DEPLOYER_UID)
    finally:
        shutil.rmtree(root)


def command(call: dict) -> str:
    return " ".join(call["argv"][:3])


def our_roles() -> dict:
    """{role file stem: the bytes of the definition the generator means for dev in SUBSCRIPTION}."""
    who = ra.Principals(ME, "User", GRAFANA_PRINCIPAL, NODE_GROUP, SUBSCRIPTION)
    found = [a for a in ra.assignments("dev", ra.stack_config("dev"), who) if isinstance(a, ra.Assignment)]
    paths = list(dict.fromkeys(a.definition for a in found if a.definition is not None))
    return {path.stem: json.dumps(ra.definition(path, [a.scope for a in found if a.definition == path], "dev"),
                                  indent=2).replace(dr.SUBSCRIPTION_PLACEHOLDER, SUBSCRIPTION) + "\n"
            for path in paths}


class Planted:
    """What the other user leaves in /tmp before the deployer runs the script: at each old fixed path, their role,
    as a file of theirs or as a symlink of theirs to one; as root owned by uid 65534, else read-only (as a file of
    someone else's is to the deployer)."""

    def __init__(self, stems: list):
        self.own = Path(tempfile.mkdtemp(prefix="other-user-", dir="/tmp"))
        self.paths = [Path("/tmp") / f"{stem}.json" for stem in stems]
        self.clear()
        target = self.own / "role.json"
        target.write_text(THEIRS)
        for i, path in enumerate(self.paths):
            if i % 2:
                path.symlink_to(target)
            else:
                path.write_text(THEIRS)
        for path in (target, *self.paths):
            if AS_ROOT:
                os.lchown(path, OTHER_UID, OTHER_UID)
            if not path.is_symlink():
                path.chmod(0o644 if AS_ROOT else 0o444)
        if AS_ROOT:
            os.chown(self.own, OTHER_UID, OTHER_UID)
        self.before = self.state()

    def state(self) -> list:
        return [(str(path), os.readlink(path) if path.is_symlink() else None, path.lstat().st_uid,
                 Path(os.path.realpath(path)).read_text()) for path in self.paths]

    def clear(self) -> None:
        for path in self.paths:
            if os.path.lexists(path):
                path.unlink()

    def remove(self) -> None:
        self.clear()
        shutil.rmtree(self.own)


def other_user(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), user=OTHER_UID, group=OTHER_UID, extra_groups=[], capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin"}, timeout=30)


# --- (a) Another user got there first ---------------------------------------------------------------------------------
# Both cases plant files at the same /tmp paths: one xdist worker runs them, one after the other.
@pytest.mark.xdist_group("tmp-deployer-role-paths")
@pytest.mark.parametrize("subscription", ["read by the script", "given"])
def test_roles_planted_in_tmp_by_another_user_are_neither_created_nor_touched(monkeypatch, capsys, workspace,
                                                                              subscription):
    """The roles az creates are the generator's, byte for byte, though another user has planted their own role (a
    file, a symlink) at every /tmp path the script once used; their files stay as they were; the script's directory
    is the deployer's alone (0700) and gone afterwards; as root, the other user (uid 65534) can neither list, read
    nor write it while az holds it, and no file the other user can write reached az."""
    extra = [] if subscription == "read by the script" else ["--subscription-id", SUBSCRIPTION]
    script = printed(monkeypatch, capsys, *IDS, *extra)
    ours = our_roles()
    planted, process = Planted(list(ours)), None
    try:
        process = workspace.start(script, AZ_PAUSE="role definition create")
        for _ in range(600):
            if (workspace.calls / "paused").exists() or process.poll() is not None:
                break
            time.sleep(0.05)
        so_far = workspace.recorded()
        held = so_far[-1]["files"] if so_far else []
        assert held, f"az was not handed a role file: {so_far}, {process.stderr.read() if process.poll() else ''}"
        assert held[0][0] == next(iter(ours.values())), f"az was handed {held[0][2]}: {held[0][0][:200]}"
        role_file = Path(held[0][2])
        if AS_ROOT:
            for argv in (["ls", str(role_file.parent)], ["cat", str(role_file)],
                         ["touch", str(role_file.parent / "planted.json")], ["rm", "-f", str(role_file)]):
                done = other_user(*argv)
                assert done.returncode != 0, f"the other user could run {argv}"
            assert role_file.exists()
        (workspace.calls / "resume").touch()
        workspace.own(workspace.calls / "resume")
        _, err = process.communicate(timeout=60)
        calls = workspace.recorded()
        assert process.returncode == 0, err
        created = [call["files"][0] for call in calls if command(call) == "role definition create"]
        assert [Path(path).name for _, _, path in created] == [f"{stem}.json" for stem in ours]
        assert [text for text, _, _ in created] == list(ours.values())
        for (text, _, _), path in zip(created, dr.ROLE_FILES):
            assert json.loads(text)["Actions"] == dr.load_role(path)["Actions"]
        assert {where for _, where, _ in created} == {f"700 {workspace.uid}"}
        assert not Path(created[0][2]).parent.exists(), "the role files outlive the script"
        assert planted.state() == planted.before
        assigned = [call for call in calls if command(call) == "role assignment create"]
        assert len(assigned) == 5 and all(SUBSCRIPTION in call["argv"][call["argv"].index("--scope") + 1]
                                          for call in assigned)
    finally:
        if process is not None and process.poll() is None:
            process.kill()
        planted.remove()


# --- (b) A failing az stops the script --------------------------------------------------------------------------------
@pytest.mark.parametrize("fail, subscription, ran", [
    ("account show", SUBSCRIPTION, ["account show --query"]),
    ("", "", ["account show --query"]),  # az account show prints nothing: no subscription to put in the scopes
    ("role definition create", SUBSCRIPTION, ["account show --query", "role definition create"]),
    ("role assignment create", SUBSCRIPTION, ["account show --query", *["role definition create"] * 3,
                                              "role assignment create"]),
])
def test_a_failing_az_call_stops_the_script_there(monkeypatch, capsys, workspace, fail, subscription, ran):
    """The script stops at the first az call that fails, or at a subscription that is not one: no role is assigned
    after a create that failed, no definition is created without the subscription, and the exit status is not 0."""
    script = printed(monkeypatch, capsys, *IDS)
    code, err, calls = workspace.run(script, AZ_FAIL=fail, AZ_SUBSCRIPTION=subscription)
    assert code != 0
    assert [command(call) for call in calls] == ran, err
    assert err.strip(), "the script stopped without saying why"


# --- Every printed mode -----------------------------------------------------------------------------------------------
def uncommented(script: str) -> str:
    """The drift script with its commented-out grants (production's state and key) switched on."""
    return re.sub(r"^# (?=az |cat |sed |\{|EOF$)", "", script, flags=re.M)


def test_the_drift_decrypt_role_goes_through_the_private_directory_too(monkeypatch, capsys, workspace):
    """--drift: switched on, the decrypt role az creates is the generator's, from a directory of the deployer's
    alone, and only then is it assigned."""
    script = uncommented(printed(monkeypatch, capsys, "--drift", "--deployer-object-id", ME))
    code, err, calls = workspace.run(script)
    assert code == 0, err
    assert [command(call) for call in calls] == ["account show --query", "role assignment create",
                                                 "role assignment create", "role definition create",
                                                 "role assignment create"]
    (text, where, _), = calls[3]["files"]
    scopes = [scope.format(subscription=SUBSCRIPTION) for scope in ra.STATE_DECRYPT_ROLE["AssignableScopes"]]
    assert json.loads(text) == {**ra.STATE_DECRYPT_ROLE, "AssignableScopes": scopes}
    assert where == f"700 {workspace.uid}"


@pytest.mark.parametrize("argv", [
    (), IDS, (*IDS, "--subscription-id", SUBSCRIPTION),
    (*IDS, "--set", "pyroscopeMode=microservices", "--set", "pyroscopeStorageAccountResourceGroup=rg-pyroscope-dev",
     "--pyroscope-group-dedicated"),
    ("--preview",), ("--drift",), ("--drift", "--subscription-id", SUBSCRIPTION),
], ids=["placeholders", "ids", "subscription", "storage", "preview", "drift", "drift-subscription"])
def test_shellcheck_passes_on_every_printed_script(monkeypatch, capsys, argv):
    """shellcheck (the linter CI runs on the project's scripts) finds nothing in the printed script, nor in the drift
    script with its commented-out grants switched on."""
    checker = shutil.which("shellcheck")
    assert checker, "shellcheck is not installed (Debian: apt-get install shellcheck; .ci/run installs it)"
    script = printed(monkeypatch, capsys, *argv)
    for text in {script, uncommented(script)}:
        done = subprocess.run([checker, "-"], input=text, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout
