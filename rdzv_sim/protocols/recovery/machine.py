"""Recovery in place as one sans-IO machine: the facts of a running world in, decisions out.

Both fidelities drive it (per operation `sim/in_place.py`, the aggregate `aggregate/cell.py`):
they tell it what happened and when (a world's workers start, its process groups are up, a
member faults, its round is due to end, a deadline comes), and do what it answers. Nothing
else decides when a fault counts, when the survivors act on it, who is a spare, or what the
new world is. It keeps no clock and records nothing: every fact carries its time, and the
driver records what it is told (`sim/in_place.record`). The rules it applies are `rules.py`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ...reasons import Reason
from . import rules
from .rules import Fault, Mode, Plan


# --- the decisions -------------------------------------------------------------------------
@dataclass(frozen=True)
class InJob:
    """The world does not train (it has not formed, its workers start, or it restarts in
    place): the fault is the in-job path's, each agent's own failure."""


@dataclass(frozen=True)
class Ignore:
    """The world's round ends before its survivors would act on the fault: nothing to do."""


@dataclass(frozen=True)
class Wait:
    """The fault is gathered; the survivors act on what was gathered at `at` (call `due`).
    `new`: whether `at` is a deadline the driver has not been told of yet."""
    at: float
    new: bool


@dataclass(frozen=True)
class Absorb:
    """The world goes on in place: `old` (the live members, in rank order) leave their round
    for `why`; `new` is the new world in rank order; `left_out` rendezvous again; `taken` are
    spares that join it."""
    plan: Plan
    fault: Fault
    why: Reason
    old: tuple
    new: tuple
    left_out: tuple
    taken: tuple


@dataclass(frozen=True)
class FallBack:
    """The mode does not absorb it (`plan.why`): the job restarts in job; `failed` are the
    members whose workers raised (their reason is theirs), the others' is `why`."""
    plan: Plan
    fault: Fault
    why: Reason
    failed: frozenset


@dataclass(frozen=True)
class Over:
    """No member of the world is left to act on its faults: its round simply ends."""
    why: Reason


Decision = InJob | Ignore | Wait | Absorb | FallBack | Over


# --- a running world -------------------------------------------------------------------------
@dataclass
class World:
    """A running world: a store round's, or one a recovery in place made in its place."""
    size: int                                   # its members, known before every one starts
    formed: float                               # its store round's first rank given (the spare cut)
    ranks: dict = field(default_factory=dict)   # member -> rank
    trains_at: float | None = None              # when it trains (None: not yet known)
    ready: set = field(default_factory=set)     # members whose process groups are up
    iteration: int = 0                          # recoveries in place since its store round
    faults: list = field(default_factory=list)  # [(Fault, member)] gathered, not yet acted on
    due: float | None = None                    # when the survivors act on them
    ends_at: float | None = None                # when its round is due to end, if the driver knows

    def roster(self) -> list:
        """Its members in rank order, the lost ones included."""
        return sorted(self.ranks, key=self.ranks.get)

    def trains(self, t: float) -> bool:
        return self.trains_at is not None and t >= self.trains_at


class Machine:
    """The job's recoveries in place under one recovery mode, world by store round."""

    def __init__(self, cfg, *, min_nodes: int, segment: int = 1):
        self.cfg, self.min_nodes, self.segment = cfg, min_nodes, segment
        self.mode = Mode(cfg.recovery)
        self.worlds: dict[int, World] = {}

    @property
    def on(self) -> bool:
        """Whether the mode recovers in place at all (in_job never does)."""
        return self.mode is not Mode.IN_JOB

    # --- facts: a world forms -------------------------------------------------------------
    def started(self, rnd: int, name: str, rank: int, size: int, t: float) -> None:
        """`name`'s workers start at t in store round `rnd` of `size` members, as rank `rank`.
        The first to start makes the round's world (and ends the worlds before it)."""
        w = self.worlds.get(rnd)
        if w is None:
            w = self.worlds[rnd] = World(size=size, formed=t)
            for old in [k for k in self.worlds if k < rnd]:
                del self.worlds[old]
        w.ranks[name] = rank

    def formed(self, rnd: int, members: Sequence[str], first_rank: float, trains_at: float) -> None:
        """Store round `rnd`'s world, its `members` in rank order, formed at once: its first
        rank given at `first_rank`, every member's workers train from `trains_at`."""
        self.worlds = {k: w for k, w in self.worlds.items() if k > rnd}
        self.worlds[rnd] = World(size=len(members), formed=first_rank, trains_at=trains_at,
                                 ranks={n: i for i, n in enumerate(members)})

    def trains(self, rnd: int, name: str, t: float) -> None:
        """`name`'s process group is up at t: once every member's is, the world trains."""
        w = self.worlds.get(rnd)
        if w is None or w.trains_at is not None:
            return
        w.ready.add(name)
        if len(w.ready) >= w.size:
            w.trains_at = t

    def ending(self, rnd: int, t: float | None) -> None:
        """The world's round is due to end at t (None: a planned end is void). Faults its
        survivors would act on at or after t are void: the round ends first."""
        w = self.worlds.get(rnd)
        if w is None:
            return
        w.ends_at = t
        if t is not None and w.due is not None and w.due >= t:
            w.due, w.faults = None, []

    def ended(self, rnd: int) -> None:
        """The world's round is over: nothing of it is left to recover."""
        self.worlds.pop(rnd, None)

    # --- facts: a fault, a deadline ---------------------------------------------------------
    def fault(self, rnd: int, fault: Fault, name: str, t: float, notice: float) -> Decision:
        """A member of `rnd`'s world faults at t; its peers' collectives fail `notice` later."""
        w = self.worlds.get(rnd)
        if not self.on or w is None or not w.trains(t):
            return InJob()
        at = t + rules.detection(self.cfg, fault, notice)
        if w.ends_at is not None and w.ends_at <= at:
            return Ignore()
        w.faults.append((fault, name))
        if w.due is not None and w.due <= at:
            return Wait(w.due, False)
        w.due = at
        return Wait(at, True)

    def due(self, rnd: int, t: float, live: Iterable[str],
            idle: Iterable[tuple[str, float]] = ()) -> Decision | None:
        """The deadline `t` of `rnd`'s world comes: `live` are its members still in it, `idle`
        the live agents outside it, each with when it started (`rules.is_spare` picks the
        spares). None: the deadline is stale (superseded, or voided by the round's end)."""
        w = self.worlds.get(rnd)
        if w is None or w.due != t:
            return None
        faults, w.faults, w.due = w.faults, [], None
        if not faults:
            return None
        live = set(live)
        roster = w.roster()
        lost = {n for f, n in faults if f is not Fault.WORKERS_FAILED} | {n for n in roster if n not in live}
        failed = {n for f, n in faults if f is Fault.WORKERS_FAILED} - lost
        fault = rules.worst(f for f, _ in faults)
        why = Reason.WORKERS_FAILED if fault is Fault.WORKERS_FAILED else Reason.PEER_FAILED
        old = tuple(n for n in roster if n in live)
        if not old:
            return Over(why)
        spares = [n for n, started in idle if n not in w.ranks and rules.is_spare(started, w.formed)]
        p = rules.plan(self.cfg, fault, roster, lost, failed, spares, min_nodes=self.min_nodes,
                       segment=self.segment, iteration=w.iteration)
        if not p.absorbed:
            return FallBack(p, fault, why, frozenset(failed))
        new = tuple(p.members)
        keep = set(new)
        taken = tuple(n for n in new if n not in w.ranks)
        w.ranks = {n: i for i, n in enumerate(new)}
        w.size, w.ready, w.ends_at = len(new), set(), None
        w.trains_at = t + p.ranked + p.start
        w.iteration += 1
        return Absorb(p, fault, why, old, new, tuple(n for n in old if n not in keep), taken)
