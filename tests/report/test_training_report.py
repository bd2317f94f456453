"""The report's training figure says what the summary says; counts over time never dip below
zero at an instant where spans start and stop."""
import numpy as np
import pandas as pd
import pytest

import rdzv_sim
from rdzv_sim.report.figures import _open_over_time, host_spans, training_curve
from rdzv_sim.scenario.load import bundled

from golden.runs import SMALLER        # the golden runs' cuts of the big scenarios (tests/ is on sys.path)

SLOW = {"llama3-54d"}


@pytest.mark.parametrize("name", [n for n in bundled() if n not in SLOW])
def test_goodput_figure_and_summary_agree_on_every_bundled_scenario(name):
    sc = rdzv_sim.load_scenario(name, SMALLER.get(name, []))
    extra = [] if sc.training else ["training.checkpoint_interval=20", "training.checkpoint_cost=2"]
    r = rdzv_sim.run(sc, extra)
    s = r.summary.iloc[0]
    _, goodput, ettr = training_curve(r.rounds, s.duration)
    assert goodput[-1] == pytest.approx(s.goodput, abs=1e-3)
    assert ettr[-1] == pytest.approx(s.ettr, abs=1e-3)
    assert 0.0 <= s.goodput <= s.ettr <= s.running_fraction + 1e-9 <= 1.0 + 1e-9


def test_counts_over_time_have_no_spikes_at_shared_instants():
    # host a ends where b starts; c is open for no time at all
    t, c = _open_over_time(pd.DataFrame({"t0": [0.0, 5.0, 7.0], "t1": [5.0, 9.0, 7.0]}), 10.0)
    assert c.min() >= 0 and c.max() == 1
    assert list(c[(t > 0) & (t < 10)]) == [1, 1, 0]         # after 5, 7 and 9


def test_spans_follow_each_hosts_events():
    """Up from the first node_start to a crash or exit; workers from a start to the next stop,
    a second start replacing the first; what is open ends at the end."""
    ev = pd.DataFrame({
        "t": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        "node": ["a", "a", "b", "a", "a", "a", "b", "b", "a", "a", "b"],
        "event": ["node_start", "node_start", "node_start", "workers_started", "workers_started",
                  "round_left", "workers_started", "fault_crash", "fault_crash", "node_start",
                  "agent_exit"],
        "round": [None, None, None, 0, 1, 1, 1, None, None, None, None]})
    up, run = host_spans(ev, 20.0)
    assert sorted(map(tuple, up[["node", "t0", "t1"]].to_numpy().tolist())) == [
        ("a", 0.0, 8.0), ("a", 9.0, 20.0), ("b", 2.0, 7.0)]
    assert sorted(map(tuple, run[["node", "t0", "t1", "round"]].to_numpy().tolist())) == [
        ("a", 4.0, 5.0, 1), ("b", 6.0, 7.0, 1)]


def test_a_hung_collective_is_not_training_in_the_figure():
    """quickstart: host 3 crashes at 120 s and the survivors hang in their collective until
    150 s; nobody trains in between."""
    r = rdzv_sim.run("quickstart", ["training.checkpoint_interval=20", "training.checkpoint_cost=2"])
    rd = r.rounds
    assert rd.train_end.iloc[0] == pytest.approx(120.0)
    assert rd.train_start.iloc[1] > 150.0
