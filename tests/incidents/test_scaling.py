"""How a log's rates scale to a job of another size: host and rack incidents with the job's hosts
over the log's (`log_hosts`), job incidents once."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rdzv_sim.incidents.replay import _copies, _ratio, replay_rates

DAY = 86400.0


def spec(log_hosts=None, span=None, stretch=False):
    return SimpleNamespace(log_hosts=log_hosts, span=span, stretch=stretch, repair=None, detection=None)


def log(host: int, job: int, rack: int = 0) -> pd.DataFrame:
    n = host + job + rack
    return pd.DataFrame({"time": np.linspace(0, DAY, n), "cause": "x",
                         "scope": ["node"] * host + ["job"] * job + ["rack"] * rack, "host": ""})


@pytest.mark.parametrize("log_hosts, nodes, ratio", [(100, 250, 2.5), (100, 100, 1.0), (100, 50, 0.5),
                                                     (None, 250, 1.0)])
def test_the_ratio_is_the_jobs_hosts_over_the_logs(log_hosts, nodes, ratio):
    assert _ratio(spec(log_hosts), nodes) == ratio


def test_host_rates_scale_with_the_job_and_job_rates_do_not():
    lg = log(host=10, job=2)
    one = replay_rates(lg, spec(100, span=DAY), nodes=100, duration=DAY)
    two = replay_rates(lg, spec(100, span=DAY), nodes=200, duration=DAY)
    assert one == pytest.approx((10 / DAY, 2 / DAY))
    assert two == pytest.approx((20 / DAY, 2 / DAY))            # hosts doubled, the job once


def test_rack_incidents_scale_as_host_incidents_do():
    lg = log(host=4, job=1, rack=2)
    assert replay_rates(lg, spec(10, span=DAY), nodes=30, duration=DAY)[0] == pytest.approx(18 / DAY)


def test_a_stretched_log_is_rated_over_the_run():
    lg = log(host=10, job=0)
    assert replay_rates(lg, spec(10, span=DAY, stretch=True), nodes=10, duration=2 * DAY)[0] == \
        pytest.approx(10 / (2 * DAY))


def test_copies_hold_each_host_incident_ratio_times_and_each_job_incident_once():
    lg = log(host=40, job=3)
    rng = np.random.default_rng(0)
    two = _copies(lg, 2.0, DAY, rng)
    assert (two.scope == "node").sum() == 80 and (two.scope == "job").sum() == 3
    three = _copies(lg, 3.0, DAY, rng)
    assert (three.scope == "node").sum() == 120 and (three.scope == "job").sum() == 3


def test_a_fraction_thins_the_last_copy():
    """The near miss of a whole copy: 2.5 keeps two copies and about half of a third."""
    lg = log(host=2000, job=1)
    plan = _copies(lg, 2.5, DAY, np.random.default_rng(1))
    last = plan[(plan["copy"] == 2) & (plan.scope == "node")]
    assert 4000 < (plan.scope == "node").sum() < 6000 and 800 < len(last) < 1200
    assert (plan.scope == "job").sum() == 1
    half = _copies(lg, 0.5, DAY, np.random.default_rng(1))       # a smaller job: thinned once
    assert 800 < (half.scope == "node").sum() < 1200 and (half.scope == "job").sum() == 1
