"""`rdzv-sim validate` for quorum takes the heal's length from the real run: the simulated heal
is then as long as the machine's, and what the check holds is what the others do meanwhile."""
import math

import pytest

from rdzv_sim.scenario.load import load
from real_backend.quorum_validate import calibrated


def test_the_heal_bandwidth_comes_from_the_real_heal():
    sc = load("validate-quorum")
    p = sc.protocol
    assert p.state_bytes > 0
    again, bandwidth = calibrated(sc, 0.16)              # an idle machine's 128 MB heal
    assert again.protocol.heal_time == pytest.approx(0.16)
    assert bandwidth == pytest.approx(p.state_bytes / p.group_size / 0.16)
    assert again.protocol.model_dump(exclude={"heal_bandwidth"}) == p.model_dump(exclude={"heal_bandwidth"})
    assert sc.protocol.heal_bandwidth == p.heal_bandwidth            # the scenario itself unchanged
    for unseen in (None, math.nan, 0.0):                 # an asynchronous heal shows none
        assert calibrated(sc, unseen) == (sc, None)
