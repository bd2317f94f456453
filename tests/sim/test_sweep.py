"""Sweeps: grid x seeds on a process pool or a Dask cluster; one row per run; a report."""
import subprocess
import sys

import pandas as pd
import pytest

from rdzv_sim.sweep import parse_grid, plan, sweep

GRID = {"agent.collective_timeout": ["10", "60"], "protocol.name": ["hrw", "c10d"]}


def test_plan_is_the_cartesian_product_times_seeds():
    specs = plan(GRID, 3, base_seed=5)
    assert len(specs) == 12 and {s["seed"] for s in specs} == {5, 6, 7}
    assert parse_grid(["a.b=1,2", "c=x"]) == {"a.b": ["1", "2"], "c": ["x"]}
    with pytest.raises(ValueError, match="expected key.path"):
        parse_grid(["nonsense"])


def test_process_pool_sweep_rows_follow_the_grid():
    df = sweep("quickstart", GRID, seeds=2, workers=2)
    assert len(df) == 8 and list(df.columns[:3]) == ["agent.collective_timeout", "protocol.name", "seed"]
    # a longer collective timeout means a later re-rendezvous: less training
    hrw = df[df["protocol.name"] == "hrw"].groupby("agent.collective_timeout").running_fraction.mean()
    assert hrw["10"] > hrw["60"]
    again = sweep("quickstart", GRID, seeds=2, workers=1)
    pd.testing.assert_frame_equal(df.drop(columns="wall_s"), again.drop(columns="wall_s"))


def test_dask_local_cluster_gives_the_same_table():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        df = sweep("quickstart", {"agent.collective_timeout": ["10", "60"]}, seeds=1,
                   dask_address=cluster.scheduler_address)
    local = sweep("quickstart", {"agent.collective_timeout": ["10", "60"]}, seeds=1, workers=1)
    pd.testing.assert_frame_equal(df.drop(columns="wall_s"), local.drop(columns="wall_s"))


def test_sweep_cli_writes_table_and_report(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rdzv_sim", "sweep", "quickstart", "--grid",
                        "protocol.last_call_timeout=1,3", "--seeds", "2", "--workers", "2",
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(tmp_path / "sweep.parquet")
    assert len(df) == 4
    html = (tmp_path / "sweep.html").read_text()
    assert "id='fig-sweep-rdzv_latency_p50'" in html
    bad = subprocess.run([sys.executable, "-m", "rdzv_sim", "sweep", "quickstart", "--grid",
                          "cluster.nodes=zero"], capture_output=True, text=True)
    assert bad.returncode == 2 and "cluster.nodes" in bad.stderr and "Traceback" not in bad.stderr


def test_a_checkpoint_sweep_marks_the_best_interval_beside_young_and_daly():
    from rdzv_sim.report.sweep_report import checkpoint_advice
    from rdzv_sim.scenario.load import load
    from rdzv_sim.sweep import sweep as run_sweep
    sc = load({"name": "ckpt", "seed": 1, "duration": 40 * 3600.0,
               "cluster": {"nodes": 4, "nproc_per_node": 1, "start_spread": 0},
               "store": {"host": None},
               "protocol": {"name": "hrw", "min_nodes": 4, "max_nodes": 4, "join_timeout": 1e9},
               "agent": {"max_restarts": 10**6, "max_rendezvous_attempts": 10**6,
                         "collective_timeout": 10, "worker_start": 10},
               "shards": {"count": 0},
               "training": {"checkpoint_interval": 600, "checkpoint_cost": 30},
               "random_faults": [{"mtbf": 4 * 3600.0, "repair": 30}]})
    grid = {"training.checkpoint_interval": ["60", "465", "3600"]}
    df = run_sweep(sc, grid, seeds=2, workers=2)
    assert df.groupby("training.checkpoint_interval").goodput.mean().idxmax() == "465"
    lines = checkpoint_advice(df, list(grid), sc)
    young = (2 * 30 * 3600.0) ** 0.5                     # job MTBF: 4 hosts x 1/(4 h) -> 1 h
    assert lines[0].startswith("best training.checkpoint_interval: 465")
    assert f"Young {young:,.0f} s" in lines[1] and f"Daly {young - 30:,.0f} s" in lines[1]
