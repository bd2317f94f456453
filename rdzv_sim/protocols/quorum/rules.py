"""torchft's quorum rules, as data and pure functions: which replicas form a quorum, when its
id changes, and who heals from whom.

`QuorumRules.compute` is the Lighthouse's `quorum_compute` (torchft `src/lighthouse.rs`), its
verdicts the reasons torchft logs; `next_quorum_id` is its `_quorum_tick`'s bump; `heal_plan` is
the Manager's `compute_quorum_results` (`src/manager.rs`). The tests port torchft's own unit
tests of these, case by case (`tests/protocols/quorum/test_torchft_rules.py`), and run the same cases
against torchft's real Lighthouse and Managers where torchft is installed.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass


class Verdict(enum.Enum):
    """Why a quorum formed or did not (torchft's reason strings, as types)."""
    FAST = "Fast quorum found!"                          # every member of the last quorum asked
    VALID = "Valid quorum found"
    TOO_FEW = "need min_replicas"                        # fewer healthy askers than min_replicas
    SPLIT_BRAIN = "need at least half"                   # half the heartbeating replicas or fewer
    STRAGGLERS = "join timeout"                          # heartbeating replicas that have not asked

    @property
    def formed(self) -> bool:
        return self in (Verdict.FAST, Verdict.VALID)


@dataclass(frozen=True)
class Decision:
    members: frozenset | None        # the quorum (None: not yet)
    verdict: Verdict


@dataclass(frozen=True)
class QuorumRules:
    """torchft's Lighthouse options (seconds, not ms): `min_replicas`, `join_timeout`
    (join_timeout_ms), `heartbeat_timeout` (heartbeat_timeout_ms), `tick` (quorum_tick_ms)."""
    min_replicas: int = 1
    join_timeout: float = 60.0
    heartbeat_timeout: float = 5.0
    tick: float = 0.1

    def compute(self, now: float, asked: dict, beating: set, prev: frozenset | None,
                shrink_only: frozenset | set = frozenset()) -> Decision:
        """The quorum at `now`. `asked`: replica -> when it asked (its `joined`); `beating`:
        the replicas whose last heartbeat is younger than `heartbeat_timeout`; `prev`: the
        last quorum's members; `shrink_only`: the askers that asked with shrink_only."""
        healthy = {g: t for g, t in asked.items() if g in beating}
        members = frozenset(healthy)
        if prev:
            if any(g in shrink_only for g in healthy):
                members = members & prev        # a shrink-only quorum keeps out every joiner
            if all(g in healthy for g in prev):
                return Decision(members, Verdict.FAST)
        # min_replicas and split brain count the healthy askers before the shrink-only filter
        if len(healthy) < self.min_replicas:
            return Decision(None, Verdict.TOO_FEW)
        if len(healthy) <= len(beating) // 2:
            return Decision(None, Verdict.SPLIT_BRAIN)
        if len(healthy) < len(beating) and now - min(healthy.values()) < self.join_timeout:
            return Decision(None, Verdict.STRAGGLERS)
        return Decision(members, Verdict.VALID)

    def decide(self, now: float, asked: dict, beating: set, prev: frozenset | None,
               shrink_only: frozenset | set = frozenset()):
        """The quorum at `now` (a frozenset) or None: `compute` without its reason."""
        return self.compute(now, asked, beating, prev, shrink_only).members

    @staticmethod
    def next_quorum_id(quorum_id: int, members, prev, commit_failures: bool) -> int:
        """torchft's quorum id after a quorum of `members` forms: bumped when its replicas
        differ from the last quorum's (`prev`, None before the first), or when any member
        reports failed commits, so every Manager reconfigures its collectives."""
        if prev is None or sorted(members) != sorted(prev) or commit_failures:
            return quorum_id + 1
        return quorum_id

    def on_tick(self, t: float) -> float:
        """The first Lighthouse tick at or after t (it looks again every `tick` seconds)."""
        return math.ceil(t / self.tick - 1e-9) * self.tick


@dataclass(frozen=True)
class HealPlan:
    """What one replica learns from a quorum (torchft's ManagerQuorumResponse, in part)."""
    replica_rank: int
    replica_world_size: int
    max_step: int
    max_replica_rank: int | None     # its rank among the replicas at max_step (None: not one)
    max_world_size: int
    heal: bool                       # it fetches its state before it trains
    recover_src_replica_rank: int | None
    recover_dst_replica_ranks: tuple[int, ...]   # the replicas that fetch their state from it
    primary_replica_rank: int        # whose store the group's ranks use, among max-step replicas
    commit_failures: int


def heal_plan(replica_id, group_rank: int, steps: dict, init_sync: bool = True,
              commit_failures: dict | None = None) -> HealPlan:
    """torchft's `compute_quorum_results` for replica `replica_id` (its group rank
    `group_rank`) in a quorum whose members are `steps` (replica -> its step). Replicas behind
    the quorum's max step heal, and at step 0 with `init_sync` every replica but the primary
    does; sources are the up-to-date replicas, round-robin from `group_rank`."""
    ids = sorted(steps)
    if replica_id not in steps:
        raise ValueError(f"replica {replica_id} not participating in returned quorum")
    rank = ids.index(replica_id)
    max_step = max(steps.values())
    at_max = [r for r in ids if steps[r] == max_step]
    primary = at_max[group_rank % len(at_max)]
    force = init_sync and max_step == 0
    dst = [i for i, r in enumerate(ids) if steps[r] != max_step or (force and r != primary)]
    up_to_date = [i for i in range(len(ids)) if i not in set(dst)]
    src_of = {d: up_to_date[(k + group_rank) % len(up_to_date)] for k, d in enumerate(dst)}
    cf = commit_failures or {}
    return HealPlan(
        replica_rank=rank, replica_world_size=len(ids), max_step=max_step,
        max_replica_rank=at_max.index(replica_id) if replica_id in at_max else None,
        max_world_size=len(at_max), heal=rank in src_of,
        recover_src_replica_rank=src_of.get(rank),
        recover_dst_replica_ranks=tuple(d for d in dst if src_of[d] == rank),
        primary_replica_rank=ids.index(primary),
        commit_failures=max((cf.get(r, 0) for r in ids), default=0))
