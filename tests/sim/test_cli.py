"""The command line: runs, lists, schemas; bad input gives one clear message and exit 2."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

BROKEN = sorted(Path(__file__).with_name("broken").glob("*.yaml"))


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rdzv_sim", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_scenarios_give_their_message(path):
    from rdzv_sim.scenario import ScenarioError, load
    expect = path.read_text().splitlines()[0].removeprefix("# expect: ")
    with pytest.raises(ScenarioError) as e:
        load(path)
    text = "\n".join(e.value.messages)
    assert expect in text, text
    assert all(m.startswith(str(path)) for m in e.value.messages)


def test_error_messages_carry_the_yaml_line():
    from rdzv_sim.scenario import ScenarioError, load
    with pytest.raises(ScenarioError) as e:
        load(Path(__file__).with_name("broken") / "bad-fault-time.yaml")
    assert e.value.messages[0].split(":")[1] == "7"


def test_cli_bad_scenario_exit_2_no_traceback_nothing_written(tmp_path):
    out = tmp_path / "out"
    r = cli("run", str(BROKEN[0]), "--out", str(out))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "error:" in r.stderr
    assert not out.exists()
    r = cli("run", "no-such-scenario")
    assert r.returncode == 2 and "no bundled scenario" in r.stderr and "quickstart" in r.stderr
    r = cli("run", "quickstart", "--set", "cluster.nodes=zero", "--out", str(out))
    assert r.returncode == 2 and "cluster.nodes" in r.stderr and not out.exists()


def test_cli_run_writes_tables_and_prints_summary(tmp_path):
    r = cli("run", "quickstart", "--out", str(tmp_path), "--set", "duration=300", "--seed", "5")
    assert r.returncode == 0, r.stderr
    assert "rounds_completed" in r.stdout
    for t in ("events", "rounds", "summary"):
        df = pd.read_parquet(tmp_path / f"{t}.parquet")
        assert (df["seed"] == 5).all()
        assert not (tmp_path / f"{t}.csv").exists()          # Parquet only, unless asked
    assert pd.read_parquet(tmp_path / "summary.parquet")["duration"].iloc[0] == 300
    r = cli("run", "quickstart", "--out", str(tmp_path / "csv"), "--set", "duration=300", "--csv",
            "--no-report")
    assert r.returncode == 0, r.stderr
    assert len(pd.read_csv(tmp_path / "csv" / "events.csv")) == \
        len(pd.read_parquet(tmp_path / "csv" / "events.parquet")) > 0


def test_a_run_whose_stderr_is_not_a_terminal_says_it_is_alive(tmp_path):
    """Captured stderr (a CI log): progress lines, not a bar and not silence; --no-progress is
    quiet."""
    r = cli("run", "quickstart", "--out", str(tmp_path / "a"), "--set", "duration=600", "--no-report")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert any(x.startswith("quickstart: 600 of 600 simulated s (100%)") and "rounds" in x
               and "wall" in x for x in lines), r.stderr
    assert lines[-1] == "quickstart: writing the tables", r.stderr
    quiet = cli("run", "quickstart", "--out", str(tmp_path / "b"), "--set", "duration=600",
                "--no-report", "--no-progress")
    assert quiet.returncode == 0 and "simulated s" not in quiet.stderr, quiet.stderr


def test_progress_lines_come_every_few_seconds_with_an_estimate_of_the_rest():
    import io
    from rdzv_sim.progress import ProgressLines
    out = io.StringIO()
    p = ProgressLines("job", 1000.0, out, every=0.0)     # every call is due
    p(250.0, 3)
    p(1000.0, 9)
    first, last, built = out.getvalue().splitlines()
    assert first.startswith("job: 250 of 1,000 simulated s (25%), 3 rounds,") and "left" in first
    assert last.startswith("job: 1,000 of 1,000 simulated s (100%), 9 rounds,") and "left" not in last
    assert built.startswith("job: simulated; building the tables")
    slow = io.StringIO()
    p = ProgressLines("job", 1000.0, slow, every=3600.0)  # none due but the end
    p(250.0, 3)
    p(1000.0, 9)
    assert [x.split(":")[1].split(" of")[0].strip() for x in slow.getvalue().splitlines()[:1]] == ["1,000"]


def test_cli_list_and_schema():
    r = cli("list")
    assert r.returncode == 0 and "quickstart" in r.stdout and "rack-failure" in r.stdout
    r = cli("schema")
    s = json.loads(r.stdout)
    assert s["title"] == "Scenario" and "faults" in s["properties"]


def test_import_is_fast_and_torch_free():
    code = "import sys, rdzv_sim; assert 'torch' not in sys.modules and 'pandas' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_a_key_given_once_per_mapping_is_fine_twice_is_refused_by_path():
    """The rule's near miss: the same key in two different mappings is not a duplicate."""
    from rdzv_sim.scenario import ScenarioError, load
    ok = "name: x\nduration: 10\ncluster: {nodes: 2}\nprotocol: {name: hrw}\n"
    assert load(ok).name == "x"                     # `name` at the top and under protocol
    with pytest.raises(ScenarioError) as e:
        load(ok + "duration: 20\n")
    assert e.value.messages == ["<scenario>:5: duration: given twice, at lines 2 and 5; keep one"]


def test_a_duplicate_key_exits_2_naming_both_lines(tmp_path):
    path = Path(__file__).with_name("broken") / "duplicate-section.yaml"
    r = cli("run", str(path), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "cluster: given twice, at lines 4 and 7" in r.stderr
    assert not (tmp_path / "out").exists()


def test_list_is_one_line_per_scenario_and_show_gives_the_rest():
    from rdzv_sim.scenario.load import bundled
    names = list(bundled())
    r = cli("list")
    lines = r.stdout.splitlines()
    rows = [ln for ln in lines if ln.split(" ", 1)[0] in names]
    assert [ln.split(" ", 1)[0] for ln in rows] == names          # one line each, in order
    quick = next(ln for ln in rows if ln.startswith("quickstart "))
    assert quick.endswith("rendezvous with the hrw protocol; host 3 crashes at 120 s, the survivors "
                          "notice when their collective times out and re-form at 7 hosts; host 3 "
                          "comes back at 200 s and the job grows back to 8.")
    r = cli("show", "quickstart")
    assert r.returncode == 0 and "goodput" in r.stdout and "name: quickstart" in r.stdout
    r = cli("show", "no-such-scenario")
    assert r.returncode == 2 and "no bundled scenario" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("text, first", [
    ("One. Two.", "One."),
    ("Version 2.13 is new. Then more.", "Version 2.13 is new."),   # a dot inside a number
    ("No full stop", "No full stop"),
    ("  Spread\n  over lines.  Next.", "Spread over lines."),
])
def test_first_sentence(text, first):
    from rdzv_sim.cli import first_sentence
    assert first_sentence(text) == first


def test_the_license_is_an_spdx_expression():
    """setuptools deprecates the `{text = ...}` table (builds stop after 2027-02-18)."""
    import tomllib
    from packaging.licenses import canonicalize_license_expression
    meta = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    assert isinstance(meta["license"], str)
    assert canonicalize_license_expression(meta["license"]) == meta["license"]
