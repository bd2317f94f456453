"""A simulated host: its agent process, liveness, local signals and clock."""
from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from ..protocols.base import NodeInfo


@dataclass
class SimNode:
    info: NodeInfo
    rack: str | None = None
    process: simpy.Process | None = None
    alive: bool = False
    paused: int = 0                      # nesting depth of SIGSTOPs in force
    resumed: simpy.Event | None = None
    clock_skew: float = 0.0
    rounds: dict | None = None           # shared index: round -> names of the nodes running it
    ctx_round: int | None = None         # the round its store traffic counts toward
    conn_last: float = 0.0               # last request arrival: one TCP connection keeps order
    store: object = None                 # the store it uses after a failover (None: the job's)
    incarnation: int = 0
    failures: int = 0                    # crashes so far (the scheduler drains repeat offenders)
    started_at: float = 0.0              # when its agent last started (a spare of worlds formed after)
    slowdown: float = 1.0                # a straggler's steps take this many times longer
    warm: int = -1                       # incarnation whose code paths are warm (cold_start paid)
    pending: set = field(default_factory=set)       # signals that came while nobody waited
    waiters: dict = field(default_factory=dict)     # signal name -> simpy.Event
    branches: list = field(default_factory=list)    # FirstOf branch processes in flight
    cancels: list = field(default_factory=list)     # cancel() of FirstOf read branches in flight

    def __post_init__(self):
        self.name = self.info.name           # read on every operation: a plain attribute
        self._round = None

    @property
    def running_round(self) -> int | None:
        """The round whose workers run here (None: no workers)."""
        return self._round

    @running_round.setter
    def running_round(self, rnd: int | None) -> None:
        if rnd == self._round:
            return
        if self.rounds is not None:
            if self._round is not None:
                members = self.rounds.get(self._round)
                if members is not None:
                    members.discard(self.name)
                    if not members:
                        del self.rounds[self._round]
            if rnd is not None:
                self.rounds.setdefault(rnd, set()).add(self.name)
        self._round = rnd

    def signal_event(self, env: simpy.Environment, name: str) -> simpy.Event:
        if name in self.pending:
            self.pending.discard(name)
            return env.event().succeed()
        ev = self.waiters.get(name)
        if ev is None:
            ev = self.waiters[name] = env.event()
        return ev

    def signal(self, name: str) -> None:
        ev = self.waiters.pop(name, None)
        if ev is not None and not ev.triggered:
            ev.succeed()
        else:
            self.pending.add(name)
