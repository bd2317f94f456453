"""Incident logs as input: a team's own record of what interrupted its jobs, read and checked
(`read_log`), fitted per cause (`fit`) and turned into a scenario's `random_faults`, or
replayed as it happened (`replay_plan`, a scenario's `incident_log` random fault)."""
from .fit import CauseFit, fit, random_faults
from .log import LogError, read_log
from .replay import logged, replay_plan, replay_rates
from .sample import sample_log

__all__ = ["CauseFit", "LogError", "fit", "logged", "random_faults", "read_log", "replay_plan", "replay_rates",
           "sample_log"]
