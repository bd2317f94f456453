"""What every protocol shares: node identity, settings, the round result, the interface."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from ..errors import Error
from ..ops import Check, Get, Set
from .settings import ProtocolSettings


_compact = json.JSONEncoder(separators=(",", ":")).encode   # made once: dumps makes one a call


class RendezvousTimeout(Error):
    """No round completed before the join deadline (torchrun: RendezvousTimeoutError)."""


class RendezvousClosed(Error):
    """The rendezvous was shut down for good (torchrun: RendezvousClosedError)."""


class BadValue(Error, ValueError):
    """A value read from the store is not what this protocol writes there: another machine's
    bug, an old version, or a hostile hand. The reader treats that node or round as failed."""


MAX_VALUE = 4096               # characters of one descriptor or assignment


def decode_object(text) -> dict:
    """A short JSON object another node wrote; BadValue if it is not one."""
    if not isinstance(text, str) or len(text) > MAX_VALUE:
        raise BadValue(f"not a short text value ({len(text) if isinstance(text, str) else type(text).__name__})")
    try:
        d = json.loads(text)
    except ValueError:
        raise BadValue("not JSON") from None
    if not isinstance(d, dict):
        raise BadValue("not a JSON object")
    return d


def _field(d: dict, key: str, kind, lo=None, hi=None, default=None):
    v = d.get(key, default)
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise BadValue(f"{key!r} is not an integer")
    if kind is str and (not isinstance(v, str) or not 0 < len(v) <= 256):
        raise BadValue(f"{key!r} is not a short string")
    if kind is int and ((lo is not None and v < lo) or (hi is not None and v > hi)):
        raise BadValue(f"{key!r} = {v} is out of range")
    return v


class RendezvousFailed(Error):
    """This attempt at a round failed (a member vanished before confirming, the closer died).
    `assigned`: the assignment this node had got in it, if any (it was a member on paper);
    `why`: the closer's word for it ("too_few_members", "no_quorum"), if it gave one."""

    def __init__(self, *args, assigned=None, why: str = ""):
        super().__init__(*args)
        self.assigned, self.why = assigned, why


@dataclass(frozen=True)
class NodeInfo:
    """A host: its name survives agent restarts; it runs `nproc` workers."""

    name: str
    addr: str
    nproc: int = 1
    index: int = 0            # position in the cluster (the static node rank)
    pid: int = 0              # the agent process: new on every restart of the host
    port: int = 0             # a port this host reserved for its workers' store (torchrun)
    topo: str = ""            # where the scheduler put it (node-list position, rack label)
    last: int = -1            # the last round it was a member of (-1: none this agent knows)
    last_n: int = 0           # that round's member count (a store failover's quorum)

    def encode(self) -> str:
        d = {"name": self.name, "addr": self.addr, "nproc": self.nproc, "index": self.index}
        if self.port:
            d["port"] = self.port
        if self.topo:
            d["topo"] = self.topo
        if self.last >= 0:
            d["last"] = [self.last, self.last_n]
        return _compact(d)

    @staticmethod
    def decode(text: str) -> "NodeInfo":
        """A descriptor another node wrote; BadValue if it is not one."""
        d = decode_object(text)
        last = d.get("last", [-1, 0])
        if not isinstance(last, list) or len(last) != 2:
            raise BadValue("'last' is not [round, members]")
        last_d = {"r": last[0], "n": last[1]}
        return NodeInfo(_field(d, "name", str), _field(d, "addr", str),
                        _field(d, "nproc", int, 1, 1 << 16), _field(d, "index", int, 0, None, 0),
                        port=_field(d, "port", int, 0, 65535, 0),
                        topo=_field(d, "topo", str) if "topo" in d else "",
                        last=_field(last_d, "r", int, -1, None), last_n=_field(last_d, "n", int, 0, None))


@dataclass(frozen=True)
class RoundResult:
    """What a node knows once its rank is assigned: enough to start its workers."""

    round: int
    rank: int            # group (node) rank, 0..nnodes-1
    nnodes: int
    world_size: int      # workers across the round
    first_rank: int      # global rank of this node's first worker
    master: str          # rank 0's address (MASTER_ADDR)
    digest: str          # membership fingerprint: equal for every member of the round
    master_port: int = 0  # the port rank 0 reserved (MASTER_PORT), when its descriptor had one
    successors: tuple = ()   # (name, addr, port) of the hosts a store failover elects, in turn

    def encode(self) -> str:
        d = {"round": self.round, "rank": self.rank, "nnodes": self.nnodes,
             "world_size": self.world_size, "first_rank": self.first_rank,
             "master": self.master, "digest": self.digest}
        if self.master_port:
            d["master_port"] = self.master_port
        if self.successors:
            d["succ"] = [list(s) for s in self.successors]
        return _compact(d)

    @staticmethod
    def decode(text: str) -> "RoundResult":
        """An assignment the closer wrote; BadValue if it is not one."""
        return RoundResult.from_dict(decode_object(text))

    @staticmethod
    def from_dict(d: dict) -> "RoundResult":
        n = _field(d, "nnodes", int, 1, None)
        world = _field(d, "world_size", int, n, None)
        return RoundResult(_field(d, "round", int, 0, None), _field(d, "rank", int, 0, n - 1), n, world,
                           _field(d, "first_rank", int, 0, world - 1), _field(d, "master", str),
                           _field(d, "digest", str), _field(d, "master_port", int, 0, 65535, 0),
                           _successors(d.get("succ", [])))


MAX_SUCCESSORS = 8


def _successors(v) -> tuple:
    """An assignment's failover successors: [[name, addr, port], ...]; BadValue otherwise."""
    if not isinstance(v, list) or len(v) > MAX_SUCCESSORS:
        raise BadValue(f"'succ' is not a list of at most {MAX_SUCCESSORS} successors")
    out = []
    for e in v:
        if not isinstance(e, list) or len(e) != 3:
            raise BadValue("a successor is not [name, addr, port]")
        f = {"name": e[0], "addr": e[1], "port": e[2]}
        out.append((_field(f, "name", str), _field(f, "addr", str), _field(f, "port", int, 0, 65535)))
    return tuple(out)


def closed_count(text) -> int:
    """The member count in a round's `closed` value ("<closer>:<count>"); BadValue otherwise."""
    head, _, count = text.rpartition(":") if isinstance(text, str) else ("", "", "")
    if not head or not count.isdigit() or len(text) > MAX_VALUE:
        raise BadValue("a round's closure is not '<closer>:<count>'")
    return int(count)


def digest(names) -> str:
    """A short fingerprint of a membership list (order-independent)."""
    return hashlib.sha1("\n".join(sorted(names)).encode()).hexdigest()[:12]


Gen = Generator[Any, Any, Any]
INF = float("inf")


def watch_key(key: str) -> Get:
    """A blocking read with no deadline of its own: a FirstOf sibling (a Sleep) bounds it."""
    return Get(key, timeout=INF)


@dataclass(frozen=True)
class Watch:
    """One thing to wait for while a round runs (`Protocol.watch`).

    When `op` finishes first: with `ask` False the agent leaves the round for `reason`; with
    `ask` True it calls `Protocol.answer(result, watch, node)`, which says whether to stay.
    `arg` is the protocol's own (hrw: the probe number)."""

    op: Any
    reason: str
    ask: bool = False
    arg: Any = None


class Protocol:
    """A rendezvous protocol: generators that yield `rdzv_sim.ops` and do no I/O.

    `cfg` is the protocol's settings model (a `ProtocolSettings` subclass) with min_nodes and
    max_nodes resolved. `needs` names the operations beyond the common set (store calls, Now,
    WallClock, Sleep, Emit, FirstOf, Local, Random, Work, Start/StopWorkers) that it yields; a
    runtime that cannot give one refuses the protocol by name before it starts.
    """

    name = "base"
    needs: frozenset = frozenset()

    def __init__(self, cfg: ProtocolSettings):
        if cfg.min_nodes is None or cfg.max_nodes is None:
            raise ValueError(f"{type(self).__name__}: give min_nodes and max_nodes "
                             "(settings.resolved(nodes) fills them for a cluster)")
        self.cfg = cfg
        self.prefix = f"rdzv/{cfg.run_id}/"

    def agent_stores(self):
        """A fresh agent's store part (`protocols/stores.py`): what it does when its store is
        lost. The default: the run's one store; a protocol that fails over returns its own."""
        from .stores import OneStore
        return OneStore()

    def for_agent(self, node: NodeInfo) -> "Protocol":
        """The protocol as one agent process runs it: this object, shared by every agent of
        the job, where it keeps nothing per agent; a protocol that keeps an agent's own state
        (c10d's state holder, as torch's handler does per process) returns a copy holding
        it, which lives and ends with that agent."""
        return self

    def rendezvous(self, node: NodeInfo) -> Gen:
        """Join the next round; return a RoundResult (raise RendezvousTimeout on the deadline)."""
        raise NotImplementedError

    def watch(self, result: RoundResult, state=None, node: NodeInfo | None = None) -> list[Watch]:
        """What fires while a round runs (its end, nodes waiting); `state` is what the last
        `answer` returned to stay with (None at first)."""
        return []

    def answer(self, result: RoundResult, watch: Watch, node: NodeInfo) -> Gen:
        """A watch with `ask` fired: return ("stay", next watch state) or ("leave", reason)."""
        raise NotImplementedError(f"{self.name} cannot answer {watch.reason!r}")

    def is_closed(self) -> Gen:
        """Whether the rendezvous was shut down for good (torchrun's is_closed)."""
        return (yield Check((self.prefix + "closed",)))

    def set_closed(self, by: str) -> Gen:
        """Shut the rendezvous down for good (torchrun's set_closed)."""
        yield Set(self.prefix + "closed", by)

    def end_round(self, result: RoundResult, reason: str, node: NodeInfo | None = None) -> Gen:
        """Tell the others this round is over (idempotent)."""
        return
        yield

    def count_waiting(self, result: RoundResult) -> Gen:
        """How many nodes wait for this round to end (torchrun's num_nodes_waiting)."""
        return 0
        yield

    def leave(self, result: RoundResult, node: NodeInfo) -> Gen:
        """The agent got SIGTERM while in this round and will exit: what the protocol does with
        the notice. Default: nothing (torchrun's agent writes nothing on a signal)."""
        return
        yield

    def shutdown(self, node: NodeInfo) -> Gen:
        """The agent exits for any reason but a signal (torch's launcher calls its handler's
        shutdown then: out of restarts, a rendezvous timeout, success). Default: nothing."""
        return
        yield

    def clean_up(self, result: RoundResult) -> Gen:
        """Once a round's workers run: drop store keys no one needs any more (best effort; a
        long job must not grow its store by every round it ever had)."""
        return
        yield
