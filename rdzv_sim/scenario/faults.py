"""The scheduled faults, one model per kind: its fields, what it does on the timeline (its
actions), when it ends, what the scenario checks refuse in it, and whether the aggregate
fidelity models it. The timeline, the checks, the liveness bound and the property strategies
read these; a new kind is one class here (and a way to draw it in `rdzv_sim.testing`).

Each fault compiles to a few `Action`s (a partition: `cut`, then `heal`; a pause: `pause`,
then `resume`). The simulator walks each fault's actions in one process; the real launcher
sorts them all by time. `after` is the delay since the fault's previous action (the simulator
sleeps exactly that), `at` the absolute time (the launcher's clock).
"""
from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, ClassVar, Literal, Union

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, NonNegativeFloat, NonNegativeInt,
                      PositiveFloat, Tag, model_validator)
from ..events import Event

MAX_FLAPS = 10_000                # downs of one flap (each a cut and a heal)


class Act(str, Enum):
    """What a fault's action does; a runtime's `World` does each (or refuses it by name)."""
    __str__ = str.__str__                # its value, as text (f-strings, logs)
    __format__ = str.__format__
    CRASH = "crash"
    RESTART = "restart"
    START = "start"                       # a slow join's late start
    WORKER_FAILURE = "worker_failure"
    AGENT_FAILURE = "agent_failure"
    PAUSE = "pause"
    RESUME = "resume"
    CUT = "cut"
    HEAL = "heal"
    SLOW = "slow"
    UNSLOW = "unslow"
    LOSE = "lose"
    UNLOSE = "unlose"
    STORE_CRASH = "store_crash"
    STORE_PAUSE = "store_pause"
    STORE_RESUME = "store_resume"
    LIGHTHOUSE_DOWN = "lighthouse_down"
    LIGHTHOUSE_UP = "lighthouse_up"
    RACK_CRASH = "rack_crash"
    RACK_RESTART = "rack_restart"
    TERMINATE = "terminate"               # a preemption's notice (SIGTERM)
    RECLAIM = "reclaim"                   # the preempted host goes
    STRAGGLE = "straggle"
    UNSTRAGGLE = "unstraggle"
    CLOCK_SKEW = "clock_skew"


@dataclass(frozen=True)
class Action:
    at: float
    after: float              # seconds since this fault's previous action (or since t = 0)
    kind: Act                 # what to do (a name given is checked: `Act(name)`)
    fault: int                # index in the scenario's `faults`
    node: int | None = None
    nodes: tuple[int, ...] | None = None
    rack: int | None = None
    value: float = 0.0        # delay, offset or duration, by kind

    def __post_init__(self):
        object.__setattr__(self, "kind", Act(self.kind))


class After(BaseModel):
    """A time named by what happened: `plus` seconds after the first agent began a rendezvous
    (`rendezvous_start`: the job is up and talking to its store), or after every member of a
    round got its rank (`round_complete`), started its workers (`workers_started`) or, in real
    runs only, brought its process group up (`pg_ready`); the round is `round`, or (left out)
    the first round that does. A job's start-up time varies (a real one's most of all); a fault meant for a formed
    round says so."""
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    after: Literal["rendezvous_start", "round_complete", "workers_started", "pg_ready"]
    round: NonNegativeInt | None = None
    plus: NonNegativeFloat = 0.0

    @model_validator(mode="after")
    def _no_round_for_the_first_start(self):
        if self.after == "rendezvous_start" and self.round is not None:
            raise ValueError("after: rendezvous_start is the job's first; it takes no round "
                             "(use round_complete for a round)")
        return self

    def watch(self) -> "AnchorWatch":
        return AnchorWatch(self)


FACTS_ON = (Event.RANK_ASSIGNED, Event.ROUND_CLOSED)     # a round's size: a member's, or the round's own


class AnchorWatch:
    """Fed a run's events in time order, says when an `After` is met (both runtimes use it)."""
    EVENT = {"rendezvous_start": Event.RENDEZVOUS_START, "round_complete": Event.RANK_ASSIGNED,
             "workers_started": Event.WORKERS_STARTED, "pg_ready": Event.PG_READY}

    def __init__(self, after: After):
        self.want, self.round, self.plus = self.EVENT[after.after], after.round, after.plus
        self.members: dict[int, int] = {}       # round -> its member count (its nnodes)
        self.seen: dict[int, set] = {}          # round -> the members that did `want`
        self.met: float | None = None           # when the anchor was met (plus not added)

    def feed(self, t: float, node: str, event: str, rnd, detail) -> float | None:
        """One event (`detail` a dict or None); returns the fault's start once the anchor is met."""
        if self.met is None and self.want == Event.RENDEZVOUS_START and event == self.want:
            self.met = t
        if self.met is None and rnd is not None and (self.round is None or rnd == self.round):
            if event in FACTS_ON and rnd not in self.members and detail and "nnodes" in detail:
                self.members[rnd] = int(detail["nnodes"])
            if event == self.want:
                self.seen.setdefault(rnd, set()).add(node)
            if 0 < self.members.get(rnd, 0) <= len(self.seen.get(rnd, ())):
                self.met = t
        return None if self.met is None else self.met + self.plus


def met_at(anchor: After, events) -> float | None:
    """When `events` ((t, node, event, round, detail dict) in time order) met `anchor`, or None."""
    watch = anchor.watch()
    for t, node, event, rnd, detail in events:
        if watch.feed(t, node, event, rnd, detail) is not None:
            return watch.met
    return None


class _Fault(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    aggregate: ClassVar[bool] = False          # modelled by fidelity: aggregate

    @property
    def anchor(self) -> After | None:
        """What the fault waits for before its first action (None: it is timed from t = 0)."""
        at = getattr(self, "at", None)
        return at if isinstance(at, After) else None

    @property
    def start(self) -> float:
        """Its first action's time: from t = 0, or from its anchor."""
        at = getattr(self, "at", None)
        return at.plus if isinstance(at, After) else float(at if at is not None else self.delay)

    def _where(self, i: int) -> dict:
        nodes = getattr(self, "nodes", None)
        return dict(fault=i, node=getattr(self, "node", None), rack=getattr(self, "rack", None),
                    nodes=tuple(nodes) if nodes is not None else None)

    def actions(self, i: int) -> list[Action]:
        """What fault number `i` does, in time order: one action at its start (override for
        more). An anchored fault's times count from its anchor."""
        return [Action(self.start, self.start, self.kind, **self._where(i))]

    def ends(self) -> float:
        """When its last effect (a heal, a resume, a repair) takes place (from its anchor, if any)."""
        return max(a.at for a in self.actions(0))

    def problems(self, sc, path: tuple) -> list[tuple[tuple, str]]:
        """(YAML path, message) for what the types cannot refuse (node ranges are checked for all)."""
        return []


# seconds from t = 0, or a mapping {after: round_complete, round: 0, plus: 2} (one error, not two)
At = Annotated[Union[Annotated[NonNegativeFloat, Tag("seconds")], Annotated[After, Tag("event")]],
               Discriminator(lambda v: "event" if isinstance(v, (dict, After)) else "seconds")]
AT_TAGS = ("seconds", "event")          # pydantic puts them in error paths (load.py drops them)


class _At(_Fault):
    at: At


class _Span(_At):
    """A fault that begins at `at` and is undone `duration` s later."""
    duration: PositiveFloat
    begin_end: ClassVar[tuple[str, str]]

    def value(self) -> float:
        return self.duration

    def actions(self, i: int) -> list[Action]:
        begin, end = self.begin_end
        one = self._where(i)
        return [Action(self.start, self.start, begin, value=self.value(), **one),
                Action(self.start + self.duration, self.duration, end, value=self.value(), **one)]


class _Links(_Span):
    """A fault on the named nodes' links, or a whole rack's."""
    nodes: list[int] | None = None
    rack: int | None = None
    what: ClassVar[str]

    def problems(self, sc, path):
        if (self.nodes is None) == (self.rack is None):
            return [(path, f"{self.what} names either `nodes` or `rack`")]
        return []


class Crash(_At):
    kind: Literal["crash"]
    node: int
    # the host's device is left unusable (a sticky CUDA error): an in-process restart cannot
    # absorb it and falls back to an in-job one (agent.recovery); in_job: a crash as any
    device_unusable: bool = False
    aggregate: ClassVar[bool] = True

    def actions(self, i):
        return [Action(self.start, self.start, "crash", value=float(self.device_unusable), **self._where(i))]


class Restart(_At):
    kind: Literal["restart"]
    node: int
    # the host comes back under its name with another address (a pod rescheduled: same name,
    # new IP); its workers' MASTER_ADDR must follow when it is rank 0
    new_address: bool = False
    aggregate: ClassVar[bool] = True

    def actions(self, i):
        return [Action(self.start, self.start, "restart", value=float(self.new_address), **self._where(i))]


class SlowJoin(_Fault):
    kind: Literal["slow_join"]
    node: int
    delay: NonNegativeFloat   # seconds after the job's start that the node's agent starts (joins)
    aggregate: ClassVar[bool] = True

    def actions(self, i):
        return [Action(self.delay, self.delay, "start", i, node=self.node)]


class Pause(_Span):
    kind: Literal["pause"]
    node: int
    begin_end: ClassVar = ("pause", "resume")


class Partition(_Links):
    kind: Literal["partition"]
    begin_end: ClassVar = ("cut", "heal")
    what: ClassVar = "a partition"


class Latency(_Links):
    """Extra one-way delay on the named nodes' (or a rack's) link to the store for a while:
    a congested or flapping link (real runs: the TCP fault proxy delays every chunk)."""
    kind: Literal["latency"]
    delay: PositiveFloat   # extra one-way seconds on each message
    begin_end: ClassVar = ("slow", "unslow")
    what: ClassVar = "a latency fault"

    def value(self):
        return self.delay

    def ends(self):
        return self.start + self.duration + self.delay      # a request sent just before the end


class Flap(_Links):
    """A gray failure: the named nodes' (or a rack's) network goes down for `down` s every
    `period` s, for `duration` s (a flapping switch port, a bad cable). Each down is a
    partition (real runs: the fault proxy cuts and heals); a down that outlasts the
    collectives costs a round."""
    kind: Literal["flap"]
    period: PositiveFloat   # seconds from one down to the next
    down: PositiveFloat   # seconds the link is down each period (shorter than period)
    what: ClassVar = "a flap"

    def ends(self):
        return self.start + self.duration

    def actions(self, i):
        out, last, one = [], 0.0, self._where(i)
        for j in range(math.ceil(self.duration / self.period - 1e-9)):
            start = self.start + j * self.period
            down = min(self.down, self.start + self.duration - start)
            out += [Action(start, start - last, "cut", value=down, **one),
                    Action(start + down, down, "heal", value=down, **one)]
            last = start + down
        return out

    def problems(self, sc, path):
        out = super().problems(sc, path)
        if self.down >= self.period:
            out.append((path + ("down",), f"{self.down:g} s down every {self.period:g} s leaves the "
                        "link never up: down must be shorter than period (a partition stays down)"))
        elif self.duration / self.period > MAX_FLAPS:
            out.append((path + ("period",), f"{self.duration / self.period:,.0f} downs: at most "
                        f"{MAX_FLAPS:,} per flap (a longer period, or a shorter duration)"))
        return out


class Loss(_Links):
    """A lossy link: each message on the named nodes' (or a rack's) link to the store is lost
    with probability `rate` for `duration` s, and TCP resends it after its retransmission
    timeout `rto`, doubling with each loss in a row (at most 6): a bad optic, an overrun port.
    Real runs: the fault proxy holds each chunk for the same seeded draws."""
    kind: Literal["loss"]
    rate: Annotated[float, Field(gt=0.0, le=0.9)]   # the chance each message is lost (at most 0.9)
    rto: Annotated[float, Field(ge=0.001, le=10.0)] = 0.2       # Linux's minimum RTO
    begin_end: ClassVar = ("lose", "unlose")
    what: ClassVar = "a loss fault"

    def value(self):
        return self.rate


class StoreCrash(_At):
    kind: Literal["store_crash"]


class StorePause(_Span):
    kind: Literal["store_pause"]
    begin_end: ClassVar = ("store_pause", "store_resume")


class LighthouseCrash(_Span):
    """torchft's Lighthouse process is gone for `duration` seconds, then serves again with no
    memory of past quorums (the `quorum` protocol). Each group's next quorum call fails;
    torchft's Manager retries it (`protocol.quorum_retries`) and, once out of retries, hangs
    until `protocol.quorum_timeout` and raises, killing its training process."""
    kind: Literal["lighthouse_crash"]
    begin_end: ClassVar = ("lighthouse_down", "lighthouse_up")
    aggregate: ClassVar[bool] = True

    def problems(self, sc, path):
        from ..protocols.registry import get
        if not get(sc.protocol.name).caps.lighthouse:                  # no Lighthouse to lose
            return [(path + ("kind",), "a lighthouse_crash needs a protocol with torchft's Lighthouse "
                     "(protocol.name: quorum)")]
        return []


class RackFailure(_At):
    kind: Literal["rack_failure"]
    rack: int
    repair: PositiveFloat | None = None          # restart the rack's nodes after this long
    aggregate: ClassVar[bool] = True

    def actions(self, i):
        out = [Action(self.start, self.start, "rack_crash", **self._where(i))]
        if self.repair is not None:
            out.append(Action(self.start + self.repair, self.repair, "rack_restart", **self._where(i)))
        return out


class ClockSkew(_At):
    kind: Literal["clock_skew"]
    node: int
    offset: float   # seconds the node's clock is ahead (negative: behind)

    def actions(self, i):
        return [Action(self.start, self.start, "clock_skew", value=self.offset, **self._where(i))]


class WorkerFailure(_At):
    kind: Literal["worker_failure"]
    node: int
    aggregate: ClassVar[bool] = True


class AgentFailure(_At):
    """The node's agent exits with an error, not a signal: out of its restarts (a host whose
    workers keep failing), its own bug, a failed health check. torch's launcher then calls the
    rendezvous handler's shutdown(): with c10d that closes the rendezvous for every agent of
    the job (pytorch/pytorch#67742); hrw's leaves the others to re-form."""
    kind: Literal["agent_failure"]
    node: int


class Preemption(_At):
    """Preemption with notice (a spot instance reclaimed, a pod evicted): the agent gets SIGTERM
    at `at` and the host goes away `notice` seconds later. torchrun's agent stops its workers
    and exits on SIGTERM without writing anything (torch 2.13 skips the rendezvous shutdown on
    a signal); a protocol may use the notice to leave its round cleanly (hrw ends it)."""
    kind: Literal["preemption"]
    node: int
    notice: NonNegativeFloat = 30.0   # seconds between SIGTERM (the notice) and the kill

    def actions(self, i):
        one = self._where(i)
        return [Action(self.start, self.start, "terminate", **one),
                Action(self.start + self.notice, self.notice, "reclaim", **one)]


class Straggler(_At):
    """The host's steps run `slowdown` times slower for `duration` seconds (None: to the end):
    a throttled GPU, a bad NIC. Every synchronous step of a round it is in waits for it; the
    training model charges it (goodput), and `scheduler.drain_slower_than` can drain it."""
    kind: Literal["straggler"]
    node: int
    # how many times slower its steps run (the round trains at its pace)
    slowdown: Annotated[float, Field(gt=1.0, le=1000.0)]
    duration: PositiveFloat | None = None

    def actions(self, i):
        one = self._where(i)
        out = [Action(self.start, self.start, "straggle", value=self.slowdown, **one)]
        if self.duration is not None:
            out.append(Action(self.start + self.duration, self.duration, "unstraggle", value=self.slowdown, **one))
        return out


Fault = Annotated[
    Union[Crash, Restart, SlowJoin, Pause, Partition, Latency, Flap, Loss, StoreCrash, StorePause,
          RackFailure, ClockSkew, WorkerFailure, AgentFailure, Straggler, Preemption, LighthouseCrash],
    Field(discriminator="kind"),
]

# kind -> model, in the order of the union (the reference and the strategies read it)
KINDS: dict[str, type[_Fault]] = {typing.get_args(m.model_fields["kind"].annotation)[0]: m
                                  for m in typing.get_args(typing.get_args(Fault)[0])}
AGGREGATE_KINDS = tuple(k for k, m in KINDS.items() if m.aggregate)
