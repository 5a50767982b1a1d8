"""Every shell script CI or a step runs (.ci/*.sh, steps/*.sh) handles tokens alike: a token it obtains is masked
(GitHub's ``::add-mask::`` in .ci, ``MASK_VALUES`` in a step) before its first use, and no secret reaches the argv of
an external command except az login's ``--federated-token``, which takes it no other way. A static read of the
scripts' command lines; the run itself: tests/ci/test_azure_relogin.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import ROOT

#: What a script is handed secret, by the name it reads (the GitHub runner's request token, the approval nonce).
SECRET_INPUTS = {"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "APPROVAL_NONCE", "PULUMI_ACCESS_TOKEN", "ARM_OIDC_TOKEN",
                 "ARM_CLIENT_SECRET", "AZURE_CLIENT_SECRET"}
#: Command substitutions whose output is a token: GitHub's ID token service, az's access tokens (the whole answer;
#: ``--query expires_on`` asks for the expiry only).
TOKEN_SOURCE = re.compile(r"ACTIONS_ID_TOKEN_REQUEST_URL|get-access-token(?![^)]*--query expires_on)")
#: Shell builtins and keywords: their arguments are in no process's argv.
BUILTINS = {"printf", "echo", "[[", ":", "local", "read", "export", "test", "[", "if", "then", "elif", "while",
            "until", "!", "case", "return", "declare"}
ALLOWED_ARGV = [re.compile(r"^az login .*--federated-token ")]
SCRIPTS = sorted([*ROOT.glob(".ci/*.sh"), *ROOT.glob("steps/*.sh")])


def logical_lines(text: str) -> list[str]:
    """The script's command lines: comments dropped, continued lines (``\\``, a trailing ``|``) joined."""
    lines, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") or not line:
            continue
        pending = f"{pending} {line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
        elif not pending.endswith("|"):
            lines.append(pending)
            pending = ""
    return lines + ([pending] if pending else [])


def uses(name: str, line: str) -> bool:
    return re.search(r"\$\{?" + re.escape(name) + r"\b", line) is not None


def masks(name: str, line: str) -> bool:
    """``echo "::add-mask::$name"`` (GitHub), or ``MASK_VALUES=...$name...`` (steps/lib.sh mask)."""
    return (re.match(r'echo "::add-mask::\$\{?' + re.escape(name) + r'\}?"$', line) is not None
            or (line.startswith("MASK_VALUES=") and uses(name, line)))


def segments(line: str) -> list[str]:
    """Each simple command of a line: split at pipes, lists and command substitutions; leading assignments off."""
    parts = re.split(r"\|\||&&|[|;]|\$\(|\)", line)
    found = []
    for part in parts:
        words = part.strip().split()
        while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
            words.pop(0)
        if words:
            found.append(" ".join(words))
    return found


def findings(text: str) -> list[str]:
    lines = logical_lines(text)
    secrets = {name for name in SECRET_INPUTS if any(uses(name, line) for line in lines)}
    # NAME=$(...), export/local/declare NAME=$(...), read ... NAME < <(...) from a token source.
    assigned = re.compile(r"^(?:(?:export|local|declare)\s+)?(\w+)=\$\(|^read\s+(?:-\w+\s+)*(\w+)\s*<\s*<\(")
    secrets |= {m.group(1) or m.group(2) for line in lines for m in [assigned.match(line)]
                if m and TOKEN_SOURCE.search(line)}
    found = []
    for line in lines:  # a token source inside another command's arguments puts the token on its command line
        if TOKEN_SOURCE.search(line) and not assigned.match(line) and "$(" in line:
            found.append(f"a token is on a command line: {line[:100]}")
    for name in sorted(secrets):
        masked = False
        for line in lines:
            if masks(name, line):
                masked = True
                continue
            if line.startswith(': "') or (assigned.match(line) and name in assigned.match(line).groups()):
                continue  # a presence check (: "${NAME:?...}"), and the assignment itself
            if uses(name, line) and not masked:
                found.append(f"{name} is used before it is masked: {line[:100]}")
                break
        for line in lines:
            for command in segments(line):
                if uses(name, command) and command.split()[0] not in BUILTINS and not any(
                        allowed.match(command) for allowed in ALLOWED_ARGV):
                    found.append(f"{name} is on the command line of {command.split()[0]}: {command[:100]}")
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_token_a_script_handles_is_masked_first_and_kept_off_command_lines(script: Path):
    assert findings(script.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("text,finding", [
    # The relogin script as it was: the request token in curl's -H argument, the ID token used unmasked.
    ('token=$(curl -fsS -H "Authorization: bearer ${ACTIONS_ID_TOKEN_REQUEST_TOKEN}" '
     '"${ACTIONS_ID_TOKEN_REQUEST_URL}&audience=x" | python3 -c "...")\n'
     'az login --service-principal --federated-token "$token" --output none\n',
     ["ACTIONS_ID_TOKEN_REQUEST_TOKEN is used before it is masked",
      "ACTIONS_ID_TOKEN_REQUEST_TOKEN is on the command line of curl", "token is used before it is masked"]),
    ('t=$(az account get-access-token --resource r --output tsv)\ncurl -H "Authorization: Bearer $t" https://x\n',
     ["t is used before it is masked", "t is on the command line of curl"]),
    ('MASK_VALUES="${APPROVAL_NONCE}"\naz rest --body "{\\"m\\": \\"$APPROVAL_NONCE\\"}"\n',
     ["APPROVAL_NONCE is on the command line of az"]),
    ('curl -H "Authorization: Bearer $(az account get-access-token --query accessToken -o tsv)" https://x\n',
     ["a token is on a command line"]),
    ('export T=$(az account get-access-token --query accessToken -o tsv)\nwget --header "A: $T" https://x\n',
     ["T is used before it is masked", "T is on the command line of wget"]),
    ('read -r T < <(az account get-access-token --query accessToken -o tsv)\necho "::add-mask::${T}"\ncurl -u "$T" x\n',
     ["T is on the command line of curl"]),
    ('pulumi login --cloud-url x "$PULUMI_ACCESS_TOKEN"\n', ["PULUMI_ACCESS_TOKEN is used before it is masked"]),
])
def test_the_check_finds_an_unmasked_or_exposed_token(text, finding):
    found = findings(text)
    for expected in finding:
        assert any(line.startswith(expected) for line in found), (expected, found)


def test_the_check_passes_an_expiry_only_query_and_a_masked_federated_login():
    text = ('e=$(az account get-access-token --resource r --query expires_on --output tsv)\necho "$e"\n'
            ': "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:?needed}"\necho "::add-mask::${ACTIONS_ID_TOKEN_REQUEST_TOKEN}"\n'
            't=$(printf "%s" "$ACTIONS_ID_TOKEN_REQUEST_TOKEN" |\n  curl -H @- "$ACTIONS_ID_TOKEN_REQUEST_URL")\n'
            'echo "::add-mask::${t}"\naz login --service-principal --federated-token "$t" --output none\n')
    assert findings(text) == []
