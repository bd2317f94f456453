"""Cores that every simulated host shares, for reproducing runs of N agents on one machine.

A cluster gives each agent its own CPU and needs none of this. With `cluster.cpu.shared_cores`
set, the runtime asks a CPU factory, `factory(env, cfg, rng)`, for the shared cores once;
`shared_cores` is the default factory and picks the scenario's `scheduler`. A caller that wants
to watch or change the scheduler passes its own factory to `Simulation(sc, cpu=...)`.
"""
from __future__ import annotations

import numpy as np

from .fair import PREEMPT_RATE, SLICE, TICK, WAKEUP_PREEMPT, FairCpu
from .sharing import SharedCpu


def shared_cores(env, cfg, rng: np.random.Generator, fair: type = FairCpu):
    """The cores of `cfg` (a RuntimeConfig) as its scheduler runs them; the fair scheduler
    draws from a generator of its own, seeded from `rng`. `fair` may be a FairCpu subclass."""
    if cfg.scheduler == "sharing":
        return SharedCpu(env, cfg.shared_cores)
    own = np.random.default_rng(int(rng.integers(2**63)))
    return fair(env, cfg.shared_cores, own, slice=cfg.slice, tick=cfg.tick,
                preempt_rate=cfg.preempt_rate, wakeup_preempt=cfg.wakeup_preempt)


__all__ = ["FairCpu", "SharedCpu", "shared_cores", "PREEMPT_RATE", "SLICE", "TICK", "WAKEUP_PREEMPT"]
