#!/usr/bin/env python3
"""Upload (or delete) the GPU dashboard, verified against a pinned sha256 before anything is uploaded.

Usage: python3 -m steps.grafana_dashboard apply|delete
Environment: GRAFANA_ENDPOINT, DASHBOARD_SOURCE (an https URL or a project file), DASHBOARD_SHA256 (64 hex),
DASHBOARD_UID, DATASOURCES (JSON: variable name -> {"uid", "name"}, the variables' defaults), DATASOURCE_INPUTS (JSON:
plugin id -> this stack's datasource uid, for an export "for sharing"; ``{}`` when shared), TIMEOUT_SECONDS; optional
DASHBOARD_PROFILE_TYPE (config ``dashboardProfileType``), GRAFANA_ID and API_VERSION (checked before a delete),
POLL_INITIAL_SECONDS, POLL_MAX_SECONDS, PULUMI_COMMAND_STDOUT (set by pulumi-command on updates and deletes).
Owns: :func:`prepare` (import ``__inputs``, default the datasource variables, the Prometheus type this Grafana needs,
the GPU flame graphs' profile type), :func:`content_sha256`, the upload (nothing written when Grafana holds the same
content) and the delete (only this step's; already gone is success). Prints ``<uid> owner=<id>`` (apply) or the uid
(delete). Errors: one ``error:`` line, exit 1. Mirrors Grafana's dashboard HTTP API (grafana/grafana
``pkg/api/dashboard.go``; Grafana Admin role); the steps and the upstream rules:
docs/decisions/dashboard-preparation.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional

from steps import grafana_server
from steps.azcli import OWNER_KEY, AzError, Owner, Step, download, mask_url_secrets, rest, shown_url

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
            what = (f"{kind} {plugin}" if kind == "datasource" else f"{kind} without a value" if kind == "constant"
                    else str(kind))
            if kind == "datasource" and not by_plugin:
                why = ("a dashboard shared by several clusters (multiCluster) cannot be bound to one cluster's "
                       "datasources; "
                       "use an export with datasource variables instead of __inputs")
            else:
                why = (f"this stack maps only datasource inputs of type {', '.join(sorted(by_plugin)) or 'none'} (and "
                       "constants with a value); export the dashboard without 'Export for sharing externally', "
                       "or remove "
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


#: The Pyroscope datasource's plugin id, and the sample type and unit of the GPU memory Inspektor Gadget's profile_cuda
#: gadget sends (``malloc``, ``bytes``: any profile type ID ``<name>:malloc:bytes:<period type>:<period unit>``;
#: docs/offline.md G12, stack/profile_types.py ``PUBLISHED``).
PYROSCOPE = "grafana-pyroscope-datasource"
#: The plugin's id and its aliases: a datasource variable or reference naming any of them selects Pyroscope
#: (grafana/grafana ``public/app/plugins/datasource/grafana-pyroscope-datasource/plugin.json`` @ 0b596ec9
#: ``"aliasIDs": ["phlare"]``; ``packages/grafana-data/src/utils/matchPluginId.ts`` @ 01296eea, as
#: ``datasource_srv.ts`` ``getList`` filters a variable's options).
PYROSCOPE_IDS = frozenset({PYROSCOPE, "phlare"})
#: The datasource of expression queries, which run on Grafana's server whatever the panel's datasource is.
EXPRESSION = "__expr__"
GPU_MEMORY = ("malloc", "bytes")
#: The datasource of a panel whose queries each name their own (grafana/grafana
#: ``public/app/plugins/datasource/mixed/MixedDataSource.ts`` @ f5eef1f4 ``MIXED_DATASOURCE_NAME``).
MIXED = "-- Mixed --"
#: A string that is one variable reference as a whole: ``$var``, ``[[var]]``/``[[var:fmt]]``, ``${var}``/``${var:fmt}``
#: (grafana/grafana ``public/app/features/variables/utils.ts`` @ 4a0ad964 ``variableRegex``).
_VARIABLE = re.compile(r"\$(\w+)|\[\[([\s\S]+?)(?::\w+)?\]\]|\$\{(\w+)(?:\.[^:^}]+)?(?::[^}]+)?\}")


def _panels(panels) -> Iterator[dict]:
    """Each panel of ``panels`` and, depth first, the panels nested in it (a collapsed row keeps its own in
    ``panels``)."""
    for panel in panels or []:
        if isinstance(panel, dict):
            yield panel
            yield from _panels(panel.get("panels"))


def pyroscope_queries(dashboard: dict, uids: Iterable[str] = ()) -> list[dict]:
    """The queries (panel ``targets``, in rows' nested panels too) of ``dashboard`` that go to a Pyroscope datasource.

    Which datasource a query runs on is Grafana's rule when it runs the panel: in a panel that is not ``-- Mixed --``
    every query but an expression runs on the panel's datasource, whatever the query names (grafana/grafana
    ``public/app/features/query/state/PanelQueryRunner.ts`` @ 011e90db ``run``: ``if (!query.datasource ||
    (query.datasource.uid !== ds.uid && !isMixedDS && !isExpressionQuery)) query.datasource = ds.getRef()``;
    grafana/scenes ``packages/scenes/src/querying/SceneQueryRunner.ts`` @ ac1dec6d ``prepareRequests``, tested in
    ``SceneQueryRunner.test.ts``); in a ``-- Mixed --`` panel, and in a panel naming no datasource, each runs on its
    own. That datasource is Pyroscope when its reference has a type in :data:`PYROSCOPE_IDS`, or its uid (or, in an
    old dashboard, the whole reference string) is a variable reference (:data:`_VARIABLE`) to a datasource variable
    whose ``query`` is in :data:`PYROSCOPE_IDS` (the pinned dashboard's ``${pyroscope_ds}``), or one of ``uids``: the
    stack's Pyroscope datasource uid and name, which an imported ``__inputs`` reference has become.

    A library panel (``libraryPanel``) is left out: Grafana runs the library element's stored queries, not the copy
    inlined in the dashboard (``public/app/features/dashboard-scene/scene/LibraryPanelBehavior.tsx`` @ 0887ac78), and
    ``POST /api/dashboards/db`` does not write library elements."""
    variables = {variable.get("name") for variable in (dashboard.get("templating") or {}).get("list") or []
                 if variable.get("type") == "datasource" and variable.get("query") in PYROSCOPE_IDS}
    known = {uid for uid in uids if uid}

    def is_pyroscope(reference) -> bool:
        if isinstance(reference, dict):
            if reference.get("type") in PYROSCOPE_IDS:
                return True
            reference = reference.get("uid")
        if not isinstance(reference, str):
            return False
        found = _VARIABLE.fullmatch(reference)
        return next(name for name in found.groups() if name) in variables if found else reference in known

    def is_expression(reference) -> bool:
        return (reference.get("uid") if isinstance(reference, dict) else reference) == EXPRESSION or (
            isinstance(reference, dict) and reference.get("type") == EXPRESSION)

    queries = []
    for panel in _panels(dashboard.get("panels")):
        if panel.get("libraryPanel"):
            continue
        own = panel.get("datasource")
        mixed = (own.get("uid") if isinstance(own, dict) else own) == MIXED
        for target in panel.get("targets") or []:
            if not isinstance(target, dict):
                continue
            reference = target.get("datasource")
            if own is not None and not mixed and not is_expression(reference):
                reference = own
            if is_pyroscope(reference):
                queries.append(target)
    return queries


def asks_gpu_memory(query: dict) -> bool:
    """True when a Pyroscope query's ``profileTypeId`` (``name:sampleType:sampleUnit:periodType:periodUnit``;
    grafana/grafana ``public/app/plugins/datasource/grafana-pyroscope-datasource/dataquery.gen.ts`` @ 041993ff
    ``GrafanaPyroscopeDataQuery``) has the GPU memory's sample type and unit (:data:`GPU_MEMORY`)."""
    parts = str(query.get("profileTypeId") or "").split(":")
    return len(parts) == 5 and tuple(parts[1:3]) == GPU_MEMORY


def with_profile_type(dashboard: dict, profile_type: Optional[str], uids: Iterable[str] = ()) -> dict:
    """Set ``profileTypeId`` to ``profile_type`` (config ``dashboardProfileType``) in each Pyroscope query of
    ``dashboard`` (:func:`pyroscope_queries`) that asks for GPU memory (:func:`asks_gpu_memory`): the flame graphs read
    the ID Pyroscope holds the GPU memory under, which depends on the Inspektor Gadget version (docs/offline.md G12).
    Queries of other profile types are left as they are. Unchanged when ``profile_type`` is None (a definition from
    before the key: the step uploaded the source's own IDs then)."""
    if profile_type:
        for query in pyroscope_queries(dashboard, uids):
            if asks_gpu_memory(query):
                query["profileTypeId"] = profile_type
    return dashboard


def stack_pyroscope(dashboard: dict, datasources: dict, inputs: Optional[dict] = None) -> set:
    """The uids and names of the stack's Pyroscope datasource, for :func:`pyroscope_queries`: the uid ``__inputs`` of
    that plugin were imported with (``inputs``: plugin id -> uid), and the defaults (``datasources``: variable ->
    {"uid", "name"}) of the dashboard's Pyroscope datasource variables and of any variable defaulted to that uid."""
    uid = (inputs or {}).get(PYROSCOPE)
    variables = {variable.get("name") for variable in (dashboard.get("templating") or {}).get("list") or []
                 if variable.get("type") == "datasource" and variable.get("query") == PYROSCOPE}
    found = {uid}
    for variable, chosen in (datasources or {}).items():
        if isinstance(chosen, dict) and (variable in variables or (uid and chosen.get("uid") == uid)):
            found |= {chosen.get("uid"), chosen.get("name")}
    return {item for item in found if item}


def prepare(dashboard: dict, datasources: dict, prometheus_type: str = grafana_server.PROMETHEUS,
            profile_type: Optional[str] = None, inputs: Optional[dict] = None) -> dict:
    """The source JSON as the upload sends it, before this step's owner id is stamped on: the datasource
    variables defaulted (:func:`with_datasource_defaults`), those that select ``prometheus`` datasources pointed at
    ``prometheus_type`` (``grafana_server.dashboard_prometheus_type`` of the Grafana it goes to), its Pyroscope
    GPU-memory queries pointed at ``profile_type`` (:func:`with_profile_type`; ``inputs``: the ``__inputs`` mapping
    the dashboard was imported with, for :func:`stack_pyroscope`), and ``id`` null (Grafana assigns it).
    ``ops.verify --drift`` prepares the stack's dashboard with this same function."""
    dashboard = with_datasource_defaults(dashboard, datasources)
    dashboard = grafana_server.retarget_prometheus_variables(dashboard, prometheus_type)
    dashboard = with_profile_type(dashboard, profile_type, stack_pyroscope(dashboard, datasources, inputs))
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


#: Grafana 12's answer to the legacy read of a dashboard saved in its v2 schema: 406, naming where it is served
#: (grafana/grafana ``pkg/api/dashboard.go`` ``GetDashboard``; docs/decisions/dashboard-preparation.md).
_SERVED_AT = re.compile(r"use (/apis/dashboard\.grafana\.app/(v2\w*)/namespaces/[^/\s]+/dashboards/[^\s\"]+) instead")


@dataclass(frozen=True)
class Stored:
    """The dashboard Grafana holds under a uid. ``url``: where to read or delete it (the legacy
    ``/api/dashboards/uid/<uid>``, or the ``/apis/dashboard.grafana.app/<v2 version>/...`` Grafana 12 names for a v2
    one); ``schema``: ``""`` for the classic JSON, else the v2 version it is stored in (an edit with dynamic
    dashboards); ``dashboard``: the classic JSON (for v2: Grafana 13's lossy conversion, or the v2 ``spec``)."""

    url: str
    schema: str
    dashboard: dict


def stored(endpoint: str, uid: str, get: Callable[[str], Optional[dict]]) -> Optional[Stored]:
    """The dashboard ``uid`` as Grafana holds it, or None; ``get(url)``: the JSON, None on 404, AzError otherwise.
    Grafana 12 answers the legacy read of a v2 dashboard with 406 naming its ``/apis`` URL, which is read instead;
    Grafana 13 converts it and says ``meta.apiVersion``. The legacy delete takes either (no version check there)."""
    legacy = f"{endpoint}/api/dashboards/uid/{urllib.parse.quote(uid, safe='')}"
    try:
        found = get(legacy)
    except AzError as error:
        served = _SERVED_AT.search(error.stderr)
        if not served:
            raise
        obj = get(endpoint + served.group(1))
        return None if obj is None else Stored(endpoint + served.group(1), served.group(2), obj.get("spec") or {})
    if found is None:
        return None
    schema = str((found.get("meta") or {}).get("apiVersion") or "")
    return Stored(legacy, schema if schema.startswith("v2") else "", found.get("dashboard") or {})


def resource_form(dashboard: dict) -> str:
    """What marks ``dashboard`` as a Kubernetes-style resource (``apiVersion`` ``dashboard.grafana.app/...``, or
    ``kind`` and ``spec``: Grafana 12 and 13's "Export" of a dashboard saved in the v2 schema, or the resource form of a
    classic one), or ``""`` for the classic JSON model. ``POST /api/dashboards/db`` takes only the latter: Grafana 13
    answers the former with 400 "The k8s style dashboard must not include an id on the root element"
    (grafana/grafana-operator#2710; grafana/grafana#119689 made the message clearer), and a v2 ``spec`` has no
    ``panels`` the step could read. stack_config/rules.py refuses a project file in that form before anything runs."""
    version = str(dashboard.get("apiVersion") or "")
    if version.startswith("dashboard.grafana.app/") or {"kind", "spec"} <= dashboard.keys():
        return version or f"kind {dashboard.get('kind')}"
    return ""


#: What to do instead, in the step's and the configuration's refusal alike.
RESOURCE_FORM_WAY_OUT = ("export the classic JSON (Export > Export as JSON, classic model) and point dashboardSource "
                         "and dashboardSha256 at it")


def refuse_resource_form(dashboard: dict, source: str) -> None:
    """Stop with one line, nothing written, for a dashboard in the resource form (:func:`resource_form`)."""
    shown = resource_form(dashboard)
    if shown:
        step.fail(f"dashboard {source} is a Kubernetes-style resource ({shown}), not Grafana's classic dashboard JSON "
                  f"model; {RESOURCE_FORM_WAY_OUT}; nothing uploaded")


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
              f"(uid {taken.get('uid')}) in the General folder, and before Grafana 11.3 titles are unique per folder, "
              "so "
              f"uploading would overwrite it; rename or delete that dashboard in Grafana, or adopt it by setting "
              f"dashboardUid to {taken.get('uid')} (with a dashboard source whose uid is {taken.get('uid')}), then run "
              "`pulumi up` again; nothing uploaded")


def main(action: str) -> int:
    endpoint = step.env("GRAFANA_ENDPOINT").rstrip("/")
    uid = step.env("DASHBOARD_UID")
    timeout = float(step.env("TIMEOUT_SECONDS"))
    owner = Owner()

    def get(url: str) -> Optional[dict]:
        return step.retry(f"reading dashboard {uid}", lambda: rest("get", url), timeout)

    def read() -> Optional[Stored]:
        try:
            return stored(endpoint, uid, get)
        except AzError as error:
            if error.kind == "not_found":
                return None
            step.fail(f"reading dashboard {uid} failed: {error.last_line}")

    if action == "delete":
        found = None if step.grafana_gone(timeout) else read()
        if found is None:
            step.log(f"dashboard {uid} already gone")
        elif owner.held_by_another(found.dashboard.get(OWNER_KEY)):
            step.log(f"dashboard {uid} now belongs to another step (owner {found.dashboard.get(OWNER_KEY)}, a "
                     "replacement created before this delete); left in place")
        else:
            step.delete(f"dashboard {uid}", found.url, timeout)
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
    if not isinstance(dashboard, dict):
        step.fail(f"dashboard {source} is not a JSON object: expected Grafana's dashboard JSON model; nothing uploaded")
    refuse_resource_form(dashboard, source)
    inputs = json.loads(os.environ.get("DATASOURCE_INPUTS") or "{}")
    dashboard = import_inputs(dashboard, inputs, source)
    if dashboard.get("uid") != uid:
        step.fail(f"dashboard {source} has uid {dashboard.get('uid')!r}, expected {uid!r}; nothing uploaded")
    server = grafana_server.probe(step, endpoint, timeout)
    prometheus_type = grafana_server.PROMETHEUS
    if selects_prometheus(dashboard):
        prometheus_type = grafana_server.dashboard_prometheus_type(server)
        if prometheus_type != grafana_server.PROMETHEUS:
            step.log(f"dashboard {uid}: its datasource variables that select prometheus select {prometheus_type} here")
    datasources = json.loads(os.environ.get("DATASOURCES") or "{}")
    profile_type = os.environ.get("DASHBOARD_PROFILE_TYPE") or None
    if profile_type:
        asking = [query for query in pyroscope_queries(dashboard, stack_pyroscope(dashboard, datasources, inputs))
                  if asks_gpu_memory(query)]
        moved = sorted({query.get("profileTypeId") for query in asking} - {profile_type})
        if moved:
            step.log(f"dashboard {uid}: profile type of its Pyroscope GPU-memory queries ({len(asking)}) set to "
                     f"{profile_type} (dashboardProfileType), was {', '.join(moved)}")
    dashboard = prepare(dashboard, datasources, prometheus_type, profile_type, inputs)
    dashboard[OWNER_KEY] = owner.id

    existing = read()
    if existing is not None and existing.schema:
        # Saved from Grafana's editor with dynamic dashboards: drift, replaced by the pinned classic JSON. Deleted
        # first where it is served: a legacy save over a v2 dashboard is not defined across Grafana versions.
        step.log(f"dashboard {uid} is stored in Grafana's {existing.schema} schema (saved from its editor with dynamic "
                 "dashboards); replacing it with the pinned dashboard")
        step.delete(f"dashboard {uid} ({existing.schema})", existing.url, timeout)
        existing = None
    current = existing.dashboard if existing else {}
    if existing and comparable(current) == comparable(dashboard) and (
            not owner.claim or current.get(OWNER_KEY) == owner.id):
        step.log(f"dashboard {uid} is up to date; nothing written")
    else:
        refuse_title_taken(server, endpoint, dashboard, timeout)
        body = {"dashboard": dashboard, "overwrite": True, "message": f"aks-gpu-observability: sha256 {actual[:12]}"}
        try:
            step.retry(f"uploading dashboard {uid}", lambda: rest("post", f"{endpoint}/api/dashboards/db", body),
                       timeout)
        except AzError as error:
            step.fail(f"uploading dashboard {uid} failed: {error.last_line}")
        step.log(f"uploaded dashboard {uid} (sha256 {actual})")
    print(owner.line(uid))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("apply", "delete"):
        step.fail("usage: grafana_dashboard.py apply|delete")
    sys.exit(main(sys.argv[1]))
