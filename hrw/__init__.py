"""hrw: highest-random-weight (rendezvous) hashing for placement, election and rank order.

    >>> from hrw import Placement
    >>> p = Placement(["host-a", "host-b", "host-c"], seed=7)
    >>> p.owner("shard-42") in p.nodes
    True

The spec ("hrw spec v1") is in SPEC.md; `hrw.spec` is its executable reference.
"""
from .assignment import Assignment, Change
from .domains import failure_domains
from .key_ranking import KeyRanking
from .placement import Placement
from .shortlist import Shortlist
from .spec import hash64, ranking

SPEC_VERSION = 1

__all__ = ["Assignment", "Change", "KeyRanking", "Placement", "Shortlist", "failure_domains", "hash64", "ranking",
           "SPEC_VERSION"]
