"""Failures the property tests found that are not fixed yet: each replays, and is expected to
break its invariant until the fix lands (then the file moves to tests/regressions/)."""
from pathlib import Path

import pytest

from rdzv_sim.scenario import load
from rdzv_sim.testing import check_run

CASES = sorted((Path(__file__).parent / "open_bugs").glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
@pytest.mark.xfail(strict=True, reason="open: under recovery shrink, a member paused then crashed at 0.1 s "
                   "leaves its peer's rounds going 2 -> 1 (rounds_increase); found 2026-12-08, not yet fixed")
def test_open_bug_still_breaks_its_invariant(path):
    _, report = check_run(load(path))
    assert not report.unexpected
