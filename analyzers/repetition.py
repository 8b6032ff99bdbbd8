"""The recurring step of an eager-only script, from its kernel sequence alone (docs/metrics.md, "Iterations and
periods": the kernel repetition rule).

A loop leaves its step's kernels on the GPU in the same order every time, whether or not it synchronizes, whether the
step is written in the loop's body or in a function it calls, and whatever line stamps or launch records the pass kept.
So the eager kernels of the main stream (the stream that ran most of them), in GPU order, are read as a sequence of
names, and the step is a block of names repeated back to back:

- **runs**: for a period p, the positions where a kernel has the same name as the one p kernels later; a stretch of
  such positions at least (MIN_SYNC_ITERATIONS - 1) * p long is a run of at least MIN_SYNC_ITERATIONS copies of one
  block of p names (the first copy starts where the run starts). Periods tried: the distances between successive
  kernels of one name (a kernel launched once a step is that far from its next launch), the MAX_PERIODS that would
  cover the most. A block that is itself k copies of a shorter one (two steps read as one) is that shorter block.
- **blocks**: the runs of one block added up: its recurrences and the kernels they cover. Of the blocks recurring at
  least MIN_SYNC_ITERATIONS times, those covering at least half as many kernels as the most; of those, the ones
  recurring at least LOOP_STEP_MIN times (else all): the longest is the step. So a step wins over a layer repeated
  inside it (shorter) and over an outer loop over steps (a block of identical steps is the step; one with more in it
  recurs less often), as the line rule decides (analyzers.inference.loop_step).
- **several blocks**: other blocks of that set whose runs overlap none of the step's are steps too.
- **one step at several shapes**: two of those blocks are the same step at two input shapes where at least
  SAME_STEP_SHARE of each one's kernels have a namesake in the other (the k-th kernel of a name paired with the other's
  k-th) and most of those pairs were launched with other grid or block dimensions: a library picks kernels by size
  (timm's ViT: cuBLAS runs 150 kernels a call at batch 1, 126 at 2, 4 and 8, other GEMMs at each; nearly every kernel
  they share has other dimensions). Without recorded dimensions, blocks stay steps of their own. A step made of several
  blocks is one step that changes shape, its blocks' parts numbered by GPU order ('shape K/N').

What occurs once (a warm-up, a prefill, allocations) never repeats back to back and is never a block.
`split_by_shape` then cuts each step's iterations where the input shape changes (same names, other launch dimensions
or a clear change of GPU time).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.codes import factorize
from graphmode.analyzers.inference import (
    LOOP_STEP_MIN,
    MIN_SYNC_ITERATIONS,
    Occurrences,
    eager_occurrences,
    line_iterations,
    step_pool,
    sync_iterations,
)
from graphmode.analyzers.script_graphs import ScriptGraphs, primitive_root
from graphmode.tracer.store import Trace

MAX_PERIODS = 64  # periods tried (each a vectorised pass over the sequence)
REPEAT_SOURCE = "repeat "  # Occurrences.source of a step found by kernel repetition: 'repeat LENGTH RECURRENCES'
SHAPE_MARK = " shape "  # appended to an Occurrences.source by split_by_shape: '<source> shape K/N'
SHAPE_CHANGE = 1.5  # a step's GPU time changing by this factor (median of MIN_SYNC_ITERATIONS steps each side) is a new shape
STEP_MARK = " step "  # 'repeat LENGTH RECURRENCES step S/M': the rule found M steps, this is the S-th (GPU order)
SAME_STEP_SHARE = 0.5  # two blocks are one step at two shapes where this share of each one's kernels has a namesake in the other
_DIMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


@dataclass(frozen=True)
class RepeatedBlock:
    """A block of kernel names repeated back to back: its names, how many times it occurs in its runs, and the runs
    ([start, end) positions in the main stream's kernel sequence)."""

    names: tuple[str, ...]
    recurrences: int
    runs: tuple[tuple[int, int], ...]

    @property
    def covered(self) -> int:
        return self.recurrences * len(self.names)


def repeated_blocks(names: np.ndarray) -> list[RepeatedBlock]:
    """The steps of a kernel-name sequence (module doc): the chosen block first, then any other block whose runs do not
    overlap it; [] where no block recurs MIN_SYNC_ITERATIONS times back to back."""
    n = names.size
    if n < MIN_SYNC_ITERATIONS:
        return []
    vocab, codes = factorize(names)
    codes = codes.astype(np.int64)
    order = np.argsort(codes, kind="stable")
    same = codes[order][1:] == codes[order][:-1]
    gaps = (order[1:] - order[:-1])[same]
    periods, counts = np.unique(gaps[gaps <= n // MIN_SYNC_ITERATIONS], return_counts=True)
    keep = counts >= MIN_SYNC_ITERATIONS - 1
    periods, counts = periods[keep], counts[keep]
    periods = periods[np.argsort(-(counts * periods), kind="stable")[:MAX_PERIODS]]
    found: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for p in sorted(int(x) for x in periods):  # per period tried: at most MAX_PERIODS
        match = np.concatenate(([False], codes[p:] == codes[:-p], [False]))
        edges = np.flatnonzero(np.diff(match.astype(np.int8)))
        first, last = edges[0::2], edges[1::2]  # runs [first, last) of positions matching p later
        for s, e in zip(first.tolist(), last.tolist()):  # per run long enough: runs of the loop, a few per period
            copies = (e - s + p) // p
            if copies < MIN_SYNC_ITERATIONS:
                continue
            found.setdefault(primitive_root(tuple(codes[s:s + p].tolist())), []).append((s, s + copies * p))
    blocks: list[RepeatedBlock] = []
    for key, spans in found.items():  # per distinct block
        merged: list[tuple[int, int]] = []
        for s, e in sorted(set(spans)):  # one period's run and a multiple's cover the same kernels: count them once
            if merged and s < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        copies = sum((e - s) // len(key) for s, e in merged)
        if copies >= MIN_SYNC_ITERATIONS:
            blocks.append(RepeatedBlock(tuple(str(vocab[c]) for c in key), copies, tuple(merged)))
    if not blocks:
        return []
    top, pool = step_pool(blocks, lambda b: b.covered, lambda b: b.recurrences)
    step = max(pool, key=lambda b: (len(b.names), b.recurrences, -b.runs[0][0]))
    chosen = [step]
    for b in sorted(top, key=lambda b: (-b.covered, b.runs[0][0])):  # other blocks of the loop: a few
        if b is not step and not any(_overlap(b, c) for c in chosen):
            chosen.append(b)
    return chosen


def _overlap(a: RepeatedBlock, b: RepeatedBlock) -> bool:
    return any(s < e2 and s2 < e for s, e in a.runs for s2, e2 in b.runs)


_MAIN_STREAM_SQL = """
SELECT name, start_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z FROM gpu_spans
WHERE pass_id = $1 AND kind = 'kernel' AND graph_id = 0 AND stream_id = (
  SELECT stream_id FROM gpu_spans WHERE pass_id = $1 AND kind = 'kernel' AND graph_id = 0
  GROUP BY stream_id ORDER BY count(*) DESC, stream_id LIMIT 1)
ORDER BY start_ns
"""


def _main_stream(trace: Trace, pass_id: int) -> tuple[np.ndarray, np.ndarray]:
    """A pass's eager kernels on its main stream, in GPU order: their names, and their grid and block dimensions (one row
    of 6 per kernel; zeros where not recorded)."""
    r = trace.sql(_MAIN_STREAM_SQL, [pass_id])
    names = r["name"]  # as read (objects): a fixed-width copy of mangled names costs more than the analysis (analyzers.codes)
    dims = np.stack([r[c].astype(np.int64) for c in _DIMS], axis=1) if names.size else np.zeros((0, len(_DIMS)), dtype=np.int64)
    return names, dims


def kernel_steps(trace: Trace, pass_id: int) -> list[RepeatedBlock]:
    """The steps (repeated_blocks) of a pass's eager kernels on its main stream, in GPU order."""
    names, _ = _main_stream(trace, pass_id)
    return repeated_blocks(names) if names.size else []


def _namesakes(names: tuple[str, ...]) -> list[tuple[str, int]]:
    """Each kernel of a block as (name, k): the k-th kernel of that name in the block."""
    seen: dict[str, int] = {}
    out = []
    for n in names:  # per kernel of one block: a step's length
        out.append((n, seen.get(n, 0)))
        seen[n] = seen.get(n, 0) + 1
    return out


def same_step(a: RepeatedBlock, b: RepeatedBlock, dims: np.ndarray) -> bool:
    """Blocks `a` and `b` are one step at two input shapes (module doc): at least SAME_STEP_SHARE of each one's kernels
    have a namesake in the other, and most of those pairs were launched with other dimensions (`dims`: per kernel of
    the sequence the blocks were found in; each block's first copy compared)."""
    da, db = (dict(zip(_namesakes(x.names), map(tuple, dims[x.runs[0][0]:x.runs[0][0] + len(x.names)].tolist()))) for x in (a, b))
    shared = da.keys() & db.keys()
    if len(shared) < SAME_STEP_SHARE * max(len(a.names), len(b.names)):
        return False
    other = sum(da[k] != db[k] for k in shared)
    return 2 * other > len(shared)


def shape_steps(blocks: list[RepeatedBlock], dims: np.ndarray) -> list[list[RepeatedBlock]]:
    """The blocks of a sequence (repeated_blocks) as steps: blocks that are one step at several input shapes (same_step
    with any block of it) together; each step's blocks, and the steps, in GPU order."""
    steps: list[list[RepeatedBlock]] = []
    for b in sorted(blocks, key=lambda b: b.runs[0][0]):  # per block: a few
        home = next((s for s in steps if any(same_step(b, c, dims) for c in s)), None)
        if home is None:
            steps.append([b])
        else:
            home.append(b)
    return steps


def repetition_iterations(trace: Trace, sg: ScriptGraphs) -> list[Occurrences]:
    """A script that built no graph: the occurrences of its steps found by kernel repetition (read in the structure
    pass, which the line rule reads too), among the eager kernels of the timing pass, as graph 0's eager iterations,
    source 'repeat LENGTH RECURRENCES' (the block's length and recurrences back to back in that pass), with
    ' step S/M' where the rule found M > 1 steps. Each block's occurrences are cut by input shape (split_by_shape); a
    step of several blocks (shape_steps) changes shape at each of them: its parts numbered together in GPU order,
    ' shape K/N'. [] where no block recurs."""
    names, dims = _main_stream(trace, sg.structure_pass)
    steps = shape_steps(repeated_blocks(names), dims) if names.size else []
    out: list[Occurrences] = []
    for s, blocks in enumerate(steps, start=1):  # per step found: one, or one per loop of other kernels
        mark = f"{STEP_MARK}{s}/{len(steps)}" if len(steps) > 1 else ""
        parts: list[Occurrences] = []
        for b in blocks:  # per block of the step: one, or one per input shape the libraries ran other kernels at
            occ = eager_occurrences(trace, sg, step=b.names, source=f"{REPEAT_SOURCE}{len(b.names)} {b.recurrences}{mark}")
            parts.extend(part for o in occ for part in split_by_shape(trace, sg.timing_pass, o))
        if len(blocks) > 1:
            parts = [p for p in parts if p.gpu_start.size]
            parts.sort(key=lambda p: int(p.gpu_start[0]))
            parts = [dataclasses.replace(p, source=f"{parse_shape(p.source)[0]}{SHAPE_MARK}{k}/{len(parts)}")
                     for k, p in enumerate(parts, start=1)] if len(parts) > 1 else parts
        out.extend(parts)
    return out


def parse_repeat(source: str) -> tuple[int, int, int, int]:
    """'repeat 12 40' -> (12, 40, 0, 0): a kernel-repetition block's length and recurrences; 'repeat 12 40 step 2/3' ->
    (12, 40, 2, 3): the rule found 3 steps, this is the second."""
    head, mark, step = source[len(REPEAT_SOURCE):].partition(STEP_MARK)
    length, recurrences = head.split()[:2]
    s, m = step.split("/", 1) if mark else ("0", "0")
    return int(length), int(recurrences), int(s), int(m)


def parse_shape(source: str) -> tuple[str, int, int]:
    """'line t.py:10 shape 2/4' -> ('line t.py:10', 2, 4); a source without a shape: (source, 0, 0)."""
    base, mark, shape = source.rpartition(SHAPE_MARK)
    if not mark or "/" not in shape:
        return source, 0, 0
    k, n = shape.split("/", 1)
    return base, int(k), int(n)


_KERNELS_SQL = """
SELECT start_ns, end_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z FROM gpu_spans
WHERE pass_id = $1 AND kind = 'kernel' AND graph_id = 0 AND ($2 = -1 OR stream_id = $2) ORDER BY start_ns
"""


def _launch_signatures(trace: Trace, pass_id: int, o: Occurrences) -> np.ndarray | None:
    """Per iteration, a hash of its kernels' grid and block dimensions (None where the pass recorded none)."""
    k = trace.sql(_KERNELS_SQL, [pass_id, int(o.stream_id)])
    if k["start_ns"].size == 0:
        return None
    dims = np.stack([k[c].astype(np.int64) for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")], axis=1)
    if not dims.any():
        return None
    lo = np.searchsorted(k["start_ns"], o.gpu_start, side="left")
    hi = np.searchsorted(k["start_ns"], o.gpu_end, side="left")
    return np.array([hash(dims[a:b].tobytes()) for a, b in zip(lo.tolist(), hi.tolist())], dtype=np.int64)  # per iteration


def shape_parts(signature: np.ndarray | None, busy: np.ndarray) -> np.ndarray:
    """Part index per iteration of one step, in order: a new part where the iterations' launch dimensions change
    to others held for MIN_SYNC_ITERATIONS iterations or more (shorter runs belong to the part they interrupt), or,
    where they were not recorded or never change, where the GPU time changes by SHAPE_CHANGE or more between the medians
    of the MIN_SYNC_ITERATIONS iterations before and after (the largest change of each stretch of such positions)."""
    n = busy.size
    k = MIN_SYNC_ITERATIONS
    cuts: list[int] = []
    if signature is not None and np.unique(signature).size > 1:
        change = np.flatnonzero(signature[1:] != signature[:-1]) + 1
        bounds = np.concatenate(([0], change, [n]))
        current: int | None = None  # the dimensions of the part in effect (its first long run's)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):  # per run of equal dimensions: a handful
            if b - a >= k:
                if current is not None and int(signature[a]) != current:
                    cuts.append(a)
                current = int(signature[a])
        return np.searchsorted(np.asarray(cuts, dtype=np.int64), np.arange(n), side="right")
    if n >= 2 * k:
        level = np.log(np.maximum(busy.astype(np.float64), 1.0))
        win = np.lib.stride_tricks.sliding_window_view(level, k)
        med = np.median(win, axis=1)  # med[i]: median of iterations i .. i+k-1
        i = np.arange(k, n - k + 1)
        diff = np.abs(med[i] - med[i - k])
        big = diff >= np.log(SHAPE_CHANGE)
        # medians find the change (one slow iteration does not); the means place it (they peak at the boundary itself)
        csum = np.concatenate(([0.0], np.cumsum(level)))
        mean_diff = np.abs((csum[i + k] - csum[i]) - (csum[i] - csum[i - k]))
        edges = np.flatnonzero(np.diff(np.concatenate(([0], big.astype(np.int8), [0]))))
        for a, b in zip(edges[0::2].tolist(), edges[1::2].tolist()):  # per stretch of changing positions: a shape change
            cut = int(i[a + int(np.argmax(mean_diff[a:b]))])
            if cut - (cuts[-1] if cuts else 0) >= k and n - cut >= k:
                cuts.append(cut)
    return np.searchsorted(np.asarray(cuts, dtype=np.int64), np.arange(n), side="right")


def _select(o: Occurrences, sel: np.ndarray) -> Occurrences:
    """The occurrences `sel` picks (a mask or indices over them)."""
    return dataclasses.replace(o, launch=o.launch[sel], thread=o.thread[sel], gpu_start=o.gpu_start[sel],
                               gpu_end=o.gpu_end[sel], gpu_busy=o.gpu_busy[sel], launch_call_ns=o.launch_call_ns[sel])


def split_by_shape(trace: Trace, pass_id: int, o: Occurrences) -> list[Occurrences]:
    """One step's iterations cut where its input shape changes (shape_parts), each part an Occurrences whose source
    ends ' shape K/N'; the step unchanged where it has one shape."""
    part = shape_parts(_launch_signatures(trace, pass_id, o), o.gpu_busy)
    parts = int(part.max()) + 1 if part.size else 1
    if parts == 1:
        return [o]
    out = []
    for k in range(parts):  # per shape: a handful
        sel = part == k
        out.append(dataclasses.replace(_select(o, sel), source=f"{o.source}{SHAPE_MARK}{k + 1}/{parts}"))
    return out


REPETITION_MARGIN = 1.1  # the repetition's step replaces the synchronization or line rule's where it covers this much more GPU time

BESIDE_SHARE = 0.5  # a loop beside graphs is a step of the model run another way: at least this share of a graph's kernels

_GRAPHS_IN_USE_SQL = """
SELECT min(start_ns), max(end_ns) FROM graph_events WHERE pass_id = ? AND event IN ('capture', 'build', 'instantiate', 'launch')
"""


def _inside(times: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    """Per time: whether it falls inside one of the spans ([start, end] each)."""
    out = np.zeros(times.size, dtype=bool)
    for lo, hi in spans:  # the graphs' use, and one stretch per twin: a handful
        out |= (times >= lo) & (times <= hi)
    return out


def loops_beside_graphs(trace: Trace, sg: ScriptGraphs, twins: list[Occurrences]) -> list[Occurrences]:
    """A script that replays graphs and also ran a loop of eager work before its first graph was made or after its
    last replay (its model run another way, without graphs: the uncompiled model, a baseline loop): that loop's steps,
    as graph 0's eager iterations (source 'repeat LENGTH RECURRENCES', as repetition_iterations gives them). Found by
    kernel repetition among the timing pass's main-stream eager kernels that ran outside the graphs' use (from the
    first capture, build or instantiate to the end of the last launch call) and outside the stretches of the graphs'
    eager twins (`twins`: from the first's start to the last's end, with the eager work between them), as blocks recurring at least LOOP_STEP_MIN times back to back: a graphing call's warm-ups, a capture's
    side-stream warm-up and a step's eager remainder between its graphs recur less or run inside the graphs' use; and
    at least BESIDE_SHARE as long as the smallest graph's kernels (a model's step, not a cache's fill loop).
    [] where there is none, or the pass recorded no graph lifecycle."""
    window = trace.rows(_GRAPHS_IN_USE_SQL, [sg.timing_pass])
    if not window or window[0][0] is None:
        return []
    spans = [(int(window[0][0]), int(window[0][1]))]
    # a twin's whole stretch: the eager work between its iterations (a decode step's sampling) is the step's remainder
    spans += [(int(o.gpu_start.min()), int(o.gpu_end.max())) for o in twins if o.gpu_start.size]
    k = trace.sql(_MAIN_STREAM_SQL, [sg.timing_pass])
    if not k["name"].size:
        return []
    names = k["name"][~_inside(k["start_ns"].astype(np.int64), spans)]
    least = min((len(g.kernels) for g in sg.graphs if g.kernels), default=0)
    blocks = [b for b in repeated_blocks(names) if b.recurrences >= LOOP_STEP_MIN and len(b.names) >= BESIDE_SHARE * least] \
        if names.size else []
    out: list[Occurrences] = []
    for s, b in enumerate(blocks, start=1):  # per loop found: one, or a few
        mark = f"{STEP_MARK}{s}/{len(blocks)}" if len(blocks) > 1 else ""
        for o in eager_occurrences(trace, sg, step=b.names, source=f"{REPEAT_SOURCE}{len(b.names)} {b.recurrences}{mark}"):
            o = _select(o, ~_inside(o.gpu_start.astype(np.int64), spans))
            if o.gpu_start.size >= LOOP_STEP_MIN:
                out.extend(split_by_shape(trace, sg.timing_pass, o))
    return out


def loop_iterations(trace: Trace, sg: ScriptGraphs) -> list[Occurrences]:
    """A script that built no graph: its loop's steps, as graph 0's eager iterations. The rules together: the stretch
    between synchronizations (sync_iterations), else between runs of the step's call line (line_iterations), and the
    block of kernels repeated back to back (repetition_iterations). Where the first two found a step that covers at
    least 1 / REPETITION_MARGIN of the GPU time of the repeated block's iterations, theirs stands (it names the
    synchronization or the line; they agree when the step is the block); else the repeated block is the step: a stretch
    those rules found in a warm-up, a prefill or an allocation's neighbourhood recurs less than the loop's step, and
    covers less. Each step's iterations are then cut by input shape (split_by_shape)."""
    found = sync_iterations(trace, sg) or line_iterations(trace, sg)
    repeated = repetition_iterations(trace, sg)
    if repeated and _busy(repeated) > REPETITION_MARGIN * _busy(found):
        return repeated
    return [part for o in found for part in split_by_shape(trace, sg.timing_pass, o)]


def _busy(occurrences: list[Occurrences]) -> int:
    return int(sum(int(o.gpu_busy.sum()) for o in occurrences))
