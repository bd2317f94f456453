"""Invariants a protocol is known to break because the real system does too.

Each entry names the invariant, when it applies (a predicate on the scenario and the
violation), why the real protocol breaks it, and the source line it comes from. A checker
marks matching violations as known; every other violation still fails.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..protocols.registry import get
from .parts import KNOWN

TORCH = "torch/distributed/elastic/rendezvous/dynamic_rendezvous.py (torch 2.13)"


@dataclass(frozen=True)
class Known:
    invariant: str
    why: str
    applies: Callable = lambda scenario, violation: True


def _skewed(sc, v) -> bool:
    """A clock-skew fault large enough to age a heartbeat past the dead-node threshold."""
    p = sc.protocol
    limit = p.keep_alive_interval * (p.keep_alive_max_attempt - 1)
    return any(f.kind == "clock_skew" and abs(f.offset) >= limit for f in sc.faults)


_SKEW = ("heartbeats are wall-clock datetimes compared with the reader's own clock: a skewed "
         "node declares live peers dead, drops them from a complete round and disagrees with "
         f"them on the membership (_sanitize, _should_keep_alive; {TORCH})")

_REUSED = ("the round number grows only when a complete round empties "
           "(_remove_participant_epilogue): members that leave and come back, or a stale "
           "participant that wakes up, complete 'round R' again with another membership, so two "
           f"memberships share one round number ({TORCH})")

def _majority_hit(sc, v) -> bool:
    """store_failover with faults (crashes, pauses, cuts) on as many hosts as half the seats
    of the smallest round that can close (min_nodes: hosts that start apart can close a round
    that small): they may take half of one round's members."""
    if not getattr(sc.protocol, "store_failover", False):
        return False
    hit = set()
    for f in sc.faults:
        node = getattr(f, "node", None)
        hit |= {node} if isinstance(node, int) else set(getattr(f, "nodes", None) or ())
    return 2 * len(hit) >= min(sc.protocol.min_nodes, sc.max_nodes, sc.cluster.nodes)


def _store_lost(sc, v) -> bool:
    """store_failover and a fault that loses the store: its host's crash, a store crash, or a
    pause of the store longer than a call's deadline (the members' calls time out, and they
    fail over as from a dead store)."""
    return getattr(sc.protocol, "store_failover", False) and any(
        f.kind == "store_crash" or (f.kind == "crash" and f.node == sc.store.host)
        or (f.kind == "store_pause" and f.duration > sc.store.op_timeout) for f in sc.faults)


_QUORUM = ("store_failover's fence: a round needs more than half of the members of the last "
           "round that closed with ranks (by name where the store has it), so a job that loses half "
           "of a round's members for good never re-forms (it ends, and a requeue starts it afresh); "
           "rdzv_sim/protocols/hrw/failover.py, has_quorum")

_ORPHAN = ("store_failover: the successors come with a round's assignments, so a live host "
           "that was not in the last round (a waiter, one whose agent restarted) does not know "
           "where the store went; it fails over by an older round's list, or not at all, and "
           "trains again only when pointed at the successor (rdzv_sim/protocols/hrw/failover.py, fail_over)")

def _cuts(sc) -> list:
    """store_failover's cuts (partitions, flaps), with the hosts each takes off the network."""
    if not getattr(sc.protocol, "store_failover", False):
        return []
    return [(f, getattr(f, "nodes", None) or ()) for f in sc.faults if f.kind in ("partition", "flap")]


def _store_host_cut(sc, v) -> bool:
    """store_failover and a cut that takes the store's own host off the network."""
    return sc.store.host is not None and any(sc.store.host in nodes for _, nodes in _cuts(sc))


_LEFT_BEHIND = ("store_failover: a cut that takes the store's host off the network makes the others "
                "fail over to a successor, while the cut-off host still reaches its own store (it is "
                "local) and waits there alone for a round that cannot form; nothing tells it where "
                "the others went (found by the property tests at seed 2487197479, "
                "tests/regressions/failover-store-host-cut-off-waits-alone.yaml; "
                "rdzv_sim/protocols/hrw/failover.py, fail_over)")


# the built-in kits' `known` parts
STATIC = (
    Known("every_member_accounted",
              "static rendezvous has no confirmation: a rank that set its key and then lost the "
              "store (or died) is still a member; the others learn it in process-group init "
              "(torch/distributed/rendezvous.py, _create_c10d_store / env:// init)"),)
HRW = (Known("liveness", _QUORUM, _majority_hit), Known("liveness", _ORPHAN, _store_lost),
       Known("liveness", _LEFT_BEHIND, _store_host_cut))
C10D = (
        Known("every_member_accounted",
              "a dead participant stays in a complete round until its keep-alive expires "
              f"(3 x 5 s): _BackendRendezvousStateHolder._sanitize removes it only then ({TORCH})"),
        Known("liveness",
              "a wait-listed node enters only a round it sees incomplete; it polls once a second "
              "(_Action.SYNC: _delay(seconds=1)), so with a last call shorter than that the members "
              f"re-complete the round before it looks and it can wait forever ({TORCH}, "
              "_RendezvousJoinOp)",
              lambda sc, v: sc.protocol.last_call_timeout < 2.0),
        Known("liveness",
              "with more live nodes than max_nodes, the wait-listed nodes that lose the race for "
              "the seats stay on the wait list (only new arrivals go to the redundancy list), so "
              "num_nodes_waiting stays > 0 and the members restart every round "
              f"(_RendezvousJoinOp, DynamicRendezvousHandler.num_nodes_waiting; {TORCH})",
              lambda sc, v: sc.hosts > sc.max_nodes),          # (hot spares are live nodes too)
        *(Known(inv, _REUSED) for inv in ("members_agree", "ranks_are_a_permutation",
                                           "every_member_accounted")),
        *(Known(inv, _SKEW, _skewed) for inv in
          ("members_agree", "ranks_are_a_permutation", "every_member_accounted", "liveness",
           "size_within_bounds")))


def known_of(protocol: str) -> list:
    """Each `Known` violation of the protocol that the real system shares (its kit's `known`)."""
    known = list(get(protocol).part(KNOWN, ()))
    bad = [k for k in known if not isinstance(k, Known)]
    if bad:
        raise TypeError(f"protocol {protocol!r}: its known part holds {bad[0]!r}, not a rdzv_sim.testing.Known")
    return known


def known_for(protocol: str, violations: list, scenario=None) -> list:
    table = known_of(protocol)
    out = []
    for v in violations:
        k = next((k for k in table if k.invariant == v.invariant
                  and (scenario is None or k.applies(scenario, v))), None)
        out.append(replace(v, known=k.why) if k else v)
    return out
