"""The first-graph probe's arithmetic (tracer.first_graph_probe.summarize) on SYNTHETIC phase times, worked out by
hand; the probe itself runs on the GPU (tests/test_gpu_script.py)."""

from __future__ import annotations

import pytest

from graphmode.tracer.first_graph_probe import PROBE_GRAPHS, PROBE_STEADY_FROM, summarize


def _row(build: int, instantiate: int, upload: int, first_launch: int) -> dict[str, int]:
    return {"build": build, "instantiate": instantiate, "upload": upload, "first_launch": first_launch}


def test_the_extra_is_the_first_graph_over_the_median_of_the_steady_ones() -> None:
    """Six SYNTHETIC graphs (ns). The steady state is the median of graphs 4-6: build median(100, 120, 110) = 110,
    instantiate median(50, 40, 60) = 50, upload 20, first launch 30. First graph: 300 - 110 = 190, 500 - 50 = 450,
    60 - 20 = 40, 40 - 30 = 10; 690 in all. Second: 200 - 110 = 90, 150 - 50 = 100, 50 - 20 = 30, 30 - 30 = 0; 220."""
    assert (PROBE_GRAPHS, PROBE_STEADY_FROM) == (6, 3)
    rows = [_row(300, 500, 60, 40), _row(200, 150, 50, 30), _row(150, 80, 25, 31),
            _row(100, 50, 20, 30), _row(120, 40, 20, 30), _row(110, 60, 20, 30)]
    s = summarize(rows)
    assert {k: s[k] for k in ("build", "instantiate", "upload", "first_launch")} == {
        "build": 190.0, "instantiate": 450.0, "upload": 40.0, "first_launch": 10.0}
    assert s["extra_ns"] == 690.0
    assert {k: s[f"second_{k}"] for k in ("build", "instantiate", "upload", "first_launch")} == {
        "build": 90.0, "instantiate": 100.0, "upload": 30.0, "first_launch": 0.0}
    assert s["second_extra_ns"] == 220.0
    assert s["graphs"] == rows


def test_too_few_graphs_for_a_steady_state_is_an_error() -> None:
    with pytest.raises(ValueError, match="more than 3 graphs"):
        summarize([_row(1, 1, 1, 1)] * 3)


def test_a_pytorch_program_gets_the_torch_probe_and_others_the_driver_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which probe the end of an untraced run makes (tracer.script._probe_first_graph): the torch probe where PyTorch
    has made its CUDA state in the process (torch_in_use, here a stand-in torch module), else the driver probe; a probe
    that raises leaves {'error': ...}. The probes themselves are stand-ins (they run on the GPU in test_gpu_script)."""
    import sys
    import types

    from graphmode.tracer import first_graph_probe as fgp
    from graphmode.tracer import script

    monkeypatch.setattr(fgp, "probe_torch_capture", lambda: {"first_ns": 6e6, "probe_ns": 5})
    monkeypatch.setattr(fgp, "probe_first_graph", lambda ordinal=0: {"extra_ns": 300.0})
    monkeypatch.setattr(script, "device_ordinal", lambda: 0)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert not fgp.torch_in_use() and script._probe_first_graph() == {"extra_ns": 300.0}
    fake = types.ModuleType("torch")
    initialised = {"yes": False}
    fake.cuda = types.SimpleNamespace(is_initialized=lambda: initialised["yes"])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert not fgp.torch_in_use()  # imported, but no CUDA work through it: the driver probe
    initialised["yes"] = True
    assert fgp.torch_in_use()
    assert script._probe_first_graph() == {"torch": {"first_ns": 6e6, "probe_ns": 5}, "probe_ns": 5}

    def boom() -> dict:
        raise RuntimeError("capture failed")

    monkeypatch.setattr(fgp, "probe_torch_capture", boom)
    assert script._probe_first_graph() == {"error": "RuntimeError: capture failed"}
