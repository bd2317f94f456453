"""The public namespaces are what they say (`__all__` checked, as Hypothesis does), the
checkers load without Hypothesis, and the strategies refuse bad arguments when called, with a
message that says what to do."""
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import rdzv_sim
import rdzv_sim.testing as T
from rdzv_sim.scenario.faults import KINDS


def public(module) -> set[str]:
    names = set(dir(module)) | set(getattr(module, "_LAZY", {})) | set(getattr(module, "_STRATEGIES", ()))
    return {n for n in names if (not n.startswith("_") or n == "__version__")
            and not isinstance(getattr(module, n, None), type(sys))}


@pytest.mark.parametrize("module", [rdzv_sim, T], ids=["rdzv_sim", "rdzv_sim.testing"])
def test_all_is_exactly_what_is_public(module):
    extra = {"annotations"}          # `from __future__ import annotations`
    assert set(module.__all__) == public(module) - extra
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_the_checkers_import_without_hypothesis():
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "from rdzv_sim.testing import check_safety, check_liveness, Violation\n"
            "import rdzv_sim.testing as T\n"
            "try:\n    T.scenarios\nexcept ImportError:\n    print('strategies need hypothesis')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "strategies need hypothesis"


def test_one_way_to_register_a_protocol():
    from rdzv_sim.protocols import Kit, register_kit
    assert rdzv_sim.register_kit is register_kit and rdzv_sim.Kit is Kit
    assert not [n for m in (rdzv_sim, rdzv_sim.protocols, T) for n in m.__all__ if n.startswith("register_")
                and n != "register_kit"]


@pytest.mark.parametrize("call, words", [
    (lambda: T.scenarios(protocol="nope"), "not a registered protocol; registered: c10d, hrw"),
    (lambda: T.scenarios(nodes=4), "give a strategy of host counts"),
    (lambda: T.scenarios(faults=[{"kind": "crash"}]), "a function of the node count"),
    (lambda: T.scenarios(horizon=0), "horizon=0"),
    (lambda: T.scenarios(recovery="shrnk"), "hrw recovers by in_job, in_process, shrink"),
    (lambda: T.scenarios(protocol="static", recovery="shrink"), "static recovers by in_job;"),
    (lambda: T.scenarios(recovery=()), "give one of them"),
    (lambda: T.protocol_settings("nope", 3), "not a registered protocol"),
    (lambda: T.protocol_settings("hrw", 3, {"colour": 1}), "not fields of 'hrw'"),
    (lambda: T.fault_schedules(3, kinds=("latencyy",)), "unknown kind 'latencyy'; the kinds are crash"),
    (lambda: T.fault_schedules(3, kinds=()), "no kind"),
    (lambda: T.fault_schedules(0), "nodes=0"),
    (lambda: T.fault_schedules(3, kinds=("rack_failure",)), "a rack failure needs racks"),
])
def test_strategies_refuse_bad_arguments_when_called(call, words):
    with pytest.raises(InvalidArgument, match=None) as e:
        call()                                   # no draw: the call itself refuses
    assert words in str(e.value)


@settings(max_examples=60, deadline=None)
@given(st.one_of(
    T.scenarios(nodes=st.integers(3, 14), faults=lambda n: T.fault_schedules(
        n, kinds=tuple(k for k in KINDS if k != "lighthouse_crash"), racks=min(n, 3), max_faults=8)),
    # torchft's Lighthouse is the quorum protocol's
    T.scenarios(protocol="quorum", nodes=st.integers(3, 14), faults=lambda n: T.fault_schedules(
        n, kinds=("lighthouse_crash", "crash", "restart"), max_faults=4))))
def test_every_fault_kind_can_be_drawn_into_a_valid_scenario(sc):
    for f in sc.faults:
        acts = f.actions(0)
        assert [a.at for a in acts] == sorted(a.at for a in acts)
        assert f.ends() >= acts[-1].at
        if f.kind != "slow_join":
            assert acts[0].at == f.at


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_is_drawn_somewhere(kind):
    from hypothesis import find
    found = find(T.fault_schedules(12, kinds=tuple(KINDS), racks=3, max_faults=6),
                 lambda faults: any(f["kind"] == kind for f in faults))
    assert any(f["kind"] == kind for f in found)


@settings(max_examples=15, deadline=None)
@given(T.scenarios(recovery="in_process", nodes=st.integers(2, 4)))
def test_scenarios_draw_the_recovery_mode_asked_for(sc):
    assert sc.agent.recovery == "in_process"


@settings(max_examples=15, deadline=None)
@given(T.scenarios(recovery=["in_job", "shrink"], nodes=st.integers(2, 4)))
def test_scenarios_draw_only_the_recovery_modes_asked_for(sc):
    assert sc.agent.recovery in ("in_job", "shrink")
