"""Faults ask a protocol's capabilities, not its settings' field names."""
import pytest

from rdzv_sim.protocols.registry import get
from rdzv_sim.scenario import load
from rdzv_sim.scenario.load import ScenarioError

CRASH = [{"kind": "lighthouse_crash", "at": 10, "duration": 5}]


def test_a_lighthouse_crash_needs_a_protocol_whose_kit_has_a_lighthouse():
    assert get("quorum").caps.lighthouse and not get("hrw").caps.lighthouse
    load({"name": "q", "duration": 100, "cluster": {"nodes": 4},
          "protocol": {"name": "quorum", "group_size": 2}, "faults": CRASH})
    with pytest.raises(ScenarioError, match="a lighthouse_crash needs a protocol with torchft's Lighthouse"):
        load({"name": "h", "duration": 100, "cluster": {"nodes": 4}, "faults": CRASH})
