"""torch's rendezvous contract (torch/distributed/elastic/rendezvous/api.py, and what pytorch's
own handler tests expect), case by case, for every protocol the plugin serves, with torch's own
`c10d` handler as the control: real handlers on a real TCPStore, one thread per node.

A case waits for what it needs (a call to return, a count to reach a value); where it shows
that something does *not* happen (a spare does not time out), it waits past the deadline that
would make it happen."""
import os
import threading
import time
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from torch.distributed.elastic.rendezvous import RendezvousParameters  # noqa: E402
from torch.distributed.elastic.rendezvous.api import (RendezvousClosedError,  # noqa: E402
                                                      RendezvousGracefulExitError,
                                                      RendezvousTimeoutError)
from torch.distributed.elastic.rendezvous.registry import get_rendezvous_handler  # noqa: E402

from userproto import sorted_hrw  # noqa: E402,F401 - registers the user's protocol "sorted"

pytestmark = pytest.mark.real

# backend -> (--rdzv-backend, its own --rdzv-conf); c10d reads whole seconds
BACKENDS = {"c10d": ("c10d", {}),
            "hrw": ("hrw", {}),
            "sorted": ("rdzv-sim", {"protocol": "sorted"}),       # tests/userproto's protocol
            "static": ("rdzv-sim", {"protocol": "static"})}       # fixed ranks: not elastic
ELASTIC = ["c10d", "hrw", "sorted"]
# how a waiting call ends when the job is closed: c10d's pending ones exit "gracefully"
CLOSED = (RendezvousClosedError, RendezvousGracefulExitError)


@pytest.fixture(scope="module")
def store():
    yield dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                        timeout=timedelta(seconds=60), use_libuv=True)


_ids = iter(range(10**6))


class Job:
    """Handlers of one run id (fresh per test) of one backend."""

    def __init__(self, backend, store, lo, hi, **conf):
        self.backend, self.port, self.lo, self.hi = backend, store.port, lo, hi
        # unique across the suite's processes: an agent's identity lock is host-wide
        self.run_id = f"{backend}-{os.getpid()}-{next(_ids)}"
        self.conf = {"join_timeout": "60", "last_call_timeout": "1", "close_timeout": "10",
                     "read_timeout": "30", "is_host": "false", **conf}
        self.handlers = []

    def params(self, name, **conf):
        name_key, own = BACKENDS[self.backend]
        extra = {} if self.backend == "c10d" else {"node_name": name}
        return RendezvousParameters(name_key, f"127.0.0.1:{self.port}", self.run_id, self.lo, self.hi,
                                    local_addr="127.0.0.1", **{**self.conf, **own, **extra, **conf})

    def handler(self, name, **conf):
        h = get_rendezvous_handler(self.params(name, **conf))
        self.handlers.append(h)
        return h

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def formed(self, *names):
        """Handlers for `names`, once they have formed a round together."""
        hs = [self.handler(n) for n in names]
        for c in [Call(h) for h in hs]:
            c.result()
        return hs

    def close(self):
        for h in self.handlers:
            try:
                h.shutdown()
            except Exception:  # noqa: BLE001 - a handler that already failed
                pass


class Call:
    """next_rendezvous() in a thread: its result or its exception, once it returns."""

    def __init__(self, h):
        self.h, self.value, self.error = h, None, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.value = self.h.next_rendezvous()
        except Exception as e:  # noqa: BLE001 - the test looks at it
            self.error = e
        self.done.set()

    def result(self, within=90):
        assert self.done.wait(within), "next_rendezvous did not return"
        if self.error is not None:
            raise self.error
        return self.value


def until(what, pred, within=60):
    deadline = time.monotonic() + within
    while not pred():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


@pytest.fixture(params=ELASTIC)
def backend(request):
    return request.param


# --- the positive contract -----------------------------------------------------------
def test_the_registry_finds_it_and_the_info_has_distinct_ranks_and_a_working_store(backend, store):
    with Job(backend, store, 2, 2) as job:
        a, b = job.handler("a"), job.handler("b")
        assert a.get_run_id() == job.run_id and a.get_backend() == BACKENDS[backend][0]
        infos = [c.result() for c in (Call(a), Call(b))]
        assert sorted(i.rank for i in infos) == [0, 1] and {i.world_size for i in infos} == {2}
        boot = {(i.bootstrap_store_info.master_addr, i.bootstrap_store_info.master_port) for i in infos}
        assert len(boot) == 1 and next(iter(boot))[0] and next(iter(boot))[1] > 0
        infos[0].store.set("x", b"1")
        assert infos[1].store.get("x") == b"1"              # one store for the round's agents
        assert a.num_nodes_waiting() == 0 and not a.is_closed()


def test_min_nodes_then_the_last_call_forms_the_round(backend, store):
    with Job(backend, store, 2, 3) as job:
        calls = [Call(job.handler(n)) for n in "ab"]
        infos = [c.result() for c in calls]                 # no third node: the last call ends it
        assert {i.world_size for i in infos} == {2}


def test_too_few_nodes_time_out_at_the_join_timeout(backend, store):
    with Job(backend, store, 2, 2, join_timeout="2") as job:
        with pytest.raises(RendezvousTimeoutError):
            Call(job.handler("a")).result()


def test_a_late_node_is_admitted_in_the_next_round(backend, store):
    if backend == "c10d":
        pytest.skip("torch 2.13's c10d, sharing its TCPStore with the workers (the default), leaves "
                    "a late non-zero rank waiting for MASTER_ADDR, which nobody writes there")
    with Job(backend, store, 2, 3) as job:
        a, b = job.formed("a", "b")
        late = Call(job.handler("c"))
        until("the members see the late node", lambda: a.num_nodes_waiting() > 0 and b.num_nodes_waiting() > 0)
        again = [Call(a), Call(b)]                          # torchrun's agents restart the round
        infos = [c.result() for c in again] + [late.result()]
        assert sorted(i.rank for i in infos) == [0, 1, 2] and {i.world_size for i in infos} == {3}


def test_scale_down_a_member_gone_the_others_form_a_smaller_round(backend, store):
    # c10d's handler drops a node whose keep-alive is older than interval x attempts: 5 s, so
    # that a live node's heartbeat thread starved on a busy machine is not taken for dead
    # (2 s was, once, beside two CPU-bound processes: a and b did not form together)
    with Job(backend, store, 2, 3, keep_alive_interval="1", keep_alive_max_attempt="5") as job:
        hs = job.formed("a", "b", "c")
        # c's agent is gone (killed: torch's launcher skips shutdown on a signal); a and b's
        # workers failed with it, and they rendezvous again. c10d's handler keeps a keep-alive
        # thread, which a killed process would take with it: stop it
        if backend == "c10d":
            hs[2]._stop_heartbeats()
        infos = [c.result() for c in (Call(hs[0]), Call(hs[1]))]
        assert sorted(i.rank for i in infos) == [0, 1] and {i.world_size for i in infos} == {2}


# --- what hrw missed before (issue 36, items 1-4 and 6) --------------------------------
def test_closed_while_waiting_raises_at_once(backend, store):
    """api.py: next_rendezvous blocks until the rendezvous completes *or is closed*."""
    with Job(backend, store, 2, 2, join_timeout="600") as job:
        waiting = Call(job.handler("a"))
        time.sleep(0.5)                                     # (a is in its wait, or about to be)
        job.handler("b").set_closed()
        with pytest.raises(CLOSED):
            waiting.result(within=60)                       # not at the 600 s join timeout


def test_shutdown_closes_the_rendezvous_for_everyone(backend, store):
    with Job(backend, store, 1, 3) as job:
        a, b = job.formed("a", "b")
        a.shutdown()
        until("b sees it closed", b.is_closed)             # (c10d's state is cached for 1 s)
        with pytest.raises(RendezvousClosedError):
            Call(job.handler("late")).result()


def test_shutdown_can_be_called_multiple_times(backend, store):
    """torch: test_shutdown_can_be_called_multiple_times (no error, and the job stays closed)."""
    with Job(backend, store, 1, 2) as job:
        a, = job.formed("a")
        assert a.shutdown() is True
        assert a.shutdown() is True
        with pytest.raises(RendezvousClosedError):
            Call(job.handler("late")).result()


def static_job(store, **conf):
    return Job("static", store, 2, 2, **conf)


def test_static_closed_while_waiting_raises_at_once(store):
    """The static world's rank 0 waits for rank 1; the job is closed: it raises, not at the
    600 s join timeout."""
    with static_job(store, join_timeout="600") as job:
        waiting = Call(job.handler("a", rank="0"))
        time.sleep(0.5)                                     # (a is in its wait, or about to be)
        job.handler("b", rank="1").set_closed()
        with pytest.raises(CLOSED):
            waiting.result(within=60)


def test_static_shutdown_closes_the_rendezvous_for_everyone(store):
    with static_job(store) as job:
        hs = [job.handler(n, rank=r) for n, r in (("a", "0"), ("b", "1"))]
        for c in [Call(h) for h in hs]:
            c.result()
        a, b = hs
        a.shutdown()
        until("b sees it closed", b.is_closed)
        assert a.shutdown() is True                         # again: no error
        with pytest.raises(RendezvousClosedError):
            Call(job.handler("late", rank="1")).result()


def test_num_nodes_waiting_counts_every_late_node(backend, store):
    with Job(backend, store, 2, 4) as job:
        a, b = job.formed("a", "b")
        Call(job.handler("c"))
        until("c is counted", lambda: a.num_nodes_waiting() >= 1)
        Call(job.handler("d"))
        until("c and d are counted", lambda: a.num_nodes_waiting() == 2 and b.num_nodes_waiting() == 2)


def test_a_spare_does_not_time_out(backend, store):
    """torch: test_no_timeout_for_redundant_node. The round is full; the third node waits."""
    with Job(backend, store, 2, 2, join_timeout="2") as job:
        a, b = job.formed("a", "b")
        spare = Call(job.handler("spare"))
        assert not spare.done.wait(3 * 2 + 2), spare.error   # well past its join timeout
        a.set_closed()                                       # and it ends when the job does
        with pytest.raises(CLOSED):
            spare.result(within=60)


def test_a_member_dies_while_a_spare_waits_the_others_re_form_with_the_spare(backend, store):
    """c10d: the dead member's keep-alives lapse. hrw: the spare's probe goes unanswered by it.
    Both read the same two torch keys (hrw: a probe every 2 s, 4 s to answer)."""
    with Job(backend, store, 2, 2, keep_alive_interval="2", keep_alive_max_attempt="3") as job:
        a, b = job.formed("a", "b")
        spare = Call(job.handler("spare"))
        # a's process dies; what it ran in the background dies with it
        if backend == "c10d":
            a._stop_heartbeats()
        else:
            a._stop_watch()
        until("b sees a reason to re-form", lambda: b.num_nodes_waiting() > 0, within=180)
        infos = [Call(b).result(), spare.result()]
        assert sorted(i.rank for i in infos) == [0, 1] and {i.world_size for i in infos} == {2}


def test_torchs_own_keys_and_stray_quotes_are_accepted(backend, store):
    """As torch's c10d tests and launcher write --rdzv-conf (torch's parser keeps the quotes)."""
    with Job(backend, store, 1, 1) as job:
        h = job.handler("a", store_type="tcp", keep_alive_interval="5", keep_alive_max_attempt="3",
                        use_libuv="true", **{"'join_timeout": "60", "timeout": "30'"})
        assert Call(h).result().world_size == 1


@pytest.mark.parametrize("value", ["0", "-10"])
def test_a_bad_read_timeout_fails_at_creation_naming_the_key(backend, store, value):
    job = Job(backend, store, 1, 1)
    with pytest.raises(ValueError, match="read timeout|read_timeout"):
        job.handler("a", read_timeout=value)


def test_the_protocols_own_settings_and_errors(store):
    """The served protocol's settings model reads --rdzv-conf: its names, bounds and messages."""
    job = Job("sorted", store, 2, 2)
    with pytest.raises(ValueError, match="order='sideways'"):
        job.handler("a", order="sideways")
    with pytest.raises(ValueError, match="protocol='nope': not a registered protocol; served: .*hrw"):
        job.handler("a", protocol="nope")
    with pytest.raises(ValueError, match="protocol='quorum': .*torchft"):
        job.handler("a", protocol="quorum")
    with pytest.raises(ValueError, match="protocol='c10d': torch's own --rdzv-backend=c10d"):
        job.handler("a", protocol="c10d")
    hs = [job.handler(n, order="reverse") for n in ("n1", "n2")]
    infos = [c.result() for c in (Call(hs[0]), Call(hs[1]))]
    assert [i.rank for i in infos] == [1, 0]                 # the protocol's own rank order
    job.close()


def test_static_serves_fixed_ranks_from_node_rank(store):
    with Job("static", store, 2, 2) as job:
        with pytest.raises(ValueError, match="needs each node's rank"):
            job.handler("a")
        hs = [job.handler(n, rank=str(r)) for n, r in (("x", 1), ("y", 0))]
        infos = [c.result() for c in (Call(hs[0]), Call(hs[1]))]
        assert [i.rank for i in infos] == [1, 0] and {i.world_size for i in infos} == {2}
