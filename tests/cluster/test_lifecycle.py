"""The cluster around the job at work, at both fidelities (rdzv_sim/sim/cluster.py)."""
import re
import subprocess
import sys

import pandas as pd
import pytest

import rdzv_sim
from rdzv_sim.scenario import ScenarioError, load

BASE = """
name: lifecycle-small
seed: {seed}
duration: {duration}
fidelity: {fidelity}
cluster: {{nodes: 8, nproc_per_node: 1, start_spread: 0}}
store: {{host: null}}
scheduler: {{hot_spares: {spares}}}
protocol: {{name: hrw, min_nodes: 8, max_nodes: 8, last_call_timeout: 1}}
agent: {{max_restarts: 100000}}
lifecycle: {lifecycle}
"""


def run(tmp_path, lifecycle: str, fidelity="aggregate", seed=1, duration=20000, spares=1):
    path = tmp_path / f"s-{fidelity}-{seed}.yaml"
    path.write_text(BASE.format(seed=seed, duration=duration, fidelity=fidelity, spares=spares, lifecycle=lifecycle))
    return rdzv_sim.run(str(path))


def crashes(r) -> pd.DataFrame:
    e = r.events
    return e[(e["event"] == "fault_crash") & e["detail"].astype(str).str.contains("host_failure|bad_host")]


FAST = ("{working_pool: 10, failures: {per_host_day: 200}, "
        "repair: {stages: [{name: fix, duration: 500, distribution: fixed}]}}")


@pytest.mark.parametrize("fidelity", ["aggregate", "per_operation"])
def test_a_failed_host_is_back_only_after_its_repair(tmp_path, fidelity):
    r = run(tmp_path, FAST, fidelity)
    e = r.events
    for _, c in crashes(r).iterrows():
        later = e[(e["node"] == c["node"]) & (e["t"] > c["t"])]
        back = later[later["event"] == "node_start"]
        if len(back):                             # (undiagnosed none: every failure is repaired)
            assert back["t"].iloc[0] >= c["t"] + 500 - 1e-9
            assert back["t"].iloc[0] >= later.loc[later["event"] == "host_repaired", "t"].iloc[0]
    s = r.summary.iloc[0]
    assert s["host_failures"] == len(crashes(r))
    assert s["repairs"] <= s["host_failures"]


@pytest.mark.parametrize("fidelity", ["aggregate", "per_operation"])
def test_on_the_training_clock_only_members_of_a_training_world_fail(tmp_path, fidelity):
    r = run(tmp_path, FAST.replace("per_host_day: 200", "per_host_day: 200, clock: training"), fidelity, spares=2)
    assert crashes(r)["round"].notna().all()


def test_a_host_never_starts_after_it_is_retired(tmp_path):
    r = run(tmp_path, FAST.replace("}]}}", "}]}, retirement: {policy: threshold, failures: 1, window: 1e9}}"))
    e = r.events
    retired = e[e["event"] == "host_retired"]
    assert len(retired) == r.summary.iloc[0]["hosts_retired"] == r.summary.iloc[0]["repairs"]
    for _, x in retired.iterrows():
        assert not ((e["node"] == x["node"]) & (e["t"] > x["t"]) & (e["event"] == "node_start")).any()


def test_without_an_idle_host_a_selection_preempts_the_spare_pool_first(tmp_path):
    lc = ("{working_pool: 9, failures: {per_host_day: 200}, spare_pool: {hosts: 3, preemption: 100}, "
          "selection_time: 10, repair: {stages: [{name: fix, duration: 1e6, distribution: fixed}]}}")
    r = run(tmp_path, lc)
    e = r.events
    pre, sel = e[e["event"] == "host_preempted"], e[e["event"] == "hosts_selected"]
    assert r.summary.iloc[0]["preemptions"] == len(pre) <= 3
    if len(pre):
        assert sel["t"].iloc[0] >= pre["t"].iloc[0] + 10 - 1e-9
        assert pre["node"].isin([f"node{i:02d}" for i in range(9, 12)]).all()       # the spare pool's hosts


def test_a_misdiagnosis_pulls_a_healthy_member_and_sends_it_to_repair(tmp_path):
    r = run(tmp_path, FAST.replace("}]}}", "}]}, diagnosis: {uncertainty: 1.0}}"))
    e = r.events
    wrong = e[e["event"] == "host_misdiagnosed"]
    assert r.summary.iloc[0]["misdiagnosed"] == len(wrong)
    pulled = e[(e["event"] == "fault_crash") & e["detail"].astype(str).str.contains("misdiagnosed")]
    assert set(pulled["node"]) <= set(wrong["node"])
    assert not crashes(r)["node"].isin(e.loc[e["event"] == "host_repaired", "node"]).any() or len(pulled)


def test_the_same_seed_gives_the_same_tables(tmp_path):
    a, b = run(tmp_path, FAST, seed=5), run(tmp_path, FAST, seed=5)
    pd.testing.assert_frame_equal(a.summary, b.summary)
    pd.testing.assert_frame_equal(a.events, b.events)


@pytest.mark.parametrize("lifecycle, where", [
    ("{working_pool: 5}", "lifecycle.working_pool"),
    ("{diagnosis: {probability: 1.5}}", "lifecycle.diagnosis.probability"),
    ("{repair: {stages: [{name: auto}]}}", "lifecycle.repair.stages[0].duration"),
])
def test_bad_lifecycle_is_refused_by_its_yaml_path_without_a_traceback(tmp_path, lifecycle, where):
    path = tmp_path / "bad.yaml"
    path.write_text(BASE.format(seed=1, duration=100, fidelity="aggregate", spares=1, lifecycle=lifecycle))
    with pytest.raises(ScenarioError, match=re.escape(where)):
        load(str(path))
    p = subprocess.run([sys.executable, "-m", "rdzv_sim", "run", str(path), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr and where in p.stderr + p.stdout
    assert not (tmp_path / "out").exists()


def test_the_answer_says_why_a_job_stopped_and_what_to_change(tmp_path):
    from rdzv_sim.report.answer import stopped
    path = tmp_path / "stop.yaml"
    path.write_text(BASE.format(seed=1, duration=20000, fidelity="aggregate", spares=1, lifecycle=FAST)
                    .replace("max_restarts: 100000", "max_restarts: 0"))
    r = rdzv_sim.run(str(path))
    line = stopped(r.events, 20000, r.scenario.model_dump(mode="json"))
    if r.summary.iloc[0]["host_failures"]:
        assert "every agent exited" in line and "agent.max_restarts" in line
    running = rdzv_sim.run(str(path), ["lifecycle.failures.per_host_day=1e-6"])      # nothing fails
    assert stopped(running.events, 20000, running.scenario.model_dump(mode="json")) is None


def test_replications_stop_once_the_interval_is_within_the_target(tmp_path):
    from rdzv_sim.replications import replicate
    path = tmp_path / "reps.yaml"
    path.write_text(BASE.format(seed=1, duration=5000, fidelity="aggregate", spares=1, lifecycle=FAST))
    sc = load(str(path))
    wide = replicate(sc, None, 10.0, "host_failures", least=3)
    assert len(wide.summaries) == 3 and wide.met                  # met at the least
    fixed = replicate(sc, 4, None, "host_failures")
    assert list(fixed.summaries["seed"]) == [1, 2, 3, 4] and not fixed.met
    assert fixed.low <= fixed.mean <= fixed.high
    with pytest.raises(ValueError, match="no 'nope'"):
        replicate(sc, 1, None, "nope")
