"""Garbage written into a real TCPStore under a real rendezvous: the healthy nodes skip it,
say so once in the trace, and form their round."""
import multiprocessing as mp
import os
import signal
from datetime import timedelta

import pytest

pytest.importorskip("torch")

from real_backend.launcher import run_real  # noqa: E402
from real_backend.node import store_main  # noqa: E402

pytestmark = pytest.mark.real


def test_a_garbage_descriptor_in_a_real_store_is_a_hole():
    import torch.distributed as dist
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=store_main, args=(child, "127.0.0.1"), daemon=True)
    proc.start()
    try:
        assert parent.poll(60)
        port = parent.recv()
        c = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                          timeout=timedelta(seconds=10))
        c.compare_set("rdzv/job/round", "", "0")          # a hostile node takes slot 1 ...
        assert c.add("rdzv/job/r0/seq", 1) == 1
        c.set("rdzv/job/r0/n1", b"\x80not json at all")   # ... and writes garbage there
        sc = {"name": "real-garbage", "seed": 1, "duration": 16,
              "cluster": {"nodes": 2, "nproc_per_node": 1, "start_spread": 0},
              "store": {"host": None, "op_timeout": 4},
              "protocol": {"name": "hrw", "min_nodes": 2, "max_nodes": 3, "last_call_timeout": 1,
                           "confirm_timeout": 5},
              "agent": {"collective_timeout": 5, "monitor_interval": 1, "worker_start": 0},
              "shards": {"count": 0}}
        r = run_real(sc, store_port=port)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.join(5)
    ev = r.events
    assert r.rounds.nnodes.tolist() == [2], ev[["t", "node", "event"]].to_string()
    assert (ev.event == "bad_value").sum() == 1
    assert not (ev.event == "agent_exit").any()
