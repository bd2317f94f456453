"""`RoundModel`: how one protocol's rendezvous makes rounds, at round granularity.

The aggregate job (`job.py`) holds what every protocol shares: faults, the scheduler, restarts,
a round's members starting their workers together and leaving together at the first reason.
A round model holds the rest, the way a SimPy resource fills in `_do_put`/`_do_get`: when the
agents that entered a rendezvous make a round, in which ranks, and what their store requests
cost. It answers the job through three calls: `job.formed(Formed)`, `job.nodes_waiting(seen)`
and `job.gave_up(t, names, why, reason)` (`job` is its rendezvous' cell, `cell.py`). It is a part of the protocol's kit
(its kit's `round_model` part); its kit's `Capabilities` list "aggregate" in `fidelities`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol as Interface

from ..protocols.registry import get

KIND = "round_model"


@dataclass
class Formed:
    """A round that formed: what the job records and starts."""
    round: int
    members: list[str]        # in the order the model records them (the job keeps that order)
    ranks: list[int]          # per member
    t_rank: list[float]       # per member: when it knows its rank
    started: list[float]      # per member: when its rendezvous started
    nnodes: int               # the round's size as its members read it
    closer: str               # who recorded the round closed, and when
    t_closed: float
    listed: list[str]         # the members as the closed round lists them
    master: str
    digest: str
    since: tuple[int, int]    # the model's (ops, bytes) when this round's store work began
    doomed: bool = False      # a member died before the workers started: they wait for it


@dataclass(frozen=True)
class CellSpec:
    """What a round model's `cells(job)` declares of one rendezvous (`cell.py`)."""
    hosts: list             # its hosts' names
    sc: object              # the scenario as its rendezvous reads it (min_nodes, max_nodes, protocol)
    protocol: object        # the protocol instance that keys its store
    first: int = 0          # its rounds are first, first + step, ... in the job's tables
    step: int = 1


class Rendezvous(Interface):
    """The port a round model sees as `self.job`: one rendezvous of the job (`cell.Cell`), not
    the job. A test holds every round model to these names."""
    sc: object              # the scenario as this rendezvous reads it
    protocol: object        # the protocol instance that keys its store
    hosts: list             # its hosts' names
    host: object            # ... as codes (`hosts.HostCodes`): arrays by host code
    nodes: dict             # name -> SimNode (its `info`: what a host tells the store)
    lat: dict               # name -> one-way latency to the store, seconds
    env: object             # the SimPy environment (`now`)
    trace: object           # the recorder, with this rendezvous' round numbers
    round: int              # the store's round now (a requeue starts again at 0)
    members: object         # the running round's members (`hosts.HostList`)
    is_member: object       # by host code
    restarts: object        # restarts used, by host code
    t_ws: float             # when the running round's workers started

    def at(self, t: float, fn) -> None: ...                       # call fn at t (void on a requeue)
    def formed(self, f: "Formed") -> float: ...                   # a round formed: start its workers
    def nodes_waiting(self, seen: float) -> None: ...             # the members see waiters at `seen`
    def round_ended(self, t: float | None) -> None: ...           # the model ended the running round
    def gave_up(self, t: float, names: list[str], why: str, reason: str) -> None: ...   # agents exit


class RoundModel:
    """The part a protocol fills in; `job` is the `Rendezvous` it serves (a `Cell`): the job's
    one rendezvous, or one of several (`cells`)."""

    # True: a round whose last member died is ended by the model (its waiters probe the
    # members, as hrw's do), not by the job at once: nobody is left to end it
    probes_members = False

    def __init__(self, job):
        self.job = job

    @classmethod
    def cells(cls, job) -> list:
        """The job's rendezvous, as `CellSpec`s: one of every host, unless the protocol's
        hosts meet in several (a per-step job's replica groups). `job` shows the same names
        as a `Rendezvous` (sc, protocol, hosts, nodes): the whole job's."""
        return [CellSpec(job.hosts, job.sc, job.protocol)]

    def counter(self):
        """What counts this model's store requests: an object with `ops` and `bytes`."""
        raise NotImplementedError

    @property
    def ops(self) -> int:
        return self.counter().ops

    @property
    def bytes(self) -> int:
        return self.counter().bytes

    def enter(self, names: list[str], times: list[float]) -> None:
        """These agents start a rendezvous at these times (a start, or back from a round)."""
        raise NotImplementedError

    def gone(self, name: str, t: float) -> None:
        """`name`'s agent is gone at `t` (crashed, stopped or out of restarts)."""

    def leave(self, members: list[str], t: float) -> list[float]:
        """The round's live members leave it at `t`: when each is ready to enter again."""
        return [t] * len(members)

    def running(self, formed: Formed, t_workers: float) -> None:
        """The round's workers start at `t_workers` (its store work while running)."""

    def regrouped(self, members, t_workers: float) -> None:
        """The running world recovered in place (no store round): these are its members now,
        training from `t_workers`."""

    def shut_down(self, names: list[str], t: float) -> None:
        """These agents exit at `t` by their handler's shutdown (out of restarts, timed out,
        closed): what the protocol's shutdown does to the others."""

    def reset(self) -> None:
        """The job starts again on a fresh store."""
        raise NotImplementedError


def round_model_of(protocol: str) -> type[RoundModel]:
    """The protocol's kit's `round_model` part: `model(job)` makes its rounds at fidelity
    aggregate (its kit's `Capabilities` list "aggregate" in `fidelities`)."""
    model = get(protocol).part(KIND)
    if model is None:
        raise LookupError(f"protocol {protocol!r} declares fidelity aggregate but its kit names no "
                          "round_model part")
    if not (isinstance(model, type) and issubclass(model, RoundModel)):
        raise TypeError(f"protocol {protocol!r}: its round_model part is {model!r}, not a RoundModel subclass")
    return model
