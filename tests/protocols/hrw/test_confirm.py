"""hrw's confirmation, driven op by op (sans-IO): the rules of `_confirm` and `_decide`."""
import pytest

from rdzv_sim import ops as O
from rdzv_sim.protocols.base import RendezvousFailed, RoundResult
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings

RESULT = RoundResult(round=0, rank=1, nnodes=3, world_size=3, first_rank=1, master="a", digest="d")


def protocol():
    return HrwProtocol(HrwSettings(name="hrw", min_nodes=2, max_nodes=3).resolved(3))


def drive(gen, answer):
    """Run `gen`, answering each op with answer(op) (an exception is thrown in); the ops seen."""
    seen, value, exc = [], None, None
    while True:
        try:
            op = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration:
            return seen
        seen.append(op)
        value, exc = None, None
        try:
            value = answer(op)
        except BaseException as e:  # noqa: BLE001 - thrown into the generator as a store would
            exc = e


def confirming(timeouts: int):
    """A member that acks second of three, sees its ready-wait time out, and whose verdict
    compare-and-set times out `timeouts` times before it reads "ok"."""
    left = [timeouts]

    def answer(op):
        if type(op) is O.Add:
            return 2                                   # not the last to ack
        if type(op) is O.FirstOf:
            return op.result(1, None)                  # the confirm window passed (the timer)
        if type(op) is O.CompareSet:
            if left[0]:
                left[0] -= 1
                raise O.StoreTimeout("store call hung past its 4 s deadline")
            return "ok"
        return None
    return answer


def test_each_verdict_timeout_is_recorded_before_the_retry():
    ops = drive(protocol()._confirm(RESULT), confirming(2))
    emitted = [op.event for op in ops if type(op) is O.Emit]
    assert emitted == ["confirmed", "store_timeout", "store_timeout"]
    assert [type(op).__name__ for op in ops] == [
        "Emit", "Add", "FirstOf", "CompareSet", "Emit", "Sleep", "CompareSet", "Emit", "Sleep",
        "CompareSet"]


def test_no_timeout_no_store_timeout_event():
    """The near miss: a verdict read at once records nothing but the confirmation."""
    ops = drive(protocol()._confirm(RESULT), confirming(0))
    assert [op.event for op in ops if type(op) is O.Emit] == ["confirmed"]


def test_a_failed_verdict_fails_the_round():
    def answer(op):
        if type(op) is O.CompareSet:
            return "failed"
        return confirming(0)(op)
    with pytest.raises(RendezvousFailed):
        drive(protocol()._confirm(RESULT), answer)
