"""Arrays across the boundary: what the Rust extension takes and gives back."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_input(x: Any, dtype: np.dtype | None = None) -> np.ndarray:
    """A C-contiguous numpy array for ``x`` (a numpy or JAX array, or a Python scalar).

    No copy is made when ``x`` already is a C-contiguous array of ``dtype``; a JAX array on
    the CPU becomes a view of its buffer. ``dtype`` converts as ``jax.jit`` does when it
    canonicalises an argument (float64 to float32 without x64, Python scalars).
    """
    a = x if type(x) is np.ndarray else np.asarray(x)
    if dtype is not None and a.dtype != dtype:
        a = a.astype(dtype)
    # Not np.ascontiguousarray: it turns a 0-d array into shape (1,).
    return a if a.flags.c_contiguous else a.copy(order="C")


def to_numpy(triple: tuple[Any, str, tuple[int, ...]]) -> np.ndarray:
    """The numpy array for an extension result ``(elements, dtype, shape)``: a view of the
    elements Kiln computed (``_kiln.HostBuffer``, buffer protocol), no copy; one
    constructor call, where ``frombuffer`` then ``reshape`` made two arrays."""
    data, dtype, shape = triple
    return np.ndarray(shape, np.dtype(dtype), data)
