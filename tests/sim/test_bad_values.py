"""Values in the store are input from other machines: a malformed descriptor, assignment or
closure makes the reader treat that node or round as failed, with one trace event; the healthy
nodes never crash and never hang."""
import pytest

from rdzv_sim.ops import Add, CompareSet, Now, Set, Sleep
from rdzv_sim.protocols.agent import AgentSettings, Exit, rendezvous_with_retry
from rdzv_sim.protocols.base import BadValue, NodeInfo, RoundResult, closed_count
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.sim.sandbox import Sandbox

P = "rdzv/job/r0/"


def hostile(writes):
    """A node that writes what it likes, when it likes."""
    def gen(_info):
        for at, op in writes:
            now = yield Now()
            if at > now:
                yield Sleep(at - now)
            yield op
        return "done"
    return gen


def honest(proto):
    def gen(info):
        r = yield from rendezvous_with_retry(info, proto, AgentSettings(max_rendezvous_attempts=5))
        return r
    return gen


def run(writes, n_honest=2, **settings):
    proto = HrwProtocol(HrwSettings(run_id="job", min_nodes=2, max_nodes=3, last_call_timeout=1,
                                    confirm_timeout=5, **settings))
    sb = Sandbox(nodes=n_honest + 1)
    bad = sb.spawn(sb.nodes[0], hostile(writes)(sb.nodes[0].info))
    good = [sb.spawn(n, honest(proto)(n.info)) for n in sb.nodes[1:]]
    sb.env.run(until=200)
    events = [row[2] for row in sb.trace.rows]
    return [p.value if p.triggered else None for p in good], events, bad


@pytest.mark.parametrize("garbage", ["{not json", "[1, 2]", '{"name": 7, "addr": "x", "nproc": 1}',
                                     '{"name": "x", "addr": "y", "nproc": -3}', "x" * 100_000])
def test_a_malformed_descriptor_is_a_hole(garbage):
    results, events, _ = run([(0.0, CompareSet(P[:-3] + "round", "", "0")), (0.0, Add(P + "seq", 1)),
                              (0.0, Set(P + "n1", garbage))])
    assert all(isinstance(r, RoundResult) for r in results), results
    assert {r.nnodes for r in results} == {2} and sorted(r.rank for r in results) == [0, 1]
    assert events.count("bad_value") == 1


def test_a_malformed_assignment_fails_the_round_and_the_next_one_forms():
    # slot 1's assignment overwritten with garbage right after the closer wrote it
    results, events, _ = run([(0.5, Set(P + "a1", "{garbage"))], n_honest=2)
    assert all(isinstance(r, RoundResult) for r in results), results
    assert "bad_value" in events and {r.round for r in results} == {1}


def test_a_malformed_closure_fails_the_round():
    results, events, _ = run([(0.0, CompareSet(P[:-3] + "round", "", "0")),
                              (0.0, CompareSet(P + "closed", "", "evil"))])
    assert all(isinstance(r, (RoundResult, Exit)) for r in results)
    assert "bad_value" in events and any(isinstance(r, RoundResult) and r.round >= 1 for r in results)


def test_the_decoders_refuse_what_they_do_not_write():
    good = NodeInfo("a", "10.0.0.1", 8, 3, port=29500)
    assert NodeInfo.decode(good.encode()) == good
    for text in ("", "null", '"a"', '{"name": "a"}', '{"name": "a", "addr": "b", "nproc": true}',
                 '{"name": "' + "a" * 300 + '", "addr": "b", "nproc": 1}'):
        with pytest.raises(BadValue):
            NodeInfo.decode(text)
    r = RoundResult(2, 1, 3, 24, 8, "10.0.0.1", "abc", 29500)
    assert RoundResult.decode(r.encode()) == r
    for bad in ('{"round": 0, "rank": 3, "nnodes": 3, "world_size": 3, "first_rank": 0, "master": "m", "digest": "d"}',
                '{"round": -1, "rank": 0, "nnodes": 1, "world_size": 1, "first_rank": 0, "master": "m", "digest": "d"}'):
        with pytest.raises(BadValue):
            RoundResult.decode(bad)
    assert closed_count("node3:17") == 17
    for bad in ("17", "node3:", "node3:x", None):
        with pytest.raises(BadValue):
            closed_count(bad)
