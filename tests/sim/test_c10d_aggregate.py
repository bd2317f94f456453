"""The aggregate c10d (the compare-and-set race a write at a time) against the per-operation
model, on the scenarios where both run."""
from __future__ import annotations

import pandas as pd
import pytest

import rdzv_sim
from rdzv_sim.trace import details
from rdzv_sim.scenario.load import ScenarioError
from rdzv_sim.testing import check_safety

from test_aggregate import churn, ranks


def crash(n: int, fidelity: str, seed: int = 3, duration: float = 300) -> dict:
    return {"name": f"c10d-{n}-crash", "seed": seed, "duration": duration, "fidelity": fidelity,
            "cluster": {"nodes": n, "nproc_per_node": 8, "start_spread": 30.0},
            "store": {"host": None}, "shards": {"count": 0},
            "protocol": {"name": "c10d", "min_nodes": n - 8, "max_nodes": n, "last_call_timeout": 30},
            "agent": {"collective_timeout": 30, "worker_start": 5, "monitor_interval": 5},
            "faults": [{"kind": "crash", "node": 1, "at": 100}]}


def attempts(r) -> dict:
    ev = r.events[r.events.event == "confirmed"]
    cas = pd.Series([d["cas_attempts"] for d in details(ev)], index=ev.index)
    return {int(k): int(v) for k, v in cas.groupby(ev["round"]).sum().items()}


@pytest.mark.parametrize("n", [48, 160])
def test_first_round_and_re_form_follow_per_operation(n):
    """160 hosts: the re-form is a storm (a few thousand attempts); the race follows it."""
    per, agg = rdzv_sim.run(crash(n, "per_operation")), rdzv_sim.run(crash(n, "aggregate"))
    assert agg.rounds.nnodes.tolist() == per.rounds.nnodes.tolist() == [n, n - 1]
    assert agg.rounds.members.tolist() == per.rounds.members.tolist()
    assert ranks(agg) == ranks(per)
    for a, p in zip(agg.rounds.latency, per.rounds.latency):
        assert a == pytest.approx(p, rel=0.02)
    for k, v in attempts(per).items():
        assert attempts(agg)[k] == pytest.approx(v, rel=0.08)
    check_safety(agg.tables(), agg.scenario).assert_ok()
    assert (agg.rounds.start <= agg.rounds.end).all()


def test_churn_with_c10d_matches_per_operation():
    per_sc, agg_sc = churn("per_operation", 1), churn("aggregate", 1)
    for sc in (per_sc, agg_sc):
        sc["protocol"] = {**sc["protocol"], "name": "c10d"}
    per, agg = rdzv_sim.run(per_sc), rdzv_sim.run(agg_sc)
    s, g = per.summary.iloc[0], agg.summary.iloc[0]
    assert agg.rounds.nnodes.tolist() == per.rounds.nnodes.tolist()
    assert g.goodput == pytest.approx(s.goodput, abs=0.005)
    assert g.rdzv_latency_p50 == pytest.approx(s.rdzv_latency_p50, rel=0.05)
    assert g.store_ops == pytest.approx(s.store_ops, rel=0.15)
    check_safety(agg.tables(), agg.scenario).assert_ok()


def test_a_storm_the_store_cannot_finish_stalls_as_per_operation_says():
    """512 hosts: the re-form stalls with a few participants short of min_nodes, each one's
    keep-alive a write the blob cannot take (per-operation: reports/c10d_aggregate.md)."""
    r = rdzv_sim.run(crash(512, "aggregate", duration=260))
    assert r.rounds.nnodes.tolist() == [512]
    assert r.summary.iloc[0].store_ops > 500_000


def test_same_seed_same_tables():
    a, b = rdzv_sim.run(crash(96, "aggregate")), rdzv_sim.run(crash(96, "aggregate"))
    assert a.events.equals(b.events) and a.rounds.equals(b.rounds)


def test_shared_cores_are_refused_at_fidelity_aggregate():
    sc = crash(16, "aggregate")
    sc["cluster"]["cpu"] = {"shared_cores": 2}
    with pytest.raises(ScenarioError) as e:
        rdzv_sim.run(sc)
    assert "cluster.cpu.shared_cores" in str(e.value) and "per_operation" in str(e.value)


@pytest.mark.parametrize("protocol", ["c10d", "hrw"])
def test_a_member_leaves_with_the_rank_it_was_assigned(protocol):
    """A crash takes a low rank out of the running round; the others leave it with their own
    ranks, as the per-operation agents do (the aggregate c10d job once numbered the survivors
    again from 0)."""
    sc = crash(24, "aggregate")
    sc["protocol"]["name"] = protocol
    sc["faults"] = [{"kind": "crash", "node": 0, "at": 100}, {"kind": "crash", "node": 1, "at": 100}]
    ev = rdzv_sim.run(sc).events
    assigned = ev[ev.event == "rank_assigned"].set_index(["round", "node"])["rank"]
    left = ev[ev.event == "round_left"]
    assert len(left) >= 20
    for rnd, node, rank in zip(left["round"], left["node"], left["rank"]):
        assert rank == assigned[(rnd, node)], (rnd, node)
