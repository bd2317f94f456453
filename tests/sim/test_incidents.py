"""Incident logs: read and checked (bad ones refused by file, line and column), fitted per
cause (scipy.stats), and turned into random_faults a scenario accepts."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

import rdzv_sim
from rdzv_sim.incidents import LogError, fit, random_faults, read_log, sample_log

HOUR = 3600.0


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rdzv_sim", *args], capture_output=True, text=True)


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
    log = sample_log()
    assert len(log) == 466 and log["source"].str.startswith("synthetic").all()
    log.to_csv(tmp_path / "l3.csv", index=False)
    fits = fit(read_log(tmp_path / "l3.csv"), span=54 * 86400)
    sc = rdzv_sim.load_scenario("llama3-54d")
    want = {(r.cause, r.scope): r.count for r in sc.random_faults}
    assert {(f.cause, f.scope): f.count for f in fits} == want


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
