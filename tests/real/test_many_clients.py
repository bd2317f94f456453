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


def test_torchs_own_c10d_handlers_form_one_round_and_are_counted():
    """torch's DynamicRendezvousHandler, many per process, each on its own connection: one
    round, every rank once, and at least one compare-and-set per node (its join) counted."""
    r = run(16, procs=2, protocol="c10d", join_timeout=30)
    assert r["completed"] and r["ranks_ok"], r["errors"]
    assert r["cas"] >= 16 and r["gets"] >= 1
    assert r["coded_bytes"] > 16 * 288 and r["node_cpu_s"] > 0
