"""Pulumi's bulk import file for a setup made by hand: ``python -m offline.plan --import-file FILE`` (docs/adopting.md).

Owns: :func:`import_file` (the ``pulumi import --file`` document for namespace ``gadget``, the extension, the Helm
release, Grafana's managed private endpoint and the role assignment, with their import ids and component parents),
:func:`serialize`, :func:`render`, :func:`real_lookups` (the real subscription and Grafana principal id in place of
the canned ones). Input: a :class:`~offline.program.Plan` and the names to ``--skip``. Output: the file's JSON and a
summary. Errors: ``ValueError`` naming the flag (an unknown ``--skip`` name, a bad GUID). Research (file format,
import ids): docs/decisions/offline-adopt.md. Upstream:
https://github.com/pulumi/pulumi/blob/v3.230.0/pkg/cmd/pulumi/operations/import.go
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, Mapping, Optional, Sequence

from offline import canned
from offline.program import Plan, Resource
from stack.specs import NAMESPACE, STACK_ANNOTATION

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
EXTENSION = "azure-native:kubernetesconfiguration:Extension"
RELEASE = "kubernetes:helm.sh/v3:Release"
MPE = "azure-native:dashboard:ManagedPrivateEndpoint"
ROLE = "azure-native:authorization:RoleAssignment"
#: The types made by hand that ``pulumi import`` brings into the state (the rest is created or adopted by the steps).
#: The namespace too: pulumi-kubernetes 4.29.0+ creates no object that exists (provider/pkg/await/await.go, without
#: ``upsertExistingObjects``, which the stack's provider ``aks`` leaves off).
ADOPTED = (NAMESPACE_TYPE, EXTENSION, RELEASE, MPE, ROLE)
#: ``importSpec``'s and ``importFile``'s JSON keys (pulumi v3.230.0 import.go struct tags).
SPEC_KEYS = ("type", "name", "id", "parent", "provider", "version", "pluginDownloadUrl", "properties", "component",
             "remote", "logicalName")
FILE_KEYS = ("nameTable", "resources")
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def import_id(resource: Resource, subscription_id: str) -> str:
    """The id ``pulumi import`` takes for ``resource`` (one of :data:`ADOPTED`), from its inputs (module docstring);
    ValueError for another type."""
    i = resource.inputs
    if resource.type == NAMESPACE_TYPE:
        return i["metadata"]["name"]  # cluster-scoped: the name alone
    if resource.type == EXTENSION:
        return (f"/subscriptions/{subscription_id}/resourceGroups/{i['resourceGroupName']}/providers/{i['clusterRp']}"
                f"/{i['clusterResourceName']}/{i['clusterName']}"
                f"/providers/Microsoft.KubernetesConfiguration/extensions/{i['extensionName']}")
    if resource.type == RELEASE:
        return f"{i['namespace']}/{i['name']}"
    if resource.type == MPE:
        return (f"/subscriptions/{subscription_id}/resourceGroups/{i['resourceGroupName']}"
                f"/providers/Microsoft.Dashboard/grafana/{i['workspaceName']}"
                f"/managedPrivateEndpoints/{i['managedPrivateEndpointName']}")
    if resource.type == ROLE:
        return f"{i['scope']}/providers/Microsoft.Authorization/roleAssignments/{i['roleAssignmentName']}"
    raise ValueError(f"{resource.type} is not imported by this stack")


def subscription_of(plan: Plan) -> str:
    """The subscription the plan's lookups answered with (from the ``clusterId`` output)."""
    found = re.match(r"/subscriptions/([^/]+)/", str(plan.outputs.get("clusterId", "")))
    if not found:
        raise ValueError("the plan has no clusterId output to take the subscription from")
    return found.group(1)


def import_file(plan: Plan, skip: Sequence[str] = ()) -> dict:
    """The bulk import file (``{"nameTable": {...}, "resources": [...]}``) for the plan's :data:`ADOPTED` resources
    in that order, each preceded by its component parents; ``skip``: resource names to leave out (``pulumi up``
    then creates them). ValueError (one line) for a ``skip`` name that is not one of them, or when nothing is left."""
    by_urn = {r.urn: r for r in plan.resources}
    adopted = sorted((r for r in plan.resources if r.type in ADOPTED and r.custom), key=lambda r: ADOPTED.index(r.type))
    unknown = sorted(set(skip) - {r.name for r in adopted})
    if unknown:
        names = ", ".join(r.name for r in adopted)
        raise ValueError(f"--skip: {unknown[0]!r} is not imported by this stack (one of: {names})")
    subscription = subscription_of(plan)
    entries: list[dict] = []
    name_table: dict[str, str] = {}
    listed: set[str] = set()

    def add_parents(urn: Optional[str]) -> Optional[str]:
        parent = by_urn.get(urn or "")
        if parent is None or parent.type == "pulumi:pulumi:Stack":
            return None
        if parent.urn not in listed:
            grand = add_parents(parent.parent)
            entries.append({"type": parent.type, "name": parent.name, "component": True,
                            **({"parent": grand} if grand else {})})
            listed.add(parent.urn)
        return parent.name

    for resource in adopted:
        if resource.name in skip:
            continue
        entry: dict[str, Any] = {"type": resource.type, "name": resource.name, "id": import_id(resource, subscription)}
        parent = add_parents(resource.parent)
        if parent:
            entry["parent"] = parent
        provider = by_urn.get(resource.provider or "")
        if provider is not None and _is_default(provider):
            version = provider.inputs.get("version")
            if version:
                entry["version"] = version
        elif provider is not None:  # the stack's explicit provider, which must be in the state (module docstring)
            name_table[provider.name] = provider.urn
            entry["provider"] = provider.name
        entries.append(entry)
        listed.add(resource.urn)
    if not any("id" in entry for entry in entries):
        raise ValueError("--skip: nothing is left to import")
    return {"nameTable": name_table, "resources": entries}


def _is_default(provider: Resource) -> bool:
    """A default provider: a provider whose name starts with ``default`` (pulumi v3.230.0
    ``sdk/go/common/providers/reference.go`` ``IsDefaultProvider``)."""
    return provider.type.startswith("pulumi:providers:") and provider.name.startswith("default")


def serialize(document: Mapping) -> str:
    """The file as the CLI writes one (``writeImportFile``: Go's encoding/json, indent of four spaces, no HTML
    escaping, a newline at the end): keys in the structs' field order, map keys sorted, empty values left out
    (``omitempty``; ``type`` and ``name`` always)."""
    def spec(entry: Mapping) -> dict:
        return {key: entry[key] for key in SPEC_KEYS if key in ("type", "name") or entry.get(key)}

    body: dict = {}
    if document.get("nameTable"):
        body["nameTable"] = dict(sorted(document["nameTable"].items()))
    if document.get("resources"):
        body["resources"] = [spec(entry) for entry in document["resources"]]
    return json.dumps(body, indent=4, ensure_ascii=False) + "\n"


def import_command(path: str) -> str:
    """The ``pulumi import`` to run with the file at ``path``, as docs/adopting.md gives it: unprotected (the program
    declares no ``protect``) and without generated code (the program already declares the resources; ``--generate-code``
    defaults to true and prints a Python declaration of each). Flags of pulumi/pulumi v3.230.0
    ``pkg/cmd/pulumi/operations/import.go``: ``--file``, ``--protect``, ``--generate-code`` (booleans, so
    ``=false``)."""
    return f"pulumi import --file {path} --protect=false --generate-code=false"


def provider_targets(plan: Plan, urn: str) -> list[str]:
    """The ``--target`` URNs that put explicit provider ``urn`` into the state: its component parents (a targeted
    resource whose parent is not created is refused), outermost first, then the provider."""
    by_urn = {r.urn: r for r in plan.resources}
    chain = [urn]
    parent = by_urn[urn].parent if urn in by_urn else None
    while parent and parent in by_urn and by_urn[parent].type != "pulumi:pulumi:Stack":
        chain.insert(0, parent)
        parent = by_urn[parent].parent
    return chain


def render(document: Mapping, path: str, mark: str, plan: Optional[Plan] = None) -> str:
    """What ``offline.plan --import-file`` prints: each imported resource and its id, then the commands to run
    (``mark``: the stack's owner mark, stack.specs.stack_mark, for namespace gadget; ``plan``: where the providers'
    component parents are read)."""
    lines = [f"Wrote {path}: Pulumi's bulk import file (pulumi import --file), ids built from "
             "this plan's config and lookups:"]
    width = max(len(e["name"]) for e in document["resources"])
    for entry in document["resources"]:
        if "id" in entry:
            lines.append(f"    {entry['name']:<{width}}  {entry['id']}")
    lines.append("")
    lines.append(f"Mark namespace {NAMESPACE} as this stack's first: kubectl annotate namespace {NAMESPACE} "
                 f"{STACK_ANNOTATION}={mark}")
    for name, urn in sorted(document["nameTable"].items()):
        targets = " ".join(f"--target '{u}'" for u in (provider_targets(plan, urn) if plan else [urn]))
        lines.append(f"The explicit provider {name} must be in the stack's state first: pulumi up {targets}")
    lines += [f"Then: {import_command(path)}, then steps 7 and 8 of docs/adopting.md (the Prometheus datasource's "
              "uid, and pulumi up --replace of pyroscope-release)."]
    return "\n".join(lines)


def real_lookups(subscription_id: str = "", grafana_principal_id: str = "") -> dict:
    """Invoke handlers (for ``offline.program.run``'s ``invoke_overrides``) that answer with the canned lookups but
    the given subscription (every ARM id) and Grafana principal id (the role assignment's derived name), so that an
    import file names the real resources. Empty: that fact stays canned. ValueError (one line) for a value that is
    not a GUID."""
    for option, value in (("--subscription-id", subscription_id), ("--grafana-principal-id", grafana_principal_id)):
        if value and not _GUID.fullmatch(value):
            raise ValueError(f"{option}: expected a GUID (got {value!r})")
    overrides: dict = {}
    for token, handler in canned.INVOKES.items():
        def answer(args, location, handler=handler, token=token):
            result = _replace(copy.deepcopy(handler(args, location)), canned.SUBSCRIPTION_ID, subscription_id)
            if grafana_principal_id and token == "azure-native:dashboard:getGrafana":
                result["identity"]["principalId"] = grafana_principal_id
            return result
        overrides[token] = answer
    return overrides if (subscription_id or grafana_principal_id) else {}


def _replace(value: Any, old: str, new: str) -> Any:
    if not new:
        return value
    if isinstance(value, dict):
        return {key: _replace(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, old, new) for item in value]
    return value.replace(old, new) if isinstance(value, str) else value
