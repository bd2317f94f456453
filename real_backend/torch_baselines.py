"""torch's own rendezvous handlers in a real node process: the baselines the models are compared
with. `c10d` is torch's DynamicRendezvousHandler over the harness's store; `static` (with
`run_real(..., torch_static=True)`) is torch's StaticTCPRendezvous, whose store listens on
rank 0's host as torchrun's static backend does. Both write the same trace events as our agent,
so validation, reports and checkers treat them like any other run.

The loop is torchrun's `_invoke_run`, the thing being compared (it polls where rdzv_sim's agent
waits): rendezvous, start workers (a gloo group here), then every monitor interval look at the
workers (a failed all-reduce = failed) and at `num_nodes_waiting()`; restart on either. Which
reasons use up a restart, and when an agent is out of them, are the agent's own decisions
(`rdzv_sim.protocols.agent`).
"""
from __future__ import annotations

import os
import time
from datetime import timedelta

from rdzv_sim.ops import Emit, StartWorkers
from rdzv_sim.protocols.agent import out_of_restarts, uses_a_restart
from rdzv_sim.protocols.base import digest
from rdzv_sim.events import Event
from rdzv_sim.reasons import ExitReason, Reason


def c10d_handler(spec: dict, sc):
    """torch's DynamicRendezvousHandler on a client of the harness's store; describe() reads
    its state (private, for the trace only) for the round and the members in rank order."""
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import (
        DynamicRendezvousHandler, RendezvousTimeout)
    p = sc.protocol
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

    def describe(info):
        state = handler._state_holder.state
        members = sorted(state.participants, key=lambda d: state.participants[d])
        return state.round, members[0].addr, [repr(d) for d in members]
    return handler, describe


def static_handler(spec: dict, sc):
    """torch's StaticTCPRendezvous: node i is rank i of a fixed world; rank 0 hosts its store."""
    from torch.distributed.elastic.rendezvous.static_tcp_rendezvous import StaticTCPRendezvous
    n = sc.cluster.nodes
    handler = StaticTCPRendezvous(spec["static_addr"], spec["static_port"], spec["index"], n,
                                  sc.protocol.run_id, int(sc.protocol.join_timeout))

    def describe(info):
        return 0, spec["static_addr"], [f"node{i}" for i in range(n)]
    return handler, describe


def run_torch_agent(spec: dict, sc, rt) -> str:
    os.environ.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")
    from torch.distributed.elastic.rendezvous import api as rdzv_api

    a = sc.agent

    def emit(event, **kw):
        rt.emit(rt.now(), Emit(event, **kw))

    def exit_(reason: ExitReason, why=""):
        if why:                                  # the event of the same name says why first
            emit(Event(reason.value), detail={"reason": why[:300]})
        emit(Event.AGENT_EXIT, detail={"reason": reason})
        return reason

    try:
        make = static_handler if spec.get("static_port") else c10d_handler
        handler, describe = make(spec, sc)
    except Exception as e:  # noqa: BLE001
        return exit_(ExitReason.STORE_LOST, repr(e))
    restarts = 0
    while True:
        t_join = rt.now()
        emit(Event.RENDEZVOUS_START, detail={"restarts": restarts})
        try:
            info = handler.next_rendezvous()
        except rdzv_api.RendezvousClosedError as e:
            return exit_(ExitReason.RENDEZVOUS_CLOSED, repr(e))
        except rdzv_api.RendezvousTimeoutError as e:
            return exit_(ExitReason.RENDEZVOUS_TIMEOUT, repr(e))
        except Exception as e:  # noqa: BLE001 - connection errors, a dead store
            return exit_(ExitReason.STORE_LOST, repr(e))
        rnd, master, members = describe(info)
        rank, world = info.rank, info.world_size
        emit(Event.CONFIRMED, round=rnd, rank=rank)
        emit(Event.RANK_ASSIGNED, round=rnd, rank=rank, world_size=world,
             detail={"nnodes": world, "first_rank": rank, "master": master,
                     "digest": digest(members), "latency": rt.now() - t_join})
        rt.workers.start(StartWorkers(rnd, rank, world, world, master), rt)
        emit(Event.WORKERS_STARTED, round=rnd, rank=rank, world_size=world)
        reason = None
        while reason is None:
            time.sleep(a.monitor_interval)
            if rt.signals.take(Reason.WORKERS_FAILED) or rt.signals.take(Reason.PEER_FAILED):
                reason = Reason.PEER_FAILED
                break
            try:
                if handler.num_nodes_waiting() > 0:
                    reason = Reason.NODES_WAITING
            except Exception as e:  # noqa: BLE001
                rt.workers.stop()
                return exit_(ExitReason.STORE_LOST, repr(e))
        rt.workers.stop()
        emit(Event.ROUND_LEFT, round=rnd, rank=rank, detail={"reason": reason})
        if uses_a_restart(reason):
            restarts += 1
            if out_of_restarts(restarts, sc.agent):
                handler.shutdown()
                return exit_(ExitReason.MAX_RESTARTS)
