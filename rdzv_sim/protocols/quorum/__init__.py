"""Per-step fault tolerance (torchft-style): replica groups that meet in a quorum every step.

`protocol.py`: the hosts of each replica group meet by `hrw`, one run per group, so a host's
failure restarts its group only; `rules.py`: torchft's quorum rules; `server.py`: its
Lighthouse's state, sans-IO; `lighthouse.py`: the quorum of live groups, replayed over the
groups' lives (`rdzv_sim/training/quorum.py`), charging `costs.py` and saying `records.py`.
"""
from .lighthouse import Lighthouse
from .rules import HealPlan, QuorumRules, Verdict, heal_plan
from .server import LighthouseState, Member, Quorum
from .protocol import QuorumProtocol, QuorumSettings

__all__ = ["HealPlan", "Lighthouse", "LighthouseState", "Member", "Quorum", "QuorumRules",
           "QuorumProtocol", "QuorumSettings", "Verdict", "heal_plan"]
