"""c10d's known wait-list livelock (torch restarts every round when more live nodes than
max_nodes wait) applies when the hosts, hot spares included, outnumber max_nodes; not when
they fit (the near miss)."""
from rdzv_sim.scenario import load
from rdzv_sim.testing.known import known_for
from rdzv_sim.testing.violations import Violation

LIVELOCK = "wait-listed nodes that lose the race"


def scenario(nodes, spares, max_nodes=4):
    return load({"name": "k", "duration": 60, "cluster": {"nodes": nodes}, "store": {"host": None},
                 "protocol": {"name": "c10d", "min_nodes": 1, "max_nodes": max_nodes, "last_call_timeout": 3},
                 "scheduler": {"hot_spares": spares}})


def why(sc):
    v = known_for("c10d", [Violation("liveness", "the last round has 3")], sc)[0]
    return v.known or ""


def test_spares_beyond_max_nodes_make_the_livelock_known():
    assert LIVELOCK in why(scenario(4, 2))          # 6 hosts for 4 seats (found by a random seed)
    assert LIVELOCK in why(scenario(6, 0))


def test_hosts_that_fit_max_nodes_leave_a_stall_unexplained():
    assert LIVELOCK not in why(scenario(4, 0))
    assert LIVELOCK not in why(scenario(3, 1))
