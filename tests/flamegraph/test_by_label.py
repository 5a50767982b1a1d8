"""flamegraph.by_label and ``--by``: the report per pod (namespace, container, node) from Pyroscope's label API."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from flamegraph import by_label
from flamegraph.model import FrameError
from offline.program import run
from tests.support.flamegraphs import GB, KV, VLLM, T, cli, drawn, response
from tests.support.scenarios import calls_in, fake_az_env

TYPE = "process_cpu:malloc:bytes::"
# A second, smaller inference pod on the same node: its KV cache at a lower --gpu-memory-utilization.
SMALL = T("total", 0, T("main", 0, T(KV, 20 * GB), T("DefaultModelLoader.load_weights", 7 * GB)))
# A sidecar that allocates little, all of it under one function.
SIDECAR = T("total", 0, T("main", 0, T("torch.cuda.init", GB // 2)))
NONE = T("total", 0)  # what the query for the samples without the label answers when every sample has one


# Grafana's labelNames leaves out the names its selector matches on (instance.go ``labelNames``): here
# __profile_type__, k8s_namespace and k8s_podName.
def by_cli(tmp_path, *args, values=("vllm-0", "vllm-1", "metrics-agent"), trees=(VLLM, SMALL, SIDECAR, NONE),
           names=("k8s_node", "service_name"), fail_values=False):
    outputs = run("dev").outputs
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    rules = [{"match": ["rest", "--method", "get", "/resources/profileTypes?start="],
              "responses": [{"json": [{"id": TYPE, "label": "process_cpu - malloc"}]}]},
             {"match": ["rest", "--method", "get", "/resources/labelValues?"],
              "responses": [{"stderr": "ERROR: Failed to establish a new connection: [Errno 111] Connection refused",
                             "exit": 1} if fail_values else {"json": list(values)}]},
             {"match": ["rest", "--method", "get", "/resources/labelNames?"], "responses": [{"json": list(names)}]},
             {"match": ["rest", "--method", "post", "/api/ds/query"],
              "responses": [{"json": response(tree)} for tree in trees]}]
    done = cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), "--namespace", "ml-inference",
               *args, env=fake_az_env(tmp_path, rules))
    return done, outputs


def url_of(call):
    return call["argv"][call["argv"].index("--url") + 1]


def test_by_pod_reads_each_pods_profile_and_ranks_the_widest_first(tmp_path):
    done, outputs = by_cli(tmp_path, "--by", "pod", "--json", "--top", "2")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["by"], result["label"], result["profileType"]) == ("pod", "k8s_podName", TYPE)
    assert [v["value"] for v in result["values"]] == ["vllm-0", "vllm-1", "metrics-agent"]
    first, second, third = result["values"]
    assert first["topSelf"][0]["function"] == KV and first["topSelf"][0]["self"] == int(55.1 * GB)
    assert [e["function"] for e in second["topSelf"]] == [KV, "DefaultModelLoader.load_weights"]
    assert second["topSelf"][0]["selfPercent"] == round(100 * 20 / 27, 2)  # of this pod's own total
    assert third["total"] == GB // 2 and third["orchestrators"] == ["main"]
    types, values, *queries = calls_in(tmp_path)
    # The label API first: the pods holding this profile type under the query's namespace and pod, over its range.
    asked = parse_qs(urlsplit(url_of(values)).query)
    assert url_of(values).startswith(f"{outputs['grafanaEndpoint']}/api/datasources/uid/local-pyroscope"
                                     "/resources/labelValues?")
    assert asked["label"] == ["k8s_podName"]
    # Only the matchers the user gave beside the type: Grafana's labelNames would leave out every label named.
    assert asked["query"] == [f'{{__profile_type__="{TYPE}",k8s_namespace=~"ml-inference"}}']
    assert int(asked["end"][0]) - int(asked["start"][0]) == 3600 * 1000
    # Then one flame graph per pod, the pod matched exactly, and one of the samples without the label (none here).
    assert [q["body"]["queries"][0]["labelSelector"] for q in queries] == [
        f'{{k8s_namespace=~"ml-inference",k8s_podName=~".*",k8s_podName="{pod}"}}'
        for pod in ("vllm-0", "vllm-1", "metrics-agent", "")]


def test_by_pod_text_names_each_pod_its_share_and_its_allocators(tmp_path):
    done, _ = by_cli(tmp_path, "--by", "pod", "--top", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "GPU memory allocations by pod (k8s_podName): 3 values, 98.4 GiB in all"
    vllm = lines.index("pod vllm-0: 70.9 GiB (72.0 %)")
    assert lines[vllm + 1].startswith(f"   1. {KV}  self 55.1 GiB (77.7 % of this pod's), total 55.4 GiB")
    assert "pod vllm-1: 27.0 GiB (27.4 %)" in lines and "pod metrics-agent: 512.0 MiB (0.5 %)" in lines
    assert lines[-1] == "One pod's whole report (chains, totals, orchestrators, a --svg picture): --by pod=VALUE."


def test_one_value_gets_the_whole_report_and_the_picture(tmp_path):
    out = tmp_path / "vllm-1.svg"
    done, _ = by_cli(tmp_path, "--by", "pod=vllm-1", "--svg", str(out), trees=(SMALL,))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GPU memory allocations of pod vllm-1: 27.0 GiB in all")
    assert "main -> GPUModelRunner._allocate_kv_cache_tensors" in done.stdout  # its chain
    assert len(drawn(out.read_bytes())) == 4  # total, main and its two callees
    queries = [c for c in calls_in(tmp_path) if "/api/ds/query" in url_of(c)]
    assert [q["body"]["queries"][0]["labelSelector"] for q in queries] == [
        '{k8s_namespace=~"ml-inference",k8s_podName=~".*",k8s_podName="vllm-1"}']


def test_by_node_and_container_use_the_exporters_labels(tmp_path):
    for name, label in (("node", "k8s_node"), ("container", "k8s_containerName"), ("process", "proc_comm")):
        (tmp_path / name).mkdir()
        done, _ = by_cli(tmp_path / name, "--by", name, "--json", values=("x",), trees=(SMALL, NONE))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["label"] == label
        assert parse_qs(urlsplit(url_of(calls_in(tmp_path / name)[1])).query)["label"] == [label]


@pytest.mark.parametrize("args, kwargs, message", [
    (["--by", "gpu"], {}, "error: --by: expected pod, namespace, container, node, process, optionally =VALUE such "
                          "as pod=vllm-0 (got 'gpu')"),
    (["--by", "pod="], {}, "error: --by: expected pod, namespace, container, node, process, optionally =VALUE such "
                           "as pod=vllm-0 (got 'pod=')"),
    (["--by", "container"], {"values": ()},
     f"error: --by container: no {TYPE} sample in the last 1h carries the label k8s_containerName (they carry: "
     "k8s_node, service_name; the gadget exports only the fields its run annotates profiles.sample-attribute; try "
     "--by node)"),
    (["--by", "pod"], {"values": (), "names": ("proc_comm", "service_name")},
     f"error: --by pod: no {TYPE} sample in the last 1h carries the label k8s_podName (they carry: proc_comm, "
     "service_name; the gadget exports only the fields its run annotates profiles.sample-attribute; try --by "
     "process)"),
    (["--by", "node"], {"values": (), "names": ()},
     f"error: --by node: no {TYPE} sample in the last 1h carries the label k8s_node (they carry: none; is a GPU "
     "workload running there?)"),
    (["--by", "pod=vllm-7"], {}, f"error: --by pod=vllm-7: Pyroscope holds no {TYPE} for k8s_podName=vllm-7 in the "
                                 "last 1h (it holds: metrics-agent, vllm-0, vllm-1)"),
    (["--by", "pod"], {"values": [f"pod-{i}" for i in range(51)]},
     "error: --by pod: 51 values, more than the 50 read one query each; narrow it with --namespace or --pod, or read "
     "one: --by pod=VALUE"),
    (["--by", "pod"], {"fail_values": True},
     "error: querying Grafana failed: ERROR: Failed to establish a new connection: [Errno 111] Connection refused"),
    (["--by", "pod", "--svg", "x.svg"], {}, "error: --svg: draws one profile; with --by, name one value: "
                                            "--by pod=VALUE"),
    (["--by", "pod", "--baseline", "2h..1h"], {}, "error: --baseline: compares one profile with another; --by reads "
                                                  "one per value (compare one pod's ranges with --pod NAME --baseline "
                                                  "FROM..TO)"),
])
def test_bad_by_input_is_one_line_exit_2(tmp_path, args, kwargs, message):
    done, _ = by_cli(tmp_path, *args, **kwargs)
    assert (done.returncode, done.stderr.strip(), done.stdout) == (2, message, "")


def test_by_is_for_stack_only(tmp_path):
    done = cli("--from-file", str(tmp_path / "none.json"), "--by", "pod")
    assert done.returncode == 2
    assert done.stderr == ("error: --by: needs --stack (it asks Pyroscope's label API for each value's profile); a "
                           "--from-file profile holds every value merged\n")


def test_parse():
    assert by_label.parse("pod") == ("pod", None)
    assert by_label.parse("node=aks-gpu-0") == ("node", "aks-gpu-0")
    assert by_label.parse("pod=a=b") == ("pod", "a=b")
    with pytest.raises(FrameError):
        by_label.parse("Pod")


def test_the_flamegraphs_page_shows_the_tools_output_for_by_pod(tmp_path):
    """docs/flamegraphs.md's ``--by pod`` example is what the command prints for the seed's vLLM example (pod
    vllm-0) beside a smaller replica and a sidecar."""
    from tests.support import ROOT
    from tests.support.flamegraphs import EXAMPLE

    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    rules = [{"match": ["rest", "--method", "get", "/resources/profileTypes?start="],
              "responses": [{"json": [{"id": TYPE, "label": "process_cpu - malloc"}]}]},
             {"match": ["rest", "--method", "get", "/resources/labelValues?"],
              "responses": [{"json": ["vllm-0", "vllm-1", "metrics-agent"]}]},
             {"match": ["rest", "--method", "post", "/api/ds/query"],
              "responses": [{"json": example}, {"json": response(SMALL)}, {"json": response(SIDECAR)},
                            {"json": response(NONE)}]}]
    (tmp_path / "outputs.json").write_text(json.dumps(run("dev").outputs))
    done = cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), "--namespace", "ml-inference",
               "--by", "pod", "--top", "2", "--hide-trampolines", env=fake_az_env(tmp_path, rules))
    assert done.returncode == 0, done.stderr
    page = (ROOT / "docs" / "flamegraphs.md").read_text(encoding="utf-8")
    shown = page.split("--by pod --top 2 --hide-trampolines` prints:\n\n```text\n", 1)[1].split("\n```", 1)[0]
    assert shown == done.stdout.rstrip("\n")


def test_memory_of_samples_without_the_label_is_a_row_of_its_own(tmp_path):
    """A host process's samples carry no pod label (Pyroscope drops empty attributes): LABEL="" reads them, so the
    total in all is the whole profile's."""
    done, _ = by_cli(tmp_path, "--by", "pod", "--json", values=("vllm-0",), trees=(VLLM, SIDECAR))
    assert done.returncode == 0, done.stderr
    values = json.loads(done.stdout)["values"]
    vllm = int(55.1 * GB) + 300_000_000 + int(14.2 * GB) + int(1.3 * GB)
    assert [(v["value"], v["total"]) for v in values] == [("vllm-0", vllm), ("", GB // 2)]
    text, _ = by_cli(tmp_path, "--by", "pod", values=("vllm-0",), trees=(VLLM, SIDECAR))
    assert "pod (no label): 512.0 MiB (0.7 %)" in text.stdout.splitlines()
