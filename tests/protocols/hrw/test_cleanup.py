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


def test_the_aggregate_model_counts_the_keys_the_protocol_deletes():
    """The aggregate model prices round r-2's deletes by round_key_count, not by writing the
    keys: it must be the number of keys round_keys lists."""
    proto = Simulation(load("quickstart", ["protocol.name=hrw"])).protocol
    for joined, count, probes in [(1, 1, 0), (9, 8, 0), (12, 8, 3), (12288, 12288, 2)]:
        assert proto.round_key_count(joined, count, probes) == len(proto.round_keys(5, joined, count, probes))
