"""Property-test rendezvous protocols: Hypothesis strategies and trace invariant checkers.

    from hypothesis import given
    from rdzv_sim.testing import scenarios, check_run, simulation_settings

    @simulation_settings          # no 200 ms deadline: an example is a whole simulation
    @given(scenarios(protocol="hrw"))
    def test_hrw(sc):
        check_run(sc)          # simulates, checks safety and liveness, fails with a replay file

The checkers need only pandas; the strategies need the `testing` extra (hypothesis) and load
on first use.
"""
from .invariants import Report, Violation, check_safety
from .known import Known
from .liveness import check_liveness, liveness_bound, quiet_time
from .replay import replay_hint, save_failure, to_yaml

_STRATEGIES = ("agent_settings", "fault_schedules", "protocol_settings", "replicated_stores", "scenarios",
               "simulation_settings")


def check_run(scenario, liveness: bool = True):
    """Simulate `scenario`, check every invariant; on failure raise with a replayable YAML."""
    from ..api import run
    r = run(scenario)
    tables = {"events": r.events, "rounds": r.rounds}
    report = check_safety(tables, scenario)
    if liveness:
        report.violations += check_liveness(tables, scenario).violations
    if report.unexpected:
        report.assert_ok(replay_hint(scenario))
    return r, report


def __getattr__(name):
    if name in _STRATEGIES:                # hypothesis is imported only by those who draw
        from . import strategies
        return getattr(strategies, name)
    raise AttributeError(f"module 'rdzv_sim.testing' has no attribute {name!r}")


__all__ = ["Known", "Report", "Violation", "check_liveness", "check_run", "check_safety",
           "liveness_bound", "quiet_time", "replay_hint", "save_failure", "to_yaml", *_STRATEGIES]
