"""Per-layer CUDA graphs, as Transformer Engine and Megatron make them: a torchvision VisionTransformer's
encoder layers each graphed with `torch.cuda.make_graphed_callables` (one forward and one backward graph a
layer), the patch embedding, the head, the loss and the optimizer eager between them. A training step.

Timed by the program's own clocks (time.perf_counter_ns around loops that synchronize only at their end);
`make_graphed_callables` is timed whole (its warm-ups and all captures). Prints one GRAPHMODE_TRUTH line.
"""

import argparse
import time

import torch
from torchvision.models.vision_transformer import VisionTransformer

from _truth import report

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=4)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()
ns = time.perf_counter_ns

torch.manual_seed(0)
model = VisionTransformer(image_size=224, patch_size=16, num_layers=args.layers, num_heads=6, hidden_dim=384,
                          mlp_dim=1536, num_classes=1000).cuda()
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(args.batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 1000, (args.batch,), device="cuda")


def step() -> None:
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()


def timed_loop() -> float:
    torch.cuda.synchronize()
    t0 = ns()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    return (ns() - t0) / args.steps


for _ in range(5):
    step()
eager_ns = timed_loop()

layers = model.encoder.layers
tokens = (224 // 16) ** 2 + 1
samples = tuple((torch.randn(args.batch, tokens, 384, device="cuda", requires_grad=True),) for _ in layers)
torch.cuda.synchronize()
t0 = ns()
graphed = torch.cuda.make_graphed_callables(tuple(layers), samples)
torch.cuda.synchronize()
make_graphed_ns = ns() - t0
for i, g in enumerate(graphed):
    layers[i] = g

t0 = ns()
step()
torch.cuda.synchronize()
first_step_ns = ns() - t0
graph_ns = timed_loop()
report(workload="vit_layer_graphs", eager_ns=eager_ns, graph_ns=graph_ns, make_graphed_ns=make_graphed_ns,
       first_step_ns=first_step_ns, graphs_per_step=2 * args.layers, steps=args.steps, batch=args.batch)
