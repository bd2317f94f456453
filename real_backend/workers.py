"""Workers of a completed round, for real: a gloo process group of the round's members, one
all-reduce to check it, then a training loop of all-reduces whose failure is how a node learns
that a peer is gone (as torchrun's workers do). One rank per node (GPUs: NCCL, issue 5)."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

from rdzv_sim.ops import Emit


class GlooWorkers:
    def __init__(self, run_id: str, collective_timeout: float, step: float = 0.5):
        self.run_id, self.timeout, self.step = run_id, collective_timeout, step
        self._stop = threading.Event()
        self._thread = None
        self.pg = None

    def start(self, op, rt) -> None:
        import torch
        import torch.distributed as dist
        self._stop = threading.Event()
        t0 = time.monotonic()
        try:
            store = dist.PrefixStore(f"pg/{self.run_id}/r{op.round}/", rt._call(lambda s: s.clone()))
            self.pg = dist.ProcessGroupGloo(store, op.rank, op.members, timedelta(seconds=self.timeout))
            x = torch.ones(1)
            self.pg.allreduce([x]).wait()
            init_s = time.monotonic() - t0
            rt.emit(rt.now(), Emit("pg_ready", round=op.round, rank=op.rank, world_size=op.members,
                                   detail={"backend": "gloo", "init_s": init_s,
                                           "allreduce_ok": float(x.item()) == op.members}))
        except Exception as e:  # noqa: BLE001 - a member never came: the init fails
            rt.emit(rt.now(), Emit("pg_failed", round=op.round, detail={"error": str(e)[:200]}))
            rt.signals.signal("peer_failed")
            return
        self._thread = threading.Thread(target=self._train, args=(rt, self.pg, self._stop), daemon=True)
        self._thread.start()

    def _train(self, rt, pg, stop: threading.Event) -> None:
        import torch
        while not stop.wait(self.step):
            try:
                pg.allreduce([torch.ones(1)]).wait()
            except Exception:  # noqa: BLE001 - a peer died or left
                if not stop.is_set():
                    rt.signals.signal("peer_failed")
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=0.1)      # a hung all-reduce is abandoned with its group
        self._thread, self.pg = None, None
