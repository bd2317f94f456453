"""torchft's own quorum test cases, run against torchft's real Lighthouse (and its real
Managers for the Manager's cases), beside the same script on `LighthouseState` / `heal_plan`:
both must give the same quorums, ids and verdicts. The sans-IO halves alone are
`tests/protocols/quorum/test_torchft_rules.py`. A step waits for the state it needs (a request registered,
a heartbeat gone stale), read from the Lighthouse's own status page, never for a fixed time."""
from __future__ import annotations

import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from real_backend.torchft_run import available
from rdzv_sim.protocols.quorum import LighthouseState, Member, QuorumRules, Verdict, heal_plan

pytestmark = [pytest.mark.real, pytest.mark.skipif(available() is not None, reason=str(available()))]

LONG = timedelta(seconds=120)          # an RPC's limit: a bound, not a wait


class RealLighthouse:
    """torchft's LighthouseServer with `rules`, a client, and a view of its status page."""

    def __init__(self, rules: QuorumRules, bind: str = "[::]:0"):
        from torchft._torchft import LighthouseClient, LighthouseServer
        end = time.monotonic() + 120          # a bound: a port just shut down may linger
        while True:
            try:
                self.server = LighthouseServer(bind=bind, min_replicas=rules.min_replicas,
                                               join_timeout_ms=int(rules.join_timeout * 1000),
                                               quorum_tick_ms=int(rules.tick * 1000),
                                               heartbeat_timeout_ms=int(rules.heartbeat_timeout * 1000))
                break
            except RuntimeError as e:         # the same address again, not released yet
                if "Address already in use" not in str(e) or time.monotonic() > end:
                    raise
                time.sleep(0.05)
        self.client = LighthouseClient(self.server.address(), connect_timeout=LONG)
        self.pool = ThreadPoolExecutor(8)

    def ask(self, m: Member):
        """A quorum request in the background: a future of (quorum_id, ids, steps)."""
        def call():
            q = self.client.quorum(replica_id=m.replica_id, timeout=LONG, step=m.step,
                                   world_size=1, shrink_only=m.shrink_only)
            return q.quorum_id, [p.replica_id for p in q.participants], [p.step for p in q.participants]
        return self.pool.submit(call)

    def status(self) -> str:
        with urllib.request.urlopen(self.server.address() + "/status", timeout=30) as r:
            page = r.read().decode()
        return next(line for line in page.splitlines() if "Next quorum status" in line)

    def until(self, *texts: str, limit: float = 120.0) -> str:
        """Poll the status page until its line holds every one of `texts`."""
        end = time.monotonic() + limit
        while True:
            line = self.status()
            if all(t in line for t in texts) or time.monotonic() > end:
                assert all(t in line for t in texts), line
                return line
            time.sleep(0.01)

    def verdict(self) -> Verdict:
        line = self.status()
        return next(v for v in Verdict if v.value in line)

    def close(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.server.shutdown()


@pytest.fixture
def lighthouse():
    made = []

    def make(rules, **kw):
        made.append(RealLighthouse(rules, **kw))
        return made[-1]
    yield make
    for lh in made:
        lh.close()


def test_lighthouse_e2e(lighthouse):
    """lighthouse.rs test_lighthouse_e2e."""
    rules = QuorumRules(min_replicas=1, join_timeout=0.001, tick=0.01)
    lh = lighthouse(rules)
    lh.client.heartbeat("foo")
    real = lh.ask(Member("foo", step=10)).result()
    s = LighthouseState(rules)
    s.heartbeat(0.0, "foo")
    q = s.request(0.0, Member("foo", step=10))
    assert real == (q.quorum_id, q.ids, [10]) == (1, ["foo"], [10])


def test_lighthouse_join_during_shrink(lighthouse):
    """lighthouse.rs test_lighthouse_join_during_shrink, against the real Lighthouse."""
    rules = QuorumRules(min_replicas=2, join_timeout=1.0, tick=0.01)
    lh, s = lighthouse(rules), LighthouseState(rules)
    # 1. the first quorum
    a = lh.ask(Member("replica0", step=1))
    lh.until("[1/1 participants healthy]")
    first = lh.ask(Member("replica1", step=1)).result()
    assert a.result() == first
    s.request(0.0, Member("replica0", step=1))
    q1 = s.request(0.0, Member("replica1", step=1))
    assert first[:2] == (q1.quorum_id, q1.ids) == (1, ["replica0", "replica1"])
    # 2. a joiner asks, then the members ask, one of them shrink-only: the joiner stays out
    joiner = lh.ask(Member("joiner", step=1))
    lh.until("[1/1 participants healthy][3 heartbeating]")
    s.request(0.1, Member("joiner", step=1))
    a = lh.ask(Member("replica0", step=2, shrink_only=True))
    lh.until("[2/2 participants healthy]", "shrink_only=true")
    second = lh.ask(Member("replica1", step=2)).result()
    s.request(0.1, Member("replica0", step=2, shrink_only=True))
    q2 = s.request(0.1, Member("replica1", step=2))
    assert second == (q2.quorum_id, q2.ids, [2, 2]) == (1, ["replica0", "replica1"], [2, 2])
    assert not joiner.done() and "joiner" in s.waiting
    # 3. the members ask again, not shrinking: the joiner, waiting all along, is in
    a = lh.ask(Member("replica0", step=3))
    lh.until("[2/2 participants healthy]", "shrink_only=false")
    third = lh.ask(Member("replica1", step=3)).result()
    s.request(0.2, Member("replica0", step=3))
    q3 = s.request(0.2, Member("replica1", step=3))
    assert third == joiner.result() == (q3.quorum_id, q3.ids, [1, 3, 3])
    assert q3.ids == ["joiner", "replica0", "replica1"] and q3.quorum_id == 2


def test_quorum_split_brain(lighthouse):
    """lighthouse.rs test_quorum_split_brain: one of two heartbeating replicas asking is not a
    quorum; both are."""
    rules = QuorumRules(min_replicas=1, join_timeout=3600.0, tick=0.01)
    lh, s = lighthouse(rules), LighthouseState(rules)
    lh.client.heartbeat("b")
    s.heartbeat(0.0, "b")
    a = lh.ask(Member("a", step=1))
    assert s.request(0.0, Member("a", step=1)) is None
    lh.until("[1/1 participants healthy][2 heartbeating]")
    assert lh.verdict() is s.verdict is Verdict.SPLIT_BRAIN
    both = lh.ask(Member("b", step=1)).result()
    q = s.request(0.0, Member("b", step=1))
    assert both == a.result() and both[:2] == (q.quorum_id, q.ids) == (1, ["a", "b"])


def test_quorum_join_timeout(lighthouse):
    """lighthouse.rs test_quorum_join_timeout: a heartbeating replica that has not asked holds
    a valid quorum back (join timeout an hour) until it asks too."""
    rules = QuorumRules(min_replicas=1, join_timeout=3600.0, tick=0.01)
    lh, s = lighthouse(rules), LighthouseState(rules)
    lh.client.heartbeat("c")
    s.heartbeat(0.0, "c")
    asks = [lh.ask(Member(r, step=1)) for r in ("a", "b")]
    for r in ("a", "b"):
        assert s.request(0.0, Member(r, step=1)) is None
    lh.until("[2/2 participants healthy][3 heartbeating]")
    assert lh.verdict() is s.verdict is Verdict.STRAGGLERS
    last = lh.ask(Member("c", step=1)).result()
    q = s.request(0.0, Member("c", step=1))
    assert [f.result() for f in asks] == [last, last]
    assert last[:2] == (q.quorum_id, q.ids) == (1, ["a", "b", "c"])


def test_quorum_heartbeats(lighthouse):
    """lighthouse.rs test_quorum_heartbeats (as torchft's lighthouse_test does it, for real): a
    replica whose heartbeat went stale no longer counts, so another forms a quorum alone."""
    rules = QuorumRules(min_replicas=1, join_timeout=3600.0, heartbeat_timeout=0.3, tick=0.01)
    lh, s = lighthouse(rules), LighthouseState(rules)
    lh.client.heartbeat("a")
    s.heartbeat(0.0, "a")
    assert s.tick(0.1) is None and s.verdict is Verdict.TOO_FEW
    lh.until("[0 heartbeating]")                      # a's heartbeat went stale
    real = lh.ask(Member("b", step=1)).result()
    q = s.request(0.4, Member("b", step=1))
    assert real[:2] == (q.quorum_id, q.ids) == (1, ["b"])


def test_a_restarted_lighthouse_numbers_quorums_from_one_again(lighthouse):
    """A fresh Lighthouse on the same address remembers no quorum id: it numbers from 1 again,
    so its second quorum can carry the id, and the members, of the lost one's second. torchft
    0.2.0's Manager reconfigures its process group only when the id changes (`manager.py`:
    `if quorum_id != self._quorum_id`), so a group last in the old quorum 2 keeps its old
    process group in the new quorum 2, while a group that went through the new quorum 1 made a
    new one: that quorum's all-reduce fails (reports/validation/validate-quorum-lighthouse).
    The sans-IO state, fresh, numbers the same way."""
    rules = QuorumRules(min_replicas=1, join_timeout=3600.0, tick=0.01)

    def life(lh, s):
        """a alone, then a, b and c: quorum ids 1 and 2."""
        lh.client.heartbeat("a")
        s.heartbeat(0.0, "a")
        ids = [lh.ask(Member("a", step=1)).result()[:2]]
        assert s.request(0.0, Member("a", step=1)).ids == ids[0][1]
        for r in ("b", "c"):
            lh.client.heartbeat(r)
            s.heartbeat(0.0, r)
        late = [lh.ask(Member(r, step=2)) for r in ("b", "c")]
        for r in ("b", "c"):
            assert s.request(0.0, Member(r, step=2)) is None
        lh.until("[2/2 participants healthy][3 heartbeating]")
        ids.append(lh.ask(Member("a", step=2)).result()[:2])
        q = s.request(0.0, Member("a", step=2))
        assert [f.result()[:2] for f in late] == [ids[1], ids[1]]
        return ids, [(1, ["a"]), (q.quorum_id, q.ids)]

    first = lighthouse(rules)
    port = first.server.address().rsplit(":", 1)[1]
    old, sim_old = life(first, LighthouseState(rules))
    first.close()
    again = lighthouse(rules, bind=f"[::]:{port}")
    assert again.server.address() == first.server.address()
    new, sim_new = life(again, LighthouseState(rules))
    assert old == new == sim_old == sim_new == [(1, ["a"]), (2, ["a", "b", "c"])]


class Managers:
    """One real torchft ManagerServer per replica (world size 1), on a real Lighthouse."""

    def __init__(self, lh: RealLighthouse, ids):
        from torchft._torchft import ManagerClient, ManagerServer
        self.servers = {r: ManagerServer(replica_id=r, lighthouse_addr=lh.server.address(),
                                         hostname="localhost", bind="[::]:0", store_addr=f"store_{r}",
                                         world_size=1, heartbeat_interval=timedelta(milliseconds=100),
                                         connect_timeout=LONG, quorum_retries=0) for r in ids}
        self.clients = {r: ManagerClient(m.address(), connect_timeout=LONG) for r, m in self.servers.items()}

    def quorum(self, steps: dict, commit_failures: dict | None = None, init_sync: bool = True) -> dict:
        """Every replica asks at once (replica -> its step); replica -> its QuorumResult."""
        out, cf = {}, commit_failures or {}

        def ask(r):
            out[r] = self.clients[r]._quorum(group_rank=0, step=steps[r], checkpoint_metadata="",
                                             shrink_only=False, timeout=LONG,
                                             commit_failures=cf.get(r, 0), init_sync=init_sync)
        threads = [threading.Thread(target=ask, args=(r,)) for r in steps]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def close(self):
        for m in self.servers.values():
            m.shutdown()


@pytest.fixture
def managers(lighthouse):
    made = []

    def make(rules, ids):
        made.append(Managers(lighthouse(rules), ids))
        return made[-1]
    yield make
    for m in made:
        m.close()


def test_lighthouse_commit_failures(managers):
    """lighthouse.rs test_lighthouse_commit_failures, through real Managers: the same two
    replicas keep quorum id 1 until one reports failed commits, which bumps it to 2."""
    rules = QuorumRules(min_replicas=2, join_timeout=1.0, tick=0.01)
    m, s = managers(rules, ["replica0", "replica1"]), LighthouseState(rules)
    ids = []
    for cf in ({}, {}, {"replica1": 2}):
        real = m.quorum({"replica0": 10, "replica1": 10}, commit_failures=cf)
        for r in ("replica0", "replica1"):
            q = s.request(0.0, Member(r, step=10, commit_failures=cf.get(r, 0)))
        assert {r.quorum_id for r in real.values()} == {q.quorum_id}
        ids.append(q.quorum_id)
    assert ids == [1, 1, 2]


def plan_of(result) -> tuple:
    return (result.heal, result.replica_rank, result.recover_src_replica_rank,
            tuple(result.recover_dst_replica_ranks), result.max_step, result.max_world_size)


@pytest.mark.parametrize("steps,init_sync", [
    ({"replica_0": 0, "replica_1": 0}, True),                     # test_compute_quorum_results_first_step
    ({"replica_0": 0, "replica_1": 0}, False),                    # ..._skip_init_sync
    ({"replica_0": 1, "replica_1": 0}, False),
    ({"replica_0": 0, "replica_1": 1, "replica_2": 0, "replica_3": 1, "replica_4": 0}, True),  # ..._recovery
])
def test_compute_quorum_results(managers, steps, init_sync):
    """manager.rs test_compute_quorum_results_*: who heals from whom, from real Managers (group
    rank 0; torchft's group-rank-1 cases need a two-rank replica group, not run here)."""
    rules = QuorumRules(min_replicas=len(steps), join_timeout=1.0, tick=0.01)
    real = managers(rules, list(steps)).quorum(steps, init_sync=init_sync)
    for r in steps:
        p = heal_plan(r, 0, steps, init_sync=init_sync)
        assert plan_of(real[r]) == (p.heal, p.replica_rank, p.recover_src_replica_rank,
                                    p.recover_dst_replica_ranks, p.max_step, p.max_world_size), r
