"""The public property strategies find every known-bad protocol within a fixed budget, and the
failure replays from its YAML. The kill rate is printed."""
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from rdzv_sim.scenario import load
from rdzv_sim.testing import check_run, fault_schedules, scenarios

from mutants.broken import MUTANTS

BUDGET = 60            # examples per mutant
FOUND: dict[str, bool] = {}


def hunt(name):
    """Run the strategies against mutant `name`; the first failing scenario, or None."""
    found = []
    faults = {"kinds": ("crash", "restart"), "max_faults": 2} | MUTANTS[name][2]

    @settings(max_examples=BUDGET, deadline=None, derandomize=True, database=None,
              phases=[Phase.generate], suppress_health_check=[HealthCheck.too_slow])
    @given(scenarios(protocol=name, nodes=st.integers(2, 5),
                     faults=lambda n: fault_schedules(n, **faults)))
    def body(sc):
        try:
            check_run(sc)
        except AssertionError:
            found.append(sc)
            raise

    try:
        body()
    except AssertionError:
        pass
    return found[0] if found else None        # the first failure (no shrinking: a budget)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_strategies_find_the_mutant_and_it_replays(name, tmp_path):
    sc = hunt(name)
    FOUND[name] = sc is not None
    assert sc is not None, f"{name}: {BUDGET} examples found nothing"
    from rdzv_sim.testing import to_yaml
    path = tmp_path / "replay.yaml"
    path.write_text(to_yaml(sc))
    with pytest.raises(AssertionError, match="invariant violation"):
        check_run(load(path))


def test_kill_rate(capsys):
    if len(FOUND) < len(MUTANTS):
        pytest.skip("run with the mutant tests")
    with capsys.disabled():
        print(f"\nmutants killed: {sum(FOUND.values())} of {len(MUTANTS)}")
    assert all(FOUND.values())
