"""The elastic agent loop, modelled on torchrun's `_invoke_run`, as a sans-IO generator.

rendezvous -> start workers -> wait (no polling) for: my workers failed, a peer failed
(my collective timed out), the round ended, nodes waiting -> stop workers -> again.
Waiting nodes restart the round at the agent's next monitor tick without using up a
restart; a failure of its own workers or of a collective does use one, as in torchrun.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt

from ..events import Event
from ..ops import Emit, FirstOf, InPlace, Local, Now, Sleep, StartWorkers, StopWorkers, StoreError, StoreTimeout
from ..reasons import STORE_LOSS, ExitReason, Reason
from .base import (NodeInfo, Protocol, RendezvousClosed, RendezvousFailed, RendezvousTimeout,
                   RoundResult)
from .recovery import InProcess, Mode, Shrink, reform_at

FAILURES = (Reason.WORKERS_FAILED, Reason.PEER_FAILED)
TERMINATED = Reason.TERMINATED       # SIGTERM to the agent (a preemption's notice)
AGENT_FAILED = Reason.AGENT_FAILED   # the agent exits with an error (no signal)


class AgentSettings(BaseModel):
    """The elastic agent on every host (torchrun's): restarts, monitoring, timeouts."""
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    # failures an agent restarts its workers after before it gives up (torchrun's --max-restarts)
    max_restarts: Annotated[int, Field(ge=0)] = 3
    # seconds between the agent's checks of its workers (torchrun's monitor_interval)
    monitor_interval: PositiveFloat = 5.0
    # seconds before a collective with a vanished peer fails (NCCL/gloo timeout)
    collective_timeout: PositiveFloat = 60.0
    # when a peer's *process* dies (crash = SIGKILL) its host's kernel resets the connections and
    # the survivors' collectives fail within about this long (gloo: ~0.3 s); None: they hang until
    # the collective timeout, as when a whole host vanishes (rack failures always do)
    peer_crash_detection: PositiveFloat | None = None
    # seconds from a rank known to the workers training (process start, imports, model load)
    worker_start: NonNegativeFloat = 5.0
    # more seconds of worker start per member (process group init at scale)
    worker_start_per_node: NonNegativeFloat = 0.0
    retry_backoff: NonNegativeFloat = 1.0       # after a store timeout, before trying the rendezvous again
    max_rendezvous_attempts: PositiveInt = 20   # failed or timed-out rounds in a row before exit
    process_start: NonNegativeFloat = 0.0       # agent process start-up (imports) before it joins
    # how a failure of a running round is recovered (protocols/recovery/, docs/recovery.md):
    # in_job (a rendezvous), in_process (NVRx's in-process restart) or shrink (shrink_group)
    recovery: Mode = Mode.IN_JOB
    in_process: InProcess = InProcess()         # NVRx's in-process restart, part by part
    shrink: Shrink = Shrink()                   # torch's shrink_group
    # in_process and shrink: hosts that wait re-form the world this long after it started
    # (a planned re-form); None: at the next failure the mode cannot absorb
    reform_every: PositiveFloat | None = None


def uses_a_restart(reason: str) -> bool:
    """Leaving a round for `reason` counts against max_restarts (as in torchrun: failures do,
    nodes waiting and a round ended by others do not)."""
    return reason in FAILURES


def out_of_restarts(restarts: int, cfg: AgentSettings) -> bool:
    return restarts > cfg.max_restarts


@dataclass(frozen=True)
class Exit:
    """Why an agent gives up joining: `reason` for agent_exit, and an event to say it first."""
    reason: ExitReason
    event: Event | None = None
    why: str = ""
    last: RoundResult | None = None     # the last round this node was assigned in, if any


def _exit(reason: ExitReason, event: Event | None = None, why: str = ""):
    """Say why the agent stops (an event, then agent_exit); returns the reason."""
    if event:
        yield Emit(event, detail={"reason": why})
    yield Emit(Event.AGENT_EXIT, detail={"reason": reason})
    return reason


def _shut_down(protocol: Protocol, node: NodeInfo, reason: ExitReason, event: Event | None = None,
               why: str = ""):
    """Exit for anything but a signal: say why, shut the protocol down (best effort: torch's
    handler logs a store error there and exits anyway), exit."""
    if event:
        yield Emit(event, detail={"reason": why})
    try:
        yield from protocol.shutdown(node)
    except (StoreTimeout, StoreError, RendezvousClosed, RendezvousTimeout):
        pass
    return (yield from _exit(reason))


def rendezvous_with_retry(node: NodeInfo, protocol: Protocol, cfg: AgentSettings, restarts: int = 0,
                          last: RoundResult | None = None, stores=None):
    """Join rounds until one completes (a RoundResult, its rank announced), retrying failed
    rounds and store timeouts up to `max_rendezvous_attempts`; else an `Exit`. `last`: the
    last round this node was assigned in (its descriptor says so; a store failover's fence);
    `stores`: the agent's store part (`protocols/stores.py`; default: the protocol's)."""
    stores = stores if stores is not None else protocol.agent_stores()
    attempts = fenced = 0
    fenced_since = None
    while True:
        t_join = yield Now()
        yield Emit(Event.RENDEZVOUS_START, detail={"restarts": restarts})
        try:
            result = yield from protocol.rendezvous(stores.remembering(node, last))
        except RendezvousFailed as e:
            attempts += 1
            last = e.assigned or last
            fenced = fenced + 1 if e.why == ExitReason.NO_QUORUM else 0
            if fenced == 1:
                fenced_since = t_join
            yield Emit(Event.RENDEZVOUS_FAILED, detail={"reason": str(e)})
            if attempts >= cfg.max_rendezvous_attempts:
                return Exit(ExitReason.TOO_MANY_FAILED_ROUNDS, last=last)
            if (fenced >= FENCED_ROUNDS and stores.can_move(last)
                    and (yield Now()) - fenced_since >= stores.fence_timeout):
                return Exit(ExitReason.NO_QUORUM, last=last)    # the majority is elsewhere: look for it
            if fenced:
                yield Sleep(cfg.retry_backoff)         # wait for the majority, do not spin
            continue
        except RendezvousClosed as e:
            return Exit(ExitReason.RENDEZVOUS_CLOSED, Event.RENDEZVOUS_CLOSED, str(e), last)
        except RendezvousTimeout as e:
            return Exit(ExitReason.RENDEZVOUS_TIMEOUT, Event.RENDEZVOUS_TIMEOUT, str(e), last)
        except StoreTimeout as e:
            attempts += 1
            yield Emit(Event.STORE_TIMEOUT, detail={"reason": str(e)})
            if attempts >= cfg.max_rendezvous_attempts or stores.can_move(last):
                return Exit(ExitReason.STORE_TIMEOUT, last=last)   # (a member that can fail over does)
            yield Sleep(cfg.retry_backoff)
            continue
        except StoreError as e:
            return Exit(ExitReason.STORE_LOST, Event.STORE_LOST, str(e), last)
        t_rank = yield Now()
        yield Emit(Event.RANK_ASSIGNED, round=result.round, rank=result.rank,
                   world_size=result.world_size,
                   detail={"nnodes": result.nnodes, "first_rank": result.first_rank,
                           "master": result.master, "digest": result.digest,
                           "latency": t_rank - t_join})
        return result


FENCED_ROUNDS = 3          # rounds in a row without a majority (over failover_timeout at least)
                           # before a member looks elsewhere


def elastic_agent(node: NodeInfo, protocol: Protocol, cfg: AgentSettings, claimed: bool = False):
    """Run the node until it gives up; returns why ("rendezvous_timeout", "store_lost", ...).
    `claimed`: a spare taken into a world that recovered in place: it trains there first."""
    protocol = protocol.for_agent(node)
    restarts, stores = 0, protocol.agent_stores()
    in_place = cfg.recovery != Mode.IN_JOB
    local = FAILURES + (TERMINATED, AGENT_FAILED) + ((Reason.IN_PLACE, Reason.LEFT_OUT) if in_place else ())
    while True:
        if claimed:
            claimed = False
            result = yield InPlace()
            t_start = t_met = yield Now()
        else:
            result = yield from rendezvous_with_retry(node, protocol, cfg, restarts, stores.last, stores)
            if isinstance(result, Exit):
                # a round assigned in this call (its confirmation failed) was assigned on this
                # store: its members' failover cycles all end here
                yield from stores.exited(result.last)
                if result.reason in STORE_LOSS and (yield from stores.move(node)):
                    continue
                return (yield from _shut_down(protocol, node, result.reason, result.event, result.why))
            yield from stores.joined(result)
            t_start = t_met = yield from _start_workers(protocol, result)   # (planned re-forms count from t_met)
        fired, until = (), None
        while True:
            reason, value = yield from watch_round(protocol, result, node, cfg.retry_backoff,
                                                   local=local, fired=fired, until=until)
            if reason == Reason.NODES_WAITING:
                now = yield Now()
                if in_place:                        # waiting hosts re-form the world only at a
                    at = reform_at(cfg, t_met, now) if until is None else until    # planned re-form
                    if at is None or at > now:
                        fired, until = (Reason.NODES_WAITING,), at
                        continue
                # restart at the next monitor tick (a safe point), its workers' own state first
                yield Sleep(cfg.monitor_interval - ((now - t_start) % cfg.monitor_interval))
                reason, value = yield from _local_first(local, reason, value)
            if reason == Reason.IN_PLACE:           # the world recovered in place: train on in it
                result = yield InPlace()
                t_start = yield Now()
                fired, until = (), None
                continue
            if not isinstance(value, StoreError) or not stores.survives_store_loss:
                break
            # the store is lost under a running round: move to the successor's and train on
            # (torchrun's workers do not need it); the next rendezvous is there
            yield Emit(Event.STORE_LOST, round=result.round, detail={"reason": str(value)})
            if not (yield from stores.move(node)):
                break
        if reason == Reason.LEFT_OUT:               # the world went on without it: wait for the next
            yield StopWorkers(reason)               # (the round is not ended, nor a restart used)
            stores.forget()                         # the round it knew runs on: it is no fence
            continue
        if reason in (TERMINATED, AGENT_FAILED):   # stop the workers, leave the round, exit
            yield StopWorkers(reason)
            yield Emit(Event.ROUND_LEFT, round=result.round, rank=result.rank, detail={"reason": reason})
            if reason == AGENT_FAILED:               # an error: torch's launcher shuts down
                return (yield from _shut_down(protocol, node, ExitReason.AGENT_FAILED))
            try:                                     # a signal: the protocol may use the notice
                yield from protocol.leave(result, node)
            except (StoreTimeout, StoreError):
                pass
            return (yield from _exit(TERMINATED))
        if isinstance(value, StoreError):
            yield StopWorkers(ExitReason.STORE_LOST)
            if not stores.survives_store_loss:      # (one that survives said so as it tried)
                yield Emit(Event.STORE_LOST, round=result.round, detail={"reason": str(value)})
            return (yield from _shut_down(protocol, node, ExitReason.STORE_LOST))
        yield StopWorkers(reason)
        yield Emit(Event.ROUND_LEFT, round=result.round, rank=result.rank, detail={"reason": reason})
        if uses_a_restart(reason):
            restarts += 1
        why = AGENT_FAILED if out_of_restarts(restarts, cfg) else reason
        if not (yield from _end_round(protocol, node, result, why, cfg, stores)):
            return (yield from _shut_down(protocol, node, ExitReason.STORE_LOST))
        if why == AGENT_FAILED:
            return (yield from _shut_down(protocol, node, ExitReason.MAX_RESTARTS))


def _start_workers(protocol: Protocol, result: RoundResult):
    """Start the round's workers, say so, and clean the round before it up; returns when."""
    yield StartWorkers(result.round, result.rank, result.world_size, result.nnodes, result.master)
    t = yield Now()
    yield Emit(Event.WORKERS_STARTED, round=result.round, rank=result.rank, world_size=result.world_size)
    try:
        yield from protocol.clean_up(result)
    except (StoreTimeout, StoreError):
        pass                                # best effort: the next round's rank 0 tries again
    return t


def _end_round(protocol: Protocol, node: NodeInfo, result: RoundResult, why: str, cfg: AgentSettings, stores):
    """End the round the agent leaves for `why` (idempotent: retried up to
    max_rendezvous_attempts; a lost store moves on where the store part can). False: the store
    is lost and nowhere to go (the agent shuts down)."""
    for _ in range(cfg.max_rendezvous_attempts):
        try:
            if why != Reason.ROUND_ENDED:
                yield from protocol.end_round(result, why, node)
            return True
        except (StoreError, StoreTimeout) as e:
            lost = isinstance(e, StoreError)
            yield Emit(Event.STORE_LOST if lost else Event.STORE_TIMEOUT, detail={"reason": str(e)})
            if why != AGENT_FAILED and (yield from stores.move(node)):
                return True
            if lost:
                return False
            yield Sleep(cfg.retry_backoff)
    return True


def watch_round(protocol: Protocol, result: RoundResult, node: NodeInfo, backoff: float = 1.0,
                local=FAILURES, fired=(), until: float | None = None):
    """Wait, without polling, for a reason to leave the running round: one of the `local`
    signals, or one of the protocol's watches (answering those that ask). Returns
    (reason, value): value is the StoreError that ended it, if one did. Watches whose reason
    is in `fired` are left out (a watcher that already reported them); `until`: at that time
    the first of them returns (a planned re-form of waiting nodes)."""
    state = None
    while True:
        watches = [w for w in protocol.watch(result, state, node) if w.reason not in fired]
        reasons = [*local, *(w.reason for w in watches)]
        ops = [*(Local(r) for r in local), *(w.op for w in watches)]
        if until is not None:
            reasons.append(fired[0])
            ops.append(Sleep(max(0.0, until - (yield Now()))))
        idx, value = yield FirstOf(*ops)
        reason = reasons[idx]
        if isinstance(value, StoreTimeout):   # a watch hung (store paused, cut off): watch again
            yield Sleep(backoff)
            continue
        if idx < len(local) or idx >= len(local) + len(watches):
            return reason, value
        if not watches[idx - len(local)].ask or isinstance(value, BaseException):
            return (yield from _local_first(local, reason, value))
        try:
            verdict, arg = yield from protocol.answer(result, watches[idx - len(local)], node)
        except StoreTimeout:                  # cut off from the store: keep training
            continue
        except StoreError as e:
            return (yield from _local_first(local, reason, e))
        if verdict == "leave":
            return (yield from _local_first(local, arg, None))
        state = arg


def _local_first(local, reason, value):
    """A watch's answer, unless a local signal came while it was read: torchrun's monitor
    reads its own workers' state before the store's (a world restarting in place, say, is
    not left for nodes that wait)."""
    if Reason.IN_PLACE not in local:       # in_job keeps the order it always had (the golden runs)
        return reason, value
    idx, got = yield FirstOf(*(Local(r) for r in local), Sleep(0.0))
    return (local[idx], got) if idx < len(local) else (reason, value)
