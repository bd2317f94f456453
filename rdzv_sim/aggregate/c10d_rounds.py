"""`C10dRounds`: torchrun's c10d rendezvous as a round model, driving `C10dRace`.

Every agent that leaves a round calls next_rendezvous (the exit op, then the join op) on the one
blob, and the round forms when the race marks it complete and each member has read so. Members
start their workers once all have (their process-group init is a barrier); a node added to the
wait list while a round runs makes the members leave at their next monitor tick after their
1 s cache lets them see it.
"""
from __future__ import annotations

import math

import numpy as np

from ..protocols.base import digest
from ..protocols.c10d.protocol import CACHE_DURATION
from ..protocols.c10d.state import addr_of, desc
from ..reasons import ExitReason
from .c10d_race import C10dRace, Said
from .round_model import Formed, RoundModel
from ..events import Event


class C10dRounds(RoundModel):
    def __init__(self, job):
        super().__init__(job)
        self.ix = {h: i for i, h in enumerate(job.hosts)}
        self.lat_arr = np.array([job.lat[h] for h in job.hosts])
        self.rng = np.random.default_rng(np.random.SeedSequence([job.sc.seed, 10]))
        self.race = self._new_race()
        self.started: dict[str, float] = {}     # host -> when its rendezvous started
        self.forming: dict[str, tuple] = {}     # host -> (t, rank, nnodes) confirmed, not yet running
        self.expected: set[str] = set()         # the completed round's live members
        self.doomed = False                     # a member died before the workers started
        self.ops_mark = (0, 0)
        self.wake_gen = 0
        self._told = {Said.JOIN: self._on_join, Said.COMPLETE: self._on_complete,
                      Said.CONFIRMED: self._on_confirmed, Said.WAITING: self._on_waiting,
                      Said.TIMEOUT: self._on_timeout, Said.CLOSED: self._on_closed}

    def _new_race(self) -> C10dRace:
        job = self.job
        sc = job.sc
        descs = [desc(job.nodes[h].info.addr, 1000 + job.nodes[h].incarnation) for h in job.hosts]
        return C10dRace(descs, self.lat_arr, job.protocol.s, sc.protocol.join_timeout,
                        sc.store, sc.cluster.cpu.base, sc.cluster.cpu.per_byte, self.rng)

    def counter(self) -> C10dRace:
        return self.race

    # --- driving the race -----------------------------------------------------------------
    def _wake(self) -> None:
        self.wake_gen += 1
        gen, t = self.wake_gen, self.race.next_time()
        if t < math.inf:
            self.job.at(t, lambda: self._advance() if gen == self.wake_gen else None)

    def _advance(self) -> None:
        self._catch_up()
        self._wake()

    def _catch_up(self) -> None:
        """The race run to now, what it says handled (before anything outside changes it)."""
        told = self._told
        for t, i, what, d in self.race.advance(self.job.env.now):
            told[what](t, self.job.hosts[i], d)

    # --- what the job says ------------------------------------------------------------------
    def enter(self, names: list[str], times: list[float]) -> None:
        job = self.job
        for name, t in zip(names, times):
            self._catch_up()
            node, i = job.nodes[name], self.ix[name]
            want = desc(node.info.addr, 1000 + node.incarnation)
            if self.race.desc[i] != want:
                self.race.rename(i, want)
            self.started[name] = t
            job.trace.record(t, name, Event.RENDEZVOUS_START, detail={"restarts": int(job.restarts[job.host.code[name]])})
            self.race.enter(i, t)
        self._wake()

    def gone(self, name: str, t: float) -> None:
        self._catch_up()
        self.race.kill(self.ix[name], t)
        self.started.pop(name, None)
        self.forming.pop(name, None)
        if name in self.expected:
            self.expected.discard(name)
            self.doomed = True
            self._maybe_run()
        self._wake()

    def reset(self) -> None:
        self.race = self._new_race()
        self.started, self.forming, self.expected, self.doomed = {}, {}, set(), False
        self.ops_mark = (0, 0)
        self._wake()

    # --- what the race says -----------------------------------------------------------------
    def _on_join(self, t: float, name: str, d: dict) -> None:
        self.job.trace.record(t, name, Event.JOIN, d["round"], detail={"slot": d["slot"]})

    def _on_complete(self, t: float, name: str, d: dict) -> None:
        job, index = self.job, self.race.index
        self.expected = {job.hosts[index[m]] for m in d["members"]
                         if m in index and job.nodes[job.hosts[index[m]]].alive}
        self.forming, self.doomed = {}, len(self.expected) < len(d["members"])
        job.round = d["round"]

    def _on_confirmed(self, t: float, name: str, d: dict) -> None:
        self.job.trace.record(t, name, Event.CONFIRMED, d["round"], d["rank"],
                              detail={"cas_attempts": d["cas"]})
        self.forming[name] = (t, d["rank"], d["nnodes"])
        self._maybe_run()

    def _on_waiting(self, t: float, name: str, d: dict) -> None:
        self.job.nodes_waiting(t + CACHE_DURATION + 2 * self.job.lat[name])

    def _on_timeout(self, t: float, name: str, d: dict) -> None:
        self.started.pop(name, None)
        self.job.gave_up(t, [name], ExitReason.RENDEZVOUS_TIMEOUT, "the join timeout passed")

    def _on_closed(self, t: float, name: str, d: dict) -> None:
        self.started.pop(name, None)
        self.job.gave_up(t, [name], ExitReason.RENDEZVOUS_CLOSED, "the rendezvous is closed")

    def _maybe_run(self) -> None:
        """Every live member of the completed round has read that it is complete: the round
        formed."""
        if not self.expected or any(n not in self.forming for n in self.expected):
            return
        names = sorted(self.expected, key=lambda n: self.forming[n][1])
        parts = self.race.st.participants
        ranked = sorted(parts, key=parts.__getitem__)
        rank0 = names[0]
        times = [float(self.forming[n][0]) for n in names]
        f = Formed(self.job.round, names, [self.forming[n][1] for n in names], times,
                   [self.started.get(n, tk) for n, tk in zip(names, times)],
                   self.forming[rank0][2], rank0, self.forming[rank0][0],
                   sorted(addr_of(x) for x in ranked), addr_of(ranked[0]) if ranked else "",
                   digest(ranked), self.ops_mark, self.doomed)
        self.ops_mark = (self.race.ops, self.race.bytes)
        self.expected, self.forming = set(), {}
        for n in names:
            self.started.pop(n, None)
        self.job.formed(f)
        if self.race.st.wait_list:
            self._on_waiting(max(times), names[0], {})


