"""Kiln from Python: ``kiln.jit`` for JAX functions, ``kiln.run`` for XLA HLO and ``.kir``.

Kiln is a JIT graph compiler for tensor programs: it clusters a program the way
TensorFlow's XLA auto-clustering does, compiles the clusters (Cranelift on the CPU, PTX on
NVIDIA GPUs) and runs everything else on its reference interpreter, which gives the same
bits. It is steered by the variables XLA users know (``TF_XLA_FLAGS``, ``XLA_FLAGS``,
``TF_DETERMINISTIC_OPS``), read when a session is made.

>>> import jax.numpy as jnp, numpy as np, kiln
>>> f = kiln.jit(lambda x: jnp.tanh(x) * 2)
>>> f(np.ones(3, np.float32))
array([1.5231884, 1.5231884, 1.5231884], dtype=float32)

See ``docs/python.md`` for the whole tour.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import _kiln
from ._arrays import as_input, to_numpy
from ._kiln import (
    ArgumentError,
    ExecutionError,
    FlagsError,
    InternalError,
    KilnError,
    ParseError,
    RandomError,
    UnsupportedError,
)

__version__: str = _kiln.__version__


class LoweringError(KilnError):
    """The framework (JAX or TensorFlow) could not turn the function into HLO: the
    function is not traceable by it (it calls numpy on a tracer, is not callable, …).
    The framework's exception is the ``__cause__``."""


def _variables(**overrides: str | None) -> dict[str, str | None] | None:
    """The flag variables' texts: the environment, with ``overrides`` (by variable name)
    replacing it; ``None`` when nothing is overridden (the extension then reads the
    environment itself)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return None
    out: dict[str, str | None] = {name: os.environ.get(name) for name in _kiln.FLAG_VARIABLES}
    out.update(given)
    return out


def session(tf_xla_flags: str | None = None, xla_flags: str | None = None) -> _kiln.Session:
    """A new Kiln session (flags, device, one runtime with its compile caches).

    Its flags come from the environment; ``tf_xla_flags`` / ``xla_flags`` replace
    ``TF_XLA_FLAGS`` / ``XLA_FLAGS`` for this session only. Raises ``FlagsError`` naming a
    bad flag.
    """
    return _kiln.Session(_variables(TF_XLA_FLAGS=tf_xla_flags, XLA_FLAGS=xla_flags))


_DEFAULT_SESSIONS: dict[tuple[str | None, ...], _kiln.Session] = {}


def _default_session() -> _kiln.Session:
    """One session per distinct environment (so a changed ``TF_XLA_FLAGS`` takes effect)."""
    key = tuple(os.environ.get(name) for name in _kiln.FLAG_VARIABLES)
    s = _DEFAULT_SESSIONS.get(key)
    if s is None:
        s = _DEFAULT_SESSIONS[key] = _kiln.Session(None)
    return s


class Program:
    """An HLO module or ``.kir`` function, parsed, verified and prepared once; call it as
    often as needed. Arguments must match the parameters' dtypes and shapes exactly."""

    def __init__(self, path_or_text: str | os.PathLike[str], *, session: _kiln.Session | None = None):
        text, name = _read_program(path_or_text)
        self.session = session if session is not None else _default_session()
        self._program = _kiln.Program(self.session, text, name)

    @property
    def params(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(dtype, shape)`` of each parameter, in order."""
        return self._program.params

    @property
    def results(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(dtype, shape)`` of each result, in order."""
        return self._program.results

    def __call__(self, *arrays: Any) -> list[np.ndarray]:
        """Runs the program; returns one numpy array per result."""
        return [to_numpy(t) for t in self._program.run(tuple(as_input(a) for a in arrays))]

    def as_kir(self, clustered: bool = True) -> str:
        """The function as ``.kir`` text, after Kiln's passes and clustering or as read."""
        return self._program.as_kir(clustered)

    def stats(self) -> dict[str, dict[str, float]]:
        """Per-cluster statistics of this program's session."""
        return self.session.stats()


def _read_program(path_or_text: str | os.PathLike[str]) -> tuple[str, str]:
    """``(text, name for errors)``: a path is read, anything with a newline or an
    ``HloModule`` header is the text itself."""
    if isinstance(path_or_text, os.PathLike):
        path = os.fspath(path_or_text)
    elif isinstance(path_or_text, str):
        if "\n" in path_or_text or path_or_text.lstrip().startswith(("HloModule", "func ", "//")):
            return path_or_text, "<text>"
        path = path_or_text
    else:
        raise ArgumentError(
            f"expected HLO or .kir text or a path to one, got {type(path_or_text).__name__}"
        )
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except OSError as e:
        raise ArgumentError(f"{path}: {e.strerror or e}") from e


def load(path_or_text: str | os.PathLike[str], *, tf_xla_flags: str | None = None) -> Program:
    """A :class:`Program` for an HLO module or ``.kir`` file (a path, or the text)."""
    s = session(tf_xla_flags=tf_xla_flags) if tf_xla_flags is not None else None
    return Program(path_or_text, session=s)


def run(path_or_text: str | os.PathLike[str], *arrays: Any) -> list[np.ndarray]:
    """Runs an HLO module or ``.kir`` function (a path, or the text) on numpy arrays and
    returns its results as numpy arrays, one per result (an HLO tuple is flattened)."""
    return Program(path_or_text)(*arrays)


def flags() -> dict[str, dict[str, Any]]:
    """Every flag: the value in effect, its default, where it came from (``default``,
    ``TF_XLA_FLAGS``, ``set in code``, …), whether this build acts on it, and the variables
    it may be written in. ``print(kiln.flags_table())`` shows the same as ``kiln flags``."""
    return _kiln.flags(None)


def flags_table() -> str:
    """The ``kiln flags`` table as text."""
    return _kiln.flags_table(None)


def enable_op_determinism() -> None:
    """Like ``tf.config.experimental.enable_op_determinism()``: sessions made afterwards give
    bit-identical results for identical inputs (independent of the thread count) and refuse
    unseeded random ops."""
    _kiln.enable_op_determinism()


from . import random  # noqa: E402  (uses the names above)
from ._jit import JitFunction, jit, tf_function  # noqa: E402

__all__ = [
    "ArgumentError",
    "ExecutionError",
    "FlagsError",
    "InternalError",
    "JitFunction",
    "KilnError",
    "LoweringError",
    "ParseError",
    "Program",
    "RandomError",
    "UnsupportedError",
    "enable_op_determinism",
    "flags",
    "flags_table",
    "jit",
    "load",
    "random",
    "run",
    "session",
    "tf_function",
]
