"""A waiter that probes a round's members (`_await_end`): a round that ends while it probes
has ended (the waiter joins the next one at once); only members that do not answer within
`probe_timeout` make it end the round itself."""
import math

from rdzv_sim.ops import Now, Set, Sleep
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.sim.sandbox import Sandbox


def waiter_returns(end_at: float | None) -> tuple[float, list]:
    """Round 0 is ready with one silent member; node n0 waits for its end (probes every 5 s,
    10 s for an answer); n1 ends the round at `end_at` (never if None)."""
    sb = Sandbox(nodes=2)
    proto = HrwProtocol(HrwSettings(name="hrw", min_nodes=1, max_nodes=1, probe_interval=5.0,
                                    probe_timeout=10.0))
    back = {}

    def waiter(info):
        yield Set(proto._k(0, "ready"), "1")
        ended = yield from proto._await_end(0, info, math.inf)
        back["t"] = yield Now()
        return ended

    def ender(info):
        yield Sleep(end_at if end_at is not None else 0.0)
        if end_at is not None:
            yield from proto.end_round_at(0, "planned")

    sb.spawn(sb.nodes[0], waiter(sb.nodes[0].info))
    sb.spawn(sb.nodes[1], ender(sb.nodes[1].info))
    sb.env.run(until=60)
    return back["t"], [row[2] for row in sb.trace.rows]


def test_a_round_that_ends_during_a_probe_ends_the_wait_then():
    t, events = waiter_returns(end_at=7.0)                  # probing from 5 s, until 15 s
    assert 7.0 <= t < 7.1 and "members_lost" not in events


def test_members_silent_for_the_probe_timeout_are_lost():
    t, events = waiter_returns(end_at=None)
    assert 15.0 <= t < 15.1 and "members_lost" in events
