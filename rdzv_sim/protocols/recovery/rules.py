"""How a job recovers when a running round fails: the agent's recovery mode, as data and pure
functions that both fidelities and the property tests read the same way.

- `in_job`: torchrun's: every member stops its workers and the job meets again (a rendezvous).
- `in_process`: NVRx's `inprocess.Wrapper`: the healthy ranks restart inside their processes,
  without a rendezvous; ranks of the dead are dropped (`ShiftRanks`), the wrapper's inactive
  ranks (hot spares) are activated up to the old size (`MaxActiveWorldSize`), the active size
  kept a multiple of the segment (`ActiveWorldSizeDivisibleBy`); it gives up to an in-job
  restart (`RetryController`) below the minimum, past `max_iterations`, or at once after a
  fault it cannot restart from (a device left unusable).
- `shrink`: torch's `shrink_group`: the survivors drop the dead ranks from their communicator,
  without a rendezvous, and the job runs smaller; below the minimum it restarts in job.

Under both in-place modes, hosts that come back (and spares not taken) wait for the next
re-form: the next failure the mode cannot absorb, or a planned one (`reform_every`).
The parts' defaults are the published values; docs/recovery.md names each source.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Collection, Sequence

from pydantic import (BaseModel, ConfigDict, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt,
                      model_validator)

from ...events import Event


class Mode(str, Enum):
    __str__ = str.__str__
    __format__ = str.__format__
    IN_JOB = "in_job"
    IN_PROCESS = "in_process"
    SHRINK = "shrink"


class Fault(str, Enum):
    """What a recovery is asked to absorb (worst first)."""
    __str__ = str.__str__
    __format__ = str.__format__
    DEVICE_UNUSABLE = "device_unusable"   # a member's device is unusable (a sticky CUDA error): its host is out
    HOST_VANISHED = "host_vanished"       # a member's host is gone without a word (its connections hang)
    HOST_LOST = "host_lost"               # a member's process died on a live host (its connections reset)
    WORKERS_FAILED = "workers_failed"     # a member's workers raised; its host and device are fine


class Fallback(str, Enum):
    """Why a failure is not absorbed in place: the job restarts in job (a rendezvous)."""
    __str__ = str.__str__
    __format__ = str.__format__
    MODE = "mode"                     # the mode does not absorb this fault
    BELOW_MIN = "below_min"           # the world left would be smaller than min_nodes
    ITERATIONS = "iterations"         # in_process: max_iterations restarts since the last rendezvous


# the rules, as data
ABSORBS: dict[Mode, frozenset] = {
    Mode.IN_JOB: frozenset(),
    Mode.IN_PROCESS: frozenset({Fault.HOST_VANISHED, Fault.HOST_LOST, Fault.WORKERS_FAILED}),
    Mode.SHRINK: frozenset(Fault),
}
KEEPS_FAILED = {Mode.IN_PROCESS: True, Mode.SHRINK: False}   # a member whose workers raised stays in
USES_SPARES = {Mode.IN_PROCESS: True, Mode.SHRINK: False}    # the wrapper's inactive ranks fill in
KEEPS_STATE = {Mode.IN_PROCESS: False, Mode.SHRINK: True}    # training goes on from memory (no reload)
EVENT = {Mode.IN_PROCESS: Event.IN_PROCESS_RESTART, Mode.SHRINK: Event.SHRINK}   # what a world made so records
IN_PLACE_EVENTS = tuple(EVENT.values())         # the events that open a world made in place


class InProcess(BaseModel):
    """NVRx 0.4.1's in-process restart, part by part (seconds)."""
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    heartbeat_timeout: PositiveFloat = 30.0     # Wrapper default (not read: see docs/recovery.md)
    soft_timeout: PositiveFloat = 60.0          # Wrapper default: no progress: restart in place
    hard_timeout: PositiveFloat = 90.0          # Wrapper default: still none: the rank is terminated
                                                # (a vanished host's rank: measured, the restart waits it)
    destroy_process_group: NonNegativeFloat = 0.5   # usage guide
    per_pending_kernel: NonNegativeFloat = 0.01     # usage guide
    pending_kernels: NonNegativeInt = 0         # assumed: NCCL kernels queued at the fault
    iteration: NonNegativeFloat = 0.0           # assumed: pending device work (the guide: about one iteration)
    last_call_wait: NonNegativeFloat = 1.0      # Wrapper default
    rank_assignment: NonNegativeFloat = 0.5     # usage guide
    barrier: NonNegativeFloat = 0.5             # usage guide (a TCPStore barrier at 16k ranks)
    initialize: NonNegativeFloat = 0.0          # assumed: the user's finalize, health check, initialize
    max_iterations: PositiveInt | None = None   # RetryController default: no limit

    @model_validator(mode="after")
    def _timeouts_in_order(self):
        if not self.soft_timeout < self.hard_timeout:      # the Wrapper enforces it too
            raise ValueError(f"soft_timeout ({self.soft_timeout:g} s) must be shorter than hard_timeout "
                             f"({self.hard_timeout:g} s): the soft one restarts, the hard one terminates")
        return self

    def stop(self) -> float:
        """From detection to the ranks' new assignment known."""
        return (self.destroy_process_group + self.per_pending_kernel * self.pending_kernels
                + self.iteration + self.last_call_wait + self.rank_assignment + self.barrier)


class Shrink(BaseModel):
    """torch 2.13's `shrink_group` (NCCL's ncclCommShrink), seconds."""
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    time: NonNegativeFloat = 2.0     # NeMo RL (NVIDIA-NeMo/RL#3186): 1.4-2.0 s at 32-1,024 GPUs


@dataclass(frozen=True)
class Plan:
    """What a recovery does: in place (`absorbed`) or an in-job restart (`why`: a `Fallback`)."""
    absorbed: bool
    why: str                          # the mode absorbing it, or the Fallback
    members: tuple = ()               # the new world in rank order
    ranked: float = 0.0               # detection -> the ranks known (no store round)
    start: float = 0.0                # ranks known -> training again


def detection(cfg, fault: Fault, notice: float) -> float:
    """Seconds from the fault until the survivors act on it. `notice`: when their collectives
    fail (in_job's detection); in_process's progress watchdog restarts them at its soft
    timeout if that comes first."""
    mode = Mode(cfg.recovery)
    if mode is Mode.IN_PROCESS and fault in (Fault.HOST_LOST, Fault.HOST_VANISHED):
        return min(notice, cfg.in_process.soft_timeout)
    return notice


def worst(faults) -> Fault:
    """The fault a recovery answers for: the worst of those gathered (Fault's order)."""
    return min(faults, key=list(Fault).index)


def gone(mode: Mode, lost: Collection[str], failed: Collection[str]) -> set:
    """The members a recovery in place drops: the lost, and under shrink those whose workers
    failed too (in_process restarts them in their processes)."""
    return set(lost) if KEEPS_FAILED[mode] else set(lost) | set(failed)


def is_spare(started_at: float, formed: float) -> bool:
    """A live idle host is one of a running world's inactive ranks (a spare the mode may take)
    when its agent was up by the time the world's store round formed (its first rank given):
    a host that came up since is not in that world, and waits for the next re-form."""
    return started_at <= formed


def out_of_iterations(cfg, iteration: int) -> bool:
    """in_process's RetryController: `iteration` restarts in place since the last rendezvous
    are its max_iterations (no limit: never)."""
    limit = cfg.in_process.max_iterations
    return limit is not None and iteration >= limit


def world(mode: Mode, members: Sequence[str], lost: Collection[str], failed: Collection[str],
          spares: Sequence[str], segment: int = 1) -> tuple:
    """The world after an in-place recovery, in rank order: the members left keep their order
    (ShiftRanks); in_process fills the old size from the spares (MaxActiveWorldSize) and keeps
    whole segments (ActiveWorldSizeDivisibleBy); shrink keeps exactly the survivors."""
    out = gone(mode, lost, failed)
    kept = [m for m in members if m not in out]
    if not USES_SPARES[mode]:
        return tuple(kept)
    need = len(members) - len(kept)
    kept += [s for s in spares if s not in out and s not in members][:need]
    return tuple(kept[:len(kept) // segment * segment])


def plan(cfg, fault: Fault, members: Sequence[str], lost: Collection[str] = (),
         failed: Collection[str] = (), spares: Sequence[str] = (), *, min_nodes: int,
         segment: int = 1, iteration: int = 0) -> Plan:
    """Absorb `fault` in place, or fall back. `members`: the running world in rank order, the
    lost ones included; `lost`: members whose host or device is gone; `failed`: members whose
    workers raised; `spares`: live idle hosts the mode may take, in order; `iteration`:
    in-place restarts since the last rendezvous."""
    mode = Mode(cfg.recovery)
    if fault not in ABSORBS[mode]:
        return Plan(False, Fallback.MODE)
    if mode is Mode.IN_PROCESS and out_of_iterations(cfg, iteration):
        return Plan(False, Fallback.ITERATIONS)
    new = world(mode, members, lost, failed, spares, segment)     # (whole segments: in_process's only)
    if len(new) < min_nodes or not new:
        return Plan(False, Fallback.BELOW_MIN)
    if mode is Mode.IN_PROCESS:
        # a vanished host has no monitor to report its rank terminated: the restart's barrier
        # waits for the hard timeout to drop it (measured: reports/validation/validate-inprocess)
        wait = cfg.in_process.hard_timeout if fault is Fault.HOST_VANISHED else 0.0
        return Plan(True, mode, new, wait + cfg.in_process.stop(), cfg.in_process.initialize)
    return Plan(True, mode, new, cfg.shrink.time, 0.0)


def reform_at(cfg, t_met: float, seen: float) -> float | None:
    """When hosts that wait (back from repair, spares not taken) make a running world re-form:
    in_job at once (torchrun's agent, at its next monitor tick); an in-place mode at a planned
    re-form `reform_every` after the job last met at the store (`t_met`: recoveries in place
    since do not move it), or never (None: at the next failure it cannot absorb)."""
    if Mode(cfg.recovery) is Mode.IN_JOB:
        return seen
    if cfg.reform_every is None:
        return None
    return max(seen, t_met + cfg.reform_every)
