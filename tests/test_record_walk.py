"""tracer.cupti_records._walk and name_pointers (sessions 31-32): the walk finds repeating patterns of kinds with numpy
and name_pointers reads only the name fields; both must give what one Python step per record gave, on synthetic buffers
of every shape (long runs, alternating kinds, patterns of several kinds, runs at the look-ahead's edges, a record cut at
the buffer's end)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cupti")

from conftest import DATA, load_benchmark  # noqa: E402
from graphmode.tracer.cupti_records import (  # noqa: E402
    _SHORT_RUN, _walk, cupti_module, name_pointers, record_dtypes, records_by_kind)

K = cupti_module().ActivityKind
DTYPES = record_dtypes()
SIZES = {k: int(dt.itemsize) for k, dt in DTYPES.items()}
KINDS = [int(K.CONCURRENT_KERNEL), int(K.RUNTIME), int(K.DRIVER), int(K.MEMCPY), int(K.MARKER), int(K.SYNCHRONIZATION)]


def one_step_per_record(chunk: bytes) -> tuple[list[int], list[int]]:
    """The walk as it was before session 31: one step of Python per record."""
    offsets, kinds, o = [], [], 0
    while o + 4 <= len(chunk):
        kind = int.from_bytes(chunk[o:o + 4], "little")
        offsets.append(o)
        kinds.append(kind)
        o += SIZES[kind]
    return offsets, kinds


def buffer(runs: list[tuple[int, int]], seed: int = 0) -> bytes:
    """Records of (kind, count) runs in order, names drawn from 16 pointers (synthetic: benchmarks/record_walk.py)."""
    return load_benchmark("record_walk").synthetic(runs, seed=seed, names=16)


def shapes() -> list[list[tuple[int, int]]]:
    kernel, runtime, marker = int(K.CONCURRENT_KERNEL), int(K.RUNTIME), int(K.MARKER)
    rng = np.random.default_rng(31)
    mixed = [(KINDS[int(rng.integers(len(KINDS)))], int(rng.integers(1, 300))) for _ in range(60)]
    memcpy, sync, driver = int(K.MEMCPY), int(K.SYNCHRONIZATION), int(K.DRIVER)
    step = [(kernel, 1), (runtime, 1)] * 12 + [(memcpy, 1), (runtime, 1)] + [(kernel, 1), (runtime, 1)] * 7
    patterned = []  # random patterns of 1-5 kinds, each repeated 1-60 times
    for _ in range(40):
        kinds = rng.integers(len(KINDS), size=int(rng.integers(1, 6)))
        cycle = [(KINDS[int(k)], int(rng.integers(1, 3))) for k in kinds]
        patterned += cycle * int(rng.integers(1, 60))
    return [
        [(kernel, 1)],
        [(kernel, 5000)],  # one long run
        [(kernel, 1), (runtime, 1)] * 200,  # alternating
        [(kernel, _SHORT_RUN - 1), (runtime, _SHORT_RUN), (kernel, _SHORT_RUN + 1), (marker, 2 * _SHORT_RUN),
         (runtime, 2 * _SHORT_RUN + 1), (kernel, 3 * _SHORT_RUN)],  # at the look-ahead's edges
        [(runtime, 1000), (kernel, 3000), (runtime, 7), (kernel, 1), (marker, 40)],
        mixed,
        # patterns of a few kinds in turn (session 32): of 3; of 4 with a kind twice; of 5; alternation broken every 37
        # records; patterns that change
        [(runtime, 1), (kernel, 1), (marker, 1)] * 300,
        [(kernel, 2), (runtime, 1), (driver, 1)] * 200,
        [(kernel, 1), (runtime, 1), (driver, 1), (memcpy, 1), (sync, 1)] * 100,
        ([(kernel, 1), (runtime, 1)] * 18 + [(marker, 1)]) * 20,
        [(runtime, 1), (kernel, 1)] * 50 + [(runtime, 1), (kernel, 2)] * 40 + [(kernel, 30)]
        + [(driver, 1), (kernel, 1)] * 9,
        patterned,
        # a loop's steps: a step of 40 records in a pattern of its own, 300 times, with a stray record every 70 steps;
        # and 35,000 records at random (the walk forgets what it walked long ago: past 32,768)
        step * 70 + [(sync, 1)] + step * 230,
        [(int(k), 1) for k in rng.choice([kernel, runtime, driver], 35000)],
    ]


@pytest.mark.parametrize("runs", shapes())
def test_the_walk_finds_every_record(runs: list[tuple[int, int]]) -> None:
    chunk = buffer(runs)
    offsets, kinds = _walk(chunk, SIZES)
    want_offsets, want_kinds = one_step_per_record(chunk)
    assert offsets.tolist() == want_offsets and kinds.tolist() == want_kinds
    assert len(offsets) == sum(c for _, c in runs)


def test_a_record_cut_at_the_end_is_walked_as_before() -> None:
    """A buffer whose last record is cut short (its kind field whole): listed, as the one-step walk listed it."""
    chunk = buffer([(int(K.CONCURRENT_KERNEL), 20)])[:-10]
    offsets, kinds = _walk(chunk, SIZES)
    assert offsets.tolist() == one_step_per_record(chunk)[0] and len(offsets) == 20


def test_a_record_cut_at_the_end_of_a_pattern_is_walked_as_before() -> None:
    chunk = buffer([(int(K.CONCURRENT_KERNEL), 1), (int(K.RUNTIME), 1)] * 50)[:-10]
    offsets, kinds = _walk(chunk, SIZES)
    assert (offsets.tolist(), kinds.tolist()) == one_step_per_record(chunk) and len(offsets) == 100


def test_an_unknown_kind_inside_a_run_is_refused() -> None:
    chunk = buffer([(int(K.CONCURRENT_KERNEL), 30)]) + np.array([9999, 0], dtype=np.int32).tobytes()
    with pytest.raises(ValueError, match="unknown CUPTI record kind 9999"):
        _walk(chunk, SIZES)


@pytest.mark.parametrize("runs", shapes())
def test_name_pointers_are_those_of_the_whole_records(runs: list[tuple[int, int]]) -> None:
    chunks = [buffer(runs, seed=1), b"", buffer(runs[::-1], seed=2)]
    recs = records_by_kind(chunks)
    want: set[int] = set()
    for kind, fields in ((int(K.CONCURRENT_KERNEL), ("name",)), (int(K.MARKER), ("name", "domain"))):
        for field in fields if kind in recs else ():
            want.update(int(p) for p in recs[kind][field])
    want.discard(0)
    assert name_pointers(chunks) == want
    assert want or not any(k in (int(K.CONCURRENT_KERNEL), int(K.MARKER)) for k, _ in runs)


def assert_records_whole(chunks: list[bytes], got: dict[int, np.ndarray]) -> None:
    """`got` (records_by_kind's answer) holds each kind's records of `chunks` as the one-step walk finds them, in
    order, with every field's values. (Fields compared by name: numpy's concatenate lays out the kernel record's union
    field anew, as it did before session 31.)"""
    want: dict[int, list[bytes]] = {}
    for chunk in chunks:
        for o, kind in zip(*one_step_per_record(chunk)):
            want.setdefault(kind, []).append(chunk[o:o + SIZES[kind]])
    assert set(got) == set(want)
    for kind, rows in want.items():
        expected = np.frombuffer(b"".join(rows), dtype=DTYPES[kind])
        assert len(got[kind]) == len(expected) and got[kind].flags.writeable
        for name in DTYPES[kind].names:
            if DTYPES[kind].fields[name][0].kind != "V":
                assert np.array_equal(got[kind][name], expected[name]), (kind, name)


@pytest.mark.parametrize("runs", shapes())
def test_records_by_kind_gives_every_record_whole(runs: list[tuple[int, int]]) -> None:
    """Long runs are read in place, records apart copied row by row: either way each kind's records whole."""
    chunks = [buffer(runs, seed=3), buffer(runs[:2], seed=4)]
    got = records_by_kind(chunks)
    assert_records_whole(chunks, got)
    kernels = got.get(int(K.CONCURRENT_KERNEL))
    assert kernels is None or set(kernels["name"].tolist()) <= set(range(0x1000, 0x1010))


def test_records_by_kind_names_a_record_cut_at_the_end() -> None:
    chunk = buffer([(int(K.CONCURRENT_KERNEL), 1), (int(K.RUNTIME), 1)] * 50)[:-10]
    with pytest.raises(ValueError, match="runs past the end of its buffer"):
        records_by_kind([chunk])


@pytest.mark.parametrize("name", ["live_vit", "live_train"])
def test_real_buffers_are_walked_as_one_step_per_record_walked_them(name: str) -> None:
    """Buffers of real sessions on the H200 (tests/data/cupti_buffers): the walk finds a loop's step and repeats it;
    every record, field and name pointer as the one-step walk finds them."""
    saved = np.load(DATA / "cupti_buffers" / f"{name}.npz")
    chunks = [saved[k].tobytes() for k in saved.files]
    for chunk in chunks:
        offsets, kinds = _walk(chunk, SIZES)
        assert (offsets.tolist(), kinds.tolist()) == one_step_per_record(chunk)
    got = records_by_kind(chunks)
    assert int(K.CONCURRENT_KERNEL) in got
    assert_records_whole(chunks, got)
    kernel_names = {int(p) for p in got[int(K.CONCURRENT_KERNEL)]["name"]} - {0}
    assert name_pointers(chunks) == kernel_names and len(kernel_names) > 10
