"""The testing layer reads a kit's parts and says which one is wrong: an invariant that is not a
check, a known behaviour that is not a `Known`, beside the parts that are."""
import pytest

from rdzv_sim.protocols import Kit, register_kit
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.protocols.registry import _forget
from rdzv_sim.testing import Known
from rdzv_sim.testing.known import known_of
from rdzv_sim.testing.parts import invariants_of


def kit(**parts):
    register_kit(Kit("parts-probe", HrwProtocol, HrwSettings, parts=parts), replace=True)


@pytest.fixture(autouse=True)
def _scratch():
    """The scratch kit goes with its test (another test reading every protocol never sees it)."""
    yield
    _forget("parts-probe")


def test_invariants_are_checks():
    kit(invariants=[lambda t, sc: []])
    assert len(invariants_of("parts-probe")) == 1
    kit(invariants=["not a check"])
    with pytest.raises(TypeError, match="invariants part holds 'not a check'"):
        invariants_of("parts-probe")


def test_known_behaviours_are_known():
    kit(known=(Known("liveness", "why"),))
    assert known_of("parts-probe")[0].invariant == "liveness"
    kit(known=[("liveness", "why")])
    with pytest.raises(TypeError, match="not a rdzv_sim.testing.Known"):
        known_of("parts-probe")


def test_a_protocol_without_parts_has_none():
    kit()
    assert invariants_of("parts-probe") == [] and known_of("parts-probe") == []
