"""The rules of the cluster around a job, as pure functions over draws the caller makes:
the simulator's driver (`rdzv_sim.sim.cluster`) and the tests read them the same way."""
from __future__ import annotations

from enum import Enum
from typing import Sequence

from .settings import Diagnosis, Lifecycle, Retirement, Stage

DAY = 86400.0
# the crash causes the cluster makes (the tables count them by these)
HOST_FAILURE = "host_failure"          # a host's own failure
BAD_HOST = "bad_host"                  # a bad host's failure of its badness (systematic)
PULLED = "misdiagnosed"                # a healthy host pulled for repair, blamed for another's


class Repaired(str, Enum):
    """What one repair stage does with a host."""
    __str__ = str.__str__
    __format__ = str.__format__
    ESCALATED = "escalated"      # handed to the next stage
    FIXED = "fixed"              # repaired, and it worked
    FAULTY = "faulty"            # said repaired, and it was not (or the last stage could not)


class Diagnosed(str, Enum):
    """What diagnosis made of a failure."""
    __str__ = str.__str__
    __format__ = str.__format__
    RIGHT = "right"              # the failed host goes to repair
    MISSED = "missed"            # nobody is blamed: the failed host goes back to the pool
    WRONG = "wrong"              # a healthy member goes to repair; the failed host stays


def rate(cfg: Lifecycle, bad: bool) -> float:
    """A host's failures a second: the base rate, and a bad host's multiple on top of it."""
    base = cfg.failures.per_host_day / DAY
    return base * (1.0 + cfg.bad_hosts.multiplier) if bad else base


def peak_rate(cfg: Lifecycle) -> float:
    """The most a host fails (a bad one): the rate candidates are drawn at and thinned from."""
    return rate(cfg, True) if cfg.bad_hosts.fraction > 0 or cfg.bad_hosts.regenerate_every else rate(cfg, False)


def fails(cfg: Lifecycle, bad: bool, u: float) -> bool:
    """A candidate failure drawn at `peak_rate` is a failure of this host with probability
    rate / peak (thinning: what is kept is each host's own Poisson process)."""
    return u * peak_rate(cfg) < rate(cfg, bad)


def systematic(cfg: Lifecycle, bad: bool, u: float) -> bool:
    """Whether a bad host's failure is its badness (multiplier / (1 + multiplier) of them);
    a good host's never is."""
    m = cfg.bad_hosts.multiplier
    return bad and u * (1.0 + m) < m


def stage(st: Stage, last: bool, u_escalate: float, u_faulty: float) -> Repaired:
    """One stage's outcome: escalated with probability `escalate` (a last stage cannot hand
    on: the host comes back as it was), else repaired, wrongly with `leaves_faulty`."""
    if u_escalate < st.escalate:
        return Repaired.FAULTY if last else Repaired.ESCALATED
    return Repaired.FAULTY if u_faulty < st.leaves_faulty else Repaired.FIXED


def stage_time(st: Stage, u: float) -> float:
    """How long a stage takes: its duration, or an exponential draw of that mean (`u` in [0, 1))."""
    import math
    return st.duration if st.distribution == "fixed" else -st.duration * math.log1p(-u)


def bad_after(cfg: Lifecycle, bad: bool, outcome: Repaired) -> bool:
    """A host's health after its repair: a repair that worked makes it good; one that did not
    leaves it as it was, or bad (`repair.failed_repair`)."""
    if outcome is Repaired.FIXED:
        return False
    return True if cfg.repair.failed_repair == "bad" else bad


def score(r: Retirement, failures: int, credited_periods: int) -> float:
    """A host's score under `scored` retirement: its initial score, a penalty a failure, a
    credit for each whole period it trained without failing."""
    return r.initial - r.penalty * failures + r.credit * credited_periods


def periods(r: Retirement, trained: float) -> int:
    """Whole periods in one uninterrupted stretch of training (what it is credited)."""
    return int(trained // r.period)


def retire(r: Retirement, failure_times: Sequence[float], now: float, host_score: float) -> bool:
    """Whether a repaired host is retired for good."""
    if r.policy == "threshold":
        return sum(1 for t in failure_times if t >= now - r.window) >= r.failures
    if r.policy == "scored":
        return host_score <= r.floor
    return False


def diagnose(d: Diagnosis, u_found: float, u_wrong: float) -> Diagnosed:
    """Whether a failure is pinned on a host, and on the right one."""
    if u_found >= d.probability:
        return Diagnosed.MISSED
    return Diagnosed.WRONG if u_wrong < d.uncertainty else Diagnosed.RIGHT


def order(selection: str, hosts: Sequence[int], failures: Sequence[int], scores: Sequence[float],
          ties: Sequence[float]) -> list[int]:
    """The idle hosts in the order the scheduler chooses them: `random` by the draws `ties`;
    `fewest_failures` fewest first; `highest_score` best first (ties broken by the draws)."""
    if selection == "fewest_failures":
        key = lambda i: (failures[i], ties[i])          # noqa: E731
    elif selection == "highest_score":
        key = lambda i: (-scores[i], ties[i])           # noqa: E731
    else:
        key = lambda i: ties[i]                         # noqa: E731
    return [hosts[i] for i in sorted(range(len(hosts)), key=key)]


def to_select(up: int, nodes: int, spares: int) -> int:
    """Hosts a host selection asks for: none while the job's hosts up seat it; else enough for
    the job and its warm standbys (AIReSim: job size + standbys)."""
    return 0 if up >= nodes else nodes + spares - up


def regenerated(good: int, fraction: float) -> int:
    """Good hosts that turn bad at a regeneration: a tenth of the bad fraction of them, at
    least one (none when none is good)."""
    return 0 if good <= 0 else max(1, int(good * fraction * 0.1))


__all__ = ["BAD_HOST", "HOST_FAILURE", "PULLED", "Diagnosed", "Repaired", "bad_after", "diagnose", "fails", "order", "peak_rate", "periods", "rate",
           "regenerated", "retire", "score", "stage", "stage_time", "systematic", "to_select"]
