"""A model of torchrun's default `c10d` rendezvous (DynamicRendezvousHandler + C10dRendezvousBackend).

Faithful in the decisions (decisions.py is the join/exit/close/keep-alive table), in the store
traffic (one blob, compare-and-set with the last value read as token, a failed CAS returns the
latest state and the node decides again at once, a 1 s read cache, SYNC sleeps 1 s, a random
0-0.3 s delay before round 0, one sentinel CAS when a handler is made) and in the agent's view
(`num_nodes_waiting` is the wait list of a read that may be 1 s old).

Not ticked, to keep idle time free: the keep-alive heartbeats of members and of nodes on the
wait list, and the 1 s polling of waiting nodes and of members' `num_nodes_waiting`. Those
heartbeats run in the background (StartHeartbeat: the simulator knows when each node beat last
and charges the writes as store load). A participant of a round that is not complete yet keeps
alive as torch's join op does, by compare-and-set every keep-alive interval: in a long join
storm those CASes contend with the joiners'. A waiting node sleeps until the blob changes or a
deadline, a heartbeat expiry or its own keep-alive can change the decision, then wakes at its
next 1 s poll tick, as the real loop would have noticed it.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from ..base import NodeInfo, Protocol, RendezvousClosed, RendezvousTimeout, RoundResult, Watch, digest
from ..kit import Capabilities, Kit
from ..recovery import Mode
from ..registry import register_kit
from ...reasons import Reason
from ..settings import ProtocolSettings
from ...events import Event
from ...ops import (BackgroundLoad, Changed, CompareSet, Emit, FirstOf, Get, HeartbeatTimes, Now,
                    Random, Sleep, StartHeartbeat, StoppedHeartbeats, WallClock, Work)
from . import decisions as D
from .state import NULL_SENTINEL, Blob, State, addr_of, blob_size, desc

CACHE_DURATION = 1.0           # _BackendRendezvousStateHolder(cache_duration=1)
CLOSE_TIMEOUT = 30.0           # RendezvousTimeout.close: a shut-down handler's close op
SYNC_DELAY = 1.0               # _delay(seconds=1) on Action.SYNC
ROUND0_DELAY = 0.3             # _delay(seconds=(0, 0.3)) before the first round


@dataclass
class Tally:
    """Compare-and-sets sent by every agent of a job, and how many were the backends' sentinels."""
    cas: int = 0
    sentinels: int = 0


@dataclass
class Holder:
    """One handler's view: `_BackendRendezvousStateHolder` state, plus CAS accounting."""
    node: str
    state: State
    token: str | None = None
    dirty: bool = False
    last_sync: float = -math.inf
    made: bool = False
    cas_attempts: int = 0
    pending: tuple | None = None        # (action, wall time) to write at the next sync
    addr_len: int = field(init=False, default=0)   # what a descriptor adds to torch's state

    def __post_init__(self):
        self.addr_len = len(addr_of(self.node))


class C10dSettings(ProtocolSettings):
    """Settings of the `c10d` model (torchrun's --rdzv-conf names; seconds)."""
    name: Literal["c10d"] = "c10d"
    last_call_timeout: NonNegativeFloat = Field(30.0, description="after min_nodes join, wait this long for more (torch: 30)")
    keep_alive_interval: PositiveFloat = Field(5.0, description="heartbeat period")
    keep_alive_max_attempt: PositiveInt = Field(3, description="missed beats before a node is dead")

    def round_time(self) -> float:
        """Last call, a dead participant's heartbeat expiry, the rollback period, torchrun's
        30 s close timeout and a sync poll."""
        return (self.last_call_timeout + self.keep_alive_interval * self.keep_alive_max_attempt
                + D.ROLLBACK_PERIOD + CLOSE_TIMEOUT + SYNC_DELAY)

    def close_due(self, joins: list[float]) -> float | None:
        """Complete at the max_nodes-th join; else once a participant syncs past the last-call
        deadline (torch sets it once, when min_nodes is reached). Either way the others learn
        it at their next sync."""
        if len(joins) >= self.max_nodes:
            return joins[self.max_nodes - 1] + SYNC_DELAY
        if len(joins) < self.min_nodes:
            return None
        return joins[self.min_nodes - 1] + self.last_call_timeout + 2 * SYNC_DELAY


class C10dProtocol(Protocol):
    name = "c10d"
    # simulator hints: a real run uses torch's own DynamicRendezvousHandler instead
    needs = frozenset({Changed, StartHeartbeat, HeartbeatTimes, StoppedHeartbeats, BackgroundLoad})

    def __init__(self, cfg):
        super().__init__(cfg)
        self.key = f"torch.rendezvous.{cfg.run_id}"
        self.s = D.Settings(cfg.min_nodes, cfg.max_nodes, cfg.last_call_timeout,
                            cfg.keep_alive_interval, cfg.keep_alive_max_attempt)
        self._holders: dict[str, Holder] = {}      # per agent process (descriptor)
        self.tally = Tally()                        # every agent's, shared by their copies

    def for_agent(self, node: NodeInfo) -> "C10dProtocol":
        """torch's handler keeps its state holder per process: so does the copy each agent
        runs, which goes with its agent; the copies share the settings and the tally."""
        mine = copy.copy(self)
        mine._holders = {}
        return mine

    def holder(self, node: NodeInfo) -> Holder:
        d = desc(node.addr, node.pid)
        if d not in self._holders:
            self._holders[d] = Holder(d, State())
        return self._holders[d]

    def attempts(self) -> int:
        """Compare-and-sets every handler has sent, each backend's sentinel CAS left out (as
        the counts of torch's own handlers in reports/ leave it out)."""
        return self.tally.cas - self.tally.sentinels

    # --- the state holder --------------------------------------------------------------
    def _sync(self, h: Holder):
        """`_BackendRendezvousStateHolder.sync`: write if dirty (CAS), else read unless cached."""
        now = yield Now()
        has_set = None
        if h.dirty:
            desired = self._written(h)
            yield Work(desired.size)                           # pickle + base64
            h.cas_attempts += 1
            self.tally.cas += 1
            value = yield CompareSet(self.key, h.token or NULL_SENTINEL, desired)
            has_set = value is desired
        else:
            if h.last_sync >= max(now - CACHE_DURATION, 0):
                return None
            value = yield Get(self.key)
        yield Work(len(value))                                 # base64 + unpickle
        h.state = State.decode(value)                          # shared: copied before a change
        h.token, h.dirty, h.pending = value, False, None
        h.last_sync = yield Now()
        wall = yield WallClock()
        stopped, floor = yield StoppedHeartbeats()
        dead = D.expired_among(h.state, self.s, wall, stopped, floor)
        if dead is None:                                       # a live node may look dead: ask
            beats = yield HeartbeatTimes(tuple(h.state.last_heartbeats))
            dead = D.expired(h.state, self.s, wall, beats)
        if dead:
            h.state = h.state.copy()
            D.remove_dead(h.state, dead, self.s)
            yield Emit(Event.C10D_DEAD_NODES, round=h.state.round, detail={"removed": sorted(dead)})
        return has_set

    def _written(self, h: Holder) -> Blob:
        """The blob this holder's pending action makes from its state, made into a state only
        if someone reads it (a failed compare-and-set copies nothing)."""
        action, wall = h.pending
        st, node, s = h.state, h.node, self.s
        p = len(st.participants)
        listed = len(st.wait_list) + len(st.redundancy_list)
        if action is D.Action.ADD_TO_PARTICIPANTS:
            p, listed = p + (node not in st.participants), listed - (node in st.wait_list)
        elif action is D.Action.ADD_TO_WAIT_LIST:
            listed += (node not in st.wait_list) - (node in st.redundancy_list)
        elif action is D.Action.ADD_TO_REDUNDANCY_LIST:
            listed += node not in st.redundancy_list
        elif action is D.Action.REMOVE_FROM_PARTICIPANTS:
            p -= 1
        elif action is D.Action.REMOVE_FROM_WAIT_LIST:
            listed -= node in st.wait_list
        elif action is D.Action.REMOVE_FROM_REDUNDANCY_LIST:
            listed -= node in st.redundancy_list
        return Blob(None, blob_size(p, listed, h.addr_len), st,
                    lambda new: D.apply(action, new, node, s, wall))

    def _run(self, h: Holder, decide, deadline: float, node: NodeInfo):
        """`_DistributedRendezvousOpExecutor.run`: sync, decide, act, until FINISH."""
        while True:
            yield from self._sync(h)
            now, wall = (yield Now()), (yield WallClock())
            beat = None
            if h.state.complete and h.node in h.state.last_heartbeats:
                # a node waiting on a complete round (wait or redundancy list) beats in the
                # background; a participant of an open round beats by CAS, as torch's join op
                # does (its heartbeat timer is stopped while it joins): those CASes contend
                beat = (yield HeartbeatTimes((h.node,))).get(h.node)
            action = decide(h.state, now, deadline, wall, beat)
            if action is D.Action.FINISH:
                return
            if action is D.Action.ERROR_CLOSED or action is D.Action.GRACEFUL_EXIT:
                raise RendezvousClosed(f"the rendezvous {self.cfg.run_id!r} is closed")
            if action is D.Action.ERROR_TIMEOUT:
                raise RendezvousTimeout("c10d: the join timeout passed")
            if action is D.Action.SYNC:
                yield from self._idle(h, deadline)
                continue
            if action is D.Action.REMOVE_FROM_REDUNDANCY_LIST:
                deadline = now + self.cfg.join_timeout          # update_deadline(join)
            h.pending, h.dirty = (action, wall), True        # written (applied) by the next sync

    def _idle(self, h: Holder, deadline: float):
        """SYNC: torch sleeps 1 s and reads again. Sleep instead until the blob changes or a
        time-based condition can flip the decision, then wake on the next 1 s poll tick."""
        now, wall = (yield Now()), (yield WallClock())
        wake = [deadline + D.ROLLBACK_PERIOD + 1e-6 if now > deadline else deadline + 1e-6]
        st = h.state
        wake += [now + (w - wall) + 1e-6 for w in D.flips(st, h.node, self.s)]
        expiry = self.s.keep_alive_interval * self.s.keep_alive_max_attempt
        stopped, floor = yield StoppedHeartbeats()
        hb = st.last_heartbeats
        if floor + expiry > wall:
            # the beating cannot expire before floor + expiry; the stopped expire on their own
            wake.append(now + (floor + expiry - wall) + 1e-6)
            for n, beat in D.stopped_in(st, stopped):
                if n != h.node:
                    wake.append(now + (beat + expiry - wall) + 1e-6)
        else:
            beats = yield HeartbeatTimes(tuple(hb))
            for n, last in hb.items():
                if n != h.node:
                    wake.append(now + (max(last, beats.get(n) or last) + expiry - wall) + 1e-6)
        until = max(min(wake), now)
        yield BackgroundLoad(1.0 / SYNC_DELAY, len(h.token or ""))
        yield FirstOf(changed=Changed(self.key, h.token, timeout=math.inf), timer=Sleep(until - now))
        yield BackgroundLoad(0.0)
        t = yield Now()
        # the real loop reads once a second after its last read: wake on that tick
        ticks = max(1, math.ceil((t - h.last_sync) / SYNC_DELAY))
        yield Sleep(max(0.0, h.last_sync + ticks * SYNC_DELAY + 1e-6 - t))   # cache expired

    # --- the handler -----------------------------------------------------------------
    def rendezvous(self, node: NodeInfo):
        """`DynamicRendezvousHandler.next_rendezvous`."""
        h = self.holder(node)
        yield BackgroundLoad(0.0)           # in a rendezvous, its agent polls num_nodes_waiting no more
        if not h.made:                      # C10dRendezvousBackend.__init__: the sentinel CAS
            h.cas_attempts += 1
            self.tally.cas += 1
            self.tally.sentinels += 1
            yield CompareSet(self.key, "", NULL_SENTINEL)
            h.made = True
        yield Work(0)                       # _record names its caller by inspect.stack(): the
        #                                     first in a process reads every frame's source
        if h.state.round == 0:
            yield Sleep(ROUND0_DELAY * (yield Random()))
        yield StartHeartbeat(h.node, self.s.keep_alive_interval + CACHE_DURATION,
                             len(h.token or "") or 512)
        deadline = (yield Now()) + self.cfg.join_timeout
        before = h.cas_attempts
        yield from self._run(h, lambda st, now, dl, wall, beat: D.exit_(st, h.node, now, dl), deadline, node)
        yield Emit(Event.JOIN, round=h.state.round, detail={"slot": len(h.state.participants) + 1})
        yield from self._run(h, lambda st, now, dl, wall, beat: D.join(st, h.node, self.s, now, dl, wall, beat),
                             deadline, node)
        st = h.state
        ranked, dg = self._ranking(st)
        rank, n = st.participants[h.node], len(st.participants)
        yield Emit(Event.CONFIRMED, round=st.round, rank=rank,
                   detail={"cas_attempts": h.cas_attempts - before})
        yield BackgroundLoad(1.0 / CACHE_DURATION, len(h.token or ""))   # num_nodes_waiting polls
        if rank == 0:
            yield Emit(Event.ROUND_CLOSED, round=st.round, world_size=n * node.nproc,
                       detail={"members": sorted(addr_of(d) for d in ranked), "count": n, "holes": 0})
        return RoundResult(st.round, rank, n, n * node.nproc, rank * node.nproc,
                           addr_of(ranked[0]), dg)

    @staticmethod
    def _ranking(st: State) -> tuple[list[str], str]:
        """The participants in rank order and their digest, once per state: every member
        reads the same (shared, frozen) state of a completed round."""
        got = st.__dict__.get("_ranking")
        if got is None:
            ranked = sorted(st.participants, key=st.participants.__getitem__)
            got = st.__dict__["_ranking"] = (ranked, digest(ranked))
        return got

    # --- while a round runs: the agent's num_nodes_waiting ------------------------------
    def watch(self, result: RoundResult, state=None, node: NodeInfo | None = None):
        h = self.holder(node)
        if state is None and h.state.wait_list:
            # nodes already wait: the agent's next num_nodes_waiting() sees them, no change needed
            return [Watch(Sleep(0.0), Reason.POLL, ask=True)]
        token = state if state is not None else h.token
        return [Watch(Changed(self.key, token, timeout=math.inf), Reason.POLL, ask=True)]

    def answer(self, result: RoundResult, watch: Watch, node: NodeInfo):
        """The blob changed: the agent notices at its first monitor tick after the 1 s cache
        expires, reads it, and restarts if nodes wait."""
        h = self.holder(node)
        t = yield Now()
        next_read = max(t, h.last_sync + CACHE_DURATION + 1e-6)
        yield Sleep(next_read - t)
        yield from self._sync(h)
        if h.state.wait_list:
            return ("leave", Reason.NODES_WAITING)
        return ("stay", h.token)

    def shutdown(self, node: NodeInfo):
        """torch's handler.shutdown(), which its launcher calls on every exit but a signal's:
        the close op, which ends the rendezvous for every agent of the job."""
        h = self.holder(node)
        deadline = (yield Now()) + CLOSE_TIMEOUT
        yield from self._run(h, lambda st, now, dl, wall, beat: D.close(st, now, dl), deadline, node)


register_kit(Kit("c10d", C10dProtocol, C10dSettings,
                 Capabilities(fidelities=("per_operation", "aggregate"), recovery=tuple(Mode), torch_counterpart="c10d"), parts={
    "round_model": "rdzv_sim.aggregate.c10d_rounds:C10dRounds", "known": "rdzv_sim.testing.known:C10D",
    "cost/per_operation": "rdzv_sim.estimate:C10D_PER_OPERATION",
    "cost/aggregate": "rdzv_sim.estimate:C10D_AGGREGATE"}))
