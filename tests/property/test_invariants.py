"""Every protocol the project ships, under random fault schedules (profile: ci or thorough)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from rdzv_sim.testing import check_run, fault_schedules, replicated_stores, scenarios
from rdzv_sim.testing.strategies import FAULT_KINDS


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
