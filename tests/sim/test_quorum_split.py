"""How one second of a quorum job's training is split (`training_split`): a group still healing
under the async quorum is in the collectives and contributes nothing."""
import pytest

from rdzv_sim.scenario.schema import Training
from rdzv_sim.training.quorum import training_split

LINEAR = Training(checkpoint_cost=0.0)


def test_a_healing_group_contributes_nothing_and_its_share_is_heal():
    s = training_split(working=2, healing=1, size=4, full=16, tr=LINEAR, qf=0.9)
    assert s.useful == pytest.approx(8 / 16 * 0.9)          # the two working groups' steps
    assert s.quorum == pytest.approx(8 / 16 * 0.1)
    assert s.heal == pytest.approx(4 / 16)
    assert s.smaller == pytest.approx(4 / 16)               # the fourth group, outside
    assert sum(s) == pytest.approx(1)


def test_the_same_group_healed_works():
    """The near miss: the healing group done, one step on, it is a working group."""
    s = training_split(working=3, healing=0, size=4, full=16, tr=LINEAR, qf=0.9)
    assert s.useful == pytest.approx(12 / 16 * 0.9) and s.heal == 0
    assert s.smaller == pytest.approx(4 / 16)


def test_the_split_follows_the_jobs_scaling():
    tr = Training(checkpoint_cost=0.0, scaling={8: 1.0, 16: 1.5})
    s = training_split(working=2, healing=2, size=4, full=16, tr=tr, qf=1.0)
    assert s.useful == pytest.approx(1.0 / 1.5)             # 8 hosts of 16, sublinear
    assert s.heal == pytest.approx(0.5) and sum(s) == pytest.approx(1)
