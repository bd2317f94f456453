"""FirstOf in the simulated runtime: wait for the first of several branches (a store read on a
second connection, a timer, a local signal) and cancel the rest.

Blocking reads, the common branch (a watch), run by callbacks rather than processes: cheap to
start and to cancel, with the same timing as a store call. Other store branches run as
processes. Mixed into SimRuntime, whose store, network and accounting they use.
"""
from __future__ import annotations

import math

from .. import ops as O
from .node import SimNode
from .store import payload


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
        env, store, net = self.env, self.store, self.net
        st = {"off": False, "parked": None, "proc": None}
        nbytes = payload(op)
        self._account(node, nbytes)

        def done(value):
            if not st["off"]:
                finish(value)

        def reply(leaves):
            st["parked"] = None
            result = store.apply(op)
            env.timeout(leaves - env.now + net.latency(node.name)).callbacks.append(
                lambda _e: done(result) if store.alive else
                done(O.StoreError(f"{node.name}: connection reset: the store went down")))

        def woke(err):
            if st["off"] or st["parked"] is None:
                return
            if err is not None:                 # the store crashed under the wait
                st["parked"] = None
                done(err)
                return
            reply(env.now)

        def expire(_e):
            if st["off"] or st["parked"] is None:
                return
            store.unpark(*st["parked"])
            st["parked"] = None
            done(O.StoreTimeout(f"{node.name}: wait for {op_keys[0]!r} timed out after {limit:g} s"))

        def arrive(_e):
            if st["off"]:
                return
            if not store.alive or store.paused or not net.reachable(node.name, store.host):
                proc = st["proc"] = env.process(self._branch_at_store(node, op, nbytes))
                proc.callbacks.append(lambda p: done(p.value))
                proc.defused = True
                return
            leaves = store.admit(env.now, nbytes)
            if store.missing(op_keys):
                store.park(op_keys, woke)
                st["parked"] = (woke, op_keys)
                if math.isfinite(limit):
                    env.timeout(limit).callbacks.append(expire)
            else:
                reply(leaves)

        def cancel():
            st["off"] = True
            if st["parked"] is not None:
                store.unpark(*st["parked"])
                st["parked"] = None
            proc = st["proc"]
            if proc is not None and proc.is_alive:
                proc.interrupt()
                proc.defused = True

        op_keys = store.keys_needed(op)
        limit = op.timeout if op.timeout is not None else self.cfg.op_timeout
        arrival = max(env.now + net.latency(node.name), node.conn_last)
        node.conn_last = arrival
        env.timeout(arrival - env.now).callbacks.append(arrive)
        return cancel

    def _branch_at_store(self, node: SimNode, op, nbytes: int):
        """The slow path of a read branch that arrived at a paused, cut-off or dead store."""
        try:
            result, leaves = yield from self._serve(node, op, nbytes, self.env.now + self.cfg.op_timeout)
            if leaves > self.env.now:
                yield self.env.timeout(leaves - self.env.now)
            yield self.env.timeout(self.net.latency(node.name))
            return result
        except (O.StoreTimeout, O.StoreError) as e:
            return e

    def first_of(self, node: SimNode, op: O.FirstOf):
        """Every branch reports to one `woken` event by callback (no Condition, no per-branch
        event): a FirstOf costs its branches' own events plus one. Branches done by the time
        the node wakes are all candidates; the first in the op's order wins, as in AnyOf."""
        env = self.env
        if self.cfg.first_of > 0:                 # the client's cost of starting the branches
            yield env.timeout(self.cfg.first_of)
        woken = env.event()
        hits: dict[int, object] = {}
        procs, signals, cancels, timers = [], [], [], []

        def hit(i, value):
            hits.setdefault(i, value)
            if not woken.triggered:
                woken.succeed()

        for i, br in enumerate(op.branches):
            t = type(br)
            if t is O.Sleep:
                if math.isfinite(br.seconds):
                    tm = env.timeout(br.seconds)
                    cb = (lambda i: lambda _e: hit(i, None))(i)
                    tm.callbacks.append(cb)
                    timers.append((tm, cb))
            elif t is O.Local:
                ev = node.signal_event(env, br.name)
                signals.append(br.name)
                if ev.callbacks is None:          # already processed
                    hit(i, None)
                else:
                    ev.callbacks.append((lambda i: lambda _e: hit(i, None))(i))
            elif t in O.BLOCKING_OPS:
                cancels.append(self._read_branch(node, br, (lambda i: lambda v: hit(i, v))(i)))
            elif t in O.STORE_OPS or t is O.Changed:
                p = env.process(self._branch(node, br))
                p.callbacks.append((lambda i: lambda p: hit(i, p.value))(i))
                procs.append(p)
            else:
                raise TypeError(f"FirstOf cannot wait on {br!r}")
        node.branches.extend(procs)
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
                if tm.callbacks is not None and cb in tm.callbacks:
                    tm.callbacks.remove(cb)
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
