"""What torchft's parts cost a per-step job, and its Managers' rules for a lost Lighthouse
(the parts `Lighthouse.replay` charges)."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)   # 16 fields: by name, never by position
class Costs:
    step_time: float = 5.0          # seconds of one step's compute
    quorum_cost: float = 0.01       # seconds each step spends asking for its quorum
    reconfigure: float = 1.0        # seconds to configure a new quorum's collectives
    heal: float = 0.0               # seconds a joining group fetches its state
    detection: float = 0.0          # seconds until a dead member fails the survivors' step
                                    # (a life may say its own: a vanished host's is longer)
    load: float = 0.0               # seconds to load a checkpoint (a restart without live state)
    overlap: bool = False           # torchft's use_async_quorum: the quorum call and a joiner's
                                    # heal overlap the step's compute (`heal_wait`)
    init_sync: bool = True          # torchft's init_sync: the first quorum syncs all groups but one
    sync_every: int = 1             # steps between synchronisations (LocalSGD / DiLoCo)
    quorum_retries: int = 0         # torchft Manager's retries of a failed Lighthouse call ...
    quorum_timeout: float = 60.0    # ... spread over its quorum timeout, after which it raises
    restart: float = 0.0            # seconds until a training process that raised runs again
    min_commit: int = 1             # torchft Manager's min_replica_size: a step commits only
                                    # with this many participating groups
    timeout: float = 60.0           # torchft Manager's timeout: a collective that hangs fails after it
    ids: str = "restart"            # a restarted Lighthouse's quorum ids: "restart" from 1 (torchft
                                    # 0.2.0), "unique" (never one it gave before)
    stale_connect: float = 25.0     # seconds a new process group hangs on stale keys (Gloo's connect)

    def lighthouse_back(self, r: float, back: float) -> tuple[float, bool]:
        """A quorum asked at r, the Lighthouse gone until `back`: when a request reaches it,
        and whether the training processes died first. torchft 0.2.0's Manager retries every
        max(0.1 s, quorum_timeout / (retries + 1)); after its last retry the call hangs until
        quorum_timeout and raises (docs/per-step.md, "Losing the Lighthouse"), so the process dies, is
        restarted (`restart`) and asks again."""
        if math.isinf(back):
            return back, True
        every = max(0.1, self.quorum_timeout / (self.quorum_retries + 1))
        died, ask = False, r
        for _ in range(100_000):
            k = max(0, math.ceil((back - ask) / every - 1e-9))
            if k <= self.quorum_retries:
                return ask + k * every, died
            died, ask = True, ask + self.quorum_timeout + self.restart
        raise ValueError("the Lighthouse outage outlasts 100,000 restarts of the job")

    @property
    def overlapped(self) -> bool:
        """Whether the quorum call and a heal overlap compute: the async quorum of a job that
        syncs every step. LocalSGD and DiLoCo (sync_every > 1) ask at a window's end and
        all-reduce at once (torchft 0.2.0's `LocalSGD.sync`; DiLoCo refuses the async
        quorum), so no compute is left to hide them behind."""
        return self.overlap and self.sync_every == 1

    @property
    def first_call(self) -> float:
        """Seconds from a group's start to its first quorum call: none when it syncs every
        step; with sync_every > 1 (torchft 0.2.0's LocalSGD, DiLoCo) the call ends its first
        window, whose steps, computed alone, its heal overwrites."""
        return self.sync_every * self.step_time if self.sync_every > 1 else 0.0

    @property
    def heal_wait(self) -> float:
        """What a heal stalls every member: all of it (synchronous quorum), or what it takes
        beyond the compute before the step's first all-reduce (async: torchft 0.2.0 fetches
        the state inside the quorum future, and `Manager.allreduce` waits for that future, so
        the healing group's all-reduce, and everyone's with it, waits for the heal)."""
        return max(0.0, self.heal - self.step_time) if self.overlapped else self.heal

    @property
    def step(self) -> float:
        """Seconds between two quorums: `sync_every` steps and, unless it overlaps, the call."""
        return self.sync_every * self.step_time + (0.0 if self.overlapped else self.quorum_cost)
