"""rdzv-sim: simulate, property-test and really run elastic rendezvous protocols.

    >>> import rdzv_sim
    >>> result = rdzv_sim.run("quickstart")          # doctest: +SKIP
    >>> result.summary                                # doctest: +SKIP

Importing this package is cheap: the simulator, pandas and friends load on first use.
It never imports torch (that is `real_backend`'s job).
"""
from __future__ import annotations

__version__ = "0.1.0"


def run(scenario, overrides=(), seed=None, progress=None):
    """Simulate a scenario; returns a RunResult with `events`, `rounds`, `summary` DataFrames."""
    from .api import run as _run
    return _run(scenario, overrides, seed, progress)


def load_scenario(source, overrides=(), seed=None):
    """Validate a scenario (bundled name, path, YAML text or dict); raises ScenarioError."""
    from .scenario.load import load
    return load(source, overrides, seed)


__all__ = ["run", "load_scenario", "__version__"]
