"""`run(scenario)`: one simulation, its tables as DataFrames (no files needed)."""
from __future__ import annotations

from .result import RunResult, build
from .scenario.load import load
from .sim.simulation import Simulation


def run(scenario, overrides=(), seed: int | None = None, progress=None) -> RunResult:
    """Simulate `scenario` (a bundled name, a path, YAML text, a dict or a Scenario)."""
    sc = load(scenario, overrides, seed)
    sim = Simulation(sc)
    stats = sim.run(progress)
    return build(sc, sim.trace, stats, sim.runtime.round_ops, sim.runtime.load,
                 sim.runtime.load_bin)
