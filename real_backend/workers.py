"""Workers of a completed round, for real: a gloo process group of the round's members, one
all-reduce to check it, then a training loop of all-reduces whose failure is how a node learns
that a peer is gone (as torchrun's workers do). One rank per node (GPUs: NCCL, issue 5)."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

from rdzv_sim.events import Event
from rdzv_sim.ops import Emit
from rdzv_sim.reasons import Reason


class GlooWorkers:
    """One rank per node; `backend="nccl"` puts rank r on GPU r % device_count."""

    def __init__(self, run_id: str, collective_timeout: float, step: float = 0.5,
                 backend: str = "gloo"):
        self.run_id, self.timeout, self.step, self.backend = run_id, collective_timeout, step, backend
        self.device = "cpu"
        self._stop = threading.Event()
        self._thread = None
        self.pg = None
        self.frozen = threading.Event()      # set while the node is cut off (a partition)

    def toggle_frozen(self) -> None:
        """SIGUSR2 from the launcher: a partition starts or heals. A cut node's collectives
        stall (its peers' all-reduce times out); after the heal they run, and fail if the
        peers have left."""
        (self.frozen.clear if self.frozen.is_set() else self.frozen.set)()

    def start(self, op, rt) -> None:
        import torch
        import torch.distributed as dist
        self._stop = threading.Event()
        t0 = time.monotonic()
        try:
            base = rt._call(lambda s: s.clone())
            if not isinstance(base, dist.Store):          # an etcd cluster's connection
                from .etcd.torch_store import TorchEtcdStore
                base = TorchEtcdStore(base)
            store = dist.PrefixStore(f"pg/{self.run_id}/r{op.round}/", base)
            if self.backend == "nccl":
                self.device = f"cuda:{op.rank % torch.cuda.device_count()}"
                torch.cuda.set_device(self.device)
                opts = dist.ProcessGroupNCCL.Options()
                self.pg = dist.ProcessGroupNCCL(store, op.rank, op.members, opts)
            else:
                self.pg = dist.ProcessGroupGloo(store, op.rank, op.members, timedelta(seconds=self.timeout))
            x = torch.ones(1, device=self.device)
            t1 = time.monotonic()
            self.pg.allreduce([x]).wait()
            if self.backend == "nccl":
                torch.cuda.synchronize()
            done = time.monotonic()
            rt.emit(rt.now(), Emit(Event.PG_READY, round=op.round, rank=op.rank, world_size=op.members,
                                   detail={"backend": self.backend, "init_s": t1 - t0,
                                           "allreduce_s": done - t1,
                                           "allreduce_ok": float(x.item()) == op.members}))
        except Exception as e:  # noqa: BLE001 - a member never came: the init fails
            rt.emit(rt.now(), Emit(Event.PG_FAILED, round=op.round, detail={"error": str(e)[:200]}))
            rt.signals.signal(Reason.PEER_FAILED)
            return
        self._thread = threading.Thread(target=self._train, args=(rt, self.pg, self._stop), daemon=True)
        self._thread.start()

    def _train(self, rt, pg, stop: threading.Event) -> None:
        import torch
        while not stop.wait(self.step):
            if self.frozen.is_set():
                continue
            try:
                pg.allreduce([torch.ones(1, device=self.device)]).wait()
            except Exception:  # noqa: BLE001 - a peer died or left
                if not stop.is_set():
                    rt.signals.signal(Reason.PEER_FAILED)
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=0.1)      # a hung all-reduce is abandoned with its group
        self._thread, self.pg = None, None
