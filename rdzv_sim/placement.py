"""What moves between completed rounds: shards under each placement policy, and ranks.

Policies: `hrw` (the incremental hrw.Assignment), `modulo` (shard % world, by node rank) and
`ring` (consistent hashing with virtual nodes). Two yardsticks: `shards_moved_fair_share`,
ceil(K * max(left / before, joined / after)), what a perfectly balanced placement must move
(the leavers' share, or the newcomers' fair share); and `shards_moved_needed` (with `hrw`
among the policies), the keys whose owner left or that HRW gives a newcomer: what any
placement that keeps HRW's owners must move, and what a minimal one moves exactly.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from hrw import Shortlist, kernels

from .trace import distinct
from .trace.ranked import Ranked, ranked_by_round  # noqa: F401  (the placement reads them)


class Ring:
    """A consistent-hash ring with `vnodes` points per host (xxh3 of "host#i"), for every host a
    run has: each host's points are hashed and sorted once; a round's ring is its members'."""

    def __init__(self, hosts, vnodes: int, seed: int = 0):
        self.hosts = sorted(hosts)
        self.index = {h: i for i, h in enumerate(self.hosts)}
        h = kernels.hash_keys([f"{n}#{i}" for n in self.hosts for i in range(vnodes)], seed)
        order = np.argsort(h, kind="stable")
        self.points = h[order]
        self.owner = np.repeat(np.arange(len(self.hosts)), vnodes)[order]
        self.names = np.asarray(self.hosts, dtype=object)

    def owners(self, members, key_hashes: np.ndarray) -> np.ndarray:
        """Each key's owner on the ring of `members` alone."""
        return self.names[self.owner_indexes([self.index[m] for m in members], key_hashes)]

    def owner_indexes(self, members: np.ndarray, key_hashes: np.ndarray) -> np.ndarray:
        """Each key's owner (an index into `hosts`) on the ring of `members` (indexes): its
        first point at or after the key, wrapping. Where most hosts are members (a frontier
        round), each key walks the whole ring from its place to the first member's point, a
        step or two; else the members' points are taken out first."""
        on = _mask(len(self.hosts), members)
        if on.sum() * 4 < len(self.hosts):
            keep = on[self.owner]
            points, owner = self.points[keep], self.owner[keep]
            return owner[np.searchsorted(points, key_hashes) % len(points)]
        n = len(self.points)
        at = np.searchsorted(self.points, key_hashes) % n
        owner = self.owner[at]
        walk = np.flatnonzero(~on[owner])
        while len(walk):
            at[walk] = (at[walk] + 1) % n
            owner[walk] = self.owner[at[walk]]
            walk = walk[~on[owner[walk]]]
        return owner


def fair_share_moved(k: int, before: int, after: int, left: int, joined: int) -> int:
    """What a balanced placement of `k` keys must move when `left` of `before` members leave
    and `joined` of `after` come."""
    if not before or not after:
        return 0
    return math.ceil(k * max(left / before, joined / after))


_NONE = np.zeros(0, dtype=np.int64)


def _mask(size: int, at: np.ndarray) -> np.ndarray:
    on = np.zeros(size, dtype=bool)
    on[at] = True
    return on


def line_positions(rounds: pd.DataFrame, lines) -> list[np.ndarray]:
    """The rounds table's positions of each line of rounds (`lines`: a line a row, None: one
    line), each in the table's order: what moves is counted from a round to the one before
    it in its line (a per-step job's line is a replica group)."""
    if lines is None:
        return [np.arange(len(rounds))]
    lines = np.asarray(lines)
    _, first = np.unique(lines, return_index=True)
    return [np.flatnonzero(lines == lines[i]) for i in np.sort(first)]


def shard_moves(rounds: pd.DataFrame, events: pd.DataFrame, count: int, policies,
                vnodes: int = 64, seed: int = 0, ranked: Ranked | None = None,
                lines=None) -> pd.DataFrame:
    """Columns shards_moved_<policy>, shards_moved_fair_share and (with hrw) shards_moved_needed
    for each completed round, in order, against the round before it in its line (`lines`,
    `line_positions`). A round's members are its ranked nodes, as codes: who left and who
    came are set differences of sorted integers."""
    out = _move_columns(policies)
    if count == 0 or rounds.empty:
        return pd.DataFrame({k: pd.Series(v, dtype="int64") for k, v in out.items()}, index=rounds.index)
    if len(rounds) == 1:                 # nothing to move from: no placement to compute
        return pd.DataFrame({k: [0] for k in out}, index=rounds.index)
    ranked = ranked_by_round(events) if ranked is None else ranked
    cols = {k: np.zeros(len(rounds), dtype=np.int64) for k in out}
    rnds = rounds["round"].to_numpy()
    for at in line_positions(rounds, lines):
        moved = _line_moves(rnds[at], ranked, count, policies, vnodes, seed)
        for k, v in moved.items():
            cols[k][at] = v
    return pd.DataFrame(cols, index=rounds.index)


def _move_columns(policies) -> dict[str, list]:
    """The columns `shard_moves` writes, empty."""
    out = {f"shards_moved_{p}": [] for p in policies}
    out["shards_moved_fair_share"] = []
    if "hrw" in policies:
        out["shards_moved_needed"] = []
    return out


def _line_moves(rnds, ranked: Ranked, count: int, policies, vnodes: int, seed: int) -> dict:
    """`shard_moves` of one line of rounds, each against the one before it."""
    out = _move_columns(policies)
    keys = np.arange(count)
    names = ranked.names
    if len(rnds) == 1:                   # nothing to move from: no placement to compute
        return {k: [0] for k in out}
    mark = np.zeros(len(names), dtype=bool)            # every host of the line (its members,
    for rnd in rnds:                                   # a round at a time: 10^8 at the frontier)
        mark[ranked.of(rnd)[0]] = True
    seen = np.flatnonzero(mark)
    members = (distinct(ranked.of(rnd)[0], len(names)) for rnd in rnds)
    hosts = names[seen].tolist()
    ring, on_ring, kh = None, None, None
    if "ring" in policies:
        ring, kh = Ring(hosts, vnodes, seed), kernels.hash_keys(keys, seed)
        on_ring = np.full(len(names), -1, dtype=np.int64)
        on_ring[seen] = [ring.index[n] for n in hosts]
    shortlist, at = None, None
    if "hrw" in policies:
        # each key's best hosts of the whole line scored once; a round's owners are looked up
        shortlist = Shortlist(keys, hosts, seed)
        at = np.full(len(names), -1, dtype=np.int64)      # node code -> position in shortlist
        at[seen] = [shortlist.universe.index_of(n) for n in hosts]
    prev_codes = None
    prev: dict[str, np.ndarray] = {}
    for rnd, now_codes in zip(rnds, members):
        gone = new = _NONE
        if prev_codes is not None:
            gone = np.setdiff1d(prev_codes, now_codes, assume_unique=True)
            new = np.setdiff1d(now_codes, prev_codes, assume_unique=True)
        now: dict[str, np.ndarray] = {}
        same = prev_codes is not None and len(gone) == 0 and len(new) == 0
        for p in policies:
            if same and p in prev and p != "modulo":
                now[p] = prev[p]           # the same members: hrw's and the ring's owners are too
            elif p == "hrw":
                # an owner is its host's position in the shortlist: distinct hosts, distinct
                # owners, even when two hosts' hashes collide
                now[p] = shortlist.owner_indexes(_mask(len(shortlist.nodes), at[now_codes]))
            elif p == "modulo":
                by_rank = names[ranked.of(rnd)[0]]
                now[p] = by_rank[keys % len(by_rank)]
            else:
                now[p] = ring.owner_indexes(on_ring[now_codes], kh)
            moved = 0 if p not in prev else int((prev[p] != now[p]).sum())
            out[f"shards_moved_{p}"].append(moved)
        before = 0 if prev_codes is None else len(prev_codes)
        out["shards_moved_fair_share"].append(fair_share_moved(count, before, len(now_codes),
                                                               len(gone), len(new)))
        if "hrw" in policies:
            if "hrw" in prev:
                size = len(shortlist.nodes)
                need = _mask(size, at[gone])[prev["hrw"]] | _mask(size, at[new])[now["hrw"]]
                out["shards_moved_needed"].append(int(need.sum()))
            else:
                out["shards_moved_needed"].append(0)
        prev, prev_codes = now, now_codes
    return out


def rank_changes(rounds: pd.DataFrame, ranked: Ranked, lines=None) -> pd.DataFrame:
    """Columns ranks_changed (members of this round and the one before it in its line whose
    node rank is not the same) and rank0_moved (1 when rank 0 is another host than before)
    per completed round; `ranked` is `ranked_by_round(events)`, `lines` as `shard_moves`
    reads them. Ranks are looked up in an array by node code: one numpy pass a round, no
    Python per member."""
    changed = np.zeros(len(rounds), dtype=np.int64)
    moved = np.zeros(len(rounds), dtype=np.int64)
    rnds = rounds["round"].to_numpy()
    prev_rank = np.full(len(ranked.names), -1, dtype=np.int64)
    for at in line_positions(rounds, lines):
        prev_ix, prev_zero = None, None
        for i in at:
            ix, rk = ranked.of(rnds[i])
            zero = ix[rk == 0].tolist()
            if prev_ix is not None:
                was = prev_rank[ix]
                changed[i] = int(((was >= 0) & (was != rk)).sum())
                moved[i] = int(bool(zero and prev_zero and zero != prev_zero))
                prev_rank[prev_ix] = -1
            prev_rank[ix] = rk
            prev_ix, prev_zero = ix, zero
        if prev_ix is not None:
            prev_rank[prev_ix] = -1
    return pd.DataFrame({"ranks_changed": pd.Series(changed, dtype="int64", index=rounds.index),
                         "rank0_moved": pd.Series(moved, dtype="int64", index=rounds.index)})
