import pytest


@pytest.fixture
def twin_hashes(monkeypatch):
    """A forced 64-bit collision: node "n2" hashes as "n1" (hrw.kernels.hash_keys patched)."""
    from hrw import kernels
    real = kernels.hash_keys

    def twins(keys, seed=0):
        h = real(keys, seed)
        if isinstance(keys, list):
            for i, k in enumerate(keys):
                if k in (b"n2", "n2"):
                    h[i] = real([b"n1"], seed)[0]
        return h
    monkeypatch.setattr(kernels, "hash_keys", twins)
