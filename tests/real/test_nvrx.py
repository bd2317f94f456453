"""NVRx's in-process restart, for real (real_backend/nvrx): processes on gloo under its
`inprocess.Wrapper`, one rank failing. The survivors restart inside their processes, without a
new launch, in the world the simulator's `in_process` gives them (tests wait for the ranks'
own records, not for a time)."""
import pytest

from real_backend.nvrx import available

pytestmark = [pytest.mark.real, pytest.mark.skipif(available() is not None, reason=str(available()))]


def test_a_rank_that_raises_restarts_with_everyone_in_process(tmp_path):
    from real_backend.nvrx.run import run_inprocess
    r = run_inprocess(tmp_path, "raise", 3, fail_step=5, steps=10, pg_timeout=3.0)
    assert r.ok, r.error
    assert r.world_after == 3 and r.survivors == [0, 1, 2]        # the failed rank is kept
    assert r.aborted is not None and r.aborted <= r.reentered <= r.trained


def test_a_killed_rank_is_dropped_and_the_others_shift_down(tmp_path):
    from real_backend.nvrx.run import run_inprocess
    r = run_inprocess(tmp_path, "kill", 3, fail_step=5, steps=10, pg_timeout=3.0)
    assert r.ok, r.error
    assert r.world_after == 2 and r.survivors == [0, 1]


def test_the_simulator_gives_the_same_worlds(tmp_path):
    """The near miss of the real runs above: the simulated in_process, at the same faults,
    keeps a rank whose workers raised and drops a killed one."""
    from real_backend.nvrx.validate import simulated
    assert simulated("raise")["world_after"] == 4
    assert simulated("kill")["world_after"] == 3
