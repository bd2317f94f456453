"""A kit is registered whole or refused, saying what was wrong with the offending value: its
classes, a part kind it misspells, a part path that names nothing."""
from typing import ClassVar

import pytest

from rdzv_sim.protocols import Kit, Protocol, ProtocolError, ProtocolSettings, register_kit
from rdzv_sim.protocols.registry import _forget, get


class _Settings(ProtocolSettings):
    pass


class _NotSettings:
    pass


class _Proto(Protocol):
    name = "registry-probe"


@pytest.fixture(autouse=True)
def _scratch():
    """The scratch kit goes with its test (another test reading every protocol never sees it)."""
    yield
    _forget("registry-probe")


def test_settings_that_do_not_subclass_protocolsettings_are_named():
    with pytest.raises(ProtocolError) as e:
        register_kit(Kit("registry-probe", _Proto, _NotSettings))
    assert str(e.value).endswith(f"got {_NotSettings!r}")      # the value, not "{settings!r}"


def test_a_class_that_is_not_a_protocol_is_named():
    with pytest.raises(ProtocolError) as e:
        register_kit(Kit("registry-probe", _NotSettings, _Settings))
    assert "_NotSettings" in str(e.value) and "is not a subclass" in str(e.value)


def test_a_misspelt_part_kind_is_refused_with_the_kinds():
    with pytest.raises(ProtocolError, match="no part of kind 'invariant'; the kinds are round_model"):
        register_kit(Kit("registry-probe", _Proto, _Settings, parts={"invariant": []}))


@pytest.mark.parametrize("path, why", [
    ("rdzv_sim.testing.invariants:NOPE", "defines no 'NOPE'"),
    ("rdzv_sim.testing.invariantz:HRW", "there is no module 'rdzv_sim.testing.invariantz'"),
    ("rdzv_sim.testing.invariants.HRW", "write it 'package.module:attribute'"),
])
def test_a_part_path_that_names_nothing_is_refused_before_anything_runs(path, why):
    with pytest.raises(ProtocolError, match=f"its invariants part {path!r} does not exist: .*{why}"):
        register_kit(Kit("registry-probe", _Proto, _Settings, parts={"invariants": path}))


def test_a_part_is_imported_when_first_asked_for():
    """The near miss of the above: a path that exists registers, unimported, and its layer's
    first question imports it."""
    import sys
    path = "userproto.probe_parts:CHECKS"
    sys.modules.pop("userproto.probe_parts", None)
    register_kit(Kit("registry-probe", _Proto, _Settings, parts={"invariants": path}), replace=True)
    assert "userproto.probe_parts" not in sys.modules
    assert [c.__name__ for c in get("registry-probe").part("invariants")] == ["never_wrong"]


def test_a_kit_registered_again_keeps_only_its_new_parts():
    register_kit(Kit("registry-probe", _Proto, _Settings, parts={"known": ["x"]}), replace=True)
    register_kit(Kit("registry-probe", _Proto, _Settings), replace=True)
    assert get("registry-probe").part("known") is None


def test_a_kit_is_a_frozen_value():
    kit = Kit("registry-probe", _Proto, _Settings, parts={"known": ()})
    with pytest.raises(Exception):
        kit.name = "other"
    with pytest.raises(TypeError):
        kit.parts["known"] = ("y",)


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


def test_what_a_protocol_can_do_is_its_kits_capabilities():
    from rdzv_sim.protocols import Capabilities
    from rdzv_sim.protocols.registry import get
    spec = register_kit(Kit("registry-probe", _Proto, _Settings, Capabilities(deterministic=True, torchrun="why")))
    assert spec.caps.deterministic and spec.caps.torchrun == "why" and spec.caps.fidelities == ("per_operation",)
    assert get("c10d").caps.torch_counterpart == "c10d" and get("static").caps.fixed_world
    assert get("hrw").caps.fidelities == ("per_operation", "aggregate") and not get("hrw").caps.fixed_world


@pytest.mark.parametrize("given, says", [
    ({"fidelities": ("aggregate",)}, "must list 'per_operation'"),
    ({"fidelities": ("per_operation", "agregate")}, "must list 'per_operation' and may add 'aggregate'"),
    ({"fidelities": "per_operation"}, "must list 'per_operation'"),
    ({"deterministic": "yes"}, "deterministic must be True or False, got 'yes'"),
    ({"torchrun": ""}, "torchrun must be a non-empty string or None"),
])
def test_capabilities_are_checked_when_made(given, says):
    from rdzv_sim.protocols import Capabilities
    with pytest.raises(ValueError, match=says):
        Capabilities(**given)
    Capabilities()                                       # the near miss: the defaults are sound


def test_aggregate_without_a_round_model_is_refused():
    from rdzv_sim.protocols import Capabilities
    caps = Capabilities(fidelities=("per_operation", "aggregate"))
    with pytest.raises(ProtocolError, match="fidelity 'aggregate' needs a round_model part"):
        register_kit(Kit("registry-probe", _Proto, _Settings, caps))
    register_kit(Kit("registry-probe", _Proto, _Settings, caps,
                     parts={"round_model": "rdzv_sim.aggregate.hrw_round:HrwRounds"}))


def test_a_capability_declared_on_the_class_is_refused_with_where_it_goes():
    """A class attribute would be silently ignored now; it is refused instead."""
    class Old(_Proto):
        fidelities = ("per_operation", "aggregate")

    class OldSettings(_Settings):
        fixed_world: ClassVar[bool] = True
    with pytest.raises(ProtocolError, match=r"fidelities is declared on the class; .*capabilities=Capabilities"):
        register_kit(Kit("registry-probe", Old, _Settings))
    with pytest.raises(ProtocolError, match="fixed_world is declared on the class"):
        register_kit(Kit("registry-probe", _Proto, OldSettings))
