"""Loading saved flame graphs: Grafana's flame-graph frame, Pyroscope's render JSON and pprof, into one model.

Owns: :func:`find_frame` and :func:`parse_frame` (a ``/api/ds/query`` response or bare frame), :func:`from_render`
(``/pyroscope/render``, format ``single``), :func:`from_pprof` (``.pb.gz`` or ``.pb``, one sample type:
``--sample-type``, else ``malloc:bytes``, else the declared ``default_sample_type``, else the only one; frames named
as pprof names them, :func:`printable_name`; its ``drop_frames`` applied as pprof applies it, :func:`prune`),
:func:`load` and :func:`read_file` (any of the three, told apart by content), and the writers :func:`to_render`
and :func:`to_pprof` (the examples, the round-trip tests, the benchmark).
Inputs: bytes or parsed JSON. Outputs: :class:`flamegraph.model.Profile`. Errors: ``FrameError``, one line.
Upstream: google/pprof ``proto/profile.proto`` (vendored in :mod:`flamegraph.pprof`); the formats' sources and
how each is read: docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

import gzip
import math
import re
import zlib
from operator import attrgetter
from typing import Any, Optional

from flamegraph import calltree
from flamegraph.model import FrameError, Node, Profile

#: The Inspektor Gadget profile_cuda gadget's sample type (type, unit): the default of --sample-type.
GPU_MEMORY_SAMPLE_TYPE = ("malloc", "bytes")
GZIP_MAGIC = b"\x1f\x8b"


def _pb2():
    try:
        # The protobuf runtime loads on first use: the frame path does not need it.
        from flamegraph.pprof import profile_pb2
    except ImportError as missing:  # outside the project's venv: say so in one line
        raise FrameError(f"reading pprof needs the protobuf package ({missing}): run in the project's venv, "
                         ".venv/bin/python -m flamegraph.hotspots ... (README, The two commands)") from None
    except Exception as error:  # protobuf's VersionError: a runtime older than the gencode (5.29), not an ImportError
        if type(error).__name__ != "VersionError":
            raise
        raise FrameError(f"reading pprof needs protobuf 5.29 or newer below 6 ({error}): run in the project's venv, "
                         ".venv/bin/python -m flamegraph.hotspots ... (README, The two commands)") from None
    return profile_pb2


# --- Grafana's flame-graph frame ----------------------------------------------------------------------


def _field_values(frame: dict, name: str) -> Optional[tuple[dict, list]]:
    """(field spec, its values) of the field ``name`` in a data frame, None if it has no such field; FrameError
    when the frame is not shaped as one (``schema.fields`` objects, ``data.values`` lists)."""
    fields = (frame.get("schema") or {}).get("fields") or [] if isinstance(frame, dict) else None
    values = (frame.get("data") or {}).get("values") or [] if isinstance(frame, dict) else None
    if (not isinstance(fields, list) or not all(isinstance(spec, dict) for spec in fields)
            or not isinstance(values, list)):
        raise FrameError("a frame must be an object with schema.fields (objects) and data.values (lists)")
    for index, spec in enumerate(fields):
        if spec.get("name") == name:
            if index >= len(values) or not isinstance(values[index], list):
                raise FrameError(f"field {name!r} has no values")
            return spec, values[index]
    return None


def find_frame(response: Any) -> dict:
    """The flame-graph frame in a /api/ds/query response (or a bare frame)."""
    if isinstance(response, dict) and "schema" in response:
        return response
    results = (response or {}).get("results") if isinstance(response, dict) else None
    if not isinstance(results, dict):
        raise FrameError("not a Grafana query response: no 'results'")
    for ref, result in results.items():
        if not isinstance(result, dict) or not isinstance(result.get("frames") or [], list):
            raise FrameError(f"results.{ref}: expected an object with a list of frames")
        if result.get("error"):
            raise FrameError(f"Grafana answered with an error: {result['error']}")
        for frame in result.get("frames") or []:
            if _field_values(frame, "level") is not None:
                return frame
    raise FrameError("the response holds no flame-graph frame (fields level, value, self, label)")


def parse_frame(frame: dict) -> Profile:
    """Nodes of a flame-graph frame, parent-linked. Raises FrameError for a malformed frame."""
    columns = {}
    for name in ("level", "value", "self", "label"):
        found = _field_values(frame, name)
        if found is None:
            raise FrameError(f"the frame has no field {name!r}")
        columns[name] = found
    lengths = {name: len(values) for name, (_, values) in columns.items()}
    if len(set(lengths.values())) != 1:
        raise FrameError(f"field lengths differ: {lengths}")
    label_spec, labels = columns["label"]
    enum = (((label_spec.get("config") or {}).get("type") or {}).get("enum") or {}).get("text")
    if enum is not None:
        try:
            labels = [enum[int(i)] for i in labels]
        except (IndexError, ValueError, TypeError):
            raise FrameError("an enum label points outside config.type.enum.text") from None
    unit = ((columns["value"][0].get("config") or {}).get("unit")) or "bytes"
    nodes: list[Node] = []
    path: list[Node] = []
    for i, (level, value, own) in enumerate(zip(columns["level"][1], columns["value"][1], columns["self"][1])):
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x == int(x)
                   for x in (level, value, own)):
            raise FrameError(f"row {i}: level, value and self must be whole numbers "
                             f"(got {level!r}, {value!r}, {own!r})")
        level, value, own = int(level), int(value), int(own)
        if value < 0 or own < 0:
            raise FrameError(f"row {i} ({labels[i]!r}): negative value or self")
        if i == 0 and level != 0:
            raise FrameError("the first row must be the root, at level 0")
        if i > 0 and (level < 1 or level > len(path)):
            raise FrameError(f"row {i} ({labels[i]!r}): level {level} after level {len(path) - 1}; "
                             "levels may only go one deeper")
        del path[level:]
        node = Node(str(labels[i]), level, value, own, path[-1] if path else None)
        if node.parent:
            node.parent.children.append(node)
        nodes.append(node)
        path.append(node)
    return Profile(unit, nodes[0] if nodes else None, nodes)


# --- reading -----------------------------------------------------------------------------------------


def decode(data: bytes) -> bytes:
    """The bytes of a file, gunzipped when gzip-compressed. FrameError for a truncated or corrupt gzip stream."""
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return gzip.decompress(data)
    except EOFError:
        raise FrameError("the gzip stream ends early (a truncated download?)") from None
    except (OSError, zlib.error) as error:
        raise FrameError(f"not a valid gzip stream ({error})") from None


def load(data: bytes, sample_type: Optional[str] = None, all_frames: bool = False) -> tuple[Profile, str]:
    """A profile file's content, any of the three formats: (profile, format) with format ``frame``, ``render`` or
    ``pprof``. JSON (a Grafana /api/ds/query response or bare frame, or a render answer) is told from pprof by its
    first non-blank byte. FrameError says what is wrong, in one line."""
    if not data:
        raise FrameError("empty file: expected a Grafana frame, a Pyroscope render JSON or a pprof profile")
    raw = decode(data)
    if raw.lstrip()[:1] in (b"{", b"["):
        if sample_type is not None:
            raise FrameError("--sample-type picks among a pprof profile's sample types; a JSON flame graph holds one")
        import json  # loaded for a JSON file only

        try:
            document = json.loads(raw)
        except ValueError as error:
            raise FrameError(f"not valid JSON ({error})") from None
        if isinstance(document, dict) and "flamebearer" in document:
            return from_render(document), "render"
        return parse_frame(find_frame(document)), "frame"
    return from_pprof(raw, sample_type, all_frames), "pprof"


def _sample_index(types: list[tuple[str, str]], wanted: Optional[str], default: str) -> tuple[int, bool]:
    """(index of the sample type to read, whether the profile's ``default_sample_type`` chose it): ``wanted``
    (``--sample-type``), else the GPU-memory type, else the first type named ``default`` (a type name, as pprof's
    ``SampleIndexByName`` matches it), else the only one; FrameError when none of these picks one."""
    declared = ", ".join(f"{t}:{u}" for t, u in types)
    if wanted is not None:
        kind, _, unit = wanted.partition(":")
        matches = [i for i, (t, u) in enumerate(types) if t == kind and (not unit or u == unit)]
        if not matches:
            raise FrameError(f"--sample-type {wanted}: the profile declares {declared}")
        return matches[0], False
    if GPU_MEMORY_SAMPLE_TYPE in types:
        return types.index(GPU_MEMORY_SAMPLE_TYPE), False
    for i, (kind, _) in enumerate(types):
        if default and kind == default:
            return i, True
    if len(types) == 1:
        return 0, False
    # pprof would take the last type here ("clients should default to the last sample value"); which of several
    # unrelated measurements to read is the user's call, so the reader asks instead.
    raise FrameError(f"no {':'.join(GPU_MEMORY_SAMPLE_TYPE)} sample type (Inspektor Gadget's GPU memory) and no "
                     f"default_sample_type; pick one of {declared} with --sample-type")


def printable_name(name: str, system_name: str, address: int, objfile: str) -> str:
    """A frame's name as pprof prints it (``NodeInfo.NameComponents`` in internal/graph/graph.go): the function's
    name; else its system name (pprof's ``Demangle`` puts it in place of an empty name; the reader does not demangle
    it); else the location's address in 16 hex digits where it has one, then ``[file]`` (the base name of the mapping's
    file) or, with no file either, ``<unknown>``. pprof drops the address at its default granularity and keeps it
    with ``-addresses``; the reader keeps it for nameless frames only, so that they do not all merge into one."""
    if name:
        return name
    if system_name:
        return system_name
    parts = [f"{address:016x}"] if address else []
    base = objfile.rstrip("/").rsplit("/", 1)[-1] or "/"  # Go's filepath.Base of a non-empty path
    parts.append(f"[{base}]" if objfile else "<unknown>")
    return " ".join(parts)


def simplified_function(name: str) -> str:
    """The name pprof matches ``drop_frames`` against (``simplifyFunc`` in google/pprof ``profile/prune.go``): a
    leading ``.`` off, and everything from the first ``(`` that does not open ``(anonymous namespace)`` or
    ``operator()``."""
    name = name.removeprefix(".")
    for found in re.finditer(r"\(anonymous namespace\)|operator\(\)|\(", name):
        if found.group(0) == "(":
            return name[:found.start()]
    return name


def prune(message: Any, strings: list[str]) -> str:
    """Apply the profile's ``drop_frames``/``keep_frames`` in place as pprof does by default (google/pprof
    ``internal/driver/fetch.go`` calls ``RemoveUninteresting``; ``profile/prune.go`` ``Prune``): in each location the
    outermost frame whose function matches ``^(drop_frames)$`` and not ``^(keep_frames)$`` goes, with the frames
    inlined into it; in each sample, from the first user frame on (root first), the stack ends at the first such
    location. The expressions are RE2, the syntax of Go's regexp that pprof compiles them with. Returns what was
    applied (``drop_frames=...``), or ``""`` when the file declares none or RE2 would not compile it (pprof ignores
    that error). Names are matched as the file holds them: pprof demangles C++ system names first, the reader does
    not (:func:`printable_name`)."""
    import re2  # loaded for a profile that declares drop_frames only

    drop, keep = strings[message.drop_frames], strings[message.keep_frames]
    if not drop:
        return ""
    try:
        drop_rx = re2.compile(f"^({drop})$")
        keep_rx = re2.compile(f"^({keep})$") if keep else None
    except re2.error:
        return ""
    # An empty name is matched by the system name pprof's Demangle puts in its place.
    functions = {f.id: strings[f.name] or strings[f.system_name] for f in message.function}
    cache: dict[str, bool] = {}

    def drops(name: str) -> bool:
        if name not in cache:
            simple = simplified_function(name)
            cache[name] = bool(drop_rx.match(simple)) and not (keep_rx and keep_rx.match(simple))
        return cache[name]

    pruned, beneath = set(), set()
    for location in message.location:
        lines = location.line
        found = next((i for i in range(len(lines) - 1, -1, -1)
                      if functions.get(lines[i].function_id) and drops(functions[lines[i].function_id])), -1)
        if found >= 0:
            beneath.add(location.id)
            if found == len(lines) - 1:
                pruned.add(location.id)
            else:
                del lines[:found + 1]
    for sample in message.sample:
        ids, user = list(sample.location_id), False
        for i in range(len(ids) - 1, -1, -1):
            if ids[i] not in pruned and ids[i] not in beneath:
                user = True
            elif user:
                sample.location_id[:] = ids[i + 1:] if ids[i] in pruned else ids[i:]
                break
    return f"drop_frames={drop}" + (f", keep_frames={keep}" if keep else "")


def from_pprof(raw: bytes, sample_type: Optional[str] = None, all_frames: bool = False) -> Profile:
    """A decoded (gunzipped) pprof profile as a flame-graph Profile of one sample type; its ``drop_frames`` applied
    as pprof does (:func:`prune`) unless ``all_frames`` (pprof's ``-all_frames``)."""
    from google.protobuf.message import DecodeError

    message = _pb2().Profile()
    try:
        message.ParseFromString(raw)
    except DecodeError as error:
        raise FrameError(f"not a pprof profile (protobuf: {error})") from None
    if not message.sample_type and not message.sample:
        raise FrameError("empty profile: no sample types and no samples")
    strings = list(message.string_table)
    size = len(strings)
    if not size or strings[0] != "":
        raise FrameError("not a pprof profile: string_table must start with the empty string")

    def string(index: int, what: str) -> str:
        if not 0 <= index < size:
            raise FrameError(f"not a pprof profile: {what} points outside string_table ({index})")
        return strings[index]

    types = [(string(t.type, "a sample type"), string(t.unit, "a sample unit")) for t in message.sample_type]
    if not types:
        raise FrameError("not a pprof profile: samples without sample types")
    index, by_default = _sample_index(types, sample_type,
                                      string(message.default_sample_type, "default_sample_type"))
    kind, unit = types[index]
    width = len(types)
    functions = {f.id: (string(f.name, f"function {f.id}'s name"),
                        string(f.system_name, f"function {f.id}'s system name")) for f in message.function}
    objfiles = {m.id: string(m.filename, f"mapping {m.id}'s file") for m in message.mapping}
    string(message.drop_frames, "drop_frames"), string(message.keep_frames, "keep_frames")
    pruned = "" if all_frames else prune(message, strings)
    names = ["total"]
    named: dict[str, int] = {}
    frames_of: dict[int, tuple[int, ...]] = {}  # location id -> its frames' name indices, caller first
    for location in message.location:
        objfile = objfiles.get(location.mapping_id, "")
        # "the last entry represents the caller into which the preceding entries were inlined": reversed, the caller
        # comes first, as pprof's flame graph stacks them (internal/report/stacks.go). A location without lines is
        # one frame named by its address, as pprof's CreateNodes gives it an empty line.
        try:
            frames = [functions[line.function_id] for line in reversed(location.line)] or [("", "")]
        except KeyError as missing:
            raise FrameError(f"not a pprof profile: location {location.id} names no function {missing}") from None
        indices = []
        for name, system in frames:
            text = name or printable_name(name, system, location.address, objfile)
            if text not in named:
                named[text] = len(names)
                names.append(text)
            indices.append(named[text])
        frames_of[location.id] = tuple(indices)
    del functions, objfiles, named

    # One value per sample type in every sample (pprof's CheckValid), checked first whichever builder reads it.
    wrong = next((n for n in map(len, map(attrgetter("value"), message.sample)) if n != width), None)
    if wrong is not None:
        raise FrameError(f"not a pprof profile: a sample has {wrong} values for {width} sample types")

    def samples():
        for sample in message.sample:
            yield sample.location_id, sample.value[index]

    columns = None
    if len(raw) >= calltree.LARGE:
        columns = calltree.vectorized(message.sample, width, index, frames_of, names)
    if columns is None:
        columns = calltree.plain(samples(), frames_of, names)
    return Profile(unit, sample_type=f"{kind}:{unit}", default_sample_type=by_default, columns=columns, pruned=pruned)


def nested_set_order(root: Node) -> list[Node]:
    """``root`` and its descendants depth first, each node's children right after it in their order (nested-set
    order, the order of Grafana's flame-graph frame)."""
    order: list[Node] = []
    pending = [root]
    while pending:
        node = pending.pop()
        order.append(node)
        pending.extend(reversed(node.children))
    return order


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def from_render(document: dict) -> Profile:
    """A Pyroscope render answer (format ``single``) as a Profile."""
    flamebearer = document.get("flamebearer")
    metadata = document.get("metadata") or {}
    if not isinstance(flamebearer, dict) or not isinstance(metadata, dict):
        raise FrameError("a render answer needs the objects flamebearer and metadata")
    if metadata.get("format", "single") != "single":
        raise FrameError(f"render format {metadata.get('format')!r}: only 'single' (one profile); "
                         "for a comparison give each side and --baseline")
    names, levels = flamebearer.get("names"), flamebearer.get("levels")
    if (not isinstance(names, list) or not isinstance(levels, list)
            or not all(isinstance(level, list) for level in levels)):
        raise FrameError("flamebearer.names and flamebearer.levels must be lists")
    unit = metadata.get("units") or "bytes"
    if not levels or not levels[0]:
        return Profile(unit, None, [], f"{metadata['name']}:{unit}" if metadata.get("name") else None)
    parents: list[tuple[int, Node]] = []  # (absolute start, node) of the previous level, in x order
    root: Optional[Node] = None
    for depth, values in enumerate(levels):
        if len(values) % 4 or not all(_whole(v) for v in values):
            raise FrameError(f"level {depth}: expected whole numbers in groups of 4 (x offset, total, self, name)")
        current: list[tuple[int, Node]] = []
        end = 0
        cursor = 0  # index into parents
        for i in range(0, len(values), 4):
            delta, total, own, name = values[i:i + 4]
            if total < 0 or own < 0 or delta < 0 or own > total:
                raise FrameError(f"level {depth}, node {i // 4}: negative offset, total or self, or self above total")
            if not 0 <= name < len(names):
                raise FrameError(f"level {depth}, node {i // 4}: name index {name} outside flamebearer.names")
            start = end + delta
            end = start + total
            if depth == 0:
                if i or root is not None:
                    raise FrameError("level 0 must hold the root alone")
                root = node = Node("total", 0, total, own)
            else:
                while cursor < len(parents) and start + total > parents[cursor][0] + parents[cursor][1].value:
                    cursor += 1
                if cursor == len(parents) or start < parents[cursor][0]:
                    raise FrameError(f"level {depth}, node {i // 4} ({names[name]!r}): "
                                     f"under no node of level {depth - 1}")
                parent = parents[cursor][1]
                node = Node(str(names[name]), depth, total, own, parent)
                parent.children.append(node)
            current.append((start, node))
        parents = current
    return Profile(unit, root, nested_set_order(root), f"{metadata['name']}:{unit}" if metadata.get("name") else None)


def read_file(path: str, sample_type: Optional[str], flag: str = "--from-file", all_frames: bool = False) -> Profile:
    """A saved profile in any of the three formats (:func:`load`); FrameError names the file (``flag``: the option
    that named it)."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as error:
        raise FrameError(f"{flag}: cannot read {path}: {error.strerror or error}") from None
    try:
        return load(data, sample_type, all_frames)[0]
    except FrameError as error:
        raise FrameError(f"{path}: {error}") from None


# --- writing (the examples, the round-trip tests, the benchmark) ------------------------------------------


def to_render(profile: Profile, name: str = GPU_MEMORY_SAMPLE_TYPE[0]) -> dict:
    """The profile as Pyroscope's render answer lays it out (``model.NewFlameGraph``, then ``ExportToFlamebearer``:
    ``metadata.name`` is the profile type's sample type, ``units`` its unit, ``sampleRate`` 100)."""
    names: list[str] = []
    index: dict[str, int] = {}
    levels: list[list[int]] = []
    ends: list[int] = []  # per level, where the last node written ends
    max_self = 0
    x: dict[int, int] = {}  # id(node) -> absolute x
    used: dict[int, int] = {}  # id(node) -> where its next callee starts
    for node in profile.nodes:
        label = "total" if node.parent is None else node.label
        if label not in index:
            index[label] = len(names)
            names.append(label)
        if node.parent is None:
            start = 0
        else:
            start = used[id(node.parent)]
            used[id(node.parent)] += node.value
        x[id(node)], used[id(node)] = start, start + node.self
        while len(levels) <= node.level:
            levels.append([])
            ends.append(0)
        levels[node.level] += [start - ends[node.level], node.value, node.self, index[label]]
        ends[node.level] = start + node.value
        max_self = max(max_self, node.self)
    return {"version": 1,
            "flamebearer": {"names": names, "levels": levels, "numTicks": profile.total, "maxSelf": max_self},
            "metadata": {"format": "single", "spyName": "", "sampleRate": 100, "units": profile.unit, "name": name},
            "timeline": None, "groups": None, "heatmap": None}


def to_pprof(profile: Profile, sample_type: tuple[str, str] = GPU_MEMORY_SAMPLE_TYPE,
             period_type: tuple[str, str] = ("process_cuda", "bytes"), compress: bool = True) -> bytes:
    """The profile as pprof: one function and one location per name, one sample per node with self (its stack,
    leaf first), as the Inspektor Gadget exporter writes one sample per stack."""
    message = _pb2().Profile()
    strings: dict[str, int] = {"": 0}

    def string(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings)
        return strings[text]

    message.sample_type.add(type=string(sample_type[0]), unit=string(sample_type[1]))
    message.period_type.type, message.period_type.unit = string(period_type[0]), string(period_type[1])
    message.period = 1
    locations: dict[str, int] = {}
    stacks: dict[int, list[int]] = {}  # id(node) -> location ids, leaf first
    for node in profile.nodes:
        if node.parent is None:
            stacks[id(node)] = []
            continue
        if node.label not in locations:
            locations[node.label] = len(locations) + 1
            message.function.add(id=locations[node.label], name=string(node.label))
            message.location.add(id=locations[node.label]).line.add(function_id=locations[node.label])
        stack = stacks[id(node)] = [locations[node.label], *stacks[id(node.parent)]]
        if node.self:
            message.sample.add(location_id=stack, value=[node.self])
    message.string_table.extend(strings)
    data = message.SerializeToString()
    return gzip.compress(data, mtime=0) if compress else data
