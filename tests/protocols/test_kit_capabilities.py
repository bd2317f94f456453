"""What a protocol can do, as its kit declares it: lists kept as tuples, bad values refused
with what to write."""
import pytest

from rdzv_sim.protocols.kit import Capabilities, Kit


def test_lists_are_kept_as_tuples():
    caps = Capabilities(fidelities=["per_operation", "aggregate"], recovery=["in_job", "shrink"])
    assert caps.fidelities == ("per_operation", "aggregate") and isinstance(caps.fidelities, tuple)
    assert caps.recovery == ("in_job", "shrink") and isinstance(caps.recovery, tuple)


@pytest.mark.parametrize("field, value", [("fidelities", {"per_operation"}), ("recovery", {"in_job"})])
def test_a_set_is_no_list(field, value):
    """Near miss of the above: an unordered set is refused, not turned into a tuple."""
    with pytest.raises(ValueError, match=f"Capabilities: {field}"):
        Capabilities(**{field: value})


@pytest.mark.parametrize("recovery", [("shrink",), ("in_job", "restart"), ()])
def test_recovery_must_list_in_job_and_known_modes_only(recovery):
    with pytest.raises(ValueError) as e:
        Capabilities(recovery=recovery)
    assert str(e.value) == (f"Capabilities: recovery {recovery!r} must list 'in_job' and may add "
                            "'in_process', 'shrink'")


def test_a_kits_capabilities_must_be_capabilities():
    from rdzv_sim.protocols.static import StaticProtocol, StaticSettings
    with pytest.raises(ValueError, match=r"Kit\('x'\): capabilities must be a rdzv_sim.Capabilities, got 'fast'"):
        Kit("x", StaticProtocol, StaticSettings, capabilities="fast")
