"""One real node: an OS process running the elastic agent over a real TCPStore.

Started by the launcher with the `spawn` method; writes its trace events as JSON lines.
SIGUSR1 means "your workers failed" (the launcher's worker_failure fault); SIGUSR2 starts or
heals a partition for the workers (their collectives stall while cut off); SIGTERM is a
preemption's notice.
"""
from __future__ import annotations

import json
import os
import signal
import sys


def main(spec: dict) -> None:
    from rdzv_sim.protocols.agent import elastic_agent
    from rdzv_sim.protocols.base import NodeInfo
    from rdzv_sim.protocols.registry import get, import_modules
    from rdzv_sim.scenario.load import load
    from rdzv_sim.protocols.configure import protocol_for
    from rdzv_sim.reasons import Reason

    from .runtime import RealRuntime
    from .standby import wait_at_gate
    from .workers import GlooWorkers

    import_modules(spec.get("plugins", ()))         # protocols registered in the launcher
    sc = load(spec["scenario"])

    def emit(t, op):
        out.write(json.dumps({"t": t, "node": spec["name"], "event": op.event, "round": op.round,
                              "rank": op.rank, "world_size": op.world_size, "detail": op.detail}) + "\n")

    connect = None
    if spec.get("etcd"):                  # a replicated store: the local etcd cluster's members
        from .etcd.store import EtcdStore
        connect = lambda: EtcdStore(spec["etcd"], timeout=sc.store.op_timeout)  # noqa: E731
    import torch.distributed  # noqa: F401 - torch's import (seconds) is done before the gate
    from .torch_baselines import run_torch_agent
    t0 = wait_at_gate(spec["gate"]) if "gate" in spec else spec.get("t0")     # standby.py
    out = open(spec["events_path"], "a", buffering=1)
    rt = RealRuntime(spec["host"], spec["port"], emit, op_timeout=sc.store.op_timeout, t0=t0,
                     seed=spec["seed"], workers=GlooWorkers(sc.protocol.run_id, sc.agent.collective_timeout),
                     connect=connect)
    signal.signal(signal.SIGUSR1, lambda *_: rt.signals.signal(Reason.WORKERS_FAILED))
    signal.signal(signal.SIGTERM, lambda *_: terminated(rt, out))
    signal.signal(signal.SIGUSR2, lambda *_: rt.workers.toggle_frozen())   # partition / heal
    if get(sc.protocol.name).caps.torch_counterpart or spec.get("static_port"):   # torch's own handler
        why = run_torch_agent(spec, sc, rt)
    else:
        info = NodeInfo(spec["name"], spec["addr"], 1, spec["index"], pid=os.getpid())
        why = rt.drive(elastic_agent(info, protocol_for(sc), sc.agent))
    out.close()
    os._exit(0)                    # skip interpreter teardown: abandoned store threads may block


def terminated(rt, out) -> None:
    """SIGTERM (a preemption's notice): in a round, the agent stops its workers, leaves and
    exits (the protocol may use the notice); otherwise it exits at once, as torchrun's does."""
    from rdzv_sim.reasons import Reason
    if rt.in_round:
        rt.signals.signal(Reason.TERMINATED)
        return
    from rdzv_sim.events import Event
    from rdzv_sim.ops import Emit
    rt.emit(rt.now(), Emit(Event.AGENT_EXIT, detail={"reason": Reason.TERMINATED}))
    out.close()
    os._exit(0)


def store_main(port_pipe, host: str) -> None:
    """Host a TCPStore server (the launcher kills or pauses this process for store faults)."""
    from datetime import timedelta
    import time
    import torch.distributed as dist
    server = dist.TCPStore(host, 0, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=300), use_libuv=True)
    server.set("epoch", str(time.time()).encode())      # tells a restarted store from the old one
    port_pipe.send(server.port)
    port_pipe.close()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
