"""A round's span ends at its first member's stop: each member's first stop at or after the
round began training, found for millions of members by one sort (`spans._next_stop`), the
answer pandas' merge_asof (forward, by node) gives."""
import numpy as np
import pandas as pd

from rdzv_sim.training.spans import _next_stop


def test_next_stop_is_merge_asof_forward_by_node():
    rng = np.random.default_rng(11)
    stop_t = np.sort(rng.integers(0, 200, 3000).astype(float))      # ties on purpose
    stop_node = rng.integers(0, 7, 3000)
    t0 = rng.integers(0, 220, 2000).astype(float)
    node = rng.integers(0, 8, 2000)                                  # node 7 never stops
    got = _next_stop(node, t0, stop_node, stop_t)
    left = pd.DataFrame({"node": node, "t0": t0}).reset_index().sort_values("t0", kind="stable")
    right = pd.DataFrame({"node": stop_node, "key": stop_t, "i": np.arange(3000)})
    want = (pd.merge_asof(left, right, left_on="t0", right_on="key", by="node", direction="forward",
                          allow_exact_matches=True)
            .set_index("index").sort_index()["i"].fillna(-1).astype(int).to_numpy())
    np.testing.assert_array_equal(got, want)
    assert (got == -1).any() and (got >= 0).any()


def test_a_stop_at_the_start_itself_counts():
    got = _next_stop(np.array([0, 0]), np.array([5.0, 6.0]), np.array([0, 0]), np.array([5.0, 5.0]))
    assert got.tolist() == [0, -1]          # the first of a tie; none at or after 6
