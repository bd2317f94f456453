"""The project's scalable elastic rendezvous: per-node keys, one CAS to close, HRW ranks.

Every node does O(1) store operations a round; only the closer does O(N). The files: the
protocol (`protocol.py`: joining, closing, confirming, a running round), its store layout
(`keys.py`), its settings, and store failover as a part of its own (`failover.py`).
"""
from .failover import SUCCESSORS, OneStore, StoreFailover, has_quorum
from .protocol import HrwProtocol
from .settings import HrwSettings

__all__ = ["HrwProtocol", "HrwSettings", "OneStore", "StoreFailover", "SUCCESSORS", "has_quorum"]
