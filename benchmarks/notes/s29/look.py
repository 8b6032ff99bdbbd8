import json, glob, sys
from graphmode.tracer.store import load
from graphmode.analyzers import analyze
for f in sorted(glob.glob(sys.argv[1] if len(sys.argv) > 1 else "*.gmtrace")):
    t = load(f)
    a = analyze(t)
    run = t.meta["runs"][0]
    uc = (run.get("untraced_captures") or {}).get("captures") or []
    print(f, "untraced caps:", [(c["graph_id"], c["reason"], round(c["detach_ns"]/1e6,1), round(c["attach_ns"]/1e6,1)) for c in uc], run.get("untraced_captures",{}).get("errors"))
    for g in a.graphs:
        c = g.cost
        if c is None: continue
        be = g.break_even
        hi = "never" if be and be.interval_high_never else (be.interval_high if be else "")
        print(f"  g{g.graph_id} {g.status} untr={c.capture_untraced} total={c.total_ns/1e3:.0f}us build={(c.build_ns or 0)/1e3:.0f} inst={(c.instantiate_ns or 0)/1e3:.0f} fw={(c.framework_ns or 0)/1e3:.0f} exc={(c.first_launch_excess_ns or 0)/1e3:.0f} corr={(c.tracer_correction_ns or 0)/1e3:.0f} eager={be.eager_ns/1e3 if be and be.eager_ns else 0:.0f} graph={be.graph_ns/1e3 if be and be.graph_ns else 0:.0f} be={be.replays if be else None} [{be.interval_low if be else ''},{hi}]")
