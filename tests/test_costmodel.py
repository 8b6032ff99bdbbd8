"""The cost model (analyzers.costmodel): the fit recovers hand-chosen coefficients from SYNTHETIC
calibration tables, the file round-trips, and the right model is chosen for a trace's GPU."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from graphmode.analyzers.notes import note
from graphmode.reports.notes import word
from graphmode.analyzers.costmodel import (
    QUANTITIES,
    CostModelError,
    choose_model,
    find_model,
    fit_quantity,
    load_model,
    model_file_name,
    save_model,
)
from synthetic_costmodel import TRUE, synthetic_model, synthetic_table


def test_noise_free_table_gives_the_true_coefficients_and_no_spread() -> None:
    m = synthetic_model()
    for q, c in m.costs.items():
        for f, v in TRUE[q].items():
            assert c.coefficient(f) == pytest.approx(v, abs=1e-6 * max(abs(v), 1)), (q, f)
        assert c.resid_sd == pytest.approx(0, abs=1e-6)
    # replay_gpu_overhead is the replay's GPU span less the path nodes' own durations (CUPTI): it must
    # not absorb the kernels' 1.5 us
    assert m.costs["replay_gpu_overhead"].coefficient("path_kernel_tiny") == pytest.approx(150)
    assert m.costs["replay_gpu_overhead"].coefficient("path_kernel_spin") == pytest.approx(150)
    assert m.first_graph_extra() is not None and m.first_graph_extra().median == pytest.approx(225_000)  # type: ignore[union-attr]
    assert m.eager_tail is not None and m.eager_tail.median == pytest.approx(3_000)


def test_a_node_api_build_is_fitted_where_measured_and_optional_in_a_model_file(tmp_path: Path) -> None:
    """build_api is fitted from the rows that built their graph with the node API (kernel, memset and memcpy
    shapes); a node-API program's first graph comes from its own probes (SYNTHETIC 150 + 100 + 0 + 5 us); a model
    file written before either was measured still loads, without them."""
    m = synthetic_model()
    c = m.costs["build_api"]
    assert c.rows == sum(1 for r in m.table if r.get("build_api") is not None) > 0
    assert not any(r.get("build_api") is not None for r in m.table if r.get("host") or r.get("event"))
    assert c.mean({"kernel": 10, "edges": 9}) == pytest.approx(15_000 + 10 * 8_000 + 9 * 300)
    assert m.first_graph_extra(api=True).median == pytest.approx(255_000)  # type: ignore[union-attr]
    p = save_model(m, tmp_path / "m.json")
    d = json.loads(p.read_text())
    del d["costs"]["build_api"], d["first_graph_api"]
    p.write_text(json.dumps(d))
    old = load_model(p)
    assert "build_api" not in old.costs and old.first_graph_extra(api=True) is None
    assert old.costs["capture"].coef == pytest.approx(m.costs["capture"].coef)
    # a table with no node-API rows fits no build_api and fails nothing
    rows = [{k: v for k, v in r.items() if k != "build_api"} for r in synthetic_table()]
    from graphmode.analyzers.costmodel import fit_cost_model
    from synthetic_costmodel import EAGER_GAP_NS, MACHINE, NODE_GPU_NS

    assert "build_api" not in fit_cost_model(rows, NODE_GPU_NS, EAGER_GAP_NS, [], MACHINE).costs


def test_noisy_table_recovers_the_coefficients_within_their_standard_errors() -> None:
    # 3% relative noise on timings, 300 ns absolute on differences, 5 repeats of each shape
    m = synthetic_model(rel_noise=0.03, abs_noise=300, seed=7, repeats=5)
    z = []
    for q, c in m.costs.items():
        se = np.sqrt(np.diag(np.asarray(c.cov)))
        for j, f in enumerate(c.features):
            if se[j] > 0:
                z.append((c.coef[j] - TRUE[q].get(f, 0.0)) / se[j])
        # the residual spread estimates the noise put in
        assert c.resid_sd == pytest.approx(0.03 if (c.relative or c.relative_to) else 300, rel=0.3), q
        assert len(c.residuals) == c.rows and c.max_abs_residual() > 0
    z_arr = np.abs(np.asarray(z))
    assert np.mean(z_arr < 2) > 0.85  # about 95% of |z| < 2 if the standard errors are right
    assert z_arr.max() < 5


def test_spread_of_a_prediction_grows_with_the_graph() -> None:
    m = synthetic_model(rel_noise=0.03, abs_noise=300, seed=3)
    c = m.costs["instantiate"]
    small, large = {"kernel": 10, "edges": 9}, {"kernel": 1000, "edges": 999}
    assert c.sd(large) > c.sd(small) > 0
    # relative residuals: one measurement's spread is resid_sd * mean, at least
    assert c.sd(large) >= c.resid_sd * c.mean(large)


def test_a_fit_without_enough_rows_says_what_to_do() -> None:
    rows = synthetic_table(repeats=1)[:3]
    with pytest.raises(CostModelError, match="--repeats"):
        fit_quantity("instantiate", rows)


def test_collinear_features_are_refused() -> None:
    # only kernel chains: kernel and edges always move together (edges = kernels - 1 is separable, but
    # memset == kernel here makes the two columns identical)
    rows = [{"kernel": n, "memset": n, "edges": n - 1, "instantiate": 1000.0 + 10 * n} for n in (2, 4, 8, 16, 32, 64)]
    with pytest.raises(CostModelError, match="collinear"):
        fit_quantity("instantiate", rows)


def test_first_graph_rows_stay_out_of_the_fit() -> None:
    rows = synthetic_table()
    extra = dict(rows[0], first_graph=True, instantiate=rows[0]["instantiate"] * 10)
    fitted = fit_quantity("instantiate", rows)
    with_extra = fit_quantity("instantiate", rows + [extra])
    assert fitted.coef == pytest.approx(with_extra.coef) and with_extra.rows == fitted.rows


def test_model_file_round_trip(tmp_path: Path) -> None:
    m = synthetic_model(rel_noise=0.02, abs_noise=100)
    p = save_model(m, tmp_path / model_file_name(m.gpu_name))
    assert p.name == "costmodel-synthetic-gpu.json"
    back = load_model(p)
    assert back.key == m.key and back.path == str(p)
    for q in QUANTITIES:  # the synthetic model has every quantity, build_api included
        assert back.costs[q].coef == pytest.approx(m.costs[q].coef)
        assert back.costs[q].sd({"kernel": 20}) == pytest.approx(m.costs[q].sd({"kernel": 20}))
    assert back.first_graph_extra().median == pytest.approx(m.first_graph_extra().median)  # type: ignore[union-attr]
    assert len(back.table) == len(m.table)
    d = json.loads(p.read_text())
    assert d["format"] == "graphmode-costmodel" and "residuals" in d["costs"]["instantiate"]


def test_torch_probes_become_first_and_later_spreads_and_round_trip(tmp_path: Path) -> None:
    """SYNTHETIC torch probes (three fresh processes, two later captures each): 'first' has one sample per
    process, 'later' pools every later capture; a model without them (an older file) reads as {}."""
    from graphmode.analyzers.costmodel import fit_cost_model
    from synthetic_costmodel import EAGER_GAP_NS, FIRST_GRAPH_EXTRA, MACHINE, NODE_GPU_NS

    probes = [{"first_ns": 9e6, "later_ns": [1e6, 2e6]}, {"first_ns": 12e6, "later_ns": [1.5e6, 3e6]},
              {"first_ns": 30e6, "later_ns": [1.2e6, 1.4e6]}]
    m = fit_cost_model(synthetic_table(3), NODE_GPU_NS, EAGER_GAP_NS, [dict(FIRST_GRAPH_EXTRA)] * 3, MACHINE, {}, probes)
    assert m.torch_capture["first"].samples == (9e6, 12e6, 30e6) and m.torch_capture["first"].median == 12e6
    assert m.torch_capture["later"].n == 6 and m.torch_capture["later"].median == pytest.approx((1.4e6 + 1.5e6) / 2)
    back = load_model(save_model(m, tmp_path / "m.json"))
    assert back.torch_capture["first"].samples == (9e6, 12e6, 30e6) and back.torch_capture["later"].n == 6
    d = json.loads((tmp_path / "m.json").read_text())
    del d["torch_capture"]
    (tmp_path / "old.json").write_text(json.dumps(d))
    assert load_model(tmp_path / "old.json").torch_capture == {}


def test_damaged_model_files_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(CostModelError, match="graphmode calibrate"):
        load_model(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "graphmode-costmodel", "format_version": 1, "costs": {}}')
    with pytest.raises(CostModelError, match="incomplete or damaged"):
        load_model(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(CostModelError, match="not a graphmode cost model"):
        load_model(bad)


def test_the_model_of_the_traces_gpu_is_chosen_and_another_gpus_is_said() -> None:
    m = synthetic_model()
    meta = {"gpu_name": "SYNTHETIC GPU", "driver_version": "0.0", "cuda_driver_version": 0}
    assert choose_model(meta, [m]).match == "exact"
    c = choose_model({**meta, "driver_version": "999.1"}, [m])
    assert c.match == "same_gpu" and c.note is not None and (c.note.kind, c.note["driver"]) == ("cost_model_other_driver", "999.1")
    assert "this trace has driver 999.1" in word(c.note)
    c = choose_model({"gpu_name": "NVIDIA B200", "driver_version": "1", "cuda_driver_version": 13000}, [m])
    assert c.match == "other_gpu" and c.model is m and c.note is not None and c.note["model_gpu"] == "SYNTHETIC GPU"
    assert "calibrated on SYNTHETIC GPU" in word(c.note) and "graphmode calibrate" in word(c.note)
    assert choose_model(meta, []).match == "none" and choose_model(meta, []).note == note("no_cost_model")


def test_find_model_reads_the_environment_and_the_user_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = synthetic_model()
    meta = {"gpu_name": "SYNTHETIC GPU", "driver_version": "0.0", "cuda_driver_version": 0}
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    save_model(m, tmp_path / "data" / "graphmode" / model_file_name(m.gpu_name))
    assert find_model(meta).match == "exact"
    (tmp_path / "data" / "graphmode" / "costmodel-broken.json").write_text("{")  # a damaged file elsewhere is skipped
    assert find_model(meta).match == "exact"
    other = save_model(m, tmp_path / "elsewhere.json")
    monkeypatch.setenv("GRAPHMODE_COSTMODEL", str(other))
    assert find_model(meta).model is not None
    with pytest.raises(CostModelError):
        find_model(meta, tmp_path / "nope.json")


def test_a_kernels_per_node_cost_is_interpolated_by_its_duration() -> None:
    # synthetic calibration kernels: 1500 ns (short) and 5200 ns (spin)
    m = synthetic_model()
    share = m.kernel_split(np.array([1000.0, 1500.0, 3350.0, 5200.0, 9000.0]))
    assert share.tolist() == pytest.approx([0.0, 0.0, 0.5, 1.0, 1.0])
    no_spin = synthetic_model()
    no_spin.node_gpu_ns.pop("kernel_spin")
    assert no_spin.kernel_split(np.array([3350.0])).tolist() == [0.0]


def test_a_kernels_shares_mix_its_duration_and_its_grid() -> None:
    # SYNTHETIC model: 100 SMs; a kernel of 50 blocks is half wide, 100 or more all wide, one block not at all; the
    # rest splits between the short and the spin kernel by duration (1500 and 5200 ns)
    m = synthetic_model()
    tiny, spin, wide = m.kernel_shares(np.array([3350.0, 3350.0, 3350.0, 1500.0]), np.array([1, 50, 400, 50]))
    assert wide.tolist() == pytest.approx([0.01, 0.5, 1.0, 0.5])
    assert spin.tolist() == pytest.approx([0.99 * 0.5, 0.25, 0.0, 0.0])
    assert (tiny + spin + wide).tolist() == pytest.approx([1.0] * 4)
    # an older model (no SM count or no wide-kernel measurement): no wide share at all
    old = dataclasses.replace(m, sm_count=0)
    assert old.wide_share(np.array([400])).tolist() == [0.0]


def test_the_replay_overhead_is_fitted_for_the_spans_relative_error() -> None:
    """SYNTHETIC: 3% relative noise on the replay's GPU span. The overhead's residuals are relative to the span
    (costmodel.RELATIVE_TO), so the spread of one replay grows with the span it is evaluated at."""
    m = synthetic_model(rel_noise=0.03, seed=3, repeats=5)
    ov = m.costs["replay_gpu_overhead"]
    assert ov.relative_to == "replay_gpu" and not ov.relative
    assert ov.resid_sd == pytest.approx(0.03, rel=0.3)
    counts = {"path_kernel_tiny": 10.0}
    assert ov.sd(counts, scale=200_000) > 5 * ov.sd(counts, scale=20_000)
    assert ov.sd(counts, scale=200_000) == pytest.approx(ov.resid_sd * 200_000, rel=0.05)  # one replay's noise dominates


def test_tree_probes_become_spreads_and_the_new_fields_round_trip(tmp_path: Path) -> None:
    """SYNTHETIC cudagraph-tree probes: per process, the first compiled function's recording ('first'), the second's
    ('later'), every steady call's host time ('call_host'); a failed recording (no framework_ns) is left out."""
    from graphmode.analyzers.costmodel import fit_cost_model, tree_capture_spreads
    from synthetic_costmodel import EAGER_GAP_NS, FIRST_GRAPH_EXTRA, MACHINE, NODE_GPU_NS

    probes = [{"recordings": [{"framework_ns": 20e6, "call_host_ns": 100e3}, {"framework_ns": 4e6, "call_host_ns": 80e3}]},
              {"recordings": [{"framework_ns": 30e6, "call_host_ns": 120e3}, {"error": "recording in call 0 of 8"}]}]
    spreads = tree_capture_spreads(probes)
    assert spreads["first"].samples == (20e6, 30e6) and spreads["later"].samples == (4e6,)
    assert spreads["call_host"].median == 100e3 and spreads["call_host"].n == 3
    m = fit_cost_model(synthetic_table(3), NODE_GPU_NS, EAGER_GAP_NS, [dict(FIRST_GRAPH_EXTRA)] * 3, MACHINE, {}, [], probes)
    back = load_model(save_model(m, tmp_path / "m.json"))
    assert back.tree_capture["first"].samples == (20e6, 30e6) and back.sm_count == 100
    assert back.costs["replay_gpu_overhead"].relative_to == "replay_gpu"
    d = json.loads((tmp_path / "m.json").read_text())
    for k in ("tree_capture", "sm_count"):
        del d[k]
    del d["costs"]["replay_gpu_overhead"]["relative_to"]
    (tmp_path / "old.json").write_text(json.dumps(d))
    old = load_model(tmp_path / "old.json")  # a model written before these fields
    assert (old.tree_capture, old.sm_count, old.costs["replay_gpu_overhead"].relative_to) == ({}, 0, "")


def test_an_older_calibration_table_gets_its_off_path_nodes_from_its_counts() -> None:
    """Rows of a calibration made before the off-path features (no 'off_nodes'): the nodes less those on the path."""
    from graphmode.analyzers.costmodel import fit_cost_model
    from synthetic_costmodel import EAGER_GAP_NS, FIRST_GRAPH_EXTRA, MACHINE, NODE_GPU_NS

    table = synthetic_table(3)
    for r in table:
        r["actual_nodes"] = r["predicted_nodes"] = r["kernel"] + r["memset"] + r["memcpy"] + r["host"] + r["event"]
    want = {r["shape"]: r["off_nodes"] for r in table}
    for r in table:
        del r["off_nodes"]
    m = fit_cost_model(table, NODE_GPU_NS, EAGER_GAP_NS, [dict(FIRST_GRAPH_EXTRA)] * 3, MACHINE, {})
    assert {r["shape"]: r["off_nodes"] for r in m.table} == want
    assert m.costs["replay_gpu_overhead"].coefficient("off_nodes") == pytest.approx(200, abs=1e-6)


def test_a_processs_second_graph_has_its_own_extra_where_the_probes_timed_it() -> None:
    """SYNTHETIC probes that also timed the second graph ('second_<k>': its extra over the steady state): the model
    sums them as it sums the first's (10 + 80 + 0 + 5 us = 95 us); probes without them (a calibration before the
    probe timed the second graph) give none, and there is no third."""
    from graphmode.analyzers.costmodel import fit_cost_model
    from synthetic_costmodel import EAGER_GAP_NS, FIRST_GRAPH_EXTRA, MACHINE, NODE_GPU_NS

    second = {"second_capture": 10_000.0, "second_instantiate": 80_000.0, "second_upload": 0.0, "second_first_launch": 5_000.0}
    m = fit_cost_model(synthetic_table(3), NODE_GPU_NS, EAGER_GAP_NS, [{**FIRST_GRAPH_EXTRA, **second}] * 3, MACHINE, {})
    assert m.first_graph_extra().median == pytest.approx(225_000)  # type: ignore[union-attr]
    assert m.first_graph_extra(nth=2).median == pytest.approx(95_000)  # type: ignore[union-attr]
    assert m.first_graph_extra(nth=3) is None
    assert synthetic_model().first_graph_extra(nth=2) is None


def test_torch_probes_give_a_pytorch_processs_first_graph_extra() -> None:
    """SYNTHETIC torch probes with each graph's instantiate and first replay timed apart (us): per process, graph
    i's instantiate + first replay minus the median of those from the third graph on. Process 1: 130+120 = 250
    against the median of (60+80, 70+90, 50+80) = 140 -> 110; its second 80+90 = 170 -> 30. Process 2: 200+100 =
    300 against the median of (60+80, 60+80, 60+80) = 140 -> 160; second -> 40. Medians: 135 and 35 us."""
    from graphmode.analyzers.costmodel import torch_capture_spreads

    us = 1e3
    probes = [{"first_ns": 9e6, "instantiate_ns": [130 * us, 80 * us, 60 * us, 70 * us, 50 * us],
               "first_replay_ns": [120 * us, 90 * us, 80 * us, 90 * us, 80 * us]},
              {"first_ns": 9e6, "instantiate_ns": [200 * us, 100 * us, 60 * us, 60 * us, 60 * us],
               "first_replay_ns": [100 * us, 80 * us, 80 * us, 80 * us, 80 * us]},
              {"first_ns": 9e6}]  # an older probe: no per-graph timings, no sample
    t = torch_capture_spreads(probes)
    assert t["first_graph_extra"].samples == (110 * us, 160 * us) and t["first_graph_extra"].median == pytest.approx(135 * us)
    assert t["second_graph_extra"].samples == (30 * us, 40 * us)
