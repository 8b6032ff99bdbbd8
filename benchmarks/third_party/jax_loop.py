"""A jitted JAX step called in a loop; XLA runs it as a CUDA graph (command buffer). Timed by the
program's own clock: N calls dispatched back to back, blocking on the last result."""

import argparse
import os
import time

import jax
import jax.numpy as jnp

from _truth import report

p = argparse.ArgumentParser()
p.add_argument("--calls", type=int, default=300)
p.add_argument("--label", default="", help="a name for this run's XLA_FLAGS (e.g. no_command_buffer), kept in the truth line")
args = p.parse_args()
ns = time.perf_counter_ns


@jax.jit
def step(x: jax.Array, w: jax.Array) -> jax.Array:
    for _ in range(12):
        x = jnp.tanh(x @ w) + 0.5 * x
    return x


key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (256, 256), dtype=jnp.float32)
w = jax.random.normal(key, (256, 256), dtype=jnp.float32) / 16
for _ in range(5):
    x = step(x, w)
x.block_until_ready()
t0 = ns()
for _ in range(args.calls):
    x = step(x, w)
x.block_until_ready()
call_ns = (ns() - t0) / args.calls
report(workload="jax_jit_loop", graph_ns=call_ns, calls=args.calls, label=args.label, xla_flags=os.environ.get("XLA_FLAGS", ""))
