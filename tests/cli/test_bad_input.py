"""Bad input, table-driven: CLI config, stack files, dashboard files, flame-graph frames, policy
config and the tools' own inputs. Each case runs the tool's ``main`` in-process and must end with exit status 2,
exactly one line on stderr that names the offending key or file, nothing on stdout and, for the offline plan, no
resource registered but the stack itself (the SDK registers ``pulumi:pulumi:Stack`` when the program starts, as
under the real engine). What the real Pulumi CLI does with each stack-file case is in docs/offline.md (C6-C12).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Union

import pytest

from flamegraph import hotspots
from offline import plan, program
from ops import verify
from tests.support import ROOT

DEV = (ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")
NS = "aks-gpu-observability"
LOCAL = "tests/data/local-dashboard.json"
#: The first line appended to the dev stack file, and the line of its clusterName.
NEXT = len(DEV.splitlines()) + 1
CLUSTER_LINE = next(i for i, line in enumerate(DEV.splitlines(), 1) if f"{NS}:clusterName:" in line)
NO_AZ = "the Azure CLI (az) is not on PATH; install Azure CLI 2.72 or newer"


def sha(relative: str) -> str:
    return hashlib.sha256((ROOT / relative).read_bytes()).hexdigest()


def stack(text: str = DEV, drop: tuple = (), add: str = "") -> str:
    """The dev stack file with the lines naming ``drop`` keys removed and ``add`` appended."""
    kept = [line for line in text.splitlines(keepends=True) if not any(f"{NS}:{key}:" in line for key in drop)]
    return "".join(kept) + add


def frame(rows, enum=None) -> dict:
    """A /api/ds/query response holding one flame-graph frame of ``rows`` (level, value, self, label)."""
    columns = list(zip(*rows)) if rows else [[], [], [], []]
    label = {"name": "label", "type": "string"}
    if enum is not None:
        label["config"] = {"type": {"enum": {"text": enum}}}
    return {"results": {"A": {"frames": [{"schema": {"fields": [
        {"name": "level"}, {"name": "value", "config": {"unit": "bytes"}}, {"name": "self"}, label]},
        "data": {"values": [list(c) for c in columns]}}]}}}


Args = Union[list, Callable[[Path], list]]


@dataclass
class Bad:
    """One bad input. ``tool``: plan, verify or hotspots; ``args``: its command line (or a function of the test's
    tmp dir); ``names``: what the one stderr line must contain; ``stack_file``: text of Pulumi.t.yaml (the plan
    then runs ``--stack t``); ``files``: name -> text written to the tmp dir first; ``no_az``: PATH without az."""

    id: str
    tool: str
    args: Args
    names: list
    stack_file: str = None
    files: dict = field(default_factory=dict)
    no_az: bool = False
    absent: list = field(default_factory=list)  # what the line must not say (an offline placeholder, a secret)
    python_flags: list = None  # run as `python <flags> -m <module>` in a subprocess (e.g. -S: no virtualenv)

    @property
    def module(self) -> str:
        return {"plan": "offline.plan", "verify": "ops.verify", "hotspots": "flamegraph.hotspots"}[self.tool]


GOOD_FRAME = frame([(0, 10, 0, "total"), (1, 10, 10, "main")])

CASES = [
    # --- CLI config: --set, and the plan's own arguments ---------------------------------------------------
    Bad("set-required-key-empty", "plan", ["--set", "clusterName="], ["clusterName"]),
    Bad("set-undeclared-key", "plan", ["--set", "clustername=aks"], ["clustername", "did you mean clusterName?"]),
    Bad("set-misspelt-project-namespace", "plan", ["--set", "aks-gpu-observabilty:grafanaName=amg-gpu-dev"],
        ["aks-gpu-observabilty:grafanaName", "did you mean aks-gpu-observability:grafanaName?"]),
    Bad("set-unknown-azure-native-key", "plan", ["--set", "azure-native:locaton=eastus2"],
        ["azure-native:locaton", "did you mean azure-native:location?"]),
    Bad("set-misspelt-provider-namespace", "plan", ["--set", "azure-natve:location=eastus2"],
        ["azure-natve:location", "azure-native:location"]),
    Bad("set-boolean-yes", "plan", ["--set", "multiCluster=yes"], ["multiCluster", "boolean"]),
    Bad("set-integer-word", "plan", ["--set", "extensionTimeoutSeconds=ten"], ["extensionTimeoutSeconds", "integer"]),
    Bad("set-array-as-text", "plan", ["--set", "tags=a=b"], ["tags", "array<string>"]),
    Bad("set-array-as-json-text", "plan", ["--set", 'tags=["a=b"]'], ["tags", "array<string>",
                                                                      "pulumi config set --path 'tags[0]'"]),
    Bad("set-path-index-out-of-range", "plan", ["--set-path", "tags[0]=a=b", "--set-path", "tags[2]=c=d"],
        ["tags[2]", "array index out of range"]),
    Bad("set-path-boolean-item", "plan", ["--set-path", "tags[0]=true"], ["tags", "array<string>"]),
    Bad("set-path-skips-index-0", "plan", ["--set-path", "tags[1]=a=b"], ["tags", "item 0 was never set"]),
    Bad("set-path-list-by-name", "plan", ["--set-path", "tags.x=a=b"], ["tags", "a list is set by index", "tags[0]"]),
    Bad("set-a-path-as-a-key", "plan", ["--set", "tags[0]=a=b"], ["tags[0]", "a path into tags", "--set-path"]),
    Bad("set-path-bad-index", "plan", ["--set-path", "tags[x]=a=b"], ["tags[x]", "invalid array index"]),
    Bad("set-path-without-equals", "plan", ["--set-path", "tags[0]"], ["--set-path", "PATH=VALUE"]),
    Bad("set-out-of-range", "plan", ["--set", "privateLinkIpAddressCount=9"], ["privateLinkIpAddressCount", "1 to 8"]),
    Bad("set-bad-endpoint-name", "plan", ["--set", "managedPrivateEndpointName=1mpe"], ["managedPrivateEndpointName"]),
    Bad("set-bad-visibility", "plan", ["--set", "privateLinkVisibility=everyone"], ["privateLinkVisibility"]),
    Bad("set-version-range", "plan", ["--set", "pyroscopeChartVersion=^1.15"], ["pyroscopeChartVersion"]),
    Bad("set-without-equals", "plan", ["--set", "clusterName"], ["--set", "KEY=VALUE"]),
    # Pyroscope's volume, retention, sizing and placement (stack_config/rules.py)
    Bad("set-persistence-yes", "plan", ["--set", "pyroscopePersistence=yes"], ["pyroscopePersistence", "boolean"]),
    Bad("set-storage-class-upper", "plan", ["--set", "pyroscopeStorageClass=Managed_CSI"],
        ["pyroscopeStorageClass", "storage class"]),
    Bad("set-storage-size-no-unit", "plan", ["--set", "pyroscopeStorageSize=64"],
        ["pyroscopeStorageSize", "10Gi to 32Ti"]),
    Bad("set-storage-size-too-small", "plan", ["--set", "pyroscopeStorageSize=5Gi"],
        ["pyroscopeStorageSize", "10Gi to 32Ti"]),
    Bad("set-storage-size-decimal-unit", "plan", ["--set", "pyroscopeStorageSize=64GB"], ["pyroscopeStorageSize"]),
    Bad("set-retention-days-word", "plan", ["--set", "pyroscopeRetention=14 days"], ["pyroscopeRetention", "14d"]),
    Bad("set-mode-unknown", "plan", ["--set", "pyroscopeMode=distributed"], ["pyroscopeMode", "single-binary",
                                                                             "microservices"]),
    Bad("set-storage-account-upper", "plan", ["--set", "pyroscopeMode=microservices", "--set",
                                              "pyroscopeStorageAccount=StProfiles"],
        ["pyroscopeStorageAccount", "3-24 lowercase letters and digits"]),
    Bad("set-storage-account-long", "plan", ["--set", "pyroscopeStorageAccount=" + "a" * 25],
        ["pyroscopeStorageAccount", "storage account name"]),
    Bad("set-blob-container-double-dash", "plan", ["--set", "pyroscopeBlobContainer=gpu--profiles"],
        ["pyroscopeBlobContainer", "blob container name"]),
    Bad("set-blob-container-short", "plan", ["--set", "pyroscopeBlobContainer=pp"], ["pyroscopeBlobContainer", "3-63"]),
    Bad("set-storage-group-trailing-dot", "plan", ["--set", "pyroscopeStorageAccountResourceGroup=rg-data."],
        ["pyroscopeStorageAccountResourceGroup"]),
    Bad("set-resources-bad-key", "plan", ["--set-path", "pyroscopeResources[0]=request.cpu=1"],
        ["pyroscopeResources", "requests.memory=2Gi"]),
    Bad("set-resources-bad-quantity", "plan", ["--set-path", "pyroscopeResources[0]=limits.memory=4GiB"],
        ["pyroscopeResources"]),
    Bad("set-resources-request-over-limit", "plan", ["--set-path", "pyroscopeResources[0]=requests.memory=8Gi"],
        ["pyroscopeResources", "requests.memory 8Gi is more than limits.memory 4Gi"]),
    Bad("set-node-selector-no-value", "plan", ["--set-path", "pyroscopeNodeSelector[0]=agentpool"],
        ["pyroscopeNodeSelector", "key=value"]),
    Bad("set-toleration-bad-effect", "plan", ["--set-path", "pyroscopeTolerations[0]=sku=gpu:NoSched"],
        ["pyroscopeTolerations", "NoSchedule"]),
    Bad("set-node-selector-as-text", "plan", ["--set", "pyroscopeNodeSelector=agentpool=system"],
        ["pyroscopeNodeSelector", "array<string>"]),
    Bad("stack-does-not-exist", "plan", ["--stack", "nosuch"], ["Pulumi.nosuch.yaml"]),
    Bad("graph-format", "plan", ["--graph", "dot"], ["--graph"]),
    Bad("json-and-graph", "plan", ["--json", "--graph", "mermaid"], ["--graph", "--json"]),
    Bad("replace-without-base", "plan", ["--replace", "grafana-private-link-mpe"], ["--replace", "--diff-against"]),
    Bad("diff-against-missing-file", "plan", lambda tmp: ["--diff-against", str(tmp / "base.json")],
        ["--diff-against", "base.json"]),
    Bad("diff-against-not-a-plan", "plan", lambda tmp: ["--diff-against", str(tmp / "base.json")],
        ["base.json", "not a plan"],
        files={"base.json": '{"resources": []}'}),
    # --- stack files, as people edit them ------------------------------------------------------------------
    Bad("stack-key-without-value", "plan", ["--stack", "t"], ["clusterName", "required"],
        stack_file=stack(drop=("clusterName",), add=f"  {NS}:clusterName:\n")),
    Bad("stack-boolean-without-value", "plan", ["--stack", "t"], ["multiCluster", "boolean"],
        stack_file=stack(add=f"  {NS}:multiCluster:\n")),
    Bad("stack-invalid-yaml", "plan", ["--stack", "t"], [f"Pulumi.t.yaml:{NEXT + 1}:35", "invalid YAML"],
        stack_file=stack(add=f"  {NS}:tags: [team=ml\n  {NS}:production: true\n")),
    Bad("stack-tab-indent", "plan", ["--stack", "t"], ["Pulumi.t.yaml:", "invalid YAML"],
        stack_file=stack(add=f"\t{NS}:production: true\n")),
    Bad("stack-misspelt-namespace", "plan", ["--stack", "t"],
        ["aks-gpu-observabilty:grafanaName", "did you mean aks-gpu-observability:grafanaName?"],
        stack_file=stack(drop=("grafanaName",), add="  aks-gpu-observabilty:grafanaName: amg-gpu-dev\n")),
    Bad("stack-key-outside-config", "plan", ["--stack", "t"], [f"Pulumi.t.yaml:{NEXT}:1", f"{NS}:production",
                                                               "outside `config:`"],
        stack_file=stack(add=f"{NS}:production: true\n")),
    Bad("stack-misspelt-top-level", "plan", ["--stack", "t"], [f"Pulumi.t.yaml:{NEXT}:1", "secretprovider",
                                                               "secretsprovider"],
        stack_file=stack(add="secretprovider: azurekeyvault://kv.vault.azure.net/keys/k\n")),
    Bad("stack-duplicate-key", "plan", ["--stack", "t"], [f"Pulumi.t.yaml:{NEXT}:3", f"{NS}:clusterName",
                                                          f"first at line {CLUSTER_LINE}"],
        stack_file=stack(add=f"  {NS}:clusterName: aks-gpu-other\n")),
    Bad("stack-duplicate-once-namespaced", "plan", ["--stack", "t"], [f"Pulumi.t.yaml:{NEXT}:3", "clusterName"],
        stack_file=stack(add="  clusterName: aks-gpu-other\n")),
    Bad("stack-unknown-azure-native-key", "plan", ["--stack", "t"], ["azure-native:locaton"],
        stack_file=stack(add="  azure-native:locaton: westeurope\n")),
    Bad("stack-undeclared-bare-key", "plan", ["--stack", "t"], ["clustername", "did you mean clusterName?"],
        stack_file=stack(add="  clustername: aks-gpu-dev\n")),
    Bad("stack-key-with-two-colons", "plan", ["--stack", "t"], [f"Pulumi.t.yaml:{NEXT}:3", f"{NS}:extension:version"],
        stack_file=stack(add=f"  {NS}:extension:version: 0.46.0\n")),
    Bad("stack-config-is-a-list", "plan", ["--stack", "t"], ["Pulumi.t.yaml:1:9", "config"],
        stack_file="config: [clusterName]\n"),
    Bad("stack-document-is-a-list", "plan", ["--stack", "t"], ["Pulumi.t.yaml", "mapping"], stack_file="- config\n"),
    Bad("stack-empty-file", "plan", ["--stack", "t"], ["clusterName", "required"], stack_file=""),
    Bad("stack-number-for-integer", "plan", ["--stack", "t"], ["extensionTimeoutSeconds", "integer"],
        stack_file=stack(add=f"  {NS}:extensionTimeoutSeconds: 90.5\n")),
    Bad("stack-version-as-a-yaml-number", "plan", ["--stack", "t"],
        [f"Pulumi.t.yaml:{NEXT}:44", "pyroscopeImageTag", "passes on as \"1.2\"", 'quote it',
         'pyroscopeImageTag: "1.20"'],
        stack_file=stack(add=f"  {NS}:pyroscopeImageTag: 1.20\n")),
    Bad("stack-secure-garbage-on-a-name", "plan", ["--stack", "t"],
        [f"Pulumi.t.yaml:{NEXT}:13", "grafanaName", "cannot be decrypted",
         "not valid ciphertext"],  # one line dropped, one added
        stack_file=stack(drop=("grafanaName",), add=f"  {NS}:grafanaName:\n    secure: garbage\n"),
        absent=["offline-placeholder-for-secret"]),
    Bad("stack-secure-garbage-on-the-image-tag", "plan", ["--stack", "t"],
        ["pyroscopeImageTag", "cannot be decrypted", "not valid ciphertext",
         "pulumi config set --secret pyroscopeImageTag"],
        stack_file=stack(add=f"  {NS}:pyroscopeImageTag:\n    secure: garbage\n")),
    Bad("stack-secure-name-offline", "plan", ["--stack", "t"],
        ["grafanaName", "`secure:` value", "offline plan cannot decrypt", "--set grafanaName=<value>"],
        stack_file=stack(drop=("grafanaName",),
                         add=f"  {NS}:grafanaName:\n    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n"),
        absent=["offline-placeholder-for-secret"]),
    Bad("set-path-tag-managed-by", "plan", ["--set-path", "tags[0]=Managed-By=me"],
        ["tags", "managed-by=aks-gpu-observability"]),
    Bad("plan-outside-the-virtualenv", "plan", ["--stack", "dev"],
        ["is not installed for",
         "python3 -m venv .venv && .venv/bin/pip install --require-hashes -r requirements-dev.lock",
         ".venv/bin/python -m offline.plan --stack dev"], python_flags=["-S"]),
    # --- dashboard files (dashboardSource in the project) ---------------------------------------------------
    Bad("dashboard-file-other-sha256", "plan", ["--set", f"dashboardSource={LOCAL}"], ["dashboardSha256", LOCAL]),
    Bad("dashboard-file-not-json", "plan", ["--set", "dashboardSource=README.md", "--set",
                                            f"dashboardSha256={sha('README.md')}"],
        ["dashboardSource", "README.md:1:1", "not JSON"]),
    Bad("dashboard-file-not-an-object", "plan",
        ["--set", "dashboardSource=tests/data/dashboard-list.json", "--set",
         f"dashboardSha256={sha('tests/data/dashboard-list.json')}"],
        ["dashboardSource", "tests/data/dashboard-list.json", "JSON object"]),
    Bad("dashboard-file-other-uid", "plan",
        ["--set", f"dashboardSource={LOCAL}", "--set", f"dashboardSha256={sha(LOCAL)}", "--set",
         "dashboardUid=GpuOther"],
        ["dashboardUid", LOCAL, "AdvancedGPUObservability"]),
    # Grafana 12/13's export of a v2 dashboard (grafana/grafana-operator#2710): the resource form, not the JSON model.
    Bad("dashboard-file-resource-form", "plan",
        ["--set", "dashboardSource=tests/data/dashboard-v2-resource.json", "--set",
         f"dashboardSha256={sha('tests/data/dashboard-v2-resource.json')}"],
        ["dashboardSource", "tests/data/dashboard-v2-resource.json", "Kubernetes-style resource",
         "dashboard.grafana.app/v2beta1", "Export as JSON"]),
    Bad("dashboard-file-missing", "plan", ["--set", "dashboardSource=dashboards/missing.json"],
        ["dashboardSource", "dashboards/missing.json"]),
    Bad("dashboard-file-outside-project", "plan", ["--set", "dashboardSource=../other/x.json"], ["dashboardSource"]),
    Bad("dashboard-plain-http", "plan", ["--set", "dashboardSource=http://example.com/d.json"], ["dashboardSource"]),
    Bad("dashboard-sha256-short", "plan", ["--set", "dashboardSha256=9c87339704d1"], ["dashboardSha256"]),
    # The flame graph's profile type (dashboardProfileType): a whole Pyroscope ID, name:type:unit:periodType:periodUnit.
    Bad("dashboard-profile-type-three-parts", "plan", ["--set", "dashboardProfileType=process_cpu:malloc:bytes"],
        ["dashboardProfileType", "name:type:unit:periodType:periodUnit", "'process_cpu:malloc:bytes'"]),
    Bad("dashboard-profile-type-a-space", "plan", ["--set",
                                                   "dashboardProfileType=process_cpu:malloc:bytes:process_cuda :bytes"],
        ["dashboardProfileType", "Pyroscope profile type ID"]),
    Bad("dashboard-profile-type-empty", "plan", ["--set", "dashboardProfileType="],
        ["dashboardProfileType", "(got '')"]),
    # Well formed, but not GPU memory: the GPU flame graph would read CPU time.
    Bad("dashboard-profile-type-not-gpu-memory", "plan", ["--set",
                                                          "dashboardProfileType=process_cpu:cpu:nanoseconds:cpu:nanoseconds"],
        ["dashboardProfileType", "sample type malloc and unit bytes", "ops.verify"]),
    # --- flame-graph frames (flamegraph.hotspots --from-file) ----------------------------------------------------
    Bad("frame-not-json", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")], ["f.json"],
        files={"f.json": "{"}),
    Bad("frame-no-results", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")], ["f.json", "results"],
        files={"f.json": "{}"}),
    Bad("frame-result-not-an-object", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")],
        ["f.json", "results.A"],
        files={"f.json": '{"results": {"A": 5}}'}),
    Bad("frame-grafana-error", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")],
        ["f.json", "plugin unavailable"],
        files={"f.json": '{"results": {"A": {"error": "plugin unavailable"}}}'}),
    Bad("frame-missing-field", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")], ["f.json", "self"],
        files={"f.json": json.dumps({"results": {"A": {"frames": [{"schema": {"fields": [{"name": "level"},
                                                                                         {"name": "value"},
                                                                                         {"name": "label"}]},
                 "data": {"values": [[0], [1], ["total"]]}}]}}})}),
    Bad("frame-level-jump", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")], ["f.json", "level 2"],
        files={"f.json": json.dumps(frame([(0, 10, 0, "total"), (2, 10, 10, "deep")]))}),
    Bad("frame-negative-value", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")], ["f.json", "negative"],
        files={"f.json": json.dumps(frame([(0, 10, 0, "total"), (1, -1, 0, "main")]))}),
    Bad("frame-fractional-level", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")],
        ["f.json", "whole numbers"],
        files={"f.json": json.dumps(frame([(0, 10, 0, "total"), (0.5, 10, 10, "main")]))}),
    Bad("frame-enum-out-of-range", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json")], ["f.json", "enum"],
        files={"f.json": json.dumps(frame([(0, 10, 0, 0), (1, 10, 10, 7)], enum=["total", "main"]))}),
    Bad("frame-callees-wider-than-caller", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json"), "--svg",
                                                                    str(tmp / "f.svg")],
        ["f.json", "'main'"], files={"f.json": json.dumps(frame([(0, 10, 0, "total"), (1, 4, 0, "main"),
                                                                 (2, 5, 5, "a")]))}),
    Bad("hotspots-top-zero", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json"), "--top", "0"], ["--top"],
        files={"f.json": json.dumps(GOOD_FRAME)}),
    Bad("hotspots-top-not-a-number", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json"), "--top", "ten"],
        ["--top"],
        files={"f.json": json.dumps(GOOD_FRAME)}),
    Bad("hotspots-since", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json"), "--since", "1y"], ["--since"],
        files={"f.json": json.dumps(GOOD_FRAME)}),
    Bad("hotspots-svg-unwritable", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json"), "--svg",
                                                            str(tmp / "no" / "f.svg")],
        ["--svg", "f.svg"], files={"f.json": json.dumps(GOOD_FRAME)}),
    # --- policy pack config (offline.plan --policy-config) ----------------------------------------------------
    Bad("policy-all-bogus", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")], ["all:", '"bogus"'],
        files={"p.json": '{"all": "bogus"}'}),
    Bad("policy-all-level-not-a-string", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")], ["all:"],
        files={"p.json": '{"all": {"enforcementLevel": 1}}'}),
    Bad("policy-entry-not-string-or-object", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")],
        ["pyroscope-service-internal"], files={"p.json": '{"pyroscope-service-internal": 5}'}),
    Bad("policy-unknown-policy", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")], ["no-such-rule"],
        files={"p.json": '{"all": "advisory", "no-such-rule": "mandatory"}'}),
    Bad("policy-property-of-the-wrong-type", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")],
        ["required-tags.requiredTags"], files={"p.json": '{"required-tags": {"requiredTags": "costCenter"}}'}),
    Bad("policy-unknown-property", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")],
        ["required-tags", "'tagz'"],
        files={"p.json": '{"required-tags": {"tagz": ["a"]}}'}),
    Bad("policy-config-not-json", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")],
        ["--policy-config", "p.json"],
        files={"p.json": "{"}),
    Bad("policy-config-a-list", "plan", lambda tmp: ["--policy-config", str(tmp / "p.json")], ["p.json", "JSON object"],
        files={"p.json": "[]"}),
    Bad("policy-mode", "plan", ["--policy", "--policy-mode", "apply"], ["--policy-mode"]),
    # --- ops.verify / flamegraph.hotspots inputs -----------------------------------------------------------------
    Bad("verify-without-az", "verify", lambda tmp: ["--stack", "dev", "--outputs-file", str(tmp / "o.json")], [NO_AZ],
        files={"o.json": "@outputs"}, no_az=True),
    Bad("verify-drift-without-az", "verify", lambda tmp: ["--stack", "dev", "--drift", "--outputs-file",
                                                          str(tmp / "o.json")],
        [NO_AZ], files={"o.json": "@outputs"}, no_az=True),
    Bad("hotspots-without-az", "hotspots", lambda tmp: ["--stack", "dev", "--outputs-file", str(tmp / "o.json")],
        [NO_AZ],
        files={"o.json": "@outputs"}, no_az=True),
    Bad("verify-outputs-file-missing", "verify", lambda tmp: ["--stack", "dev", "--outputs-file", str(tmp / "o.json")],
        ["--outputs-file", "o.json"]),
    Bad("verify-outputs-not-an-object", "verify", lambda tmp: ["--stack", "dev", "--outputs-file", str(tmp / "o.json")],
        ["o.json", "JSON object"], files={"o.json": "[]"}),
    Bad("verify-drift-output-missing", "verify", lambda tmp: ["--stack", "dev", "--drift", "--outputs-file",
                                                              str(tmp / "o.json")],
        ["pyroscopeDatasource"], files={"o.json": '{"grafanaEndpoint": "https://g.example"}'}),
    Bad("verify-drift-output-not-an-object", "verify", lambda tmp: ["--stack", "dev", "--drift", "--outputs-file",
                                                                    str(tmp / "o.json")],
        ["prometheusDatasource"], files={"o.json": json.dumps({"grafanaEndpoint": "https://g.example",
                                                               "pyroscopeDatasource": {"uid": "p"},
           "prometheusDatasource": "azure-monitor-prometheus",
           "dashboardDefinition": {"uid": "d"}})}),
    Bad("verify-without-stack", "verify", ["--drift"], ["--stack"]),
    Bad("hotspots-namespace-not-a-name", "hotspots", lambda tmp: ["--stack", "dev", "--outputs-file",
                                                                  str(tmp / "o.json"),
             "--namespace", "["], ["--namespace", "regular expression", "'['"],
        files={"o.json": "@outputs"}),
    Bad("hotspots-namespace-upper-case", "hotspots", lambda tmp: ["--stack", "dev", "--outputs-file",
                                                                  str(tmp / "o.json"),
             "--namespace", "ML-Inference"], ["--namespace", "expected a namespace"],
        files={"o.json": "@outputs"}),
    Bad("hotspots-pod-filter-on-a-saved-file", "hotspots", lambda tmp: ["--from-file", str(tmp / "f.json"), "--pod",
                                                                        "vllm-0"],
        ["--pod", "--from-file"], files={"f.json": json.dumps(GOOD_FRAME)}),
]


def test_there_are_at_least_40_bad_inputs_and_each_is_named_once():
    assert len(CASES) >= 40
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def outputs_text():
    return json.dumps(program.run("dev").outputs)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_exits_2_with_one_line_naming_it_and_registers_nothing(case, tmp_path, monkeypatch, capsys,
                                                                         outputs_text):
    for name, text in case.files.items():
        (tmp_path / name).write_text(outputs_text if text == "@outputs" else text)
    args = case.args(tmp_path) if callable(case.args) else list(case.args)
    if case.python_flags is not None:  # as a shell runs it: a new interpreter, nothing registered before it stops
        done = subprocess.run([sys.executable, *case.python_flags, "-m", case.module, *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        lines = done.stderr.splitlines()
        assert done.returncode == 2, done.stderr
        assert done.stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
        for name in case.names:
            assert name in lines[0], (name, lines[0])
        return
    if case.stack_file is not None:
        (tmp_path / "Pulumi.t.yaml").write_text(case.stack_file)
        real = program.stack_file
        monkeypatch.setattr(program, "stack_file",
                            lambda name: tmp_path / "Pulumi.t.yaml" if name == "t" else real(name))
    if case.no_az:
        (tmp_path / "empty-bin").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    registered = []
    record = program.RecordingMonitor.RegisterResource

    def counting(self, request):
        registered.append(request.type)
        return record(self, request)

    monkeypatch.setattr(program.RecordingMonitor, "RegisterResource", counting)
    tool = {"plan": plan, "verify": verify, "hotspots": hotspots}[case.tool]
    monkeypatch.chdir(ROOT)
    try:
        code = tool.main(args)
    except SystemExit as stop:  # argparse's own exit: usage and message, status 2
        code = stop.code
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2, err
    assert out == "" and len(lines) == 1 and lines[0].startswith("error: "), err
    for name in case.names:
        assert name in lines[0], (name, lines[0])
    for text in case.absent:
        assert text not in lines[0], (text, lines[0])
    assert set(registered) <= {"pulumi:pulumi:Stack"}, registered


@pytest.mark.parametrize("argv", [["flamegraph.hotspots", "--from-file", "examples/flamegraph-frame.json", "--json"],
                                  ["offline.plan", "--stack", "dev", "--json"]])
def test_a_reader_that_goes_away_ends_the_tool_quietly(argv):
    """`python -m flamegraph.hotspots ... --json | head`: when the reader closes the pipe, the tool stops as a Unix tool
    killed by SIGPIPE does (status 141, nothing on stderr), not with a BrokenPipeError traceback."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        done = subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")
