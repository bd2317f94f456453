"""A round's facts (digest, master, size) are recorded once, on its round_closed row, where the
aggregate fidelity forms it (`outputs.trace: rounds`, the default); `outputs.trace: hosts`
keeps them on every member's rank_assigned row too. Every table a reader asks of a run is the
same either way, and a row's own value wins over its round's."""
import json

import numpy as np
import pandas as pd
import pytest

import rdzv_sim
from rdzv_sim.testing import check_safety
from rdzv_sim.trace.details import rank_details, round_facts
from rdzv_sim.trace.rounds import _latest_join

RUNS = [("elastic-scale-up", ["fidelity=aggregate"]),
        ("rack-failure", ["fidelity=aggregate", "cluster.nodes=64", "protocol.min_nodes=32",
                          "protocol.max_nodes=64", "shards.count=1024"]),
        ("validate-inprocess", ["fidelity=aggregate"])]


def both(name, sets):
    return (rdzv_sim.run(name, sets), rdzv_sim.run(name, sets + ["outputs.trace=hosts"]))


@pytest.mark.parametrize("name,sets", RUNS, ids=[r[0] for r in RUNS])
def test_the_tables_are_the_same_with_facts_once_a_round(name, sets):
    rounds, hosts = both(name, sets)
    pd.testing.assert_frame_equal(rounds.rounds, hosts.rounds)
    pd.testing.assert_frame_equal(rounds.summary, hosts.summary)
    for r in (rounds, hosts):
        sc = r.scenario
        assert not check_safety({"events": r.events, "rounds": r.rounds}, sc).unexpected
    # the rank fields read back from the saved table (no tracer values): the same
    for f in ("digest", "nnodes", "latency"):
        assert list(rank_details(rounds.events)[f]) == list(rank_details(hosts.events)[f])


def test_facts_are_on_the_round_not_on_its_members():
    rounds, hosts = both(*RUNS[0])
    ra = rounds.events[rounds.events["event"] == "rank_assigned"]
    # a member's own latency is a column; its first worker rank is the round's (rank x nproc)
    assert len(ra) and (ra["detail"] == "").all() and (ra["latency"] >= 0).all()
    facts = round_facts(rounds.events)
    assert set(facts) == set(ra["round"].astype(int)) and all(set(f) == {"digest", "master", "nnodes"}
                                                              for f in facts.values())
    ra = hosts.events[hosts.events["event"] == "rank_assigned"]
    own = [json.loads(d) for d in ra["detail"]]
    assert all(set(d) == {"digest", "first_rank", "master", "nnodes"} for d in own)
    nproc = hosts.scenario.cluster.nproc_per_node
    assert [d["first_rank"] for d in own] == [int(r) * nproc for r in ra["rank"]]
    assert len(rounds.events) == len(hosts.events)
    assert rounds.events["detail"].str.len().sum() < hosts.events["detail"].str.len().sum()


def test_a_rows_own_fact_wins_over_its_rounds():
    ev = pd.DataFrame({"t": [0.0, 1.0, 1.0], "node": ["a", "a", "b"],
                       "event": ["round_closed", "rank_assigned", "rank_assigned"], "round": [0, 0, 0],
                       "detail": ['{"digest":"d","master":"a","nnodes":2}',
                                  '{"latency":1.0}', '{"digest":"x","nnodes":2,"latency":1.0}']})
    assert list(rank_details(ev)["digest"]) == ["d", "x"]


def test_latest_join_is_merge_asof_backward_by_node():
    rng = np.random.default_rng(7)
    n = 4000
    t = np.sort(rng.integers(0, 300, n).astype(float))          # ties on purpose
    node = rng.integers(0, 9, n)
    kind = rng.choice(["join", "rank", "other"], n)
    rank, join = kind == "rank", kind == "join"
    got = _latest_join(t, node, rank, join)
    ra = pd.DataFrame({"t": t[rank], "node": node[rank]}).reset_index()
    js = pd.DataFrame({"t": t[join], "node": node[join], "joined": t[join]})
    want = pd.merge_asof(ra.sort_values("t"), js.sort_values("t"), on="t", by="node",
                         direction="backward").set_index("index").sort_index()["joined"].to_numpy()
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got).any() and not np.isnan(got).all()
