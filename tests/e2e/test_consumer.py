"""examples/consumer under the real engine: another stack reads this stack's outputs through a real StackReference
(the same file backend), publishes them in a ConfigMap, and a secret output stays secret in its state."""

from __future__ import annotations

import json
import shutil

from tests.support import ROOT
from tests.support.real_engine import SECRET_SIG, Workspace

SECRET_UID = "gpu-pyroscope-private"


def test_a_consumer_reads_the_outputs_and_a_secret_stays_secret(aks, engine_tools, chart, tmp_path):
    producer = aks.workspace(tmp_path / "producer", engine_tools, chart)
    producer.init("dev", {"pyroscopeChart": chart.reference}, secrets={"pyroscopeDatasourceUid": SECRET_UID})
    producer.up("dev")
    assert producer.outputs("dev")["pyroscopeDatasourceUid"] == "[secret]"
    outputs = producer.outputs("dev", show_secrets=True)

    project = tmp_path / "consumer"
    shutil.copytree(ROOT / "examples" / "consumer", project)
    aks.cp.api().post(f"{aks.cp.server}/api/v1/namespaces", json={"metadata": {"name": "ml-inference"}},
                      timeout=10).raise_for_status()
    consumer = Workspace(tmp_path / "consumer-ws", engine_tools, aks.world_path, {
        "PULUMI_BACKEND_URL": producer.env["PULUMI_BACKEND_URL"], "KUBECONFIG": str(aks.cp.kubeconfig)},
        project=project)
    consumer.init("team", {"observabilityStack": "organization/aks-gpu-observability/dev"})
    consumer.up("team")

    config_map = aks.cp.get("/api/v1/namespaces/ml-inference/configmaps/gpu-observability")
    assert config_map["data"]["pyroscopeDatasourceUid"] == SECRET_UID
    assert config_map["data"]["dashboardUrl"] == outputs["dashboardUrl"]
    assert config_map["data"]["cluster"] == "aks-gpu-dev"
    assert consumer.outputs("team", show_secrets=True) == {"dashboardUrl": outputs["dashboardUrl"],
                                                           "configMap": "ml-inference/gpu-observability"}
    state = consumer.state("team")
    assert SECRET_UID not in json.dumps(state), "the secret output is in the consumer's state in plain text"
    links = next(r for r in state["resources"] if r["urn"].endswith("::gpu-observability-links"))
    assert SECRET_SIG in json.dumps(links["outputs"]["data"])
    consumer.destroy("team")
    producer.destroy("dev")
