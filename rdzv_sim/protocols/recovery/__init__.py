"""How a job recovers when a running round fails: the modes' rules (`rules.py`, data and pure
functions) and the one machine both fidelities drive with them (`machine.py`)."""
from .machine import Absorb, Decision, FallBack, Ignore, InJob, Machine, Over, Wait, World
from .rules import (ABSORBS, EVENT, IN_PLACE_EVENTS, KEEPS_FAILED, KEEPS_STATE, USES_SPARES, Fallback, Fault,
                    InProcess, Mode, Plan, Shrink, detection, gone, is_spare, out_of_iterations, plan, reform_at,
                    world, worst)

__all__ = ["ABSORBS", "EVENT", "IN_PLACE_EVENTS", "KEEPS_FAILED", "KEEPS_STATE", "USES_SPARES", "Absorb",
           "Decision", "FallBack", "Fallback", "Fault", "Ignore", "InJob", "InProcess", "Machine", "Mode", "Over",
           "Plan", "Shrink", "Wait", "World", "detection", "gone", "is_spare", "out_of_iterations", "plan",
           "reform_at", "world", "worst"]
