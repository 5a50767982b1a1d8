"""flamegraph.formats: Grafana's frame, Pyroscope's render JSON and pprof read into one model, and written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from flamegraph import formats
from flamegraph.analysis import report
from flamegraph.formats import find_frame, parse_frame
from flamegraph.model import FrameError
from tests.support.flamegraphs import (
    EXAMPLE,
    EXAMPLE_AFTER,
    EXAMPLE_PPROF,
    EXAMPLE_RENDER,
    VLLM,
    T,
    cli,
    example_profile,
    frame,
    gzip_payload,
    kv_halved,
    pprof_of,
    result_of,
)


def test_enum_labels_and_extra_fields():
    parsed = parse_frame(frame(VLLM, enum=True, extra=True))
    assert report(parsed) == result_of(VLLM)


@pytest.mark.parametrize("mutate,message", [
    (lambda f: f["data"]["values"][0].__setitem__(2, 3), "levels may only go one deeper"),
    (lambda f: f["data"]["values"][1].pop(), "field lengths differ"),
    (lambda f: f["data"]["values"][2].__setitem__(1, -1), "negative value or self"),
    (lambda f: f["data"]["values"][0].__setitem__(0, 1), "the first row must be the root"),
    (lambda f: f["schema"]["fields"].pop(2), "the frame has no field 'self'"),
    (lambda f: f["data"]["values"][1].__setitem__(1, float("inf")), "must be whole numbers"),
    (lambda f: f["data"]["values"][2].__setitem__(2, 2.5), "must be whole numbers"),
    (lambda f: f["data"]["values"][2].__setitem__(2, True), "must be whole numbers"),
])
def test_malformed_frames_are_rejected(mutate, message):
    bad = frame(T("total", 0, T("main", 0, T("alloc", 5))))
    mutate(bad)
    with pytest.raises(FrameError, match=message):
        parse_frame(bad)


def test_enum_out_of_range_is_rejected():
    bad = frame(T("total", 0, T("main", 1)), enum=True)
    bad["data"]["values"][3][1] = 9
    with pytest.raises(FrameError, match="outside config.type.enum.text"):
        parse_frame(bad)


def test_grafana_error_in_the_response():
    with pytest.raises(FrameError, match="Grafana answered with an error: plugin unavailable"):
        find_frame({"results": {"A": {"error": "plugin unavailable", "status": 500}}})


def test_committed_examples_are_the_frame_in_the_other_formats():
    """examples/: the same profile as pprof and as render JSON, written with the real protobuf library; and the
    KV-halved 'after' profile. Regenerate with the expressions below when this fails."""
    assert gzip_payload(EXAMPLE_PPROF) == formats.decode(formats.to_pprof(example_profile()))
    assert json.loads(EXAMPLE_RENDER.read_text()) == formats.to_render(example_profile())
    assert gzip_payload(EXAMPLE_AFTER) == formats.decode(formats.to_pprof(kv_halved(example_profile())))


@pytest.mark.parametrize("path", [EXAMPLE, EXAMPLE_PPROF, EXAMPLE_RENDER], ids=["frame", "pprof", "render"])
def test_the_same_report_from_each_format(path):
    expected = report(example_profile(), 5)
    profile, kind = formats.load(path.read_bytes())
    assert kind == {EXAMPLE: "frame", EXAMPLE_PPROF: "pprof", EXAMPLE_RENDER: "render"}[path]
    assert report(profile, 5) == expected
    assert [(n.label, n.level, n.value, n.self) for n in profile.nodes] == [
        (n.label, n.level, n.value, n.self) for n in example_profile().nodes]
    done = cli("--from-file", str(path), "--top", "2", "--hide-trampolines")
    assert done.returncode == 0 and done.stdout == cli("--from-file", str(EXAMPLE), "--top", "2",
                                                       "--hide-trampolines").stdout


def test_pprof_read_as_the_library_writes_it():
    """Built here with the protobuf classes directly: shared stacks add up, inlined lines expand caller first, a
    location without lines is its address as pprof prints it, sample types and units as declared, the GPU-memory
    type by default."""
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "alloc_objects", "count", "malloc", "bytes", "main", "alloc", "inlined"])
    message.sample_type.add(type=1, unit=2)
    message.sample_type.add(type=3, unit=4)
    message.function.add(id=1, name=5)
    message.function.add(id=2, name=6)
    message.function.add(id=3, name=7)
    message.location.add(id=10).line.add(function_id=1)
    loc = message.location.add(id=20)
    loc.line.add(function_id=3)  # inlined into alloc: listed first
    loc.line.add(function_id=2)
    message.location.add(id=30, address=0x7F3A9C2D1E40)
    message.sample.add(location_id=[20, 10], value=[1, 100])
    message.sample.add(location_id=[20, 10], value=[2, 50])
    message.sample.add(location_id=[30, 20, 10], value=[1, 7])
    data = message.SerializeToString()
    profile, _ = formats.load(data)
    assert profile.unit == "bytes" and profile.sample_type == "malloc:bytes"
    assert [(n.label, n.level, n.value, n.self) for n in profile.nodes] == [
        ("total", 0, 157, 0), ("main", 1, 157, 0), ("alloc", 2, 157, 0), ("inlined", 3, 157, 150),
        ("00007f3a9c2d1e40 <unknown>", 4, 7, 7)]
    counts, _ = formats.load(data, "alloc_objects")
    assert counts.unit == "count" and counts.total == 4 and counts.sample_type == "alloc_objects:count"
    assert formats.load(data, "alloc_objects:count")[0].total == 4
    with pytest.raises(FrameError,
                       match="--sample-type inuse_space: the profile declares alloc_objects:count, malloc:bytes"):
        formats.load(data, "inuse_space")
    message.sample_type[1].type = 1  # two count types, neither the GPU-memory one: the reader asks
    message.sample_type[1].unit = 2
    with pytest.raises(FrameError, match="pick one of alloc_objects:count, alloc_objects:count with --sample-type"):
        formats.load(message.SerializeToString())


def _inlined_profile():
    """profile.proto's own example, memcpy inlined into printf, in a location two stacks share under main."""
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "malloc", "bytes", "main", "printf", "memcpy", "log"])
    message.sample_type.add(type=1, unit=2)
    for function_id, name in ((1, 3), (2, 4), (3, 5), (4, 6)):
        message.function.add(id=function_id, name=name)
    message.location.add(id=1).line.add(function_id=1)
    inlined = message.location.add(id=2)
    inlined.line.add(function_id=3)  # line[0]: memcpy, inlined into
    inlined.line.add(function_id=2)  # line[1]: printf, "the last entry represents the caller"
    message.location.add(id=3).line.add(function_id=4)
    message.sample.add(location_id=[2, 1], value=[64])
    message.sample.add(location_id=[3, 2, 1], value=[8])
    return message.SerializeToString()


def test_inlined_frames_come_caller_first():
    """A location's lines are inlined callees first, their caller last (profile.proto): the tree has printf above
    memcpy, as pprof's flame graph stacks them, and a callee of the location hangs under memcpy, the innermost."""
    profile, _ = formats.load(_inlined_profile())
    assert [(n.label, n.level, n.value, n.self) for n in profile.nodes] == [
        ("total", 0, 72, 0), ("main", 1, 72, 0), ("printf", 2, 72, 0), ("memcpy", 3, 72, 64), ("log", 4, 8, 8)]
    assert report(profile)["topSelf"][0]["stack"] == ["main", "printf", "memcpy"]


def _nameless(function=None, address=0, mapping=None):
    """A one-frame profile: a location at ``address`` in ``mapping`` (a file name) with ``function`` (name, system
    name) as its one line, or no line when None."""
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "malloc", "bytes", *(function or ()), *([mapping] if mapping else [])])
    message.sample_type.add(type=1, unit=2)
    location = message.location.add(id=1, address=address)
    if mapping:
        message.mapping.add(id=7, filename=len(message.string_table) - 1)
        location.mapping_id = 7
    if function is not None:
        message.function.add(id=1, name=3 if function[0] else 0, system_name=4 if function[1] else 0)
        location.line.add(function_id=1)
    message.sample.add(location_id=[1], value=[5])
    return formats.load(message.SerializeToString())[0].nodes[1].label


def test_a_function_without_a_name_is_named_as_pprof_names_it():
    """Other exporters leave a function's name empty; pprof prints its system name, else the address in 16 hex
    digits with the binary's base name, or <unknown> (internal/graph/graph.go NameComponents), never a blank."""
    assert _nameless(("", "_ZN4cuda6mallocEm")) == "_ZN4cuda6mallocEm"
    assert _nameless(("cuMemAlloc", "_cuMemAlloc"), address=0x7F3A9C2D1E40) == "cuMemAlloc"
    assert _nameless(("", ""), address=0x7F3A9C2D1E40, mapping="/usr/lib/libcuda.so.1") == \
        "00007f3a9c2d1e40 [libcuda.so.1]"
    assert _nameless(("", ""), address=0x1000) == "0000000000001000 <unknown>"
    assert _nameless(("", ""), mapping="/opt/bin/") == "[bin]"
    assert _nameless(("", "")) == "<unknown>"
    assert _nameless(None, address=0x7F3A9C2D1E40, mapping="libcudart.so") == "00007f3a9c2d1e40 [libcudart.so]"
    assert formats.printable_name("", "", 0, "/") == "[/]"  # Go's filepath.Base("/")


def _typed(types, default=0, values=None):
    """A one-frame profile declaring ``types`` ((type, unit) pairs) and default_sample_type ``default`` (an index
    into its string table)."""
    pb = formats._pb2()
    strings = ["", "f"]
    for pair in types:
        strings += [text for text in pair if text not in strings]
    message = pb.Profile(string_table=strings, default_sample_type=default)
    for kind, unit in types:
        message.sample_type.add(type=strings.index(kind), unit=strings.index(unit))
    message.function.add(id=1, name=1)
    message.location.add(id=1).line.add(function_id=1)
    message.sample.add(location_id=[1], value=values or list(range(1, len(types) + 1)))
    return message.SerializeToString(), strings


def test_default_sample_type_is_read_without_the_gpu_memory_one():
    """"Index into the string table of the type of the preferred sample value" (profile.proto): a type name, matched
    as pprof's SampleIndexByName matches it; read when there is no malloc:bytes, and said so."""
    data, strings = _typed([("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_space", "bytes")])
    with pytest.raises(FrameError, match="and no default_sample_type; pick one of alloc_objects:count, "):
        formats.load(data)
    data, _ = _typed([("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_space", "bytes")],
                     strings.index("alloc_space"))
    profile = formats.load(data)[0]
    assert (profile.sample_type, profile.total, profile.default_sample_type) == ("alloc_space:bytes", 2, True)
    flagged = formats.load(data, "inuse_space")[0]
    assert flagged.total == 3 and not flagged.default_sample_type
    data, strings = _typed([("alloc_space", "bytes"), ("malloc", "bytes")])
    data, _ = _typed([("alloc_space", "bytes"), ("malloc", "bytes")], strings.index("alloc_space"))
    gpu = formats.load(data)[0]  # the GPU-memory type comes first
    assert (gpu.sample_type, gpu.total, gpu.default_sample_type) == ("malloc:bytes", 2, False)
    data, _ = _typed([("alloc_space", "bytes"), ("inuse_space", "bytes")], strings.index("f"))  # names no type
    with pytest.raises(FrameError, match="no default_sample_type; pick one of"):
        formats.load(data)
    data, _ = _typed([("alloc_space", "bytes"), ("inuse_space", "bytes")], 99)
    with pytest.raises(FrameError, match=r"^not a pprof profile: default_sample_type points outside string_table"):
        formats.load(data)


def test_render_json_as_pyroscope_lays_it_out():
    """Offsets delta-encoded per level, a node's callees after its self (pkg/model/flamegraph.go)."""
    tree = T("total", 0, T("main", 2, T("a", 3), T("b", 5)))
    document = formats.to_render(parse_frame(frame(tree)))
    assert document["flamebearer"] == {"names": ["total", "main", "a", "b"], "numTicks": 10, "maxSelf": 5,
                                       "levels": [[0, 10, 0, 0], [0, 10, 2, 1], [2, 3, 3, 2, 0, 5, 5, 3]]}
    assert document["metadata"]["format"] == "single" and document["metadata"]["units"] == "bytes"
    back = formats.from_render(document)
    assert [(n.label, n.level, n.value, n.self) for n in back.nodes] == [
        ("total", 0, 10, 0), ("main", 1, 10, 2), ("a", 2, 3, 3), ("b", 2, 5, 5)]


@pytest.mark.parametrize("content,message", [
    (lambda: formats.to_pprof(example_profile())[:200], "the gzip stream ends early (a truncated download?)"),
    (lambda: b"\x1f\x8b" + b"\x00" * 40, "not a valid gzip stream"),
    (lambda: b"\xff\xff\xff\xff garbage", "not a pprof profile (protobuf: Error parsing message"),
    (lambda: b"\x0a\x03abc", "not a pprof profile (protobuf:"),
    (lambda: b"", "empty file: expected a Grafana frame, a Pyroscope render JSON or a pprof profile"),
    (lambda: formats.gzip.compress(b""), "empty profile: no sample types and no samples"),
    (lambda: formats._pb2().Profile(string_table=["x"], sample_type=[{"type": 0, "unit": 0}]).SerializeToString(),
     "string_table must start with the empty string"),
    (lambda: json.dumps({"flamebearer": {"names": ["total"], "levels": [[0, 1, 1, 0]]},
                         "metadata": {"format": "double"}}).encode(), "render format 'double'"),
    (lambda: json.dumps({"flamebearer": {"names": ["total", "a"], "levels": [[0, 5, 0, 0], [3, 5, 5, 1]]},
                         "metadata": {"format": "single"}}).encode(), "under no node of level 0"),
])
def test_bad_files_are_one_line(tmp_path, content, message):
    path = tmp_path / "profile.pb.gz"
    path.write_bytes(content())
    done = cli("--from-file", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {path}: ")
    assert message in done.stderr, done.stderr


def test_pprof_outside_the_venv_is_one_line(monkeypatch):
    """Without the protobuf package (the system python, not the project's venv) a pprof file is one line."""
    import builtins

    real_import = builtins.__import__

    def no_protobuf(name, *args, **kwargs):
        if name.startswith("google.protobuf") or name == "flamegraph.pprof" or name.startswith("flamegraph.pprof."):
            raise ImportError(f"No module named {name.split('.')[0]!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_protobuf)
    monkeypatch.delitem(sys.modules, "flamegraph.pprof.profile_pb2", raising=False)
    with pytest.raises(FrameError, match=r"^reading pprof needs the protobuf package .*: run in the project's venv"):
        formats._pb2()


def _go_pprof_top(path):
    """``go tool pprof -top``'s flat and cum per function, the real pprof (Go's toolchain vendors google/pprof)."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not on PATH: the drop_frames tests compare with `go tool pprof` (Go 1.26, README)")
    out = subprocess.run([go, "tool", "pprof", "-top", str(path)], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    rows = out.split("cum%\n", 1)[1].splitlines()
    parsed = {}
    for row in rows:
        flat, _, _, cum, _, name = row.split(None, 5)
        parsed[name] = (int(flat.rstrip("B")), int(cum.rstrip("B")))
    return parsed


@pytest.mark.parametrize("samples,drop,keep", [
    ([([["alloc"], ["main"]], 100)], "alloc", ""),
    ([([["alloc", "helper"], ["main"]], 100)], "alloc", ""),  # dropped where it is inlined: its caller stays
    ([([["malloc"], ["main"]], 60), ([["calloc"], ["work"], ["main"]], 40)], "malloc|calloc", "calloc"),
    ([([["alloc"], ["main"]], 100)], "main", ""),  # a root frame is never dropped before a user frame
    ([([["Foo::Bar(int)"], ["Foo::Run()"], ["main"]], 7), ([["(anonymous namespace)::Baz"], ["main"]], 5)],
     "Foo::Bar|\\(anonymous namespace\\)::Baz", ""),  # pprof's simplified names: arguments off, reserved names kept
    ([([["runtime.mallocgc"], ["alloc"], ["main"]], 9)], "(", ""),  # pprof ignores a regex it cannot compile
    # RE2, Go's regexp syntax, not Python's: flags mid-pattern, \z, \Q..\E, POSIX classes; a lookahead never compiles.
    ([([["ALLOC"], ["main"]], 4)], "x|(?i)alloc", ""),
    ([([["alloc"], ["main"]], 4)], "alloc\\z", ""),
    ([([["a.b"], ["main"]], 4)], "\\Qa.b\\E", ""),
    ([([["alloc"], ["main"]], 4)], "[[:alpha:]]+", ""),
    ([([["alloc"], ["main"]], 4)], "al(?=loc)loc", ""),
])
def test_drop_frames_are_applied_as_pprof_applies_them(tmp_path, samples, drop, keep):
    """google/pprof#976 (``-all_frames``): pprof honours a profile's ``drop_frames`` and ``keep_frames`` by default
    (``internal/driver/fetch.go`` ``RemoveUninteresting``). A file that declares ``drop_frames=alloc`` was read as
    "alloc self 100 %" where ``go tool pprof`` says ``main``; the reader's self and total per function now equal the
    real pprof's, and ``--all-frames`` reads every frame (pprof's ``-all_frames``)."""
    path = tmp_path / "declared.pb"
    path.write_bytes(pprof_of(samples, drop, keep))
    profile = formats.read_file(str(path), None)
    ours = {name: (own, total) for name, own, total in _per_function(profile)}
    assert ours == _go_pprof_top(path)
    assert bool(profile.pruned) is (drop not in ("(", "al(?=loc)loc"))
    every = formats.read_file(str(path), None, all_frames=True)
    assert not every.pruned
    leaves = {stack[0][0] for stack, _ in samples}
    assert {name for name, own, _ in _per_function(every) if own} == leaves


def _per_function(profile):
    """(function, self, total) per function name, totals counted once per stack as pprof's cum is."""
    own, total = {}, {}
    for node in profile.nodes[1:]:
        own[node.label] = own.get(node.label, 0) + node.self
        ancestors, up = set(), node.parent
        while up is not None and up.parent is not None:
            ancestors.add(up.label)
            up = up.parent
        if node.label not in ancestors:
            total[node.label] = total.get(node.label, 0) + node.value
    return [(name, own[name], total[name]) for name in own]


def test_the_report_says_which_frames_the_file_dropped(tmp_path):
    path = tmp_path / "declared.pb"
    path.write_bytes(pprof_of([([["alloc"], ["main"]], 100)], "alloc"))
    text = cli("--from-file", str(path), "--top", "1").stdout
    assert text.startswith("Profile alloc_space:bytes, without the frames its drop_frames=alloc drops (--all-frames "
                           "keeps them)")
    assert "1. main  self 100 B (100.0 %)" in text
    assert json.loads(cli("--from-file", str(path), "--json").stdout)["prunedBy"] == "drop_frames=alloc"
    assert "1. alloc  self 100 B" in cli("--from-file", str(path), "--all-frames").stdout


def test_a_truncated_gzip_profile_is_one_frame_error_not_an_eof_error():
    """vitali87/code-graph-rag#1266: gzip.decompress raises EOFError (not OSError) on a .pb.gz cut short, which a
    reader catching only OSError lets out as a traceback. decode() turns it into one FrameError line, "the gzip stream
    ends early"."""
    whole = formats.to_pprof(example_profile())
    for cut in (len(whole) - 1, len(whole) // 2, 12):
        with pytest.raises(EOFError):
            formats.gzip.decompress(whole[:cut])
        with pytest.raises(FrameError) as caught:
            formats.decode(whole[:cut])
        assert str(caught.value) == "the gzip stream ends early (a truncated download?)"
        assert caught.value.__suppress_context__ and "\n" not in str(caught.value)


def test_the_vendored_gencode_imports_cleanly_under_the_locked_runtime_and_a_version_error_is_one_line(monkeypatch):
    """a2aproject/a2a-python#185: protobuf gencode newer than the installed runtime raises VersionError when it is
    imported. flamegraph/pprof/profile_pb2.py is protoc 29 (5.29.0) gencode and the runtime is pinned >=5.29,<6: under
    the locked runtime it imports with warnings as errors; with an older runtime (5.26 to 5.28, which have the version
    check) its VersionError must reach the user as one FrameError line, as a missing protobuf does."""
    import re

    from google.protobuf import __version__ as installed
    from google.protobuf import runtime_version

    from tests.support import ROOT

    locked = re.search(r"^protobuf==([\d.]+) ", (ROOT / "requirements.lock").read_text(), re.M).group(1)
    assert installed == locked
    assert "# Protobuf Python Version: 5.29.0" in (ROOT / "flamegraph" / "pprof" / "profile_pb2.py").read_text()
    done = subprocess.run([sys.executable, "-W", "error", "-c", "import flamegraph.pprof.profile_pb2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == done.stderr == "", done.stderr

    import flamegraph.pprof

    monkeypatch.setattr(runtime_version, "MINOR", 28)  # a 5.28 runtime, older than the 5.29.0 gencode
    monkeypatch.delitem(sys.modules, "flamegraph.pprof.profile_pb2", raising=False)
    monkeypatch.delattr(flamegraph.pprof, "profile_pb2", raising=False)
    with pytest.raises(FrameError, match="protobuf") as caught:
        formats._pb2()
    assert "\n" not in str(caught.value)


def test_a_sample_whose_stack_was_lost_is_counted_at_the_root_and_never_ranked():
    """inspektor-gadget/inspektor-gadget#5222: profile_cuda can export samples whose stack was lost ("stack with ID
    ... is lost"), i.e. with no location. The reader reads such a sample (no FrameError): its bytes count in the
    total as the root's own, and neither the root nor any frame is ranked for them."""
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "malloc", "bytes", "main", "cudaMalloc"])
    message.sample_type.add(type=1, unit=2)
    message.function.add(id=1, name=3)
    message.function.add(id=2, name=4)
    message.location.add(id=1).line.add(function_id=1)
    message.location.add(id=2).line.add(function_id=2)
    message.sample.add(location_id=[2, 1], value=[100])
    message.sample.add(location_id=[], value=[700])  # its stack was lost
    profile, kind = formats.load(message.SerializeToString())
    assert kind == "pprof"
    assert [(n.label, n.level, n.value, n.self) for n in profile.nodes] == [
        ("total", 0, 800, 700), ("main", 1, 100, 0), ("cudaMalloc", 2, 100, 100)]
    result = report(profile)
    assert result["total"] == 800
    assert [(e["function"], e["self"]) for e in result["topSelf"]] == [("cudaMalloc", 100)]
    assert [e["function"] for e in result["topTotal"]] == ["cudaMalloc"]  # main only carries it
    assert result["orchestrators"] == ["main"]


def test_a_nameless_function_is_dropped_by_its_system_name_as_pprof_does(tmp_path):
    """pprof demangles before it prunes, and its Demangle puts the system name in place of an empty name, so
    ``drop_frames=alloc`` drops a function whose name is empty and whose system name is ``alloc``."""
    path = tmp_path / "system.pb"
    path.write_bytes(pprof_of([([[("", "alloc")], ["main"]], 100)], "alloc"))
    ours = {name: (own, total) for name, own, total in _per_function(formats.read_file(str(path), None))}
    assert ours == _go_pprof_top(path) == {"main": (100, 100)}
