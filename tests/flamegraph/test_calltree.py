"""flamegraph.calltree: the plain and the vectorized builders give the same tree, and fail the same way."""

from __future__ import annotations

import random
from array import array

import pytest

from flamegraph import analysis, calltree, formats
from flamegraph.model import TRUNCATED, FrameError


def random_profile(seed: int, *, inlined: bool, sparse: bool, width: int = 1, samples: int = 300) -> bytes:
    """A pprof profile with what real ones hold: functions shared by several locations, recursion, Pyroscope's
    ``other``, samples of value 0, an empty stack, repeated stacks, and (``inlined``) locations of several lines,
    (``sparse``) location ids far apart."""
    rng = random.Random(seed)
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "malloc", "bytes", "alloc_space", "bytes2", TRUNCATED]
                         + [f"fn_{i}" for i in range(12)])
    message.sample_type.add(type=1, unit=2)
    if width == 2:
        message.sample_type.add(type=3, unit=4)
    for f in range(1, 14):
        message.function.add(id=f, name=4 + f)  # function 1 is ``other``
    ids = [rng.randrange(1, 1 << 40) if sparse else i for i in range(1, 25)]
    for i in ids:
        location = message.location.add(id=i)
        for _ in range(rng.randrange(1, 4) if inlined else 1):
            location.line.add(function_id=rng.randrange(1, 14))
    stacks = [[]]
    for _ in range(samples):
        if rng.random() < 0.3:
            stack = list(rng.choice(stacks))
            stack.insert(0, rng.choice(ids))  # a callee of a stack seen before
        else:
            stack = [rng.choice(ids) for _ in range(rng.randrange(0, 9))]
        stacks.append(stack)
        value = 0 if rng.random() < 0.1 else rng.randrange(1, 1 << 40)
        message.sample.add(location_id=stack, value=[value, 7][:width] if width == 1 else [7, value])
    return message.SerializeToString()


def load(raw: bytes, vectorized: bool, monkeypatch, sample_type=None):
    """``raw`` read by the builder asked for: the vectorized one for any size and depth (it declines small or deep
    profiles by default, which would leave a comparison of the plain walk with itself), checked by its columns'
    type (numpy's builder hands over ``array('q')``, the plain walk lists)."""
    monkeypatch.setattr(calltree, "LARGE", 0 if vectorized else 1 << 62)
    monkeypatch.setattr(calltree, "DEPTH_FACTOR", 0 if vectorized else calltree.DEPTH_FACTOR)
    profile = formats.from_pprof(raw, sample_type)
    assert isinstance(profile.columns.label, array) == vectorized
    return profile


def both(raw: bytes, monkeypatch) -> tuple:
    """The profile read by each builder, as plain lists."""
    read = []
    for vectorized in (False, True):
        columns = load(raw, vectorized, monkeypatch, "malloc").columns
        read.append((columns.names, *(list(column) for column in (columns.label, columns.level, columns.value,
                                                                   columns.self, columns.parent))))
    return tuple(read)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("inlined", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_builders_give_the_same_tree(seed, inlined, sparse, monkeypatch):
    plain, vectorized = both(random_profile(seed, inlined=inlined, sparse=sparse), monkeypatch)
    assert plain == vectorized
    assert len(plain[1]) > 50


def test_the_builders_read_the_chosen_of_two_sample_types(monkeypatch):
    plain, vectorized = both(random_profile(3, inlined=True, sparse=False, width=2), monkeypatch)
    assert plain == vectorized


def test_a_large_profile_reports_as_a_small_one(monkeypatch):
    """The report, the render JSON and the pprof written back are the same whichever builder read the file."""
    raw = random_profile(9, inlined=True, sparse=True, samples=2000)
    outputs = []
    for vectorized in (False, True):
        profile = load(raw, vectorized, monkeypatch)
        outputs.append((analysis.report(profile, 20), analysis.report(profile, 5, True), formats.to_render(profile)))
    assert outputs[0] == outputs[1]
    assert outputs[0][0]["truncated"]["nodes"] > 0  # ``other`` is in it, and left out of the lists


@pytest.mark.parametrize("large", [1 << 62, 0])
def test_a_negative_value_or_a_missing_location_is_one_line(large, monkeypatch):
    monkeypatch.setattr(calltree, "LARGE", large)
    monkeypatch.setattr(calltree, "DEPTH_FACTOR", 0)
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "malloc", "bytes", "f"])
    message.sample_type.add(type=1, unit=2)
    message.function.add(id=1, name=3)
    message.location.add(id=1).line.add(function_id=1)
    message.sample.add(location_id=[1], value=[5])
    message.sample.add(location_id=[9, 1], value=[0])  # not counted: its missing location is not an error
    message.sample.add(location_id=[1, 7, 1], value=[3])
    with pytest.raises(FrameError, match="^not a pprof profile: a sample points at no location 7$"):
        formats.from_pprof(message.SerializeToString())
    message.sample[2].location_id[1] = 1
    message.sample.add(location_id=[1], value=[-2])
    with pytest.raises(FrameError, match="^a sample value is negative"):
        formats.from_pprof(message.SerializeToString())


def test_sums_past_int64_are_added_in_python_integers(monkeypatch):
    """Two samples of 2^62 - 1 bytes each: the vectorized builder declines, the plain one adds them exactly."""
    monkeypatch.setattr(calltree, "LARGE", 0)
    monkeypatch.setattr(calltree, "DEPTH_FACTOR", 0)
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "malloc", "bytes", "f"])
    message.sample_type.add(type=1, unit=2)
    message.function.add(id=1, name=3)
    message.location.add(id=1).line.add(function_id=1)
    message.sample.add(location_id=[1], value=[(1 << 62) - 1])
    message.sample.add(location_id=[1], value=[(1 << 62) - 1])
    assert formats.from_pprof(message.SerializeToString()).total == (1 << 63) - 2


def broken(*samples) -> bytes:
    """A profile of one function at location 1, with ``samples`` as (location ids, values)."""
    pb = formats._pb2()
    message = pb.Profile(string_table=["", "malloc", "bytes", "f"])
    message.sample_type.add(type=1, unit=2)
    message.function.add(id=1, name=3)
    message.location.add(id=1).line.add(function_id=1)
    for ids, values in samples:
        message.sample.add(location_id=ids, value=values)
    return message.SerializeToString()


@pytest.mark.parametrize("samples, message", [
    ((([9], [1]), ([1], [-1])), "not a pprof profile: a sample points at no location 9"),
    ((([1], [-1]), ([9], [1])), "a sample value is negative"),
    ((([1], [-1]), ([1], [1, 2])), "not a pprof profile: a sample has 2 values for 1 sample types"),
    ((([9], [1]), ([1], [1, 2])), "not a pprof profile: a sample has 2 values for 1 sample types"),
    ((([9, 1], [-3]),), "a sample value is negative"),
])
def test_both_builders_fail_on_the_first_wrong_sample_alike(samples, message, monkeypatch):
    """The first counted sample that is wrong decides, as a walk in sample order meets it; a wrong count of values
    anywhere is found before either."""
    raised = []
    for large in (1 << 62, 0):
        monkeypatch.setattr(calltree, "LARGE", large)
        monkeypatch.setattr(calltree, "DEPTH_FACTOR", 0)
        with pytest.raises(FrameError) as error:
            formats.from_pprof(broken(*samples))
        raised.append(str(error.value))
    assert raised[0] == raised[1] and raised[0].startswith(message)


def test_few_deep_stacks_go_to_the_plain_walk():
    """50 stacks 2 000 frames deep: one numpy pass a level would cost more than walking them."""
    raw = broken(*(([1] * 2000, [i + 1]) for i in range(50)))
    message = formats._pb2().Profile.FromString(raw)
    assert calltree.vectorized(message.sample, 1, 0, {1: (1,)}, ["total", "f"]) is None
    assert len(formats.from_pprof(raw).nodes) == 2001
