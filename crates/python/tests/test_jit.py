"""kiln.jit against jax.jit: a dozen functions, retracing, static args, pytrees, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

import kiln


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def mlp(params, x):
    for w, b in params[:-1]:
        x = jax.nn.gelu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def scan_cumprod(x):
    def body(c, v):
        c = c * v + 1.0
        return c, jnp.tanh(c)

    return jax.lax.scan(body, jnp.ones(x.shape[1:], x.dtype), x)


def gather_rows(table, idx):
    return table[idx] * 2.0


def scatter_add(x, idx, upd):
    return x.at[idx].add(upd)


def where_relu(x):
    return jnp.where(x > 0, x, 0.01 * x)


def reductions(x):
    return x.sum(0), x.max(1), jnp.prod(x[:2], axis=1), jnp.argmax(x, axis=1)


def conv(x, k):
    return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def cases(rng):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    mlp_params = [(f32(8, 16), f32(16)), (f32(16, 16), f32(16)), (f32(16, 4), f32(4))]
    return [
        ("pointwise", lambda x, y: jnp.tanh(x) * jnp.exp(-y * y) + jnp.log1p(jnp.abs(x)), (f32(5, 7), f32(5, 7))),
        ("broadcast", lambda x, y: jax.nn.sigmoid(x + y) - x * 0.5, (f32(4, 1, 3), f32(6, 1))),
        ("softmax", softmax, (f32(16, 33),)),
        ("layer_norm", layer_norm, (f32(8, 32), f32(32), f32(32))),
        ("mlp", mlp, (mlp_params, f32(5, 8))),
        ("scan", scan_cumprod, (f32(6, 3) * 0.3,)),
        ("gather", gather_rows, (f32(10, 4), np.array([3, 0, 9, 3], np.int32))),
        ("scatter", scatter_add, (f32(10, 4), np.array([1, 7, 1], np.int32), f32(3, 4))),
        ("where", where_relu, (f32(33),)),
        ("reductions", reductions, (f32(4, 9),)),
        ("int_arith", lambda a, b: (a * b + 3) // 2 % 7 - jnp.abs(a), (rng.integers(-50, 50, (3, 4)).astype(np.int32), rng.integers(-5, 5, (3, 4)).astype(np.int32))),
        ("conv", conv, (f32(1, 6, 6, 3), f32(3, 3, 3, 4))),
        ("erf_cumsum", lambda x: jnp.cumsum(jax.scipy.special.erf(x), axis=0), (f32(7, 3),)),
    ]


@pytest.mark.parametrize("i", range(13))
def test_matches_jax_jit(i, rng):
    name, fn, args = cases(rng)[i]
    want = jax.jit(fn)(*args)
    f = kiln.jit(fn)
    for _ in range(3):  # fallback, fallback, then compiled (the lazy policy)
        got = f(*args)
        jax.tree_util.tree_map(assert_close, got, jax.tree_util.tree_map(np.asarray, want))
    assert f.trace_count == 1, name


def test_jax_arrays_and_python_scalars_in():
    f = kiln.jit(lambda x, s: x * s)
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_array_equal(f(x, 2.0), np.arange(4, dtype=np.float32) * 2)
    np.testing.assert_array_equal(f(np.arange(4, dtype=np.float32), 3.0), np.arange(4) * 3.0)
    assert f.trace_count == 1  # a JAX array and a numpy array of one shape and dtype


def test_retrace_on_new_shape_or_dtype_only():
    f = kiln.jit(lambda x: x * 2)
    f(np.zeros(3, np.float32))
    f(np.ones(3, np.float32))
    assert f.trace_count == 1
    f(np.zeros(4, np.float32))
    assert f.trace_count == 2
    out = f(np.zeros(4, np.int32))
    assert out.dtype == np.int32 and f.trace_count == 3
    f(np.zeros(3, np.float32))
    assert f.trace_count == 3


def test_float64_is_canonicalised_as_jax_does():
    f = kiln.jit(lambda x: x + 1)
    out = f(np.arange(3, dtype=np.float64))
    assert out.dtype == jax.jit(lambda x: x + 1)(np.arange(3.0)).dtype == np.float32


def test_static_argnums_and_argnames():
    def power(x, n, *, axis):
        return (x**n).sum(axis=axis)

    f = kiln.jit(power, static_argnums=1, static_argnames="axis")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(x, 2, axis=0), np.array([9, 17, 29], np.float32))
    np.testing.assert_array_equal(f(x, 3, axis=1), np.array([9, 216], np.float32))
    assert f.trace_count == 2
    f(x + 1, 2, axis=0)
    assert f.trace_count == 2
    with pytest.raises(kiln.ArgumentError, match="hashable"):
        f(x, [2], axis=0)


def test_pytrees_in_and_out():
    @kiln.jit
    def f(params, batch):
        h = batch["x"] @ params["w"] + params["b"]
        return {"out": h, "stats": (h.mean(), [h.max()])}

    params = {"w": np.eye(3, dtype=np.float32), "b": np.ones(3, np.float32)}
    out = f(params, {"x": np.arange(6, dtype=np.float32).reshape(2, 3)})
    assert set(out) == {"out", "stats"}
    assert isinstance(out["stats"], tuple) and isinstance(out["stats"][1], list)
    np.testing.assert_array_equal(out["out"], np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    assert float(out["stats"][1][0]) == 6.0
    f({"w": params["w"], "b": params["b"]}, {"x": np.zeros((2, 3), np.float32)})
    assert f.trace_count == 1
    f({"w": params["w"], "b": params["b"], "c": np.zeros(1, np.float32)}, {"x": np.zeros((2, 3), np.float32)})
    assert f.trace_count == 2  # a new pytree structure retraces


def test_stats_and_as_kir():
    f = kiln.jit(lambda x: jnp.tanh(jnp.exp(x) * 2 + 1) - x)
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    for _ in range(4):
        f(x)
    stats = f.stats()
    assert stats, "one cluster expected"
    (s,) = stats.values()
    assert s["compiles"] == 1 and s["fallback_runs"] == 2 and s["compiled_runs"] == 2
    assert s["compile_time_s"] > 0
    text = f.as_kir()
    assert "cluster" in text and "tanh" in text
    assert "HloModule" in f.as_hlo()


def test_unsupported_op_names_itself():
    # lax.linalg.hessenberg calls LAPACK's gehrd through a custom-call, which Kiln does not
    # run.
    f = kiln.jit(lambda x: jax.lax.linalg.hessenberg(x + 4 * jnp.eye(3))[0])
    with pytest.raises(kiln.UnsupportedError,
                       match=r"unsupported HLO op 'custom-call' \(target \"lapack_sgehrd_ffi\"\) at <<lambda>>:\d+:\d+"):
        f(np.ones((3, 3), dtype=np.float32))
    # fft converts to complex first: the dtype is what Kiln lacks, and is named.
    with pytest.raises(kiln.UnsupportedError, match="unsupported dtype 'c64'"):
        kiln.jit(jnp.fft.fft)(np.zeros(8, np.float32))


def test_linalg_through_lapack_calls_matches_jax():
    # jnp.linalg's LU (getrf), Cholesky (potrf) and triangular solves (trsm) custom calls.
    def f(a, b):
        spd = a @ a.T + 6.0 * jnp.eye(4)
        return (jnp.linalg.solve(a, b), jnp.linalg.inv(a), jnp.linalg.det(a),
                jnp.linalg.cholesky(spd))
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    for got, want in zip(kiln.jit(f)(a, b), jax.jit(f)(a, b)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6)


def test_qr_eigh_and_svd_match_jax():
    # geqrf and orgqr (Q and R as LAPACK signs them), syevd and gesdd (eigenvalues and
    # singular values, and the vectors through what does not depend on their signs).
    def f(a, s):
        q, r = jnp.linalg.qr(a)
        w, v = jnp.linalg.eigh(s @ s.T)
        u, sv, vt = jnp.linalg.svd(a, full_matrices=False)
        return (q, r, w, jnp.abs(v), (v * w) @ v.T, sv, jnp.abs(u), jnp.abs(vt),
                jnp.linalg.pinv(a))
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    s = rng.standard_normal((4, 4)).astype(np.float32)
    for got, want in zip(kiln.jit(f)(a, s), jax.jit(f)(a, s)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-5)


def test_int8_product_into_int32_matches_jax():
    # A quantised layer's product: int8 operands, int32 result (wrapping sums), exact.
    f = lambda a, b: jax.lax.dot(a, b, preferred_element_type=jnp.int32)
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (7, 33)).astype(np.int8)
    b = rng.integers(-128, 128, (33, 5)).astype(np.int8)
    got = kiln.jit(f)(a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.asarray(jax.jit(f)(a, b)))


def test_top_k_matches_jax():
    x = np.array([[3.0, -1.0, 3.0, np.nan, 0.5], [-0.0, 0.0, 2.0, -np.inf, 2.0]], np.float32)
    got = kiln.jit(lambda x: jax.lax.top_k(x, 3))(x)
    want = jax.jit(lambda x: jax.lax.top_k(x, 3))(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()


def test_float16_matches_jax():
    fn = lambda x: jnp.tanh(x * 2) + x
    x = np.linspace(-3, 3, 11).astype(np.float16)
    got = kiln.jit(fn)(x)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.asarray(jax.jit(fn)(x)))


def test_wrong_dtype_is_an_argument_error():
    f = kiln.jit(lambda x: x * 2)
    with pytest.raises(kiln.KilnError, match="c64|complex"):
        f(np.zeros(3, np.complex64))


def test_non_jax_callable_is_a_lowering_error():
    def uses_numpy(x):
        return np.sin(x)  # numpy on a tracer: not traceable by JAX

    with pytest.raises(kiln.LoweringError, match="uses_numpy") as e:
        kiln.jit(uses_numpy)(np.zeros(3, np.float32))
    assert e.value.__cause__ is not None
    with pytest.raises(kiln.ArgumentError, match="callable"):
        kiln.jit(42)


def test_threads_can_call_concurrently():
    import threading

    f = kiln.jit(lambda x: jnp.tanh(x) @ x.T)
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    want = f(x)
    outs = []
    ts = [threading.Thread(target=lambda: outs.append(f(x))) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(outs) == 4 and all(o.tobytes() == want.tobytes() for o in outs)


def test_arrays_closed_over_become_constants():
    w = jnp.arange(120.0, dtype=jnp.float32).reshape(12, 10)
    b = np.linspace(-1, 1, 10, dtype=np.float32)
    x = np.ones((2, 12), np.float32)
    fn = lambda x: jnp.tanh(x @ w * 1e-3 + b)  # noqa: E731
    assert_close(kiln.jit(fn)(x), np.asarray(jax.jit(fn)(x)))
