"""register_protocol's refusals say what was wrong, with the offending value."""
import pytest

from rdzv_sim.protocols import Protocol, ProtocolError, ProtocolSettings, register_protocol


class _Settings(ProtocolSettings):
    pass


class _NotSettings:
    pass


class _Proto(Protocol):
    name = "registry-probe"


def test_settings_that_do_not_subclass_protocolsettings_are_named():
    with pytest.raises(ProtocolError) as e:
        register_protocol("registry-probe", _Proto, _NotSettings)
    assert str(e.value).endswith(f"got {_NotSettings!r}")      # the value, not "{settings!r}"


def test_a_class_that_is_not_a_protocol_is_named():
    with pytest.raises(ProtocolError) as e:
        register_protocol("registry-probe", _NotSettings, _Settings)
    assert "_NotSettings" in str(e.value) and "is not a subclass" in str(e.value)
