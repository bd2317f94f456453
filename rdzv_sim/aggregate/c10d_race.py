"""torchrun's c10d rendezvous in aggregate: the one blob's compare-and-set race, a write at a time.

Every agent has at most one request at the store (a compare-and-set, or the read before one),
and the store serves them first in, first out. A step finds the next write: the pending
requests are served in arrival order (Lindley's recursion over numpy arrays, as `queue.Fifo`),
each one that carries an old token fails and comes back after the client's time (reply,
decode, decide, encode, request), and the first request that carries the current token wins.
That is the per-operation model's race attempt for attempt, for one numpy pass per write
instead of a few SimPy events per attempt: a storm of N agents costs O(N) writes, not O(N^2)
attempts. The decisions are torch's (`protocols/c10d/decisions.py`) on the one current state:
an attempt wins only if the state has not changed since its agent decided.

What it leaves to averages (the per-operation model makes them requests): the once-a-second
reads of agents that wait and of running members, and the background heartbeats, as a load
that stretches the store's service; a node's latency without jitter. Its agreement with the
per-operation model is in reports/c10d_aggregate.md.
"""
from __future__ import annotations

import heapq
import math
from enum import Enum

import numpy as np

from ..protocols.c10d import decisions as D
from ..protocols.c10d.protocol import CACHE_DURATION, CLOSE_TIMEOUT, ROUND0_DELAY, SYNC_DELAY
from ..protocols.c10d.state import State, blob_size
from .c10d_calm import Calm
from .cas_queue import Write, next_write

A = D.Action
WRITES = frozenset({A.KEEP_ALIVE, A.ADD_TO_PARTICIPANTS, A.ADD_TO_WAIT_LIST, A.ADD_TO_REDUNDANCY_LIST,
                    A.REMOVE_FROM_PARTICIPANTS, A.REMOVE_FROM_WAIT_LIST,
                    A.REMOVE_FROM_REDUNDANCY_LIST, A.MARK_RENDEZVOUS_COMPLETE, A.MARK_RENDEZVOUS_CLOSED})
CAS, GET = 0, 1
EXIT, JOIN, CLOSE = 1, 2, 3            # the op an agent runs (torch's _Rendezvous{Exit,Join,Close}Op)
INF = math.inf


class Said(str, Enum):
    """What the race tells its round model happened to an agent."""
    __str__ = str.__str__                # its value, as text (f-strings, logs)
    __format__ = str.__format__
    JOIN = "join"                  # {round, slot}
    CONFIRMED = "confirmed"        # {round, rank, nnodes, cas}
    WAITING = "waiting"
    TIMEOUT = "timeout"
    CLOSED = "closed"
    COMPLETE = "complete"          # {round, members}


class C10dRace:
    """The agents of one job and the store's blob. `enter`, `kill` and `advance` drive it; what
    happened comes back from `advance` as (time, agent, `Said`, detail) tuples."""

    def __init__(self, descs: list[str], lat: np.ndarray, s: D.Settings, join_timeout: float,
                 store, cpu_base: float,
                 cpu_per_byte: float, rng: np.random.Generator, key_len: int = 30,
                 wall_epoch: float = 1.7e9):
        n = len(descs)
        self.desc, self.lat = descs, np.asarray(lat, dtype=float)
        self.index = {d: i for i, d in enumerate(descs)}
        self.s, self.join_timeout, self.rng, self.epoch0 = s, join_timeout, rng, wall_epoch
        self.service = store.service              # the scenario's store section: its service model
        self.sb, self.cb, self.cpb = store.service_base, cpu_base, cpu_per_byte
        self.addr_len = max(len(d.rsplit("_", 2)[0]) for d in descs)
        self.key_len = key_len                    # the blob's key, sent with every request
        self.st, self.v = State(), 0
        self.free_at = 0.0
        self.pend_t = np.full(n, INF)             # arrival of each agent's pending request
        self.pend_tok = np.zeros(n, dtype=np.int64)
        self.pend_kind = np.zeros(n, dtype=np.int8)
        self.op = [0] * n                         # EXIT, JOIN, or 0 (not in a rendezvous)
        self.deadline = [INF] * n
        self.last_sync = [-INF] * n
        self.seen_round = [0] * n
        self.hb_start = [0.0] * n                 # its background heartbeat's first beat
        self.period = (s.keep_alive_interval + CACHE_DURATION + 2 * self.lat + store.service_base).tolist()
        self.made = [False] * n
        self.alive = [False] * n
        self.cas = np.zeros(n, dtype=np.int64)    # attempts since the rendezvous started
        self.leaving = np.zeros(n, dtype=bool)    # pending agents whose next reply ends their race
        self.idle: set[int] = set()
        self.running = [False] * n                # members polling num_nodes_waiting
        self.n_running = self.n_alive = 0
        self.gen = [0] * n                        # an idle agent's wake-ups of an earlier wait are void
        self.timers: list = []                    # (time, seq, kind, agent, gen)
        self.seq = 0
        self.dead: dict[str, float] = {}          # crashed descriptor -> wall time its beats stopped
        self.attempts = self.ops = self.bytes = 0
        self.last_win, self.read_ops = 0.0, 0.0
        self.now = 0.0
        self._plan = None
        self.out: list = []
        self.calm = Calm(self)

    # --- sizes and costs ------------------------------------------------------------------
    def size(self) -> int:
        st = self.st
        return blob_size(len(st.participants), len(st.wait_list) + len(st.redundancy_list), self.addr_len)

    def wall(self, t: float) -> float:
        return self.epoch0 + t

    def _stretch(self, size: int) -> float:
        """Service stretched by the reads and heartbeats the race does not step (M/M/1, as the
        per-operation store does for its background load)."""
        read = self.service(size + self.key_len)
        rho = (len(self.idle) + self.n_running) * read / SYNC_DELAY
        rho += self.n_alive * read / (self.s.keep_alive_interval + CACHE_DURATION)
        return 1.0 / (1.0 - min(rho, 0.95))

    # --- the agents' side ---------------------------------------------------------------
    def enter(self, i: int, t: float) -> None:
        """Agent `i` calls next_rendezvous at `t`: the exit op, then the join op."""
        self.n_alive += not self.alive[i]
        self.alive[i] = True
        self._forget(i)
        self.op[i], self.cas[i] = EXIT, 0
        delay = ROUND0_DELAY * float(self.rng.random()) if self.seen_round[i] == 0 else 0.0
        arrive = t + delay + self.lat[i]
        if not self.made[i]:                      # the backend's sentinel compare-and-set
            self.made[i] = True
            self.ops += 1
            self.bytes += self.key_len + 24
            arrive += 2 * self.lat[i] + self.sb
        self.deadline[i] = t + delay + self.join_timeout
        self.hb_start[i] = t + delay
        self._request(i, arrive, GET)
        self._timer(self.deadline[i] + 1e-6, "deadline", i)
        self.calm.progress(t)

    def kill(self, i: int, t: float) -> None:
        """Agent `i` is gone (its host crashed, or it stopped): no more requests, no more beats."""
        if not self.alive[i]:
            return
        self.alive[i] = False
        self.n_alive -= 1
        self._forget(i)
        self.op[i] = 0
        self.pend_t[i] = INF
        if self._plan is not None and (i == self._plan.winner or i in self._plan.served):
            self._plan = None
        d = self.desc[i]
        self.calm.progress(t)
        self.dead[d] = self.wall(t)
        self._timer(t + self.s.keep_alive_interval * self.s.keep_alive_max_attempt + 1e-6, "expire", i)

    def _forget(self, i: int) -> None:
        """What agent i was doing ends: running, waiting, racing to leave, its timers."""
        if self.running[i]:
            self.running[i] = False
            self.n_running -= 1
        self.gen[i] += 1
        self.idle.discard(i)
        self.leaving[i] = False

    def rename(self, i: int, desc: str) -> None:
        """Agent `i`'s host started a new agent process: a new descriptor, a new backend."""
        self.index.pop(self.desc[i], None)
        self.desc[i], self.made[i], self.seen_round[i] = desc, False, 0
        self.index[desc] = i

    def _request(self, i: int, t: float, kind: int) -> None:
        self.pend_t[i], self.pend_tok[i], self.pend_kind[i] = t, self.v, kind
        if self._plan is not None and t < self._plan.arrival:   # it can come first: plan again
            self._plan = None

    def _timer(self, t: float, kind: str, i: int) -> None:
        self.seq += 1
        heapq.heappush(self.timers, (t, self.seq, kind, i, self.gen[i]))

    def _tick(self, i: int, t: float) -> float:
        """The first of agent i's once-a-second reads at or after `t`."""
        ls = self.last_sync[i]
        k = max(1, math.ceil((t - ls) / SYNC_DELAY))
        return ls + k * SYNC_DELAY + 1e-6

    def _decide(self, i: int, t: float, op: int | None = None):
        st, d, op = self.st, self.desc[i], self.op[i] if op is None else op
        if op == EXIT:
            return D.exit_(st, d, t, self.deadline[i])
        if op == CLOSE:
            return D.close(st, t, self.deadline[i])
        beat = self._beat(i, t) if st.complete and d in st.last_heartbeats else None
        return D.join(st, d, self.s, t, self.deadline[i], self.wall(t), beat)

    def _would_write(self, i: int, t: float) -> bool:
        act = self._decide(i, t)
        if act is A.FINISH and self.op[i] == EXIT:
            act = self._decide(i, t, JOIN)
        return act in WRITES

    def _beat(self, i: int, t: float) -> float:
        """The wall time of i's latest background heartbeat (torch's keep-alive timer, which
        beats every keep-alive interval plus its 1 s read and a write's round trip)."""
        period, t0 = self.period[i], self.hb_start[i]
        return self.epoch0 + t0 + ((t - t0) // period if t > t0 else 0.0) * period

    def _after_reply(self, i: int, t_served: float, size: int) -> None:
        """Agent i got the state (a read, a failed or a won attempt) served at `t_served`: it
        decides, and either races again, waits, or is done."""
        t = t_served + self.lat[i] + self.cb + self.cpb * size
        self.last_sync[i] = t
        self.seen_round[i] = self.st.round
        while True:
            act = self._decide(i, t)
            if act is A.FINISH and self.op[i] == EXIT:
                self.op[i] = JOIN
                self.out.append((t, i, Said.JOIN, {"round": self.st.round, "slot": len(self.st.participants) + 1}))
                continue
            if act is A.ERROR_TIMEOUT and self.op[i] != CLOSE:
                # torch's launcher shuts the handler down: the close op, which ends the
                # rendezvous for every agent of the job
                self.calm.progress(t)
                self.out.append((t, i, Said.TIMEOUT, {}))
                self.op[i], self.deadline[i] = CLOSE, t + CLOSE_TIMEOUT
                continue
            break
        self.pend_t[i] = INF
        if act in WRITES:
            self._request(i, t + self.cb + self.cpb * size + self.lat[i], CAS)
            if act is A.KEEP_ALIVE and self.st.complete:    # its background beat may come first
                self._timer(self._beat(i, t) - self.epoch0 + self.period[i] + 1e-6, "recheck", i)
        elif act is A.FINISH and self.op[i] != CLOSE:
            self.calm.progress(t)
            st = self.st
            self.op[i] = 0
            self.running[i] = True
            self.n_running += 1
            self.out.append((t, i, Said.CONFIRMED, {"round": st.round, "rank": st.participants[self.desc[i]],
                                                  "nnodes": len(st.participants), "cas": int(self.cas[i])}))
        elif act is A.SYNC:
            self._wait(i, t)
        else:                                     # closed, or its close op done: gone
            self.calm.progress(t)
            if self.op[i] != CLOSE:
                self.out.append((t, i, Said.CLOSED, {}))
            self.op[i] = 0
            self.alive[i] = False
            self.n_alive -= 1

    def _wait(self, i: int, t: float) -> None:
        """SYNC: sleep until something can change i's decision, then read at its next tick."""
        self.idle.add(i)
        self.gen[i] += 1
        st, d = self.st, self.desc[i]
        beat = self._beat(i, t) if st.complete else None     # late in each of its periods
        due = [w - self.epoch0 for w in D.flips(st, d, self.s, beat)]
        self._timer(self._tick(i, max(min([self.deadline[i], *due]), t)), "read", i)

    def _wake_all(self, t: float) -> None:
        """The blob changed in a way that can change waiting agents' decisions: one whose
        decision changed reads at its next tick (as a request: it acts on it); the others
        wait again for what can change theirs (their once-a-second reads are `_stretch`'s)."""
        for i in list(self.idle):
            if self._decide(i, t) is A.SYNC:
                self._wait(i, t)
            else:
                self.gen[i] += 1
                self._timer(self._tick(i, t), "read", i)

    # --- the store's side ---------------------------------------------------------------
    def _epoch(self):
        st = self.st
        return (st.round, st.complete, st.closed, len(st.participants) >= self.s.max_nodes,
                st.deadline is None)

    def _step(self) -> Write:
        """The next write (`cas_queue.next_write`), planned once until something changes it."""
        if self._plan is not None:
            return self._plan
        size = self.size()
        stretch = self._stretch(size)
        retry = 2 * self.lat + 2 * self.cb + self.cpb * 2 * size
        retry[self.leaving] = INF
        w = next_write(self.pend_t, self.pend_tok, self.pend_kind == GET, retry, self.v, self.free_at,
                       self.service(self.key_len + 2 * size) * stretch,
                       self.service(self.key_len + size) * stretch,
                       lambda i, d: self._would_write(i, d + self.lat[i] + self.cb + self.cpb * size))
        self._plan = w
        return w

    def _commit(self) -> None:
        w = self._plan
        a_star, w_i, w_t, served, dep = w.arrival, w.winner, w.at, w.served, w.departures
        self._plan = None
        size = self.size()
        kinds = self.pend_kind[served]
        n_cas = int(np.sum(kinds == CAS))
        self.attempts += n_cas
        self.ops += len(served)
        self.bytes += n_cas * (self.key_len + 2 * size) + (len(served) - n_cas) * (self.key_len + size)
        retried = None                            # the winner's own request, if it failed first
        np.add.at(self.cas, served[kinds == CAS], 1)
        if w_i < 0:
            self.free_at = max(self.free_at, w_t)
            for j, d_j in zip(served.tolist(), dep.tolist()):
                self.leaving[j] = False
                self._after_reply(j, d_j, size)
            return
        special = (kinds == GET) | self.leaving[served]
        me = served == w_i
        if me.any():
            retried = float(dep[me][0])
        plain = ~special & ~me                    # they decide the same again: race on
        ps = served[plain]
        self.pend_t[ps] = dep[plain] + 2 * self.lat[ps] + 2 * self.cb + 2 * self.cpb * size
        self.pend_tok[ps] = self.v
        for j, d_j in zip(served[special & ~me].tolist(), dep[special & ~me].tolist()):
            self.leaving[j] = False
            self._after_reply(j, d_j, size)
        if retried is not None:                   # it decided on this very state
            t_dec = retried + self.lat[w_i] + self.cb + self.cpb * size
            self.leaving[w_i] = False
        else:
            t_dec = a_star - self.lat[w_i] - self.cb - self.cpb * size
        act = None if self.leaving[w_i] else self._decide(w_i, t_dec)
        if act not in WRITES:                     # it does not write after all: no win
            self.leaving[w_i] = False
            self.free_at = max(self.free_at, float(dep[-1]) if len(dep) else self.free_at)
            self._after_reply(w_i, retried if retried is not None else a_star, size)
            return
        self.free_at = w_t
        self._polls(w_t, size)
        self.attempts += 1
        self.ops += 1
        self.cas[w_i] += 1
        self.bytes += self.key_len + 2 * size
        before = self._epoch()
        self._expire_now(w_t)
        D.apply(act, self.st, self.desc[w_i], self.s, self.wall(t_dec))
        self.v += 1
        if act is A.ADD_TO_WAIT_LIST:
            self.out.append((w_t, w_i, Said.WAITING, {}))
        if self.st.complete and not before[1]:
            self.out.append((w_t, w_i, Said.COMPLETE, {"round": self.st.round,
                                                      "members": list(self.st.participants)}))
        if act is A.KEEP_ALIVE:
            self.calm.wrote(w_t)
        else:
            self.calm.progress(w_t)
        self._after_reply(w_i, w_t, self.size())
        if self._epoch() != before:
            self._rethink(w_t)

    def _polls(self, t: float, size: int) -> None:
        """The reads the race does not step: a waiting agent, and a running member, reads the
        blob once a second while it changes (counted as requests; their time is `_stretch`)."""
        k = (len(self.idle) + self.n_running) * min(t - self.last_win, SYNC_DELAY) / SYNC_DELAY
        self.last_win = t
        self.read_ops += k
        self.ops += int(self.read_ops)
        self.bytes += int(self.read_ops) * (self.key_len + size)
        self.read_ops -= int(self.read_ops)

    def _rethink(self, t: float) -> None:
        """The state changed in kind: racing agents decide again at their next reply, waiting
        ones at their next tick."""
        self._wake_all(t)
        for j in np.flatnonzero((self.pend_t < INF) & (self.pend_kind == CAS)).tolist():
            if self._decide(j, t) not in WRITES:
                self.leaving[j] = True
        self._plan = None

    def _expire_now(self, t: float) -> None:
        """Dead nodes whose heartbeats expired leave the state (as the next write would say)."""
        if not self.dead:
            return
        limit = self.wall(t) - self.s.keep_alive_interval * self.s.keep_alive_max_attempt
        gone = [d for d, beat in self.dead.items() if beat < limit and d in self.st.last_heartbeats]
        if gone:
            D.remove_dead(self.st, gone, self.s)
            for d in gone:
                del self.dead[d]

    # --- time -----------------------------------------------------------------------------
    def next_time(self) -> float:
        """When the next write is served (what the race says comes only from writes): the
        timers due before the winning request arrives are run first, as they can change it."""
        to = self.calm.until(self.now)
        if to is not None:                        # a stalled race: carried forward to `to`
            return to
        while True:
            w = self._step()
            a_star, w_t = w.arrival, w.at
            tt = self.timers[0][0] if self.timers else INF
            if a_star == INF:
                return min(tt, w_t)
            if tt > a_star:
                return w_t
            self._fire_until(a_star)

    def advance(self, until: float) -> list:
        """Run everything due by `until`; returns what happened (and forgets it)."""
        to = self.calm.until(self.now)
        if to is not None and until > self.now:
            to = min(to, until)
            self.calm.carry(self.now, to)
            self.now = to
        while True:
            w = self._step()
            a_star, w_t = w.arrival, w.at
            tt = self.timers[0][0] if self.timers else INF
            if tt <= min(until, a_star):
                self._fire_until(min(until, a_star))
            elif w_t <= until:
                self._commit()
            elif tt <= until:
                self._fire_until(min(until, w_t))
            else:
                break
        self.now = max(self.now, until)
        out, self.out = self.out, []
        return out

    def _fire_until(self, t_max: float) -> None:
        """The timers due by `t_max`, together (one plan after them, not one each)."""
        while self.timers and self.timers[0][0] <= t_max:
            t, _, kind, i, gen = heapq.heappop(self.timers)
            self._fire(t, kind, i, gen)

    def _fire(self, t: float, kind: str, i: int, gen: int) -> None:
        if kind == "expire":
            self.calm.progress(t)
            before = self._epoch()
            self._expire_now(t)
            if self._epoch() != before:
                self._rethink(t)
            else:
                self._wake_all(t)
            return
        if gen != self.gen[i] or not self.alive[i]:
            return
        if kind == "read" and i in self.idle:
            self.idle.discard(i)
            self._request(i, t + self.lat[i], GET)
        elif kind in ("recheck", "deadline") and self.op[i] and self.pend_t[i] < INF and self.pend_kind[i] == CAS:
            if self._decide(i, t) not in WRITES:
                self.leaving[i] = True
                self._plan = None
