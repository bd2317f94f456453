"""Scenarios a careless or hostile hand might write: each is refused at once, by name, with
exit 2, no traceback and nothing written; a refused include never echoes the file."""
import subprocess
import sys
from pathlib import Path

import pytest

from rdzv_sim.outputs import OutputError, atomic_folder

OK = "name: x\nduration: 10\ncluster: {nodes: 2}\n"
CORPUS = {
    "infinite-duration": ("name: x\nduration: 1e400\ncluster: {nodes: 2}\n", "duration: Input should be a finite number"),
    "nan-timeout": (OK + "agent: {collective_timeout: .nan}\n", "agent.collective_timeout: Input should be a finite number"),
    "huge-int-nodes": ("name: x\nduration: 10\ncluster: {nodes: " + "9" * 56 + "}\n", "cluster.nodes: Input should be less than or equal to 100000"),
    "hundred-million-nodes": ("name: x\nduration: 10\ncluster: {nodes: 100000000}\n", "cluster.nodes: Input should be less than or equal to 100000"),
    "ten-thousand-years": ("name: x\nduration: 3.2e11\ncluster: {nodes: 2}\n", "duration: Input should be less than or equal to"),
    "too-many-shards": (OK + "shards: {count: 1000000000}\n", "shards.count: Input should be less than or equal to"),
    "path-in-name": ("name: ../../etc\nduration: 10\ncluster: {nodes: 2}\n", "name: String should match pattern"),
    "include-outside": ("name: x\ninclude: ../secret.yaml\nduration: 10\ncluster: {nodes: 2}\n", "outside the scenario's folder"),
    "include-absolute": ("name: x\ninclude: /etc/passwd\nduration: 10\ncluster: {nodes: 2}\n", "an absolute path is refused"),
    "include-not-a-fragment": ("name: x\ninclude: notes.yaml\nduration: 10\ncluster: {nodes: 2}\n", "not a scenario fragment"),
    "fifty-megabyte-string": ("name: x\nduration: 10\ncluster: {nodes: 2}\ndescription: " + "a" * (50 << 20) + "\n", "larger than 1024 KiB"),
    "c10d-keep-alive-negative": (OK + "protocol: {name: c10d, keep_alive_interval: -5}\n",
                                 "protocol.keep_alive_interval: Input should be greater than 0"),
    "c10d-max-attempt-zero": (OK + "protocol: {name: c10d, keep_alive_max_attempt: 0}\n",
                              "protocol.keep_alive_max_attempt: Input should be greater than 0"),
    "interruption-rate": (OK + "random_faults: [{kind: interruptions, cause: x, count: 1e12}]\n", "random_faults[0].count: Input should be less than or equal to"),
}


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_hostile_scenarios_are_refused_by_name_writing_nothing(case, tmp_path):
    text, expect = CORPUS[case]
    folder = tmp_path / "shared"
    folder.mkdir()
    (tmp_path / "secret.yaml").write_text("root:*:20228:0:99999:7:::\n")
    (folder / "notes.yaml").write_text("root:*:20228:0:99999:7:::\nhunter2: password\n")
    path = folder / "s.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "rdzv_sim", "run", str(path), "--out", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    err = r.stderr.strip()
    assert expect in err and "Traceback" not in err
    assert len(err.splitlines()) == 1 or err.count("error:") == 1, err
    assert "root:" not in err and "hunter2" not in err            # no file content echoed
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_an_include_beside_the_scenario_still_works(tmp_path):
    (tmp_path / "calib.yaml").write_text("store: {service_base: 3.0e-5}\n")
    (tmp_path / "s.yaml").write_text("name: x\ninclude: calib.yaml\nduration: 10\ncluster: {nodes: 2}\n")
    from rdzv_sim.scenario import load
    assert load(tmp_path / "s.yaml").store.service_base == 3.0e-5


def test_a_failed_write_leaves_the_old_folder_and_no_partial_one(tmp_path):
    target = tmp_path / "run"
    target.mkdir()
    (target / "scenario.yaml").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_folder(target) as tmp:
            (tmp / "events.parquet").write_text("half")
            raise RuntimeError("the run failed")
    assert (target / "scenario.yaml").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    with atomic_folder(target) as tmp:
        (tmp / "scenario.yaml").write_text("new")
    assert (target / "scenario.yaml").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_folder_that_is_not_a_run_is_never_replaced(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(OutputError, match="not a run's folder"):
        with atomic_folder(tmp_path):
            pass
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_a_run_that_would_take_long_says_so_and_what_would_be_fast(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rdzv_sim", "run", "llama3-54d",
                        "--set", "protocol.name=c10d", "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "minutes" in r.stderr and "--long" in r.stderr, r.stderr
    assert "--set fidelity=aggregate would take about" in r.stderr and not (tmp_path / "out").exists()


def test_the_estimate_follows_the_rounds_a_scenario_implies():
    from rdzv_sim.estimate import estimate, rounds
    from rdzv_sim.scenario import load
    sc = load("llama3-54d")
    assert 400 < rounds(sc) < 1000                          # ~466 interruptions, most repaired
    e = estimate(sc)
    assert e.seconds > 300 and "fidelity=aggregate" in e.faster
    assert estimate(load("llama3-54d", ["fidelity=aggregate"])).seconds < 0.2 * e.seconds
