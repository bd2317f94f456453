"""`hrw`'s round model: every joiner's store operations as numpy batches on one FIFO.

It times the requests of hrw's script (`rdzv_sim.protocols.hrw.script`, the one statement of
them, which the per-operation generator is held to), phase by phase, for all joiners at once
(the per-operation runtime interleaves them request by request):
  join     check(P/closed) -> compare_set(round) -> add(seq) -> set(n{slot})  (slots in the
           store's FIFO order)
  watch    every joiner watches `closed` (those below min_nodes also `n{min}`, `P/closed` and
           `end`, then `closed` again once n{min} is written)
  close    the max_nodes-th joiner at once, else the min_nodes-th after last_call_timeout:
           add(seq, 0), compare_set(closed), check(slots), multi_get(descs), multi_set(assigns)
  confirm  each member watches its assignment, add(ack); the last to ack compare_sets `ready`;
           the others' watch on `ready` wakes: their rank is known.
Approximations (their error against the per-operation model is in reports/sim_speed.md): latency
without jitter, a batch is served in arrival order without interleaving the next phase, no
holes (a joiner that crashes between add and set), a watch is one request.
"""
from __future__ import annotations

import math
from bisect import insort
from dataclasses import dataclass

import numpy as np

from ..protocols.base import digest
from ..protocols.hrw.script import (AWAIT_READY, BELOW_MIN, CLOSE, CONFIRM, END, JOIN, READY, WAIT,
                                    nbytes)
from ..reasons import ExitReason
from .queue import Fifo
from .round_model import Formed, RoundModel
from ..events import Event


@dataclass
class Sizes:
    """Request payload bytes (keys and values) of the operations above."""
    key: int = 16
    desc: int = 70
    assign: int = 130


@dataclass
class RoundTiming:
    order: np.ndarray          # joiner indices in slot order (slot = position + 1)
    t_join: np.ndarray         # per joiner: when it knows its slot ("join")
    members: np.ndarray        # joiner indices admitted, in slot order
    late: np.ndarray           # joiner indices beyond the count (they wait for the next round)
    closer: int                # joiner index of the closer
    t_closed: float            # when the round's `closed` key was written
    t_assigned: float          # when the assignments were written
    t_confirm: np.ndarray      # per member (slot order): its ack's reply
    t_ack: np.ndarray          # per member (slot order): its ack sent ("confirmed")
    t_rank: np.ndarray         # per member (slot order): rank known


def hrw_round(fifo: Fifo, start: np.ndarray, lat: np.ndarray, min_nodes: int, max_nodes: int,
              last_call: float, sizes: Sizes = Sizes()) -> RoundTiming | None:
    """Timing of a round that the joiners (rendezvous start times `start`, one-way latencies
    `lat`) form; None if fewer than `min_nodes` joined."""
    start = np.asarray(start, dtype=float)
    lat = np.asarray(lat, dtype=float)
    k = sizes.key

    def size(req, count=1):
        return nbytes(req, k, sizes.desc, sizes.assign, count)
    d2, d3 = _joins(fifo, start, lat, sizes)
    t_join = d2 + lat
    order = np.argsort(d2, kind="stable")
    n = len(order)
    if n < min_nodes:
        return None
    fifo.serve(t_join + lat, size(WAIT[0]))                       # everyone watches `closed`
    early = order[:min_nodes - 1]
    for req in BELOW_MIN:                                      # those below min: n{min} too,
        fifo.serve(t_join[early] + lat[early], size(req))         # P/closed and their round's `end`,
    t_min = d3[order[min_nodes - 1]]                           # and, once it is written,
    fifo.serve(np.maximum(t_min, t_join[early] + lat[early]) + 2 * lat[early], size(WAIT[0]))   # closed again
    if n >= max_nodes and t_join[order[max_nodes - 1]] <= t_join[order[min_nodes - 1]] + last_call:
        closer = int(order[max_nodes - 1])
        t0 = t_join[closer]
    else:
        closer = int(order[min_nodes - 1])
        t0 = t_join[closer] + last_call
    lc = lat[closer]
    add, cas, check, multi_get, multi_set = CLOSE
    t = fifo.one(t0 + lc, size(add)) + lc                         # add(seq, 0): the count
    count = int(min(max_nodes, np.sum(d2 <= t - lc)))
    t_closed = fifo.one(t + lc, size(cas))                        # compare_set(closed)
    members = order[:count]
    late = order[count:]
    ml = lat[members]
    others = members != closer
    # the members' watches on their assignments reach the store as the closer reads the
    # slots (they are served, then parked until the assignments exist)
    watch_a = np.full(count, np.inf)
    watch_a[others] = fifo.serve(t_closed + 2 * ml[others], size(CONFIRM[0]))
    t = t_closed + lc
    t = fifo.one(t + lc, size(check, count)) + lc                 # check(slots)
    t = fifo.one(t + lc, size(multi_get, count)) + lc             # multi_get(descriptors)
    t_assigned = fifo.one(t + lc, size(multi_set, count))         # multi_set(assignments)
    watch_a[~others] = fifo.one(t_assigned + 2 * lc, size(CONFIRM[0]))   # the closer's, after its reply
    got = np.maximum(watch_a, t_assigned) + ml
    t_confirm = fifo.serve(got + ml, size(CONFIRM[1])) + ml       # add(ack)
    last = int(np.argmax(t_confirm))
    rest = np.arange(count) != last
    watch = np.full(count, np.inf)
    watch[rest] = fifo.serve(t_confirm[rest] + ml[rest], size(AWAIT_READY[0]))   # watch `ready` (parked)
    t_ready = fifo.one(t_confirm[last] + ml[last], size(READY[0]))   # compare_set(ready, "", "ok")
    watch[last] = fifo.one(t_ready + 2 * ml[last], size(AWAIT_READY[0]))   # its watch, after the CAS reply
    t_rank = np.maximum(watch, t_ready) + ml
    return RoundTiming(order, t_join, members, late, closer, t_closed, t_assigned, t_confirm, got, t_rank)


def _joins(fifo: Fifo, start: np.ndarray, lat: np.ndarray, sizes: Sizes) -> tuple[np.ndarray, np.ndarray]:
    """Each joiner's add(seq) and set(n{slot}) departures, after its check(P/closed) and
    compare_set(round). Joiners whose requests can interleave are served together, phase by
    phase (one numpy batch a phase); a joiner whose first request reaches the store after the
    last request of those before it forms the next group, so a joiner seconds behind the others
    does not hold their later phases back (the per-operation store serves them first)."""
    k, n = sizes.key, len(start)
    check, cas, add, put = (nbytes(req, k, sizes.desc) for req in JOIN)
    order = np.argsort(start + lat, kind="stable")
    first = (start + lat)[order]
    d2, d3 = np.empty(n), np.empty(n)
    i = 0
    while i < n:
        j, saved = i + 1, (fifo.free_at, fifo.ops, fifo.bytes)
        while True:
            g = order[i:j]
            lg = lat[g]
            c0 = fifo.serve(start[g] + lg, check) + lg                 # check(P/closed): still open
            r1 = fifo.serve(c0 + lg, cas) + lg                         # compare_set(round, "", "0")
            a = fifo.serve(r1 + lg, add)                               # add(seq, 1): the slot
            b = fifo.serve(a + 2 * lg, put)                            # set(n{slot}) (fire and forget)
            grown = int(np.searchsorted(first, fifo.free_at, side="left"))
            if grown <= j:
                break
            j = grown                        # later joiners arrive while the group is served
            fifo.free_at, fifo.ops, fifo.bytes = saved
        d2[g], d3[g] = a, b
        i = j
    return d2, d3


class HrwRounds(RoundModel):
    """The forming round closes at once with max_nodes joiners, else at the min_nodes-th
    joiner's last call; with fewer, at the join timeout. Joiners of a closed round wait; the
    members of a round not full restart for them at their next monitor tick. Joiners are kept
    by host code (`job.host`): a round of 10^4 is array work. A waiter probes the members:
    a round whose member died ends at the first probe after it (or its survivors leave first)."""
    probes_members = True

    def __init__(self, job):
        super().__init__(job)
        self.fifo = Fifo(job.sc.store)
        n = len(job.host)
        self.t_join = np.full(n, np.nan)           # by host code: when its rendezvous starts
        self.seq = np.zeros(n, dtype=np.int64)     # by host code: when it began to wait (order)
        self.entered = 0                           # joiners so far (the next one's seq)
        self.starts: list[float] | None = None     # the joiners' starts sorted (None: not kept)
        self.published: list[str] | None = None    # the store's rank order (rank_order=stable)
        self.plan = 0                              # the latest closure plan (earlier ones are void)
        self.sizes_of: dict[int, tuple] = {}       # round -> (joined, members): what clean-up deletes
        self.sizes = Sizes(key=len(f"{job.protocol.prefix}r0/") + 4,
                           desc=len(job.nodes[job.hosts[0]].info.encode()) + 8)
        self.closed = False                        # an agent's shutdown closed the rendezvous
        self.waiters: dict[str, float] = {}        # the running round's late joiners: since when
        self.dead_at: float | None = None          # the running round's first member death
        self.prober: tuple | None = None           # (when, who) a waiter's probe ends the round
        self.waited: dict[int, int] = {}           # round -> joiners that waited it out after it closed

    def counter(self) -> Fifo:
        return self.fifo

    def _joined(self) -> np.ndarray:
        """The joiners' codes, in the order they began to wait."""
        jc = np.flatnonzero(~np.isnan(self.t_join))
        return jc[np.argsort(self.seq[jc], kind="stable")]

    def enter(self, names: list[str], times: list[float]) -> None:
        if self.closed:                          # each finds `P/closed` set: RendezvousClosed
            for name, t in zip(names, times):
                self.job.gave_up(t + 2 * self.job.lat[name], [name], ExitReason.RENDEZVOUS_CLOSED,
                                 "the rendezvous is closed")
            return
        codes = self.job.host.of(names)
        if len(codes) == 1:                      # a host's start: thousands, one at a time
            self._enter_one(int(codes[0]), float(times[0]))
        else:
            self._enter_many(codes, np.asarray(times, dtype=float))
        if self._runs():
            self._late(names, list(times))
        elif len(codes) or not np.isnan(self.t_join).all():
            self._plan()

    def _enter_one(self, c: int, t: float) -> None:
        fresh = bool(np.isnan(self.t_join[c]))
        if self.starts is not None and fresh:
            insort(self.starts, t)
        else:
            self.starts = None
        if fresh:
            self.seq[c] = self.entered
            self.entered += 1
        self.t_join[c] = t

    def _enter_many(self, codes: np.ndarray, times: np.ndarray) -> None:
        fresh = np.isnan(self.t_join[codes])
        if self.starts is not None:
            if fresh.all() and len(np.unique(codes)) == len(codes):
                self.starts = sorted(self.starts + times.tolist())
            else:
                self.starts = None
        new, first = np.unique(codes[fresh], return_index=True)     # a new joiner's place
        self.seq[new] = self.entered + np.argsort(np.argsort(first))
        self.entered += len(new)
        self.t_join[codes] = times

    def gone(self, name: str, t: float) -> None:
        job = self.job
        c = job.host.code[name]
        self.waiters.pop(name, None)
        if self.prober is not None and self.prober[1] == name:
            # its probe, which was to end the round, dies with it: another waiter's will
            self.prober = None
            job.round_ended(None)
            self._probe()
        if not np.isnan(self.t_join[c]):
            self.t_join[c] = np.nan
            self.starts = None
            if not self._runs():
                self._plan()                # its join timeout no longer counts: the next one's
        if job.is_member[c] and self.dead_at is None:
            self.dead_at = t
            self._probe()

    def _runs(self) -> bool:
        """A round runs (its members may all be dead): joiners wait for it to end."""
        return bool(self.job.members) or math.isfinite(self.job.t_ws)

    def _probe(self) -> None:
        """A waiter probes the members every probe_interval from when it began to wait; the
        first probe after a member died goes unanswered, and probe_timeout later the waiter
        ends the round (`HrwProtocol._await_end`)."""
        if self.dead_at is None or not self.waiters:
            return
        p = self.job.sc.protocol
        every = p.probe_interval
        end, prober = min((w + max(1, math.ceil((self.dead_at - w) / every - 1e-9)) * every, name)
                          for name, w in self.waiters.items())
        self.prober = (end + p.probe_timeout, prober)
        self.job.round_ended(end + p.probe_timeout)

    def leave(self, members: list[str], t: float) -> list[float]:
        """end_round: compare_set(round, r, r+1) by every member, then set(end); `end` wakes
        the waiting."""
        job = self.job
        lat = job.host.lat[job.host.of(members)]
        back = self.fifo.serve(t + lat, nbytes(END[0], self.sizes.key)) + lat
        self.fifo.serve(back + lat, nbytes(END[1], self.sizes.key))
        job.round += 1
        np.fmax(self.t_join, t + 2 * job.host.lat, out=self.t_join, where=~np.isnan(self.t_join))
        if self.prober is not None and self.prober[0] == t:
            # the waiter that ended the round joins the next one first: the others hear of
            # the end from the store, it goes straight on
            self.t_join[job.host.code[self.prober[1]]] = t
        self.waiters, self.dead_at, self.prober = {}, None, None
        self.starts = None
        return back.tolist()

    def running(self, f: Formed, t_ws: float) -> None:
        """Each member watches `end` and `probe1` (and `waiting` while not full); rank 0
        deletes round r-2's keys: check, get, 2 adds, the deletes."""
        job, k, r = self.job, self.sizes.key, f.round
        ml = job.host.lat[job.host.of(f.members)]
        for _ in range(2 if f.nnodes >= job.sc.max_nodes else 3):
            self.fifo.serve(t_ws + ml, k)
        self.waited.pop(r - 2, None)
        old = self.sizes_of.pop(r - 2, None)
        if old is not None:
            lr = job.lat[f.master]
            ops = 4 + job.protocol.round_key_count(*old, probes=0)
            self.fifo.serve(t_ws + lr + np.arange(ops) * (2 * lr + self.fifo.store.service_base), k)

    def regrouped(self, members, t_workers: float) -> None:
        """The dead are out of the world: no probe is to end it for them."""
        if self.prober is not None:
            self.prober = None
            self.job.round_ended(None)
        self.dead_at = None

    def shut_down(self, names: list[str], t: float) -> None:
        """close_on_shutdown: set_closed, and every joiner waiting wakes to RendezvousClosed."""
        if self.closed or not getattr(self.job.sc.protocol, "close_on_shutdown", False):
            return
        self.closed = True
        self.plan += 1                           # no round forms any more
        waiting = self.job.host.named(self._joined())
        self._clear()
        for name in waiting:
            self.job.gave_up(t + 2 * self.job.lat[name], [name], ExitReason.RENDEZVOUS_CLOSED,
                             "the rendezvous was closed while it waited")

    def _clear(self) -> None:
        self.t_join[:] = np.nan
        self.starts = None

    def reset(self) -> None:
        self.closed = False
        self.waiters, self.dead_at, self.prober, self.waited = {}, None, None, {}
        self.fifo.free_at = self.job.env.now
        self._clear()
        self.sizes_of, self.published = {}, None

    # --- forming ---------------------------------------------------------------------------
    def _plan(self) -> None:
        """When the forming round closes (a newcomer plans again)."""
        sc = self.job.sc
        if self.starts is None:
            self.starts = np.sort(self.t_join[~np.isnan(self.t_join)]).tolist()
        starts = self.starts
        if not starts:
            return
        n = len(starts)
        if n >= sc.max_nodes:
            t = starts[sc.max_nodes - 1]
        elif n >= sc.min_nodes:
            t = starts[sc.min_nodes - 1] + self._last_call(starts)
        else:
            t = starts[0] + sc.protocol.join_timeout
        self.plan += 1
        token = self.plan
        self.job.at(t, lambda: self._form() if token == self.plan else None)

    def _last_call(self, starts: list[float]) -> float:
        """How long the min_nodes-th joiner waits before it closes: the last call, or, when the
        round before closed and had more members and waiters than have come by then, up to
        `hole_grace` for the owed-th (`HrwProtocol._owed_arrived`)."""
        p, r, lo = self.job.sc.protocol, self.job.round, self.job.sc.min_nodes
        sizes = self.sizes_of.get(r - 1)
        if r == 0 or sizes is None or p.last_call_timeout >= p.hole_grace or len(starts) < lo:
            return p.last_call_timeout
        joined, members = sizes
        owed = min(self.job.sc.max_nodes, joined + self.waited.get(r - 1, 0))
        due = starts[lo - 1] + p.last_call_timeout
        if sum(t <= due for t in starts) >= owed:
            return p.last_call_timeout
        came = starts[owed - 1] if len(starts) >= owed else math.inf
        return min(max(came, due), starts[lo - 1] + p.hole_grace) - starts[lo - 1]

    def _late(self, names: list[str], ts: list[float]) -> None:
        """Joiners of a closed round, each known at its time in `ts`: they wait."""
        job = self.job
        r, k, n = job.round, len(job.members), len(names)
        slots = np.arange(k + 1, k + 1 + n)
        codes = job.host.traced(job.host.of(names))
        job.trace.record_many(ts, codes, Event.JOIN, r, fields={"slot": slots})
        job.trace.record_many(ts, codes, Event.WAITING, r,
                              fields={"slot": slots, "waiting": np.arange(1, n + 1)})
        self.waited[r] = self.waited.get(r, 0) + n
        for name, t in zip(names, ts):
            self.waiters.setdefault(name, t)
        self._probe()
        if len(job.members) < job.sc.max_nodes:
            job.nodes_waiting(ts[0] + 2 * job.lat[names[0]])

    def _form(self) -> None:
        """The forming round closes: its timing, its events."""
        job = self.job
        now, sc, tr, host = job.env.now, job.sc, job.trace, job.host
        jc = np.flatnonzero(~np.isnan(self.t_join))
        if not len(jc):
            return
        jc = jc[np.argsort(self.t_join[jc], kind="stable")]    # by start, then name (code)
        starts, lat = self.t_join[jc], host.lat[jc]
        saved = (self.fifo.free_at, self.fifo.ops, self.fifo.bytes)
        rt = hrw_round(self.fifo, starts, lat, sc.min_nodes, sc.max_nodes,
                       self._last_call(np.sort(starts).tolist()), self.sizes)
        if rt is None:                                   # too few joined in time: they give up
            self.fifo.free_at, self.fifo.ops, self.fifo.bytes = saved
            self._clear()
            job.gave_up(now, host.named(jc), ExitReason.RENDEZVOUS_TIMEOUT,
                        "fewer than min_nodes joined in time")
            return
        r = job.round
        codes = host.traced(jc)
        tr.record_many(starts, codes, Event.RENDEZVOUS_START, fields={"restarts": job.restarts[jc]})
        tr.record_many(rt.t_join[rt.order], codes[rt.order], Event.JOIN, r,
                       fields={"slot": np.arange(1, len(rt.order) + 1)})
        mc = jc[rt.members]
        member_names = host.named(mc)
        order = job.protocol.ranks(host.infos[mc].tolist(), self.published)
        if job.protocol.publishes_order:
            self.published = order
        rank = np.empty(len(host), dtype=np.int64)
        rank[host.of(order)] = np.arange(len(order))
        ranks = rank[mc]
        tr.record_many(rt.t_ack, codes[rt.members], Event.CONFIRMED, r, ranks=ranks)
        self.sizes_of[r] = (len(rt.order), len(order))
        listed = host.named(np.sort(mc))
        job.formed(Formed(r, member_names, ranks, rt.t_rank, self.t_join[mc], len(order),
                          host.names[jc[rt.closer]], float(rt.t_assigned), listed, order[0],
                          digest(listed), saved[1:]))
        self.t_join[mc] = np.nan
        self.starts = None
        if len(rt.late):
            late = host.named(jc[rt.late])
            self._late(late, [float(rt.t_closed)] * len(late))


