"""Paths of hrw that a bug only makes slower, asserted exactly (the liveness bound would absorb them)."""
import rdzv_sim


def test_a_host_restarted_inside_an_open_round_costs_no_extra_round():
    """Host 2 joins, crashes and rejoins before the round closes: its newest slot is the member
    (keeping the oldest would wait for a dead incarnation's confirm and fail the round)."""
    sc = {"name": "restart-in-open-round", "seed": 1, "duration": 60,
          "cluster": {"nodes": 4, "nproc_per_node": 1, "start_spread": 0},
          "store": {"host": None}, "shards": {"count": 0}, "agent": {"process_start": 0.2},
          "protocol": {"name": "hrw", "min_nodes": 3, "max_nodes": 5, "last_call_timeout": 2},
          "faults": [{"kind": "crash", "node": 2, "at": 0.3}, {"kind": "restart", "node": 2, "at": 0.5}]}
    r = rdzv_sim.run(sc)
    assert r.rounds.members.tolist() == ["node0,node1,node2,node3"]
    closed = r.events[r.events.event == "round_closed"]
    assert len(closed) == 1 and '"holes":1' in closed.detail.iloc[0]    # the dead slot, skipped
    assert r.rounds.end.iloc[0] < 0.7 + 0.05                            # at the 5th join, no wait
    assert not r.events.event.isin(["confirm_timeout", "round_failed", "rendezvous_retry"]).any()
