#!/usr/bin/env python3
"""Upload (or delete) the GPU dashboard, verified against a pinned sha256 before anything is uploaded.

Usage: python3 scripts/grafana_dashboard.py apply|delete
Environment: GRAFANA_ENDPOINT, DASHBOARD_SOURCE (an https URL, fetched with `az rest
--skip-authorization-header --output-file` so the bytes are hashed as served, or a file path relative to
the project directory), DASHBOARD_SHA256 (64 hex), DASHBOARD_UID, DATASOURCES (JSON: dashboard variable name
-> {"uid", "name"}, the datasources its variables default to), TIMEOUT_SECONDS; optional
POLL_INITIAL_SECONDS, POLL_MAX_SECONDS, PULUMI_COMMAND_STDOUT (this step's previous stdout, set by
pulumi-command on updates and deletes).

apply: fetch, verify sha256 (mismatch: one-line error, nothing uploaded), check the JSON's uid is
DASHBOARD_UID, point the datasource variables' defaults at DATASOURCES, stamp it with this step's owner id
(top-level aksGpuObservabilityOwner, azcli.Owner), then GET /api/dashboards/uid/{uid}: same content (ignoring id,
version and the owner id; on a create only if it also carries this step's owner id) -> nothing written; else
POST /api/dashboards/db with overwrite true (without it a re-upload answers 412). delete: DELETE
/api/dashboards/uid/{uid} unless the dashboard carries another step's owner id; already gone is success.
Prints ``<uid> owner=<id>`` (apply) or the uid (delete). Mirrors Grafana's dashboard HTTP API (Azure Managed
Grafana, Grafana Admin role).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile

from azcli import OWNER_KEY, AzError, Owner, Step, download, rest

step = Step("grafana-dashboard")
VOLATILE = ("id", "version", OWNER_KEY)


def fetch(source: str, timeout: float) -> bytes:
    if source.startswith("https://"):
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            try:
                step.retry(f"downloading {source}", lambda: download(source, path), timeout)
            except AzError as error:
                step.fail(f"downloading the dashboard from {source} failed: {error.last_line}")
            with open(path, "rb") as fh:
                return fh.read()
        finally:
            os.unlink(path)
    try:
        with open(source, "rb") as fh:
            return fh.read()
    except OSError as error:
        step.fail(f"cannot read dashboard file {source}: {error.strerror}")


def with_datasource_defaults(dashboard: dict, datasources: dict) -> dict:
    """Set ``current`` of each datasource variable named in ``datasources`` to that datasource."""
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        chosen = datasources.get(variable.get("name"))
        if variable.get("type") == "datasource" and chosen:
            variable["current"] = {"selected": True, "text": chosen["name"], "value": chosen["uid"]}
    return dashboard


def prepare(dashboard: dict, datasources: dict) -> dict:
    """The source JSON as the upload sends it, before this step's owner id is stamped on: the datasource
    variables defaulted (:func:`with_datasource_defaults`) and ``id`` null (Grafana assigns it).
    ``tools.verify --drift`` prepares the stack's dashboard with this same function."""
    dashboard = with_datasource_defaults(dashboard, datasources)
    dashboard["id"] = None
    return dashboard


def comparable(dashboard: dict) -> dict:
    """The dashboard without what Grafana or the step add: ``id``, ``version`` and the owner id (VOLATILE)."""
    return {key: value for key, value in dashboard.items() if key not in VOLATILE}


def content_sha256(dashboard: dict) -> str:
    """sha256 (64 hex) of :func:`comparable` as sorted, compact JSON: equal for two dashboards exactly when the
    step would find one up to date against the other (ignoring owner ids)."""
    return hashlib.sha256(json.dumps(comparable(dashboard), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def main(action: str) -> int:
    endpoint = step.env("GRAFANA_ENDPOINT").rstrip("/")
    uid = step.env("DASHBOARD_UID")
    timeout = float(step.env("TIMEOUT_SECONDS"))
    by_uid = f"{endpoint}/api/dashboards/uid/{uid}"
    owner = Owner()

    if action == "delete":
        step.delete_owned(f"dashboard {uid}", by_uid, timeout, lambda found: (found.get("dashboard") or {}).get(OWNER_KEY), owner)
        print(uid)
        return 0

    source, expected = step.env("DASHBOARD_SOURCE"), step.env("DASHBOARD_SHA256").lower()
    raw = fetch(source, timeout)
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected:
        step.fail(f"dashboard {source} has sha256 {actual}, expected {expected}; nothing uploaded")
    try:
        dashboard = json.loads(raw)
    except ValueError as error:
        step.fail(f"dashboard {source} is not JSON: {error}")
    if dashboard.get("uid") != uid:
        step.fail(f"dashboard {source} has uid {dashboard.get('uid')!r}, expected {uid!r}; nothing uploaded")
    dashboard = prepare(dashboard, json.loads(os.environ.get("DATASOURCES") or "{}"))
    dashboard[OWNER_KEY] = owner.id

    existing = step.read(f"dashboard {uid}", by_uid, timeout)
    current = (existing or {}).get("dashboard") or {}
    if existing and comparable(current) == comparable(dashboard) and (not owner.claim or current.get(OWNER_KEY) == owner.id):
        step.log(f"dashboard {uid} is up to date; nothing written")
    else:
        body = {"dashboard": dashboard, "overwrite": True, "message": f"aks-gpu-observability: sha256 {actual[:12]}"}
        try:
            step.retry(f"uploading dashboard {uid}", lambda: rest("post", f"{endpoint}/api/dashboards/db", body), timeout)
        except AzError as error:
            step.fail(f"uploading dashboard {uid} failed: {error.last_line}")
        step.log(f"uploaded dashboard {uid} (sha256 {actual})")
    print(owner.line(uid))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("apply", "delete"):
        step.fail("usage: grafana_dashboard.py apply|delete")
    sys.exit(main(sys.argv[1]))
