"""The trace file's schema: one DuckDB file, one table per kind of record.

docs/trace-format.md explains every column; this module is the single source of the DDL so that
the writer, the loader and the validator cannot disagree. Timestamps are int64 nanoseconds on the
CUPTI clock (cupti.get_timestamp()), for host markers as well as for CUDA API calls and GPU spans.
"""

from __future__ import annotations

SCHEMA_VERSION = 4
FORMAT_NAME = "graphmode-trace"
# Version 1 kept the pyinstrument profile as one JSON string in meta.cpu_profile (tens of MB);
# version 2 keeps it in the profile_* tables. Readers read both. Version 3 adds line_stamps, version 4 memory_events.
OLDEST_READABLE_VERSION = 1

# Column lists keep their order: writers may pass columns in any order, the store reorders them.
TABLES: dict[str, list[tuple[str, str]]] = {
    "meta": [("key", "VARCHAR"), ("value", "VARCHAR")],
    "passes": [
        ("pass_id", "INTEGER"),
        ("name", "VARCHAR"),
        ("detail", "VARCHAR"),  # timing | graph | node
        ("start_ns", "BIGINT"),
        ("end_ns", "BIGINT"),
        ("dropped_records", "BIGINT"),
        ("status", "VARCHAR"),  # complete | interrupted | failed
    ],
    "api_calls": [
        ("pass_id", "INTEGER"),
        ("correlation_id", "BIGINT"),
        ("api", "VARCHAR"),  # driver | runtime
        ("cbid", "INTEGER"),
        ("name", "VARCHAR"),
        ("category", "VARCHAR"),
        ("start_ns", "BIGINT"),
        ("end_ns", "BIGINT"),
        ("process_id", "INTEGER"),
        ("thread_id", "BIGINT"),
        ("return_code", "INTEGER"),
        ("source", "VARCHAR"),  # 'file:line function' of the user's line, '' where not recorded
    ],
    "gpu_spans": [
        ("pass_id", "INTEGER"),
        ("kind", "VARCHAR"),  # kernel | memcpy | memset | graph
        ("name", "VARCHAR"),
        ("start_ns", "BIGINT"),
        ("end_ns", "BIGINT"),
        ("device_id", "INTEGER"),
        ("context_id", "INTEGER"),
        ("stream_id", "INTEGER"),
        ("correlation_id", "BIGINT"),
        ("graph_id", "BIGINT"),  # 0: not launched from a graph
        ("graph_node_id", "BIGINT"),  # 0: not a graph node (or a whole-graph span)
        ("grid_x", "INTEGER"),
        ("grid_y", "INTEGER"),
        ("grid_z", "INTEGER"),
        ("block_x", "INTEGER"),
        ("block_y", "INTEGER"),
        ("block_z", "INTEGER"),
        ("static_shared_memory", "INTEGER"),
        ("dynamic_shared_memory", "INTEGER"),
        ("registers_per_thread", "INTEGER"),
        ("bytes", "BIGINT"),
        ("copy_kind", "VARCHAR"),
    ],
    "synchronizations": [
        ("pass_id", "INTEGER"),
        ("type", "VARCHAR"),
        ("start_ns", "BIGINT"),
        ("end_ns", "BIGINT"),
        ("correlation_id", "BIGINT"),
        ("context_id", "INTEGER"),
        ("stream_id", "INTEGER"),
        ("event_id", "BIGINT"),
    ],
    "markers": [
        ("pass_id", "INTEGER"),
        ("kind", "VARCHAR"),  # phase | iteration | op | nvtx
        ("name", "VARCHAR"),
        ("mode", "VARCHAR"),  # eager | eager_sync_each | graph | '' (none)
        ("iteration", "INTEGER"),  # -1 where not an iteration
        ("start_ns", "BIGINT"),
        ("end_ns", "BIGINT"),
        ("thread_id", "BIGINT"),
        ("graph_id", "BIGINT"),  # 0 where not about one graph
    ],
    "graphs": [
        ("pass_id", "INTEGER"),
        ("graph_id", "BIGINT"),
        ("exec_id", "BIGINT"),
        ("origin", "VARCHAR"),  # capture | explicit | unknown
        ("label", "VARCHAR"),
        ("mode", "VARCHAR"),
        ("num_nodes", "INTEGER"),
        ("num_edges", "INTEGER"),
    ],
    "graph_nodes": [
        ("pass_id", "INTEGER"),
        ("graph_id", "BIGINT"),
        ("node_id", "BIGINT"),
        ("node_index", "INTEGER"),
        ("node_type", "VARCHAR"),  # kernel | memcpy | memset | host | graph | empty | event_record | ...
        ("name", "VARCHAR"),
        ("source", "VARCHAR"),  # 'file:line function' that created the node, '' if unknown
    ],
    "graph_edges": [
        ("pass_id", "INTEGER"),
        ("graph_id", "BIGINT"),
        ("from_node_id", "BIGINT"),
        ("to_node_id", "BIGINT"),
    ],
    "graph_events": [
        ("pass_id", "INTEGER"),
        ("graph_id", "BIGINT"),
        ("exec_id", "BIGINT"),
        ("event", "VARCHAR"),  # capture | build | instantiate | upload | update | launch | destroy
        ("start_ns", "BIGINT"),
        ("end_ns", "BIGINT"),
        ("correlation_id", "BIGINT"),
        ("thread_id", "BIGINT"),
        ("return_code", "INTEGER"),  # of the CUDA call (0 = success); an 'update' that failed keeps its code
    ],
    # Executions of the user's own lines (tracer/line_stamps.py, Python 3.12+): every one in a script's detail
    # run (on the CUPTI clock), the lines that start iterations in its timing run (pass detail 'stamps', on
    # that process's perf_counter_ns clock: only differences between its stamps mean anything).
    "line_stamps": [
        ("pass_id", "INTEGER"),
        ("thread_id", "BIGINT"),  # OS thread id, as api_calls.thread_id
        # Python's name of the thread ('MainThread', 'Thread-1 (worker)'): the same in every run
        ("thread_name", "VARCHAR"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("function", "VARCHAR"),
        ("ts_ns", "BIGINT"),  # when the line started to execute
    ],
    # PyTorch's caching-allocator actions in a script's one traced run (tracer/allocator_history.py): each block
    # allocated and freed, as PyTorch's allocator history gives them (torch.cuda.memory._snapshot()['device_traces'] of
    # the traced device), on the CUPTI clock (moved from PyTorch's Unix-time microseconds).
    "memory_events": [
        ("pass_id", "INTEGER"),
        ("ts_ns", "BIGINT"),
        ("action", "VARCHAR"),  # alloc | free_completed | segment_alloc | segment_free | ... (PyTorch's names)
        ("addr", "BIGINT"),  # the block's (or segment's) device address
        ("size", "BIGINT"),  # bytes, as the allocator rounded them
        ("stream", "BIGINT"),  # the stream the block belongs to
    ],
    # The CPU profile (pyinstrument), tracer/profile_store.py. Frames are pyinstrument's own frame
    # strings, interned; a stack is a path in a prefix tree of frames; a sample names its stack.
    "profile_frames": [
        ("frame_id", "INTEGER"),  # from 1
        ("frame_info", "VARCHAR"),  # pyinstrument's frame string: function, file, line, attributes
    ],
    "profile_stacks": [
        ("stack_id", "INTEGER"),  # from 1
        ("parent_id", "INTEGER"),  # the stack this one extends by one frame; 0 for an outermost frame
        ("frame_id", "INTEGER"),  # innermost frame of this stack
    ],
    "profile_samples": [
        ("sample_index", "INTEGER"),  # order of the samples in the run
        ("stack_id", "INTEGER"),
        ("seconds", "DOUBLE"),  # time the sample stands for
    ],
}

# The schema version in which each table or column first appeared: a reader of an older file sees
# these as empty tables / default values.
ADDED_IN: dict[str, int] = {"profile_frames": 2, "profile_stacks": 2, "profile_samples": 2,
                            "graph_events.return_code": 2, "line_stamps": 3, "memory_events": 4}

# Columns a writer may omit: filled with these defaults so that partial records still load.
DEFAULTS: dict[str, object] = {
    "INTEGER": 0,
    "BIGINT": 0,
    "VARCHAR": "",
    "DOUBLE": 0.0,
}

# Columns holding the start and end of a host or GPU span (NULL-checked and validated by readers).
SPAN_TABLES = ("api_calls", "gpu_spans", "synchronizations", "markers", "graph_events")

DETAIL_LEVELS = ("timing", "graph", "node", "stamps")  # stamps: a script's timing run (no CUPTI)
GPU_SPAN_KINDS = ("kernel", "memcpy", "memset", "graph")
API_CATEGORIES = (
    "kernel_launch",
    "graph_launch",
    "sync",
    "capture",
    "instantiate",
    "upload",
    "update",
    "graph_build",
    "graph_destroy",
    "memcpy",
    "memset",
    "memory",
    "event",
    "stream",
    "module",
    "other",
)


def create_statements() -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(f'{c} {t}' for c, t in cols)})"
        for name, cols in TABLES.items()
    ]
