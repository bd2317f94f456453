"""Every protocol the project ships, under random fault schedules (profile: ci or thorough)."""
from hypothesis import given

from rdzv_sim.testing import check_run, scenarios


@given(scenarios(protocol="hrw"))
def test_hrw_invariants(sc):
    check_run(sc)


@given(scenarios(protocol="static"))
def test_static_invariants(sc):
    check_run(sc)


@given(scenarios(protocol="c10d"))
def test_c10d_invariants(sc):
    check_run(sc)          # torch's own quirks are listed in rdzv_sim.testing.known
