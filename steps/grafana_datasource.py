#!/usr/bin/env python3
"""Create, update or delete one Grafana datasource, idempotently, through Grafana's HTTP API.

Usage: python3 -m steps.grafana_datasource apply|delete
Environment: GRAFANA_ENDPOINT (https URL of the workspace), DATASOURCE (JSON: uid, name, type, access, url,
jsonData), TIMEOUT_SECONDS (retries of 429/5xx); optional GRAFANA_ID and API_VERSION (the workspace's ARM id,
checked before a delete), UID_CONFIG_KEY (the config key that sets this uid, named in errors),
POLL_INITIAL_SECONDS, POLL_MAX_SECONDS, PULUMI_COMMAND_STDOUT (this step's previous stdout, set by pulumi-command
on updates and deletes).
Owns: apply (create, or update in place under the same uid, stamped with this step's owner id; never a uid change,
never a read-only datasource; the Prometheus type this Grafana needs) and delete (only this step's; already gone is
success). Prints ``<uid> owner=<id>`` (apply) or the uid (delete). Errors: one ``error:`` line naming the config key to
change, exit 1. Mirrors Grafana's datasource HTTP API (grafana/grafana ``pkg/api/datasources.go``; Azure Managed
Grafana, Grafana Admin role); the adoption rules and why: docs/decisions/datasource-adoption.md.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse

from steps import grafana_server
from steps.azcli import OWNER_KEY, AzError, Owner, Step, contains, rest

step = Step("grafana-datasource")


def main(action: str) -> int:
    endpoint = step.env("GRAFANA_ENDPOINT").rstrip("/")
    try:
        definition = json.loads(step.env("DATASOURCE"))
    except json.JSONDecodeError as error:
        step.fail(f"DATASOURCE is not JSON: {error}")
    timeout = float(step.env("TIMEOUT_SECONDS"))
    uid, name = definition.get("uid"), definition.get("name")
    if not uid or not name:
        step.fail("DATASOURCE needs a uid and a name")
    by_uid = f"{endpoint}/api/datasources/uid/{urllib.parse.quote(uid, safe='')}"
    owner = Owner()

    if action == "delete":
        step.delete_owned(f"datasource {uid}", by_uid, timeout, _marker, owner, foreign=_provisioned)
        print(uid)
        return 0

    existing = _writable(uid, step.read(f"datasource {uid}", by_uid, timeout))
    server = grafana_server.probe(step, endpoint, timeout) if grafana_server.uses_azure_auth(definition) else None

    if existing is None:
        found = _by_name(endpoint, name, timeout)
        if found is not None:
            _refuse_another_uid(found, definition, server, owner)
        desired = _for_grafana(definition, server, None)
        stamped = _stamped(desired, owner)
        try:
            step.retry(f"creating datasource {uid}", lambda: rest("post", f"{endpoint}/api/datasources", stamped),
                       timeout)
            step.log(f"created datasource {uid} ({desired.get('type')})")
            print(owner.line(uid))
            return 0
        except AzError as error:
            if error.kind != "conflict":
                step.fail(f"creating datasource {uid} failed: {error.last_line}")
            # 409: the name is taken. By this very datasource, if an earlier POST landed before a retried
            # timeout; then it is adopted below. By another uid otherwise: say which.
            existing = _writable(uid, step.read(f"datasource {uid}", by_uid, timeout))
            if existing is None:
                holder = _uid_of_name(endpoint, name, timeout)
                step.fail(f"a datasource named '{name}' already exists under uid '{holder}'; {_adopt_by_uid(holder)}")
            step.log(f"datasource {uid} already exists (an earlier attempt created it); adopting it")
    desired = _for_grafana(definition, server, existing)
    stamped = _stamped(desired, owner)
    if contains(existing, desired) and (not owner.claim or _marker(existing) == owner.id):
        step.log(f"datasource {uid} is up to date; nothing written")
    else:
        changed = sorted(key for key, value in desired.items() if not contains(existing.get(key), value))
        try:
            step.retry(f"updating datasource {uid}", lambda: _put(by_uid, uid, stamped), timeout)
        except AzError as error:
            if error.kind == "read_only":
                _refuse_read_only(uid)
            step.fail(f"updating datasource {uid} failed: {error.last_line}")
        step.log(f"updated datasource {uid}: {', '.join(changed)}" if changed
                 else f"claimed datasource {uid} for this step")
    print(owner.line(uid))
    return 0


def _provisioned(datasource: dict) -> str | None:
    """Why a datasource is not this stack's to delete, or None: a provisioned one (``readOnly``)."""
    return "is provisioned in Grafana (readOnly), not this stack's" if datasource.get("readOnly") else None


def _writable(uid: str, existing: dict | None) -> dict | None:
    """``existing`` unless it is provisioned (``readOnly``), which stops the step (:func:`_refuse_read_only`)."""
    if existing is not None and existing.get("readOnly"):
        _refuse_read_only(uid)
    return existing


def _refuse_read_only(uid: str) -> "NoReturn":  # noqa: F821
    key = os.environ.get("UID_CONFIG_KEY") or "the datasource uid key"
    step.fail(f"datasource {uid} is provisioned in Grafana (readOnly): Grafana refuses to update or delete it through "
              f"its API, so this stack will not take it over; set {key} to another uid (`pulumi config set {key} "
              f"<uid>`), or remove {uid} from Grafana's datasource provisioning")


def _marker(datasource: dict) -> str | None:
    """The owner id a datasource carries, if any."""
    return (datasource.get("jsonData") or {}).get(OWNER_KEY)


def _by_name(endpoint: str, name: str, timeout: float):
    """The datasource named ``name`` (GET /api/datasources/name/{name}), or None when there is none."""
    return step.read(f"datasource '{name}'", f"{endpoint}/api/datasources/name/{urllib.parse.quote(name, safe='')}",
                     timeout)


def _stamped(desired: dict, owner: Owner) -> dict:
    """``desired`` as written: its jsonData carries this step's owner id."""
    return {**desired, "jsonData": {**(desired.get("jsonData") or {}), OWNER_KEY: owner.id}}


def _for_grafana(desired: dict, server, live) -> dict:
    """``desired`` with the type this Grafana needs (steps/grafana_server.py); a plugin type whose plugin is missing
    stops the step with one line."""
    if server is None:
        return desired
    fitted = grafana_server.for_grafana(desired, server, live)
    why = grafana_server.missing_plugin(server, fitted)
    if why:
        step.fail(f"datasource {desired['uid']}: {why}")
    if fitted["type"] != desired["type"]:
        step.log(f"datasource {desired['uid']}: type {fitted['type']} in {server.describe()} (the stack's definition "
                 f"says {desired['type']})")
    return fitted


def _put(url: str, uid: str, body: dict):
    """PUT ``body`` to ``url`` (the datasource ``uid``). A body of another uid is never sent: Grafana refuses to change
    a datasource's uid (module docstring), with 400 or, in some releases, a 500 that a retry would only repeat."""
    if body.get("uid") != uid:
        step.fail(f"refusing to send datasource {uid} a body of uid {body.get('uid')!r}: Grafana does not change a uid")
    return rest("put", url, body)


def _adopt_by_uid(holder: str) -> str:
    """The one-line advice for a datasource of the stack's name under uid ``holder``."""
    key = os.environ.get("UID_CONFIG_KEY")
    setting = f"`pulumi config set {key} {holder}`" if key else f"set the datasource's uid config to '{holder}'"
    return (f"Grafana does not change a datasource's uid, so to adopt it keep its uid: {setting}, then `pulumi up` "
            f"(dashboards and alert rules that name {holder} keep working); or rename or delete it in Grafana")


def _refusal(found: dict, desired: dict, server, owner: Owner) -> str | None:
    """Why the datasource ``found`` (same name, another uid) cannot be adopted for ``desired`` at all, or None if it
    could be under its own uid: read-only (provisioned; Grafana refuses to update it), another type (either
    Prometheus type for an Azure-auth Prometheus datasource that this Grafana accepts), or another step's owner id."""
    if found.get("readOnly"):
        return "is read-only (provisioned from a file; Grafana refuses to change it)"
    types = ((grafana_server.accepted_types(server) or {grafana_server.new_type(server)}) if server is not None
             else {desired.get("type")})
    if found.get("type") not in types:
        return f"is of type {found.get('type')!r}, not {' or '.join(repr(t) for t in sorted(types))}"
    if owner.held_by_another(_marker(found)):
        return f"belongs to another step or stack (owner {_marker(found)})"
    return None


def _refuse_another_uid(found: dict, desired: dict, server, owner: Owner) -> "NoReturn":  # noqa: F821
    """Stop at the hand-made datasource ``found`` (the stack's name, another uid): nothing is written (module
    docstring); the one line says why it cannot be adopted, or which uid to configure to adopt it."""
    name, old_uid = desired["name"], str(found.get("uid"))
    why = _refusal(found, desired, server, owner)
    if why:
        step.fail(f"a datasource named '{name}' already exists with uid '{old_uid}' and {why}; rename or delete it "
                  "in Grafana, or set the datasource name config to another name")
    step.fail(f"a datasource named '{name}' already exists under uid '{old_uid}', not '{desired['uid']}'; "
              f"{_adopt_by_uid(old_uid)}")


def _uid_of_name(endpoint: str, name: str, timeout: float) -> str:
    return str((_by_name(endpoint, name, timeout) or {}).get("uid", "?"))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("apply", "delete"):
        step.fail("usage: grafana_datasource.py apply|delete")
    sys.exit(main(sys.argv[1]))
