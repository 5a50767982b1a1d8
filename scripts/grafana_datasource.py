#!/usr/bin/env python3
"""Create, update or delete one Grafana datasource, idempotently, through Grafana's HTTP API.

Usage: python3 scripts/grafana_datasource.py apply|delete
Environment: GRAFANA_ENDPOINT (https URL of the workspace), DATASOURCE (JSON: uid, name, type, access, url,
jsonData), TIMEOUT_SECONDS (retries of 429/5xx); optional POLL_INITIAL_SECONDS, POLL_MAX_SECONDS,
PULUMI_COMMAND_STDOUT (this step's previous stdout, set by pulumi-command on updates and deletes).

apply: GET /api/datasources/uid/{uid}; missing -> POST /api/datasources; present and already holding every
field of DATASOURCE -> nothing written (on a create only if it also carries this step's owner id); otherwise
PUT /api/datasources/uid/{uid}. What is written carries jsonData.aksGpuObservabilityOwner = this step's owner
id (azcli.Owner). A datasource created by hand with the same uid is adopted. A different datasource with the
same name makes POST answer 409: the step then names its uid and stops. delete: DELETE
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


def _uid_of_name(endpoint: str, name: str, timeout: float) -> str:
    url = f"{endpoint}/api/datasources/name/{urllib.parse.quote(name, safe='')}"
    try:
        return str((step.retry(f"reading datasource '{name}'", lambda: rest("get", url), timeout) or {}).get("uid", "?"))
    except AzError:
        return "?"


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("apply", "delete"):
        step.fail("usage: grafana_datasource.py apply|delete")
    sys.exit(main(sys.argv[1]))
