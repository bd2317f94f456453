"""The store server model: one FIFO server, service time that grows with payload bytes.

It keeps TCPStore's semantics (see rdzv_sim.ops) over a dict of text values. Blocking
reads park a waiter event on their keys; a write wakes exactly the waiters it completes.
"""
from __future__ import annotations

import simpy

from ..ops import (Add, Check, CompareSet, Delete, Get, MultiGet, MultiSet, Set, StoreError,
                   Wait)
from ..events import Event


def _keys_bytes(op) -> int:
    return sum(len(k) for k in op.keys)


_PAYLOAD = {
    Set: lambda op: len(op.key) + len(op.value),
    CompareSet: lambda op: len(op.key) + len(op.expected) + len(op.desired),
    MultiSet: lambda op: sum(len(k) + len(v) for k, v in op.items),
    Wait: _keys_bytes, Check: _keys_bytes, MultiGet: _keys_bytes,
}


def payload(op) -> int:
    """Bytes a request carries (keys and values), as TCPStore would send them."""
    f = _PAYLOAD.get(type(op))
    return len(op.key) if f is None else f(op)



LOST = "store connection lost: the store's host is down"     # what every waiter is told when it dies

class StoreServer:
    def __init__(self, env: simpy.Environment, host: str, service, trace=None):
        """`service`: the scenario's store section (its `service(nbytes)`)."""
        self.env = env
        self.host = host
        self.trace = trace                       # says the store's faults (None: says nothing)
        self.service = service
        self.free_at = 0.0                       # when the single server finishes its queue
        self._rho = 0.0                          # background utilization (kept, not summed per call)
        self._changes = 0                        # background changes since the last full sum
        self.data: dict[str, str] = {}
        self.waiters: dict[str, dict] = {}       # key -> {event: keys} (insertion-ordered)
        self.change_waiters: dict[str, list] = {}   # key -> [(event, value it must differ from)]
        self.background: dict[str, tuple[float, int]] = {}   # source -> (ops/s, bytes per op)
        self.max_utilization = 0.0
        self.alive = True
        self.died_at = float("inf")
        self.paused = False
        self.unpaused = env.event()

    # --- lifecycle -----------------------------------------------------------------
    def crash(self, cause: str = "store_crash") -> None:
        """The server dies (a store_crash fault, or its host's crash): every waiter fails."""
        if not self.alive:
            return
        if self.trace is not None:
            self.trace.record(self.env.now, "store", Event.FAULT_STORE_CRASH, detail={"cause": cause})
        self.alive = False
        self.died_at = self.env.now
        err = StoreError(LOST)
        for lst in [*(d.items() for d in self.waiters.values()), *self.change_waiters.values()]:
            for ev, _ in lst:
                if callable(ev):
                    ev(err)
                elif not ev.triggered:
                    ev.fail(err)
                    ev.defused = True
        self.waiters.clear()
        self.change_waiters.clear()

    def restart(self) -> None:
        """A new, empty store (a requeued job gets a fresh one)."""
        self.data.clear()
        self.background.clear()
        self._rho = 0.0
        self.alive, self.paused = True, False
        self.died_at = float("inf")
        if not self.unpaused.triggered:
            self.unpaused.succeed()

    # --- background load (polling and heartbeats the simulator does not tick) -----------
    def set_background(self, source: str, rate: float, nbytes: int = 0) -> None:
        """Kept as a running sum (thousands of sources change it), summed afresh now and then
        so that rounding cannot build up."""
        old = self.background.pop(source, None)
        if old is not None:
            self._rho -= old[0] * self.service.service(old[1])
        if rate > 0:
            self.background[source] = (rate, nbytes)
            self._rho += rate * self.service.service(nbytes)
        self._changes += 1
        if self._changes % 4096 == 0 or not self.background:
            self._rho = sum(r * self.service.service(b) for r, b in self.background.values())
        if self._rho < 1e-15:
            self._rho = 0.0
        self.max_utilization = max(self.max_utilization, self._rho)

    def utilization(self) -> float:
        return self._rho

    def admit(self, now: float, nbytes: int) -> float:
        """A request arrives now: FIFO, one server. Returns when its service ends."""
        start = now if now > self.free_at else self.free_at
        self.free_at = start + self.service_time(nbytes)
        return self.free_at

    def service_time(self, nbytes: int) -> float:
        """Foreground service time, stretched by the background load (M/M/1: 1/(1-rho))."""
        if not self._rho:
            return self.service.service(nbytes)
        return self.service.service(nbytes) / (1.0 - min(self._rho, 0.95))

    def sigstop(self) -> None:
        """A store_pause fault (the server process stopped)."""
        self.pause()

    def sigcont(self) -> None:
        self.resume()

    def links_changed(self) -> None:
        """A partition began or healed (a replicated store re-checks its majority)."""

    def host_down(self, host: str) -> None:
        """A node crashed: the store dies with the node that hosts it."""
        if host == self.host:
            self.crash("store_host_crash")

    def host_up(self, host: str) -> None:
        """A node started again (a TCPStore does not come back with its host)."""

    def pause(self) -> None:
        if not self.paused:
            self.paused = True
            self.unpaused = self.env.event()

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self.unpaused.succeed()

    # --- blocking ------------------------------------------------------------------
    def missing(self, keys) -> list[str]:
        return [k for k in keys if k not in self.data]

    def park(self, keys, wake=None):
        """Wait for `keys` to exist: returns an event, or registers `wake` (a callable, called
        with None when they all exist, or with the error when the store dies): no event at all."""
        ev = self.env.event() if wake is None else wake
        keys = tuple(keys)
        for k in self.missing(keys):
            self.waiters.setdefault(k, {})[ev] = keys
        return ev

    def unpark(self, ev: simpy.Event, keys) -> None:
        for k in keys:
            d = self.waiters.get(k)
            if d is not None:
                d.pop(ev, None)
                if not d:
                    del self.waiters[k]

    def _wrote(self, key: str) -> None:
        for ev, keys in self.waiters.pop(key, {}).items():
            if self.missing(keys):
                continue
            if callable(ev):
                ev(None)
            elif not ev.triggered:
                ev.succeed()
        lst = self.change_waiters.get(key)
        if lst:
            value = self.data.get(key)
            keep = []
            for ev, since in lst:
                if ev.triggered:
                    continue
                if value is not since and value != since:
                    ev.succeed(value)
                else:
                    keep.append((ev, since))
            if keep:
                self.change_waiters[key] = keep
            else:
                del self.change_waiters[key]

    # --- the operations ------------------------------------------------------------
    def apply(self, op):
        """Apply a non-blocking op (or the non-blocking part of a blocking one)."""
        d = self.data
        t = type(op)
        if t is Get:
            return d[op.key]
        if t is Add:
            v = int(d.get(op.key, "0")) + op.amount
            d[op.key] = str(v)
            self._wrote(op.key)
            return v
        if t is Set:
            d[op.key] = op.value
            self._wrote(op.key)
            return None
        if t is CompareSet:
            cur = d.get(op.key)
            if cur is None:
                if op.expected == "":
                    d[op.key] = op.desired
                    self._wrote(op.key)
                    return op.desired
                return op.expected
            if cur == op.expected:
                d[op.key] = op.desired
                self._wrote(op.key)
                return op.desired
            return cur
        if t is Wait:
            return None
        if t is Check:
            return not self.missing(op.keys)
        if t is MultiGet:
            return [d[k] for k in op.keys]
        if t is MultiSet:
            for k, v in op.items:
                d[k] = v
            for k, _ in op.items:
                self._wrote(k)
            return None
        if t is Delete:
            return d.pop(op.key, None) is not None
        raise TypeError(f"not a store operation: {op!r}")

    @staticmethod
    def keys_needed(op) -> tuple[str, ...]:
        t = type(op)
        if t is Get:
            return (op.key,)
        if t is Wait or t is MultiGet:
            return op.keys
        return ()
