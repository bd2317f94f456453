"""The simulator's c10d blob has torch's size: torch's own pickle + base64 of its state."""
import base64
import datetime
import pickle

import pytest

from rdzv_sim.protocols.c10d.state import blob_size

dr = pytest.importorskip("torch.distributed.elastic.rendezvous.dynamic_rendezvous")


def torch_size(participants: int, waiting: int, addr_len: int) -> int:
    s = dr._RendezvousState()
    now = datetime.datetime.now(datetime.timezone.utc)
    for i in range(participants + waiting):
        d = dr._NodeDesc(f"h{i:0{addr_len - 1}d}", 100000 + i, 0)
        (s.participants.__setitem__(d, i) if i < participants else s.wait_list.add(d))
        s.last_heartbeats[d] = now
    return len(base64.b64encode(pickle.dumps(s)))


@pytest.mark.parametrize("p,w,a,tol", [(100, 0, 8, 0.06), (1000, 0, 23, 0.02), (2048, 0, 12, 0.02),
                                       (0, 200, 16, 0.04), (500, 500, 10, 0.02), (10000, 0, 8, 0.02)])
def test_blob_size_follows_torchs_encoding(p, w, a, tol):
    real = torch_size(p, w, a)
    assert abs(blob_size(p, w, a) / real - 1) < tol, (blob_size(p, w, a), real)
