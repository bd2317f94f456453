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


class RendezvousFailed(Error):
    """This attempt at a round failed (a member vanished before confirming, the closer died)."""


@dataclass(frozen=True)
class NodeInfo:
    """A host: its name survives agent restarts; it runs `nproc` workers."""

    name: str
    addr: str
    nproc: int = 1
    index: int = 0            # position in the cluster (the static node rank)
    pid: int = 0              # the agent process: new on every restart of the host
    port: int = 0             # a port this host reserved for its workers' store (torchrun)

    def encode(self) -> str:
        d = {"name": self.name, "addr": self.addr, "nproc": self.nproc, "index": self.index}
        if self.port:
            d["port"] = self.port
        return _compact(d)

    @staticmethod
    def decode(text: str) -> "NodeInfo":
        d = json.loads(text)
        if not isinstance(d, dict):
            raise ValueError("node descriptor is not a JSON object")
        return NodeInfo(str(d["name"]), str(d["addr"]), int(d["nproc"]), int(d.get("index", 0)),
                        port=int(d.get("port", 0)))


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

    def encode(self) -> str:
        d = {"round": self.round, "rank": self.rank, "nnodes": self.nnodes,
             "world_size": self.world_size, "first_rank": self.first_rank,
             "master": self.master, "digest": self.digest}
        if self.master_port:
            d["master_port"] = self.master_port
        return _compact(d)

    @staticmethod
    def decode(text: str) -> "RoundResult":
        d = json.loads(text)
        return RoundResult(**{k: d[k] for k in RoundResult.__dataclass_fields__ if k in d})


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
    torch_counterpart: str | None = None   # a torch handler that stands in for it in real runs
    deterministic: bool = False   # same members and ranks whatever the timing (validate checks them)

    def __init__(self, cfg: ProtocolSettings):
        if cfg.min_nodes is None or cfg.max_nodes is None:
            raise ValueError(f"{type(self).__name__}: give min_nodes and max_nodes "
                             "(settings.resolved(nodes) fills them for a cluster)")
        self.cfg = cfg
        self.prefix = f"rdzv/{cfg.run_id}/"

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

    def clean_up(self, result: RoundResult) -> Gen:
        """Once a round's workers run: drop store keys no one needs any more (best effort; a
        long job must not grow its store by every round it ever had)."""
        return
        yield
