"""What `Lighthouse.replay` says of a run: the job's time cut into segments, one record per
quorum, and torchft's step counts."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    t0: float
    t1: float
    kind: str                  # train, failure (a lost step and the wait), heal, load, idle
    groups: frozenset          # the groups engaged in it (training, stalled, healing, loading)
    span: int                  # which restart from a checkpoint it belongs to
    healing: frozenset = frozenset()   # members of a training segment still healing (async
                                       # quorum): in its collectives, contributing nothing
    refused: bool = False      # a training segment too small to commit (min_replica_size)


@dataclass(frozen=True)
class QuorumRecord:
    quorum: int
    t: float
    groups: frozenset
    joined: frozenset          # heal from a live peer before they contribute
    left: frozenset
    restart: bool              # no live group held the state: every member loads a checkpoint
    cause: str                 # start, join, failure, restart, lighthouse (it came back)
    failed_at: float | None    # when the first member died since the quorum before
    quorum_id: int = 0         # torchft's id of it (the Lighthouse's, bumped on a change)
    stale: bool = False        # a member kept its process group (its last id was this one)
                               # while it was of other members, or while others made a new
                               # one: the quorum's first step fails
    store: int = -1            # the group whose TCPStore its new process groups meet on
    hung: frozenset = frozenset()   # members whose new process group found stale keys there:
                                    # they hang in Gloo's connect while the others go on


@dataclass
class Steps:
    """torchft's step counts over a replay: a step commits when its quorum's all-reduce ends
    with every member alive; a member's death fails the step in flight."""
    committed: int = 0
    failed: int = 0
    group_steps: int = 0       # sum over committed steps of the groups in them

    @property
    def attempted(self) -> int:
        return self.committed + self.failed
