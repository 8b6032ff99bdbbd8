"""Multi-process jobs: which rank this process is, where its trace goes, what its trace says about it.

Each rank of a job (torchrun, mpirun, srun, ...) traces itself and writes its own file; no rank
waits on another. The launcher tells a process its place in the job through environment
variables; `detect_rank` reads them. A rank's trace goes to `<stem>.rank<R>.gmtrace` next to the
path the user asked for, and its `meta.rank` records the rank, local rank, world size, host, the
GPUs it could see, the GPU its work ran on, and a reading of the CUPTI clock against the host's
clocks (docs/ranks.md says why: on Linux CUPTI timestamps are CLOCK_REALTIME, so the ranks of one
host share one clock).
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from graphmode.tracer.cupti_session import timestamp

# (launcher, rank, world size, local rank, local world size, node rank): the first whose rank and world
# size are both set wins. torchrun first: under Slurm or MPI a torchrun-started process also carries
# the outer launcher's variables (of the torchrun process, not of this rank).
LAUNCHERS: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"),
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK"),
    ("MVAPICH", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
     "MV2_COMM_WORLD_LOCAL_SIZE", ""),
    ("MPICH/Intel MPI (PMI)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", ""),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "", "SLURM_NODEID"),
)

RANK_FILE = re.compile(r"\.rank(\d+)$")


@dataclass(frozen=True)
class RankInfo:
    """This process's place in a multi-process job, as its launcher stated it."""

    rank: int
    world_size: int
    local_rank: int | None
    local_world_size: int | None
    node_rank: int | None
    launcher: str  # 'torchrun' (or any launcher setting RANK/WORLD_SIZE), 'Open MPI', 'Slurm', ...
    hostname: str


def _int(env: Mapping[str, str], name: str) -> int | None:
    if not name:
        return None
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None


def detect_rank(env: Mapping[str, str] | None = None) -> RankInfo | None:
    """The rank this process was launched as; None outside a job of two or more processes."""
    env = os.environ if env is None else env
    for launcher, rank_var, size_var, local_var, local_size_var, node_var in LAUNCHERS:
        rank, size = _int(env, rank_var), _int(env, size_var)
        if rank is None or size is None:
            continue
        if size < 2 or not 0 <= rank < size:
            return None  # a job of one process (or nonsense): an ordinary trace
        name = launcher
        if launcher == "torchrun" and "TORCHELASTIC_RUN_ID" not in env:
            name = "RANK/WORLD_SIZE environment"
        return RankInfo(rank, size, _int(env, local_var), _int(env, local_size_var), _int(env, node_var), name,
                        socket.gethostname())
    return None


def rank_tag(rank: int, world_size: int) -> str:
    """'rank07' for rank 7 of 64: zero-padded to the width of the largest rank, so file names sort."""
    return f"rank{rank:0{len(str(max(world_size - 1, 0)))}d}"


def rank_trace_path(path: str | os.PathLike[str], info: RankInfo | None = None) -> Path:
    """Where this rank writes its trace: `<stem>.rank<R><suffix>` beside `path`; `path` itself outside a job.

    Idempotent: a path already named for this rank is returned as it is.
    """
    p = Path(path)
    info = detect_rank() if info is None else info
    if info is None:
        return p
    tag = rank_tag(info.rank, info.world_size)
    if p.stem.endswith("." + tag):
        return p
    suffix = p.suffix or ".gmtrace"
    return p.with_name(f"{p.stem if p.suffix else p.name}.{tag}{suffix}")


def device_ordinal(info: RankInfo | None = None) -> int:
    """The GPU the tracer makes current before the program starts: the local rank's, the convention of
    torchrun and of every launcher that gives a process all of a node's GPUs; device 0 where the local
    rank is unknown or the process sees fewer GPUs (one GPU per process through CUDA_VISIBLE_DEVICES)."""
    info = detect_rank() if info is None else info
    if info is None or info.local_rank is None:
        return 0
    try:
        from cuda.bindings import driver as cu

        if int(cu.cuInit(0)[0]) != 0:
            return 0
        err, count = cu.cuDeviceGetCount()
        return info.local_rank if int(err) == 0 and info.local_rank < int(count) else 0
    except Exception:
        return 0


def visible_devices() -> list[dict[str, Any]]:
    """Index (CUDA ordinal in this process), UUID, name and PCI bus id of every GPU this process sees."""
    out: list[dict[str, Any]] = []
    try:
        from cuda.bindings import driver as cu

        if int(cu.cuInit(0)[0]) != 0:
            return out
        err, count = cu.cuDeviceGetCount()
        for i in range(int(count) if int(err) == 0 else 0):
            _, dev = cu.cuDeviceGet(i)
            _, name = cu.cuDeviceGetName(256, dev)
            entry: dict[str, Any] = {"index": i, "name": name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)}
            e, raw = cu.cuDeviceGetUuid(dev)
            entry["uuid"] = "GPU-" + bytes(raw.bytes).hex() if int(e) == 0 and hasattr(raw, "bytes") else ""
            try:
                e, bus = cu.cuDeviceGetPCIBusId(64, dev)
                entry["pci_bus_id"] = bus.split(b"\0", 1)[0].decode() if int(e) == 0 and isinstance(bus, bytes) else ""
            except Exception:
                entry["pci_bus_id"] = ""
            out.append(entry)
    except Exception:
        pass
    return out


def clock_reading(samples: int = 5) -> dict[str, Any]:
    """The CUPTI clock read between two CLOCK_REALTIME reads (the tightest of a few brackets).

    CUPTI's default timestamp on Linux is clock_gettime(CLOCK_REALTIME) (cupti_activity.h,
    cuptiActivityRegisterTimestampCallback), with GPU timestamps interpolated onto it. The offset
    recorded here lets a reader check that for each rank: near zero means the ranks of one host
    share a clock, and ranks of different hosts differ by how far their hosts' clocks are apart.
    """
    best: tuple[int, int, int] | None = None
    try:
        for _ in range(samples):
            a = time.time_ns()
            c = timestamp()
            b = time.time_ns()
            if best is None or b - a < best[2]:
                best = ((a + b) // 2, c, b - a)
    except Exception as e:  # a reading that fails must not stop the run: the report says the check is missing
        return {"error": f"the CUPTI clock could not be read: {e}"}
    assert best is not None
    realtime, cupti, bracket = best
    return {"cupti_ns": cupti, "realtime_ns": realtime, "cupti_minus_realtime_ns": cupti - realtime,
            "bracket_ns": bracket, "monotonic_ns": time.monotonic_ns()}


def rank_meta(info: RankInfo | None = None) -> dict[str, Any]:
    """`{'rank': {...}}` for the trace's metadata, or `{}` outside a job. Written when tracing starts,
    so that even the trace of a rank that dies says which rank it was."""
    info = detect_rank() if info is None else info
    if info is None:
        return {}
    entry: dict[str, Any] = asdict(info)
    entry.update({"pid": os.getpid(), "devices": visible_devices(),
                  "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
                  "clock": clock_reading()})
    return {"rank": entry}


def rank_meta_at_stop(trace: Any) -> dict[str, Any]:
    """`{'rank': {..., 'gpu': {...}}}`: the GPU this rank's work ran on (the device with the most GPU
    spans), added when tracing stops; `{}` for a trace that is not a rank's. Never raises."""
    try:
        entry = trace.meta.get("rank")
        if not isinstance(entry, dict):
            return {}
        rows = trace.rows("SELECT device_id, count(*) FROM gpu_spans GROUP BY 1 ORDER BY 2 DESC, 1")
        gpu: dict[str, Any] = {"index": None, "uuid": "", "name": "", "spans": 0, "devices_used": len(rows)}
        if rows:
            index, spans = int(rows[0][0]), int(rows[0][1])
            known = {int(d["index"]): d for d in entry.get("devices", []) if isinstance(d, dict) and "index" in d}
            gpu.update({"index": index, "spans": spans, "uuid": known.get(index, {}).get("uuid", ""),
                        "name": known.get(index, {}).get("name", "")})
        return {"rank": {**entry, "gpu": gpu}}
    except Exception:
        return {}
