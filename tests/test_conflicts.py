"""tracer/conflicts.py without a GPU: the pre-run scan, and the watch on torch's profiler through a
stand-in package (SYNTHETIC: a tiny `fake_torch` written here with the two attributes torch's
profiler class has; the real one is exercised by tests/test_gpu_store.py on the GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from graphmode.tracer import conflicts


def test_scan_finds_profiler_imports_and_not_plain_torch(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nimport numpy as np\nfrom torch.profiler import profile, ProfilerActivity\n"
                      "def f():\n    import torch.autograd.profiler as p\nfrom torch import profiler\nimport jax.profiler\n")
    assert conflicts.scan_source(script) == [("torch.profiler", 3), ("torch.autograd.profiler", 5), ("torch.profiler", 6),
                                             ("jax.profiler", 7)]
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\nx = torch.ones(3).cuda()\n")
    assert conflicts.scan_source(plain) == [] and conflicts.warning_before_run(plain) == ""
    warning = conflicts.warning_before_run(script)
    assert "train.py imports torch.profiler (Kineto) (line 3)" in warning and "MULTIPLE_SUBSCRIBERS" in warning
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    assert conflicts.scan_source(broken) == []


def _fake_torch(root: Path) -> None:
    pkg = root / "fake_torch" / "autograd"
    pkg.mkdir(parents=True)
    (root / "fake_torch" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "profiler.py").write_text(
        "class profile:\n"
        "    def __init__(self, use_device=None):\n        self.use_device = use_device\n        self.started = False\n"
        "    def _start_trace(self):\n        self.started = True\n        return 'started'\n")


@pytest.mark.parametrize("imported_first", [False, True])
def test_watch_notes_a_cuda_profiler_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imported_first: bool) -> None:
    _fake_torch(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(conflicts, "_TORCH_PROFILER", "fake_torch.autograd.profiler")
    for name in [m for m in sys.modules if m.startswith("fake_torch")]:
        monkeypatch.delitem(sys.modules, name)
    if imported_first:
        import fake_torch.autograd.profiler  # noqa: F401
    watch = conflicts.ProfilerWatch()
    watch.install()
    try:
        from fake_torch.autograd.profiler import profile  # type: ignore[import-not-found]

        cpu_only, cuda = profile(), profile(use_device="cuda")
        assert cpu_only._start_trace() == "started" and cpu_only.started  # the program's profiler still works
        assert cuda._start_trace() == "started"
    finally:
        watch.uninstall()
    assert watch.starts == ["CPU", "CUDA"]
    (note,) = watch.notes()
    assert "torch's profiler with CUDA activity 1 time(s)" in note and "MULTIPLE_SUBSCRIBERS" in note
    assert profile._start_trace.__name__ == "_start_trace" and profile._start_trace.__qualname__ == "profile._start_trace"
    assert not any(isinstance(f, conflicts._PatchOnImport) for f in sys.meta_path)
