"""The c10d rendezvous state blob, as torchrun's DynamicRendezvousHandler keeps it.

torch pickles `_RendezvousState` and base64-encodes it under one store key. We never pickle:
the model encodes the same fields as JSON, then base64 as torch's c10d backend does, so the
blob still grows with N at about torch's rate (the store's service time follows its size).
Node descriptors are `addr_pid_localid`; ranks are `enumerate(sorted(participants))` over the
(addr, pid, local_id) tuples, exactly as `_mark_rendezvous_complete` orders them.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

NULL_SENTINEL = "Y2FuaW1hZGFt"          # what c10d_rendezvous_backend writes for "no state"


def desc(addr: str, pid: int, local_id: int = 0) -> str:
    return f"{addr}_{pid}_{local_id}"


def desc_key(d: str) -> tuple[str, int, int]:
    """The sort key of a descriptor: (addr, pid, local_id) as torch's dataclass orders them."""
    addr, pid, lid = d.rsplit("_", 2)
    return addr, int(pid), int(lid)


def addr_of(d: str) -> str:
    return d.rsplit("_", 2)[0]


@dataclass
class State:
    round: int = 0
    complete: bool = False
    deadline: float | None = None           # wall-clock seconds
    closed: bool = False
    participants: dict[str, int] = field(default_factory=dict)
    wait_list: set[str] = field(default_factory=set)
    redundancy_list: set[str] = field(default_factory=set)
    last_heartbeats: dict[str, float] = field(default_factory=dict)   # wall-clock seconds

    def copy(self) -> "State":
        return State(self.round, self.complete, self.deadline, self.closed, dict(self.participants),
                     set(self.wait_list), set(self.redundancy_list), dict(self.last_heartbeats))

    def encode(self) -> str:
        d = {"round": self.round, "complete": self.complete, "deadline": self.deadline,
             "closed": self.closed, "participants": self.participants,
             "wait_list": sorted(self.wait_list), "redundancy_list": sorted(self.redundancy_list),
             "last_heartbeats": {k: _iso(v) for k, v in sorted(self.last_heartbeats.items())}}
        return base64.b64encode(json.dumps(d, sort_keys=True).encode()).decode()

    @staticmethod
    def decode(text: str | None) -> "State":
        if text is None or text == NULL_SENTINEL:
            return State()
        d = json.loads(base64.b64decode(text))
        return State(int(d["round"]), bool(d["complete"]), d["deadline"], bool(d["closed"]),
                     {k: int(v) for k, v in d["participants"].items()}, set(d["wait_list"]),
                     set(d["redundancy_list"]),
                     {k: _from_iso(v) for k, v in d["last_heartbeats"].items()})


def _iso(t: float) -> str:
    # fixed-width text like a pickled datetime's payload: keeps the blob's size honest
    return f"{t:017.6f}+00:00"


def _from_iso(s: str) -> float:
    return float(s.split("+")[0])
