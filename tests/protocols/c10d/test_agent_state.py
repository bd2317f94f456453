"""c10d's state holder is each agent's own, as torch's handler's is each process's: the copy an
agent runs holds it and ends with it; the protocol object the job shares keeps none."""
from rdzv_sim.protocols import NodeInfo
from rdzv_sim.scenario.load import load
from rdzv_sim.sim.simulation import Simulation


def test_each_agent_runs_its_own_copy_and_the_shared_object_keeps_no_agents_state():
    sim = Simulation(load("quickstart", ["protocol.name=c10d"]))
    sim.run()
    assert sim.trace.max_round >= 0
    assert sim.protocol._holders == {}                 # nothing of any agent's
    assert sim.protocol.attempts() > 0                 # yet every agent's CAS is counted


def test_two_agents_copies_hold_apart_and_count_together():
    proto = Simulation(load("quickstart", ["protocol.name=c10d"])).protocol
    a, b = (proto.for_agent(NodeInfo(f"n{i}", f"n{i}", 1, i)) for i in range(2))
    assert a is not b and a is not proto
    ha, hb = a.holder(NodeInfo("n0", "n0", 1, 0)), b.holder(NodeInfo("n1", "n1", 1, 1))
    assert ha is not hb and a._holders.keys() != b._holders.keys() and not proto._holders
    assert a.tally is b.tally is proto.tally
    a.tally.cas += 3
    assert proto.attempts() == 3


def test_a_protocol_that_keeps_nothing_per_agent_is_shared():
    """The near miss: hrw keeps nothing per agent, so every agent runs the one object."""
    proto = Simulation(load("quickstart", ["protocol.name=hrw"])).protocol
    assert proto.for_agent(NodeInfo("n0", "n0", 1, 0)) is proto
