"""Zero-copy in: C-contiguous, aligned numeric arrays are borrowed, not copied; others are
copied once. ``kiln._kiln.copied_in_bytes()`` counts the bytes copied into Kiln. Zero-copy
out: results are numpy views of the elements Kiln computed."""

import threading

import numpy as np

import kiln
from kiln import _kiln

AXPY = """
func @axpy(%x: f32[4,8], %y: f32[4,8]) -> f32[4,8] {
  %m = mul %x, %x : f32[4,8]
  %a = add %m, %y : f32[4,8]
  return %a
}
"""


def copied(run):
    """Bytes copied into Kiln while ``run()`` ran, and its result."""
    before = _kiln.copied_in_bytes()
    out = run()
    return _kiln.copied_in_bytes() - before, out


def misaligned(a):
    """A C-contiguous copy of ``a`` whose data starts one byte past an aligned address."""
    raw = np.zeros(a.nbytes + a.itemsize, dtype=np.uint8)
    view = raw[1 : 1 + a.nbytes].view(a.dtype).reshape(a.shape)
    view[...] = a
    assert view.flags.c_contiguous and view.ctypes.data % a.itemsize != 0
    return view


def test_c_contiguous_float32_is_borrowed_and_left_unchanged(rng):
    prog = kiln.load(AXPY)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal((4, 8)).astype(np.float32)
    x0, y0 = x.copy(), y.copy()
    n, (out,) = copied(lambda: prog(x, y))
    assert n == 0
    np.testing.assert_array_equal(out, x0 * x0 + y0)
    assert x.tobytes() == x0.tobytes() and y.tobytes() == y0.tobytes()


def test_strided_fortran_and_misaligned_inputs_are_copied_with_the_same_results(rng):
    prog = kiln.load(AXPY)
    wide = rng.standard_normal((4, 16)).astype(np.float32)
    x = np.ascontiguousarray(wide[:, ::2])
    y = rng.standard_normal((4, 8)).astype(np.float32)
    (want,) = prog(x, y)
    for odd in (wide[:, ::2], np.asfortranarray(x), misaligned(x)):
        assert np.array_equal(odd, x)
        # The extension itself (the Python layer makes strided arrays contiguous first).
        n, (got,) = copied(lambda: prog._program.run((odd, y)))
        assert n == x.nbytes, (odd.flags, n)
        assert kiln._arrays.to_numpy(got).tobytes() == want.tobytes()


KIR_DTYPE = {np.float64: "f64", np.int64: "i64", np.int32: "i32", np.uint8: "u8", np.float16: "f16"}


def test_other_dtypes_are_borrowed_and_bool_is_copied():
    for dtype, name in KIR_DTYPE.items():
        text = f"""
func @twice(%x: {name}[3]) -> {name}[3] {{
  %y = add %x, %x : {name}[3]
  return %y
}}
"""
        x = np.array([1, 2, 3], dtype=dtype)
        n, (out,) = copied(lambda: kiln.run(text, x))
        assert n == 0, dtype
        np.testing.assert_array_equal(out, x + x)
        if x.itemsize > 1:  # a one-byte element is aligned anywhere
            n, (out,) = copied(lambda: kiln.run(text, misaligned(x)))
            assert n == x.nbytes, dtype
            np.testing.assert_array_equal(out, x + x)
    # numpy's bool bytes need not be 0 or 1 (no valid Rust bool): always copied.
    flags = np.array([True, False, True])
    n, (out,) = copied(lambda: kiln.run(NOT, flags))
    assert n == flags.nbytes
    np.testing.assert_array_equal(out, ~flags)


NOT = """
func @negate(%x: bool[3]) -> bool[3] {
  %y = not %x : bool[3]
  return %y
}
"""

SCALE = """
func @scale(%x: f32[], %v: f32[1000]) -> f32[1000] {
  %b = broadcast_in_dim %x, dims=[] : f32[1000]
  %y = mul %v, %b : f32[1000]
  return %y
}
"""


def test_zero_d_and_concurrent_calls_borrow(rng):
    prog = kiln.load(SCALE)
    v = rng.standard_normal(1000).astype(np.float32)
    scales = [np.float32(i) for i in range(8)]
    want = [v * s for s in scales]
    results = [None] * len(scales)

    def call(i):
        # Fresh arrays per call: each borrowed buffer is released when its call ends.
        (results[i],) = prog(np.array(scales[i]), v.copy())

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(scales))]
    before = _kiln.copied_in_bytes()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _kiln.copied_in_bytes() == before
    for got, w in zip(results, want):
        np.testing.assert_array_equal(got, w)


IDENTITY = """
func @identity(%x: f32[3]) -> f32[3] {
  return %x
}
"""


def test_a_result_that_is_a_borrowed_input_comes_back_as_a_copy():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    n, (out,) = copied(lambda: kiln.run(IDENTITY, x))
    assert n == 0
    out[0] = 42.0
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_results_are_views_of_the_elements_kiln_computed(rng):
    # Zero-copy out: each result is a writable numpy view of a `HostBuffer` holding the
    # elements the run produced; two results never share memory, nor a result and an input.
    prog = kiln.load(AXPY)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal((4, 8)).astype(np.float32)
    (a,), (b,) = prog(x, y), prog(x, y)
    assert isinstance(a.base, _kiln.HostBuffer) and a.flags.writeable
    assert memoryview(a.base).nbytes == a.nbytes == 4 * 8 * 4
    assert not np.shares_memory(a, b) and not np.shares_memory(a, x)
    np.testing.assert_array_equal(a, x * x + y)
    a[...] = 0.0
    np.testing.assert_array_equal(b, x * x + y)
