"""A quorum job at fidelity aggregate is priced by its own round: one replica group re-forms,
whatever the job's size, and smaller groups make more rounds (reports/per_step_ft.md)."""
import pytest

from rdzv_sim.estimate import OVERHEAD_S, estimate
from rdzv_sim.scenario import load


def test_a_quorum_round_costs_by_its_group_not_by_the_job():
    small = estimate(load("llama3-54d-quorum", ["fidelity=aggregate", "protocol.group_size=8",
                                                  "training.model_parallel_nodes=8"]))
    large = estimate(load("llama3-54d-quorum", ["fidelity=aggregate", "protocol.group_size=128"]))
    assert small.rounds == large.rounds
    assert small.seconds - OVERHEAD_S == pytest.approx(4 * (large.seconds - OVERHEAD_S))   # sqrt(128 / 8)
    # the near miss, priced as hrw (a round of the whole job): 4e-6 s a host, 2,048 hosts
    assert large.seconds - OVERHEAD_S != pytest.approx(large.rounds * 4e-6 * 2048)
    frontier = estimate(load("frontier-100k-quorum"))
    assert frontier.seconds < 120
    assert frontier.seconds - OVERHEAD_S != pytest.approx(frontier.rounds * 4e-6 * 12288, rel=0.05)   # hrw's
