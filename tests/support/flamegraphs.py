"""Flame graphs for the reader's tests: frames built from small trees, the vLLM example, the committed example files,
and the reader run as a command (from a file, or against the stand-in az with the dev stack's outputs)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

from flamegraph import formats
from flamegraph.analysis import report
from flamegraph.formats import find_frame, parse_frame
from offline.program import run
from tests.support import ROOT, fake_world
from tests.support.scenarios import fake_az_env

GB = 1024 ** 3  # Grafana's 'bytes' unit is binary: the panel and the report say GiB


def T(label, self=0, *children):
    return (label, self, list(children))


def frame(tree, enum=False, extra=False):
    """A Grafana flame-graph frame (nested-set order) for a (label, self, children) tree; value = total."""
    rows = []

    def walk(node, level):
        label, own, children = node
        index = len(rows)
        rows.append([level, 0, own, label])
        total = own + sum(walk(child, level + 1) for child in children)
        rows[index][1] = total
        return total

    walk(tree, 0)
    levels, values, selfs, labels = (list(c) for c in zip(*rows)) if rows else ([], [], [], [])
    label_field = {"name": "label", "type": "string"}
    if enum:
        text = sorted(set(labels))
        labels = [text.index(label) for label in labels]
        label_field = {"name": "label", "type": "enum", "config": {"type": {"enum": {"text": text}}}}
    fields = [{"name": "level", "type": "number"}, {"name": "value", "type": "number", "config": {"unit": "bytes"}},
              {"name": "self", "type": "number", "config": {"unit": "bytes"}}, label_field]
    values_out = [levels, values, selfs, labels]
    if extra:
        fields.append({"name": "fileName", "type": "string"})
        values_out.append(["x.py"] * len(levels))
    return {"schema": {"name": "response", "meta": {"preferredVisualisationType": "flamegraph"}, "fields": fields},
            "data": {"values": values_out}}


def response(tree, **kw):
    return {"results": {"A": {"status": 200, "frames": [frame(tree, **kw)]}}}


# The seed's vLLM engine: the KV cache allocation is 55.1 GB of self under the engine's start-up.
VLLM = T("total", 0,
    T("<module>", 0,
      T("main", 0,
        T("<interpreter trampoline>", 0,
          T("EngineCoreProc.run_engine_core", 0,
            T("EngineCore.__init__", 0,
              T("EngineCore._initialize_kv_caches", 0,
                T("Executor.initialize_from_config", 0,
                  T("<interpreter trampoline>", 0,
                    T("Worker.initialize_from_config", 0,
                      T("GPUModelRunner.initialize_kv_cache", 0,
                        T("GPUModelRunner._allocate_kv_cache_tensors", int(55.1 * GB),
                          T("0x7f3a9c2d1e40", 300_000_000))))))),
              T("Worker.load_model", 0,
                T("GPUModelRunner.load_model", 0,
                  T("DefaultModelLoader.load_weights", int(14.2 * GB)))),
              T("Worker.compile_or_warm_up_model", 0,
                T("CUDAGraphRunner.capture", int(1.3 * GB)))))))))


SEED_CHAIN = ["<module>", "main", "<interpreter trampoline>", "EngineCoreProc.run_engine_core", "EngineCore.__init__",
              "EngineCore._initialize_kv_caches", "Executor.initialize_from_config", "<interpreter trampoline>",
              "Worker.initialize_from_config", "GPUModelRunner.initialize_kv_cache",
              "GPUModelRunner._allocate_kv_cache_tensors"]


def result_of(tree, **kw):
    return report(parse_frame(frame(tree)), **kw)


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "flamegraph.hotspots", *args], cwd=ROOT, capture_output=True,
                          text=True,
                          timeout=120, env=env)


#: Grafana's answer to GET /api/datasources/uid/{uid}/resources/profileTypes: [{"id", "label"}], the label
#: "name - sample type" (grafana/grafana pkg/tsdb/grafana-pyroscope-datasource/pyroscopeClient.go ProfileType).
CPU_TYPE = {"id": "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "label": "process_cpu - cpu"}


DASHBOARD_TYPE = {"id": "process_cpu:malloc:bytes::", "label": "process_cpu - malloc"}


GADGET_054_TYPE = {"id": "process_cpu:malloc:bytes:process_cuda:bytes", "label": "process_cpu - malloc"}


def stack_rules(types=(DASHBOARD_TYPE,), tree=None):
    return [{"match": ["rest", "--method", "get", "/resources/profileTypes?start="],
             "responses": [{"json": list(types)}]},
            {"match": ["rest", "--method", "post", "/api/ds/query"], "responses": [{"json": response(tree or VLLM)}]}]


def stack_cli(tmp_path, *args, types=(DASHBOARD_TYPE,)):
    outputs = run("dev").outputs
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    done = cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), *args,
               env=fake_az_env(tmp_path, stack_rules(types)))
    return done, outputs


def stack_cli_against_pyroscope(tmp_path, flags, *args, types=(DASHBOARD_TYPE,)):
    """The reader's ``--stack dev`` query against the stand-in Grafana and a Pyroscope started with ``flags`` (its
    extra args), whose query frontend checks each range (tests/support/pyroscope_server.py)."""
    outputs = run("dev").outputs
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    world = {**fake_world.empty(), "pyroscope": {"flags": flags, "profile_types": list(types),
                                                 "query_response": response(VLLM)}}
    (tmp_path / "world.json").write_text(json.dumps(world))
    env = {**fake_az_env(tmp_path, []), "FAKE_AZ_WORLD": str(tmp_path / "world.json")}
    return cli("--stack", "dev", "--outputs-file", str(tmp_path / "outputs.json"), *args, env=env)


SVG = "{http://www.w3.org/2000/svg}"


EXAMPLE = ROOT / "examples" / "flamegraph-frame.json"


EXAMPLE_SVG = ROOT / "docs" / "flamegraph-example.svg"


EXAMPLE_TOP = 3  # docs/flamegraphs.md's command: --top 3 --svg docs/flamegraph-example.svg


def example_profile():
    return parse_frame(find_frame(json.loads(EXAMPLE.read_text(encoding="utf-8"))))


def drawn(document: bytes) -> list[dict]:
    """The frames of an SVG flame graph, in document order: title, x, y, width, fill, text (or None)."""
    frames = []
    for group in ET.fromstring(document).iter(f"{SVG}g"):
        if group.get("class") != "frame":
            continue
        rect, text = group.find(f"{SVG}rect"), group.find(f"{SVG}text")
        frames.append({"title": group.find(f"{SVG}title").text, "x": float(rect.get("x")), "y": float(rect.get("y")),
                       "width": float(rect.get("width")), "fill": rect.get("fill"),
                       "text": None if text is None else text.text})
    return frames


# Three stacks the node limit cut (16, 17 and 15 GiB, under three different callers) beside real allocators (30, 14).
TRUNCATED_TREE = T("total", 0,
    T("main", 0,
      T("Engine.load", 0, T("load_weights", 30 * GB), T("other", 16 * GB)),
      T("Engine.warm_up", 0, T("capture", 14 * GB), T("other", 17 * GB)),
      T("other", 15 * GB)))


EXAMPLE_PPROF = ROOT / "examples" / "flamegraph-profile.pb.gz"


EXAMPLE_RENDER = ROOT / "examples" / "flamegraph-render.json"


EXAMPLE_AFTER = ROOT / "examples" / "flamegraph-kv-halved.pb.gz"


EXAMPLE_DIFF_SVG = ROOT / "docs" / "flamegraph-diff.svg"


KV = "GPUModelRunner._allocate_kv_cache_tensors"


def kv_halved(profile):
    """The example with the KV-cache allocation halved (``--gpu-memory-utilization`` lowered): its self halves and
    every caller's total drops by as much."""
    for node in profile.nodes:
        if node.label == KV and node.self:
            cut = node.self - node.self // 2
            node.self -= cut
            while node is not None:
                node.value -= cut
                node = node.parent
    return profile


def gzip_payload(path):
    return formats.decode(path.read_bytes())


def pprof_with(sample_type):
    pb = formats._pb2()
    message = pb.Profile(string_table=["", *sample_type, "f"])
    message.sample_type.add(type=1, unit=2)
    message.function.add(id=1, name=3)
    message.location.add(id=1).line.add(function_id=1)
    message.sample.add(location_id=[1], value=[5])
    return message.SerializeToString()


def query_through_az_rest(tmp_path):
    """The reader's ``--stack`` query as a user runs it (a namespace, a pod regex, 30 minutes, JSON) against the
    stand-in az: (the finished command, the stack's outputs); its az calls are in ``calls_in(tmp_path)``."""
    done, outputs = stack_cli(tmp_path, "--namespace", "ml-inference", "--pod", "vllm-.*", "--since", "30m", "--json",
                              types=(CPU_TYPE, DASHBOARD_TYPE))
    assert done.returncode == 0, done.stderr
    return done, outputs


def pprof_of(samples, drop="", keep=""):
    """A pprof profile (alloc_space:bytes) of ``samples``: [(stack, value)], a stack leaf first, each location a
    list of functions, the inlined ones first (pprof's order), each a name or a (name, system name) pair;
    ``drop``/``keep``: its ``drop_frames``/``keep_frames``."""
    pb = formats._pb2()
    strings = ["", "alloc_space", "bytes"]

    def string(text):
        if text not in strings:
            strings.append(text)
        return strings.index(text)

    message = pb.Profile()
    message.sample_type.add(type=1, unit=2)
    functions, locations = {}, {}
    for stack, value in samples:
        ids = []
        for frames in stack:
            key = tuple(frames)
            if key not in locations:
                location = message.location.add(id=len(locations) + 1)
                for frame in frames:
                    name, system = frame if isinstance(frame, tuple) else (frame, "")
                    if frame not in functions:
                        functions[frame] = len(functions) + 1
                        message.function.add(id=functions[frame], name=string(name) if name else 0,
                                             system_name=string(system) if system else 0)
                    location.line.add(function_id=functions[frame])
                locations[key] = location.id
            ids.append(locations[key])
        message.sample.add(location_id=ids, value=[value])
    message.drop_frames, message.keep_frames = string(drop) if drop else 0, string(keep) if keep else 0
    message.string_table.extend(strings)
    return message.SerializeToString()
