"""The cluster around the job: host health, repairs, retirement, selection, the spare pool and
diagnosis, as settings and rules (`rules`); the simulator drives them (`rdzv_sim.sim.cluster`).
The same for every protocol and both fidelities: a protocol never knows it exists."""
from . import rules
from .settings import BadHosts, Diagnosis, Failures, Lifecycle, Repair, Retirement, SparePool, Stage

__all__ = ["BadHosts", "Diagnosis", "Failures", "Lifecycle", "Repair", "Retirement", "SparePool", "Stage", "rules"]
