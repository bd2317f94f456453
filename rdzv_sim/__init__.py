"""rdzv-sim: simulate, property-test and really run elastic rendezvous protocols.

    >>> import rdzv_sim
    >>> result = rdzv_sim.run("quickstart")          # doctest: +SKIP
    >>> result.summary                                # doctest: +SKIP

Importing this package is cheap: the simulator, pandas and friends load on first use.
It never imports torch (that is `real_backend`'s job).
"""
from __future__ import annotations

from .errors import Error

__version__ = "0.1.0"


def run(scenario, overrides=(), seed=None, progress=None):
    """Simulate a scenario; returns a RunResult with `events`, `rounds`, `summary` DataFrames."""
    from .api import run as _run
    return _run(scenario, overrides, seed, progress)


def compare(scenario, vary, seeds=5, overrides=(), workers=None, progress=None):
    """Run each variant of `vary` ({"agent.recovery": ["in_job", "shrink"]}) on the same seeds;
    returns a Comparison: `lines` (the answer first), `table` (a row per variant, paired 95%
    intervals), `runs` (a row per run)."""
    from .comparison import compare as _compare
    return _compare(scenario, vary, seeds, overrides, workers, progress=progress)


def load_scenario(source, overrides=(), seed=None):
    """Validate a scenario (bundled name, path, YAML text or dict); raises ScenarioError."""
    from .scenario.load import load
    return load(source, overrides, seed)


_LAZY = {"register_kit": ("protocols.registry", "register_kit"),
         "Kit": ("protocols.kit", "Kit"),
         "Capabilities": ("protocols.kit", "Capabilities"),
         "Protocol": ("protocols.base", "Protocol"),
         "ProtocolSettings": ("protocols.settings", "ProtocolSettings"),
         "ScenarioError": ("scenario.load", "ScenarioError"),
         "RunResult": ("result", "RunResult")}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    raise AttributeError(f"module 'rdzv_sim' has no attribute {name!r}")


__all__ = ["run", "compare", "load_scenario", "Kit", "Capabilities", "register_kit", "Error", "Protocol", "ProtocolSettings",
           "ScenarioError", "RunResult", "__version__"]
