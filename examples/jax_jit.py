"""JAX: a jitted six-layer MLP step. XLA runs a compiled program's kernels as CUDA graphs ("command
buffers", on by default for fusions and cuBLAS calls), which graphmode finds like any other graph; a few
un-jitted jnp calls stay eager.

    graphmode run examples/jax_jit.py

XLA_PYTHON_CLIENT_PREALLOCATE=false keeps JAX from taking 75% of the GPU's memory at start-up.
Prints `check: {...}`: its jitted calls.
"""

import json
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

STEPS = 200
LAYERS = 6
keys = jax.random.split(jax.random.PRNGKey(0), LAYERS)
weights = [jax.random.normal(k, (256, 256)) / 16 for k in keys]


@jax.jit
def step(x: jax.Array) -> jax.Array:
    for w in weights:
        x = jnp.tanh(jax.nn.gelu(x @ w)) * 0.5 + x
    return x


x = jnp.ones((64, 256))
for _ in range(STEPS):
    x = step(x)  # CALL: jitted step
x.block_until_ready()
y = jnp.sin(x) + jnp.cos(x)  # EAGER: op-by-op dispatch
y.block_until_ready()
print("check: " + json.dumps({"jitted_calls": STEPS, "jax": jax.__version__, "devices": [str(d) for d in jax.devices()]}))
