"""`run(scenario)`: one simulation, its tables as DataFrames (no files needed)."""
from __future__ import annotations

from .result import RunResult, build
from .scenario.load import load
from .sim.simulation import Simulation
from .trace.memory import give_back


def run(scenario, overrides=(), seed: int | None = None, progress=None) -> RunResult:
    """Simulate `scenario` (a bundled name, a path, YAML text, a dict or a Scenario)."""
    sc = load(scenario, overrides, seed)
    if sc.fidelity == "aggregate":
        from .aggregate import AggregateJob
        sim = AggregateJob(sc)
    else:
        sim = Simulation(sc)
    stats = sim.run(progress)
    trace, (by_round, by_bin, bin_s) = sim.trace, sim.store_work()
    del sim                                  # its world is done with: only the trace is kept
    give_back()
    return build(sc, trace, stats, by_round, by_bin, bin_s)
