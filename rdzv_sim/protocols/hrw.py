"""The project's scalable elastic rendezvous: per-node keys, one CAS to close, HRW ranks.

Keys under P = rdzv/{run_id}/, R the round (see DESIGN.md):
  P/round         current round, created by compare_set("", "0"), bumped by CAS R -> R+1
  P/rR/seq        join order (atomic add);    P/rR/n{i}   slot i's descriptor (JSON)
  P/rR/closed     "<closer>:<count>", set once by CAS; P/rR/a{i} slot i's assignment (JSON)
  P/rR/ack        confirmations (add);        P/rR/ready  set by the last to confirm
  P/rR/waiting    late joiners (add);         P/rR/end    why the round ended
  P/order         the last published rank order (JSON names; rank_order=stable only)
  P/members       the last round closed with ranks (JSON names; store_failover only: the fence)
Every node does O(1) store operations a round; only the closer does O(N).
"""
from __future__ import annotations

import json
from functools import cached_property
from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat

from hrw import KeyRanking, Placement

from ..ops import (Add, Check, CompareSet, Delete, Emit, FirstOf, Get, MultiGet, MultiSet, Now, Set,
                   Sleep, StoreAddress, StoreTimeout)
from . import ranking
from .base import (BadValue, NodeInfo, Protocol, RendezvousClosed, RendezvousFailed, RendezvousTimeout,
                   RoundResult, Watch, closed_count, decode_object, digest, watch_key)
from .ranking import RankOrder
from .registry import register_protocol
from .settings import ProtocolSettings


class HrwSettings(ProtocolSettings):
    """Settings of the `hrw` protocol (seconds)."""
    name: Literal["hrw"] = "hrw"
    last_call_timeout: NonNegativeFloat = Field(1.0, description="after min_nodes join, wait this long for more")
    confirm_timeout: PositiveFloat = Field(30.0, description="members must all confirm within this")
    close_grace: NonNegativeFloat = Field(2.0, description="a stand-in closes if the designated closer is silent this long")
    hole_grace: NonNegativeFloat = Field(1.0, description="how long the closer waits for a slot's descriptor")
    probe_interval: PositiveFloat = Field(30.0, description="a waiter checks a running round's members this often")
    probe_timeout: PositiveFloat = Field(15.0, description="a member that has not answered by then is gone, and the "
                                         "round ends (> worker start)")
    rank_order: RankOrder = Field("hrw", description="ranks by HRW score, by topology key, or kept across rounds (stable)")
    store_failover: bool = Field(False, description="a lost TCPStore is replaced by one on a member elected by HRW; "
                                 "every round then needs a majority of the last one")
    failover_timeout: PositiveFloat = Field(10.0, description="how long a failover waits for its successor's store")
    close_on_shutdown: bool = Field(True, description="an agent that exits (out of restarts, timed out, done) "
                                    "closes the rendezvous for every agent, as torch's handlers do; false: "
                                    "the others re-form without it")

    def round_time(self) -> float:
        failover = SUCCESSORS * self.failover_timeout if self.store_failover else 0.0
        return (self.last_call_timeout + self.close_grace + self.hole_grace + self.confirm_timeout
                + self.probe_interval + self.probe_timeout + failover)

    def close_due(self, joins: list[float]) -> float | None:
        """The max_nodes-th joiner closes at once; else the min_nodes-th after last call."""
        if len(joins) >= self.max_nodes:
            return joins[self.max_nodes - 1]
        return joins[self.min_nodes - 1] + self.last_call_timeout if len(joins) >= self.min_nodes else None


SUCCESSORS = 3          # failover candidates in every assignment
_UNREAD = object()      # the last round's members, not read from the store yet


def has_quorum(infos) -> bool:
    """A store failover's fence, from the joiners' memory: more than half of the members of
    the latest round any joiner was assigned in joined. Every round that closes with ranks holds
    a majority of the one before, so two sides of a cut (the old store's, the successor's)
    cannot both have one: at most one forms the next round. Joiners that remember no round (new
    agents) do not count."""
    last = max((i.last for i in infos), default=-1)
    if last < 0:
        return True
    n = max(i.last_n for i in infos if i.last == last)
    return 2 * sum(1 for i in infos if i.last == last) > n


class HrwProtocol(Protocol):
    name = "hrw"
    deterministic = True
    fidelities = ("per_operation", "aggregate")
    first_round = 0          # rounds are first_round, + round_step, ...: a replica group of the
    round_step = 1           # `quorum` protocol numbers its rounds apart from the other groups'

    def _k(self, rnd: int, name: str) -> str:
        return f"{self.prefix}r{rnd}/{name}"

    # --- joining ---------------------------------------------------------------------
    def rendezvous(self, node: NodeInfo):
        cfg = self.cfg
        if (yield Check((self.prefix + "closed",))):
            raise RendezvousClosed(f"the rendezvous {cfg.run_id!r} is closed")
        deadline = (yield Now()) + cfg.join_timeout
        while True:
            # a failover's fresh store goes on from the round after the members' last one
            first = node.last + 1 if self.fails_over and node.last >= 0 else self.first_round
            rnd = int((yield CompareSet(self.prefix + "round", "", str(first))))
            while rnd < first:                  # a store left behind (a failover's earlier one)
                rnd = int((yield CompareSet(self.prefix + "round", str(rnd), str(first))))
            slot = yield Add(self._k(rnd, "seq"), 1)
            yield Set(self._k(rnd, f"n{slot}"), node.encode())
            yield Emit("join", round=rnd, detail={"slot": slot})
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
                    yield Emit("bad_value", round=rnd, detail={"key": f"a{slot}", "reason": str(e)})
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
            yield Emit("waiting", round=rnd, detail={"slot": slot, "waiting": waiting})
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
            idx, value = yield FirstOf(watch_key(self._k(rnd, "end")), watch_key(self.prefix + "closed"),
                                       Sleep(min(cfg.probe_interval, deadline - now)))
            if isinstance(value, BaseException):
                raise value
            if idx == 1:
                raise RendezvousClosed(f"the rendezvous {cfg.run_id!r} was closed while {node.name} waited")
            if idx == 0:
                return True
            if not (yield Check((self._k(rnd, "ready"),))):
                if (yield Now()) - began < cfg.confirm_timeout + cfg.close_grace + cfg.hole_grace:
                    continue
                yield Emit("round_stale", round=rnd)
                yield from self.end_round_at(rnd, "never_ready")
                return True
            k = yield Add(self._k(rnd, "probes"), 1)
            yield Set(self._k(rnd, f"probe{k}"), node.name)
            ack = watch_key(self._k(rnd, f"probe{k}/ack"))
            if (yield from self._first(ack, cfg.probe_timeout)) is None:
                yield Emit("members_lost", round=rnd, detail={"probe": k})
                yield from self.end_round_at(rnd, "members_lost")
                return True

    def _first(self, op, timeout: float):
        """The op's result, or None if `timeout` passes first."""
        idx, value = yield FirstOf(op, Sleep(max(0.0, timeout)))
        if isinstance(value, BaseException):
            raise value
        return value if idx == 0 else None

    def _await_closure(self, rnd: int, slot: int, node: NodeInfo, deadline: float):
        """Wait until round `rnd` is closed (closing it when this node should); return its count,
        or -1 if the round was ended first (a joiner below min_nodes waits for the min_nodes-th
        descriptor, and a slot whose descriptor never came, its set lost, leaves that hole until
        a waiter ends the round as stale: then join the next one, not wait out the deadline)."""
        cfg = self.cfg
        closed = self._k(rnd, "closed")
        if slot > cfg.max_nodes and not self.fails_over:
            return cfg.max_nodes                # late (with the fence, the closer seats: `_seat`)
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
                    yield Emit("bad_value", round=rnd, detail={"key": "closed", "reason": str(e)})
                    yield from self.end_round_at(rnd, "bad_closure")
                    raise RendezvousFailed(f"round {rnd}: its closure is unreadable") from None
            # the designated closer is silent: stand in for it
            yield Emit("stand_in_close", round=rnd, detail={"slot": slot})
            yield from self._close(rnd, node)
            if (yield Now()) > deadline:
                raise RendezvousTimeout("round never closed")

    def _await_min(self, rnd: int, node: NodeInfo, deadline: float):
        """Sleep until the min_nodes-th joiner of round `rnd` arrives (no polling): 0, or -1 if
        the round was ended first. A member that failed over and waits below min_nodes on a
        store where no round has closed with ranks (no `members` key: a failover's fresh store)
        gives up after `failover_timeout`, ending the round as `no_quorum`: nobody else came,
        so the majority is elsewhere, and the fence's `no_quorum` sends it on through the
        cycle, back home at its end. Otherwise a member cut off alone would serve a store of
        its own and wait there for good (no round closes, so no fence fires)."""
        cfg = self.cfg
        away = self.fails_over and node.last >= 0
        while True:
            wait = max(0.0, deadline - (yield Now()))
            capped = away and wait > cfg.failover_timeout
            idx, value = yield FirstOf(watch_key(self._k(rnd, "closed")),
                                       watch_key(self._k(rnd, f"n{cfg.min_nodes}")),
                                       watch_key(self.prefix + "closed"), watch_key(self._k(rnd, "end")),
                                       Sleep(cfg.failover_timeout if capped else wait))
            if isinstance(value, BaseException):
                raise value
            if idx == 2:
                raise RendezvousClosed(f"the rendezvous {cfg.run_id!r} was closed while {node.name} waited")
            if idx == 3:
                return -1
            if idx < 4:
                return 0
            if not capped:
                raise RendezvousTimeout(f"fewer than min_nodes={cfg.min_nodes} joined in time")
            if not (yield Check((self.prefix + "members",))):
                joined = yield Add(self._k(rnd, "seq"), 0)
                yield Emit("no_quorum", round=rnd, detail={"members": joined})
                yield from self.end_round_at(rnd, "no_quorum")
                raise RendezvousFailed(f"round {rnd}: nobody else failed over to this store",
                                       why="no_quorum")
            away = False                        # home: wait out the join timeout as before

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
        idx, value = yield FirstOf(watch_key(self._k(rnd, "closed")), watch_key(self._k(rnd, f"n{owed}")),
                                   Sleep(cfg.hole_grace - cfg.last_call_timeout))
        if isinstance(value, BaseException):
            raise value
        return idx != 0

    # --- closing ---------------------------------------------------------------------
    def _close(self, rnd: int, node: NodeInfo):
        cfg = self.cfg
        count = yield Add(self._k(rnd, "seq"), 0)
        if not self.fails_over:                 # the first max_nodes joiners; with the fence,
            count = min(count, cfg.max_nodes)   # every joiner so far, and `_seat` picks
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
                yield Emit("bad_value", round=rnd, detail={"key": f"n{i}", "reason": str(e)})
                continue
            newest[info.name] = (i, info)
        infos = dict(sorted(newest.values(), key=lambda x: x[0]))
        last = _UNREAD
        if len(infos) > cfg.max_nodes:          # only with the fence: count is every joiner
            last = yield from self._last_members(rnd)
            infos = self._seat(infos, last)
        names = [info.name for info in infos.values()]
        out = []
        failed = "too_few_members" if len(infos) < cfg.min_nodes else None
        if failed is None and self.fails_over:
            if last is _UNREAD:
                last = yield from self._last_members(rnd)
            if not self._quorate(infos.values(), last):
                failed = "no_quorum"
        if failed == "no_quorum":
            yield Emit("no_quorum", round=rnd, detail={"members": len(infos)})
        if failed:
            out = [(self._k(rnd, f"a{i}"), json.dumps({"failed": failed}))
                   for i in range(1, count + 1)]
        else:
            by_name = {info.name: (i, info) for i, info in infos.items()}
            previous = (yield from self._published_order(rnd)) if self.publishes_order else None
            order = self.ranks(list(infos.values()), previous)
            if self.publishes_order:
                out.append((self.prefix + "order", ranking.encode_order(order)))
            if self.fails_over:                 # the next round's fence
                out.append((self.prefix + "members", ranking.encode_order(sorted(names))))
            world = sum(info.nproc for info in infos.values())
            master = by_name[order[0]][1]
            dg, first = digest(names), 0
            succ = (yield from self._successors(infos.values())) if self.fails_over else ()
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
            yield Emit("round_closed", round=rnd, world_size=world,
                       detail={"members": sorted(names), "count": seats, "holes": seats - len(order)})
        yield MultiSet(tuple(out))

    def _last_members(self, rnd: int):
        """The members of the last round that closed with ranks on this store (`P/members`,
        by name: a restarted host counts), or None where it has none (a failover's fresh
        store) or they are unreadable."""
        key = self.prefix + "members"
        if (yield Check((key,))):
            try:
                return set(ranking.decode_order((yield Get(key)), 1 << 20))
            except BadValue as e:
                yield Emit("bad_value", round=rnd, detail={"key": "members", "reason": str(e)})
        return None

    def _seat(self, infos: dict, last: set | None) -> dict:
        """More joiners than seats, with the fence: the last round's members first (`last`, or
        on a fresh store the joiners that remember the latest round), then the others, each in
        slot order. Seating the first max_nodes joiners let newcomers (waiters, spares) crowd
        those members out of every round, which then failed the fence: a job that never
        re-formed, with no fault at all."""
        if last is None:
            r = max(i.last for i in infos.values())
            last = {i.name for i in infos.values() if r >= 0 and i.last == r}
        first = sorted(infos, key=lambda i: (infos[i].name not in last, i))[:self.cfg.max_nodes]
        return {i: infos[i] for i in sorted(first)}

    @staticmethod
    def _quorate(infos, last: set | None) -> bool:
        """The fence: more than half of the members of the last round that closed with ranks
        joined this one; by name where this store has that round (`last`), else by what the
        joiners remember (a failover's fresh store)."""
        if last is not None:
            return 2 * len(last & {i.name for i in infos}) > len(last)
        return has_quorum(infos)

    def _successors(self, infos):
        """Who hosts the store after a failover, in turn: the members in HRW order for the run's
        store, but those on the store's own address (it may be the one that died), each on the
        store's port."""
        addr, port = yield StoreAddress()
        by_name = {i.name: i for i in infos if i.addr != addr}
        order = Placement(list(by_name), seed=0).rank_order(f"{self.cfg.run_id}/store") if by_name else []
        return tuple((n, by_name[n].addr, port) for n in order[:SUCCESSORS])

    def _published_order(self, rnd: int):
        """The rank order the last closer published, or None (none yet, or unreadable)."""
        key = self.prefix + "order"
        if not (yield Check((key,))):
            return None
        try:
            return ranking.decode_order((yield Get(key)), self.cfg.max_nodes)
        except BadValue as e:
            yield Emit("bad_value", round=rnd, detail={"key": "order", "reason": str(e)})
            return None

    def _confirm(self, result: RoundResult):
        """All members must confirm; one compare-and-set on `ready` decides, once, whether the
        round stands ("ok", by the last to confirm) or failed ("failed", by anyone who gave up
        waiting). A member that wakes up late cannot revive a round that was given up."""
        ready = self._k(result.round, "ready")
        # recorded as the ack is sent, as static does: a real trace's times are each process's
        # own, and a member descheduled after its ack landed would record it after the others
        # saw the barrier open (a rank given "before" its confirmation)
        yield Emit("confirmed", round=result.round, rank=result.rank)
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
                yield Emit("store_timeout", detail={"reason": str(e)})
                yield Sleep(1.0)
        return (yield CompareSet(key, "", proposal))

    # --- a running round -------------------------------------------------------------
    def watch(self, result: RoundResult, state=None, node=None):
        """A full round ignores waiting nodes (torchrun's redundancy list): restarting for them
        would admit nobody and repeat forever."""
        probe = state or 1
        out = [Watch(watch_key(self._k(result.round, "end")), "round_ended"),
               Watch(watch_key(self._k(result.round, f"probe{probe}")), "probe", ask=True, arg=probe)]
        if result.nnodes < self.cfg.max_nodes:
            out.append(Watch(watch_key(self._k(result.round, "waiting")), "nodes_waiting"))
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

    @property
    def fails_over(self) -> bool:
        return self.cfg.store_failover

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

    # a round's keys: a slot per joiner (n<i>), an assignment per member (a<i>), three per
    # probe, and these, `closed` last; round_keys and round_key_count both read this layout
    PROBE_KEYS = ("probe{k}", "probe{k}/acks", "probe{k}/ack")
    ROUND_KEYS = ("seq", "ack", "ready", "waiting", "end", "probes", "closed")

    def round_keys(self, rnd: int, joined: int, count: int, probes: int) -> list[str]:
        """Every key round `rnd` wrote, given its joiners, members and probes; `closed` last."""
        keys = [self._k(rnd, f"n{i}") for i in range(1, joined + 1)]
        keys += [self._k(rnd, f"a{i}") for i in range(1, count + 1)]
        for k in range(1, probes + 1):
            keys += [self._k(rnd, p.format(k=k)) for p in self.PROBE_KEYS]
        return keys + [self._k(rnd, name) for name in self.ROUND_KEYS]

    def round_key_count(self, joined: int, count: int, probes: int) -> int:
        """len(round_keys(...)), without writing them (the aggregate model counts deletes)."""
        return joined + count + len(self.PROBE_KEYS) * probes + len(self.ROUND_KEYS)

    def clean_up(self, result: RoundResult):
        """Rank 0 deletes round r-2's keys once round r runs: nobody reads them (r-2 ended
        before r-1 began; a node that wakes up watching one times out, probes and rejoins).
        TCPStore has no prefix delete: about 2N deletes, by one node, while its workers run."""
        r = result.round - 2 * self.round_step
        if result.rank != 0 or r < 0:
            return
        closed = self._k(r, "closed")
        if not (yield Check((closed,))):
            return                                          # never closed, or cleaned already
        try:
            count = closed_count((yield Get(closed)))
        except BadValue:
            return                                          # not ours to clean: leave it
        joined = yield Add(self._k(r, "seq"), 0)
        probes = yield Add(self._k(r, "probes"), 0)
        for key in self.round_keys(r, joined, count, probes):   # `closed` last: while it stands,
            yield Delete(key)                                    # the round is not cleaned

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

    def end_round_at(self, rnd: int, reason: str):
        """Bump first, then say why: whoever sees `end` finds the round already moved on."""
        yield CompareSet(self.prefix + "round", str(rnd), str(rnd + self.round_step))
        yield Set(self._k(rnd, "end"), reason)


register_protocol("hrw", HrwProtocol, HrwSettings)
