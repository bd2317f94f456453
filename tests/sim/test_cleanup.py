"""A long job's store does not keep every round it ever had: hrw's rank 0 deletes round r-2."""
import re

from rdzv_sim.scenario import load
from rdzv_sim.sim.simulation import Simulation


def test_old_rounds_keys_are_deleted():
    sc = load({"name": "many-rounds", "seed": 3, "duration": 4000,
               "cluster": {"nodes": 8, "start_spread": 1}, "store": {"host": None},
               "protocol": {"name": "hrw", "min_nodes": 6, "max_nodes": 8, "last_call_timeout": 2},
               "agent": {"max_restarts": 100, "worker_start": 2, "peer_crash_detection": 1},
               "random_faults": [{"kind": "interruptions", "cause": "bug", "count": 12,
                                  "scope": "job"}]})
    sim = Simulation(sc)
    sim.run()
    rounds = {int(m.group(1)) for k in sim.store.data
              if (m := re.match(r"rdzv/job/r(\d+)/", k))}
    last = sim.trace.max_round
    assert last >= 6                                   # enough rounds to have cleaned some
    assert rounds and min(rounds) >= last - 2, sorted(rounds)
    assert len(sim.store.data) < 4 * 8 * 3 + 40        # a few rounds' keys, not all of them
