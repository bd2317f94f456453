"""Node processes started warm: spawned ahead, held at a gate once their imports are done,
and let go when the scenario starts them.

A node's process spends seconds importing torch before it can rendezvous, and on a busy
machine those seconds vary by several between nodes that a scenario starts at the same
instant (`start_spread: 0`). The simulator charges that start as `agent.process_start`;
the real run would add the machine's noise to it. So the launcher spawns each node's process
before it is due, waits until it reports ready, and at the due time sends it the run's clock
origin: the node starts then, with nothing left to load.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time

READY = "ready"


class Standby:
    """At most one warm, not yet started process per node name."""

    def __init__(self, ctx, target, ready_within: float = 300.0):
        self.ctx, self.target, self.ready_within = ctx, target, ready_within
        self.held: dict[str, tuple[mp.Process, object]] = {}
        self.loaded: set[str] = set()      # held processes that said they are ready

    def warm(self, name: str, spec: dict) -> None:
        """Spawn `name`'s next process now; it waits at the gate once loaded."""
        if name in self.held:
            return
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=self.target, args=({**spec, "gate": child},), daemon=True)
        p.start()
        child.close()
        self.held[name] = (p, parent)

    def ready(self, name: str) -> None:
        """Wait until `name`'s warm process is loaded (it is started from here on)."""
        if name in self.loaded:
            return
        p, conn = self.held[name]
        deadline = time.monotonic() + self.ready_within
        while not conn.poll(0.1):
            if not p.is_alive():
                raise RuntimeError(f"node {name}'s process exited (code {p.exitcode}) while loading")
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {name}'s process did not load within {self.ready_within:.0f} s")
        if conn.recv() != READY:
            raise RuntimeError(f"node {name}'s process sent something other than {READY!r} at its gate")
        self.loaded.add(name)

    def release(self, name: str, t0: float) -> mp.Process:
        """Let `name`'s loaded process start, on the run's clock `t0`; returns it."""
        self.ready(name)
        p, conn = self.held.pop(name)
        self.loaded.discard(name)
        conn.send(t0)
        conn.close()
        return p

    def close(self) -> None:
        """Kill every process still held at its gate."""
        for p, conn in self.held.values():
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join(5)
            conn.close()
        self.held.clear()
        self.loaded.clear()


def wait_at_gate(gate) -> float:
    """In the node's process: say it is loaded, and wait for the run's clock origin."""
    gate.send(READY)
    t0 = gate.recv()
    gate.close()
    return float(t0)
