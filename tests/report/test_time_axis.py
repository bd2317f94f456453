"""Figures' time axes speak the run's unit (s, min, h, days), as the report's sentences do,
and a long run's lost time is drawn by cause, not by an interruption's index."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from rdzv_sim.report.figures import PER_INTERRUPTION, interruptions, time_axis  # noqa: E402


@pytest.mark.parametrize("duration, unit, top", [(60, "s", 60), (3600, "min", 60),
                                                 (86400, "h", 24), (90 * 86400, "days", 90)])
def test_the_axis_is_in_the_unit_that_fits(duration, unit, top):
    fig, ax = plt.subplots()
    ax.set_xlim(0, duration)
    assert time_axis(ax, duration) == unit and ax.get_xlabel() == f"time ({unit})"
    fig.canvas.draw()
    labels = [t.get_text() for t, x in zip(ax.get_xticklabels(), ax.get_xticks()) if 0 <= x <= duration]
    assert labels[0] == "0" and all("e" not in x for x in labels), labels         # no 1e6 seconds
    assert 0.75 * top <= max(float(x) for x in labels) <= top, labels
    plt.close(fig)


def test_the_units_change_at_their_bounds():
    """Near misses: 119 s stays in seconds, 120 s is minutes; two days less a second are hours."""
    fig, ax = plt.subplots()
    assert time_axis(ax, 119) == "s" and time_axis(ax, 120) == "min"
    assert time_axis(ax, 2 * 86400 - 1) == "h" and time_axis(ax, 2 * 86400) == "days"
    plt.close(fig)


def table(n):
    return pd.DataFrame({"t": [100.0 * i for i in range(n)], "cause": ["a", "b"] * (n // 2),
                         "detection_s": 1.0, "rendezvous_s": 2.0, "worker_start_s": 0.0,
                         "checkpoint_load_s": 0.0, "recompute_s": 3.0, "running_smaller_s": 0.0})


def test_lost_time_is_by_interruption_when_few_and_by_cause_when_many():
    assert interruptions(table(4))[:4] == b"\x89PNG"
    assert interruptions(table(2 * PER_INTERRUPTION + 2))[:4] == b"\x89PNG"     # 62 interruptions, 2 bars
