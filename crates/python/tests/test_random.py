"""kiln.random against JAX, bit for bit (TensorFlow's streams: test_tf.py)."""

import jax
import numpy as np
import pytest
from conftest import same_bits

import kiln
from kiln import random as kr

SHAPES = [(), (7,), (3, 5), (2, 3, 33)]


@pytest.mark.parametrize("seed", [0, 42, -1, -(2**31), 2**31 - 1])
def test_jax_keys(seed):
    k = jax.random.PRNGKey(seed)
    assert same_bits(kr.PRNGKey(seed), k)
    assert same_bits(kr.split(kr.PRNGKey(seed), 3), jax.random.split(k, 3))
    assert same_bits(kr.fold_in(kr.PRNGKey(seed), 17), jax.random.fold_in(k, 17))


@pytest.mark.parametrize("shape", SHAPES)
def test_jax_draws(shape):
    k = jax.random.PRNGKey(3)
    assert same_bits(kr.uniform(k, shape), jax.random.uniform(k, shape))
    assert same_bits(kr.bits(k, shape), jax.random.bits(k, shape))
    assert same_bits(kr.uniform(k, shape, -3.0, 5.0), jax.random.uniform(k, shape, minval=-3.0, maxval=5.0))
    # maxval - minval = 7: the scale is inexact, and JAX fuses it with the shift.
    assert same_bits(kr.uniform(k, shape, -3.0, 4.0), jax.random.uniform(k, shape, minval=-3.0, maxval=4.0))
    assert same_bits(kr.normal(k, shape), jax.random.normal(k, shape))
    assert same_bits(kr.truncated_normal(k, shape), jax.random.truncated_normal(k, -2.0, 2.0, shape))


@pytest.mark.parametrize("seed", [3, 2**31 - 1])
def test_jax_normal_bits(seed):
    k = jax.random.PRNGKey(seed)
    assert same_bits(kr.normal(k, (100_000,)), jax.random.normal(k, (100_000,)))
    assert same_bits(kr.truncated_normal(k, (100_000,)), jax.random.truncated_normal(k, -2.0, 2.0, (100_000,)))
    assert same_bits(kr.uniform(k, (100_000,), -1.0, 0.3), jax.random.uniform(k, (100_000,), minval=-1.0, maxval=0.3))


def test_typed_keys_and_bad_keys():
    k = jax.random.key(5)
    assert same_bits(kr.uniform(k, (4,)), jax.random.uniform(k, (4,)))
    with pytest.raises(kiln.ArgumentError, match="uint32"):
        kr.normal(np.zeros(3, np.uint32), (2,))


def test_random_errors():
    with pytest.raises(kiln.ArgumentError, match="float16"):
        kr.stateless_normal((2,), [1, 2], dtype=np.float16)
    with pytest.raises(kiln.RandomError):
        kr.stateless_uniform((3,), [1, 2], minval=5, maxval=5, dtype=np.int32)
