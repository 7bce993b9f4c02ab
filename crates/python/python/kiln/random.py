"""Random numbers equal, bit for bit, to TensorFlow's and JAX's.

TensorFlow (Philox4x32-10): ``stateless_uniform``, ``stateless_normal``,
``stateless_truncated_normal``, ``stateless_split``, ``stateless_fold_in`` and
``Generator`` (``tf.random.Generator``). JAX (ThreeFry2x32-20, JAX's default
``jax_threefry_partitionable`` mode): ``PRNGKey``, ``split``, ``fold_in``, ``uniform``,
``normal``, ``truncated_normal`` (bounds -2, 2), ``bits``.

These are the streams Kiln's random ops produce, compiled or interpreted (``kiln-rng``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _kiln
from ._arrays import to_numpy

Shape = int | Sequence[int]


def _shape(shape: Shape) -> list[int]:
    if isinstance(shape, (int, np.integer)):
        return [int(shape)]
    return [int(d) for d in shape]


def _seed(seed: Any) -> tuple[int, int]:
    s = [int(v) for v in np.asarray(seed).reshape(-1)]
    if len(s) != 2:
        raise _kiln.ArgumentError(f"a stateless seed has two integers, got {len(s)}")
    return s[0], s[1]


def _seed_dtype(seed: Any) -> str:
    d = getattr(seed, "dtype", None)
    return str(np.dtype(d)) if d is not None else "int32"


def _name(dtype: Any) -> str:
    return np.dtype(dtype).name


def _scale(x: np.ndarray, scale: Any, offset: Any) -> np.ndarray:
    """``x * scale + offset`` in ``x``'s dtype, two roundings, as TF's graph computes it."""
    if np.all(np.asarray(scale) == 1) and np.all(np.asarray(offset) == 0):
        return x
    t = x.dtype.type
    return (x * t(scale) + t(offset)).astype(x.dtype)


# --- TensorFlow: stateless ops -------------------------------------------------------------


def stateless_uniform(
    shape: Shape, seed: Any, minval: Any = 0, maxval: Any = None, dtype: Any = np.float32
) -> np.ndarray:
    """``tf.random.stateless_uniform``: floats in ``[minval, maxval)`` (default ``[0, 1)``);
    integers in ``[minval, maxval)`` for an int dtype; full-range integers when both bounds
    are ``None``."""
    name = _name(dtype)
    if np.dtype(dtype).kind in "iu":
        bounds = None if minval is None and maxval is None else (int(minval), int(maxval))
        if bounds is not None and maxval is None:
            raise _kiln.ArgumentError("an integer stateless_uniform needs maxval")
        return to_numpy(_kiln.tf_stateless_int(_shape(shape), _seed(seed), name, bounds))
    lo = 0 if minval is None else minval
    hi = 1 if maxval is None else maxval
    u = to_numpy(_kiln.tf_stateless("uniform", _shape(shape), _seed(seed), name))
    t = u.dtype.type
    return _scale(u, t(hi) - t(lo), lo)


def stateless_normal(
    shape: Shape, seed: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = np.float32
) -> np.ndarray:
    """``tf.random.stateless_normal``."""
    n = to_numpy(_kiln.tf_stateless("normal", _shape(shape), _seed(seed), _name(dtype)))
    return _scale(n, stddev, mean)


def stateless_truncated_normal(
    shape: Shape, seed: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = np.float32
) -> np.ndarray:
    """``tf.random.stateless_truncated_normal`` (within two standard deviations)."""
    n = to_numpy(_kiln.tf_stateless("truncated_normal", _shape(shape), _seed(seed), _name(dtype)))
    return _scale(n, stddev, mean)


def stateless_split(seed: Any, num: int = 2) -> np.ndarray:
    """``tf.random.experimental.stateless_split``: ``num`` new seeds, ``[num, 2]`` of the
    seed's dtype (int32 for a Python list)."""
    d = _seed_dtype(seed)
    return np.array(_kiln.tf_stateless_split(_seed(seed), num, d), dtype=d).reshape(num, 2)


def stateless_fold_in(seed: Any, data: int) -> np.ndarray:
    """``tf.random.experimental.stateless_fold_in`` for an int32 ``data`` (a Python int)."""
    d = _seed_dtype(seed)
    return np.array(_kiln.tf_stateless_fold_in(_seed(seed), int(data), "int32"), dtype=d)


# --- TensorFlow: Generator -----------------------------------------------------------------


class Generator:
    """``tf.random.Generator`` with the Philox algorithm: the same state, the same draws,
    the same advance after each draw."""

    def __init__(self, inner: Any):
        self._g = inner

    @classmethod
    def from_seed(cls, seed: int) -> Generator:
        """``tf.random.Generator.from_seed(seed)``."""
        return cls(_kiln.TfGenerator.from_seed(int(seed)))

    @classmethod
    def from_state(cls, state: Sequence[int]) -> Generator:
        """``tf.random.Generator(state=[counter_lo, counter_hi, key], alg='philox')``."""
        a, b, c = (int(v) for v in state)
        return cls(_kiln.TfGenerator.from_state((a, b, c)))

    @property
    def state(self) -> np.ndarray:
        """The state as TF's ``int64[3]`` variable holds it."""
        return np.array(self._g.state, dtype=np.int64)

    def reset_from_seed(self, seed: int) -> None:
        """``reset_from_seed(seed)``."""
        self._g.reset_from_seed(int(seed))

    def uniform(self, shape: Shape, minval: Any = 0, maxval: Any = None, dtype: Any = np.float32) -> np.ndarray:
        """``Generator.uniform``."""
        name = _name(dtype)
        if np.dtype(dtype).kind in "iu":
            if maxval is None:
                raise _kiln.ArgumentError("an integer Generator.uniform needs maxval")
            return to_numpy(self._g.draw_int(_shape(shape), name, (int(minval), int(maxval))))
        hi = 1 if maxval is None else maxval
        u = to_numpy(self._g.draw("uniform", _shape(shape), name))
        t = u.dtype.type
        return _scale(u, t(hi) - t(minval), minval)

    def uniform_full_int(self, shape: Shape, dtype: Any = np.uint64) -> np.ndarray:
        """``Generator.uniform_full_int``."""
        return to_numpy(self._g.draw_int(_shape(shape), _name(dtype), None))

    def normal(self, shape: Shape, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = np.float32) -> np.ndarray:
        """``Generator.normal``."""
        return _scale(to_numpy(self._g.draw("normal", _shape(shape), _name(dtype))), stddev, mean)

    def truncated_normal(
        self, shape: Shape, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = np.float32
    ) -> np.ndarray:
        """``Generator.truncated_normal``."""
        n = to_numpy(self._g.draw("truncated_normal", _shape(shape), _name(dtype)))
        return _scale(n, stddev, mean)

    def split(self, count: int = 1) -> list[Generator]:
        """``Generator.split(count)``."""
        return [Generator(g) for g in self._g.split(int(count))]


# --- JAX -----------------------------------------------------------------------------------


def _key(key: Any) -> tuple[int, int]:
    """The two words of a JAX key: a ``uint32[2]`` (``PRNGKey``) or a typed key."""
    if "key<" in str(getattr(key, "dtype", "")):
        import jax

        key = jax.random.key_data(key)
    k = np.asarray(key)
    if k.shape != (2,) or k.dtype.kind not in "iu":
        raise _kiln.ArgumentError(f"a JAX key is uint32[2], got {k.dtype}{list(k.shape)}")
    return int(k[0]) & 0xFFFFFFFF, int(k[1]) & 0xFFFFFFFF


def PRNGKey(seed: int) -> np.ndarray:  # noqa: N802  (JAX's name)
    """``jax.random.PRNGKey(seed)`` as ``uint32[2]``. A negative seed that fits in int32 is
    taken as JAX takes it without ``jax_enable_x64`` (``PRNGKey(-1)`` is ``[0, 0xffffffff]``);
    other seeds as 64-bit integers (``[seed >> 32, seed & 0xffffffff]``)."""
    seed = int(seed)
    if -(2**31) <= seed < 0:
        seed &= 0xFFFFFFFF
    return np.array(_kiln.jax_prng_key(seed), dtype=np.uint32)


def split(key: Any, num: int = 2) -> np.ndarray:
    """``jax.random.split(key, num)``: ``uint32[num, 2]``."""
    return np.array(_kiln.jax_split(_key(key), int(num)), dtype=np.uint32).reshape(int(num), 2)


def fold_in(key: Any, data: int) -> np.ndarray:
    """``jax.random.fold_in(key, data)``."""
    return np.array(_kiln.jax_fold_in(_key(key), int(data) & 0xFFFFFFFF), dtype=np.uint32)


def uniform(key: Any, shape: Shape = (), minval: float = 0.0, maxval: float = 1.0) -> np.ndarray:
    """``jax.random.uniform(key, shape)`` in float32 (``[minval, maxval)`` as JAX scales it)."""
    bounds = (float(np.float32(minval)), float(np.float32(maxval)))
    return to_numpy(_kiln.jax_draw("uniform", _key(key), _shape(shape), bounds))


def normal(key: Any, shape: Shape = ()) -> np.ndarray:
    """``jax.random.normal(key, shape)`` in float32."""
    return to_numpy(_kiln.jax_draw("normal", _key(key), _shape(shape)))


def truncated_normal(key: Any, shape: Shape = ()) -> np.ndarray:
    """``jax.random.truncated_normal(key, -2.0, 2.0, shape)`` in float32."""
    return to_numpy(_kiln.jax_draw("truncated_normal", _key(key), _shape(shape)))


def bits(key: Any, shape: Shape = ()) -> np.ndarray:
    """``jax.random.bits(key, shape)``: uint32 words."""
    return to_numpy(_kiln.jax_draw("bits", _key(key), _shape(shape)))
