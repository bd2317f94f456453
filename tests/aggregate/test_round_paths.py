"""The aggregate hrw round held to the per-operation runtime on every path that ends a round:
it fills (max_nodes), its last call ends (min_nodes), its join timeout passes (too few), and a
member dies (the survivors re-form). Drawn scenarios; arrivals on a whole-second grid and last
calls on half seconds, so no arrival races a deadline by the store's microseconds (membership
depends on arrival timing: both fidelities must see the same arrivals on the same side)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rdzv_sim

TOL = 0.05          # seconds: the aggregate's latency without jitter, batches not interleaved


@st.composite
def rounds(draw):
    n = draw(st.integers(2, 8))
    lo = draw(st.integers(1, n))
    hi = draw(st.integers(lo, n))
    starting = draw(st.integers(1, n))                        # the rest never start
    # distinct whole seconds after node 0's start: no two joiners race for a slot
    delays = draw(st.lists(st.integers(1, 40), min_size=starting - 1, max_size=starting - 1,
                           unique=True))
    last_call = draw(st.integers(0, 15)) + 0.5
    crash = draw(st.none() | st.integers(0, 100))
    sc = {"name": "paths", "seed": 1, "duration": 900,
          "cluster": {"nodes": n, "nproc_per_node": 1, "start_spread": 0, "start_nodes": starting},
          "store": {"host": None}, "shards": {"count": 0},
          "protocol": {"name": "hrw", "min_nodes": lo, "max_nodes": hi, "last_call_timeout": last_call,
                       "join_timeout": 120},
          "agent": {"max_rendezvous_attempts": 3, "worker_start": 2, "peer_crash_detection": 1,
                    "monitor_interval": 1},
          "faults": [{"kind": "slow_join", "node": i + 1, "delay": d} for i, d in enumerate(delays)]}
    if crash is not None:           # node 0 dies once every joiner's round has formed
        sc["faults"].append({"kind": "crash", "node": 0, "at": crash + 90.25})
    return sc


def outcome(sc, fidelity):
    r = rdzv_sim.run({**sc, "fidelity": fidelity})
    ev = r.events
    exits = ev[ev.event == "agent_exit"].groupby("node").t.min().to_dict()
    # a round some joiner waited out had more joiners than seats: who got a seat is a race
    # of the joiners' arrivals (microseconds of jitter per operation), so only its size counts
    raced = set(ev.loc[ev.event == "waiting", "round"].dropna().astype(int))
    rounds = [(int(r_), m if int(r_) not in raced else None, n, end)
              for r_, m, n, end in r.rounds[["round", "members", "nnodes", "end"]].itertuples(index=False)]
    return rounds, exits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds())
def test_the_aggregate_round_ends_as_the_per_operation_one_does(sc):
    per, per_exits = outcome(sc, "per_operation")
    agg, agg_exits = outcome(sc, "aggregate")
    assert [(r, n) for r, _, n, _ in agg] == [(r, n) for r, _, n, _ in per]
    seated_agg, seated_per = ({r: m for r, m, *_ in x if m} for x in (agg, per))
    both = seated_agg.keys() & seated_per.keys()
    assert {r: seated_agg[r] for r in both} == {r: seated_per[r] for r in both}
    assert [end for *_, end in agg] == pytest.approx([end for *_, end in per], abs=TOL)
    assert agg_exits.keys() == per_exits.keys()
    assert [agg_exits[n] for n in sorted(agg_exits)] == \
        pytest.approx([per_exits[n] for n in sorted(per_exits)], abs=TOL)
