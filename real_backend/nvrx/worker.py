"""One rank of a real in-process restart run (`run.py` starts one process per rank).

    python -m real_backend.nvrx.worker OUT FAULT FAIL_RANK FAIL_STEP STEPS

The rank trains a tiny all-reduce loop on gloo inside NVRx's `inprocess.Wrapper`; at step
FAIL_STEP of the first iteration the rank FAIL_RANK fails as FAULT says: `raise` (its workers
raise), `kill` (its process is killed: its connections reset, its monitor process reports it),
`vanish` (it and its monitor process stop: the host is gone without a word). Each rank writes
what happened, with wall-clock times, to OUT/rank<initial rank>.jsonl. Wrapper timeouts come
from the environment (SOFT_TIMEOUT, HARD_TIMEOUT, HEARTBEAT_TIMEOUT, seconds) and the gloo
collective timeout from PG_TIMEOUT.
"""

import datetime
import json
import os
import signal
import sys
import time
from typing import Optional
from rdzv_sim.events import Event

FAULTS = ("raise", "kill", "vanish")
# (no `from __future__ import annotations` here: NVRx reads the wrapped function's annotations
# as classes to pass it its CallWrapper)


def main(argv: list[str]) -> None:
    import torch
    import torch.distributed as dist
    import nvidia_resiliency_ext.inprocess as inprocess

    out, fault, fail_rank, fail_step, steps = argv[0], argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    first = int(os.environ["RANK"])
    log = open(os.path.join(out, f"rank{first}.jsonl"), "a")

    def record(**kw) -> None:
        log.write(json.dumps({"t": time.time(), "initial_rank": first, **kw}) + "\n")
        log.flush()

    class GlooAbort(inprocess.abort.Abort):
        """NVRx's AbortTorchDistributed asks for the CUDA backend; on gloo a process group is
        destroyed (a collective already blocked in gloo is not interrupted: it times out)."""
        def __call__(self, state):
            if dist.is_initialized():
                dist.destroy_process_group()
            record(event="aborted")
            return state

    timeouts = {k: datetime.timedelta(seconds=float(os.environ[k.upper()]))
                for k in ("soft_timeout", "hard_timeout", "heartbeat_timeout") if k.upper() in os.environ}
    pg_timeout = datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "30")))
    base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["BASE_PORT"]), None, first == 0,
                         timeout=datetime.timedelta(seconds=300), wait_for_workers=False)

    @inprocess.Wrapper(abort=GlooAbort(), **timeouts)
    def train(call_wrapper: Optional[inprocess.CallWrapper] = None):
        it = call_wrapper.iteration
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        record(event="enter", iteration=it, rank=rank, world=world)
        dist.init_process_group("gloo", store=dist.PrefixStore(f"it{it}", base), rank=rank,
                                world_size=world, timeout=pg_timeout)
        record(event=Event.PG_READY, iteration=it)
        x = torch.ones(1)
        for step in range(steps):
            dist.all_reduce(x)
            call_wrapper.ping()
            if it == 0 and step == fail_step and first == fail_rank:
                record(event="fault", kind=fault)
                if fault == "raise":
                    raise RuntimeError("an injected worker failure")
                os.killpg(os.getpgid(0), signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
            time.sleep(0.05)
        record(event="done", iteration=it)
        dist.destroy_process_group()

    train()
    record(event="exit")


if __name__ == "__main__":
    main(sys.argv[1:])
