"""One world for both runtimes (`rdzv_sim/scenario/world.py`): each runtime does every fault
action or refuses it by name, and a scenario that needs a refused one is refused before
anything runs."""
import pytest

from rdzv_sim.scenario import load
from rdzv_sim.scenario.faults import Act, Action
from rdzv_sim.scenario.world import ActionRefused, World
from rdzv_sim.sim.world import SimWorld
from real_backend.world import RealWorld


def scenario(*faults):
    return load({"name": "w", "duration": 60, "seed": 1, "cluster": {"nodes": 3},
                 "protocol": {"name": "hrw", "min_nodes": 2, "max_nodes": 3}, "faults": list(faults)})


class _Run:                                  # what a world wraps; no action is done here
    sc = None


@pytest.mark.parametrize("world", [lambda: SimWorld(None), lambda: RealWorld(_Run())])
def test_every_runtime_does_or_refuses_every_action_once(world):
    w = world()
    assert set(w.table()) | set(w.cannot) == set(Act)
    assert not set(w.table()) & set(w.cannot)


def test_a_world_that_forgets_an_action_is_refused_when_made():
    class Forgetful(SimWorld):
        def table(self):
            return {k: v for k, v in super().table().items() if k is not Act.CLOCK_SKEW}
    with pytest.raises(TypeError, match="neither.*clock_skew"):
        Forgetful(None)

    class Twice(RealWorld):                  # near miss the other way: done and refused
        def table(self):
            return {**super().table(), Act.CLOCK_SKEW: self.crash}
    with pytest.raises(TypeError, match="both.*clock_skew"):
        Twice(_Run())


def test_a_fault_a_runtime_cannot_do_is_refused_by_its_name():
    sc = scenario({"kind": "straggler", "node": 1, "at": 5, "duration": 5, "slowdown": 2})
    with pytest.raises(ActionRefused, match="real launcher does not do straggler: the launcher's workers"):
        RealWorld.refuse(sc)
    SimWorld.refuse(sc)                                         # the simulator does it
    RealWorld.refuse(scenario({"kind": "crash", "node": 1, "at": 5}))      # near miss: it does a crash


def test_an_action_is_one_of_the_acts():
    assert Action(0.0, 0.0, "cut", 0).kind is Act.CUT and f"{Act.CUT}" == "cut"
    with pytest.raises(ValueError):
        Action(0.0, 0.0, "cutt", 0)


def test_the_base_world_has_no_table_of_its_own():
    with pytest.raises(NotImplementedError):
        World()
