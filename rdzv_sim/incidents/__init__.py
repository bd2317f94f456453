"""Incident logs as input: a team's own record of what interrupted its jobs, read and checked
(`read_log`), fitted per cause (`fit`) and turned into a scenario's `random_faults`."""
from .fit import CauseFit, fit, random_faults
from .log import LogError, read_log
from .sample import sample_log

__all__ = ["CauseFit", "LogError", "fit", "random_faults", "read_log", "sample_log"]
