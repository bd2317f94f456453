"""The operations a protocol yields, and the errors a runtime throws back into it.

The store operations mirror `torch.distributed.TCPStore` (values are text here; runtimes
encode them as UTF-8 bytes). A protocol never does I/O itself: it yields one of these and
receives the result, exactly as h11 or a SimPy process would.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import Error


class StoreTimeout(Error, TimeoutError):
    """A store call passed its deadline (a paused store, a silent partition, a missing key)."""


class StoreError(Error, ConnectionError):
    """The store refused or dropped the connection (it is dead, or its host is)."""


# --- store operations (TCPStore semantics) -------------------------------------------
@dataclass(frozen=True, slots=True)
class Set:
    """Fire and forget: TCPStore's set sends no reply."""
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class Get:
    """Blocks until `key` exists or `timeout` (None: the client's default) passes."""
    key: str
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class Add:
    """Atomic add; a missing key counts as 0. Returns the new value (amount 0 reads a counter)."""
    key: str
    amount: int = 1


@dataclass(frozen=True, slots=True)
class CompareSet:
    """Sets `desired` if the value is `expected` (or the key is missing and `expected` is "").

    Returns the value now stored. On a missing key with a non-empty `expected` it returns
    `expected` and stores nothing: compare the result with a unique `desired` to know you won.
    """
    key: str
    expected: str
    desired: str


@dataclass(frozen=True, slots=True)
class Wait:
    """Blocks until every key exists, or raises StoreTimeout."""
    keys: tuple[str, ...]
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class Check:
    """True if every key exists; never blocks."""
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MultiGet:
    """Values of every key, in order; blocks until all exist."""
    keys: tuple[str, ...]
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class MultiSet:
    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Delete:
    """Returns True if the key existed."""
    key: str


STORE_OPS = (Set, Get, Add, CompareSet, Wait, Check, MultiGet, MultiSet, Delete)
BLOCKING_OPS = (Get, Wait, MultiGet)


# --- time, trace and local events ----------------------------------------------------
@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Now:
    """Monotonic seconds since the run started."""


@dataclass(frozen=True, slots=True)
class WallClock:
    """This host's wall clock (seconds): differs from Now under clock skew."""


@dataclass(frozen=True, slots=True)
class Emit:
    """A trace event; the runtime stamps time and node."""
    event: str
    round: int | None = None
    rank: int | None = None
    world_size: int | None = None
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Local:
    """A local signal such as "workers_failed" or "peer_failed" (only inside FirstOf)."""
    name: str


@dataclass(frozen=True, slots=True)
class FirstOf:
    """Wait for the first of several branches (Get/Wait on a second connection, Sleep, Local).

    Returns (index, value) of the branch that finished first, or (name, value) where the
    branches are named (`FirstOf(end=Get(...), timer=Sleep(5))`); the others are cancelled.
    A branch that fails (StoreTimeout, StoreError) finishes with the exception as its value.
    """
    branches: tuple[Any, ...]
    names: tuple[str, ...]

    def __init__(self, *branches, **named):
        if branches and named:
            raise TypeError("FirstOf takes its branches by position or by name, not both")
        object.__setattr__(self, "branches", tuple(branches) or tuple(named.values()))
        object.__setattr__(self, "names", tuple(named))

    def result(self, index: int, value):
        """What the protocol is given: the winner's name (or index) and its value."""
        return (self.names[index] if self.names else index), value


# --- the agent's workers -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StartWorkers:
    """Start this round's workers (process group init included); returns when they run."""
    round: int
    rank: int
    world_size: int
    members: int
    master: str


@dataclass(frozen=True, slots=True)
class InPlace:
    """The world this node's workers train in after an in-place recovery (recovery.py): returns
    its RoundResult once its workers train again (no rendezvous, no store round)."""


@dataclass(frozen=True, slots=True)
class StopWorkers:
    """Stop the workers of the current round (before a re-rendezvous or on exit)."""
    reason: str


# --- the store itself ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoreAddress:
    """Where this node's store is: returns (host address, port)."""


@dataclass(frozen=True, slots=True)
class UseStore:
    """Use the store at `addr`:`port` from now on, starting it here first if `serve` (a store
    failover's successor). Waits up to `timeout` for it to accept; StoreError if it never does."""
    addr: str
    port: int = 0
    serve: bool = False
    timeout: float = 10.0


# --- what a runtime may do more cheaply than the protocol could ----------------------
@dataclass(frozen=True, slots=True)
class Changed:
    """Block until `key`'s value is no longer `since` (or `timeout` passes); returns the new value.

    TCPStore has no watch: a real runtime implements this by polling, as torchrun's c10d
    handler does every second. The simulator wakes the waiter on the write itself (the protocol
    then aligns to its own poll tick) and counts the polling as background store load.
    """
    key: str
    since: str | None
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class StartHeartbeat:
    """Start this node's background keep-alive: one write of `nbytes` every `period` seconds.

    The simulator does not tick it: it records when the node's beats began (and, if it dies,
    when they stopped) and charges the writes to the store as background load.
    """
    desc: str
    period: float
    nbytes: int = 0


@dataclass(frozen=True, slots=True)
class HeartbeatTimes:
    """The wall-clock time of each named node's latest background beat (None if it has none)."""
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StoppedHeartbeats:
    """The beats that stopped, and a floor: returns `(stopped, floor)`, `stopped` mapping each
    node whose background beats stopped to the wall time of its last beat, and `floor` a wall
    time at or before the latest beat of every node still beating.

    It lets a protocol find the dead among N nodes in O(dead), not O(N) queries."""


@dataclass(frozen=True, slots=True)
class BackgroundLoad:
    """Declare polling this node does while it waits: `rate` reads/s of `nbytes` each (0 stops)."""
    rate: float
    nbytes: int = 0


@dataclass(frozen=True, slots=True)
class Random:
    """A uniform float in [0, 1) from the runtime's seeded generator (protocols own no RNG)."""


@dataclass(frozen=True, slots=True)
class Work:
    """Client CPU spent encoding or decoding `nbytes` (the simulator charges it; reality spends it)."""
    nbytes: int
