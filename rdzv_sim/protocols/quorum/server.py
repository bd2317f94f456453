"""torchft's Lighthouse server without its network: the state its RPCs change, sans-IO.

torchft's `Lighthouse` keeps the participants (who asked, since when, with what), the
heartbeats and the last quorum; a quorum request is an implicit heartbeat and runs a tick at
once, and a timer runs one every `quorum_tick`. When a quorum forms its id follows
`QuorumRules.next_quorum_id`, the participants are cleared, and a requester left out (a joiner
kept out by a shrink-only quorum) asks again at once, with a new join time.

`LighthouseState` is that, driven by the caller's clock: the tests drive it with torchft's own
test cases, and the same scripts drive torchft's real server
(`tests/real/test_torchft_lighthouse.py`).
"""
from __future__ import annotations

from dataclasses import dataclass

from .rules import Decision, QuorumRules, Verdict


@dataclass(frozen=True)
class Member:
    """What a replica asks with (torchft's QuorumMember, less its addresses)."""
    replica_id: str
    step: int = 0
    shrink_only: bool = False
    commit_failures: int = 0


@dataclass(frozen=True)
class Quorum:
    quorum_id: int
    participants: tuple[Member, ...]         # sorted by replica id, as torchft sorts them
    t: float
    verdict: Verdict

    @property
    def ids(self) -> list[str]:
        return [m.replica_id for m in self.participants]


class LighthouseState:
    """The Lighthouse's state and its three inputs: `heartbeat`, `request`, `tick`."""

    def __init__(self, rules: QuorumRules):
        self.rules = rules
        self.participants: dict[str, tuple[float, Member]] = {}   # replica -> (joined, member)
        self.heartbeats: dict[str, float] = {}
        self.waiting: dict[str, Member] = {}       # requests not answered yet
        self.prev: Quorum | None = None
        self.quorum_id = 0
        self.verdict: Verdict | None = None        # the last tick's, as torchft's status shows

    def heartbeat(self, now: float, replica_id: str) -> None:
        self.heartbeats[replica_id] = now

    def request(self, now: float, member: Member) -> Quorum | None:
        """A quorum request: a heartbeat, a participant, then a tick at once."""
        self.heartbeats[member.replica_id] = now
        self.participants[member.replica_id] = (now, member)
        self.waiting[member.replica_id] = member
        return self.tick(now)

    def healthy(self, now: float) -> set:
        return {r for r, t in self.heartbeats.items() if now - t < self.rules.heartbeat_timeout}

    def decision(self, now: float) -> Decision:
        """torchft's quorum_compute on this state at `now`, changing nothing."""
        return self.rules.compute(now, {r: j for r, (j, _) in self.participants.items()},
                                  self.healthy(now), frozenset(self.prev.ids) if self.prev else None,
                                  {r for r, (_, m) in self.participants.items() if m.shrink_only})

    def tick(self, now: float) -> Quorum | None:
        """The quorum formed at `now`, if one does; every asker in it is answered."""
        prev = frozenset(self.prev.ids) if self.prev else None
        d = self.decision(now)
        self.verdict = d.verdict
        if d.members is None:
            return None
        parts = tuple(sorted((self.participants[r][1] for r in d.members), key=lambda m: m.replica_id))
        self.quorum_id = self.rules.next_quorum_id(self.quorum_id, [m.replica_id for m in parts],
                                                   prev, any(m.commit_failures > 0 for m in parts))
        q = self.prev = Quorum(self.quorum_id, parts, now, d.verdict)
        self.participants.clear()
        # a requester left out hears the quorum and asks again, as of now
        self.waiting = {r: m for r, m in self.waiting.items() if r not in d.members}
        for r, m in self.waiting.items():
            self.participants[r] = (now, m)
        return q
