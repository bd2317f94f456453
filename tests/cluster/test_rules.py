"""Each rule of the cluster around the job, stated with its near miss (rdzv_sim/cluster/rules.py)."""
import math

import pytest
from pydantic import ValidationError

from rdzv_sim.cluster import Diagnosis, Lifecycle, Retirement, Stage, rules
from rdzv_sim.cluster.rules import Diagnosed, Repaired

AIRESIM = Lifecycle(bad_hosts={"fraction": 0.15, "multiplier": 5})


def test_a_bad_host_fails_at_its_multiple_on_top_of_the_base_rate():
    assert rules.rate(AIRESIM, False) == pytest.approx(0.01 / 86400)
    assert rules.rate(AIRESIM, True) == pytest.approx(6 * 0.01 / 86400)


def test_thinning_keeps_a_good_hosts_share_of_the_peak_and_every_bad_draw():
    share = 1 / 6                                 # a good host's rate over the peak (a bad one's)
    assert rules.fails(AIRESIM, False, share - 1e-9) and not rules.fails(AIRESIM, False, share + 1e-9)
    assert rules.fails(AIRESIM, True, 0.999999)


def test_without_bad_hosts_the_peak_is_the_base_rate():
    cfg = Lifecycle()
    assert rules.peak_rate(cfg) == rules.rate(cfg, False)
    assert rules.fails(cfg, False, 0.999999)


def test_a_bad_hosts_failure_is_systematic_in_multiplier_over_one_plus_multiplier():
    assert rules.systematic(AIRESIM, True, 5 / 6 - 1e-9) and not rules.systematic(AIRESIM, True, 5 / 6 + 1e-9)
    assert not rules.systematic(AIRESIM, False, 0.0)          # a good host's never is


def test_a_stage_escalates_below_its_probability_and_repairs_otherwise():
    st = Stage(name="automated", duration=7200, escalate=0.8, leaves_faulty=0.4)
    assert rules.stage(st, False, 0.79, 0.9) is Repaired.ESCALATED
    assert rules.stage(st, False, 0.81, 0.41) is Repaired.FIXED
    assert rules.stage(st, False, 0.81, 0.39) is Repaired.FAULTY


def test_a_last_stage_cannot_hand_on_what_it_cannot_handle():
    st = Stage(name="manual", duration=1, escalate=0.5)
    assert rules.stage(st, True, 0.4, 0.9) is Repaired.FAULTY
    assert rules.stage(st, True, 0.6, 0.9) is Repaired.FIXED


def test_a_stage_takes_its_duration_fixed_or_an_exponential_of_that_mean():
    fixed = Stage(name="s", duration=60, distribution="fixed")
    assert rules.stage_time(fixed, 0.99) == 60
    exp = Stage(name="s", duration=60)
    assert rules.stage_time(exp, 0.0) == 0.0
    assert rules.stage_time(exp, 1 - math.exp(-1)) == pytest.approx(60)


def test_a_repair_that_works_makes_a_bad_host_good_and_one_that_fails_keeps_it():
    assert rules.bad_after(AIRESIM, True, Repaired.FIXED) is False
    assert rules.bad_after(AIRESIM, True, Repaired.FAULTY) is True
    assert rules.bad_after(AIRESIM, False, Repaired.FAULTY) is False          # keep: as it was
    worse = Lifecycle(repair={"failed_repair": "bad"})
    assert rules.bad_after(worse, False, Repaired.FAULTY) is True


def test_threshold_retirement_counts_failures_in_the_window_only():
    r = Retirement(policy="threshold", failures=2, window=100)
    assert rules.retire(r, [50.0, 120.0], 150.0, 0.0)
    assert not rules.retire(r, [49.0, 120.0], 150.0, 0.0)       # the first fell out of the window


def test_scored_retirement_at_or_below_the_floor_and_never_by_default():
    r = Retirement(policy="scored", initial=100, penalty=30, credit=10, period=86400, floor=0)
    assert rules.score(r, 4, 2) == 100 - 120 + 20
    assert rules.retire(r, [], 0.0, 0.0) and not rules.retire(r, [], 0.0, 0.5)
    assert rules.periods(r, 2 * 86400 - 1) == 1
    assert not rules.retire(Retirement(), [1.0] * 100, 2.0, -1e9)


def test_diagnosis_misses_above_its_probability_and_blames_wrongly_below_the_uncertainty():
    d = Diagnosis(probability=0.9, uncertainty=0.1)
    assert rules.diagnose(d, 0.91, 0.0) is Diagnosed.MISSED
    assert rules.diagnose(d, 0.89, 0.09) is Diagnosed.WRONG
    assert rules.diagnose(d, 0.89, 0.11) is Diagnosed.RIGHT
    assert rules.diagnose(Diagnosis(), 0.999999, 0.0) is Diagnosed.RIGHT


def test_selection_orders_by_its_policy_ties_by_the_draws():
    hosts, failures, scores, ties = [10, 11, 12], [2, 0, 1], [5.0, 1.0, 9.0], [0.3, 0.2, 0.1]
    assert rules.order("random", hosts, failures, scores, ties) == [12, 11, 10]
    assert rules.order("fewest_failures", hosts, failures, scores, ties) == [11, 12, 10]
    assert rules.order("highest_score", hosts, failures, scores, ties) == [12, 10, 11]
    assert rules.order("fewest_failures", hosts, [0, 0, 0], scores, ties) == [12, 11, 10]


def test_a_selection_is_made_only_below_the_jobs_nodes_and_then_for_its_standbys_too():
    assert rules.to_select(4096, 4096, 16) == 0
    assert rules.to_select(4095, 4096, 16) == 17


def test_regeneration_turns_a_tenth_of_the_bad_fraction_at_least_one():
    assert rules.regenerated(1000, 0.15) == 15
    assert rules.regenerated(10, 0.15) == 1
    assert rules.regenerated(0, 0.15) == 0


@pytest.mark.parametrize("bad, where", [
    ({"diagnosis": {"probability": 1.5}}, ("diagnosis", "probability")),
    ({"bad_hosts": {"fraction": -0.1}}, ("bad_hosts", "fraction")),
    ({"repair": {"stages": [{"name": "auto"}]}}, ("repair", "stages", 0, "duration")),
    ({"repair": {"stages": [{"name": "auto", "duration": 1, "escalate": 2}]}}, ("repair", "stages", 0, "escalate")),
    ({"repair": {"stages": []}}, ("repair", "stages")),
])
def test_settings_refuse_what_cannot_be(bad, where):
    with pytest.raises(ValidationError) as e:
        Lifecycle(**bad)
    assert tuple(e.value.errors()[0]["loc"]) == where


def test_highest_score_selection_needs_the_scored_policy():
    with pytest.raises(ValidationError, match="retirement.policy scored"):
        Lifecycle(selection="highest_score")
    Lifecycle(selection="highest_score", retirement={"policy": "scored"})
