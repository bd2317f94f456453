"""The cluster around the job, as a scenario section (`lifecycle:`): where failures come from,
which hosts are bad, how repairs go, which hosts are retired or chosen, the spare pool and
diagnosis. Every default is AIReSim's (arXiv 2603.07041, its Table 1); docs/cluster.md names
each source. Times are seconds, rates per host and day."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

Probability = Annotated[float, Field(ge=0.0, le=1.0)]
MAX_STAGES = 16
MAX_POOL = 100_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Failures(Strict):
    """Each host's failure process: exponential, at `per_host_day` (a bad host's times
    1 + `bad_hosts.multiplier`). `clock`: a host fails while it is up (`wall`: a powered host
    fails whatever it runs) or only while it trains (`training`: AIReSim's, whose job's
    servers fail only while they compute)."""
    per_host_day: PositiveFloat = 0.01          # AIReSim Table 1: 0.01 failures a day a server
    clock: Literal["wall", "training"] = "wall"
    detection: NonNegativeFloat | None = None   # seconds until the peers act (None: the agent's)
    # what the job's recovery sees: a host gone without a word (its peers' collectives hang), or
    # its processes dead on a live host (their connections reset)
    fault: Literal["host_vanished", "host_lost"] = "host_vanished"


class BadHosts(Strict):
    """Hosts that fail more often (AIReSim's systematic failures): `fraction` of every host at
    the start, failing at `multiplier` times the base rate on top of it; a repair that works
    makes a bad host good. `regenerate_every`: so often, a tenth of `fraction` of the good
    hosts turn bad (at least one: ageing, a bad batch), as AIReSim's regeneration."""
    fraction: Probability = 0.0
    multiplier: NonNegativeFloat = 5.0          # AIReSim Table 1: bad servers fail at 5x on top
    regenerate_every: PositiveFloat | None = None


class Stage(Strict):
    """One step of the repair pipeline: it takes `duration` (fixed, or exponential of that
    mean); with probability `escalate` it cannot handle the host and hands it to the next
    stage; otherwise it says the host is repaired, wrongly with probability `leaves_faulty`."""
    name: Annotated[str, Field(min_length=1, max_length=100)]
    duration: PositiveFloat
    distribution: Literal["fixed", "exponential"] = "exponential"
    escalate: Probability = 0.0
    leaves_faulty: Probability = 0.0


AIRESIM_STAGES = (Stage(name="automated", duration=7200.0, escalate=0.8, leaves_faulty=0.4),
                  Stage(name="manual", duration=172800.0, leaves_faulty=0.2))


class Repair(Strict):
    """The repair pipeline a failed host goes through before it can be chosen again. A last
    stage escalates to nobody: what it cannot handle it returns as it is. `failed_repair`:
    what a repair that did not work leaves (`keep`: the host as it was, AIReSim's; `bad`:
    a host repaired badly fails as a bad one until a repair works)."""
    stages: Annotated[tuple[Stage, ...], Field(min_length=1, max_length=MAX_STAGES)] = AIRESIM_STAGES
    failed_repair: Literal["keep", "bad"] = "keep"


class Retirement(Strict):
    """When a repaired host is retired for good. `threshold`: `failures` failures within
    `window` seconds (the scheduler's `exclude_after` is its case without a window); `scored`:
    a score that starts at `initial`, loses `penalty` a failure and gains `credit` for every
    whole `period` a host trained since its last failure, retired at or below `floor`."""
    policy: Literal["never", "threshold", "scored"] = "never"
    failures: PositiveInt = 5
    window: PositiveFloat = 604800.0            # AIReSim's ThresholdRemoval: 5 in 7 days
    initial: float = 100.0                      # AIReSim's ScoredRemoval defaults
    penalty: NonNegativeFloat = 30.0
    credit: NonNegativeFloat = 10.0
    period: PositiveFloat = 86400.0
    floor: float = 0.0


class SparePool(Strict):
    """Hosts beside the working pool that run other (preemptible) work: drawn on, one at a
    time at `preemption` seconds each, when the working pool cannot seat the job."""
    hosts: Annotated[int, Field(ge=0, le=MAX_POOL)] = 0
    preemption: NonNegativeFloat = 1200.0       # AIReSim Table 1: 20 minutes


class Diagnosis(Strict):
    """Whether a failure is pinned on a host (`probability`; otherwise the host goes back to
    the pool untouched), and on the wrong one (`uncertainty`: a healthy member is pulled for
    repair and the faulty host stays in)."""
    probability: Probability = 1.0
    uncertainty: Probability = 0.0


class Lifecycle(Strict):
    """The cluster around one job (docs/cluster.md). The working pool is `working_pool` hosts:
    the job's nodes and hot spares first (they start), the rest idle until chosen; the spare
    pool's hosts come after them. When a failure leaves the job without a warm standby, the
    scheduler chooses hosts (`selection`), which takes `selection_time`."""
    working_pool: Annotated[int, Field(ge=1, le=MAX_POOL)] | None = None   # None: the job and its hot spares
    failures: Failures = Failures()
    bad_hosts: BadHosts = BadHosts()
    repair: Repair = Repair()
    retirement: Retirement = Retirement()
    selection: Literal["random", "fewest_failures", "highest_score"] = "random"
    selection_time: NonNegativeFloat = 180.0    # AIReSim Table 1: 3 minutes
    spare_pool: SparePool = SparePool()
    diagnosis: Diagnosis = Diagnosis()

    @model_validator(mode="after")
    def _score_to_select_by(self):
        if self.selection == "highest_score" and self.retirement.policy != "scored":
            raise ValueError("selection highest_score reads the retirement score: give retirement.policy scored "
                             "(with a floor below every score to never retire by it)")
        return self


__all__ = ["BadHosts", "Diagnosis", "Failures", "Lifecycle", "Repair", "Retirement", "SparePool", "Stage"]
