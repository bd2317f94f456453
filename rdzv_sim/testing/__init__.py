"""Property-test rendezvous protocols: Hypothesis strategies and trace invariant checkers.

    from hypothesis import given
    from rdzv_sim.testing import scenarios, check_run

    @given(scenarios(protocol="hrw"))
    def test_hrw(sc):
        check_run(sc)          # simulates, checks safety and liveness, fails with a replay file

Needs the `testing` extra (hypothesis).
"""
from .invariants import Report, Violation, check_safety
from .liveness import check_liveness, liveness_bound, quiet_time
from .known import KNOWN
from .replay import replay_hint, save_failure, to_yaml
from .strategies import (agent_settings, fault_schedules, protocol_settings, replicated_stores,
                         scenarios)


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


__all__ = ["Report", "Violation", "check_liveness", "check_safety", "check_run", "liveness_bound",
           "quiet_time", "KNOWN", "replay_hint", "save_failure", "to_yaml", "agent_settings",
           "fault_schedules", "protocol_settings", "scenarios"]
