//! Kiln's benchmark harness. For now one binary, `interp_vs_numpy`, which times the
//! reference interpreter op by op against numpy on the same inputs.
