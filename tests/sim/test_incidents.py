"""Incident logs: read and checked (bad ones refused by file, line and column), fitted per
cause (scipy.stats), and turned into random_faults a scenario accepts."""
import io
import json

import numpy as np
import pandas as pd
import pytest
import yaml

import rdzv_sim
from rdzv_sim.incidents import LogError, fit, random_faults, read_log, sample_log
from rdzv_sim.scenario.load import load

from test_cli import cli

HOUR = 3600.0


def write_log(path, gaps, cause="gpu", scope="host", repair=None):
    t = np.cumsum(gaps)
    df = pd.DataFrame({"time": t, "scope": scope, "cause": cause})
    if repair is not None:
        df["repair_s"] = repair
    df.to_csv(path, index=False)
    return float(t[-1])


def test_a_log_of_exponential_incidents_is_fitted_within_its_noise(tmp_path):
    """2,000 incidents one hour apart on average: the rate within 10% (its standard error is
    2.2%), the Weibull shape within 0.1 of 1, and the exponential not rejected."""
    rng = np.random.default_rng(7)
    end = write_log(tmp_path / "exp.csv", rng.exponential(HOUR, 2000), repair=1800)
    (f,) = fit(read_log(tmp_path / "exp.csv"), span=end)
    assert f.count == 2000 and f.rate_per_day == pytest.approx(24.0, rel=0.10)
    assert f.rate_low_per_day < 24.0 < f.rate_high_per_day
    assert f.weibull_shape == pytest.approx(1.0, abs=0.1) and f.ks_p_exponential > 0.01
    assert f.repair_s == 1800
    (rf,) = random_faults([f])
    assert rf == {"kind": "interruptions", "cause": "gpu", "count": 2000, "per": end,
                  "scope": "node", "repair": 1800}


def test_clustered_incidents_are_told_apart_from_a_poisson_process(tmp_path):
    """Weibull gaps of shape 0.6 (incidents come in bursts): the shape is recovered within 10%
    and the exponential is rejected."""
    rng = np.random.default_rng(3)
    write_log(tmp_path / "wb.csv", HOUR * rng.weibull(0.6, 2000))
    (f,) = fit(read_log(tmp_path / "wb.csv"))
    assert f.weibull_shape == pytest.approx(0.6, rel=0.10) and f.ks_p_exponential < 0.01


def test_the_sample_log_is_llama3s_counts_and_says_it_is_synthetic(tmp_path):
    log = sample_log(load('llama3-54d'))
    assert len(log) == 466 and log["source"].str.startswith("synthetic").all()
    log.to_csv(tmp_path / "l3.csv", index=False)
    fits = fit(read_log(tmp_path / "l3.csv"), span=54 * 86400)
    sc = rdzv_sim.load_scenario("llama3-54d")
    want = {(r.cause, r.scope): r.count for r in sc.random_faults}
    assert {(f.cause, f.scope): f.count for f in fits} == want
    assert {f.detection_s for f in fits if f.scope == "node"} == {30.0}     # the scenario's
    assert all(f.detection_s is None for f in fits if f.scope != "node")


def test_fit_writes_random_faults_a_scenario_accepts(tmp_path):
    sample = cli("incidents", "sample", "--out", str(tmp_path / "l3.csv"))
    assert sample.returncode == 0, sample.stderr
    r = cli("incidents", "fit", str(tmp_path / "l3.csv"), "--span", str(54 * 86400),
            "--out", str(tmp_path / "faults.yaml"))
    assert r.returncode == 0, r.stderr
    assert "faulty_gpu" in r.stdout
    faults = yaml.safe_load((tmp_path / "faults.yaml").read_text())["random_faults"]
    sc = yaml.safe_load(open(rdzv_sim.scenario.bundled()["llama3-54d"]).read())
    sc["random_faults"] = faults
    loaded = rdzv_sim.load_scenario(sc)
    assert sum(f.count for f in loaded.random_faults) == 466


BAD = {
    "no scope column": ("time,cause\n1,gpu\n", "no column 'scope'"),
    "negative time": ("time,scope,cause\n1,host,gpu\n-5,host,gpu\n", "line 3, column 'time'"),
    "unknown scope": ("time,scope,cause\n1,host,gpu\n2,cluster,gpu\n", "line 3, column 'scope': 'cluster'"),
    "bad repair": ("time,scope,cause,repair_s\n1,host,gpu,soon\n", "line 2, column 'repair_s'"),
    "mixed times": ("time,scope,cause\n1,host,gpu\n2026-01-01,host,gpu\n", "line 3, column 'time'"),
    "empty cause": ("time,scope,cause\n1,host,gpu\n2,host,\n", "line 3, column 'cause'"),
    "no rows": ("time,scope,cause\n", "no incidents"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_log_is_refused_by_file_line_and_column(tmp_path, case):
    text, message = BAD[case]
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(LogError, match=message.replace("(", r"\(")):
        read_log(path)
    r = cli("incidents", "fit", str(path), "--out", str(tmp_path / "faults.yaml"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert str(path) in r.stderr and not (tmp_path / "faults.yaml").exists()


def test_a_huge_log_is_refused_unread(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as f:               # sparse: 300 MiB on paper, nothing to read
        f.write(b"time,scope,cause\n")
        f.truncate(300 * 2 ** 20)
    with pytest.raises(LogError, match="MiB"):
        read_log(path)


def test_date_times_count_from_the_first_incident(tmp_path):
    path = tmp_path / "dates.csv"
    path.write_text("time,scope,cause\n2026-01-01T00:00:00Z,job,bug\n2026-01-01T02:00:00Z,job,bug\n"
                    "2026-01-01T01:00:00Z,rack,switch\n")
    log = read_log(path)
    assert log["time"].tolist() == [0.0, 3600.0, 7200.0]
    assert log["scope"].tolist() == ["job", "rack", "job"]


def replay_scenario(tmp_path, log_name, duration, nodes=16, **spec):
    text = yaml.safe_dump({
        "name": "replay", "duration": duration, "fidelity": "aggregate",
        "cluster": {"nodes": nodes, "nproc_per_node": 8},
        "protocol": {"name": "hrw", "min_nodes": 1, "max_nodes": nodes, "last_call_timeout": 5},
        "random_faults": [{"kind": "incident_log", "log": log_name, **spec}]})
    (tmp_path / "sc.yaml").write_text(text)
    return tmp_path / "sc.yaml"


def faults_of(events):
    ev = events[events["event"].isin(["fault_crash", "fault_job_interruption"])]
    causes = [json.loads(d)["cause"] for d in ev["detail"]]
    return ev["t"].to_numpy(float), causes, ev["node"].astype(str).to_numpy()


def test_a_log_of_exponential_incidents_is_fitted_and_replayed_exactly(tmp_path):
    """500 incidents an hour apart on average, host and job scope: the fit finds the rate within
    20% (its standard error is 4.5%), and the replay has exactly the log's incidents, each at
    its time with its cause, host incidents on live hosts (a host is down for its repair)."""
    rng = np.random.default_rng(11)
    t = np.round(np.cumsum(rng.exponential(HOUR, 500)), 3)
    scope = np.where(rng.random(500) < 0.8, "host", "job")
    cause = np.where(scope == "job", "software_bug", rng.choice(["gpu", "nic"], 500))
    pd.DataFrame({"time": t, "scope": scope, "cause": cause, "repair_s": 600.0}).to_csv(
        tmp_path / "log.csv", index=False)
    fits = fit(read_log(tmp_path / "log.csv"), span=float(t[-1]))
    total = sum(f.rate_per_day for f in fits)
    assert total == pytest.approx(24.0, rel=0.20)
    result = rdzv_sim.run(rdzv_sim.load_scenario(str(replay_scenario(tmp_path, "log.csv", float(t[-1]) + 60))))
    times, causes, nodes = faults_of(result.events)
    assert times.tolist() == t.tolist()
    assert causes == cause.tolist()
    assert (nodes[scope == "job"] == "job").all() and (nodes[scope == "host"] != "job").all()


def test_a_named_host_is_always_the_same_simulated_host(tmp_path):
    names = [f"gpu-host-{i}" for i in range(6)]
    rows = [{"time": 1000.0 * k + 100 + 10 * i, "scope": "host", "cause": "gpu", "host": name}
            for k in range(4) for i, name in enumerate(names)]
    pd.DataFrame(rows).to_csv(tmp_path / "log.csv", index=False)
    result = rdzv_sim.run(rdzv_sim.load_scenario(
        str(replay_scenario(tmp_path, "log.csv", 5000, repair=300))))
    _, _, nodes = faults_of(result.events)
    assert len(nodes) == len(rows)
    mapped = {}
    for row, node in zip(rows, nodes):
        mapped.setdefault(row["host"], set()).add(node)
    assert all(len(v) == 1 for v in mapped.values())               # one host per name ...
    assert len({next(iter(v)) for v in mapped.values()}) == len(names)   # ... a different one each


def test_replay_scales_a_log_to_the_jobs_size_and_duration(tmp_path):
    from rdzv_sim.incidents import replay_plan
    from rdzv_sim.scenario.schema import IncidentLog
    rng = np.random.default_rng(5)
    n = 400
    log = pd.DataFrame({"time": np.sort(rng.uniform(0, 10 * HOUR, n)),
                        "scope": np.where(np.arange(n) % 4 == 0, "job", "node"), "cause": "x",
                        "repair_s": np.nan, "detection_s": np.nan, "host": ""})
    local, job = 300, 100

    def plan(seed=0, **kw):
        spec = IncidentLog(kind="incident_log", log="-", span=10 * HOUR, **kw)
        return replay_plan(log, spec, nodes=64, racks=0, duration=kw.pop("d", 10 * HOUR),
                           rng=np.random.default_rng(seed))
    same = plan()
    assert len(same) == n and (same["repair"] == 600.0).all() and same["detection"].isna().all()
    doubled = plan(log_hosts=32)                     # half the hosts: twice the host incidents
    assert (doubled["scope"] == "node").sum() == 2 * local and (doubled["scope"] == "job").sum() == job
    quarter = plan(log_hosts=256)                    # four times the hosts: a quarter, drawn
    assert 50 <= (quarter["scope"] == "node").sum() <= 100 and (quarter["scope"] == "job").sum() == job
    assert plan(log_hosts=256).equals(quarter) and not plan(1, log_hosts=256).equals(quarter)
    spec = IncidentLog(kind="incident_log", log="-", span=10 * HOUR, stretch=True, repair=None)
    stretched = replay_plan(log, spec, nodes=64, racks=0, duration=HOUR,
                            rng=np.random.default_rng(0))
    assert np.allclose(stretched["time"], log["time"] / 10) and stretched["repair"].isna().all()
    cut = replay_plan(log, IncidentLog(kind="incident_log", log="-"), nodes=64, racks=0,
                      duration=HOUR, rng=np.random.default_rng(0))
    assert len(cut) == (log["time"] < HOUR).sum()    # unstretched: what fits in the run


def test_a_bad_replayed_log_is_refused_with_the_scenario_and_the_logs_line(tmp_path):
    (tmp_path / "log.csv").write_text("time,scope,cause\n1,host,gpu\n2,cluster,gpu\n")
    sc = replay_scenario(tmp_path, "log.csv", 100)
    r = cli("run", str(sc), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{sc}:" in r.stderr and "random_faults[0].log" in r.stderr
    assert "log.csv: line 3, column 'scope'" in r.stderr and not (tmp_path / "out").exists()
    (tmp_path / "in").mkdir()
    inner = replay_scenario(tmp_path / "in", "../log.csv", 100)
    r = cli("run", str(inner), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "outside the scenario's folder" in r.stderr, r.stderr
    (tmp_path / "racks.csv").write_text("time,scope,cause\n1,rack,switch\n")
    r = cli("run", str(replay_scenario(tmp_path, "racks.csv", 100)), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "cluster.topology.kind: racks" in r.stderr, r.stderr


def test_the_bundled_log_is_the_sample_log():
    """llama3-54d-replay's log is `rdzv-sim incidents sample` as it is (not a stale copy)."""
    bundled = pd.read_csv(rdzv_sim.scenario.bundled()["llama3-54d"].with_name("llama3-incidents.csv"))
    assert bundled.equals(pd.read_csv(io.StringIO(sample_log(load('llama3-54d')).to_csv(index=False))))
