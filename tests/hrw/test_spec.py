"""hrw spec v1: the reference against independent facts and the golden vectors."""
import numpy as np
import pytest
import xxhash

from hrw import Placement, golden, kernels, spec


def test_to_bytes_encodings():
    assert spec.to_bytes("é") == "é".encode()
    assert spec.to_bytes(1) == b"\x01" + b"\x00" * 7
    assert spec.to_bytes(-1) == b"\xff" * 8
    assert spec.to_bytes(b"ab") == b"ab"
    assert spec.to_bytes(np.int64(5)) == spec.to_bytes(5)


@pytest.mark.parametrize("bad, err", [(1.5, TypeError), (True, TypeError), (None, TypeError),
                                      (2**64, ValueError), (-(2**63) - 1, ValueError)])
def test_to_bytes_rejects(bad, err):
    with pytest.raises(err):
        spec.to_bytes(bad)


def test_fmix64_known_value():
    # MurmurHash3 fmix64(1), a published constant
    assert spec.fmix64(1) == 0xB456BCFC34C2CB2C
    assert spec.fmix64(0) == 0


def test_hash64_is_xxh3():
    assert spec.hash64("node-1", 9) == xxhash.xxh3_64_intdigest(b"node-1", seed=9)


def test_log_table_is_exact():
    import math
    for i in (0, 1, 100, 2048, 4095, 4096):
        assert abs(spec.LOG2_TABLE[i] / 2**48 - math.log2(1 + i / 4096)) < 1e-14
    assert spec.LOG2_TABLE[0] == 0 and spec.LOG2_TABLE[4096] == 2**48


def test_neglog2_close_to_float_and_monotone():
    import math
    rng = np.random.default_rng(1)
    s = np.sort(rng.integers(0, 2**64 - 1, 2000, dtype=np.uint64, endpoint=True))
    v = kernels.neglog2_fixed(s)
    assert np.all(np.diff(v.astype(object)) <= 0)            # non-increasing in the score
    for x, y in zip(s[::97].tolist(), v[::97].tolist()):
        exact = -math.log2((x | 1) / 2**64)
        assert abs(y / 2**48 - exact) < 1e-7 * max(1.0, exact)
        assert y == spec.neglog2_fixed(x)


def test_golden_primitives():
    g = golden.load()
    assert g["spec"] == "hrw spec v1"
    for row in g["hash64"]:
        assert spec.hash64(golden.decode(row["value"]), row["seed"]) == row["hash"]
    for row in g["fmix64"]:
        assert spec.fmix64(row["in"]) == row["out"]
    ins = np.array([r["in"] for r in g["neglog2_fixed"]], dtype=np.uint64)
    assert kernels.neglog2_fixed(ins).tolist() == [r["out"] for r in g["neglog2_fixed"]]


def test_golden_cases_every_path():
    for case in golden.load()["cases"]:
        nodes = [golden.decode(n) for n in case["nodes"]]
        p = Placement(nodes, case["weights"], seed=case["seed"])
        keys = [golden.decode(r["key"]) for r in case["expect"]]
        owners = [golden.decode(r["owner"]) for r in case["expect"]]
        top3 = [[golden.decode(x) for x in r["top3"]] for r in case["expect"]]
        assert [spec.ranking(k, nodes, case["weights"], case["seed"])[0] for k in keys] == owners
        assert list(p.owners(keys)) == owners
        assert [p.owner(k) for k in keys] == owners
        assert [list(r) for r in p.owners(keys, k=3)] == top3
        assert [p.top_k(k, 3) for k in keys] == top3


@pytest.mark.parametrize("seed", [0, 1, 0xFFFFFFFF, 12345, 2**63 + 7, 2**64 - 1, -3])
def test_integer_keys_hash_in_one_numpy_pass_as_xxh3_does(seed):
    """`hash_ints` is xxh3_64 of 8 bytes written out in numpy: xxhash itself is the oracle."""
    rng = np.random.default_rng(seed & 0xFFFF)
    signed = np.concatenate([np.array([0, 1, -1, 2**62, -2**63, 2**63 - 1], dtype=np.int64),
                             rng.integers(-2**63, 2**63 - 1, 5000, dtype=np.int64)])
    want = np.array([spec.hash64(int(k), seed) for k in signed], dtype=np.uint64)
    assert (kernels.hash_keys(signed, seed) == want).all()
    unsigned = signed.view(np.uint64)                 # the same 8 bytes, read unsigned
    assert (kernels.hash_keys(unsigned, seed) == want).all()
    small = np.arange(300, dtype=np.int32)
    assert (kernels.hash_keys(small, seed) == [spec.hash64(int(k), seed) for k in small]).all()


def test_string_keys_hash_as_the_spec_does():
    keys = ["node0#1", "", "ünï", "x" * 300]
    assert kernels.hash_keys(keys, 9).tolist() == [spec.hash64(k, 9) for k in keys]
    mixed = ["a", 5, b"b"]
    assert kernels.hash_keys(mixed, 9).tolist() == [spec.hash64(k, 9) for k in mixed]
