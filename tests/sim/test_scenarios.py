"""Whole scenarios: exact outcomes, determinism, faults doing what they say, idle time free."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import rdzv_sim
from hrw import Assignment, Placement


@pytest.fixture(scope="module")
def quickstart():
    return rdzv_sim.run("quickstart")


def test_quickstart_exact_outcome(quickstart):
    r = quickstart.rounds
    hosts = [f"node{i}" for i in range(8)]
    without3 = [h for h in hosts if h != "node3"]
    assert r["round"].tolist() == [0, 1, 2]
    assert r["members"].tolist() == [",".join(hosts), ",".join(without3), ",".join(hosts)]
    assert r["nnodes"].tolist() == [8, 7, 8] and r["world_size"].tolist() == [64, 56, 64]
    assert r["consistent"].all()
    # ranks: HRW order of the run id over the members, whatever the arrival order
    ev = quickstart.events
    for rnd, members in [(0, hosts), (1, without3), (2, hosts)]:
        got = ev[(ev.event == "rank_assigned") & (ev["round"] == rnd)].sort_values("rank")["node"].tolist()
        assert got == Placement(members, seed=0).rank_order("job")
    # the crash is noticed when the survivors' collective times out (120 + 30 s)
    assert r["start"].iloc[1] == pytest.approx(150.0, abs=0.01)
    # shards: exactly node3's keys move away, then exactly as many come back
    a = Assignment(np.arange(4096), Placement(hosts, seed=0))
    owned_by_3 = int((a.owners() == "node3").sum())
    assert r["shards_moved_hrw"].tolist() == [0, owned_by_3, owned_by_3]
    assert (r["shards_moved_modulo"].iloc[1:] > 4 * r["shards_moved_hrw"].iloc[1:]).all()


def test_tables_carry_schema_scenario_and_seed(quickstart):
    for df in (quickstart.events, quickstart.rounds, quickstart.summary):
        assert {"schema_version", "scenario", "seed"} <= set(df.columns)
        assert (df["scenario"] == "quickstart").all() and (df["seed"] == 1).all()


def test_same_seed_identical_tables_even_across_hash_seeds(tmp_path):
    code = ("import rdzv_sim,sys; r=rdzv_sim.run('partition', seed=4); "
            "r.save(sys.argv[1], ['parquet'])")
    for i, hs in enumerate(["1", "999"]):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / str(i))], check=True,
                       env={"PYTHONHASHSEED": hs, "PATH": "/usr/bin:/bin"})
    for t in ("events", "rounds", "summary"):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "0" / f"{t}.parquet"),
                                      pd.read_parquet(tmp_path / "1" / f"{t}.parquet"))


RANDOM = """
name: random-failures
seed: 1
duration: 20000
cluster: {nodes: 12, nproc_per_node: 2}
protocol: {name: hrw, min_nodes: 4, max_nodes: 12}
agent: {max_restarts: 100, collective_timeout: 30}
store: {host: null}
random_faults:
  - {distribution: weibull, shape: 0.8, mtbf: 20000, repair: 300}
"""


def test_seed_replays_random_faults_and_other_seed_changes_them():
    a, b, c = (rdzv_sim.run(RANDOM, seed=s) for s in (1, 1, 2))
    pd.testing.assert_frame_equal(a.events, b.events)
    crashes = lambda r: r.events[r.events.event == "fault_crash"][["t", "node"]].values.tolist()
    assert len(crashes(a)) > 0 and crashes(a) != crashes(c)
    assert a.rounds["consistent"].all() and c.rounds["consistent"].all()


def test_store_host_crash_ends_the_job_with_a_clear_event():
    r = rdzv_sim.run("store-crash")
    ev = r.events
    assert (ev.event == "fault_store_crash").sum() == 1
    lost = ev[ev.event == "store_lost"]
    assert len(lost) == 7 and (lost.t >= 150).all() and (lost.t < 150.01).all()
    assert set(ev[ev.event == "agent_exit"].detail.str.contains("store_lost")) == {True}
    assert bool(r.summary.store_lost.iloc[0])


def test_partition_longer_than_op_timeout_produces_timeouts():
    r = rdzv_sim.run("partition")
    ev = r.events
    cut = {f"node{i}" for i in range(12, 16)}
    timeouts = ev[ev.event == "store_timeout"]
    assert len(timeouts) > 0 and set(timeouts.node) <= cut
    rounds = r.rounds
    assert rounds.nnodes.tolist() == [16, 12, 16]
    assert rounds.start.iloc[1] == pytest.approx(260.0, abs=0.01)     # 200 + collective timeout
    assert rounds.start.iloc[2] > 320.0                                # after the cut heals


def test_static_missing_rank_times_out_at_deadline():
    r = rdzv_sim.run("static-missing-rank")
    to = r.events[r.events.event == "rendezvous_timeout"]
    assert len(to) == 7 and (to.t >= 120).all() and (to.t < 121).all()
    assert r.rounds.empty


def test_idle_time_costs_no_events():
    short = rdzv_sim.run("quickstart", ["duration=1000"]).summary.sim_events.iloc[0]
    long_ = rdzv_sim.run("quickstart", ["duration=10000000"]).summary.sim_events.iloc[0]
    assert long_ == short            # 10,000x the simulated time, not one event more


def test_include_merges_a_calibration_underneath(tmp_path):
    from rdzv_sim.scenario import ScenarioError, load
    (tmp_path / "calib.yaml").write_text("store: {service_base: 0.5e-3}\nagent: {process_start: 2.5}\n")
    (tmp_path / "sc.yaml").write_text("include: [calib.yaml]\nname: x\nduration: 50\n"
                                      "cluster: {nodes: 2}\nagent: {process_start: 1.0}\n")
    sc = load(tmp_path / "sc.yaml")
    assert sc.store.service_base == 0.5e-3 and sc.agent.process_start == 1.0   # the scenario wins
    r = rdzv_sim.run(sc)
    first = r.events[r.events.event == "rendezvous_start"].t.min()
    assert first >= 1.0                                          # agents boot before they join
    (tmp_path / "bad.yaml").write_text("include: [missing.yaml]\nname: x\nduration: 5\ncluster: {nodes: 1}\n")
    with pytest.raises(ScenarioError, match="include"):
        load(tmp_path / "bad.yaml")


def test_llama3_interruption_mix_shortened():
    """The Llama 3 mix at 64 hosts for 5 days: job, rack and host interruptions at their rates."""
    r = rdzv_sim.run("llama3-54d", ["cluster.nodes=64", "cluster.topology.racks=4",
                                    "protocol.min_nodes=40", "protocol.max_nodes=64",
                                    "duration=432000", "shards.count=1024"])
    ev, s = r.events, r.summary.iloc[0]
    kinds = ev[ev.event.str.startswith("fault_")].event.value_counts()
    assert kinds.get("fault_job_interruption", 0) >= 1 and kinds.get("fault_crash", 0) >= 10
    assert r.rounds.consistent.all() and s.agents_exited == 0
    assert 0.5 < s.goodput < s.running_fraction <= 1.0
