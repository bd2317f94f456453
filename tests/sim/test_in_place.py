"""Recovery in place end to end, at both fidelities: what each mode does to a running world,
read from the run's tables, with the invariants of the modes checked on every run."""
import json

import pytest

from rdzv_sim.api import run
from rdzv_sim.scenario import load
from rdzv_sim.testing import check_safety
from rdzv_sim.training.account import evaluate

FIDELITIES = ["per_operation", "aggregate"]


def scenario(fidelity, mode, faults, spares=0, **agent):
    return load({
        "name": "in-place", "seed": 3, "duration": 900, "fidelity": fidelity,
        "cluster": {"nodes": 6, "nproc_per_node": 8, "start_spread": 0},
        "store": {"host": None},
        "protocol": {"name": "hrw", "min_nodes": 3, "max_nodes": 6, "last_call_timeout": 1,
                     "probe_interval": 3600},
        "agent": {"collective_timeout": 30, "worker_start": 5, "recovery": mode, **agent},
        "scheduler": {"hot_spares": spares},
        "training": {"checkpoint_interval": 60, "checkpoint_cost": 1, "load_time": 20},
        "faults": faults})


def tables(sc):
    r = run(sc)
    t = {"events": r.events, "rounds": r.rounds}
    report = check_safety(t, sc)
    assert not report.unexpected, report.unexpected
    return r


def worlds(r):
    """(round, members as a set, how it formed: a store round or the in-place event)."""
    ev = r.events
    how = {int(x): e for x, e in zip(ev["round"], ev["event"])
           if e in ("in_process_restart", "shrink")}
    return [(int(x.round), set(x.members.split(",")), how.get(int(x.round), "store"))
            for x in r.rounds.itertuples()]


def first_world(r):
    return worlds(r)[0][1]


CRASH = [{"kind": "crash", "node": 2, "at": 200}]


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_in_process_restarts_in_place_with_the_spare(fidelity):
    start = first_world(run(scenario(fidelity, "in_process", [], spares=1)))
    spare = ({f"node{i}" for i in range(7)} - start).pop()
    victim = min(start)
    r = tables(scenario(fidelity, "in_process", [{"kind": "crash", "node": int(victim[4:]), "at": 200}],
                        spares=1))
    (r0, m0, _), (r1, m1, how) = worlds(r)[:2]
    assert how == "in_process_restart" and r1 == r0 + 1
    assert victim not in m1 and len(m1) == len(m0) == 6        # the spare took its place
    assert m1 - m0 == {spare}
    tr = evaluate(r.events, r.rounds, r.scenario)                # NVRx restarts the function: it reloads
    assert tr.spans.set_index("round").loc[r1, "restart_from"] == "checkpoint"
    # no rendezvous between: nobody joined the store after the first round
    ev = r.events
    assert not ((ev["event"] == "join") & (ev["t"] > 100)).any()
    # the restart's parts: the collectives fail (30 s), the vanished host's rank is dropped at
    # the hard timeout (90 s), then 2.5 s to ranks
    ra = ev[(ev["event"] == "rank_assigned") & (ev["round"] == r1)]
    assert ra["t"].min() == pytest.approx(200 + 30 + 90 + 2.5)


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_shrink_runs_on_with_exactly_the_survivors_from_memory(fidelity):
    sc = scenario(fidelity, "shrink", CRASH)
    r = tables(sc)
    (_, m0, _), (r1, m1, how) = worlds(r)[:2]
    assert how == "shrink" and m1 == m0 - {"node2"}
    tr = evaluate(r.events, r.rounds, sc)
    spans = tr.spans.set_index("round")
    assert spans.loc[r1, "restart_from"] == "memory" and spans.loc[r1, "load_s"] == 0
    cut = tr.interruptions.iloc[0]
    assert cut["recompute_s"] == 0 and cut["rendezvous_s"] == 0                  # no rendezvous: a shrink
    assert cut["restart_in_place_s"] == pytest.approx(2.0)


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_in_job_meets_again_in_a_store_round(fidelity):
    sc = scenario(fidelity, "in_job", CRASH)
    r = tables(sc)
    assert all(how == "store" for _, _, how in worlds(r))
    tr = evaluate(r.events, r.rounds, sc)          # near miss of shrink's: it reloads and recomputes
    assert tr.spans["restart_from"].iloc[1] == "checkpoint" and tr.interruptions["recompute_s"].iloc[0] > 0
    assert not r.events["event"].isin(["in_process_restart", "shrink", "recovery_fallback"]).any()


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_an_unusable_device_makes_in_process_fall_back_at_once(fidelity):
    r = tables(scenario(fidelity, "in_process", [{"kind": "crash", "node": 2, "at": 200,
                                                  "device_unusable": True}]))
    fb = r.events[r.events["event"] == "recovery_fallback"]
    assert [json.loads(d)["why"] for d in fb["detail"]] == ["mode"]
    assert worlds(r)[1][2] == "store"
    # near miss: shrink drops the rank and runs on
    s = tables(scenario(fidelity, "shrink", [{"kind": "crash", "node": 2, "at": 200, "device_unusable": True}]))
    assert worlds(s)[1][2] == "shrink"


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_below_min_nodes_falls_back(fidelity):
    faults = [{"kind": "crash", "node": n, "at": 200} for n in (1, 2, 3, 4)]
    r = tables(scenario(fidelity, "shrink", faults))
    fb = r.events[r.events["event"] == "recovery_fallback"]
    assert [json.loads(d)["why"] for d in fb["detail"]] == ["below_min"]


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_a_host_back_waits_for_the_planned_re_form(fidelity):
    faults = CRASH + [{"kind": "restart", "node": 2, "at": 300}]
    never = tables(scenario(fidelity, "shrink", faults))
    assert all("node2" not in m for _, m, _ in worlds(never)[1:])          # waits for a failure
    planned = tables(scenario(fidelity, "shrink", faults, reform_every=400))
    back = [(x, how) for x, m, how in worlds(planned)[2:] if "node2" in m]
    assert back and back[0][1] == "store"
    t_back = planned.rounds.set_index("round").loc[back[0][0], "end"]
    ev = planned.events
    met = float(ev.loc[(ev["event"] == "workers_started") & (ev["round"] == 0), "t"].max())
    assert met + 400 <= t_back < met + 400 + 30          # from the last rendezvous, not the shrink


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_a_host_back_from_repair_is_no_spare_of_the_running_world(fidelity):
    faults = [{"kind": "crash", "node": 2, "at": 200}, {"kind": "restart", "node": 2, "at": 300},
              {"kind": "crash", "node": 3, "at": 400}]
    r = tables(scenario(fidelity, "in_process", faults))
    last = worlds(r)[2]
    assert last[2] == "in_process_restart" and "node2" not in last[1] and len(last[1]) == 4


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_a_job_wide_worker_failure_restarts_everyone_in_process(fidelity):
    sc = scenario(fidelity, "in_process", [])
    sc = load({**sc.model_dump(mode="json"), "random_faults": [
        {"kind": "interruptions", "cause": "software_bug", "count": 1, "per": 600, "scope": "job"}]})
    r = tables(sc)
    ws = worlds(r)
    if len(ws) > 1:                    # an interruption fell in the run (drawn): everyone restarts
        assert ws[1][2] == "in_process_restart" and ws[1][1] == ws[0][1]


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_a_member_lost_during_the_restart_gets_no_rank_in_the_new_world(fidelity):
    """A second member dies 1.5 s into the restart (2.5 s): it began the restart (NVRx's
    barrier had it) but gets no rank nor workers; the others do."""
    first, second = sorted(first_world(run(scenario(fidelity, "in_process", []))))[:2]
    faults = [{"kind": "crash", "node": int(first[4:]), "at": 200},
              {"kind": "crash", "node": int(second[4:]), "at": 201.5}]
    r = tables(scenario(fidelity, "in_process", faults, peer_crash_detection=0.3))
    ev = r.events
    began = set(ev.loc[(ev["round"] == 1) & (ev["event"] == "in_process_restart"), "node"])
    for kind in ("rank_assigned", "workers_started"):
        got = set(ev.loc[(ev["round"] == 1) & (ev["event"] == kind), "node"])
        assert second in began and got == began - {second}, kind
