"""`run(scenario)`: one simulation, its tables as DataFrames (no files needed)."""
from __future__ import annotations

from .placement import shard_moves
from .result import RunResult
from .scenario.load import load
from .sim.simulation import Simulation
from .trace import events_table, rounds_table, store_load_table, summary_table


def run(scenario, overrides=(), seed: int | None = None, progress=None) -> RunResult:
    """Simulate `scenario` (a bundled name, a path, YAML text, a dict or a Scenario)."""
    sc = load(scenario, overrides, seed)
    sim = Simulation(sc)
    stats = sim.run(progress)
    events = events_table(sim.trace.rows, sc.name, sc.seed)
    rounds = rounds_table(events, sim.runtime.round_ops)
    moves = shard_moves(rounds, events, sc.shards.count, sc.shards.policies, sc.shards.ring_vnodes)
    rounds = rounds.join(moves)
    rounds.insert(0, "schema_version", events["schema_version"].iloc[0] if len(events) else 1)
    rounds.insert(1, "scenario", sc.name)
    rounds.insert(2, "seed", sc.seed)
    summary = summary_table(events, rounds, stats, sc.name, sc.seed)
    store_load = store_load_table(sim.runtime.load, sim.runtime.load_bin, sc.name, sc.seed)
    return RunResult(sc, events, rounds, summary, store_load, stats.wall_s)
