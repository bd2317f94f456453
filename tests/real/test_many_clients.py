"""Many nodes per process on their own connections to one real store (small N here; the
benchmark goes to 1,024): one hrw round completes with a rank each and one membership."""
import pytest

pytest.importorskip("torch")

from real_backend.tools.many_clients import run  # noqa: E402

pytestmark = pytest.mark.real


def test_one_round_of_many_clients():
    r = run(32, procs=2)
    assert not r["errors"], r["errors"]
    assert r["ranks_ok"] and r["one_digest"]
    assert r["ops"] >= 32 * 5 and r["limited_by"] in ("store", "clients")
