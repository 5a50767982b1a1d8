#!/usr/bin/env python3
"""Create, update or delete one Grafana datasource, idempotently, through Grafana's HTTP API.

Usage: python3 scripts/grafana_datasource.py apply|delete
Environment: GRAFANA_ENDPOINT (https URL of the workspace), DATASOURCE (JSON: uid, name, type, access, url,
jsonData), TIMEOUT_SECONDS (retries of 429/5xx); optional POLL_INITIAL_SECONDS, POLL_MAX_SECONDS,
PULUMI_COMMAND_STDOUT (this step's previous stdout, set by pulumi-command on updates and deletes).

apply: GET /api/datasources/uid/{uid}; missing -> GET /api/datasources/name/{name}: a datasource of that name is
adopted (below), none -> POST /api/datasources. Present and already holding every field of DATASOURCE -> nothing
written (on a create only if it also carries this step's owner id); otherwise PUT /api/datasources/uid/{uid}.
What is written carries jsonData.aksGpuObservabilityOwner = this step's owner id (azcli.Owner). A datasource
created by hand with the same uid is adopted.

Adoption by name (a datasource made by hand under the stack's name but another uid, e.g. the published
procedure's Prometheus datasource, whose uid Grafana picked at random): only if it is not read-only, is of the
same type and carries no other step's owner id; it is then moved to the stack's uid in place with PUT
/api/datasources/uid/{its uid} and a body holding the stack's uid. Grafana's update keeps the row (its numeric id,
name, secure fields, permissions) and writes the body's uid (grafana/grafana at 001e0d7688f2608aa1f36b4f377a9185d328217a:
pkg/api/datasources.go ``UpdateDataSourceByUID`` looks the datasource up by the path uid and updates it by its id;
pkg/services/datasources/service/store.go ``UpdateDataSource`` at 01d820ab9a41d230334a427024e50f6dd03ce338 sets
``UID: cmd.UID`` on that row after ``util.ValidateUID``). References to the old uid (a panel or alert rule that
names it) must follow; set the datasource uid config to the old uid instead to keep it. A datasource of that name
that cannot be adopted stops the step with one line saying why. A different datasource with the same name
appearing between the checks makes POST answer 409: the step then names its uid and stops. delete: DELETE
/api/datasources/uid/{uid} unless the datasource carries another step's owner id; already gone is success.
Prints ``<uid> owner=<id>`` (apply) or the uid (delete). Mirrors Grafana's datasource HTTP API (Azure Managed
Grafana, Grafana Admin role).
"""

from __future__ import annotations

import json
import sys
import urllib.parse

from azcli import OWNER_KEY, AzError, Owner, Step, contains, rest

step = Step("grafana-datasource")


def main(action: str) -> int:
    endpoint = step.env("GRAFANA_ENDPOINT").rstrip("/")
    try:
        desired = json.loads(step.env("DATASOURCE"))
    except json.JSONDecodeError as error:
        step.fail(f"DATASOURCE is not JSON: {error}")
    timeout = float(step.env("TIMEOUT_SECONDS"))
    uid, name = desired.get("uid"), desired.get("name")
    if not uid or not name:
        step.fail("DATASOURCE needs a uid and a name")
    by_uid = f"{endpoint}/api/datasources/uid/{urllib.parse.quote(uid, safe='')}"
    owner = Owner()

    if action == "delete":
        step.delete_owned(f"datasource {uid}", by_uid, timeout, _marker, owner)
        print(uid)
        return 0

    stamped = {**desired, "jsonData": {**(desired.get("jsonData") or {}), OWNER_KEY: owner.id}}
    existing = step.read(f"datasource {uid}", by_uid, timeout)

    if existing is None:
        adopted = _by_name(endpoint, name, timeout)
        if adopted is not None:
            _adopt(adopted, desired, stamped, endpoint, owner, timeout)
            print(owner.line(uid))
            return 0
        try:
            step.retry(f"creating datasource {uid}", lambda: rest("post", f"{endpoint}/api/datasources", stamped), timeout)
            step.log(f"created datasource {uid} ({desired.get('type')})")
            print(owner.line(uid))
            return 0
        except AzError as error:
            if error.kind != "conflict":
                step.fail(f"creating datasource {uid} failed: {error.last_line}")
            # 409: the name is taken. By this very datasource, if an earlier POST landed before a retried
            # timeout; then it is adopted below. By another uid otherwise: say which.
            existing = step.read(f"datasource {uid}", by_uid, timeout)
            if existing is None:
                holder = _uid_of_name(endpoint, name, timeout)
                step.fail(f"a datasource named '{name}' already exists with uid '{holder}'; set the datasource uid "
                          f"config to '{holder}' to adopt it, or rename or delete it in Grafana")
            step.log(f"datasource {uid} already exists (an earlier attempt created it); adopting it")
    if contains(existing, desired) and (not owner.claim or _marker(existing) == owner.id):
        step.log(f"datasource {uid} is up to date; nothing written")
    else:
        changed = sorted(key for key, value in desired.items() if not contains(existing.get(key), value))
        try:
            step.retry(f"updating datasource {uid}", lambda: rest("put", by_uid, stamped), timeout)
        except AzError as error:
            step.fail(f"updating datasource {uid} failed: {error.last_line}")
        step.log(f"updated datasource {uid}: {', '.join(changed)}" if changed else f"claimed datasource {uid} for this step")
    print(owner.line(uid))
    return 0


def _marker(datasource: dict) -> str | None:
    """The owner id a datasource carries, if any."""
    return (datasource.get("jsonData") or {}).get(OWNER_KEY)


def _by_name(endpoint: str, name: str, timeout: float):
    """The datasource named ``name`` (GET /api/datasources/name/{name}), or None when there is none."""
    return step.read(f"datasource '{name}'", f"{endpoint}/api/datasources/name/{urllib.parse.quote(name, safe='')}", timeout)


def _refusal(found: dict, desired: dict, owner: Owner) -> str | None:
    """Why the datasource ``found`` (same name, another uid) cannot be adopted for ``desired``, or None if it can:
    read-only (provisioned; Grafana refuses to update it), another type, or another step's owner id."""
    if found.get("readOnly"):
        return "is read-only (provisioned from a file; Grafana refuses to change it)"
    if found.get("type") != desired.get("type"):
        return f"is of type {found.get('type')!r}, not {desired.get('type')!r}"
    if owner.held_by_another(_marker(found)):
        return f"belongs to another step or stack (owner {_marker(found)})"
    return None


def _adopt(found: dict, desired: dict, stamped: dict, endpoint: str, owner: Owner, timeout: float) -> None:
    """Move the hand-made datasource ``found`` to the stack's uid with its definition (module docstring)."""
    uid, name, old_uid = desired["uid"], desired["name"], str(found.get("uid"))
    why = _refusal(found, desired, owner)
    if why:
        step.fail(f"a datasource named '{name}' already exists with uid '{old_uid}' and {why}; rename or delete it "
                  "in Grafana, or set the datasource name config to another name")
    url = f"{endpoint}/api/datasources/uid/{urllib.parse.quote(old_uid, safe='')}"
    try:
        step.retry(f"adopting datasource '{name}'", lambda: rest("put", url, stamped), timeout)
    except AzError as error:
        step.fail(f"adopting datasource '{name}' (uid {old_uid}) failed: {error.last_line}")
    changed = sorted(key for key, value in desired.items() if key != "uid" and not contains(found.get(key), value))
    step.log(f"adopted datasource '{name}': uid {old_uid} -> {uid}" + (f"; updated {', '.join(changed)}" if changed else "")
             + f" (anything that names uid {old_uid} must now name {uid})")


def _uid_of_name(endpoint: str, name: str, timeout: float) -> str:
    return str((_by_name(endpoint, name, timeout) or {}).get("uid", "?"))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("apply", "delete"):
        step.fail("usage: grafana_datasource.py apply|delete")
    sys.exit(main(sys.argv[1]))
