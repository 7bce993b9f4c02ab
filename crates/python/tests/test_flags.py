"""kiln.flags(), per-function flag overrides and bad flags."""

import numpy as np
import pytest

import kiln


def test_flags_report_value_default_and_source(monkeypatch):
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_min_cluster_size=2")
    f = kiln.flags()
    assert f["tf_xla_min_cluster_size"]["value"] == "2"
    assert f["tf_xla_min_cluster_size"]["default"] == "4"
    assert f["tf_xla_min_cluster_size"]["source"] == "TF_XLA_FLAGS"
    assert f["tf_xla_auto_jit"]["source"] == "default"
    assert "TF_XLA_FLAGS" in f["tf_xla_min_cluster_size"]["variables"]
    assert "tf_xla_min_cluster_size" in kiln.flags_table()


def test_bad_flag_is_a_flags_error_naming_it(monkeypatch):
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_min_clustr_size=2")
    with pytest.raises(kiln.FlagsError, match="tf_xla_min_clustr_size.*tf_xla_min_cluster_size"):
        kiln.flags()
    f = kiln.jit(lambda x: x + 1)
    with pytest.raises(kiln.FlagsError):
        f(np.zeros(2, np.float32))


def test_override_for_one_function():
    with pytest.raises(kiln.FlagsError, match="tf_xla_auto_jt"):
        kiln.jit(lambda x: x, tf_xla_flags="--tf_xla_auto_jt=1")(np.zeros(1, np.float32))
