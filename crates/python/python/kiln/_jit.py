"""``kiln.jit`` and ``kiln.tf_function``: trace through the framework to HLO once per input
signature, import it into Kiln, and run it through one Kiln session per function."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from . import ArgumentError, LoweringError, _kiln, _variables
from ._arrays import as_input, to_numpy


def _leaf_key(x: Any) -> Hashable:
    """What of a dynamic leaf decides its trace: shape and dtype (Python scalars are weakly
    typed in JAX, so their type is the key, not their value).

    The dtype keys as the ``numpy.dtype`` object itself: hashing one is cheap where its
    ``.name`` is computed in Python on every read (~9 us, once per leaf per call)."""
    if isinstance(x, (bool, int, float, complex)):
        return ("python", type(x).__name__)
    dtype = getattr(x, "dtype", None)
    shape = getattr(x, "shape", None)
    if type(shape) is tuple and isinstance(dtype, np.dtype):  # numpy and JAX arrays
        return (shape, dtype)
    if dtype is None or shape is None:
        a = np.asarray(x)
        dtype, shape = a.dtype, a.shape
    dtype = getattr(dtype, "as_numpy_dtype", dtype)  # a tf.DType keys as numpy's
    try:
        return (tuple(shape), np.dtype(dtype))
    except TypeError:  # JAX's extended dtypes (typed keys)
        return (tuple(shape), str(dtype))


def _hashable(value: Any, what: str) -> Hashable:
    try:
        hash(value)
    except TypeError as e:
        raise ArgumentError(
            f"{what} is static, so it must be hashable (it keys the trace); got {type(value).__name__}"
        ) from e
    return value


@dataclass
class _Trace:
    """One traced signature: the prepared program and how to rebuild the outputs."""

    program: _kiln.Program
    param_dtypes: list[np.dtype]
    unflatten: Callable[[list[np.ndarray]], Any]
    hlo: str
    captured: list[np.ndarray]  # trailing parameters the framework added (TF's captures)


class _JaxFrontend:
    """JAX: ``jax.jit(fn).lower(*args).compiler_ir('hlo')``; pytrees by ``jax.tree_util``."""

    name = "JAX"

    def __init__(self, fn: Callable[..., Any], static_argnums: Sequence[int], static_argnames: Sequence[str]):
        import jax

        self.jax = jax
        self.fn = fn
        self.static_argnums = tuple(static_argnums)
        self.static_argnames = tuple(static_argnames)
        self.jitted = jax.jit(
            fn, static_argnums=self.static_argnums, static_argnames=self.static_argnames, keep_unused=True
        )

    def _static_positions(self, n: int) -> set[int]:
        out = set()
        for i in self.static_argnums:
            j = i + n if i < 0 else i
            if 0 <= j < n:
                out.add(j)
        return out

    def split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Hashable, list[Any]]:
        """``(signature key, dynamic leaves in HLO parameter order)``."""
        if not (self.static_argnums or self.static_argnames):
            # Every argument is dynamic: the general path below, without its filtering.
            leaves, treedef = self.jax.tree_util.tree_flatten((args, kwargs))
            return (treedef, tuple(map(_leaf_key, leaves)), (), ()), leaves
        static_pos = self._static_positions(len(args))
        static = tuple(
            (i, _hashable(a, f"argument {i}")) for i, a in enumerate(args) if i in static_pos
        )
        static_kw = tuple(
            sorted((k, _hashable(v, f"argument {k!r}")) for k, v in kwargs.items() if k in self.static_argnames)
        )
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        leaves, treedef = self.jax.tree_util.tree_flatten((dyn_args, dyn_kw))
        key = (treedef, tuple(_leaf_key(x) for x in leaves), static, static_kw)
        return key, leaves

    def lower(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Callable[[list[np.ndarray]], Any], list[np.ndarray]]:
        lowered = self.jitted.lower(*args, **kwargs)
        # In full: arrays the function closes over are constants, elided as {...} otherwise.
        hlo = lowered.compiler_ir("hlo").as_hlo_text(print_large_constants=True)
        out_tree = lowered.out_tree
        return hlo, lambda outs: self.jax.tree_util.tree_unflatten(out_tree, outs), []


class _TfFrontend:
    """TensorFlow: ``tf.function(jit_compile=True).experimental_get_compiler_ir(*args)
    (stage='hlo')``; structures by ``tf.nest``. Python scalars are part of the trace, as in
    ``tf.function``."""

    name = "TensorFlow"

    def __init__(self, fn: Callable[..., Any]):
        import tensorflow as tf

        self.tf = tf
        self.fn = fn
        self.tf_fn = tf.function(fn, jit_compile=True)

    def split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Hashable, list[Any]]:
        if kwargs:
            raise ArgumentError("kiln.tf_function: pass arguments by position")
        flat = self.tf.nest.flatten(args)
        leaves = [x for x in flat if not isinstance(x, (bool, int, float))]
        key = (
            repr(self.tf.nest.map_structure(lambda _: 0, args)),
            tuple(("value", x) if isinstance(x, (bool, int, float)) else _leaf_key(x) for x in flat),
        )
        return key, leaves

    def lower(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Callable[[list[np.ndarray]], Any], list[np.ndarray]]:
        tf = self.tf
        hlo = self.tf_fn.experimental_get_compiler_ir(*args)(stage="hlo")
        concrete = self.tf_fn.get_concrete_function(*args)
        structure = concrete.structured_outputs
        # Tensors the function closes over are trailing HLO parameters; their values are
        # fixed at trace time. A tf.Variable (a resource handle) would change: refused.
        captured = []
        for c in concrete.captured_inputs:
            if c.dtype == tf.resource:
                raise ArgumentError("kiln.tf_function: functions that capture a tf.Variable are not supported")
            captured.append(c.numpy())
        return hlo, lambda outs: tf.nest.pack_sequence_as(structure, outs), captured


class JitFunction:
    """A function compiled by Kiln, traced once per input signature (shapes, dtypes, static
    values, pytree structure). Call it like the original; it returns numpy arrays in the
    original's output structure."""

    def __init__(self, frontend: Any, tf_xla_flags: str | None, xla_flags: str | None):
        self._frontend = frontend
        self._variables = _variables(TF_XLA_FLAGS=tf_xla_flags, XLA_FLAGS=xla_flags)
        self._session: _kiln.Session | None = None
        self._traces: dict[Hashable, _Trace] = {}
        self._last: _Trace | None = None
        self._lock = threading.Lock()
        self.trace_count = 0
        functools.update_wrapper(self, frontend.fn, updated=())

    @property
    def session(self) -> _kiln.Session:
        """The Kiln session this function runs in (made on first use, from the flags then
        in effect)."""
        if self._session is None:
            self._session = _kiln.Session(self._variables)
        return self._session

    def _trace(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[_Trace, list[Any]]:
        key, leaves = self._frontend.split(args, kwargs)
        with self._lock:
            trace = self._traces.get(key)
            if trace is None:
                trace = self._new_trace(args, kwargs)
                self._traces[key] = trace
                self.trace_count += 1
            self._last = trace
        return trace, leaves

    def _new_trace(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Trace:
        name = getattr(self._frontend.fn, "__name__", type(self._frontend.fn).__name__)
        try:
            hlo, unflatten, captured = self._frontend.lower(args, kwargs)
        except ArgumentError:
            raise
        except Exception as e:  # the framework's own error, kept as the cause
            raise LoweringError(
                f"{self._frontend.name} could not lower {name!r} to HLO: {type(e).__name__}: {e}"
            ) from e
        program = _kiln.Program(self.session, hlo, f"<{name}>")
        dtypes = [np.dtype(d) for d, _ in program.params]
        return _Trace(program, dtypes, unflatten, hlo, captured)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        trace, leaves = self._trace(args, kwargs)
        leaves = leaves + trace.captured
        if len(leaves) != len(trace.param_dtypes):
            raise ArgumentError(
                f"the traced program takes {len(trace.param_dtypes)} arrays but the call has "
                f"{len(leaves)} (state captured by the function is not supported)"
            )
        inputs = tuple(as_input(x, d) for x, d in zip(leaves, trace.param_dtypes))
        outs = [to_numpy(t) for t in trace.program.run(inputs)]
        return trace.unflatten(outs)

    def _trace_of(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Trace:
        if args or kwargs:
            return self._trace(args, kwargs)[0]
        if self._last is None:
            raise ArgumentError("nothing traced yet: call the function or pass example arguments")
        return self._last

    def as_kir(self, *args: Any, clustered: bool = True, **kwargs: Any) -> str:
        """The program for these arguments' signature (default: the last one called) as
        ``.kir`` text, after Kiln's passes and clustering (or as imported)."""
        return self._trace_of(args, kwargs).program.as_kir(clustered)

    def as_hlo(self, *args: Any, **kwargs: Any) -> str:
        """The HLO text the framework gave for these arguments (default: the last call)."""
        return self._trace_of(args, kwargs).hlo

    def stats(self) -> dict[str, dict[str, float]]:
        """Per-cluster statistics over every trace of this function: ``compiles``,
        ``compile_time_s``, ``compile_failures``, ``compiled_runs``, ``fallback_runs``,
        ``memory_hits``, ``disk_hits``, ``load_time_s``."""
        if self._session is None:
            return {}
        self._session.wait_for_compiles()
        return self._session.stats()


def jit(
    fn: Callable[..., Any] | None = None,
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    tf_xla_flags: str | None = None,
    xla_flags: str | None = None,
) -> Any:
    """Compiles a JAX function with Kiln: a drop-in for ``jax.jit``.

    On each new input signature it lowers ``fn`` through JAX to HLO, imports it into Kiln
    and prepares it (auto-clustering); later calls with the same signature reuse it.
    Accepts numpy and JAX arrays (and pytrees of them) and returns numpy arrays in ``fn``'s
    output pytree. ``static_argnums`` / ``static_argnames`` as in ``jax.jit`` (their values
    key the trace and must be hashable). ``tf_xla_flags`` / ``xla_flags`` replace the
    environment variables for this function's session. Usable as ``@kiln.jit`` or
    ``@kiln.jit(static_argnums=1)``.
    """
    if fn is None:
        return lambda f: jit(
            f, static_argnums=static_argnums, static_argnames=static_argnames,
            tf_xla_flags=tf_xla_flags, xla_flags=xla_flags,
        )
    if not callable(fn):
        raise ArgumentError(f"kiln.jit expects a callable, got {type(fn).__name__}")
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    return JitFunction(_JaxFrontend(fn, nums, names), tf_xla_flags, xla_flags)


def tf_function(
    fn: Callable[..., Any] | None = None,
    *,
    tf_xla_flags: str | None = None,
    xla_flags: str | None = None,
) -> Any:
    """Compiles a TensorFlow function with Kiln: its HLO comes from
    ``tf.function(fn, jit_compile=True).experimental_get_compiler_ir(*args)(stage='hlo')``.
    Arguments are tensors or numpy arrays (Python scalars are part of the trace, as in
    ``tf.function``); results are numpy arrays in ``fn``'s output structure. Functions that
    capture ``tf.Variable`` state are not supported."""
    if fn is None:
        return lambda f: tf_function(f, tf_xla_flags=tf_xla_flags, xla_flags=xla_flags)
    if not callable(fn):
        raise ArgumentError(f"kiln.tf_function expects a callable, got {type(fn).__name__}")
    return JitFunction(_TfFrontend(fn), tf_xla_flags, xla_flags)
