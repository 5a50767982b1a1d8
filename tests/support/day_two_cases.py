"""The day-two changes the lifecycle tests play (tests/offline/test_diff.py predicts and plays each offline;
tests/e2e/test_agreement.py runs each under the real engine): a change is config ``sets`` and/or ``--replace``
``targets``, with the offline diff's expected op, order, reasons and changed paths per resource. :func:`dashboards`
makes the dashboard variants some changes point at; :func:`settings` a change's sets with their digests filled in."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import reference
from tests.support.lifecycle import DASHBOARD_URL

OTHER_URL = "https://dashboards.example.test/gpu/AdvancedGPUObservability-v2.json"
RENAMED_URL = "https://dashboards.example.test/gpu/GpuObservabilityB.json"
SUBSCRIPTION = "3f2c1a9e-7b4d-4e21-9c0a-5d8e6f1b2a73"
ENGINE = "step_generator.go"
REPLACE_WITH_MPE = "replaceWith: grafana-private-link-mpe is replaced"
REPLACE_WITH_APPROVAL = "replaceWith: grafana-private-link-approve-connection is replaced"
UNKNOWN_DATASOURCE = "environment.DATASOURCE is unknown during preview (it comes from grafana-private-link-"


@dataclass
class Change:
    """A change: config ``sets`` and/or ``--replace`` ``targets`` (resource names). ``expect``: resource name ->
    (op, replace order, reason substrings, changed input paths); every resource not named must be ``same``."""

    name: str
    sets: dict = field(default_factory=dict)
    targets: list = field(default_factory=list)
    expect: dict = field(default_factory=dict)


#: The refresh's triggers hold the MPE's creation time (components/grafana_private_link.py).
NEW_MPE_TRIGGER = "triggers[2] is unknown during preview (it comes from grafana-private-link-mpe"


def cascade_after_mpe(mpe_reasons: list, approval_paths: tuple = (), refresh_paths: tuple = (),
                      approval_order: str = "delete-first") -> dict:
    """The MPE replaced delete-first; its approval, whose replaceWith names the MPE, deleted before it and re-created
    after it (step_generator.go findResourcesReplacedWith: a delete-first replacement deletes them first); the
    refresh, whose triggers read the MPE's creation time as the approval's do, the same way
    (calculateDependentReplacements); the Pyroscope datasource's URL unknown until the refresh has run. When the MPE
    itself was deleted first for another resource's delete-first replacement, its re-creation
    (continueStepsFromImport, "re-creating") starts no chain of its own: the approval and the refresh are then
    replaced create-first (``approval_order``)."""
    return {
        "grafana-private-link-mpe": ("replace", "delete-first", mpe_reasons, ()),
        "grafana-private-link-approve-connection": ("replace", approval_order, [REPLACE_WITH_MPE], approval_paths),
        "grafana-private-link-refresh": ("replace", approval_order, [NEW_MPE_TRIGGER], refresh_paths),
        "grafana-datasources-pyroscope": ("update", None, [UNKNOWN_DATASOURCE], ("environment.DATASOURCE",)),
    }


#: The approval nonce step: a new endpoint makes a new nonce (components/grafana_private_link.py).
NONCE = "grafana-private-link-approval-nonce"
#: An endpoint renamed, or moved to another Grafana: the nonce step's ENDPOINT moved, an update that makes a new nonce.
NONCE_MOVED = {NONCE: ("update", None, [], ("environment.ENDPOINT",))}
GRACE_PATH = "values.pyroscope.terminationGracePeriodSeconds"
ANNOTATION = 'metadata.annotations["service.beta.kubernetes.io/azure-pls-{}"]'
#: A new wait for the PLS: its lookup, so the NAT IPs the second NetworkPolicy admits, is unknown in the preview.
NAT_POLICY_UNKNOWN = {"grafana-private-link-nat-network-policy": ("update", None, ["spec is unknown during preview"],
                                                                  ("spec",))}
SERVICE_FIRST = ["replaceWith: pyroscope-private-link is replaced",
                 "the engine deletes it before pyroscope-private-link"]


def pls_identity_changed(service_paths: tuple, wait_paths: tuple = ("environment.PLS_NAME",)) -> dict:
    """A new PLS name or resource group: the private link Service replaced delete-first (its replace_on_changes), the
    wait and the endpoint (replaceWith the Service) deleted before it and created after it; the approval, whose MPE is
    re-created without a chain of its own, create-first. The release is not touched."""
    return {"pyroscope-private-link": ("replace", "delete-first", ["listed in replaceOnChanges",
                                                                   "deleteBeforeReplace option is set"], service_paths),
            "pyroscope-private-link-identity": ("replace", "create-first", ["triggers are replaceOnChanges"], ()),
            "grafana-private-link-wait-for-pls": ("replace", "delete-first", SERVICE_FIRST, wait_paths),
            **NAT_POLICY_UNKNOWN,
            # A new PLS, a new endpoint: a nonce of its own (replaceWith the Service, as the endpoint).
            NONCE: ("replace", "delete-first", SERVICE_FIRST, ("environment.ENDPOINT",)),
            **cascade_after_mpe(SERVICE_FIRST, approval_order="create-first")}

CHANGES = [
    Change("chart-version-bump", {"pyroscopeChartVersion": "1.15.1"},
           expect={"pyroscope-release": ("update", None, [], ("version",))}),
    Change("image-tag", {"pyroscopeImageTag": "1.16.0"},
           expect={"pyroscope-release": ("update", None, [], ("values.pyroscope.image.tag",))}),
    # The disk grows in place: the stack's claim is updated (Azure Disk CSI expands it online); the release, whose
    # claim template ignores the size, is not touched, nor is the private link.
    Change("storage-size-grow", {"pyroscopeStorageSize": "128Gi"},
           expect={"pyroscope-data-0": ("update", None, [], ("spec.resources.requests.storage",))}),
    # A new class is a new disk: the claim replaced delete-first, after the release that mounts it (its replaceWith
    # names the claim), both re-created; the private link stays. The claims' identity step is replaced with them
    # (its trigger is the class), so the claim's annotation is unknown in the preview and the provider does not
    # dry-run its create against the old claim.
    Change("storage-class", {"pyroscopeStorageClass": "managed-csi-premium"},
           expect={"pyroscope-claims-identity": ("replace", "create-first", ["triggers are replaceOnChanges"],
                                                 ("triggers[0]",)),
                   "pyroscope-data-0": ("replace", "delete-first", ["lists .spec.storageClassName",
                                                                    "deleteBeforeReplace option is set"],
                                        ("spec.storageClassName",)),
                   "pyroscope-release": ("replace", "delete-first", ["replaceWith: pyroscope-data-0 is replaced",
                                                                     "the engine deletes it before pyroscope-data-0"],
                                         ())}),
    Change("grace-period", {"pyroscopeTerminationGracePeriodSeconds": "900"},
           expect={"pyroscope-release": ("update", None, [], (GRACE_PATH,))}),
    # The AKS cloud provider cannot rename the PLS of a live Service (tests/support/fake_world.py ensure_service_pls): a
    # new PLS identity replaces the private link Service, and with it (replaceWith) the wait and the endpoint, deleted
    # before it; the release stays.
    Change("pls-name", {"privateLinkServiceName": "pyroscope-pls-2"},
           expect=pls_identity_changed((ANNOTATION.format("name"),))),
    # A PLS resource group other clusters may share: the PLS moves there under a per-cluster name.
    Change("pls-resource-group", {"privateLinkServiceResourceGroup": "rg-network"},
           expect=pls_identity_changed((ANNOTATION.format("name"), ANNOTATION.format("resource-group")),
                                       ("environment.PLS_NAME", "environment.PLS_RESOURCE_GROUP"))),
    # The cloud provider rebuilds the PLS's NAT IP configurations after the Service's update; the wait returns once it
    # has, and the NAT NetworkPolicy, which reads them after the wait, admits the new ones.
    # The wait is updated, and its stdout unknown in a preview (UNKNOWN_WHEN_UPDATED): the PLS lookup held behind it
    # too, but the preview keys the endpoint chain on the PLS id read before anything is registered
    # (components/grafana_private_link.py preview_pls_id): the chain is unchanged, as `pulumi up` keeps it.
    Change("pls-ip-address-count", {"privateLinkIpAddressCount": "2"},
           expect={"pyroscope-private-link": ("update", None, [],
                                              (ANNOTATION.format("ip-configuration-ip-address-count"),)),
                   "grafana-private-link-wait-for-pls": ("update", None, [], ("environment.IP_CONFIGURATION_COUNT",)),
                   "grafana-private-link-nat-network-policy": ("update", None, [], ("spec",))}),
    Change("pls-subnet", {"privateLinkSubnet": "snet-pls"},
           expect={"pyroscope-private-link": ("update", None, [], (ANNOTATION.format("ip-configuration-subnet"),)),
                   "grafana-private-link-wait-for-pls": ("update", None, [], ("environment.PLS_SUBNET",)),
                   "grafana-private-link-nat-network-policy": ("update", None, [], ("spec",))}),
    Change("pls-visibility", {"privateLinkVisibility": SUBSCRIPTION},
           expect={"pyroscope-private-link": ("update", None, [], (ANNOTATION.format("visibility"),))}),
    Change("mpe-name", {"managedPrivateEndpointName": "pyro-mpe2"},
           expect={**NONCE_MOVED,
                   **cascade_after_mpe(["managedPrivateEndpointName: a path parameter of the ARM PUT",
                                        "delete-first: deleteBeforeReplace option is set (the provider's diff asks "
                                        "delete-first too)"],
                                       ("environment.PRIVATE_ENDPOINT_NAME",), ("environment.MPE_NAME",))}),
    Change("grafana-name", {"grafanaName": "amg-gpu-other"},
           expect={**cascade_after_mpe(["workspaceName: a path parameter of the ARM PUT"]), **NONCE_MOVED,
                   "grafana-private-link-mpe": ("replace", "delete-first", ["workspaceName: a path parameter"],
                                                ("workspaceName", "requestMessage")),
                   "grafana-datasources-pyroscope": ("replace", "delete-first",
                                                     ["triggers[0]: triggers are replaceOnChanges"],
                                                     ("triggers[0]", "environment.GRAFANA_ENDPOINT")),
                   "grafana-datasources-prometheus": ("replace", "delete-first", ["triggers[0]"], ("triggers[0]",)),
                   "grafana-datasources-monitoring-data-reader": ("replace", "delete-first",
                                                                  ["principalId: listed in azure-native's forceNewMap"],
                                                                  ("principalId", "roleAssignmentName")),
                   "gpu-dashboard-upload": ("replace", "create-first", ["triggers[0]", "create-first"],
                                            ("triggers[0]",))}),
    Change("datasource-uid", {"pyroscopeDatasourceUid": "pyro-b"},
           expect={"grafana-datasources-pyroscope": ("replace", "delete-first", ["triggers[1]"], ("triggers[1]",)),
                   "gpu-dashboard-upload": ("update", None, [], ("environment.DATASOURCES",))}),
    Change("datasource-name", {"pyroscopeDatasourceName": "Pyroscope B"},
           expect={"grafana-datasources-pyroscope": ("update", None, [], ("environment.DATASOURCE",)),
                   "gpu-dashboard-upload": ("update", None, [], ("environment.DATASOURCES",))}),
    Change("dashboard-uid", {"dashboardUid": "GpuObservabilityB", "dashboardSource": RENAMED_URL,
                             "dashboardSha256": "@renamed"},
           expect={"gpu-dashboard-upload": ("replace", "create-first", ["triggers[1]", "create-first"],
                                            ("triggers[1]", "environment.DASHBOARD_UID",
                                             "environment.DASHBOARD_SOURCE"))}),
    Change("dashboard-source-and-sha", {"dashboardSource": OTHER_URL, "dashboardSha256": "@other"},
           expect={"gpu-dashboard-upload": ("update", None, [], ("environment.DASHBOARD_SOURCE",
                                                                 "environment.DASHBOARD_SHA256"))}),
    # Inspektor Gadget v0.54+ is held as another profile type ID (docs/offline.md G12): the step runs again, in place.
    Change("dashboard-profile-type", {"dashboardProfileType": "process_cpu:malloc:bytes:process_cuda:bytes"},
           expect={"gpu-dashboard-upload": ("update", None, [], ("environment.DASHBOARD_PROFILE_TYPE",))}),
    Change("extension-version-pin", {"extensionVersion": "0.46.0"},
           expect={"inspektor-gadget-extension": ("update", None, [], ("version", "autoUpgradeMinorVersion"))}),
    # multiCluster names the PLS per cluster too (stack_config/names.py): the private link is re-created once.
    Change("multi-cluster-on", {"multiCluster": "true"},
           expect={**pls_identity_changed((ANNOTATION.format("name"),)),
                   "grafana-datasources-pyroscope": ("replace", "delete-first", ["triggers[1]"], ("triggers[1]",)),
                   "grafana-datasources-prometheus": ("replace", "delete-first", ["triggers[1]"], ("triggers[1]",)),
                   "gpu-dashboard-upload": ("update", None, [], ("environment.DATASOURCES",)),
                   "grafana-datasources-monitoring-data-reader": ("delete", None, ["not in the new program"], ())}),
    Change("kubelogin-mode", {"kubeloginMode": "workloadidentity"},
           expect={"aks": ("update", None, [], ("kubeconfig",)), "aks-claims": ("update", None, [], ("kubeconfig",))}),
]

REPLACED = "--replace: replacement requested on the command line"
CHANGES += [
    Change("replace-extension", targets=["inspektor-gadget-extension"],
           expect={"inspektor-gadget-extension": ("replace", "delete-first", [REPLACED,
                                                                              "deleteBeforeReplace option is set"],
                                                  ())}),
    # The namespace's replacement takes what lives in it along (replace_with): the extension, the release and the
    # private link Service delete-first, and the Service the private link; the extension's own replacement (above)
    # takes nothing. The claim is not named (the chain would delete it in an order of its own, possibly before the
    # release that mounts it): Kubernetes deletes it with the namespace, and the re-created StatefulSet makes it again.
    Change("replace-namespace", targets=["gadget-namespace"],
           expect={"gadget-namespace": ("replace", "delete-first", [REPLACED, "deleteBeforeReplace option is set"], ()),
                   **{name: ("replace", "delete-first", ["replaceWith: gadget-namespace is replaced"], ())
                      for name in ("inspektor-gadget-extension", "pyroscope-release",
                                   "pyroscope-private-link", "pyroscope-network-policy",
                                   "grafana-private-link-nat-network-policy")},
                   # The claim's metadata comes from the namespace: made unknown, the provider diffs it as a new
                   # object (calculateDependentReplacements), deleted after the replaceWith set, so after the release.
                   "pyroscope-data-0": ("replace", "delete-first",
                                        ["inputs metadata come from a replaced resource and would replace it"], ()),
                   # The Service, deleted first for the namespace, is re-created without a chain of its own, so the
                   # wait (replaceWith the Service) is replaced create-first.
                   "grafana-private-link-wait-for-pls": ("replace", "create-first",
                                                         ["replaceWith: pyroscope-private-link is replaced"], ()),
                   NONCE: ("replace", "create-first", ["replaceWith: pyroscope-private-link is replaced"], ()),
                   **cascade_after_mpe(["replaceWith: pyroscope-private-link is replaced",
                                        "deleteBeforeReplace option is set"])}),
    Change("replace-kubernetes-provider", targets=["aks"],
           expect={"aks": ("replace", "create-first", [REPLACED], ())}),
    # A reinstalled release leaves the private link Service, its PLS and Grafana's endpoint alone.
    Change("replace-release", targets=["pyroscope-release"],
           expect={"pyroscope-release": ("replace", "delete-first", [REPLACED], ())}),
    # A new wait (an edit of its script, say) is no new PLS: its lookup is unknown in the preview until the wait has
    # run, but the endpoint chain is keyed on the PLS id read before (components/grafana_private_link.py
    # preview_pls_id), so the preview keeps the endpoint, as `pulumi up` does; the NAT policy's spec is unknown.
    Change("replace-wait", targets=["grafana-private-link-wait-for-pls"],
           expect={"grafana-private-link-wait-for-pls": ("replace", "create-first", [REPLACED], ()),
                   **NAT_POLICY_UNKNOWN}),
    Change("replace-mpe", targets=["grafana-private-link-mpe"],
           expect=cascade_after_mpe([REPLACED, "delete-first: deleteBeforeReplace option is set"])),
    Change("replace-approval", targets=["grafana-private-link-approve-connection"],
           expect={"grafana-private-link-approve-connection": ("replace", "create-first", [REPLACED], ()),
                   "grafana-private-link-refresh": ("replace", "create-first", [REPLACE_WITH_APPROVAL], ()),
                   "grafana-datasources-pyroscope": ("update", None, [UNKNOWN_DATASOURCE],
                                                     ("environment.DATASOURCE",))}),
    Change("replace-refresh", targets=["grafana-private-link-refresh"],
           expect={"grafana-private-link-refresh": ("replace", "create-first", [REPLACED], ()),
                   "grafana-datasources-pyroscope": ("update", None, [UNKNOWN_DATASOURCE],
                                                     ("environment.DATASOURCE",))}),
    Change("replace-role-assignment", targets=["grafana-datasources-monitoring-data-reader"],
           expect={"grafana-datasources-monitoring-data-reader": ("replace", "delete-first", [REPLACED], ())}),
    Change("replace-pyroscope-datasource", targets=["grafana-datasources-pyroscope"],
           expect={"grafana-datasources-pyroscope": ("replace", "delete-first", [REPLACED], ())}),
    Change("replace-prometheus-datasource", targets=["grafana-datasources-prometheus"],
           expect={"grafana-datasources-prometheus": ("replace", "delete-first", [REPLACED], ())}),
    Change("replace-dashboard", targets=["gpu-dashboard-upload"],
           expect={"gpu-dashboard-upload": ("replace", "create-first", [REPLACED, "create-first"], ())}),
]


def dashboards(tmp: Path) -> dict[str, tuple[str, str]]:
    """URL -> (local file, sha256): the pinned dashboard and two variants (another title; another uid)."""
    pinned = reference("grafana-dashboards/AdvancedGPUObservability.json")
    files = {DASHBOARD_URL: pinned}
    for url, change in ((OTHER_URL, {"title": "Advanced GPU Observability (v2)"}),
                        (RENAMED_URL, {"uid": "GpuObservabilityB"})):
        variant = {**json.loads(pinned.read_bytes()), **change}
        path = tmp / url.rsplit("/", 1)[1]
        path.write_text(json.dumps(variant, indent=2))
        files[url] = path
    return {url: (str(path), hashlib.sha256(Path(path).read_bytes()).hexdigest()) for url, path in files.items()}


def settings(change: Change, dashboards: dict) -> dict:
    sha = {"@other": dashboards[OTHER_URL][1], "@renamed": dashboards[RENAMED_URL][1]}
    return {key: sha.get(value, value) for key, value in change.sets.items()}
