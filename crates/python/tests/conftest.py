"""Shared setup: JAX on the CPU (its reference values), and comparison helpers."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# Kiln's f32 transcendental functions are correctly rounded within an ulp or two; XLA's are
# its own approximations. Results of a whole program agree to this relative tolerance.
RTOL = 2e-5
ATOL = 2e-6


def assert_close(got, want, rtol=RTOL, atol=ATOL):
    """``got`` (numpy, from Kiln) against ``want`` (numpy or JAX), same dtype and shape."""
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def same_bits(a, b):
    """Bit-for-bit equality of two arrays (NaNs included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
