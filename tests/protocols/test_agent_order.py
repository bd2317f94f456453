"""What the agent reads first while a round runs, and when waiting hosts make it leave, as its
own rules: a local signal (its workers' state) before a watch's answer, and in an in-place
mode no leaving for waiting hosts before the planned re-form, however they were seen."""
import pytest

from rdzv_sim.ops import FirstOf, Local, Sleep
from rdzv_sim.protocols.agent import AgentSettings, _local_first, elastic_agent
from rdzv_sim.protocols.base import Protocol, RoundResult, Watch
from rdzv_sim.protocols.settings import ProtocolSettings
from rdzv_sim.reasons import Reason
from rdzv_sim.sim.sandbox import Sandbox

LOCAL = (Reason.WORKERS_FAILED, Reason.PEER_FAILED, Reason.IN_PLACE, Reason.LEFT_OUT)


def finish(gen, send):
    with pytest.raises(StopIteration) as stop:
        gen.send(send)
    return stop.value.value


def test_a_local_signal_that_came_while_a_watch_answered_wins():
    gen = _local_first(LOCAL, Reason.NODES_WAITING, None)
    op = next(gen)
    assert isinstance(op, FirstOf) and op.branches[:len(LOCAL)] == tuple(Local(r) for r in LOCAL)
    assert isinstance(op.branches[-1], Sleep) and op.branches[-1].seconds == 0
    assert finish(gen, (LOCAL.index(Reason.IN_PLACE), None)) == (Reason.IN_PLACE, None)


def test_with_no_local_signal_the_watch_answer_stands():
    gen = _local_first(LOCAL, Reason.NODES_WAITING, None)
    next(gen)
    assert finish(gen, (len(LOCAL), None)) == (Reason.NODES_WAITING, None)


def test_in_job_keeps_the_watch_answer_without_asking():
    gen = _local_first(LOCAL[:2], Reason.NODES_WAITING, "v")
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == (Reason.NODES_WAITING, "v")


class AnswersWaiting(Protocol):
    """One host, one round; a keep-alive watch every 2 s whose answer says hosts wait (c10d's
    keep-alive sees its waiting list that way): the agent leaves when its rules let it."""
    name = "answers-waiting"

    def rendezvous(self, node):
        yield Sleep(0.0)
        return RoundResult(0, 0, 1, 1, 0, node.name, "d")

    def watch(self, result, state=None, node=None):
        return [Watch(Sleep(2.0), Reason.PROBE, ask=True)]

    def answer(self, result, watch, node):
        yield Sleep(0.0)
        return ("leave", Reason.NODES_WAITING)


def left_at(**agent) -> float:
    sb = Sandbox(nodes=1)
    proto = AnswersWaiting(ProtocolSettings(name="answers-waiting", min_nodes=1, max_nodes=1))
    cfg = AgentSettings(worker_start=0, monitor_interval=1.0, max_rendezvous_attempts=1, **agent)
    sb.run(lambda info: elastic_agent(info, proto, cfg), until=200)
    t = {e: min(row[0] for row in sb.trace.rows if row[2] == e) for e in ("workers_started", "round_left")}
    return t["round_left"] - t["workers_started"]          # after its workers started


def test_in_job_leaves_for_waiting_hosts_at_the_first_answer():
    assert left_at() == pytest.approx(2.0 + 1.0, abs=0.01)      # the answer, then a monitor tick


def test_in_place_defers_waiting_hosts_seen_by_an_answer_to_the_planned_re_form():
    t = left_at(recovery="in_process", reform_every=30.0)
    assert 30.0 <= t < 30.0 + 2.0 + 1.0 + 0.01       # the re-form, a watch, a monitor tick
