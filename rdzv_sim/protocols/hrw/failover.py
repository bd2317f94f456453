"""hrw's store failover, a part of its own: plain hrw has one store for the run's life
(`OneStore`); with `store_failover` (`StoreFailover`) a lost store is replaced by one on a
member chosen by HRW, and every round needs a majority of the last one (the fence).

The protocol asks its part five things: where a fresh store's rounds start, whether a closer
seats every joiner, who is admitted, what a closed round publishes, and who serves the store
next. `P/members` (the last round closed with ranks, JSON names) is the fence's key.
"""
from __future__ import annotations

from hrw import Placement

from ...events import Event
from ...ops import Add, Check, Emit, Get, StoreAddress, StoreError, StoreTimeout, UseStore
from .. import ranking
from ..base import BadValue, RendezvousFailed
from ...reasons import ExitReason
from ..stores import OneStore as AgentOneStore

SUCCESSORS = 3          # failover candidates in every assignment


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


class OneStore:
    """Plain hrw: the run's store lives as long as the run; the first max_nodes joiners are
    seated, anyone is admitted if min_nodes came."""
    seats_every_joiner = False

    def __init__(self, protocol):
        self.protocol = protocol

    def first_round(self, node, first: int) -> int:
        return first

    def alone_limit(self, node) -> float | None:
        """How long a joiner below min_nodes waits before asking whether it is alone (None:
        the join timeout)."""
        return None

    def admit(self, rnd: int, infos: dict):
        """The joiners seated and, when the round cannot stand, why: (infos, failed or None)."""
        return infos, ("too_few_members" if len(infos) < self.protocol.cfg.min_nodes else None)
        yield  # noqa: unreachable - a generator, as StoreFailover's

    def published(self, names) -> list:
        return []

    def successors(self, infos):
        return ()
        yield  # noqa: unreachable - a generator, as StoreFailover's


class StoreFailover(OneStore):
    """`store_failover`: the fence, the seating that keeps the last round's members in, and the
    successors that come with every assignment."""
    seats_every_joiner = True          # the closer counts every joiner, and `seat` picks

    def first_round(self, node, first: int) -> int:
        """A failover's fresh store goes on from the round after the members' last one."""
        return node.last + 1 if node.last >= 0 else first

    def alone_limit(self, node) -> float | None:
        """A member that failed over waits `failover_timeout` on a store where no round has
        closed with ranks before it asks whether anyone else came (`alone`)."""
        return self.protocol.cfg.failover_timeout if node.last >= 0 else None

    def alone(self, rnd: int):
        """Nobody else failed over to this store (no `members` key): end the round as
        `no_quorum`, so the fence sends it on through the cycle, back home at its end. Otherwise
        a member cut off alone would serve a store of its own and wait there for good."""
        p = self.protocol
        if not (yield Check((p.prefix + "members",))):
            joined = yield Add(p._k(rnd, "seq"), 0)
            yield Emit(Event.NO_QUORUM, round=rnd, detail={"members": joined})
            yield from p.end_round_at(rnd, Event.NO_QUORUM)
            raise RendezvousFailed(f"round {rnd}: nobody else failed over to this store",
                                   why=ExitReason.NO_QUORUM)

    def admit(self, rnd: int, infos: dict):
        p = self.protocol
        crowded = len(infos) > p.cfg.max_nodes     # read the last members first, to seat
        last = (yield from self.last_members(rnd)) if crowded else None
        if crowded:
            infos = self.seat(infos, last)
        if len(infos) < p.cfg.min_nodes:
            return infos, "too_few_members"
        if not crowded:
            last = yield from self.last_members(rnd)
        if self.quorate(infos.values(), last):
            return infos, None
        yield Emit(Event.NO_QUORUM, round=rnd, detail={"members": len(infos)})
        return infos, ExitReason.NO_QUORUM

    def last_members(self, rnd: int):
        """The members of the last round that closed with ranks on this store (`P/members`,
        by name: a restarted host counts), or None where it has none (a failover's fresh
        store) or they are unreadable."""
        key = self.protocol.prefix + "members"
        if (yield Check((key,))):
            try:
                return set(ranking.decode_order((yield Get(key)), 1 << 20))
            except BadValue as e:
                yield Emit(Event.BAD_VALUE, round=rnd, detail={"key": "members", "reason": str(e)})
        return None

    def seat(self, infos: dict, last: set | None) -> dict:
        """More joiners than seats: the last round's members first (`last`, or on a fresh store
        the joiners that remember the latest round), then the others, each in slot order.
        Seating the first max_nodes joiners let newcomers (waiters, spares) crowd those members
        out of every round, which then failed the fence: a job that never re-formed, with no
        fault at all."""
        if last is None:
            r = max(i.last for i in infos.values())
            last = {i.name for i in infos.values() if r >= 0 and i.last == r}
        first = sorted(infos, key=lambda i: (infos[i].name not in last, i))[:self.protocol.cfg.max_nodes]
        return {i: infos[i] for i in sorted(first)}

    @staticmethod
    def quorate(infos, last: set | None) -> bool:
        """The fence: more than half of the members of the last round that closed with ranks
        joined this one; by name where this store has that round (`last`), else by what the
        joiners remember (a failover's fresh store)."""
        if last is not None:
            return 2 * len(last & {i.name for i in infos}) > len(last)
        return has_quorum(infos)

    def published(self, names) -> list:
        """The next round's fence."""
        return [(self.protocol.prefix + "members", ranking.encode_order(sorted(names)))]

    def successors(self, infos):
        """Who hosts the store after a failover, in turn: the members in HRW order for the run's
        store, but those on the store's own address (it may be the one that died), each on the
        store's port."""
        addr, port = yield StoreAddress()
        by_name = {i.name: i for i in infos if i.addr != addr}
        order = (Placement(list(by_name), seed=0).rank_order(f"{self.protocol.cfg.run_id}/store")
                 if by_name else [])
        return tuple((n, by_name[n].addr, port) for n in order[:SUCCESSORS])


class AgentFailover(AgentOneStore):
    """The agent's side of `store_failover` (`protocols/stores.py`): the last round it was
    assigned in, the store it was assigned on (`home`), how many stores of that round's cycle
    it has tried; a lost store (or rounds that never reach a majority) sends it through the
    cycle: the round's successors, then home."""
    survives_store_loss = True

    def __init__(self, protocol):
        super().__init__()
        self.protocol = protocol
        self.fence_timeout = protocol.cfg.failover_timeout
        self.home: tuple | None = None
        self.tried = 0

    def can_move(self, last) -> bool:
        return last is not None

    def joined(self, result):
        self.remember(result, (yield StoreAddress()))

    def exited(self, last):
        new = last is not None and last is not self.last
        self.remember(last, (yield StoreAddress()) if new else None)

    def remember(self, result, home=None) -> None:
        if result is not None and result is not self.last:
            self.last, self.tried = result, 0
            self.home = home or self.home

    def forget(self) -> None:
        self.last, self.tried = None, 0

    def move(self, node):
        """Fail over to the next store of the cycle (`fail_over`); whether one answered."""
        k = yield from fail_over(self.protocol, node, self.last, self.tried, self.home)
        if k is not None:
            self.tried = k
        return k is not None


def fail_over(protocol, node, last, tried: int, home=None):
    """The store is lost (or its rounds never reach a majority): move to the next store in the
    cycle `last` elected, its successors and then `home` (the store it was assigned on: its
    (addr, port)); a successor's host starts its store, the others connect. Returns the epoch
    now in use (how many moves since `last`), or None when no store in the cycle answers. Every
    member of `last` walks the same cycle, so no two stores serve one epoch; the fence
    (`has_quorum`) keeps a wrong turn safe."""
    if last is None or not last.successors:
        return None
    cycle = list(last.successors) + ([("", *home)] if home is not None else [])
    timeout = protocol.cfg.failover_timeout
    for k in range(tried + 1, tried + 1 + len(cycle)):
        name, addr, port = cycle[(k - 1) % len(cycle)]
        yield Emit(Event.STORE_FAILOVER, round=last.round,
                   detail={"epoch": k, "store": name or f"{addr}:{port}", "serve": name == node.name})
        try:
            yield UseStore(addr, port, serve=name == node.name, timeout=timeout)
            return k
        except (StoreError, StoreTimeout) as e:
            yield Emit(Event.STORE_FAILOVER_FAILED, round=last.round, detail={"epoch": k, "reason": str(e)})
    return None
