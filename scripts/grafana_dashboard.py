#!/usr/bin/env python3
"""Upload (or delete) the GPU dashboard, verified against a pinned sha256 before anything is uploaded.

Usage: python3 scripts/grafana_dashboard.py apply|delete
Environment: GRAFANA_ENDPOINT, DASHBOARD_SOURCE (an https URL, fetched with `az rest
--skip-authorization-header --output-file` so the bytes are hashed as served, or a file path relative to
the project directory), DASHBOARD_SHA256 (64 hex), DASHBOARD_UID, DATASOURCES (JSON: dashboard variable name
-> {"uid", "name"}, the datasources its variables default to), DATASOURCE_INPUTS (JSON: datasource plugin id ->
this stack's datasource uid, for a dashboard exported "for sharing"; ``{}`` for a dashboard shared by several
clusters), TIMEOUT_SECONDS; optional GRAFANA_ID and API_VERSION (the workspace's ARM id, checked before a delete),
POLL_INITIAL_SECONDS, POLL_MAX_SECONDS, PULUMI_COMMAND_STDOUT (this step's previous stdout, set by pulumi-command
on updates and deletes).

apply: fetch, verify sha256 (mismatch: one-line error, nothing uploaded), import its ``__inputs`` as Grafana's
import does (:func:`import_inputs`; an input this stack cannot supply: one-line error), check the JSON's uid is
DASHBOARD_UID, point the datasource variables' defaults at DATASOURCES and, when a datasource variable selects
``prometheus`` datasources, at the Prometheus type this Grafana's Azure-auth datasources have (scripts/grafana_server.py:
``grafana-azureprometheus-datasource`` from Grafana 13.0 on, read with GET /api/health and GET /api/plugins; a
datasource variable offers only datasources of its plugin id), stamp it with this step's owner id
(top-level aksGpuObservabilityOwner, azcli.Owner), then GET /api/dashboards/uid/{uid}: same content (ignoring id,
version and the owner id; on a create only if it also carries this step's owner id) -> nothing written; else, before
Grafana 11.3, another dashboard with the same title in the General folder -> one-line error naming it, nothing
written (:func:`title_taken`); else POST /api/dashboards/db with overwrite true (without it a re-upload answers 412). delete: DELETE
/api/dashboards/uid/{uid} unless the dashboard carries another step's owner id; already gone, or a Grafana workspace
that no longer exists (ARM 404 for GRAFANA_ID), is success.
Prints ``<uid> owner=<id>`` (apply) or the uid (delete). Mirrors Grafana's dashboard HTTP API (Azure Managed
Grafana, Grafana Admin role).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import urllib.parse
from typing import Optional

import grafana_server
from azcli import OWNER_KEY, AzError, Owner, Step, download, mask_url_secrets, rest, shown_url

step = Step("grafana-dashboard")
VOLATILE = ("id", "version", OWNER_KEY)
#: The first Grafana without per-folder unique dashboard titles (grafana/grafana PR 90687).
TITLES_FREE = (11, 3)


def fetch(source: str, timeout: float) -> bytes:
    if source.startswith("https://"):
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            try:
                step.retry(f"downloading {shown_url(source)}", lambda: download(source, path), timeout)
            except AzError as error:
                step.fail(f"downloading the dashboard from {shown_url(source)} failed: {error.last_line}")
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


#: Grafana's pattern for an input reference in a string (``varRegex``), and the plugin id of server-side expressions,
#: whose input Grafana always sets to ``__expr__`` (``expr.DatasourceType``).
_REFERENCE = re.compile(r"\$\{.+?\}")
EXPRESSIONS = "__expr__"


def import_inputs(dashboard: dict, by_plugin: dict, source: str) -> dict:
    """``dashboard`` as Grafana's dashboard import saves it, for an export made "for sharing externally" (a top-level
    ``__inputs`` list, and ``${DS_...}`` references where datasource uids were). Unchanged without ``__inputs``.

    As grafana/grafana ``pkg/services/dashboardimport/utils/dash_template_evaluator.go`` (@ 0425369c) ``Eval``: every
    ``__inputs`` entry needs a value, an input whose ``pluginId`` is ``__expr__`` always gets ``__expr__``, every
    ``${<input name>}`` in every string (at any depth) is replaced by its value (other ``${...}``, such as dashboard
    variables, stay), and ``__inputs`` is dropped at every level. The values are what the import form would be given
    (``ImportDashboardInput``, ``pkg/services/dashboardimport/dashboardimport.go``): for a ``datasource`` input, this
    stack's datasource of that plugin type (``by_plugin``: plugin id -> uid, e.g. ``prometheus`` and
    ``grafana-pyroscope-datasource``); for a ``constant`` input, the value the export carries. Any other input, or a
    datasource type the stack has none of, stops the step with one line naming the input (nothing is uploaded)."""
    inputs = dashboard.get("__inputs")
    if not inputs:
        return dashboard
    values = {}
    for item in inputs:
        name, kind, plugin = item.get("name"), item.get("type"), item.get("pluginId")
        value = EXPRESSIONS if plugin == EXPRESSIONS else by_plugin.get(plugin) if kind == "datasource" else (
            item.get("value") if kind == "constant" else None)
        if value is None:
            what = f"{kind} {plugin}" if kind == "datasource" else f"{kind} without a value" if kind == "constant" else str(kind)
            if kind == "datasource" and not by_plugin:
                why = ("a dashboard shared by several clusters (multiCluster) cannot be bound to one cluster's datasources; "
                       "use an export with datasource variables instead of __inputs")
            else:
                why = (f"this stack maps only datasource inputs of type {', '.join(sorted(by_plugin)) or 'none'} (and "
                       "constants with a value); export the dashboard without 'Export for sharing externally', or remove "
                       "that input")
            step.fail(f"dashboard {source} has input {name} ({what}) that nothing maps: {why}; nothing uploaded")
        values["${" + str(name) + "}"] = str(value)

    def evaluate(value):
        if isinstance(value, str):
            return _REFERENCE.sub(lambda found: values.get(found.group(0), found.group(0)), value)
        if isinstance(value, dict):
            return {key: evaluate(item) for key, item in value.items() if key != "__inputs"}
        if isinstance(value, list):
            return [evaluate(item) for item in value]
        return value

    imported = evaluate(dashboard)
    step.log(f"imported {len(values)} input(s) of {source}: " + ", ".join(
        f"{name[2:-1]} -> {value}" for name, value in sorted(values.items())))
    return imported


def prepare(dashboard: dict, datasources: dict, prometheus_type: str = grafana_server.PROMETHEUS) -> dict:
    """The source JSON as the upload sends it, before this step's owner id is stamped on: the datasource
    variables defaulted (:func:`with_datasource_defaults`), those that select ``prometheus`` datasources pointed at
    ``prometheus_type`` (``grafana_server.dashboard_prometheus_type`` of the Grafana it goes to), and ``id`` null
    (Grafana assigns it). ``tools.verify --drift`` prepares the stack's dashboard with this same function."""
    dashboard = with_datasource_defaults(dashboard, datasources)
    dashboard = grafana_server.retarget_prometheus_variables(dashboard, prometheus_type)
    dashboard["id"] = None
    return dashboard


def selects_prometheus(dashboard: dict) -> bool:
    """True when a datasource variable of ``dashboard`` selects ``prometheus`` datasources (then the Grafana's version
    decides what it must select)."""
    return any(variable.get("type") == "datasource" and variable.get("query") == grafana_server.PROMETHEUS
               for variable in (dashboard.get("templating") or {}).get("list") or [])


def comparable(dashboard: dict) -> dict:
    """The dashboard without what Grafana or the step add: ``id``, ``version`` and the owner id (VOLATILE)."""
    return {key: value for key, value in dashboard.items() if key not in VOLATILE}


def content_sha256(dashboard: dict) -> str:
    """sha256 (64 hex) of :func:`comparable` as sorted, compact JSON: equal for two dashboards exactly when the
    step would find one up to date against the other (ignoring owner ids)."""
    return hashlib.sha256(json.dumps(comparable(dashboard), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def title_taken(server: grafana_server.Server, endpoint: str, dashboard: dict, timeout: float) -> Optional[dict]:
    """Before Grafana 11.3 a dashboard's title is unique per folder: a save with ``overwrite: true`` whose title is
    another dashboard's in the same folder takes that dashboard over (its id, uid and version), so the upload would
    overwrite it (grafana/grafana ``pkg/services/dashboards/database/database.go``
    ``getExistingDashboardByTitleAndFolder``, removed by PR 90687 in 11.3). The search hit (``GET /api/search?query=
    <title>&type=dash-db``, ``pkg/api/search.go``: hits with ``uid``, ``title``, ``type`` and ``folderUid`` only for a
    dashboard in a folder) of another dashboard in the General folder (where the upload goes) with this title
    (compared case-insensitively), or None; not looked for from 11.3 on, and looked for when the version is hidden."""
    if server.release is not None and server.release >= TITLES_FREE:
        return None
    title = dashboard.get("title") or ""
    url = f"{endpoint}/api/search?" + urllib.parse.urlencode({"query": title, "type": "dash-db"})
    try:
        hits = step.retry(f"searching dashboards titled {title!r}", lambda: rest("get", url), timeout) or []
    except AzError as error:
        step.fail(f"searching dashboards titled {title!r} failed: {error.last_line}")
    return next((hit for hit in hits if isinstance(hit, dict) and hit.get("type", "dash-db") == "dash-db"
                 and not hit.get("folderUid") and hit.get("uid") != dashboard.get("uid")
                 and (hit.get("title") or "").strip().lower() == title.strip().lower()), None)


def refuse_title_taken(server: grafana_server.Server, endpoint: str, dashboard: dict, timeout: float) -> None:
    """Stop with one line, nothing written, when :func:`title_taken` finds another dashboard."""
    taken = title_taken(server, endpoint, dashboard, timeout)
    if taken is None:
        return
    step.fail(f"dashboard {dashboard.get('uid')}: {server.describe()} already has dashboard {taken.get('title')!r} "
              f"(uid {taken.get('uid')}) in the General folder, and before Grafana 11.3 titles are unique per folder, so "
              f"uploading would overwrite it; rename or delete that dashboard in Grafana, or adopt it by setting "
              f"dashboardUid to {taken.get('uid')} (with a dashboard source whose uid is {taken.get('uid')}), then run "
              "`pulumi up` again; nothing uploaded")


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
    # A URL is logged only as scheme://host/path (a SAS URL's query string is its credential), and what it carries
    # beyond that is masked wherever an error line quotes it.
    mask_url_secrets(source)
    raw = fetch(source, timeout)
    source = shown_url(source)
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected:
        step.fail(f"dashboard {source} has sha256 {actual}, expected {expected}; nothing uploaded")
    try:
        dashboard = json.loads(raw)
    except ValueError as error:
        step.fail(f"dashboard {source} is not JSON: {error}")
    dashboard = import_inputs(dashboard, json.loads(os.environ.get("DATASOURCE_INPUTS") or "{}"), source)
    if dashboard.get("uid") != uid:
        step.fail(f"dashboard {source} has uid {dashboard.get('uid')!r}, expected {uid!r}; nothing uploaded")
    server = grafana_server.probe(step, endpoint, timeout)
    prometheus_type = grafana_server.PROMETHEUS
    if selects_prometheus(dashboard):
        prometheus_type = grafana_server.dashboard_prometheus_type(server)
        if prometheus_type != grafana_server.PROMETHEUS:
            step.log(f"dashboard {uid}: its datasource variables that select prometheus select {prometheus_type} here")
    dashboard = prepare(dashboard, json.loads(os.environ.get("DATASOURCES") or "{}"), prometheus_type)
    dashboard[OWNER_KEY] = owner.id

    existing = step.read(f"dashboard {uid}", by_uid, timeout)
    current = (existing or {}).get("dashboard") or {}
    if existing and comparable(current) == comparable(dashboard) and (not owner.claim or current.get(OWNER_KEY) == owner.id):
        step.log(f"dashboard {uid} is up to date; nothing written")
    else:
        refuse_title_taken(server, endpoint, dashboard, timeout)
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
