"""hrw's store layout: every key a round writes, and how rank 0 deletes a finished round's.

Keys under P = rdzv/{run_id}/, R the round (see DESIGN.md):
  P/round         current round, created by compare_set("", "0"), bumped by CAS R -> R+1
  P/rR/seq        join order (atomic add);    P/rR/n{i}   slot i's descriptor (JSON)
  P/rR/closed     "<closer>:<count>", set once by CAS; P/rR/a{i} slot i's assignment (JSON)
  P/rR/ack        confirmations (add);        P/rR/ready  set by the last to confirm
  P/rR/waiting    late joiners (add);         P/rR/end    why the round ended
  P/rR/probe{k}   a waiter's k-th probe, with probe{k}/acks (add) and probe{k}/ack
  P/order         the last published rank order (JSON names; rank_order=stable only)
  P/members       the last round closed with ranks (JSON names; store_failover only: the fence)
"""
from __future__ import annotations

from ...ops import Add, Check, CompareSet, Delete, Get, Set
from ..base import BadValue, closed_count


class RoundKeys:
    """The key layout as methods of the protocol (it sets `prefix` and `round_step`)."""
    # a round's keys: a slot per joiner (n<i>), an assignment per member (a<i>), three per
    # probe, and these, `closed` last; round_keys and round_key_count both read this layout
    PROBE_KEYS = ("probe{k}", "probe{k}/acks", "probe{k}/ack")
    ROUND_KEYS = ("seq", "ack", "ready", "waiting", "end", "probes", "closed")

    def _k(self, rnd: int, name: str) -> str:
        return f"{self.prefix}r{rnd}/{name}"

    def round_keys(self, rnd: int, joined: int, count: int, probes: int) -> list[str]:
        """Every key round `rnd` wrote, given its joiners, members and probes; `closed` last."""
        keys = [self._k(rnd, f"n{i}") for i in range(1, joined + 1)]
        keys += [self._k(rnd, f"a{i}") for i in range(1, count + 1)]
        for k in range(1, probes + 1):
            keys += [self._k(rnd, p.format(k=k)) for p in self.PROBE_KEYS]
        return keys + [self._k(rnd, name) for name in self.ROUND_KEYS]

    def round_key_count(self, joined: int, count: int, probes: int) -> int:
        """len(round_keys(...)), without writing them (the aggregate model counts deletes)."""
        return joined + count + len(self.PROBE_KEYS) * probes + len(self.ROUND_KEYS)

    def clean_up(self, result):
        """Rank 0 deletes round r-2's keys once round r runs: nobody reads them (r-2 ended
        before r-1 began; a node that wakes up watching one times out, probes and rejoins).
        TCPStore has no prefix delete: about 2N deletes, by one node, while its workers run."""
        r = result.round - 2 * self.round_step
        if result.rank != 0 or r < 0:
            return
        closed = self._k(r, "closed")
        if not (yield Check((closed,))):
            return                                          # never closed, or cleaned already
        try:
            count = closed_count((yield Get(closed)))
        except BadValue:
            return                                          # not ours to clean: leave it
        joined = yield Add(self._k(r, "seq"), 0)
        probes = yield Add(self._k(r, "probes"), 0)
        for key in self.round_keys(r, joined, count, probes):   # `closed` last: while it stands,
            yield Delete(key)                                    # the round is not cleaned

    def end_round_at(self, rnd: int, reason: str):
        """Bump first, then say why: whoever sees `end` finds the round already moved on."""
        yield CompareSet(self.prefix + "round", str(rnd), str(rnd + self.round_step))
        yield Set(self._k(rnd, "end"), reason)
