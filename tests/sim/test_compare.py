"""`compare`: variants of one scenario on the same seeds, paired intervals, the answer first."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import rdzv_sim
from rdzv_sim.comparison import CAVEATS, _summarise, parse_vary

# #66's repro: one crash in a 16-host world with two hot spares
SPARE = {"name": "spare", "seed": 1, "duration": 2000, "cluster": {"nodes": 16, "nproc_per_node": 8},
         "protocol": {"name": "hrw", "min_nodes": 8, "max_nodes": 16, "probe_interval": 86400},
         "agent": {"recovery": "in_job"}, "scheduler": {"hot_spares": 2},
         "training": {"checkpoint_interval": 600, "checkpoint_cost": 10},
         "faults": [{"kind": "crash", "at": 500, "node": 3}]}


def test_parse_vary_wants_a_key_and_two_values():
    assert parse_vary(["agent.recovery=in_job, shrink"]) == {"agent.recovery": ["in_job", "shrink"]}
    with pytest.raises(ValueError, match="expected key.path"):
        parse_vary(["agent.recovery"])
    with pytest.raises(ValueError, match="at least two values"):
        parse_vary(["agent.recovery=shrink"])


def runs(goodputs: dict) -> pd.DataFrame:
    """Hand-made runs: variant -> goodput per seed; the rest of a summary row held equal."""
    rows = []
    for v, gs in goodputs.items():
        for seed, g in enumerate(gs):
            rows.append({"variant": v, "agent.recovery": v, "seed": seed, "goodput": g, "ettr": g,
                         "mttr_s": 10.0, "nodes": 4, "lost_rendezvous_s": 3600.0 * (1 - g),
                         "lost_running_smaller_s": 0.0})
    return pd.DataFrame(rows)


def test_the_best_is_named_first_with_a_paired_interval():
    c = _summarise({"agent.recovery": ["a", "b"]}, [0, 1, 2], runs({"a": [0.5, 0.6, 0.7], "b": [0.6, 0.7, 0.8]}), 8)
    assert c.best == "b" and c.lines[0].startswith("b wins on goodput")
    t = c.table.set_index("variant")
    # the same 0.1 on every seed: the paired difference is exact, though each mean's interval is wide
    assert t.loc["a", "goodput_vs_best"] == pytest.approx(-0.1)
    assert t.loc["a", "goodput_vs_best_lo"] == pytest.approx(-0.1) and t.loc["a", "goodput_vs_best_hi"] == pytest.approx(-0.1)
    assert t.loc["a", "goodput_hi"] - t.loc["a", "goodput_lo"] > 0.2
    assert "+0.1000" in c.lines[0] and "not sure" not in c.lines[0]
    # why: a loses 0.1 h x 4 hosts more to rendezvous each run
    assert t.loc["a", "rendezvous_host_h"] - t.loc["b", "rendezvous_host_h"] == pytest.approx(0.4)
    assert t.loc["a", "lost_gpu_h"] == pytest.approx(t.loc["a", "lost_host_h"] * 8)
    assert "rendezvous +0" in c.lines[1]


def test_a_difference_whose_interval_spans_zero_is_not_sure():
    c = _summarise({"agent.recovery": ["a", "b"]}, [0, 1, 2], runs({"a": [0.5, 0.9, 0.7], "b": [0.8, 0.6, 0.75]}), 1)
    assert "not sure" in c.lines[0]


def test_the_caveats_of_each_recovery_mode_compared_are_said():
    c = _summarise({"agent.recovery": ["in_job", "shrink"]}, [0, 1],
                   runs({"in_job": [0.5, 0.6], "shrink": [0.6, 0.7]}), 1)
    assert CAVEATS["shrink"] in c.lines and CAVEATS["in_job"] in c.lines and CAVEATS["in_process"] not in c.lines


def test_recovery_modes_compared_on_the_same_seeds():
    c = rdzv_sim.compare(SPARE, {"agent.recovery": ["in_job", "in_process", "shrink"]}, seeds=2, workers=2)
    assert list(c.table["variant"]) == ["in_job", "in_process", "shrink"] and c.seeds == [1, 2]
    t = c.table.set_index("variant")
    assert t.loc["in_job", "in_place_recoveries"] == 0 and t.loc["in_process", "in_place_recoveries"] == 1
    assert t.loc["shrink", "store_rounds"] == 1
    assert t.loc[c.best, "goodput_vs_best"] == 0
    # the runs are the ones `run` gives, seed by seed
    one = rdzv_sim.run(SPARE, ["agent.recovery=shrink"], seed=2).summary.iloc[0]
    row = c.runs[(c.runs["variant"] == "shrink") & (c.runs["seed"] == 2)].iloc[0]
    assert row["goodput"] == one["goodput"]
    again = rdzv_sim.compare(SPARE, {"agent.recovery": ["in_job", "in_process", "shrink"]}, seeds=2, workers=1)
    pd.testing.assert_frame_equal(c.table, again.table)


def test_a_bad_variant_is_refused_by_name_before_any_run():
    with pytest.raises(rdzv_sim.ScenarioError, match="agent.recovery"):
        rdzv_sim.compare(SPARE, {"agent.recovery": ["in_job", "in_prcess"]}, seeds=2)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        rdzv_sim.compare(SPARE, {"agent.recovery": ["in_job", "shrink"]}, seeds=1)


def test_the_command_prints_the_answer_first_and_writes_its_tables(tmp_path):
    import yaml
    sc = tmp_path / "spare.yaml"
    sc.write_text(yaml.safe_dump(SPARE))
    out = tmp_path / "cmp"
    r = subprocess.run([sys.executable, "-m", "rdzv_sim", "compare", str(sc), "--vary",
                        "agent.recovery=in_job,shrink", "--seeds", "2", "--workers", "1", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0].split(" wins on goodput")[0] in ("in_job", "shrink")
    assert "2 of 2 runs done" not in r.stdout and "4 of 4 runs done" in r.stderr      # progress on stderr
    assert {p.name for p in out.iterdir()} >= {"compare.md", "compare.html", "compare.parquet", "runs.parquet"}
    md = (out / "compare.md").read_text()
    assert md.index("## The answer") < md.index("## Each variant")
    bad = subprocess.run([sys.executable, "-m", "rdzv_sim", "compare", str(sc), "--vary", "agent.recovery=in_job"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "at least two values" in bad.stderr and "Traceback" not in bad.stderr
