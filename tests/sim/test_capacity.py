"""Goodput counts capacity, ETTR counts time: cases with values computed here, independently."""
import math

import numpy as np

import pytest

import rdzv_sim


def base(nodes=8, duration=20_000.0, faults=(), training=None, protocol=None, **extra):
    sc = {"name": "capacity", "seed": 2, "duration": duration,
          "cluster": {"nodes": nodes, "nproc_per_node": 1, "start_spread": 0},
          "store": {"host": None},
          "protocol": {"name": "hrw", "min_nodes": 1, "max_nodes": nodes, "last_call_timeout": 1,
                       **(protocol or {})},
          "agent": {"collective_timeout": 10, "worker_start": 5, "max_restarts": 100,
                    "peer_crash_detection": 0.5},
          "shards": {"count": 0}, "faults": list(faults),
          "training": {"checkpoint_interval": 600, "checkpoint_cost": 10, **(training or {})}}
    sc.update(extra)
    return sc


def summary(sc):
    return rdzv_sim.run(sc).summary.iloc[0]


def test_two_of_eight_hosts_count_a_quarter():
    s = summary(base(faults=[{"kind": "crash", "node": i, "at": 100} for i in range(2, 8)]))
    assert s.goodput == pytest.approx(s.ettr * 2 / 8, rel=0.02)
    assert 0.9 < s.ettr < 1.0


def test_a_model_parallel_constraint_runs_seven_hosts_as_four():
    s = summary(base(faults=[{"kind": "crash", "node": 7, "at": 100}],
                     training={"model_parallel_nodes": 4}))
    assert s.goodput == pytest.approx(s.ettr * 4 / 8, rel=0.02)
    free = summary(base(faults=[{"kind": "crash", "node": 7, "at": 100}]))
    assert free.goodput == pytest.approx(free.ettr * 7 / 8, rel=0.02)


def test_valid_sizes_pick_the_largest_allowed():
    s = summary(base(faults=[{"kind": "crash", "node": 7, "at": 100}],
                     training={"valid_sizes": [2, 6, 8]}))
    assert s.goodput == pytest.approx(s.ettr * 6 / 8, rel=0.02)


def test_a_scaling_table_weights_by_throughput():
    s = summary(base(faults=[{"kind": "crash", "node": i, "at": 100} for i in range(4, 8)],
                     training={"scaling": {4: 0.6, 8: 1.0}}))
    assert s.goodput == pytest.approx(s.ettr * 0.6, rel=0.02)


def lost_work(kind, **training):
    """One crash 1,000 s into the second span: how much training was recomputed."""
    sc = base(nodes=4, duration=6000.0, faults=[{"kind": "crash", "node": 1, "at": 3000}],
              training={"checkpoint": kind, "checkpoint_interval": 600, "checkpoint_cost": 10,
                        **training})
    r = rdzv_sim.run(sc)
    return r, r.summary.iloc[0]


def test_async_checkpoints_lose_only_unpersisted_work():
    r, s = lost_work("async", persist_time=300)
    spans = r.rounds[r.rounds.train_s > 0]
    first = spans.iloc[0]
    t_train = first.train_end - first.train_start           # trained before the crash
    n = math.floor(t_train / 610)                           # snapshots taken
    k = math.floor((t_train - 300) / 610)                   # ... of which written by the crash
    assert s.lost_recompute_s == pytest.approx(t_train - n * 10 - k * 600, abs=1e-6)
    _, sync = lost_work("sync")
    assert sync.lost_recompute_s == pytest.approx(t_train - n * 10 - n * 600, abs=1e-6)


def test_a_peer_copy_avoids_the_loss():
    r, s = lost_work("in_memory", persist_every=4, persist_time=0)
    first = r.rounds[r.rounds.train_s > 0].iloc[0]
    t_train = first.train_end - first.train_start
    n = math.floor(t_train / 610)
    assert s.lost_recompute_s == pytest.approx(t_train - n * 610, abs=1e-6)    # since the last snapshot
    inter = r.interruptions
    assert inter.restart_from.tolist() == ["peer"]
    # a rack that takes a host and the host holding its copy falls back to the written one
    sc = base(nodes=4, duration=6000.0,
              faults=[{"kind": "crash", "node": i, "at": 3000} for i in range(4)]
              + [{"kind": "restart", "node": i, "at": 3100} for i in range(4)],
              training={"checkpoint": "in_memory", "checkpoint_interval": 600, "checkpoint_cost": 10,
                        "persist_every": 4})
    r2 = rdzv_sim.run(sc)
    assert r2.interruptions.restart_from.tolist() == ["checkpoint"]
    first = r2.rounds[r2.rounds.train_s > 0].iloc[0]
    t_train = first.train_end - first.train_start
    n = math.floor(t_train / 610)
    assert r2.summary.iloc[0].lost_recompute_s == pytest.approx(t_train - n * 10 - (n // 4) * 4 * 600)


def test_the_lost_time_adds_up_to_the_wall():
    r = rdzv_sim.run(base(faults=[{"kind": "crash", "node": 3, "at": 1000},
                                  {"kind": "restart", "node": 3, "at": 1500}]))
    s = r.summary.iloc[0]
    parts = sum(s[f"lost_{k}_s"] for k in ("startup", "detection", "rendezvous", "worker_start",
                                           "checkpoint_load", "checkpoint_stall", "recompute",
                                           "running_smaller"))
    assert s.goodput * s.duration + parts == pytest.approx(s.duration, rel=1e-9)


def test_shards_moved_needed_is_what_leavers_and_newcomers_force():
    """Computed here from HRW owners: the keys whose owner left, or that a newcomer wins."""
    from hrw import Placement
    r = rdzv_sim.run("quickstart")
    rd = r.rounds
    k = 4096
    for i in range(1, len(rd)):
        before = rd.members.iloc[i - 1].split(",")
        after = rd.members.iloc[i].split(",")
        old = np.asarray(Placement(before, seed=0).owners(range(k)), dtype=object)
        new = np.asarray(Placement(after, seed=0).owners(range(k)), dtype=object)
        gone, fresh = set(before) - set(after), set(after) - set(before)
        need = sum(1 for a, b in zip(old, new) if a in gone or b in fresh)
        assert rd.shards_moved_needed.iloc[i] == need
        assert rd.shards_moved_hrw.iloc[i] == need                    # HRW moves no more
    assert (rd.shards_moved_fair_share.iloc[1:] > 0).all()
