"""Exports JAX normal, truncated-normal and erf_inv values for kiln-rng's jax_oracle test.

Run with JAX (CPU, x86-64 with FMA) installed:  python3 export_jax.py > jax_normals.txt

Each case is one line:  <kind> <args> : <hex bit patterns (float32, 8 hex digits)>
  normal | truncated_normal   args: the key's two uint32 words (hex), the shape
      (jax.random.normal(key, shape), jax.random.truncated_normal(key, -2.0, 2.0, shape))
  erf_inv                     args: first bit pattern, step, count (hex): jax.lax.erf_inv
      of float32 bit patterns first, first + step, ... (under jax.jit)
"""
import jax
import jax.numpy as jnp
import numpy as np

SHAPES = [(7,), (3, 5), (1000,)]


def hexes(a):
    return " ".join("%08x" % int(b) for b in np.asarray(a, np.float32).view(np.uint32).reshape(-1))


def keys():
    for seed in [0, 1, 3, 42, 2**31 - 1]:
        yield jax.random.PRNGKey(seed)
    # Keys whose both words are arbitrary.
    for k in jax.random.split(jax.random.PRNGKey(7), 3):
        yield k


def shape_str(shape):
    return ",".join(str(d) for d in shape)


print("# JAX %s, jaxlib %s, %s" % (jax.__version__, jax.lib.__version__, jax.devices()[0].device_kind))
normal = jax.jit(jax.random.normal, static_argnums=1)
truncated = jax.jit(lambda k, s: jax.random.truncated_normal(k, -2.0, 2.0, s), static_argnums=1)
for k in keys():
    w = np.asarray(jax.random.key_data(k)).astype(np.uint32)
    for shape in SHAPES:
        head = "%08x %08x %s" % (w[0], w[1], shape_str(shape))
        print("normal %s : %s" % (head, hexes(normal(k, shape))))
        print("truncated_normal %s : %s" % (head, hexes(truncated(k, shape))))

erf_inv = jax.jit(jax.lax.erf_inv)
# Strided sweeps over [2^-125, 1] and [-1, -2^-125], every float in the last 4096 below 1 (and
# 1 itself), and a dense stretch around 0.2. XLA:CPU flushes subnormals to zero (inputs and
# outputs) where Kiln keeps IEEE semantics, so the sweeps stay clear of them.
SWEEPS = [(0x01000000, 0x3E7E1, 4096), (0x81000000, 0x3E7E1, 4096), (0x3F7FF000, 1, 4097),
          (0x3E000000, 0x101, 8192)]
for first, step, count in SWEEPS:
    x = (np.uint64(first) + np.arange(count, dtype=np.uint64) * np.uint64(step)).astype(np.uint32)
    print("erf_inv %08x %x %x : %s" % (first, step, count, hexes(erf_inv(x.view(np.float32)))))
