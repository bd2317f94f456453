"""A quorum job at fidelity aggregate is priced by its own rounds: each re-forms one replica
group, whatever the job's size, and every group steps through the run, so smaller groups (more
of them) cost more (reports/per_step_ft.md, reports/estimates.md)."""
import pytest

from rdzv_sim.estimate import HRW_AGGREGATE, OVERHEAD_S, estimate, placement_s, quorum_round
from rdzv_sim.scenario import load


def test_a_quorum_round_costs_a_group_re_form_and_every_group_s_steps():
    small_sc = load("llama3-54d-quorum", ["fidelity=aggregate", "protocol.group_size=8",
                                          "training.model_parallel_nodes=8"])
    large_sc = load("llama3-54d-quorum", ["fidelity=aggregate", "protocol.group_size=128"])
    small, large = estimate(small_sc), estimate(large_sc)
    assert small.rounds == large.rounds
    days = small_sc.duration / 86400
    groups = small_sc.hosts // 8 - large_sc.hosts // 128
    assert small.seconds - large.seconds == pytest.approx(0.00278 * groups * days)
    # the near miss, priced as hrw (a round of the whole job)
    fixed = OVERHEAD_S + placement_s(large_sc)
    as_hrw = HRW_AGGREGATE.per_round(large_sc.hosts, large_sc)
    assert large.seconds - fixed != pytest.approx(large.rounds * as_hrw, rel=0.05)
    frontier = estimate(load("frontier-100k-quorum"))
    assert frontier.seconds < 120


def test_a_job_of_a_few_hosts_is_priced_as_the_few_it_has():
    """validate-quorum's 3 groups of 1 run in about a tenth of a second: its re-forms cost 3/16
    of a group of 16's."""
    sc = load("validate-quorum", ["fidelity=aggregate"])
    big = load("llama3-54d-quorum", ["fidelity=aggregate"])
    assert quorum_round(3, sc) < 0.25 * quorum_round(big.hosts, big)
    assert estimate(sc).seconds < 0.2
