"""The placement columns read each round's ranked nodes as codes: the same answers as names."""
import numpy as np
import pandas as pd

from rdzv_sim.placement import rank_changes, ranked_by_round, shard_moves


def events(rows):
    return pd.DataFrame(rows, columns=["node", "round", "rank"]).assign(event="rank_assigned")


def test_a_node_ranked_twice_in_a_round_keeps_its_first_place_and_last_rank():
    ev = events([("b", 0, 1), ("a", 0, 0), ("c", 1, 0), ("a", 1, 2), ("b", 1, 1), ("a", 1, 3)])
    r = ranked_by_round(ev)
    assert {rnd: dict(zip(r.names[c].tolist(), k.tolist())) for rnd, (c, k) in r.rounds.items()} == \
        {0: {"a": 0, "b": 1}, 1: {"c": 0, "b": 1, "a": 3}}


def test_moves_by_codes_match_the_sets_of_names():
    """Three rounds: one host leaves, then two come (one of them back). Each policy's moves are
    the keys whose owner differs, counted here from owners computed name by name."""
    from hrw import Placement
    from rdzv_sim.placement import Ring
    ranks = [["h0", "h1", "h2", "h3"], ["h0", "h2", "h3"], ["h3", "h1", "h0", "h4", "h2"]]
    ev = events([(n, i, k) for i, order in enumerate(ranks) for k, n in enumerate(order)])
    rounds = pd.DataFrame({"round": [0, 1, 2], "members": [",".join(sorted(o)) for o in ranks]})
    got = shard_moves(rounds, ev, 500, ["hrw", "modulo", "ring"], vnodes=8)
    keys = np.arange(500)
    ring = Ring({n for o in ranks for n in o}, 8)
    from hrw import kernels
    kh = kernels.hash_keys(keys)
    owners = {"hrw": [Placement(o).owners(keys) for o in ranks],
              "modulo": [np.asarray(o, dtype=object)[keys % len(o)] for o in ranks],
              "ring": [ring.owners(o, kh) for o in ranks]}
    for p, per_round in owners.items():
        want = [0] + [int((a != b).sum()) for a, b in zip(per_round, per_round[1:])]
        assert got[f"shards_moved_{p}"].tolist() == want, p
    assert got["shards_moved_fair_share"].tolist() == [0, 125, 200]   # ceil(500/4), ceil(500*2/5)
    ch = rank_changes(rounds, ranked_by_round(ev))
    assert ch["ranks_changed"].tolist() == [0, 2, 3]     # h2, h3 move up; then h3, h0, h2 again
    assert ch["rank0_moved"].tolist() == [0, 0, 1]


def test_a_round_is_compared_with_the_round_before_it_in_its_line():
    """Two replica groups' rounds interleaved (a per-step job's lines): group a's second round
    has the same hosts as its first, so nothing moves and no rank changes, though the round
    just before it in the table is group b's (the near miss, one line: everything moves);
    group b's second round lost a host."""
    ranks = [["a0", "a1"], ["b0", "b1", "b2"], ["a0", "a1"], ["b2", "b0"]]
    ev = events([(n, i, k) for i, order in enumerate(ranks) for k, n in enumerate(order)])
    rounds = pd.DataFrame({"round": [0, 1, 2, 3]})
    lines = [0, 1, 0, 1]
    got = shard_moves(rounds, ev, 300, ["hrw", "modulo", "ring"], vnodes=8, lines=lines)
    assert got.loc[2].tolist() == [0, 0, 0, 0, 0]                  # group a, the same hosts
    assert got.loc[3, "shards_moved_fair_share"] == 100            # b lost one of three
    assert 0 < got.loc[3, "shards_moved_hrw"] <= 100 + 1
    one = shard_moves(rounds, ev, 300, ["hrw"], vnodes=8)
    assert one.loc[2, "shards_moved_hrw"] == 300                   # against group b's round
    ch = rank_changes(rounds, ranked_by_round(ev), lines)
    assert ch["ranks_changed"].tolist() == [0, 0, 0, 2]            # b2: 2 -> 0, b0: 0 -> 1
    assert ch["rank0_moved"].tolist() == [0, 0, 0, 1]


def test_a_ring_walked_from_each_key_is_the_ring_of_its_members():
    """Owners found by walking the whole ring to the first member's point are those of the
    members' own ring (the points taken out first), for rounds of nearly all hosts (walked)
    and of a few (taken out), wrap-around included."""
    from rdzv_sim.placement import Ring
    rng = np.random.default_rng(5)
    ring = Ring([f"h{i}" for i in range(200)], 16)
    keys = np.concatenate([rng.integers(0, 2 ** 63, 500, dtype=np.uint64),
                           ring.points[[0, -1]], ring.points[[-1]] + np.uint64(1)])  # ends, past the last
    for size in (200, 199, 150, 51, 40, 3, 1):
        members = np.sort(rng.choice(200, size, replace=False))
        on = np.zeros(200, bool)
        on[members] = True
        keep = on[ring.owner]
        points, owner = ring.points[keep], ring.owner[keep]
        want = owner[np.searchsorted(points, keys) % len(points)]
        assert ring.owner_indexes(members, keys).tolist() == want.tolist(), size
