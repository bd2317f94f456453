"""Goodput agrees with checkpoint/restart theory (Young/Daly) under exponential failures."""
import math

import pytest

import rdzv_sim

N, M, DELTA = 8, 3600.0, 60.0          # nodes, system MTBF (s), checkpoint cost (s)
R = 10 + 60 + 30                       # restart: collective timeout + repair + worker start


def simulated(tau: float, failures: int = 300) -> float:
    sc = {"name": "young-daly", "seed": 3, "duration": failures * M,
          "cluster": {"nodes": N, "nproc_per_node": 8, "start_spread": 0},
          "store": {"host": None},
          "protocol": {"name": "hrw", "min_nodes": N, "max_nodes": N, "join_timeout": 1e9},
          "agent": {"max_restarts": 10**6, "max_rendezvous_attempts": 10**6,
                    "collective_timeout": 10, "worker_start": 30},
          "shards": {"count": 0},
          "training": {"checkpoint_interval": tau, "checkpoint_cost": DELTA},
          "random_faults": [{"distribution": "exponential", "mtbf": N * M, "repair": 60}]}
    return float(rdzv_sim.run(sc).summary.goodput.iloc[0])


def renewal(tau: float) -> float:
    """Exact for exponential failures: saved work per span over the mean cycle (M + R)."""
    q = math.exp(-(tau + DELTA) / M)
    return tau * q / (1 - q) / (M + R)


def young_daly(tau: float) -> float:
    """The first-order waste: checkpoints, half an interval lost per failure, restarts."""
    return 1 - (DELTA / tau + (tau + DELTA) / (2 * M) + R / M)


def test_goodput_matches_theory_and_youngs_interval_is_best():
    tau = math.sqrt(2 * DELTA * M)                         # Young's optimal interval
    g = simulated(tau)
    assert g == pytest.approx(renewal(tau), abs=0.02)
    assert g == pytest.approx(young_daly(tau), abs=0.04)
    assert simulated(tau / 4) < g and simulated(tau * 4) < g
