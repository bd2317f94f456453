"""The TCP fault proxy with a real TCPStore: latency, a silent cut that the real runtime turns
into StoreTimeout within its own deadline, a heal that delivers what was held, a reset."""
import time
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from rdzv_sim import ops as O  # noqa: E402
from real_backend.proxy import FaultProxy  # noqa: E402
from real_backend.runtime import RealRuntime  # noqa: E402

pytestmark = pytest.mark.real


@pytest.fixture
def store_and_proxy():
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=10), use_libuv=True)
    proxy = FaultProxy("127.0.0.1", server.port)
    yield server, proxy
    proxy.close()


def test_delay_cut_heal_reset(store_and_proxy):
    server, proxy = store_and_proxy
    port = proxy.add("node0")
    rt = RealRuntime("127.0.0.1", port, lambda *a: None, op_timeout=1.0)
    assert rt.execute(O.Add("k", 2)) == 2                   # forwards to the store
    proxy.set_delay("node0", 0.1)
    t = time.monotonic()
    assert rt.execute(O.Add("k", 1)) == 3
    assert time.monotonic() - t >= 0.2                       # 0.1 s each way, at least
    proxy.set_delay("node0", 0.0)

    proxy.cut("node0")                                       # a silent partition: calls hang
    with pytest.raises(O.StoreTimeout):
        rt.execute(O.Add("k", 1))                            # ... until our own deadline
    server.set("other", b"x")                                # the store itself is fine
    proxy.heal("node0")
    assert rt.execute(O.Get("other")) == "x"                 # a fresh connection works again
    # the held add was delivered on heal, as TCP retransmission would: exactly once
    assert int(server.add("k", 0)) == 4

    proxy.reset("node0")                                     # connections dropped: reconnect
    try:
        rt.execute(O.Add("k", 1))
    except O.StoreError:
        pass                                                 # the dropped connection reports it
    assert rt.execute(O.Add("k", 1)) >= 5
    rt.close()


def test_a_lossy_link_resends_late_and_resets_at_its_rate(store_and_proxy):
    """Every chunk lost once or more (rate 0.9): each call waits out at least one RTO per
    direction, and still arrives exactly once; reset=1 closes the next call's connection."""
    server, proxy = store_and_proxy
    port = proxy.add("node0")
    rt = RealRuntime("127.0.0.1", port, lambda *a: None, op_timeout=5.0)
    assert rt.execute(O.Add("k", 1)) == 1
    proxy.set_loss("node0", 0.9, rto=0.02)
    t = time.monotonic()
    for _ in range(5):
        rt.execute(O.Add("k", 1))
    took = time.monotonic() - t
    assert int(server.add("k", 0)) == 6                      # resent, not duplicated
    assert took >= 5 * 2 * 0.02 * 0.5                        # well above a clean link's
    proxy.set_loss("node0", 0.0, reset=1.0)
    with pytest.raises((O.StoreError, O.StoreTimeout)):
        rt.execute(O.Add("k", 1))
    proxy.set_loss("node0", 0.0)
    assert rt.execute(O.Add("k", 0)) >= 6                    # clean again: reconnects
    rt.close()
