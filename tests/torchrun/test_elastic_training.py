"""Real torchrun agents, real training: three join, one is killed, two carry on from the
checkpoint, a new agent joins and the job grows back to three. Once with `hrw` (this project's
handler through the `torchrun.handlers` entry point), once with torch's own `c10d` as the
baseline, with the same --rdzv-conf (c10d needs TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 to grow
back; the demo sets it)."""
import itertools

import pytest

pytest.importorskip("torch")

from real_backend.tools.elastic_demo import run_demo  # noqa: E402

pytestmark = pytest.mark.real


@pytest.mark.parametrize("backend", ["hrw", "c10d"])
def test_kill_one_continue_at_two_grow_back_to_three(backend, tmp_path):
    r = run_demo(backend, tmp_path, timeout=90)
    assert r["exit_codes"] == {"A": 0, "B": 0, "D": 0}, r["exit_codes"]
    segs = r["segments"]
    worlds = [w for w, _ in itertools.groupby(s["world"] for s in segs)]
    assert worlds == [3, 2, 3], segs
    for s in segs[1:]:            # every restart resumes from a checkpoint, none from scratch
        assert s["resumed_from"] > 0 and s["resumed_from"] % 10 == 0, segs
        assert s["first"] == s["resumed_from"] + 1, segs
    before = [s for s in segs if s["t0"] < r["t_kill"]]
    after = [s for s in segs if s["t0"] > r["t_kill"]]
    assert after[0]["resumed_from"] <= before[-1]["last"]     # no step invented across the kill
    # every rank trained at the same world size at every step and stopped at one step
    steps = r["steps"]
    by_step = {}
    for x in steps:
        by_step.setdefault((x["t"] > r["t_kill"], x["resumed_from"], x["step"]), set()).add(x["world"])
    assert all(len(w) == 1 for w in by_step.values())
    grown = [x for x in steps if x["t"] > r["t_join"] and x["world"] == 3]
    last = max(x["step"] for x in grown)                       # the final generation stopped together
    assert sorted(x["rank"] for x in grown if x["step"] == last) == [0, 1, 2]
    assert r["recover_s"] > 0 and r["grow_s"] > 0
