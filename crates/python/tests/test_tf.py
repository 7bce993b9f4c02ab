"""TensorFlow: kiln.random against tf.random bit for bit, and kiln.tf_function against
tf.function. Skipped with a message when TensorFlow is not installed: CI does not install it
(too heavy); run it where TensorFlow is (see docs/python.md)."""

import numpy as np
import pytest
from conftest import assert_close, same_bits

import kiln
from kiln import random as kr

SHAPES = [(), (7,), (3, 5), (2, 3, 33)]

tf = pytest.importorskip("tensorflow", reason="TensorFlow is not installed (CI skips the TF half: too heavy)")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tf_stateless(shape, dtype):
    seed = [7, -3]
    assert same_bits(kr.stateless_uniform(shape, seed, dtype=dtype), tf.random.stateless_uniform(shape, seed, dtype=dtype))
    assert same_bits(kr.stateless_normal(shape, seed, dtype=dtype), tf.random.stateless_normal(shape, seed, dtype=dtype))
    assert same_bits(
        kr.stateless_truncated_normal(shape, seed, dtype=dtype),
        tf.random.stateless_truncated_normal(shape, seed, dtype=dtype),
    )
    assert same_bits(
        kr.stateless_uniform(shape, seed, minval=-2.0, maxval=3.0, dtype=dtype),
        tf.random.stateless_uniform(shape, seed, minval=-2.0, maxval=3.0, dtype=dtype),
    )
    assert same_bits(
        kr.stateless_normal(shape, seed, mean=1.5, stddev=0.25, dtype=dtype),
        tf.random.stateless_normal(shape, seed, mean=1.5, stddev=0.25, dtype=dtype),
    )


def test_tf_stateless_ints_split_fold_in():
    seed = [1, 2]
    for dt in (np.int32, np.int64):
        assert same_bits(
            kr.stateless_uniform((5, 3), seed, minval=-10, maxval=99, dtype=dt),
            tf.random.stateless_uniform((5, 3), seed, minval=-10, maxval=99, dtype=dt),
        )
    assert same_bits(
        kr.stateless_uniform((6,), seed, minval=None, maxval=None, dtype=np.uint32),
        tf.random.stateless_uniform((6,), seed, minval=None, maxval=None, dtype=tf.uint32),
    )
    assert same_bits(kr.stateless_split(seed, 3), tf.random.experimental.stateless_split(seed, 3))
    assert same_bits(kr.stateless_fold_in(seed, 9), tf.random.experimental.stateless_fold_in(seed, 9))


def test_tf_generator():
    g, t = kr.Generator.from_seed(1234), tf.random.Generator.from_seed(1234)
    for _ in range(2):
        assert same_bits(g.normal((3, 4)), t.normal((3, 4)))
        assert same_bits(g.uniform((5,)), t.uniform((5,)))
        assert same_bits(g.truncated_normal((9,), dtype=np.float64), t.truncated_normal((9,), dtype=tf.float64))
        assert same_bits(g.uniform((4,), minval=0, maxval=10, dtype=np.int64), t.uniform((4,), minval=0, maxval=10, dtype=tf.int64))
        assert same_bits(g.uniform_full_int((3,), dtype=np.uint64), t.uniform_full_int((3,), dtype=tf.uint64))
        assert same_bits(g.state, t.state)
    (g1,), (t1,) = g.split(1), t.split(1)
    assert same_bits(g1.normal((6,)), t1.normal((6,)))
    assert same_bits(g.state, t.state)


def test_tf_function_matches_tf():
    def f(x, w):
        h = tf.nn.softmax(tf.tanh(tf.matmul(x, w)), axis=-1)
        return {"h": h, "s": tf.reduce_sum(h * h, axis=1)}

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    want = tf.function(f, jit_compile=True)(x, w)
    g = kiln.tf_function(f)
    for _ in range(3):
        got = g(x, w)
        assert_close(got["h"], want["h"].numpy())
        assert_close(got["s"], want["s"].numpy())
    g(tf.constant(x), tf.constant(w))
    assert g.trace_count == 1
    g(x[:2], w)
    assert g.trace_count == 2


def test_tf_function_captured_constants_and_variables():
    w = tf.constant(np.arange(120.0, dtype=np.float32).reshape(12, 10))
    f = lambda x: tf.tanh(tf.matmul(x, w) * 1e-3)  # noqa: E731
    x = np.ones((2, 12), np.float32)
    assert_close(kiln.tf_function(f)(x), tf.function(f, jit_compile=True)(x).numpy())
    v = tf.Variable(np.ones(3, np.float32))
    with pytest.raises(kiln.ArgumentError, match="tf.Variable"):
        kiln.tf_function(lambda x: x * v)(np.ones(3, np.float32))
