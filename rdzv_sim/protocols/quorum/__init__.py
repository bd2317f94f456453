"""Per-step fault tolerance (torchft-style): replica groups that meet in a quorum every step.

`protocol.py`: the hosts of each replica group meet by `hrw`, one run per group, so a host's
failure restarts its group only; `lighthouse.py`: the quorum of live groups (torchft's
Lighthouse rules), replayed over the groups' lives (`rdzv_sim/training/quorum.py`).
"""
from .lighthouse import Lighthouse, QuorumRules
from .protocol import QuorumProtocol, QuorumSettings

__all__ = ["Lighthouse", "QuorumRules", "QuorumProtocol", "QuorumSettings"]
