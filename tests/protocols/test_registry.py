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


def test_threads_that_ask_while_the_plugins_load_wait_for_all_of_them():
    """A fresh process, eight threads loading a scenario of a plugin protocol at once: each sees
    every protocol (before, a thread that asked while another loaded the entry points saw only
    those loaded so far: "unknown protocol 'quorum'; registered: hrw"). The near miss, one
    thread, is the plain load every other test makes."""
    import subprocess
    import sys
    code = ("from concurrent.futures import ThreadPoolExecutor\n"
            "from rdzv_sim.scenario.load import load\n"
            "with ThreadPoolExecutor(8) as pool:\n"
            "    names = list(pool.map(lambda _: load('validate-quorum').protocol.name, range(8)))\n"
            "assert names == ['quorum'] * 8, names\n")
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
