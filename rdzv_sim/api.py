"""`run(scenario)`: one simulation, its tables as DataFrames (no files needed)."""
from __future__ import annotations

from .result import RunResult, build, build_spilled, spill_to
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
    if sc.outputs.stream:                    # rows go to disk as the run finishes with them
        sim.trace.sink = spill_to(sim.trace)
    stats = sim.run(progress)
    trace, (by_round, by_bin, bin_s) = sim.trace, sim.store_work()
    del sim                                  # its world is done with: only the trace is kept
    give_back()
    if trace.sink is not None:
        return build_spilled(sc, trace, stats, by_round, by_bin, bin_s)
    return build(sc, trace, stats, by_round, by_bin, bin_s)
