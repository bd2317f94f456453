"""The agent's store part (protocols/stores.py): the agent asks it, and knows no failover of its
own. The run's one store never moves; hrw's `store_failover` part keeps the last round and its
home store, and asks for the store's address only when it has something new to remember."""
from rdzv_sim.ops import StoreAddress
from rdzv_sim.protocols.base import NodeInfo, RoundResult
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.protocols.stores import OneStore

R1 = RoundResult(round=1, rank=0, nnodes=2, world_size=2, first_rank=0, master="a", digest="d")
R2 = RoundResult(round=2, rank=0, nnodes=2, world_size=2, first_rank=0, master="a", digest="e")


def drive(gen, answer=("10.0.0.1", 29400)):
    """Run a part's generator, answering StoreAddress; returns (its value, the ops it yielded)."""
    ops = []
    try:
        op = next(gen)
        while True:
            ops.append(type(op).__name__)
            op = gen.send(answer if isinstance(op, StoreAddress) else None)
    except StopIteration as e:
        return e.value, ops


def hrw(**kw):
    return HrwProtocol(HrwSettings(name="hrw", min_nodes=1, max_nodes=2, **kw).resolved(2))


def test_one_store_remembers_the_last_round_and_never_moves():
    s = hrw().agent_stores()
    assert type(s) is OneStore and not s.survives_store_loss and not s.can_move(R1)
    assert drive(s.joined(R1)) == (None, []) and s.last is R1          # no store address asked
    assert drive(s.move(NodeInfo("a", "a", 1, 0))) == (False, [])
    node = s.remembering(NodeInfo("a", "a", 1, 0), R1)
    assert (node.last, node.last_n) == (1, 2)                         # every hrw descriptor carries it
    s.forget()
    assert s.last is None


def test_failover_keeps_the_round_and_its_home_and_can_move_once_it_has_a_round():
    s = hrw(store_failover=True).agent_stores()
    assert s.survives_store_loss and not s.can_move(None) and s.can_move(R1)
    assert s.fence_timeout == 10.0                                     # hrw's failover_timeout
    assert drive(s.joined(R1)) == (None, ["StoreAddress"]) and s.home == ("10.0.0.1", 29400)
    assert drive(s.exited(R1)) == (None, [])                           # nothing new: no address asked
    assert drive(s.exited(R2), ("10.0.0.2", 1)) == (None, ["StoreAddress"])
    assert s.last is R2 and s.home == ("10.0.0.2", 1) and s.tried == 0
    s.tried = 2
    s.forget()
    assert s.last is None and s.tried == 0


def test_failover_without_successors_has_nowhere_to_go():
    s = hrw(store_failover=True).agent_stores()
    drive(s.joined(R1))                                               # R1 elected no successor
    assert drive(s.move(NodeInfo("a", "a", 1, 0))) == (False, [])
