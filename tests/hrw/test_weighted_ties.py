"""hrw spec v1, weighted order: higher `w / neglog2`, then higher raw score, then canonical node
order. Two scores that differ only below the interpolation's bits have the same neglog2, so
with equal weights their primaries tie exactly and the raw score decides."""
import numpy as np
import pytest

from hrw import kernels, spec

U = np.uint64
A = (1 << 63) + 5            # these two differ in bits the table never reads:
B = (1 << 63) + 9            # the same neglog2, the same primary at equal weights
HIGH = (1 << 63) + (1 << 62)  # a clearly higher raw score


def test_the_two_scores_tie_on_primary():
    assert spec.neglog2_fixed(A) == spec.neglog2_fixed(B)
    assert spec.weighted_score(A, 1.0) == spec.weighted_score(B, 1.0)


@pytest.mark.parametrize("row, winner", [([A, B], 1), ([B, A], 0)])
def test_a_primary_tie_goes_to_the_higher_raw_score(row, winner):
    s = np.array([row], dtype=U)
    w = np.array([1.0, 1.0])
    assert kernels.best(s, w)[0] == winner
    assert kernels.ranked(s, w, 2, False)[0].tolist() == [winner, 1 - winner]


def test_not_the_first_column_nor_the_lower_score():
    """The near miss of the tie-break: by column (0) or by the lower score it would be 0."""
    s = np.array([[A, B]], dtype=U)
    assert kernels.best(s, np.array([2.0, 2.0]))[0] == 1


def test_the_primary_comes_before_the_raw_score():
    """A higher raw score with a tenth of the weight loses to the tied pair."""
    s = np.array([[A, B, HIGH]], dtype=U)
    w = np.array([1.0, 1.0, 0.1])
    assert spec.weighted_score(HIGH, 0.1) < spec.weighted_score(A, 1.0) < spec.weighted_score(HIGH, 1.0)
    assert kernels.best(s, w)[0] == 1
    assert kernels.ranked(s, w, 3, False)[0].tolist() == [1, 0, 2]


def test_equal_scores_and_weights_go_to_canonical_order():
    """Both tie-breaks equal (a 64-bit collision): the column first in canonical order."""
    s = np.array([[A, A, B]], dtype=U)
    assert kernels.ranked(s, np.array([1.0, 1.0, 0.5]), 3, True)[0].tolist() == [0, 1, 2]
