"""A pprof profile's samples merged into one call tree, as :class:`flamegraph.model.Columns`.

Owns: :func:`plain` (a walk per sample, in Python) and :func:`vectorized` (the same tree level by level with numpy,
for a large profile: :data:`LARGE` decoded bytes and more, where numpy's own 13 MB and 0.13 s of import pay off).
Both merge frames by name from the root down, number callees in the order their first sample comes, sum self and
total, and give the same columns (tests/flamegraph/test_calltree.py holds them to it).
Inputs: the samples' leaf-first location ids and values of one sample type, and each location's frames (name indices,
caller first). Outputs: ``Columns`` with ``names[0] == "total"``. Errors: ``FrameError`` for a negative value or a
location that is not in the profile. How the vectorized build works and what it costs: docs/decisions/flamegraph-
reading.md ("A large profile").
"""

from __future__ import annotations

from array import array
from itertools import chain, islice
from operator import attrgetter
from typing import Any, Iterable, Optional, Sequence

from flamegraph.model import Columns, FrameError

#: From this many decoded bytes on, :func:`vectorized` reads the profile.
LARGE = 1 << 20
#: :func:`vectorized` declines (the plain walk reads it) when the deepest stack times this exceeds the samples.
DEPTH_FACTOR = 64
#: Location ids converted to numpy at a time (no second full copy of them is held).
SLICE = 1 << 16

NEGATIVE = "a sample value is negative (a diff profile? read each side and use --baseline)"


def _missing(location: int) -> FrameError:
    return FrameError(f"not a pprof profile: a sample points at no location {location}")


def plain(samples: Iterable[tuple[Sequence[int], int]], frames_of: dict[int, tuple[int, ...]],
          names: list[str]) -> Columns:
    """The tree of ``(leaf-first location ids, value)`` samples; samples of value 0 are left out."""
    width = len(names)
    label, own, parent = [0], [0], [-1]  # lists: their items are shared, and own sums in Python's integers
    child_of: dict[int, int] = {}  # parent * width + name -> node; nodes are numbered as made, callers first
    get = child_of.get
    one = {location: frames[0] for location, frames in frames_of.items() if len(frames) == 1}
    if len(one) == len(frames_of):  # one frame per location, as most profiles have: no inner loop
        name_of = one.__getitem__

        def names_of(stack):
            return map(name_of, stack[::-1])
    else:
        frames = frames_of.__getitem__

        def names_of(stack):
            return chain.from_iterable(map(frames, stack[::-1]))

    for stack, value in samples:
        if not value:
            continue
        if value < 0:
            raise FrameError(NEGATIVE)
        node = 0
        try:
            for name in names_of(stack):
                key = node * width + name
                child = get(key)
                if child is None:
                    child = child_of[key] = len(label)
                    label.append(name)
                    own.append(0)
                    parent.append(node)
                node = child
        except KeyError:
            raise _missing(next(location for location in stack if location not in frames_of)) from None
        own[node] += value
    child_of.clear()
    count = len(label)
    total, size = own[:], [1] * count
    for node in range(count - 1, 0, -1):  # callees before their callers
        up = parent[node]
        total[up] += total[node]
        size[up] += size[node]
    # Nested-set positions: callees in the order they were made (their first sample's), each after its caller and
    # the subtrees of the callees made before it.
    position, free, level = [0] * count, [1] * count, [0] * count  # free: where a node's next callee goes
    for node in range(1, count):
        up = parent[node]
        at = position[node] = free[up]
        free[up] = at + size[node]
        free[node] = at + 1
        level[node] = level[up] + 1
    del size, free
    order = sorted(range(count), key=position.__getitem__)
    up = list(map(position.__getitem__, map(parent.__getitem__, order)))
    up[0] = -1
    return Columns(names, *(list(map(column.__getitem__, order)) for column in (label, level, total, own)), up)


def vectorized(samples: Sequence[Any], width: int, index: int, frames_of: dict[int, tuple[int, ...]],
               names: list[str]) -> Optional[Columns]:
    """The tree of a parsed profile's ``samples`` (``width`` values each: checked by the caller) read at value
    ``index``: the same columns as :func:`plain`, built level by level (all nodes of one level at once:
    ``numpy.unique`` of (caller, name), whose stable sort numbers callees by their first sample). None, and
    :func:`plain` reads it, when the sums could leave int64 or the stacks are few and deep (:data:`DEPTH_FACTOR`)."""
    import numpy as np

    count = len(samples)
    stack_lengths = np.fromiter(map(len, map(attrgetter("location_id"), samples)), np.int64, count)
    values = np.fromiter(chain.from_iterable(map(attrgetter("value"), samples)), np.int64, count * width)
    values = values[index::width].copy() if width > 1 else values
    keep = values != 0
    if keep.any() and int(values.max()) >= (1 << 62) // int(keep.sum()):
        return None
    if int(stack_lengths.max(initial=0)) * DEPTH_FACTOR > count:  # a level costs a numpy pass: few, deep stacks
        return None
    # Each location's frames, leaf first, end to end (``flat``); ``table`` numbers the locations by id.
    known = sorted(frames_of)
    frames_per = np.array([len(frames_of[k]) for k in known], np.int64)
    flat = np.array([name for k in known for name in reversed(frames_of[k])], np.int32)
    # Each location id's row of ``known``, -1 where none, read a slice at a time: through a table by id when the
    # ids are dense (as pprof writers number them), else by binary search.
    dense = not known or known[-1] < 4 * len(known) + SLICE
    table = np.full(known[-1] + 1 if known else 1, -1, np.int32) if dense else np.array(known, np.uint64)
    if dense and known:
        table[np.array(known, np.int64)] = np.arange(len(known), dtype=np.int32)
    rows = np.empty(int(stack_lengths.sum()), np.int32)
    ids, done = chain.from_iterable(map(attrgetter("location_id"), samples)), 0
    while done < len(rows):
        part = np.fromiter(islice(ids, SLICE), np.uint64)
        if dense:
            rows[done:done + len(part)] = np.where(part < len(table), table[np.minimum(part, len(table) - 1)], -1)
        else:
            where = np.minimum(np.searchsorted(table, part), len(known) - 1)
            rows[done:done + len(part)] = np.where(table[where] == part, where, -1)
        done += len(part)
    kept = np.repeat(keep, stack_lengths)
    rows, lens, values = rows[kept], stack_lengths[keep], values[keep]
    # The first counted sample that is wrong fails, as the plain walk meets it: negative, or naming no location.
    negative = np.flatnonzero(values < 0)
    if (rows < 0).any() or len(negative):
        at = int(np.nonzero(kept)[0][np.argmax(rows < 0)]) if (rows < 0).any() else None
        sample = int(np.searchsorted(np.cumsum(stack_lengths), at, side="right")) if at is not None else None
        if len(negative) and (sample is None or np.flatnonzero(keep)[negative[0]] <= sample):
            raise FrameError(NEGATIVE)
        raise _missing(next(location for location in samples[sample].location_id if location not in frames_of))
    del ids, table, kept, stack_lengths
    starts = np.concatenate(([0], np.cumsum(frames_per)[:-1]))
    if (frames_per == 1).all():
        frames = flat[rows]
    else:
        counts = frames_per[rows]
        ends = np.cumsum(counts)
        frames = flat[np.repeat(starts[rows] - (ends - counts), counts) + np.arange(int(ends[-1]) if len(ends) else 0)]
        cut = np.concatenate(([0], ends))[np.concatenate(([0], np.cumsum(lens)))]
        lens = np.diff(cut)
    del rows
    offsets = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
    width_names = len(names)
    node = np.zeros(len(values), np.int64)  # each sample's node so far: the root
    active = np.nonzero(lens > 0)[0]
    parents, labels, firsts = [np.array([-1])], [np.array([0])], [np.array([0])]
    made, depth = 1, 0
    while len(active):
        key = node[active] * width_names + frames[offsets[active] + lens[active] - 1 - depth]
        unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        parents.append(unique // width_names)
        labels.append(unique % width_names)
        firsts.append(active[first])
        node[active] = made + inverse
        made += len(unique)
        depth += 1
        active = active[lens[active] > depth]
    del frames, offsets
    sizes = [len(p) for p in parents]
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    parent, label, first = np.concatenate(parents), np.concatenate(labels), np.concatenate(firsts)
    del parents, labels, firsts
    own = np.zeros(made, np.int64)
    np.add.at(own, node, values)
    total, size = own.copy(), np.ones(made, np.int64)
    for depth in range(len(sizes) - 1, 0, -1):
        part = slice(bounds[depth], bounds[depth + 1])
        np.add.at(total, parent[part], total[part])
        np.add.at(size, parent[part], size[part])
    # Nested-set position: a callee follows its caller and the subtrees of the callees before it.
    position = np.zeros(made, np.int64)
    for depth in range(1, len(sizes)):
        part = slice(bounds[depth], bounds[depth + 1])
        order = np.lexsort((first[part], parent[part]))
        callers, widths = parent[part][order], size[part][order]
        running = np.cumsum(widths)
        heads = np.nonzero(np.concatenate(([True], callers[1:] != callers[:-1])))[0]
        before = np.repeat(running[heads] - widths[heads], np.diff(np.concatenate((heads, [len(callers)]))))
        placed = np.empty(len(order), np.int64)
        placed[order] = position[callers] + 1 + running - widths - before
        position[part] = placed
    del first, size
    at = np.empty(made, np.int64)
    at[position] = np.arange(made)
    up = np.where(parent[at] >= 0, position[np.maximum(parent[at], 0)], -1)
    del parent, position
    columns = [np.repeat(np.arange(len(sizes)), sizes), total, own]
    del total, own
    return Columns(names, _array(label[at]), *(_array(columns.pop(0)[at]) for _ in range(3)), _array(up))


def _array(column: Any) -> array:
    """A numpy column as an ``array('q')``: 8 bytes a node, where a list would hold a Python integer each."""
    import numpy as np

    packed = array("q")
    packed.frombytes(column.astype(np.int64, copy=False).tobytes())
    return packed
