"""Assignment (incremental) and the torch path give exactly the batch owners."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hrw import Assignment, Placement


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 60)), min_size=1, max_size=12),
       st.booleans())
def test_incremental_matches_batch(steps, weighted):
    nodes = [f"n{i}" for i in range(20)]
    wt = (lambda n: 1.0 + (int(n[1:]) % 4)) if weighted else None
    p = Placement(nodes, [wt(n) for n in nodes] if wt else None, seed=9)
    keys = np.arange(2000)
    a = Assignment(keys, p)
    for add, i in steps:
        name = f"n{i}"
        if add and name not in a.placement:
            ch = a.add([name], [wt(name)] if wt else None)
            assert set(a.owners()[ch.moved]) <= {name}
        elif not add and name in a.placement and len(a.placement) > 1:
            before = a.owners()
            ch = a.remove([name])
            assert set(ch.moved) == set(np.flatnonzero(before == name))
        assert list(a.owners()) == list(a.placement.owners(keys))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sets(st.integers(0, 80), min_size=1, max_size=40), min_size=1, max_size=6),
       st.booleans())
def test_update_to_any_member_set_matches_batch(rounds, weighted):
    """Rounds whose members change many at a time (spares rotating in and out): the owners
    after each update are the batch owners, and `moved` is exactly the keys that changed."""
    wt = (lambda n: 1.0 + (int(n[1:]) % 3)) if weighted else None

    def placement(ids):
        names = [f"n{i}" for i in sorted(ids)]
        return Placement(names, [wt(n) for n in names] if wt else None, seed=4)
    keys = np.arange(3000)
    a = Assignment(keys, placement(range(30)))
    for ids in rounds:
        before = a.owners()
        ch = a.update(placement(ids))
        after = a.owners()
        assert list(after) == list(a.placement.owners(keys))
        assert set(ch.moved) == set(np.flatnonzero(before != after))


def test_incremental_does_not_rescore_everything(monkeypatch):
    from hrw import kernels
    p = Placement(range(2048), seed=1)
    a = Assignment(np.arange(65_536), p)
    rows = []
    real = kernels.chunked
    monkeypatch.setattr(kernels, "chunked", lambda kh, nh, fn: rows.append(len(kh) * len(nh)) or real(kh, nh, fn))
    a.remove([17])
    a.add([5000])
    assert sum(rows) < 65_536 * 2048 / 100        # only the removed node's keys were re-scored


def test_torch_cpu_matches_numpy():
    torch_path = pytest.importorskip("hrw.torch_path")
    rng = np.random.default_rng(0)
    for weights in (None, rng.uniform(0.1, 5, 300).tolist()):
        p = Placement([f"g{i}" for i in range(300)], weights, seed=77)
        keys = np.arange(5000)
        assert np.array_equal(torch_path.owner_indexes(p, keys, "cpu", chunk=1 << 16),
                              p.owner_indexes(keys))


def test_gpu_check_command_runs_without_a_gpu(capsys):
    pytest.importorskip("torch")
    from hrw import gpu_check
    assert gpu_check.main(["--keys", "2000", "--nodes", "50"]) == 0
    out = capsys.readouterr().out
    assert "identical=True" in out and "identical=False" not in out


def test_updates_hold_when_two_node_hashes_collide(twin_hashes):
    """A 64-bit collision (forced here): owners are kept as node hashes, so leaving and joining
    by hash must still give the batch owners, whichever of the two twins stays."""
    keys = np.arange(2000)
    every = [f"n{i}" for i in range(10)]
    a = Assignment(keys, Placement(every, seed=2))
    assert a.placement._exact_ties
    for members in (every[3:], every, every[:1] + every[2:], every[:1] + every[3:], every,
                    every[3:] + ["n1"],
                    every[:2] + every[3:]):
        a.update(Placement(members, seed=2))
        assert list(a.owners()) == list(a.placement.owners(keys)), members
