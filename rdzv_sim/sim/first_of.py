"""FirstOf in the simulated runtime: wait for the first of several branches (a store read on a
second connection, a timer, a local signal) and cancel the rest.

Blocking reads, the common branch (a watch), run by callbacks rather than processes: cheap to
start and to cancel, with the same timing as a store call. Other store branches run as
processes. Mixed into SimRuntime, whose store, network and accounting they use.
"""
from __future__ import annotations

import math
from functools import partial

from .. import ops as O
from .node import SimNode
from .store import payload

_READS = frozenset(O.BLOCKING_OPS)
_OTHERS = frozenset((*O.STORE_OPS, O.Changed))


class FirstOfMixin:
    def _branch(self, node: SimNode, op):
        try:
            if type(op) is O.Changed:
                return (yield from self._changed(node, op))
            return (yield from self.store_call(node, op))
        except (O.StoreTimeout, O.StoreError) as e:
            return e

    def _read_branch(self, node: SimNode, op, finish):
        """A blocking read as a FirstOf branch, run by callbacks instead of a process (the
        common watch: cheap to start, cheap to cancel). Same timing as `store_call`: latency
        there, FIFO service or a parked wait, latency back; `finish(value)` is called with the
        result (or the store error). Returns cancel()."""
        nbytes = payload(op)
        self._account(node, nbytes)
        return _ReadBranch(self, node, op, nbytes, finish).cancel

    def _branch_at_store(self, node: SimNode, op, nbytes: int):
        """The slow path of a read branch that arrived at a paused, cut-off or dead store."""
        try:
            result, leaves = yield from self._serve(node, op, nbytes, self.env.now + self.op_timeout)
            if leaves > self.env.now:
                yield self.env.timeout(leaves - self.env.now)
            yield self.env.timeout(self.latency(node))
            return result
        except (O.StoreTimeout, O.StoreError) as e:
            return e

    def first_of(self, node: SimNode, op: O.FirstOf):
        """Every branch reports to one `woken` event by callback (no Condition, no per-branch
        event): a FirstOf costs its branches' own events plus one. Branches done by the time
        the node wakes are all candidates; the first in the op's order wins, as in AnyOf."""
        env = self.env
        if self.cpu_cfg.first_of > 0:                 # the client's cost of starting the branches
            yield env.timeout(self.cpu_cfg.first_of)
        woken = env.event()
        hits: dict[int, object] = {}
        procs, signals, cancels, timers = [], [], [], []

        def hit(i, value):
            if i not in hits:
                hits[i] = value
            if not woken.triggered:
                woken.succeed()

        def hit_none(i, _e):
            hit(i, None)

        def hit_proc(i, p):
            hit(i, p.value)

        for i, br in enumerate(op.branches):
            t = type(br)
            if t is O.Sleep:
                if br.seconds < math.inf:
                    tm = env.timeout(br.seconds)
                    cb = partial(hit_none, i)
                    tm.callbacks.append(cb)
                    timers.append((tm, cb))
            elif t in _READS:
                cancels.append(self._read_branch(node, br, partial(hit, i)))
            elif t is O.Local:
                ev = node.signal_event(env, br.name)
                signals.append(br.name)
                if ev.callbacks is None:          # already processed
                    hit(i, None)
                else:
                    ev.callbacks.append(partial(hit_none, i))
            elif t in _OTHERS:
                p = env.process(self._branch(node, br))
                p.callbacks.append(partial(hit_proc, i))
                procs.append(p)
            else:
                raise TypeError(f"FirstOf cannot wait on {br!r}")
        if procs:
            node.branches.extend(procs)
        if cancels:
            node.cancels.extend(cancels)
        try:
            yield woken
        finally:
            for p in procs:
                if p.is_alive:
                    p.interrupt()
                    p.defused = True
                node.branches.remove(p)
            for c in cancels:
                c()
                node.cancels.remove(c)
            for tm, cb in timers:                 # a timer that lost keeps no closure alive
                if tm.callbacks:
                    try:
                        tm.callbacks.remove(cb)
                    except ValueError:
                        pass
            for name in signals:
                ev = node.waiters.get(name)
                if ev is not None and not ev.triggered:
                    del node.waiters[name]
        i = min(hits)
        return i, hits[i]

    def _cancel_branches(self, node: SimNode) -> None:
        for p in node.branches:
            if p.is_alive:
                p.interrupt()
                p.defused = True
        node.branches.clear()
        for c in node.cancels:
            c()
        node.cancels.clear()
        node.waiters.clear()


class _ReadBranch:
    """One blocking read in flight, as callbacks: arrive -> (park -> woke | expire) -> reply."""

    __slots__ = ("rt", "node", "op", "finish", "off", "parked", "proc", "keys", "limit", "result",
                 "nbytes", "store")

    def __init__(self, rt, node: SimNode, op, nbytes: int, finish):
        self.rt, self.node, self.op, self.nbytes, self.finish = rt, node, op, nbytes, finish
        self.off, self.parked, self.proc = False, False, None
        self.store = rt.store if node.store is None else node.store
        self.keys = self.store.keys_needed(op)
        self.limit = op.timeout if op.timeout is not None else rt.op_timeout
        rt.env.timeout(rt.arrival(node) - rt.env.now).callbacks.append(self.arrive)

    def done(self, value) -> None:
        if not self.off:
            self.finish(value)

    def arrive(self, _e) -> None:
        if self.off:
            return
        rt, node = self.rt, self.node
        store = self.store
        if not store.alive or rt.blocked(node):
            proc = self.proc = rt.env.process(rt._branch_at_store(node, self.op, self.nbytes))
            proc.callbacks.append(lambda p: self.done(p.value))
            proc.defused = True
            return
        leaves = store.admit(rt.env.now, self.nbytes)
        if store.missing(self.keys):
            store.park(self.keys, self.woke)
            self.parked = True
            if math.isfinite(self.limit):
                rt.env.timeout(self.limit).callbacks.append(self.expire)
        else:
            self.reply(leaves)

    def reply(self, leaves: float) -> None:
        self.parked = False
        rt = self.rt
        self.result = self.store.apply(self.op)
        env = rt.env
        env.timeout(leaves - env.now + rt.latency(self.node)).callbacks.append(self.back)

    def back(self, _e) -> None:
        if self.store.alive:
            self.done(self.result)
        else:
            self.done(O.StoreError(f"{self.node.name}: connection reset: the store went down"))

    def woke(self, err) -> None:
        if self.off or not self.parked:
            return
        if err is not None:                     # the store crashed under the wait
            self.parked = False
            self.done(err)
            return
        self.reply(self.rt.env.now)

    def expire(self, _e) -> None:
        if self.off or not self.parked:
            return
        self.store.unpark(self.woke, self.keys)
        self.parked = False
        self.done(O.StoreTimeout(f"{self.node.name}: wait for {self.keys[0]!r} timed out "
                                 f"after {self.limit:g} s"))

    def cancel(self) -> None:
        self.off = True
        if self.parked:
            self.store.unpark(self.woke, self.keys)
            self.parked = False
        proc = self.proc
        if proc is not None and proc.is_alive:
            proc.interrupt()
            proc.defused = True
