"""A Flax module under kiln.jit: forward pass, and an optax training loop whose 20-step
loss trajectory matches jax.jit's within LOSS_RTOL and is bit-identical between Kiln's
compiled and fallback modes."""

import flax.linen as nn
import jax
import numpy as np
import optax
import pytest
from conftest import assert_close, same_bits

import kiln

# Each step's loss under Kiln against JAX's, relative: differences of an ulp or two in
# exp/log/matmul rounding compound over 20 Adam steps but stay far below this.
LOSS_RTOL = 1e-4


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(32)(x)
        x = nn.gelu(x)
        x = nn.LayerNorm()(x)
        return nn.Dense(10)(x)


def setup():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 16)).astype(np.float32)
    y = rng.integers(0, 10, 64).astype(np.int32)
    model = MLP()
    params = model.init(jax.random.PRNGKey(0), x)
    opt = optax.adam(1e-2)

    def loss_fn(params, x, y):
        logits = model.apply(params, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return model, params, opt, train_step, x, y


def trajectory(step, params, opt_state, x, y, n=20):
    losses = []
    for _ in range(n):
        params, opt_state, loss = step(params, opt_state, x, y)
        losses.append(np.asarray(loss))
    return np.array(losses), params


def test_forward_matches_jax():
    model, params, _, _, x, _ = setup()
    want = jax.jit(model.apply)(params, x)
    f = kiln.jit(model.apply)
    assert_close(f(params, x), np.asarray(want))


def test_training_trajectory_matches_jax_jit():
    _, params, opt, train_step, x, y = setup()
    want, _ = trajectory(jax.jit(train_step), params, opt.init(params), x, y)
    step = kiln.jit(train_step)
    got, _ = trajectory(step, params, opt.init(params), x, y)
    assert step.trace_count == 1
    assert got[-1] < got[0] * 0.8, "the model should learn"
    np.testing.assert_allclose(got, want, rtol=LOSS_RTOL)


@pytest.mark.parametrize("steps", [20])
def test_compiled_and_fallback_give_identical_bits(steps):
    _, params, opt, train_step, x, y = setup()
    compiled = kiln.jit(train_step, tf_xla_flags="--tf_xla_enable_lazy_compilation=false")
    fallback = kiln.jit(train_step, tf_xla_flags="--tf_xla_always_defer_compilation=true")
    lc, pc = trajectory(compiled, params, opt.init(params), x, y, steps)
    lf, pf = trajectory(fallback, params, opt.init(params), x, y, steps)
    assert same_bits(lc, lf), (lc - lf)
    for a, b in zip(jax.tree_util.tree_leaves(pc), jax.tree_util.tree_leaves(pf)):
        assert same_bits(a, b)
    sc, sf = compiled.stats(), fallback.stats()
    assert sum(s["compiled_runs"] for s in sc.values()) > 0
    assert sum(s["fallback_runs"] for s in sc.values()) == 0
    assert sum(s["compiled_runs"] for s in sf.values()) == 0
    assert sum(s["fallback_runs"] for s in sf.values()) > 0
