"""Every bundled scenario still runs, and its summary at its seed is exactly the golden one
(tests/golden/summaries.json, written before the kit restructuring). A change that means to
move a number rewrites the file (`python -m tests.golden.runs NAME`) and says why."""
import json

import pytest

from .runs import GOLDEN, runs, summary

EXPECTED = json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.slow) if "@aggregate" in k else k
                                 for k in sorted(runs())])
def test_the_summary_is_the_golden_one(key):
    import rdzv_sim
    name, overrides = runs()[key]
    r = rdzv_sim.run(name, overrides)
    assert len(r.events) > 0
    if name != "static-missing-rank":
        assert len(r.rounds) >= 1 and r.rounds["consistent"].all()
    assert (r.rounds["start"] <= r.rounds["end"]).all() and (r.rounds["latency"] >= 0).all()
    got = summary(r)
    want = EXPECTED[key]
    assert got == want, {k: (want.get(k), got.get(k)) for k in set(got) | set(want)
                         if got.get(k) != want.get(k)}


def test_every_bundled_scenario_has_a_golden_summary():
    assert sorted(EXPECTED) == sorted(runs())
