"""The advisor's 95% confidence interval (Student's t over the seeds), at a few seeds, with
t-quantiles written out (two-sided 95%: df 1 -> 12.7062, df 2 -> 4.3027, df 4 -> 2.7764)."""
import math

import numpy as np
import pytest

from rdzv_sim.intervals import t_interval as _t_interval


@pytest.mark.parametrize("values, t", [
    ([1.0, 3.0], 12.7062047),                       # two seeds: df 1
    ([1.0, 2.0, 6.0], 4.30265273),                   # three seeds: df 2 (the default)
    ([0.1, 0.2, 0.3, 0.4, 0.5], 2.77644511),         # five seeds: df 4
])
def test_the_interval_is_the_mean_plus_minus_t_times_the_standard_error(values, t):
    v = np.array(values)
    half = t * v.std(ddof=1) / math.sqrt(len(v))     # the sample's deviation, n - 1
    mean, lo, hi = _t_interval(v)
    assert mean == pytest.approx(v.mean())
    assert (lo, hi) == pytest.approx((v.mean() - half, v.mean() + half), rel=1e-6)


def test_not_the_population_deviation_nor_the_normal_quantile():
    """The near misses: ddof=0, or 1.96 in place of t, give a narrower interval at 3 seeds."""
    v = np.array([1.0, 2.0, 6.0])
    _, lo, hi = _t_interval(v)
    narrow_ddof = 4.303 * v.std(ddof=0) / math.sqrt(3)
    narrow_z = 1.96 * v.std(ddof=1) / math.sqrt(3)
    assert (hi - lo) / 2 > narrow_ddof * 1.1 and (hi - lo) / 2 > narrow_z * 2


def test_one_seed_has_no_interval_and_equal_values_a_point():
    mean, lo, hi = _t_interval(np.array([0.7]))
    assert mean == 0.7 and math.isnan(lo) and math.isnan(hi)
    assert _t_interval(np.array([0.5, 0.5, 0.5])) == (0.5, 0.5, 0.5)
