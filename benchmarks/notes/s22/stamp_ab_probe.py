"""Session 22 (issue 29, item 3): what the timing run's instrumentation costs a CPU-bound loop, A/B in one process
(processes of one program differ up to 1.7x on the lent H200; session 19 read a ResNet-18 step 1.18x slower in the
timing run than in an untraced process).

The loops live in a module of their own, written to a temporary folder (user code, as tracer.sources sees it): a timm
ViT-small's forward at batch 1 and a torchvision ResNet-18 training step at batch 32, each called from one line of
`run()`. Blocks alternate, 8 of each: 'off' (nothing installed) and 'timing' (what the timing run installs:
tracer.script.start_stamper on timing_config([that line]) and TorchHooks(recordings_only=True), as TimingTracer.start
does). A block: N calls then a synchronize; its figure the mean per call. Prints one JSON line per workload, with the
stamps the 'timing' blocks wrote (one per call)."""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import torch

from graphmode.tracer.run_configs import timing_config
from graphmode.tracer.script import start_stamper
from graphmode.tracer.torch_hooks import TorchHooks

SRC = textwrap.dedent('''
    import timm, torch, torchvision

    def vit():
        m = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
        x = torch.randn(1, 3, 224, 224, device="cuda")
        def call():
            with torch.no_grad():
                m(x)
        return call

    def resnet_train():
        m = torchvision.models.resnet18().cuda()
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(32, 3, 224, 224, device="cuda")
        y = torch.randint(0, 1000, (32,), device="cuda")
        loss_fn = torch.nn.CrossEntropyLoss()
        def call():
            opt.zero_grad(set_to_none=True)
            loss_fn(m(x), y).backward()
            opt.step()
        return call

    def run(call, n):
        for _ in range(n):
            call()  # STAMPED
        torch.cuda.synchronize()
''')
path = Path(tempfile.mkdtemp()) / "ab_user.py"
path.write_text(SRC)
line = next(i for i, x in enumerate(SRC.splitlines(), 1) if "# STAMPED" in x)
spec = importlib.util.spec_from_file_location("ab_user", path)
assert spec is not None and spec.loader is not None
user = importlib.util.module_from_spec(spec)
spec.loader.exec_module(user)
cfg = timing_config([f"{path}:{line}"])

for name, calls in (("vit", 30), ("resnet_train", 10)):
    call = getattr(user, name)()
    user.run(call, 5)
    blocks: dict[str, list[float]] = {"off": [], "timing": []}
    stamps = 0
    for _ in range(8):
        for state in ("off", "timing"):
            stamper = hooks = None
            if state == "timing":
                stamper = start_stamper(cfg)
                hooks = TorchHooks(None, clock=time.perf_counter_ns, recordings_only=True).install()
            t0 = time.perf_counter_ns()
            user.run(call, calls)
            blocks[state].append((time.perf_counter_ns() - t0) / calls / 1e3)
            if stamper is not None:
                stamper.stop()
                stamps += len(stamper)
                hooks.uninstall()
    med = {k: float(np.median(v)) for k, v in blocks.items()}
    print(json.dumps({"workload": name, "calls_per_block": calls, "median_us": med, "ratio": med["timing"] / med["off"],
                      "stamps": stamps, "blocks": {k: [round(x, 1) for x in v] for k, v in blocks.items()}}), flush=True)
sys.exit(0)
