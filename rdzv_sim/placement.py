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

from hrw import Assignment, Placement, kernels


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
        on = np.zeros(len(self.hosts), dtype=bool)
        on[[self.index[m] for m in members]] = True
        keep = on[self.owner]
        points, owner = self.points[keep], self.owner[keep]
        return self.names[owner[np.searchsorted(points, key_hashes) % len(points)]]


def fair_share_moved(k: int, before: set, after: set) -> int:
    if not before or not after:
        return 0
    left, joined = len(before - after), len(after - before)
    return math.ceil(k * max(left / len(before), joined / len(after)))


def ranked_by_round(events: pd.DataFrame) -> dict:
    """Round -> {name: node rank} of those that learned their rank in it, in rank order."""
    ranked = events.loc[(events["event"] == "rank_assigned").to_numpy(), ["node", "round", "rank"]]
    rnd, rank = ranked["round"].to_numpy(dtype=np.int64), ranked["rank"].to_numpy(dtype=np.int64)
    order = np.lexsort((rank, rnd))                       # by round, then rank (stable)
    rnd, rank = rnd[order], rank[order].tolist()
    nodes = ranked["node"].to_numpy(dtype=object)[order].tolist()
    cuts = np.flatnonzero(np.diff(rnd)) + 1
    starts, ends = [0, *cuts.tolist()], [*cuts.tolist(), len(rnd)]
    return {int(rnd[a]): dict(zip(nodes[a:b], rank[a:b])) for a, b in zip(starts, ends) if b > a}


def shard_moves(rounds: pd.DataFrame, events: pd.DataFrame, count: int, policies,
                vnodes: int = 64, seed: int = 0, ranked: dict | None = None) -> pd.DataFrame:
    """Columns shards_moved_<policy>, shards_moved_fair_share and (with hrw) shards_moved_needed
    for each completed round, in order."""
    out = {f"shards_moved_{p}": [] for p in policies}
    out["shards_moved_fair_share"] = []
    if "hrw" in policies:
        out["shards_moved_needed"] = []
    if count == 0 or rounds.empty:
        return pd.DataFrame({k: pd.Series(v, dtype="int64") for k, v in out.items()}, index=rounds.index)
    if len(rounds) == 1:                 # nothing to move from: no placement to compute
        return pd.DataFrame({k: [0] for k in out}, index=rounds.index)
    keys = np.arange(count)
    kh = kernels.hash_keys(keys, seed)
    by_round = ({} if "modulo" not in policies else
                ranked if ranked is not None else ranked_by_round(events))
    split = [m.split(",") for m in rounds["members"]]
    hosts = sorted({n for names in split for n in names})
    ring = Ring(hosts, vnodes, seed) if "ring" in policies else None
    by_name = "hrw" in policies and len(np.unique(kernels.hash_keys(hosts, seed))) < len(hosts)
    prev_members: set | None = None
    prev: dict[str, np.ndarray] = {}
    assignment = None
    for rnd, names in zip(rounds["round"], split):
        by_rank = list(by_round.get(rnd, {}))
        now: dict[str, np.ndarray] = {}
        for p in policies:
            if p == "hrw":
                if assignment is None:
                    assignment = Assignment(keys, Placement(names, seed=seed))
                else:
                    # the last round's placement without who left, with who came: only the
                    # newcomers are hashed
                    members = set(names)
                    placement = assignment.placement
                    gone = sorted(prev_members - members)
                    if len(gone) == len(placement):
                        placement = Placement(names, seed=seed)
                    else:
                        placement = placement.without(gone) if gone else placement
                        placement = placement.with_nodes(sorted(members - prev_members))
                    assignment.update(placement)
                now["hrw_hashes"] = assignment.owner_hashes()
                # an owner is its node hash (uint64: no Python object a key), its name only
                # when two of the run's hosts' hashes collide
                now[p] = assignment.owners() if by_name else now["hrw_hashes"]
            elif p == "modulo":
                now[p] = np.asarray(by_rank, dtype=object)[keys % len(by_rank)]
            else:
                now[p] = ring.owners(names, kh)
            moved = 0 if p not in prev else int((prev[p] != now[p]).sum())
            out[f"shards_moved_{p}"].append(moved)
        out["shards_moved_fair_share"].append(fair_share_moved(count, prev_members or set(), set(names)))
        if "hrw" in policies:
            if "hrw" in prev:
                # by node hash (uint64), not name: np.isin over strings sorts Python objects
                newcomers = kernels.hash_keys(sorted(set(names) - prev_members), seed)
                gone = kernels.hash_keys(sorted(prev_members - set(names)), seed)
                need = np.isin(prev["hrw_hashes"], gone) | np.isin(now["hrw_hashes"], newcomers)
                out["shards_moved_needed"].append(int(need.sum()))
            else:
                out["shards_moved_needed"].append(0)
        prev, prev_members = now, set(names)
    return pd.DataFrame(out, index=rounds.index)


def rank_changes(rounds: pd.DataFrame, ranked: dict) -> pd.DataFrame:
    """Columns ranks_changed (members of this round and the one before whose node rank is not
    the same) and rank0_moved (1 when rank 0 is another host than before) per completed round;
    `ranked` is `ranked_by_round(events)`. Ranks are looked up in an array by node number: one
    numpy pass a round, no Python per member."""
    ids = {n: i for i, n in enumerate({n for now in ranked.values() for n in now})}
    prev_rank = np.full(len(ids), -1, dtype=np.int64)
    changed, moved, prev_ix, prev_zero = [], [], None, None
    for rnd in rounds["round"]:
        now = ranked.get(rnd, {})
        ix = np.fromiter(map(ids.__getitem__, now), np.int64, len(now))
        rk = np.fromiter(now.values(), np.int64, len(now))
        zero = ix[rk == 0].tolist()
        if prev_ix is None:
            changed.append(0)
            moved.append(0)
        else:
            was = prev_rank[ix]
            changed.append(int(((was >= 0) & (was != rk)).sum()))
            moved.append(int(bool(zero and prev_zero and zero != prev_zero)))
            prev_rank[prev_ix] = -1
        prev_rank[ix] = rk
        prev_ix, prev_zero = ix, zero
    return pd.DataFrame({"ranks_changed": pd.Series(changed, dtype="int64", index=rounds.index),
                         "rank0_moved": pd.Series(moved, dtype="int64", index=rounds.index)})
