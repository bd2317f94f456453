"""Every protocol the project ships, under random fault schedules (profile: ci or thorough)."""
from hypothesis import given, settings

from rdzv_sim.testing import check_run, fault_schedules, scenarios


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
