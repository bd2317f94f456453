"""`outputs.events: lean` leaves each host's rendezvous_start and confirmed out of the events
table, and nothing else: every other row, the rounds and the summary are the full run's."""
import pandas as pd
import pytest

import rdzv_sim
from rdzv_sim.trace import STEPS

from golden.runs import SMALLER        # the golden runs' cuts of the big scenarios (tests/ is on sys.path)

SUMMARY_SKIP = {"sim_events"}          # SimPy's own count, not the trace's


@pytest.mark.parametrize("name, sets", [
    ("quickstart", []),                                            # per operation
    ("llama3-54d", ["fidelity=aggregate", *SMALLER["llama3-54d"]]),  # aggregate, with restarts
])
def test_lean_keeps_all_but_the_steps(name, sets):
    full = rdzv_sim.run(name, [*sets, "outputs.events=all"])     # llama3-54d is lean as bundled
    lean = rdzv_sim.run(name, [*sets, "outputs.events=lean"])
    kept = full.events[~full.events["event"].isin(STEPS)].reset_index(drop=True)
    assert full.events["event"].isin(STEPS).sum() > 0
    assert not lean.events["event"].isin(STEPS).any()
    cols = ["t", "node", "event", "round", "rank", "world_size", "detail"]
    pd.testing.assert_frame_equal(lean.events[cols].astype(str), kept[cols].astype(str))
    pd.testing.assert_frame_equal(lean.rounds.drop(columns=["scenario"]),
                                  full.rounds.drop(columns=["scenario"]))
    a, b = full.summary.iloc[0].drop(list(SUMMARY_SKIP)), lean.summary.iloc[0].drop(list(SUMMARY_SKIP))
    assert a.to_dict() == b.to_dict()


def test_a_fault_after_a_left_out_step_still_fires():
    """Listeners see the events the table leaves out: `after: rendezvous_start` still anchors,
    at the same time as in the full run."""
    from test_anchored_faults import BASE
    pause = "  - {kind: store_pause, duration: 6, at: {after: rendezvous_start, plus: 0.5}}"
    text = BASE.format(start=7.0, faults=pause)
    full, lean = rdzv_sim.run(text), rdzv_sim.run(text, ["outputs.events=lean"])
    when = [r.events.loc[r.events["event"] == "fault_store_pause", "t"].tolist() for r in (full, lean)]
    assert when[0] == when[1] and len(when[0]) == 1
