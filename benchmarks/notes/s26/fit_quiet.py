"""Session 26: the calibration of a quiet capture's cost into a cost model (the bundled H200 model), from launch probes
made untraced and --traced under the one run's session with quiet captures (call3/launch_probes.jsonl).

Only the quiet capture keys (capture_quiet_per_graph, capture_quiet_per_node) are added; the launchers' costs and the
earlier capture keys stay as they were. The probes are kept in calibration['tracer_probes'] and their provenance in
calibration['tracer_quiet_captures'].
Usage: python fit_quiet.py PROBES.jsonl MODEL.json NOTE
"""

from __future__ import annotations

import dataclasses
import json
import sys

from graphmode.analyzers.costmodel import (TRACER_CAPTURE_GRAPH_QUIET, TRACER_CAPTURE_NODE_QUIET, fit_tracer_costs,
                                           load_model, save_model)

probes_path, model_path, note = sys.argv[1], sys.argv[2], sys.argv[3]
probes = [json.loads(line) for line in open(probes_path) if line.strip()]
fit = fit_tracer_costs(probes, "needed")
quiet = {k: fit[k] for k in (TRACER_CAPTURE_GRAPH_QUIET, TRACER_CAPTURE_NODE_QUIET)}
model = load_model(model_path)
kept = list(model.calibration.get("tracer_probes", []) or [])
model = dataclasses.replace(model, tracer={**model.tracer, **quiet},
                            calibration={**model.calibration, "tracer_probes": kept + probes, "tracer_quiet_captures": note})
save_model(model, model_path)
for k, v in quiet.items():
    print(f"{k}: median {v.median / 1e3:.2f} us [{v.p10 / 1e3:.2f}-{v.p90 / 1e3:.2f}], {v.n} traced processes")
