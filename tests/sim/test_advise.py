"""`rdzv-sim advise`: a search over the settings a team may change, paired seeds, the answer
with its confidence; bad search spaces refused by name before anything runs."""
import math

import numpy as np
import pytest
import yaml

from rdzv_sim.advise import advise, parse_space

from test_cli import cli
from test_goodput import DELTA as C, M, young_daly_scenario as _scenario


def young_daly_scenario(interval=3600.0):
    """test_goodput's scenario, 100 failures long, at the aggregate fidelity (a search is many
    runs)."""
    return _scenario(interval, failures=100, seed=1) | {"fidelity": "aggregate"}


@pytest.mark.slow
def test_advise_finds_dalys_checkpoint_interval():
    """Exponential failures, one an hour, a 60 s checkpoint: Daly's interval sqrt(2 C M) - C is
    about 600 s, and the goodput curve is flat near it. From a current interval of an hour, a
    12-candidate search over 100 s to 5,000 s recommends an interval within a factor of 1.5 of
    Daly's, says it beats the current one with a paired interval above zero, and puts the
    theory beside it."""
    daly = math.sqrt(2 * C * M) - C
    a = advise(young_daly_scenario(), parse_space(["training.checkpoint_interval=100..5000:log"]),
               trials=12, seeds=3, workers=2)
    best = a.best["training.checkpoint_interval"]
    assert daly / 1.5 <= best <= daly * 1.5, a.trials
    assert a.recommended["training"]["checkpoint_interval"] == best
    against = next(line for line in a.lines if line.startswith("Against the current"))
    low = float(against.split("paired difference: ")[1].split(" to ")[0])
    assert low > 0, against
    assert any(line.startswith("Theory for the checkpoint interval") for line in a.lines)
    assert len(a.trials) == 12 and a.trials["mean"].is_monotonic_decreasing


BAD_SPACES = {
    "backwards range": ("training.checkpoint_interval=5000..100", "low end must be below"),
    "unknown key": ("training.checkpoint_every=100..200", "checkpoint_every"),
    "one choice": ("protocol.name=hrw", "key.path=A|B|C"),
    "a value the schema refuses": ("training.checkpoint_interval=-5..10", "checkpoint_interval"),
    "no form at all": ("training.checkpoint_interval", "expected key.path"),
    "a recovery mode that does not exist": ("agent.recovery=in_job|restart_in_place", "agent.recovery"),
}


@pytest.mark.parametrize("case", list(BAD_SPACES))
def test_a_bad_search_space_is_refused_by_name_and_nothing_is_written(tmp_path, case):
    space, message = BAD_SPACES[case]
    (tmp_path / "sc.yaml").write_text(yaml.safe_dump(young_daly_scenario()))
    out = tmp_path / "advice"
    r = cli("advise", str(tmp_path / "sc.yaml"), "--space", space, "--trials", "4", "--out", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert message in r.stderr and not out.exists()


def test_advise_writes_the_answer_and_a_scenario_ready_to_run(tmp_path):
    (tmp_path / "sc.yaml").write_text(yaml.safe_dump(young_daly_scenario() | {"duration": 20 * M}))
    out = tmp_path / "advice"
    r = cli("advise", str(tmp_path / "sc.yaml"), "--space", "training.checkpoint_interval=200..3000",
            "--space", "scheduler.hot_spares=0..1", "--trials", "3", "--seeds", "2", "--workers", "2",
            "--objective", "goodput_per_host", "--out", str(out))
    assert r.returncode == 0, r.stderr
    for name in ("advice.md", "advice.html", "trials.csv", "recommended.yaml", "sensitivity.png",
                 "pareto.png"):
        assert (out / name).exists(), name
    md = (out / "advice.md").read_text()
    assert "Best of 3 candidates" in md and "alone (the rest as they are)" in md
    assert "Goodput against warm spares" in md and "Goodput against checkpoints an hour" in md
    assert "minutes at the current settings' cost" in r.stderr       # the estimate, before it runs
    rec = yaml.safe_load((out / "recommended.yaml").read_text())
    ran = cli("run", str(out / "recommended.yaml"), "--out", str(tmp_path / "run"), "--no-report")
    assert ran.returncode == 0, ran.stderr
    assert 200 <= rec["training"]["checkpoint_interval"] <= 3000


def test_the_pareto_front_is_what_no_other_candidate_beats():
    from rdzv_sim.report.advice import pareto_front
    cost = np.array([0, 1, 1, 2, 3, 3, 4])
    good = np.array([0.5, 0.7, 0.6, 0.7, 0.9, np.nan, 0.9])
    # 1 beats 2 (same cost, more) and 3 (less cost, same); 4 beats 6; NaN is never on it
    assert pareto_front(cost, good).tolist() == [True, True, False, False, True, False, False]


@pytest.mark.slow
def test_advise_searches_the_recovery_mode():
    """The recovery mode is a knob like any other, run on the same seeds. Hosts fail one at a
    time and come back, and the world re-forms every 10 minutes: shrinking (2 s, nothing
    recomputed) beats restarting in job, and in process, which waits NVRx's hard timeout for
    a vanished host."""
    sc = young_daly_scenario() | {"protocol": {"name": "hrw", "min_nodes": 2, "probe_interval": 86400}}
    sc["agent"] = {**sc["agent"], "reform_every": 600}
    a = advise(sc, parse_space(["agent.recovery=in_job|in_process|shrink"]), trials=8, seeds=2, workers=2)
    assert set(a.trials["agent.recovery"]) == {"in_job", "in_process", "shrink"}
    assert a.best["agent.recovery"] == "shrink"


def test_every_choice_is_a_first_candidate_before_the_search_narrows():
    from rdzv_sim.advise import first_candidates
    knobs = parse_space(["agent.recovery=in_job|in_process|shrink", "training.checkpoint_interval=100..10000:log"])
    got = first_candidates(knobs, {"agent.recovery": "in_job", "training.checkpoint_interval": 600})
    assert [p["agent.recovery"] for p in got] == ["in_job", "in_process", "shrink"]
    assert {p["training.checkpoint_interval"] for p in got} == {600}            # the rest as they are
    out_of_space = first_candidates(knobs, {"agent.recovery": "in_job", "training.checkpoint_interval": 50})
    assert {p["training.checkpoint_interval"] for p in out_of_space} == {1000.0}    # near miss: the middle
    assert first_candidates(parse_space(["training.checkpoint_interval=100..200"]), {}) == []


def test_too_few_trials_for_the_choices_is_refused_by_name():
    with pytest.raises(ValueError, match="the choices alone are 3 candidates"):
        advise(young_daly_scenario(), parse_space(["agent.recovery=in_job|in_process|shrink"]), trials=2, seeds=2)


def test_the_theory_line_says_why_it_does_not_apply():
    from rdzv_sim.advise import _theory
    from rdzv_sim.scenario import load
    sc = load(young_daly_scenario())
    assert _theory([], {}, sc, [{"mtti_s": math.nan}]).endswith("saw no interruption: no mean time between them to use.")
    line = _theory([], {}, sc, [{"mtti_s": 3600.0}])
    assert line.startswith("Theory for the checkpoint interval") and "(not searched)" in line
    asynchronous = load(young_daly_scenario() | {"training": {**young_daly_scenario()["training"], "checkpoint": "async"}})
    assert "checkpoints are async" in _theory([], {}, asynchronous, [{"mtti_s": 3600.0}])


@pytest.mark.slow
def test_advise_covers_every_recovery_mode_and_carries_its_caveat():
    """Few trials: each mode is still a candidate on the same seeds (TPE alone tried in_job once
    in 12), and the recommendation says what the recommended mode's model leaves out."""
    from rdzv_sim.report.caveats import CAVEATS
    sc = young_daly_scenario() | {"protocol": {"name": "hrw", "min_nodes": 2, "probe_interval": 86400},
                                  "duration": 20 * 3600}
    a = advise(sc, parse_space(["agent.recovery=in_job|in_process|shrink"]), trials=3, seeds=2, workers=2)
    assert sorted(a.trials["agent.recovery"]) == ["in_job", "in_process", "shrink"]
    mode = a.best["agent.recovery"]
    assert mode == "in_job" or ("Caveat: " + CAVEATS[mode]) in a.lines
