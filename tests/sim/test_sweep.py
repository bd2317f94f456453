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


def test_points_give_a_row_per_grid_point_with_its_mean_and_interval():
    from rdzv_sim.sweep import best_point, points
    df = pd.DataFrame({"a": ["x", "x", "x", "y", "y", "y"], "seed": [0, 1, 2] * 2,
                       "goodput": [0.5, 0.6, 0.7, 0.8, 0.8, 0.8]})
    t = points(df, ["a"], metrics=("goodput",))
    assert list(t["a"]) == ["x", "y"] and list(t["seeds"]) == [3, 3]
    x = t.iloc[0]
    assert x["goodput"] == pytest.approx(0.6) and x["goodput_lo"] < 0.6 < x["goodput_hi"]
    assert t.iloc[1]["goodput_lo"] == pytest.approx(0.8)                 # no spread: no width
    assert best_point(t, ["a"]).startswith("best goodput: a=y, 0.8000")
    one = points(df[df["seed"] == 0], ["a"], metrics=("goodput",))        # near miss: one seed
    assert one["goodput_lo"].isna().all()


def test_the_sweep_command_answers_first_and_says_how_far_it_is(tmp_path):
    out = tmp_path / "sw"
    r = subprocess.run([sys.executable, "-m", "rdzv_sim", "sweep", "quickstart", "--grid",
                        "agent.collective_timeout=10,60", "--seeds", "2", "--workers", "1", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("best goodput: agent.collective_timeout=10")
    assert "4 of 4 runs done" in r.stderr
    assert len(pd.read_parquet(out / "points.parquet")) == 2
