"""Session 26: the calibration of a capture's tracing cost under the one run's session that copies the graphs PyTorch
destroys in its capture block, into a cost model (the bundled H200 model), from launch probes made untraced and
--traced (call 4's launch_probes.jsonl).

Only the copied capture keys (capture_copied_per_graph, capture_copied_per_node) are set; the launchers' costs and the
earlier capture keys stay as they were. The probes are kept in calibration['tracer_probes'] and their provenance in
calibration["tracer_topology_copies"].
Usage: python fit_copied.py PROBES.jsonl MODEL.json NOTE
"""

from __future__ import annotations

import dataclasses
import json
import sys

from graphmode.analyzers.costmodel import (TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_NODE_COPIED, fit_tracer_costs,
                                           load_model, save_model)

probes_path, model_path, note = sys.argv[1], sys.argv[2], sys.argv[3]
probes = [json.loads(line) for line in open(probes_path) if line.strip()]
fit = fit_tracer_costs(probes, "needed")
copied = {k: fit[k] for k in (TRACER_CAPTURE_GRAPH_COPIED, TRACER_CAPTURE_NODE_COPIED)}
model = load_model(model_path)
kept = list(model.calibration.get("tracer_probes", []) or [])
model = dataclasses.replace(model, tracer={**model.tracer, **copied},
                            calibration={**model.calibration, "tracer_probes": kept + probes, "tracer_topology_copies": note})
save_model(model, model_path)
for k, v in copied.items():
    print(f"{k}: median {v.median / 1e3:.2f} us [{v.p10 / 1e3:.2f}-{v.p90 / 1e3:.2f}], {v.n} traced processes")
