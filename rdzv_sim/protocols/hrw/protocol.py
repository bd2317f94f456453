"""hrw, the protocol: joining, closing, confirming, and a running round (the store layout is
`keys.py`, store failover `failover.py`)."""
from __future__ import annotations

import json
from functools import cached_property

from hrw import KeyRanking

from ...events import Event
from ...ops import Add, Check, CompareSet, Emit, FirstOf, Get, MultiGet, MultiSet, Now, Set, Sleep, StoreTimeout
from ...reasons import Reason
from .. import ranking
from ..base import (BadValue, NodeInfo, Protocol, RendezvousClosed, RendezvousFailed, RendezvousTimeout,
                    RoundResult, Watch, closed_count, decode_object, digest, watch_key)
from ..kit import Capabilities, Kit
from ..recovery import Mode
from ..registry import register_kit
from .failover import AgentFailover, OneStore, StoreFailover
from .keys import RoundKeys
from .settings import HrwSettings


class HrwProtocol(RoundKeys, Protocol):
    name = "hrw"
    first_round = 0          # rounds are first_round, + round_step, ...: a replica group of the
    round_step = 1           # `quorum` protocol numbers its rounds apart from the other groups'

    # --- joining ---------------------------------------------------------------------
    def rendezvous(self, node: NodeInfo):
        cfg = self.cfg
        if (yield Check((self.prefix + "closed",))):
            raise RendezvousClosed(f"the rendezvous {cfg.run_id!r} is closed")
        deadline = (yield Now()) + cfg.join_timeout
        while True:
            first = self.failover.first_round(node, self.first_round)
            rnd = int((yield CompareSet(self.prefix + "round", "", str(first))))
            while rnd < first:                  # a store left behind (a failover's earlier one)
                rnd = int((yield CompareSet(self.prefix + "round", str(rnd), str(first))))
            slot = yield Add(self._k(rnd, "seq"), 1)
            yield Set(self._k(rnd, f"n{slot}"), node.encode())
            yield Emit(Event.JOIN, round=rnd, detail={"slot": slot})
            count = yield from self._await_closure(rnd, slot, node, deadline)
            if count < 0:                       # the round was ended before it closed: the next
                continue
            if slot <= count:
                text = yield from self._first(watch_key(self._k(rnd, f"a{slot}")), cfg.close_grace
                                              + cfg.hole_grace + cfg.confirm_timeout)
                if text is None:
                    yield from self.end_round_at(rnd, "closer_lost")
                    raise RendezvousFailed(f"round {rnd}: the closer never published ranks")
                try:
                    assigned = decode_object(text)
                    result = RoundResult.from_dict(assigned) if "rank" in assigned else None
                except BadValue as e:
                    yield Emit(Event.BAD_VALUE, round=rnd, detail={"key": f"a{slot}", "reason": str(e)})
                    yield from self.end_round_at(rnd, "bad_assignment")
                    raise RendezvousFailed(f"round {rnd}: its assignment for slot {slot} is unreadable") from None
                if result is not None:
                    try:
                        yield from self._confirm(result)
                    except RendezvousFailed as e:
                        e.assigned = result
                        raise
                    return result
                if isinstance(assigned.get("failed"), str):
                    yield from self.end_round_at(rnd, assigned["failed"])
                    raise RendezvousFailed(f"round {rnd}: {assigned['failed']}", why=assigned["failed"])
            # late: say so (members of a round that is not full restart for us), then wait for
            # this round to end and join the next one; a spare (the round is full) waits with
            # no deadline, as torch's redundant nodes do, and has its join timeout afresh after
            waiting = yield Add(self._k(rnd, "waiting"), 1)
            yield Emit(Event.WAITING, round=rnd, detail={"slot": slot, "waiting": waiting})
            spare = count >= cfg.max_nodes
            if not (yield from self._await_end(rnd, node, float("inf") if spare else deadline)):
                raise RendezvousTimeout(f"no round admitted {node.name} within join_timeout")
            if spare:
                deadline = (yield Now()) + cfg.join_timeout

    def _await_end(self, rnd: int, node: NodeInfo, deadline: float):
        """Wait (no polling) for round `rnd` to end; True once it has, False at the deadline.

        A dead member may leave nobody to end the round (all dead), or leave a full round that
        its survivors train on, unaware, while a spare waits. So a waiter that has waited
        `probe_interval` probes the members (a key they watch; each answers with one add, the
        last to answer says so); if not all of them answer within `probe_timeout`, it ends the
        round itself, and the survivors re-form with it (torch's c10d does the same when a
        member's keep-alives lapse). A round that never became ready within its confirm window is
        ended the same way.
        """
        cfg = self.cfg
        began = yield Now()
        while True:
            now = yield Now()
            if now >= deadline:
                return False
            which, value = yield FirstOf(ended=watch_key(self._k(rnd, "end")),
                                         closed=watch_key(self.prefix + "closed"),
                                         probe=Sleep(min(cfg.probe_interval, deadline - now)))
            if isinstance(value, BaseException):
                raise value
            if which == "closed":
                raise RendezvousClosed(f"the rendezvous {cfg.run_id!r} was closed while {node.name} waited")
            if which == "ended":
                return True
            if not (yield Check((self._k(rnd, "ready"),))):
                if (yield Now()) - began < cfg.confirm_timeout + cfg.close_grace + cfg.hole_grace:
                    continue
                yield Emit(Event.ROUND_STALE, round=rnd)
                yield from self.end_round_at(rnd, "never_ready")
                return True
            k = yield Add(self._k(rnd, "probes"), 1)
            yield Set(self._k(rnd, f"probe{k}"), node.name)
            which, value = yield FirstOf(ack=watch_key(self._k(rnd, f"probe{k}/ack")),
                                         ended=watch_key(self._k(rnd, "end")),
                                         timer=Sleep(cfg.probe_timeout))
            if isinstance(value, BaseException):
                raise value
            if which == "ended":                # the round ended while it probed (a re-form)
                return True
            if which == "timer":
                yield Emit(Event.MEMBERS_LOST, round=rnd, detail={"probe": k})
                yield from self.end_round_at(rnd, Event.MEMBERS_LOST)
                return True

    def _first(self, op, timeout: float):
        """The op's result, or None if `timeout` passes first."""
        which, value = yield FirstOf(done=op, timer=Sleep(max(0.0, timeout)))
        if isinstance(value, BaseException):
            raise value
        return value if which == "done" else None

    def _await_closure(self, rnd: int, slot: int, node: NodeInfo, deadline: float):
        """Wait until round `rnd` is closed (closing it when this node should); return its count,
        or -1 if the round was ended first (a joiner below min_nodes waits for the min_nodes-th
        descriptor, and a slot whose descriptor never came, its set lost, leaves that hole until
        a waiter ends the round as stale: then join the next one, not wait out the deadline)."""
        cfg = self.cfg
        closed = self._k(rnd, "closed")
        if slot > cfg.max_nodes and not self.failover.seats_every_joiner:
            return cfg.max_nodes                # late (with the fence, the closer seats)
        if slot == cfg.max_nodes:
            yield from self._close(rnd, node)
        elif slot == cfg.min_nodes:
            if (yield from self._first(watch_key(closed), cfg.last_call_timeout)) is None:
                if (yield from self._owed_arrived(rnd)):
                    yield from self._close(rnd, node)
        elif slot < cfg.min_nodes:
            if (yield from self._await_min(rnd, node, deadline)) < 0:
                return -1
        while True:
            text = yield from self._first(watch_key(closed), cfg.last_call_timeout + cfg.close_grace)
            if text is not None:
                try:
                    return closed_count(text)
                except BadValue as e:
                    yield Emit(Event.BAD_VALUE, round=rnd, detail={"key": "closed", "reason": str(e)})
                    yield from self.end_round_at(rnd, "bad_closure")
                    raise RendezvousFailed(f"round {rnd}: its closure is unreadable") from None
            # the designated closer is silent: stand in for it
            yield Emit(Event.STAND_IN_CLOSE, round=rnd, detail={"slot": slot})
            yield from self._close(rnd, node)
            if (yield Now()) > deadline:
                raise RendezvousTimeout("round never closed")

    def _await_min(self, rnd: int, node: NodeInfo, deadline: float):
        """Sleep until the min_nodes-th joiner of round `rnd` arrives (no polling): 0, or -1 if
        the round was ended first. A member that failed over asks, after `failover_timeout`,
        whether it is alone there (`StoreFailover.alone`): no round closes on such a store, so
        no fence would ever fire."""
        cfg = self.cfg
        limit = self.failover.alone_limit(node)
        while True:
            wait = max(0.0, deadline - (yield Now()))
            capped = limit is not None and wait > limit
            which, value = yield FirstOf(round_closed=watch_key(self._k(rnd, "closed")),
                                         min_joined=watch_key(self._k(rnd, f"n{cfg.min_nodes}")),
                                         closed=watch_key(self.prefix + "closed"),
                                         ended=watch_key(self._k(rnd, "end")),
                                         timer=Sleep(limit if capped else wait))
            if isinstance(value, BaseException):
                raise value
            if which == "closed":
                raise RendezvousClosed(f"the rendezvous {cfg.run_id!r} was closed while {node.name} waited")
            if which == "ended":
                return -1
            if which != "timer":
                return 0
            if not capped:
                raise RendezvousTimeout(f"fewer than min_nodes={cfg.min_nodes} joined in time")
            yield from self.failover.alone(rnd)
            limit = None                        # home: wait out the join timeout as before

    def _owed_arrived(self, rnd: int):
        """Whether to close now. A round that follows one ended for late joiners owes them a
        place: with a last call shorter than `hole_grace`, the closer waits up to `hole_grace`
        for as many joiners as that round had members and waiters, else a member nearer the
        store rejoins first every time, closes without them, and the restart repeats forever.
        False: the round was closed meanwhile."""
        cfg = self.cfg
        if rnd == 0 or cfg.last_call_timeout >= cfg.hole_grace:
            return True
        prev = self._k(rnd - 1, "closed")
        if not (yield Check((prev,))):
            return True
        try:
            owed = min(cfg.max_nodes, closed_count((yield Get(prev)))
                       + (yield Add(self._k(rnd - 1, "waiting"), 0)))
        except BadValue:
            return True
        if (yield Add(self._k(rnd, "seq"), 0)) >= owed:
            return True
        which, value = yield FirstOf(round_closed=watch_key(self._k(rnd, "closed")),
                                     owed_joined=watch_key(self._k(rnd, f"n{owed}")),
                                     timer=Sleep(cfg.hole_grace - cfg.last_call_timeout))
        if isinstance(value, BaseException):
            raise value
        return which != Event.ROUND_CLOSED

    # --- closing ---------------------------------------------------------------------
    def _close(self, rnd: int, node: NodeInfo):
        cfg = self.cfg
        count = yield Add(self._k(rnd, "seq"), 0)
        if not self.failover.seats_every_joiner:      # else every joiner so far, and the
            count = min(count, cfg.max_nodes)           # failover part seats them
        token = f"{node.name}:{count}"
        if (yield CompareSet(self._k(rnd, "closed"), "", token)) != token:
            return                                         # someone else closed it
        slots = [self._k(rnd, f"n{i}") for i in range(1, count + 1)]
        present = list(range(1, count + 1))
        if not (yield Check(tuple(slots))):
            yield Sleep(cfg.hole_grace)                    # a joiner between add and set
            found = []
            for i, k in zip(present, slots):
                if (yield Check((k,))):
                    found.append(i)
            present = found
        texts = yield MultiGet(tuple(slots[i - 1] for i in present))
        newest: dict[str, tuple[int, NodeInfo]] = {}
        for i, t in zip(present, texts):      # a host that rejoined after a crash: newest slot wins
            try:
                info = NodeInfo.decode(t)
            except BadValue as e:             # not a node's descriptor: a hole, said once
                yield Emit(Event.BAD_VALUE, round=rnd, detail={"key": f"n{i}", "reason": str(e)})
                continue
            newest[info.name] = (i, info)
        infos = dict(sorted(newest.values(), key=lambda x: x[0]))
        infos, failed = yield from self.failover.admit(rnd, infos)
        names = [info.name for info in infos.values()]
        out = []
        if failed:
            out = [(self._k(rnd, f"a{i}"), json.dumps({"failed": failed}))
                   for i in range(1, count + 1)]
        else:
            by_name = {info.name: (i, info) for i, info in infos.items()}
            previous = (yield from self._published_order(rnd)) if self.publishes_order else None
            order = self.ranks(list(infos.values()), previous)
            if self.publishes_order:
                out.append((self.prefix + "order", ranking.encode_order(order)))
            out += self.failover.published(names)
            world = sum(info.nproc for info in infos.values())
            master = by_name[order[0]][1]
            dg, first = digest(names), 0
            succ = yield from self.failover.successors(infos.values())
            assigned = set()
            for rank, name in enumerate(order):
                i, info = by_name[name]
                res = RoundResult(rnd, rank, len(order), world, first, master.addr, dg, master.port, succ)
                out.append((self._k(rnd, f"a{i}"), res.encode()))
                assigned.add(i)
                first += info.nproc
            out += [(self._k(rnd, f"a{i}"), json.dumps({"late": True}))
                    for i in range(1, count + 1) if i not in assigned]
            seats = min(count, cfg.max_nodes)
            yield Emit(Event.ROUND_CLOSED, round=rnd, world_size=world,
                       detail={"members": sorted(names), "count": seats, "holes": seats - len(order)})
        yield MultiSet(tuple(out))

    def _published_order(self, rnd: int):
        """The rank order the last closer published, or None (none yet, or unreadable)."""
        key = self.prefix + "order"
        if not (yield Check((key,))):
            return None
        try:
            return ranking.decode_order((yield Get(key)), self.cfg.max_nodes)
        except BadValue as e:
            yield Emit(Event.BAD_VALUE, round=rnd, detail={"key": "order", "reason": str(e)})
            return None

    def _confirm(self, result: RoundResult):
        """All members must confirm; one compare-and-set on `ready` decides, once, whether the
        round stands ("ok", by the last to confirm) or failed ("failed", by anyone who gave up
        waiting). A member that wakes up late cannot revive a round that was given up."""
        ready = self._k(result.round, "ready")
        # recorded as the ack is sent, as static does: a real trace's times are each process's
        # own, and a member descheduled after its ack landed would record it after the others
        # saw the barrier open (a rank given "before" its confirmation)
        yield Emit(Event.CONFIRMED, round=result.round, rank=result.rank)
        acks = yield Add(self._k(result.round, "ack"), 1)
        if acks == result.nnodes:
            yield CompareSet(ready, "", "ok")
        verdict = yield from self._first(watch_key(ready), self.cfg.confirm_timeout)
        if verdict is None:
            verdict = yield from self._decide(ready, "failed")
        if verdict != "ok":
            yield from self.end_round_at(result.round, "confirm_timeout")
            raise RendezvousFailed(f"round {result.round}: a member never confirmed")

    def _decide(self, key: str, proposal: str, attempts: int = 100):
        """compare_set(key, "", proposal), retried through store timeouts: a member that acked
        must learn the verdict, or it could walk away from a round that completes with it.
        Each timeout is recorded all the same (a paused store's deadlines are seen, not hidden)."""
        for _ in range(attempts - 1):
            try:
                return (yield CompareSet(key, "", proposal))
            except StoreTimeout as e:
                yield Emit(Event.STORE_TIMEOUT, detail={"reason": str(e)})
                yield Sleep(1.0)
        return (yield CompareSet(key, "", proposal))

    # --- a running round -------------------------------------------------------------
    def watch(self, result: RoundResult, state=None, node=None):
        """A full round ignores waiting nodes (torchrun's redundancy list): restarting for them
        would admit nobody and repeat forever."""
        probe = state or 1
        out = [Watch(watch_key(self._k(result.round, "end")), Reason.ROUND_ENDED),
               Watch(watch_key(self._k(result.round, f"probe{probe}")), Reason.PROBE, ask=True, arg=probe)]
        if result.nnodes < self.cfg.max_nodes:
            out.append(Watch(watch_key(self._k(result.round, "waiting")), Reason.NODES_WAITING))
        return out

    def count_waiting(self, result: RoundResult):
        """How many late joiners wait for round `result.round` to end."""
        return (yield Add(self._k(result.round, "waiting"), 0))

    def answer(self, result: RoundResult, watch: Watch, node: NodeInfo):
        """A waiter asks whether every member of this round is alive: count in, and the last
        to count in says so; then watch the next probe."""
        probe = watch.arg
        if (yield Add(self._k(result.round, f"probe{probe}/acks"), 1)) >= result.nnodes:
            yield Set(self._k(result.round, f"probe{probe}/ack"), node.name)
        return ("stay", probe + 1)

    def agent_stores(self):
        """An agent's store part: with `store_failover`, `AgentFailover` (the cycle of successors)."""
        return AgentFailover(self) if self.cfg.fails_over else super().agent_stores()

    @cached_property
    def failover(self) -> OneStore:
        """The store failover part: `StoreFailover` with `store_failover`, else `OneStore`."""
        return (StoreFailover if self.cfg.fails_over else OneStore)(self)

    @property
    def publishes_order(self) -> bool:
        """Whether the closer reads and publishes the rank order (rank_order=stable)."""
        return self.cfg.rank_order == "stable"

    def ranks(self, infos: list[NodeInfo], previous: list[str] | None = None) -> list[str]:
        """The members' names in rank order, under the settings' `rank_order`."""
        return ranking.order(self.cfg.rank_order, infos, self.rank_order, previous)

    def rank_order(self, names: list[str]) -> list[str]:
        """The members in rank order: HRW scores for the run id, not arrival order (each host's
        score kept across rounds)."""
        return self._run_ranking.order(names)

    @cached_property
    def _run_ranking(self) -> KeyRanking:
        return KeyRanking(self.cfg.run_id, seed=0)

    def end_round(self, result: RoundResult, reason: str, node=None):
        yield from self.end_round_at(result.round, reason)

    def shutdown(self, node: NodeInfo):
        """torch's handler.shutdown(), called by its launcher on every exit but a signal's:
        close the rendezvous for every agent (close_on_shutdown), as torch's handlers do."""
        if self.cfg.close_on_shutdown:
            yield from self.set_closed(node.name)

    def leave(self, result: RoundResult, node: NodeInfo):
        """Use a preemption's notice: end the round, so the others re-form without us now
        instead of when their collectives fail."""
        yield from self.end_round_at(result.round, "preempted")


register_kit(Kit("hrw", HrwProtocol, HrwSettings,
                 Capabilities(fidelities=("per_operation", "aggregate"), recovery=tuple(Mode), deterministic=True), parts={
    "round_model": "rdzv_sim.aggregate.hrw_round:HrwRounds",
    "invariants": "rdzv_sim.testing.invariants:HRW", "known": "rdzv_sim.testing.known:HRW",
    "cost/per_operation": "rdzv_sim.estimate:HRW_PER_OPERATION",
    "cost/aggregate": "rdzv_sim.estimate:HRW_AGGREGATE"}))
