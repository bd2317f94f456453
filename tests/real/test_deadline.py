"""The real runtime's own deadline, where TCPStore's would not fire: a paused (SIGSTOP) store
accepts the request and never answers, and torch's client waits far past its own timeout."""
import multiprocessing as mp
import os
import signal
import time

import pytest

pytest.importorskip("torch")

from rdzv_sim import ops as O  # noqa: E402
from real_backend.node import store_main  # noqa: E402
from real_backend.process_tree import stop  # noqa: E402
from real_backend.runtime import RealRuntime  # noqa: E402

pytestmark = pytest.mark.real


@pytest.fixture
def paused_store():
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=store_main, args=(child, "127.0.0.1"), daemon=True)
    proc.start()
    assert parent.poll(60), "the store did not start"
    port = parent.recv()
    yield proc, port
    os.kill(proc.pid, signal.SIGCONT)
    proc.kill()
    proc.join(5)


def test_a_call_to_a_paused_store_raises_at_the_runtimes_deadline(paused_store):
    proc, port = paused_store
    rt = RealRuntime("127.0.0.1", port, lambda *a: None, op_timeout=5.0)
    rt.prepare(spares=0)
    assert rt.store_op(O.Add("k", 1)) == 1
    # every thread stopped: kill() alone returns before the store's server thread stops,
    # and on a busy machine that thread can still answer (it did, 2 runs in 12)
    assert stop(proc.pid)
    t0 = time.monotonic()
    with pytest.raises(O.StoreTimeout, match="hung past its 5 s deadline"):
        rt.store_op(O.Add("k", 1))
    took = time.monotonic() - t0
    # the backstop is op_timeout + 1 s; doubling it (12 s) or losing it (a hang) fails here
    assert 5.0 <= took < 10.0, took
    os.kill(proc.pid, signal.SIGCONT)
    assert rt.store_op(O.Add("k", 0)) >= 1            # a fresh connection replaces the hung one
    rt.close()


def test_a_store_nobody_listens_on_is_lost_not_slow():
    """torch's client retries a refused connection until its timeout and then says it timed
    out; the runtime asks the port itself, so a dead store is StoreError (the agent exits:
    store_lost) and not a timeout it would retry for minutes."""
    from real_backend.ports import free_port
    port = free_port("127.0.0.1")                      # nobody listens there
    rt = RealRuntime("127.0.0.1", port, lambda *a: None, op_timeout=1.0)
    with pytest.raises(O.StoreError, match="refuses connections|cannot connect"):
        rt.store_op(O.Add("k", 1))
    rt.close()
