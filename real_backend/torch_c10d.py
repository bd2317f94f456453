"""torch's own c10d rendezvous (DynamicRendezvousHandler) in a real node process: the baseline
the c10d model is compared with. It writes the same trace events as our agent, so validation,
reports and checkers treat it like any other run.

The loop follows torchrun's `_invoke_run`: rendezvous, start workers (a gloo group here), then
every monitor interval look at the workers (a failed all-reduce = failed) and at
`num_nodes_waiting()`; restart on either, using up a restart only for failures.
"""
from __future__ import annotations

import os
import time
from datetime import timedelta

from rdzv_sim.ops import Emit, StartWorkers
from rdzv_sim.protocols.base import digest


def run_torch_agent(spec: dict, sc, rt) -> str:
    os.environ.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous import api as rdzv_api
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import (
        DynamicRendezvousHandler, RendezvousTimeout)

    p, a = sc.protocol, sc.agent

    def emit(event, **kw):
        rt.emit(rt.now(), Emit(event, **kw))

    def exit_(reason, why=""):
        if why:
            emit(reason, detail={"reason": why[:300]})
        emit("agent_exit", detail={"reason": reason})
        return reason

    try:
        client = dist.TCPStore(spec["host"], spec["port"], is_master=False, wait_for_workers=False,
                               timeout=timedelta(seconds=sc.store.op_timeout), use_libuv=True)
        backend = C10dRendezvousBackend(client, p.run_id)
        handler = DynamicRendezvousHandler.from_backend(
            run_id=p.run_id, store=client, backend=backend, min_nodes=sc.min_nodes,
            max_nodes=sc.max_nodes, local_addr=spec["addr"],
            timeout=RendezvousTimeout(join=timedelta(seconds=p.join_timeout),
                                      last_call=timedelta(seconds=max(p.last_call_timeout, 1e-3)),
                                      heartbeat=timedelta(seconds=p.keep_alive_interval)),
            keep_alive_interval=p.keep_alive_interval,
            keep_alive_max_attempt=p.keep_alive_max_attempt)
    except Exception as e:  # noqa: BLE001
        return exit_("store_lost", repr(e))
    restarts = 0
    while True:
        t_join = rt.now()
        emit("rendezvous_start", detail={"restarts": restarts})
        try:
            info = handler.next_rendezvous()
        except rdzv_api.RendezvousClosedError as e:
            return exit_("rendezvous_closed", repr(e))
        except rdzv_api.RendezvousTimeoutError as e:
            return exit_("rendezvous_timeout", repr(e))
        except Exception as e:  # noqa: BLE001 - connection errors, a dead store
            return exit_("store_lost", repr(e))
        state = handler._state_holder.state          # private, read for the trace only
        members = sorted(state.participants, key=lambda d: state.participants[d])
        rnd, rank, world = state.round, info.rank, info.world_size
        emit("confirmed", round=rnd, rank=rank)
        emit("rank_assigned", round=rnd, rank=rank, world_size=world,
             detail={"nnodes": world, "first_rank": rank, "master": members[0].addr,
                     "digest": digest([repr(d) for d in members]), "latency": rt.now() - t_join})
        rt.workers.start(StartWorkers(rnd, rank, world, world, members[0].addr), rt)
        emit("workers_started", round=rnd, rank=rank, world_size=world)
        reason = None
        while reason is None:
            time.sleep(a.monitor_interval)
            if rt.signals.take("workers_failed") or rt.signals.take("peer_failed"):
                reason = "peer_failed"
                break
            try:
                if handler.num_nodes_waiting() > 0:
                    reason = "nodes_waiting"
            except Exception as e:  # noqa: BLE001
                rt.workers.stop()
                return exit_("store_lost", repr(e))
        rt.workers.stop()
        emit("round_left", round=rnd, rank=rank, detail={"reason": reason})
        if reason == "peer_failed":
            restarts += 1
            if restarts > a.max_restarts:
                handler.shutdown()
                return exit_("max_restarts")
