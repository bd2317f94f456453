"""The property tests explore from a seed the code under test gives (tests/conftest.py): the
same seed replays the same examples, another seed draws others, and a failure says how to
replay it."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = '''
from hypothesis import given, strategies as st
from rdzv_sim.testing import fault_schedules

@given(fault_schedules(8, max_faults=3))
def test_probe(faults):
    with open(__import__("os").environ["OUT"], "a") as f:
        f.write(repr(faults) + "\\n")
    assert not __import__("os").environ.get("FAIL")
'''


def run(tmp_path, seed, fail=False, name="out"):
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    out = tmp_path / name
    env = {"OUT": str(out), "HYPOTHESIS_PROFILE": "dev", "PATH": "/usr/bin:/bin",
           **({"FAIL": "1"} if fail else {}), "RDZV_TEST_SEED": str(seed)}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rN",
                        str(tmp_path / "test_probe.py")], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    return r, out.read_text().splitlines() if out.exists() else []


def test_one_seed_replays_and_another_explores(tmp_path):
    r1, a = run(tmp_path, 11, name="a")
    r2, b = run(tmp_path, 11, name="b")
    r3, c = run(tmp_path, 12, name="c")
    assert r1.returncode == r2.returncode == r3.returncode == 0, r1.stdout + r1.stderr
    assert "hypothesis seed: 11" in r1.stdout
    assert a == b and len(a) >= 10
    assert a != c


def test_a_failure_prints_its_replay_command(tmp_path):
    r, _ = run(tmp_path, 5, fail=True)
    assert r.returncode == 1
    assert "--hypothesis-seed=5" in r.stdout and "test_probe" in r.stdout


def test_the_default_scenarios_reach_multi_digit_clusters_and_staggered_starts():
    """Rules that sort names or count past a digit, or that compare start times, need inputs that
    can tell them from a near miss: ten hosts or more, joins that do not all come at once."""
    from hypothesis import find, settings
    from rdzv_sim.testing import scenarios
    quick = settings(database=None, max_examples=2000)
    big = find(scenarios("hrw"), lambda sc: sc.cluster.nodes >= 10, settings=quick)
    assert big.cluster.nodes >= 10
    assert find(scenarios("hrw"), lambda sc: sc.cluster.start_spread > 0, settings=quick)
