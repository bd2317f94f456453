"""The recovery machine (rdzv_sim/protocols/recovery/machine.py): each transition with its near
miss, driven as both fidelities drive it, with no simulator under it."""
from rdzv_sim.protocols.agent import AgentSettings
from rdzv_sim.protocols.recovery import (Absorb, FallBack, Fallback, Fault, Ignore, InJob, InProcess, Machine,
                                         Over, Wait)
from rdzv_sim.reasons import Reason

M = ["a", "b", "c", "d"]


def machine(mode="in_process", min_nodes=2, segment=1, **kw):
    return Machine(AgentSettings(recovery=mode, **kw), min_nodes=min_nodes, segment=segment)


def formed(m, rnd=0, members=M, first_rank=1.0, trains_at=5.0):
    m.formed(rnd, members, first_rank, trains_at)
    return m


# --- when a fault counts ---------------------------------------------------------------------
def test_in_job_never_recovers_in_place():
    m = formed(machine("in_job"))
    assert not m.on
    assert isinstance(m.fault(0, Fault.WORKERS_FAILED, "b", 10.0, 0.0), InJob)


def test_a_fault_counts_from_the_instant_the_world_trains_not_a_tick_before():
    m = formed(machine())
    assert isinstance(m.fault(0, Fault.WORKERS_FAILED, "b", 5.0, 0.0), Wait)       # at the instant
    m2 = formed(machine())
    assert isinstance(m2.fault(0, Fault.WORKERS_FAILED, "b", 5.0 - 1e-9, 0.0), InJob)   # a tick before


def test_a_fault_of_a_world_never_formed_is_the_in_job_paths():
    m = formed(machine(), rnd=3)
    assert isinstance(m.fault(2, Fault.HOST_LOST, "b", 10.0, 1.0), InJob)
    assert isinstance(m.fault(3, Fault.HOST_LOST, "b", 10.0, 1.0), Wait)


def test_per_operation_a_store_world_trains_once_every_process_group_is_up():
    m = machine()
    for i, n in enumerate(M):
        m.started(0, n, i, len(M), 1.0 + i)
    for n in M[:-1]:
        m.trains(0, n, 6.0)
    assert isinstance(m.fault(0, Fault.HOST_LOST, "a", 7.0, 1.0), InJob)          # one is not up yet
    m.trains(0, "d", 8.0)
    assert isinstance(m.fault(0, Fault.HOST_LOST, "a", 8.0, 1.0), Wait)
    assert m.worlds[0].formed == 1.0                                               # the first to start


def test_a_new_store_world_ends_the_worlds_before_it():
    m = formed(machine(), rnd=0)
    m.started(1, "a", 0, 4, 20.0)
    assert list(m.worlds) == [1]


# --- when the survivors act --------------------------------------------------------------------
def test_faults_gather_until_the_first_deadline():
    m = formed(machine("shrink"))
    first = m.fault(0, Fault.HOST_LOST, "b", 10.0, 3.0)
    assert first == Wait(13.0, True)
    later = m.fault(0, Fault.HOST_LOST, "c", 11.0, 3.0)                            # due after: gathered
    assert later == Wait(13.0, False)
    sooner = m.fault(0, Fault.WORKERS_FAILED, "d", 11.0, 0.0)                     # due sooner: a new deadline
    assert sooner == Wait(11.0, True)
    assert m.due(0, 13.0, ["a", "b", "c", "d"]) is None                            # the old deadline is stale
    d = m.due(0, 11.0, ["a", "d"])
    assert isinstance(d, FallBack) and d.plan.why == Fallback.BELOW_MIN            # a alone is below 2


def test_in_process_acts_at_its_soft_timeout_on_a_lost_host_if_sooner():
    m = formed(machine(in_process=InProcess(soft_timeout=60, hard_timeout=90)))
    assert m.fault(0, Fault.HOST_VANISHED, "b", 10.0, 600.0) == Wait(70.0, True)
    m2 = formed(machine(in_process=InProcess(soft_timeout=60, hard_timeout=90)))
    assert m2.fault(0, Fault.HOST_VANISHED, "b", 10.0, 30.0) == Wait(40.0, True)   # the notice is sooner


def test_a_round_due_to_end_first_voids_the_fault():
    m = formed(machine())
    m.ending(0, 12.0)
    assert isinstance(m.fault(0, Fault.HOST_LOST, "b", 10.0, 2.0), Ignore)         # acted on at 12: the end wins
    assert isinstance(m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.9), Wait)           # near miss: acted on before


def test_an_end_planned_after_a_deadline_keeps_it_one_before_voids_it():
    m = formed(machine())
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 2.0)
    m.ending(0, 12.5)
    assert m.worlds[0].due == 12.0
    m.ending(0, 12.0)
    assert m.worlds[0].due is None and m.due(0, 12.0, M) is None


def test_a_void_end_lets_faults_count_again():
    m = formed(machine())
    m.ending(0, 12.0)
    m.ending(0, None)
    assert isinstance(m.fault(0, Fault.HOST_LOST, "b", 10.0, 2.0), Wait)


def test_an_ended_world_has_nothing_to_recover():
    m = formed(machine())
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 2.0)
    m.ended(0)
    assert m.due(0, 12.0, M) is None
    assert isinstance(m.fault(0, Fault.HOST_LOST, "c", 13.0, 2.0), InJob)


# --- what it decides -----------------------------------------------------------------------
def test_in_process_takes_a_spare_up_by_the_first_rank_not_one_up_after():
    m = formed(machine())
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    d = m.due(0, 11.0, ["a", "c", "d"], [("late", 1.0 + 1e-9), ("s", 1.0)])
    assert isinstance(d, Absorb)
    assert d.new == ("a", "c", "d", "s") and d.taken == ("s",) and d.left_out == ()
    assert d.old == ("a", "c", "d") and d.why == Reason.PEER_FAILED


def test_a_member_gone_without_a_fault_of_its_own_is_lost_too():
    """A member that left (its agent stopped) counts as lost, so its seat is filled too: both
    fidelities count the world as formed, not the members they still hold."""
    m = formed(machine())
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    d = m.due(0, 11.0, ["a", "d"], [("s", 0.0), ("t", 0.0)])
    assert d.new == ("a", "d", "s", "t")
    m2 = formed(machine())
    m2.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    d2 = m2.due(0, 11.0, ["a", "c", "d"], [("s", 0.0), ("t", 0.0)])                # near miss: c is live
    assert d2.new == ("a", "c", "d", "s")


def test_shrink_keeps_exactly_the_survivors_in_their_order():
    m = formed(machine("shrink"))
    m.fault(0, Fault.WORKERS_FAILED, "c", 10.0, 0.0)
    d = m.due(0, 10.0, M, [("s", 0.0)])
    assert isinstance(d, Absorb) and d.new == ("a", "b", "d") and d.left_out == ("c",) and d.taken == ()
    assert d.why == Reason.WORKERS_FAILED


def test_an_absorbed_world_is_the_new_world_and_trains_after_its_restart():
    m = formed(machine("shrink"))
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    d = m.due(0, 11.0, ["a", "c", "d"])
    w = m.worlds[0]
    assert w.roster() == ["a", "c", "d"] and w.iteration == 1
    assert w.trains_at == 11.0 + d.plan.ranked + d.plan.start
    assert isinstance(m.fault(0, Fault.HOST_LOST, "c", w.trains_at - 1e-9, 1.0), InJob)   # restarting
    assert isinstance(m.fault(0, Fault.HOST_LOST, "c", w.trains_at, 1.0), Wait)


def test_in_process_falls_back_after_max_iterations_in_a_row():
    m = formed(machine(min_nodes=1, in_process=InProcess(max_iterations=1)))
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    assert isinstance(m.due(0, 11.0, ["a", "c", "d"]), Absorb)
    t = m.worlds[0].trains_at
    m.fault(0, Fault.HOST_LOST, "c", t, 1.0)
    d = m.due(0, t + 1.0, ["a", "d"])
    assert isinstance(d, FallBack) and d.plan.why == Fallback.ITERATIONS


def test_an_unusable_device_falls_back_under_in_process_with_the_failed_named():
    m = formed(machine())
    m.fault(0, Fault.WORKERS_FAILED, "a", 10.0, 0.0)
    m.fault(0, Fault.DEVICE_UNUSABLE, "b", 10.0, 0.0)
    d = m.due(0, 10.0, ["a", "c", "d"])
    assert isinstance(d, FallBack) and d.plan.why == Fallback.MODE and d.failed == {"a"}
    assert d.why == Reason.PEER_FAILED


def test_no_live_member_left_is_over_not_a_fallback():
    m = formed(machine())
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    assert m.due(0, 11.0, []) == Over(Reason.PEER_FAILED)


def test_in_process_keeps_whole_segments():
    m = formed(machine(segment=2))
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    assert m.due(0, 11.0, ["a", "c", "d"], [("s", 0.0)]).new == ("a", "c", "d", "s")
    m2 = formed(machine(segment=2, min_nodes=1))
    m2.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    assert m2.due(0, 11.0, ["a", "c", "d"]).new == ("a", "c")                     # no spare: a segment less
    m4 = formed(machine(segment=4, min_nodes=1))
    m4.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    d = m4.due(0, 11.0, ["a", "c", "d"])                                            # no whole segment left
    assert isinstance(d, FallBack) and d.plan.why == Fallback.BELOW_MIN


# --- the boundaries mutation testing found unstated (reports/mutation.md) ------------------
def test_a_machine_keeps_whole_segments_of_one_by_default():
    m = Machine(AgentSettings(recovery="in_process"), min_nodes=1)
    formed(m)
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    assert m.due(0, 11.0, ["a", "c", "d"]).new == ("a", "c", "d")


def test_a_formed_world_knows_its_size_and_trains_when_told_once():
    m = formed(machine())
    assert m.worlds[0].size == 4
    m.trains(0, "a", 7.0)                       # a late process-group report does not move it
    assert m.worlds[0].trains_at == 5.0
    m.trains(9, "a", 7.0)                       # nor does one of a world never formed
    m.ended(9)
    assert list(m.worlds) == [0]


def test_a_fault_due_at_the_same_instant_is_gathered_not_timed_again():
    m = formed(machine("shrink"))
    assert m.fault(0, Fault.HOST_LOST, "b", 10.0, 3.0) == Wait(13.0, True)
    assert m.fault(0, Fault.HOST_LOST, "c", 12.0, 1.0) == Wait(13.0, False)


def test_decisions_name_the_fault_they_answer_for():
    m = formed(machine())
    m.fault(0, Fault.DEVICE_UNUSABLE, "b", 10.0, 0.0)
    assert m.due(0, 10.0, ["a", "c", "d"]).fault is Fault.DEVICE_UNUSABLE
    m2 = formed(machine())
    m2.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    assert m2.due(0, 11.0, ["a", "c", "d"]).fault is Fault.HOST_LOST


def test_a_world_restarted_in_place_trains_after_its_ranks_and_its_start_and_counts_its_restarts():
    m = formed(machine(in_process=InProcess(initialize=3.0)))
    m.fault(0, Fault.HOST_LOST, "b", 10.0, 1.0)
    d = m.due(0, 11.0, ["a", "c", "d"])
    assert m.worlds[0].trains_at == 11.0 + d.plan.ranked + 3.0
    t = m.worlds[0].trains_at
    m.fault(0, Fault.HOST_LOST, "c", t, 1.0)
    m.due(0, t + 1.0, ["a", "d"])
    assert m.worlds[0].iteration == 2
