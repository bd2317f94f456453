"""Every protocol the project ships, under random fault schedules (profile: ci or thorough)."""
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rdzv_sim.testing import check_run, fault_schedules, replicated_stores, scenarios
from rdzv_sim.testing.strategies import FAULT_KINDS
from rdzv_sim.trace.details import round_facts


@given(scenarios(protocol="hrw"))
def test_hrw_invariants(sc):
    check_run(sc)


@given(scenarios(protocol="static"))
def test_static_invariants(sc):
    check_run(sc)


@given(scenarios(protocol="c10d"))
def test_c10d_invariants(sc):
    check_run(sc)          # torch's own quirks are listed in rdzv_sim.testing.known


@settings(max_examples=20)
@given(scenarios(protocol="hrw", faults=lambda n: fault_schedules(n, kinds=("crash", "restart"))))
def test_readme_example(sc):
    """The README's example, as written there."""
    check_run(sc)
    assert all(f.kind in ("crash", "restart") for f in sc.faults)


@settings(max_examples=40)
@given(scenarios(protocol="hrw", settings={"rank_order": st.sampled_from(["topology", "stable"])}))
def test_hrw_rank_orders_keep_their_promises(sc):
    """Each rank order's own invariant (node-list order; kept ranks) under random faults."""
    check_run(sc)


REPLICA_FAULTS = (*FAULT_KINDS, "store_crash")


@settings(max_examples=40)
@given(scenarios(protocol="hrw", store=replicated_stores,
                 faults=lambda n: fault_schedules(n, kinds=REPLICA_FAULTS)))
def test_hrw_on_a_replicated_store(sc):
    """Members crash, pause and are cut off with the nodes that host them, leaders die: one
    round's members agree, no round completes on both sides of a cut, and the job converges
    whenever a majority of members is left."""
    check_run(sc)


@settings(max_examples=30)
@given(scenarios(protocol="c10d", store=replicated_stores,
                 faults=lambda n: fault_schedules(n, kinds=REPLICA_FAULTS)))
def test_c10d_on_a_replicated_store(sc):
    check_run(sc)


def store_on_a_host(n):
    """A TCPStore on one of the job's hosts (it dies with it), as torchrun's endpoint is."""
    return st.fixed_dictionaries({"host": st.integers(0, n - 1), "op_timeout": st.integers(5, 30)})


@settings(max_examples=40)
@given(scenarios(protocol="hrw", store=store_on_a_host,
                 settings={"store_failover": st.just(True), "failover_timeout": st.sampled_from([2.0, 10.0])},
                 faults=lambda n: fault_schedules(n, kinds=(*FAULT_KINDS, "store_crash"))))
def test_hrw_store_failover(sc):
    """The store's host crashes, is paused or cut off with the members: every member that
    fails over picks the same successor in each epoch, one round's members agree (no round
    on both sides of a cut), and the job converges unless it lost half its hosts."""
    check_run(sc)


@settings(max_examples=30)
@given(st.sampled_from(["per_operation", "aggregate"]),
       fault_schedules(8, kinds=("crash", "restart", "worker_failure")), st.integers(0, 2**32 - 1))
def test_in_process_keeps_whole_segments_with_spares(fidelity, faults, seed):
    """NVRx's in-process restart with spares on NVLink segments of 2 hosts, at both fidelities
    (the drawn scenarios leave segments at 1): every in-place world is a whole number of
    segments, and every invariant of the modes holds."""
    from rdzv_sim.scenario import load
    from rdzv_sim.testing.liveness import liveness_bound, quiet_time
    data = {"name": "segments", "seed": seed, "duration": 1.0, "fidelity": fidelity,
            "cluster": {"nodes": 8, "nproc_per_node": 2, "start_spread": 0}, "store": {"host": None},
            "protocol": {"name": "hrw", "min_nodes": 4, "max_nodes": 8, "last_call_timeout": 1},
            "agent": {"max_restarts": 10_000, "max_rendezvous_attempts": 10_000, "collective_timeout": 10,
                      "worker_start": 1, "recovery": "in_process",
                      "in_process": {"soft_timeout": 10, "hard_timeout": 20}},
            "scheduler": {"hot_spares": 2, "segment": 2}, "faults": faults}
    probe = load(data | {"duration": 10**6})
    sc = load(data | {"duration": float(int(quiet_time(probe) + liveness_bound(probe) + 10))})
    r, _ = check_run(sc)
    ev = r.events
    made = set(ev.loc[ev["event"] == "in_process_restart", "round"].dropna().astype(int))
    # the world as formed (a member lost while it restarts gets no rank in it: the rows may be fewer)
    sizes = {r: f["nnodes"] for r, f in round_facts(ev).items() if r in made}
    assert all(n % 2 == 0 for n in sizes.values()), sizes
    event(f"in-place worlds: {min(len(made), 2)}{'+' if len(made) >= 2 else ''}")   # --hypothesis-show-statistics
