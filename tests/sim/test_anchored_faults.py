"""Faults timed from events (`at: {after: round_complete, round: 0, plus: 2}`): the simulator
starts them exactly `plus` seconds after the run meets the anchor, whenever that is."""
import pytest

import rdzv_sim
from rdzv_sim.scenario import ScenarioError, load
from rdzv_sim.testing import check_liveness, check_safety
from rdzv_sim.testing.liveness import quiet_time

BASE = """\
name: anchored
seed: 1
duration: 300
cluster: {{nodes: 4, start_spread: 0}}
store: {{host: null}}
protocol: {{name: hrw, min_nodes: 2, last_call_timeout: 1}}
agent: {{collective_timeout: 10, worker_start: 1, process_start: {start}}}
faults:
{faults}
"""
CRASH = "  - {kind: crash, node: 1, at: {after: round_complete, round: 0, plus: 2}}\n" \
        "  - {kind: restart, node: 1, at: {after: workers_started, round: 1, plus: 3}}"


def times(r, event, rnd=None):
    ev = r.events[r.events.event == event]
    return ev[ev["round"] == rnd].t if rnd is not None else ev.t


@pytest.mark.parametrize("start", [0.0, 7.0, 31.5])
def test_a_fault_can_follow_the_first_rendezvous_whatever_the_start_up_takes(start):
    """`after: rendezvous_start`: the job's first agent began a rendezvous (no round)."""
    pause = "  - {kind: store_pause, duration: 6, at: {after: rendezvous_start, plus: 0.5}}"
    r = rdzv_sim.run(BASE.format(start=start, faults=pause))
    first = times(r, "rendezvous_start").min()
    assert first == pytest.approx(start, abs=0.5)
    assert times(r, "fault_store_pause").tolist() == [pytest.approx(first + 0.5, abs=1e-9)]
    assert times(r, "store_resumed").tolist() == [pytest.approx(first + 6.5, abs=1e-9)]
    with pytest.raises(ScenarioError, match="rendezvous_start is the job's first; it takes no round"):
        load(BASE.format(start=0, faults=pause.replace("plus: 0.5", "plus: 0.5, round: 1")))


@pytest.mark.parametrize("start", [0.0, 7.0, 31.5])
def test_the_fault_follows_its_anchor_whatever_the_start_up_takes(start):
    r = rdzv_sim.run(BASE.format(start=start, faults=CRASH))
    formed = times(r, "rank_assigned", 0).max()
    assert times(r, "fault_crash").tolist() == [pytest.approx(formed + 2, abs=1e-9)]
    started = times(r, "workers_started", 1).max()
    back = r.events[(r.events.event == "node_start") & (r.events.node == "node1")].t
    assert back.tolist()[-1] == pytest.approx(started + 3, abs=1e-9)
    assert r.rounds.nnodes.tolist() == [4, 3, 4]


def test_without_a_round_the_anchor_is_the_first_round_that_completes():
    """`round` left out: the anchor is whichever round completes first (a real test whose
    round 0 may fail on a slow machine says this)."""
    sc = BASE.format(start=0, faults="  - {kind: crash, node: 2, at: {after: workers_started, plus: 1.5}}")
    r = rdzv_sim.run(sc)
    first = r.events[r.events.event == "workers_started"]["round"].min()
    started = times(r, "workers_started", first).max()
    assert times(r, "fault_crash").tolist() == [pytest.approx(started + 1.5, abs=1e-9)]


def test_an_anchor_never_met_is_a_fault_that_never_happens():
    sc = BASE.format(start=0, faults="  - {kind: crash, node: 1, at: {after: round_complete, round: 5}}")
    r = rdzv_sim.run(sc)
    assert not (r.events.event == "fault_crash").any() and r.rounds.nnodes.tolist() == [4]


def test_the_liveness_check_counts_from_when_the_anchor_was_met():
    sc = load(BASE.format(start=5.0, faults=CRASH))
    r = rdzv_sim.run(sc)
    formed = times(r, "workers_started", 1).max()
    assert quiet_time(sc, r.events) == pytest.approx(formed + 3)
    assert quiet_time(sc) == sc.duration                  # without the run: not before its end
    tables = {"events": r.events, "rounds": r.rounds}
    assert not check_safety(tables, sc).unexpected and not check_liveness(tables, sc).unexpected


def test_a_bad_anchor_is_refused_with_its_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE.format(start=0, faults="  - {kind: crash, node: 1, at: {after: round_done}}"))
    with pytest.raises(ScenarioError) as e:
        load(bad)
    assert e.value.messages == [f"{bad}:9: faults[0].at.after: Input should be 'rendezvous_start', "
                                "'round_complete', 'workers_started' or 'pg_ready'"]
    with pytest.raises(ScenarioError, match=r"faults\[0\].at: .*aggregate times faults in seconds"):
        load(BASE.format(start=0, faults=CRASH), ["fidelity=aggregate"])
    with pytest.raises(ScenarioError, match="after its anchor is after the end of the run"):
        load(BASE.format(start=0, faults="  - {kind: crash, node: 1, at: {after: round_complete, plus: 900}}"))
