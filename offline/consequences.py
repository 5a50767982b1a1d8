"""What a day-two change costs, said in the offline diff: the warnings a reviewer must read, and the changes the
cluster will refuse.

Input: the diff's steps (anything with ``name``, ``op``, ``type`` and ``diffs``: offline/diff.py ``Step``) and the base
and head plans (plan JSON). Output: :func:`warnings` (one line each, naming the resource and the loss) and
:func:`refusals` (one line each; the diff reports them as errors, exit 2). The costs themselves:
docs/day-two.md (generated), docs/sizing.md; the reasons: docs/decisions/pyroscope-chart.md and
docs/decisions/private-link.md.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from stack.specs import pyroscope_major
from stack_config.rules import quantity_value

CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
SERVICE = "kubernetes:core/v1:Service"
PLS_CREATE = "service.beta.kubernetes.io/azure-pls-create"

#: removed resource name -> what its removal does that a reviewer must know (said as a warning)
REMOVALS = {
    "grafana-datasources-monitoring-data-reader": (
        "deleting it removes Grafana's Monitoring Data Reader role on the workspace{also}: the Prometheus datasource "
        "(and every stack's on this Grafana) loses access; with multiCluster, set assignMonitoringDataReader=true in "
        "one stack and run `pulumi state delete` on this resource before `pulumi up` (docs/platform.md, "
        "\"Many clusters, one Grafana\")"),
}

#: What a change of pyroscopeMode does (components/pyroscope.py), keyed by "to microservices".
MODE_SWITCH = {
    True: ("pyroscope-release: pyroscopeMode changes to microservices, so the release is reinstalled delete-first: the "
           "single binary's StatefulSet and Service pyroscope go, the chart's components come up on the blob "
           "container, the stack's Service pyroscope (the distributors) takes the exporter's address, and the private "
           "link Service selects the query frontends (its PLS and Grafana's endpoint stay); claim data-pyroscope-0 is "
           "deleted with its disk and the profiles on it, which are not moved to the container (docs/sizing.md, "
           "\"Microservices mode\")"),
    False: ("pyroscope-release: pyroscopeMode goes back to single-binary, so the release is reinstalled delete-first "
            "(the stack's Service pyroscope deleted before it) and the single binary starts from a new volume: every "
            "profile in the blob container is left behind, the ingesters' claims are deleted, and a storage account "
            "the stack created is deleted with its container and all the profiles in it (a brought account is kept); "
            "export what you need first (docs/sizing.md, \"Microservices mode\")"),
}

PERSISTENCE_ON = ("pyroscope-release: persistence turns on, so Helm cannot upgrade the StatefulSet (a claim template "
                  "appears) and the release is reinstalled; the profiles held in its emptyDir are lost; the private "
                  "link stays (docs/sizing.md)")
PERSISTENCE_OFF = ("pyroscope-release: persistence turns off, so the release is reinstalled on an emptyDir and the "
                   "stack's claims are deleted with their disks and every profile on them (docs/sizing.md)")
NEW_CLASS = ("{name}: pyroscopeStorageClass changes, and a claim's class cannot: the release is uninstalled, claim "
             "{claim} and its disk are deleted with the profiles on it{lost}, and both come back on {new}; the private "
             "link stays (docs/sizing.md, \"Changing the volume\")")
PRIVATE_LINK_MOVE = ("pyroscope-private-link: the private link service moves from the chart's Service to the stack's "
                     "own Service pyroscope-private-link, once: AKS deletes the old private link service with "
                     "Grafana's connection and makes a new one for the new Service, so Grafana's managed private "
                     "endpoint is re-created, approved and refreshed (Grafana cannot reach Pyroscope meanwhile, "
                     "minutes); after this, no change of the release touches it (docs/how-it-works.md, \"Upgrading\")")
MAJOR_UP = ("pyroscope-release: Pyroscope {old}.x to {new}.x, in place on the v1 storage the stack pins (chart 2.1.0 "
            "on defaults to v2): the pod restarts and the profiles on the volume stay; Pyroscope 2 takes label names "
            "with dots as they are (no sanitizing) and its maintainers document no way back to 1.x; their move to v2 "
            "storage (dual ingest, then v2 alone, on object storage) is not what the stack runs{below} "
            "(docs/day-two.md, \"Pyroscope 2\")")
#: The last 1.x release, which Pyroscope 2.0's upgrade notes start from (docs/sources/release-notes/v2-0.md).
LAST_1X = (1, 21)
ENDPOINT = "grafana-private-link-mpe"
#: Said when `pulumi up` replaces Grafana's endpoint and no warning above says it already.
ENDPOINT_RECREATED = ("grafana-private-link-mpe: Grafana's managed private endpoint is re-created, approved and "
                      "refreshed: Grafana cannot reach Pyroscope meanwhile (minutes), and its datasource gets the new "
                      "private IP after the refresh")
#: Said when the PLS gets new NAT IPs (privateLinkSubnet, privateLinkIpAddressCount).
NAT_REBUILT = ("pyroscope-private-link: the private link service's NAT IPs are rebuilt: Grafana's connections are "
               "refused until the NAT NetworkPolicy admits the new ones, right after the wait (seconds to minutes)")
MAJOR_DOWN = ("pyroscope-release: Pyroscope {old}.x back to {new}.x: its maintainers document no such move, and 1.x "
              "may not read what 2.x wrote on the volume; restore the volume from a snapshot taken before the upgrade "
              "instead (docs/day-two.md, \"Pyroscope 2\")")
NEW_NAMESPACE = ("gadget-namespace: the namespace is replaced, and Kubernetes deletes everything in it with it: "
                 "Pyroscope's claims and their disks, so every stored profile (single-binary mode), and the private "
                 "link Service, so Grafana's endpoint is re-created and approved again")
NEW_PLS = ("pyroscope-private-link: a new private link service name or group replaces the Service and with it the "
           "private link service (AKS cannot rename one): Grafana's managed private endpoint is re-created, approved "
           "and refreshed, and Grafana cannot reach Pyroscope meanwhile (minutes); Pyroscope itself is not touched")
ADOPTED = ("{keys}: claim {claim}, which the StatefulSet made, is adopted as it is ({old_size} on {old_class}), and "
           "{what}; keep pyroscopeStorageClass={old_class} and a pyroscopeStorageSize of {old_size} or more for this "
           "`pulumi up`, and change them in a later one")


#: Microservices mode's profile stores, whose delete (or replacement: a new name or group) deletes the profiles.
PROFILE_STORES = {"azure-native:storage:StorageAccount": "the storage account the stack created and its container are",
                  "azure-native:storage:BlobContainer": "the blob container is"}
STORE_LOST = ("{name}: {what} {done} with every profile in them; the profiles are not moved: copy the container first "
              "(`az storage copy` or AzCopy) to keep them (docs/sizing.md, \"Microservices mode\")")


def _claims(plan: Mapping) -> dict[str, dict]:
    return {r["name"]: r for r in plan["resources"] if r["type"] == CLAIM}


def _size(claim: Mapping) -> str:
    return claim["inputs"]["spec"]["resources"]["requests"]["storage"]


def _chart_pls(plan: Mapping) -> bool:
    """Whether a release of ``plan`` annotates one of the chart's Services for a PLS (the stack before it owned the
    private link Service)."""
    for r in plan["resources"]:
        if r["type"] != "kubernetes:helm.sh/v3:Release":
            continue
        values = (r["inputs"].get("values") or {}).get("pyroscope") or {}
        services = [values.get("service")] + [c.get("service") for c in (values.get("components") or {}).values()
                                              if isinstance(c, dict)]
        if any(isinstance(s, dict) and (s.get("annotations") or {}).get(PLS_CREATE) == "true" for s in services):
            return True
    return False


def _mode_switch(steps: list) -> bool:
    """Whether the release is reinstalled for a mode switch (MODE_SWITCH already says what the stores lose)."""
    return any(s.name == "pyroscope-release" and s.op == "replace" and any(
        d["path"] == "values.pyroscope.components" and (d["old"] is None or d["new"] is None) for d in s.diffs)
        for s in steps)


def _templates(plan: Mapping) -> dict[str, dict]:
    """The claims the StatefulSet of ``plan``'s release makes from its template (claim name -> size and class), for a
    plan whose claims the stack does not own yet (an older version)."""
    from components.pyroscope import claim_names

    found = {}
    for r in plan["resources"]:
        if r["type"] != "kubernetes:helm.sh/v3:Release":
            continue
        values = (r["inputs"].get("values") or {}).get("pyroscope") or {}
        micro = bool(values.get("components"))
        persistence = ((values.get("components") or {}).get("ingester") or {}).get("persistence", {}) if micro \
            else values.get("persistence") or {}
        if persistence.get("enabled") and persistence.get("size") and persistence.get("storageClassName"):
            for name in claim_names("microservices" if micro else "single-binary"):
                found[name] = {"size": persistence["size"], "storageClassName": persistence["storageClassName"]}
    return found


def warnings(steps: Iterable, base: Mapping, head: Mapping) -> list[str]:
    """The costs of ``steps`` a reviewer must read (module docstring)."""
    steps = list(steps)
    names = {r["name"] for r in head["resources"]}
    micro = any(r["name"] == "pyroscope-release" and (r["inputs"].get("values") or {}).get("pyroscope", {}).get(
        "components") for r in head["resources"])
    found = []
    for step in steps:
        if step.op == "delete" and step.name in REMOVALS:
            also = (", the same assignment grafana-datasources-shared-monitoring-data-reader ensures"
                    if "grafana-datasources-shared-monitoring-data-reader" in names else "")
            found.append(f"{step.name}: " + REMOVALS[step.name].format(also=also))
        if step.op == "replace" and step.name == "pyroscope-release":
            paths = {d["path"]: d for d in step.diffs}
            mode = paths.get("values.pyroscope.components")
            enabled = [d for p, d in paths.items() if p.endswith("persistence.enabled")]
            if mode is not None and (mode["old"] is None or mode["new"] is None):
                found.append(MODE_SWITCH[micro])
            elif enabled:
                found.append(PERSISTENCE_ON if enabled[0]["new"] else PERSISTENCE_OFF)
        if step.op == "replace" and step.type == CLAIM and any(d["path"] == "spec.storageClassName"
                                                                for d in step.diffs):
            claim = _claims(head)[step.name]["inputs"]
            lost = ("; the ingesters flush to the blob container on shutdown, so no profile is lost" if micro
                    else ": every stored profile")
            found.append(NEW_CLASS.format(name=step.name, claim=claim["metadata"]["name"], lost=lost,
                                          new=claim["spec"]["storageClassName"]))
        # (Back to single-binary: MODE_SWITCH already says the stores go.)
        if step.type in PROFILE_STORES and step.op in ("delete", "replace") and not (
                step.op == "delete" and not micro and _mode_switch(steps)):
            found.append(STORE_LOST.format(name=step.name, what=PROFILE_STORES[step.type],
                                           done="replaced" if step.op == "replace" else "deleted"))
        if step.op in ("update", "replace") and step.name == "pyroscope-release":
            version = next((d for d in step.diffs if d["path"] == "version"), None)
            majors = version and (pyroscope_major(str(version["old"])), pyroscope_major(str(version["new"])))
            if majors and None not in majors and majors[0] != majors[1]:
                if majors[1] < majors[0]:
                    found.append(MAJOR_DOWN.format(old=majors[0], new=majors[1]))
                else:
                    minor = tuple(int(p) for p in str(version["old"]).split("-")[0].split(".")[:2])
                    below = (f"; from {version['old']}, move to chart 1.21.0 (image 1.21.1) first, the release its "
                             "2.0 notes start from" if minor < LAST_1X else "")
                    found.append(MAJOR_UP.format(old=majors[0], new=majors[1], below=below))
        if step.op == "replace" and step.name == "gadget-namespace":
            found.append(NEW_NAMESPACE)
        if step.op == "create" and step.type == SERVICE and step.name == "pyroscope-private-link" and _chart_pls(base):
            found.append(PRIVATE_LINK_MOVE)
        if step.op == "replace" and step.type == SERVICE and step.name == "pyroscope-private-link" and any(
                "azure-pls-name" in d["path"] or "azure-pls-resource-group" in d["path"] for d in step.diffs):
            found.append(NEW_PLS)
        if step.op == "update" and step.type == SERVICE and step.name == "pyroscope-private-link" and any(
                "azure-pls-ip-configuration" in d["path"] for d in step.diffs):
            found.append(NAT_REBUILT)
    return found


def endpoint_warnings(up_replaced: set, said: list) -> list[str]:
    """:data:`ENDPOINT_RECREATED` when `pulumi up` replaces Grafana's endpoint (``up_replaced``: names; a replacement
    seen only in preview does not count) and no warning in ``said`` already says it is re-created."""
    if ENDPOINT in up_replaced and not any("endpoint is re-created" in w for w in said):
        return [ENDPOINT_RECREATED]
    return []


def refusals(steps: Iterable, base: Mapping, head: Mapping) -> list[str]:
    """The changes the cluster refuses: a claim whose size goes down (kubernetes
    ``ValidatePersistentVolumeClaimUpdate``: "field can not be less than previous value"), and, for a claim the base's
    StatefulSet made and the create adopts, one of another class or a smaller size ("spec is immutable after creation
    except resources.requests")."""
    old, new = _claims(base), _claims(head)
    templates = _templates(base)
    found = []
    for step in steps:
        if step.type == CLAIM and step.op == "create" and step.name not in old:
            spec = new[step.name]["inputs"]["spec"]
            claim = new[step.name]["inputs"]["metadata"]["name"]
            made = templates.get(claim)  # a claim the base's StatefulSet made, which the create adopts
            if made is None:
                continue
            what = {}
            if made["storageClassName"] != spec["storageClassName"]:
                what["pyroscopeStorageClass"] = f"a claim's class cannot change (to {spec['storageClassName']})"
            size = spec["resources"]["requests"]["storage"]
            if quantity_value(size) < quantity_value(made["size"]):
                what["pyroscopeStorageSize"] = f"a claim cannot shrink (to {size})"
            if what:
                found.append(ADOPTED.format(keys=", ".join(what), claim=claim, old_size=made["size"],
                                            old_class=made["storageClassName"], what=" and ".join(what.values())))
            continue
        if step.type != CLAIM or step.op != "update" or step.name not in old:
            continue
        before, after = _size(old[step.name]), _size(new[step.name])
        if quantity_value(after) < quantity_value(before):
            claim = new[step.name]["inputs"]["metadata"]["name"]
            found.append(f"pyroscopeStorageSize: {after} is smaller than claim {claim}'s {before}, and a claim cannot "
                         f"shrink (Kubernetes refuses it); set {before} or more")
    return found
