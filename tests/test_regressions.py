"""Every scenario under tests/regressions/ (failures found by the property tests, since fixed)
replays with all invariants holding."""
from pathlib import Path

import pytest

from rdzv_sim.scenario import load
from rdzv_sim.testing import check_run

CASES = sorted((Path(__file__).parent / "regressions").glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_regression(path):
    r, report = check_run(load(path))
    assert not report.unexpected
    assert len(r.rounds) >= 1
