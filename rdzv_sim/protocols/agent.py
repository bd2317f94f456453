"""The elastic agent loop, modelled on torchrun's `_invoke_run`, as a sans-IO generator.

rendezvous -> start workers -> wait (no polling) for: my workers failed, a peer failed
(my collective timed out), the round ended, nodes waiting -> stop workers -> again.
Waiting nodes restart the round at the agent's next monitor tick without using up a
restart; a failure of its own workers or of a collective does use one, as in torchrun.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ops import (Emit, FirstOf, Local, Now, Sleep, StartWorkers, StopWorkers, StoreError,
                   StoreTimeout)
from .base import NodeInfo, Protocol, RendezvousClosed, RendezvousFailed, RendezvousTimeout

FAILURES = ("workers_failed", "peer_failed")


@dataclass(frozen=True)
class AgentConfig:
    max_restarts: int = 3
    monitor_interval: float = 5.0
    retry_backoff: float = 1.0       # after a store timeout, before trying the rendezvous again
    max_rendezvous_attempts: int = 20


def _exit(reason: str, event: str | None = None, why: str = ""):
    """Say why the agent stops (an event, then agent_exit); returns the reason."""
    if event:
        yield Emit(event, detail={"reason": why})
    yield Emit("agent_exit", detail={"reason": reason})
    return reason


def elastic_agent(node: NodeInfo, protocol: Protocol, cfg: AgentConfig):
    """Run the node until it gives up; returns why ("rendezvous_timeout", "store_lost", ...)."""
    restarts = attempts = 0
    while True:
        t_join = yield Now()
        yield Emit("rendezvous_start", detail={"restarts": restarts})
        try:
            result = yield from protocol.rendezvous(node)
        except RendezvousFailed as e:
            attempts += 1
            yield Emit("rendezvous_failed", detail={"reason": str(e)})
            if attempts >= cfg.max_rendezvous_attempts:
                return (yield from _exit("too_many_failed_rounds"))
            continue
        except RendezvousClosed as e:
            return (yield from _exit("rendezvous_closed", "rendezvous_closed", str(e)))
        except RendezvousTimeout as e:
            return (yield from _exit("rendezvous_timeout", "rendezvous_timeout", str(e)))
        except StoreTimeout as e:
            attempts += 1
            yield Emit("store_timeout", detail={"reason": str(e)})
            if attempts >= cfg.max_rendezvous_attempts:
                return (yield from _exit("store_timeout"))
            yield Sleep(cfg.retry_backoff)
            continue
        except StoreError as e:
            return (yield from _exit("store_lost", "store_lost", str(e)))
        attempts = 0
        t_rank = yield Now()
        yield Emit("rank_assigned", round=result.round, rank=result.rank,
                   world_size=result.world_size,
                   detail={"nnodes": result.nnodes, "first_rank": result.first_rank,
                           "master": result.master, "digest": result.digest,
                           "latency": t_rank - t_join})
        yield StartWorkers(result.round, result.rank, result.world_size, result.nnodes, result.master)
        t_start = yield Now()
        yield Emit("workers_started", round=result.round, rank=result.rank,
                   world_size=result.world_size)
        try:
            yield from protocol.clean_up(result)
        except (StoreTimeout, StoreError):
            pass                                # best effort: the next round's rank 0 tries again
        state = None
        while True:                             # runs until a reason to leave the round
            watch = protocol.watch(result, state, node)
            reasons = [*FAILURES, *(r for _, r in watch)]
            idx, value = yield FirstOf(*(Local(r) for r in FAILURES), *(op for op, _ in watch))
            reason = reasons[idx]
            if isinstance(value, StoreTimeout):   # a watch hung (store paused, cut off): watch again
                yield Sleep(cfg.retry_backoff)
                continue
            if ":" not in reason or isinstance(value, BaseException):
                break
            try:
                verdict, arg = yield from protocol.answer(result, reason, node)
            except StoreTimeout:                # cut off from the store: keep training
                continue
            except StoreError as e:
                value = e
                break
            if verdict == "leave":
                reason = arg
                break
            state = arg
        if isinstance(value, StoreError):
            yield StopWorkers("store_lost")
            yield Emit("store_lost", round=result.round, detail={"reason": str(value)})
            return (yield from _exit("store_lost"))
        if reason == "nodes_waiting":           # restart at the next monitor tick (a safe point)
            now = yield Now()
            yield Sleep(cfg.monitor_interval - ((now - t_start) % cfg.monitor_interval))
        yield StopWorkers(reason)
        yield Emit("round_left", round=result.round, rank=result.rank, detail={"reason": reason})
        if reason in FAILURES:
            restarts += 1
        why = "agent_failed" if restarts > cfg.max_restarts else reason
        for attempt in range(cfg.max_rendezvous_attempts):      # ending a round is idempotent
            try:
                if why != "round_ended":
                    yield from protocol.end_round(result, why, node)
                break
            except StoreError as e:
                return (yield from _exit("store_lost", "store_lost", str(e)))
            except StoreTimeout as e:
                yield Emit("store_timeout", detail={"reason": str(e)})
                yield Sleep(cfg.retry_backoff)
        if why == "agent_failed":
            return (yield from _exit("max_restarts"))
