"""A quorum job at fidelity aggregate is priced by its own round: one replica group re-forms,
whatever the job's size, and smaller groups make more rounds (reports/per_step_ft.md)."""
import pytest

from rdzv_sim.estimate import estimate
from rdzv_sim.scenario import load


def test_a_quorum_round_costs_by_its_group_not_by_the_job():
    small = estimate(load("llama3-54d-quorum", ["fidelity=aggregate", "protocol.group_size=8",
                                                  "training.model_parallel_nodes=8"]))
    large = estimate(load("llama3-54d-quorum", ["fidelity=aggregate", "protocol.group_size=128"]))
    assert small.rounds == large.rounds
    assert small.seconds == pytest.approx(4 * large.seconds)          # sqrt(128 / 8)
    # the near miss, priced as hrw (a round of the whole job): 3e-5 s a host, 2,048 hosts
    assert large.seconds != pytest.approx(large.rounds * 3e-5 * 2048)
    frontier = estimate(load("frontier-100k-quorum"))
    assert frontier.seconds < 120                  # hrw's price: 12,288 hosts a round, ~400 s
