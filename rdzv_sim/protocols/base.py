"""What every protocol shares: node identity, settings, the round result, the interface."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from ..ops import Check, Get, Set


_compact = json.JSONEncoder(separators=(",", ":")).encode   # made once: dumps makes one a call


class RendezvousTimeout(Exception):
    """No round completed before the join deadline (torchrun: RendezvousTimeoutError)."""


class RendezvousClosed(Exception):
    """The rendezvous was shut down for good (torchrun: RendezvousClosedError)."""


class RendezvousFailed(Exception):
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
class ProtocolConfig:
    run_id: str = "job"
    min_nodes: int = 1
    max_nodes: int = 1
    last_call_timeout: float = 1.0   # after min_nodes join, wait this long for more
    join_timeout: float = 600.0      # give up if no round completes by then
    confirm_timeout: float = 30.0    # members must all confirm within this
    close_grace: float = 2.0         # a stand-in closes if the designated closer is silent
    hole_grace: float = 1.0          # how long the closer waits for a slot's descriptor
    probe_interval: float = 30.0     # a waiter checks a running round's members this often
    probe_timeout: float = 15.0      # no answer by then: every member is gone (> worker start)
    keep_alive_interval: float = 5.0     # c10d: heartbeat period
    keep_alive_max_attempt: int = 3      # c10d: missed beats before a node is dead


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


class Protocol:
    """A rendezvous protocol: generators that yield `rdzv_sim.ops` and do no I/O."""

    name = "base"

    def __init__(self, cfg: ProtocolConfig):
        self.cfg = cfg
        self.prefix = f"rdzv/{cfg.run_id}/"

    def rendezvous(self, node: NodeInfo) -> Gen:
        """Join the next round; return a RoundResult (raise RendezvousTimeout on the deadline)."""
        raise NotImplementedError

    def watch(self, result: RoundResult, state=None, node: NodeInfo | None = None) -> list[tuple[Any, str]]:
        """(branch, reason) pairs that fire while a round runs: its end, nodes waiting.

        A reason with a colon ("probe:3") asks the agent to call `answer`, which returns
        ("stay", next watch state) to keep running or ("leave", reason) to leave the round.
        """
        return []

    def answer(self, result: RoundResult, reason: str, node: NodeInfo) -> Gen:
        raise NotImplementedError(f"{self.name} cannot answer {reason!r}")

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

    def clean_up(self, result: RoundResult) -> Gen:
        """Once a round's workers run: drop store keys no one needs any more (best effort; a
        long job must not grow its store by every round it ever had)."""
        return
        yield
