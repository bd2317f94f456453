"""The c10d rendezvous state blob, as torchrun's DynamicRendezvousHandler keeps it.

torch pickles `_RendezvousState` and base64-encodes it under one store key. We never pickle.
In the simulator the store holds a `Blob`: the state itself, frozen, with the size torch's
pickle + base64 would have (fitted to torch 2.13's own encoding, docs/protocols.md), so that
the store's service and the clients' CPU follow the real size without encoding anything: a
compare-and-set attempt costs O(1), not O(N), however large the job. `State.encode` and the
text branch of `State.decode` are the readable form (JSON + base64, never pickle).
Node descriptors are `addr_pid_localid`; ranks are `enumerate(sorted(participants))` over the
(addr, pid, local_id) tuples, exactly as `_mark_rendezvous_complete` orders them.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

NULL_SENTINEL = "Y2FuaW1hZGFt"          # what c10d_rendezvous_backend writes for "no state"

# torch 2.13's base64(pickle(_RendezvousState)): 288 bytes empty; each participant with its
# heartbeat 4/3 x (len(addr) + 39), each node of the wait or redundancy list 4/3 x (len(addr) + 35)
# (the fit: docs/c10d-at-scale.md; tests/real/test_c10d_blob_size.py holds it to torch)
EMPTY_SIZE = 288
PARTICIPANT_EXTRA = 39
LISTED_EXTRA = 35


def desc(addr: str, pid: int, local_id: int = 0) -> str:
    return f"{addr}_{pid}_{local_id}"


def desc_key(d: str) -> tuple[str, int, int]:
    """The sort key of a descriptor: (addr, pid, local_id) as torch's dataclass orders them."""
    addr, pid, lid = d.rsplit("_", 2)
    return addr, int(pid), int(lid)


def addr_of(d: str) -> str:
    return d.rsplit("_", 2)[0]


def blob_size(participants: int, listed: int, addr_len: int) -> int:
    """Bytes of torch's encoded state with these many participants and wait/redundancy-listed nodes."""
    return EMPTY_SIZE + (4 * (participants * (addr_len + PARTICIPANT_EXTRA)
                              + listed * (addr_len + LISTED_EXTRA)) + 2) // 3


class Blob:
    """The encoded state as the simulated store holds it: a frozen `State` and torch's size.

    A blob written by compare-and-set is made from the writer's state and its one action and
    becomes a state only when someone reads it: a failed attempt never copies the state.
    Equality is identity, as a token compares in the store."""
    __slots__ = ("_state", "_parent", "_change", "size")

    def __init__(self, state: "State | None", size: int, parent: "State | None" = None, change=None):
        self._state, self._parent, self._change, self.size = state, parent, change, size

    @property
    def state(self) -> "State":
        """The state in the blob; read-only (copy it to change it)."""
        if self._state is None:
            st = self._parent.copy()
            self._change(st)
            self._state, self._parent, self._change = st, None, None
        return self._state

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"Blob({self.size} bytes)"


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
    def decode(text: "str | Blob | None") -> "State":
        """The state in a store value: a blob's (shared: copy before changing it), or parsed text."""
        if type(text) is Blob:
            return text.state
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
