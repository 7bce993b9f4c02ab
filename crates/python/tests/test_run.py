"""kiln.run / kiln.load on HLO and .kir text, and their error paths."""

import numpy as np
import pytest

import kiln

KIR = """
func @softmax(%x: f32[4,8]) -> f32[4,8] {
  %m  = reduce_max %x, axes=[1] : f32[4]
  %mb = broadcast_in_dim %m, dims=[0] : f32[4,8]
  %d  = sub %x, %mb : f32[4,8]
  %e  = exp %d : f32[4,8]
  %s  = reduce_sum %e, axes=[1] : f32[4]
  %sb = broadcast_in_dim %s, dims=[0] : f32[4,8]
  %y  = div %e, %sb : f32[4,8]
  return %y
}
"""

HLO = """HloModule axpy, entry_computation_layout={(f32[3]{0}, f32[3]{0})->(f32[3]{0}, f32[3]{0})}

ENTRY main.1 {
  x.1 = f32[3]{0} parameter(0)
  y.1 = f32[3]{0} parameter(1)
  c.1 = f32[] constant(2)
  b.1 = f32[3]{0} broadcast(c.1), dimensions={}
  m.1 = f32[3]{0} multiply(x.1, b.1)
  a.1 = f32[3]{0} add(m.1, y.1)
  ROOT t.1 = (f32[3]{0}, f32[3]{0}) tuple(a.1, m.1)
}
"""


def test_kir_text_runs(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    (y,) = kiln.run(KIR, x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6)


def test_hlo_text_runs_and_flattens_tuples():
    a, m = kiln.run(HLO, np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32))
    assert a.tolist() == [12, 24, 36] and m.tolist() == [2, 4, 6]


def test_path_and_load(tmp_path, rng):
    p = tmp_path / "softmax.kir"
    p.write_text(KIR)
    prog = kiln.load(p)
    assert prog.params == [("float32", (4, 8))]
    assert prog.results == [("float32", (4, 8))]
    x = rng.standard_normal((4, 8)).astype(np.float32)
    outs = [prog(x)[0] for _ in range(4)]
    assert all(o.tobytes() == outs[0].tobytes() for o in outs)
    assert "cluster" in prog.as_kir() and "cluster" not in prog.as_kir(clustered=False)


def test_parse_error_names_line_and_column():
    with pytest.raises(kiln.ParseError, match=r"<text>:3:\d+: .*expp"):
        kiln.run("func @f(%x: f32[2]) -> f32[2] {\n  // c\n  %y = expp %x : f32[2]\n  return %y\n}\n",
                 np.zeros(2, np.float32))


def test_wrong_dtype_names_the_parameter():
    with pytest.raises(kiln.ArgumentError, match=r"argument 0 \(%x\) of @softmax must be float32\[4, 8\], got int32\[4, 8\]"):
        kiln.run(KIR, np.zeros((4, 8), np.int32))


def test_unsupported_dtype_and_non_arrays():
    with pytest.raises(kiln.ArgumentError, match="float16"):
        kiln.run(KIR, np.zeros((4, 8), np.float16))
    with pytest.raises(kiln.ArgumentError, match="complex"):
        kiln.run(KIR, np.zeros((4, 8), np.complex64))
    with pytest.raises(kiln.ArgumentError, match="takes 1 argument, got 2"):
        kiln.run(KIR, np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32))


def test_missing_file_is_an_argument_error(tmp_path):
    with pytest.raises(kiln.ArgumentError, match="nope.kir"):
        kiln.run(str(tmp_path / "nope.kir"))


def test_errors_are_kiln_errors():
    for cls in (kiln.ParseError, kiln.UnsupportedError, kiln.FlagsError, kiln.ArgumentError,
                kiln.RandomError, kiln.ExecutionError, kiln.InternalError, kiln.LoweringError):
        assert issubclass(cls, kiln.KilnError)


def test_non_contiguous_and_jax_inputs(rng):
    import jax.numpy as jnp

    x = rng.standard_normal((8, 4)).astype(np.float32).T  # Fortran order
    (y1,) = kiln.run(KIR, x)
    (y2,) = kiln.run(KIR, jnp.asarray(x))
    assert y1.tobytes() == y2.tobytes()
