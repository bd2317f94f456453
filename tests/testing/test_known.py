"""When a known gap of hrw's store_failover applies: the orphaned waiter (`_ORPHAN`) follows
any fault that loses the store, a pause longer than a call's deadline included."""
import pytest

from rdzv_sim.scenario import load
from rdzv_sim.testing.known import _store_lost


def scenario(fault, failover=True, op_timeout=5.0):
    return load({"name": "k", "seed": 1, "duration": 100, "cluster": {"nodes": 5},
                 "store": {"host": 1, "op_timeout": op_timeout},
                 "protocol": {"name": "hrw", "min_nodes": 3, "max_nodes": 4, "store_failover": failover},
                 "faults": [fault]})


@pytest.mark.parametrize("fault, lost", [
    ({"kind": "store_pause", "at": 1, "duration": 5.5}, True),     # past the 5 s deadline
    ({"kind": "store_pause", "at": 1, "duration": 5.0}, False),    # the near miss: not past it
    ({"kind": "store_crash", "at": 1}, True),
    ({"kind": "crash", "at": 1, "node": 1}, True),                  # the store's host
    ({"kind": "crash", "at": 1, "node": 2}, False),                 # another host
])
def test_a_fault_that_loses_the_store(fault, lost):
    assert _store_lost(scenario(fault), None) is lost


def test_without_failover_nothing_is_excused():
    assert not _store_lost(scenario({"kind": "store_crash", "at": 1}, failover=False), None)
