"""How long, and how much memory, does `graphmode export --format perfetto` take on a 10M-event trace? (issue 12)

    python benchmarks/export_speed.py [--events 10000000] [--keep PATH] [--trace PATH]

Builds the trace with benchmarks/report_speed.py's generator (distributions drawn from a real
recording under tests/data/, as there), or reuses --trace. Then runs `graphmode export --format
perfetto` in a fresh process and reads that process's peak RSS (VmHWM, as report_speed does) and
wall time; finally reads the file back with the perfetto package's classes to count its slices.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _report_speed():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("report_speed", REPO / "benchmarks" / "report_speed.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def measure(trace: Path, out: Path) -> dict[str, float]:
    """In a fresh process: the export's wall time and this process's peak RSS."""
    from graphmode.reports.perfetto import export_perfetto
    from graphmode.tracer.store import load

    t0 = time.perf_counter()
    with load(trace) as t:
        result = export_perfetto(t, out)
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": _report_speed()._peak_rss_mb(), "slices": result.events,
            "flows": result.flows, "bytes": result.bytes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--trace", type=Path, default=None, help="export this trace instead of generating one")
    ap.add_argument("--keep", type=Path, default=None, help="write the generated trace here and keep it")
    ap.add_argument("--measure", nargs=2, type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    rs = _report_speed()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace or args.keep or Path(tmp) / "speed.gmtrace"
        if args.trace is None:
            real = sorted((REPO / "tests" / "data").glob("*.gmtrace"))
            dists = rs.distributions_from(real[0]) if real else dict(rs.SYNTHETIC)
            source = f"real recording {real[0].name}" if real else "SYNTHETIC distributions"
            t0 = time.perf_counter()
            counts = rs.generate(path, args.events, dists, source)
            print(f"generated {sum(counts.values()):,} events ({', '.join(f'{k} {v:,}' for k, v in counts.items())}) "
                  f"from {source} in {time.perf_counter() - t0:.0f} s; file {path.stat().st_size / 2**20:.0f} MiB", flush=True)
        out = Path(tmp) / "export.pftrace"
        proc = subprocess.run([sys.executable, __file__, "--measure", str(path), str(out)], capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(proc.stderr)
        r = json.loads(proc.stdout)
    print(f"perfetto export: {r['seconds']:.0f} s wall ({r['cpu_seconds']:.0f} s CPU), peak RSS {r['peak_rss_mb']:.0f} MiB, {r['slices']:,} slices and "
          f"{r['flows']:,} flows, {r['bytes'] / 2**20:.0f} MiB written")


if __name__ == "__main__":
    main()
