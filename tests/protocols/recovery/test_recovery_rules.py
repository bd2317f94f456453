"""The recovery modes' rules (rdzv_sim/protocols/recovery/rules.py), each with its near miss."""
import pytest
from pydantic import ValidationError

from rdzv_sim.protocols.agent import AgentSettings
from rdzv_sim.protocols.kit import Capabilities
from rdzv_sim.protocols.recovery import (ABSORBS, Fallback, Fault, InProcess, Mode, detection, plan,
                                         reform_at, world)

M = ["a", "b", "c", "d"]


def cfg(mode, **kw):
    return AgentSettings(recovery=mode, **kw)


# --- what each mode absorbs --------------------------------------------------------------
def test_in_job_absorbs_nothing():
    for f in Fault:
        p = plan(cfg("in_job"), f, M, {"b"}, min_nodes=1)
        assert not p.absorbed and p.why == Fallback.MODE


def test_in_process_falls_back_at_once_for_an_unusable_device_but_absorbs_a_lost_host():
    p = plan(cfg("in_process"), Fault.DEVICE_UNUSABLE, M, {"b"}, min_nodes=1)
    assert not p.absorbed and p.why == Fallback.MODE
    near = plan(cfg("in_process"), Fault.HOST_LOST, M, {"b"}, min_nodes=1)
    assert near.absorbed and near.members == ("a", "c", "d")


def test_shrink_absorbs_an_unusable_device_as_a_lost_rank():
    p = plan(cfg("shrink"), Fault.DEVICE_UNUSABLE, M, {"b"}, min_nodes=1)
    assert p.absorbed and p.members == ("a", "c", "d")
    assert Fault.DEVICE_UNUSABLE in ABSORBS[Mode.SHRINK] and Fault.DEVICE_UNUSABLE not in ABSORBS[Mode.IN_PROCESS]


# --- the world after it ----------------------------------------------------------------------
def test_in_process_keeps_a_member_whose_workers_raised_shrink_drops_it():
    assert world(Mode.IN_PROCESS, M, (), {"c"}, ()) == tuple(M)
    assert world(Mode.SHRINK, M, (), {"c"}, ()) == ("a", "b", "d")


def test_survivors_keep_their_order_and_spares_fill_the_old_size():
    # ShiftRanks: relative order kept; MaxActiveWorldSize: spares up to the old size, in order
    assert world(Mode.IN_PROCESS, M, {"a", "c"}, (), ["s1", "s2", "s3"]) == ("b", "d", "s1", "s2")
    assert world(Mode.IN_PROCESS, M, {"a"}, (), []) == ("b", "c", "d")     # no spare: smaller


def test_shrink_holds_exactly_the_survivors_even_with_spares():
    assert world(Mode.SHRINK, M, {"a"}, (), ["s1"]) == ("b", "c", "d")


def test_a_spare_that_is_lost_or_already_a_member_is_not_taken():
    assert world(Mode.IN_PROCESS, M, {"a", "s1"}, (), ["s1", "b", "s2"]) == ("b", "c", "d", "s2")


def test_in_process_keeps_whole_segments():
    six = [f"n{i}" for i in range(6)]
    assert world(Mode.IN_PROCESS, six, {"n0"}, (), [], segment=2) == ("n1", "n2", "n3", "n4")
    assert world(Mode.IN_PROCESS, six, {"n0"}, (), [], segment=1) == ("n1", "n2", "n3", "n4", "n5")
    assert world(Mode.IN_PROCESS, six, {"n0"}, (), ["s"], segment=2) == ("n1", "n2", "n3", "n4", "n5", "s")


# --- when it falls back ---------------------------------------------------------------------
def test_never_below_min_nodes():
    p = plan(cfg("shrink"), Fault.HOST_LOST, M, {"a", "b"}, min_nodes=3)
    assert not p.absorbed and p.why == Fallback.BELOW_MIN
    near = plan(cfg("shrink"), Fault.HOST_LOST, M, {"a"}, min_nodes=3)
    assert near.absorbed and len(near.members) == 3


def test_spares_keep_in_process_above_min_nodes():
    p = plan(cfg("in_process"), Fault.HOST_LOST, M, {"a", "b"}, spares=["s"], min_nodes=3)
    assert p.absorbed and p.members == ("c", "d", "s")


def test_segments_can_put_in_process_below_min():
    six = [f"n{i}" for i in range(6)]
    p = plan(cfg("in_process"), Fault.HOST_LOST, six, {"n0", "n1", "n2"}, min_nodes=4, segment=2)
    assert not p.absorbed and p.why == Fallback.BELOW_MIN          # 3 left, 2 usable


def test_in_process_falls_back_after_max_iterations():
    c = cfg("in_process", in_process={"max_iterations": 2})
    assert plan(c, Fault.HOST_LOST, M, {"a"}, min_nodes=1, iteration=1).absorbed
    p = plan(c, Fault.HOST_LOST, M, {"a"}, min_nodes=1, iteration=2)
    assert not p.absorbed and p.why == Fallback.ITERATIONS
    assert plan(cfg("in_process"), Fault.HOST_LOST, M, {"a"}, min_nodes=1, iteration=10**6).absorbed


# --- what it costs ----------------------------------------------------------------------------
def test_in_process_costs_its_parts():
    c = cfg("in_process", in_process={"pending_kernels": 10, "iteration": 3.0, "initialize": 4.0})
    p = plan(c, Fault.HOST_LOST, M, {"a"}, min_nodes=1)
    assert p.ranked == pytest.approx(0.5 + 0.01 * 10 + 3.0 + 1.0 + 0.5 + 0.5)
    assert p.start == 4.0


def test_shrink_costs_the_published_time():
    p = plan(cfg("shrink"), Fault.HOST_LOST, M, {"a"}, min_nodes=1)
    assert (p.ranked, p.start) == (2.0, 0.0)


def test_in_process_acts_on_a_lost_host_at_the_soft_timeout_at_the_latest():
    c = cfg("in_process")
    assert detection(c, Fault.HOST_VANISHED, 600.0) == 60.0              # soft_timeout
    assert detection(c, Fault.HOST_LOST, 600.0) == 60.0
    assert detection(c, Fault.HOST_VANISHED, 5.0) == 5.0                 # its collective failed first
    assert detection(c, Fault.DEVICE_UNUSABLE, 600.0) == 600.0           # not absorbed: in_job's
    assert detection(cfg("shrink"), Fault.HOST_VANISHED, 600.0) == 600.0


def test_a_vanished_host_makes_the_restart_wait_the_hard_timeout():
    c = cfg("in_process", in_process={"hard_timeout": 40, "soft_timeout": 20})
    vanished = plan(c, Fault.HOST_VANISHED, M, {"a"}, min_nodes=1)
    killed = plan(c, Fault.HOST_LOST, M, {"a"}, min_nodes=1)              # its monitor reports it
    assert vanished.ranked == pytest.approx(killed.ranked + 40) and killed.ranked == pytest.approx(2.5)
    assert plan(cfg("shrink"), Fault.HOST_VANISHED, M, {"a"}, min_nodes=1).ranked == 2.0


def test_waiting_hosts_re_form_only_at_a_planned_re_form():
    assert reform_at(cfg("in_job"), 0.0, 5.0) == 5.0
    assert reform_at(cfg("shrink"), 0.0, 5.0) is None
    assert reform_at(cfg("shrink", reform_every=100), 10.0, 5.0) == 110.0
    assert reform_at(cfg("in_process", reform_every=100), 10.0, 500.0) == 500.0


# --- settings and declarations ----------------------------------------------------------
def test_soft_timeout_must_be_shorter_than_hard():
    with pytest.raises(ValidationError, match="soft_timeout"):
        InProcess(soft_timeout=90, hard_timeout=90)
    InProcess(soft_timeout=89, hard_timeout=90)


def test_a_kit_declares_the_modes_it_supports():
    assert Capabilities().recovery == ("in_job",)
    assert Capabilities(recovery=["in_job", "shrink"]).recovery == ("in_job", "shrink")
    with pytest.raises(ValueError, match="must list 'in_job'"):
        Capabilities(recovery=("shrink",))
    with pytest.raises(ValueError, match="must list 'in_job'"):
        Capabilities(recovery=("in_job", "restart"))


# --- the small rules the machine and the checker share -------------------------------------
def test_the_worst_fault_is_answered_for():
    from rdzv_sim.protocols.recovery import worst
    assert worst([Fault.WORKERS_FAILED, Fault.HOST_LOST]) is Fault.HOST_LOST
    assert worst([Fault.HOST_VANISHED, Fault.DEVICE_UNUSABLE]) is Fault.DEVICE_UNUSABLE
    assert worst([Fault.WORKERS_FAILED]) is Fault.WORKERS_FAILED          # near miss: one alone


def test_shrink_drops_failed_workers_in_process_keeps_them():
    from rdzv_sim.protocols.recovery import gone
    assert gone(Mode.SHRINK, {"a"}, {"b"}) == {"a", "b"}
    assert gone(Mode.IN_PROCESS, {"a"}, {"b"}) == {"a"}


def test_a_spare_is_up_by_the_first_rank_given_not_after():
    from rdzv_sim.protocols.recovery import is_spare
    assert is_spare(1.0, 1.0)                   # up at the instant the world formed: in it
    assert is_spare(0.5, 1.0)
    assert not is_spare(1.0 + 1e-9, 1.0)        # near miss: a tick later it waits for a re-form


def test_out_of_iterations_at_the_limit_not_before():
    from rdzv_sim.protocols.recovery import out_of_iterations
    c = cfg("in_process", in_process=InProcess(max_iterations=2))
    assert out_of_iterations(c, 2) and out_of_iterations(c, 3)
    assert not out_of_iterations(c, 1)
    assert not out_of_iterations(cfg("in_process"), 10 ** 6)              # no limit: never


# --- the boundaries mutation testing found unstated (reports/mutation.md) ------------------
def test_the_worst_is_by_the_faults_order_not_their_names():
    from rdzv_sim.protocols.recovery import worst
    # alphabetically host_lost < host_vanished; a vanished host is the worse (it hangs its peers)
    assert worst([Fault.HOST_LOST, Fault.HOST_VANISHED]) is Fault.HOST_VANISHED


def test_a_plan_says_absorbed_as_a_bool_and_names_its_mode():
    assert plan(cfg("in_job"), Fault.HOST_LOST, M, {"b"}, min_nodes=1).absorbed is False
    assert plan(cfg("shrink"), Fault.HOST_LOST, M, {"a", "b", "c"}, min_nodes=2).absorbed is False
    c = cfg("in_process", in_process=InProcess(max_iterations=1))
    assert plan(c, Fault.HOST_LOST, M, {"b"}, min_nodes=1, iteration=1).absorbed is False
    p = plan(cfg("in_process"), Fault.HOST_LOST, M, {"b"}, min_nodes=1)
    assert p.absorbed is True and p.why == Mode.IN_PROCESS


def test_the_iteration_count_starts_at_zero():
    c = cfg("in_process", in_process=InProcess(max_iterations=1))
    assert plan(c, Fault.HOST_LOST, M, {"b"}, min_nodes=1).absorbed          # no restart yet: absorbed


def test_shrink_keeps_every_survivor_whatever_the_segment():
    p = plan(cfg("shrink"), Fault.HOST_LOST, M, {"b"}, min_nodes=1, segment=2)
    assert p.members == ("a", "c", "d")                                      # in_process would keep 2
