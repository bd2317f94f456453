"""The burst-cut benchmark's reading of a perf trace (benchmarks/c10d_burst_cuts.py): the law
that the fair scheduler's constants come from is only as good as this parser."""
import sys
from pathlib import Path

import pytest

import c10d_burst_cuts as B  # noqa: E402


def switch(t, cpu, prev, state, nxt, next_comm="python"):
    return (f"{prev}/{prev} [{cpu:03d}] {t:.6f}: sched:sched_switch: prev_comm=python prev_pid={prev} "
            f"prev_prio=120 prev_state={state} ==> next_comm={next_comm} next_pid={nxt} next_prio=120")


def waking(t, cpu, pid):
    return f"0/0 [{cpu:03d}] {t:.6f}: sched:sched_waking: comm=python pid={pid} prio=120 target_cpu={cpu:03d}"


# node 100's store calls (call, start, end, pid): the sentinel, then three CASes, then one after
# a 1 s sleep. Its first burst (1.001-1.005) is cut by the tick at 1.004 after 3 ms of running
# and another client (101) runs; its second (1.0052-1.010) sees the 1.008 tick and goes on; the
# stretch before the last CAS holds a sleep (state S): a keep-alive's, not a burst.
LOG = [["compare_set", 0.5, 0.5001, 100], ["compare_set", 1.000, 1.001, 100],
       ["compare_set", 1.005, 1.0052, 100], ["compare_set", 1.010, 1.0102, 100],
       ["compare_set", 2.1, 2.1002, 100]]
SCRIPT = "\n".join([
    waking(1.00090, 0, 100), switch(1.00095, 0, 7, "S", 100),           # its reply wakes it
    switch(1.00400, 0, 100, "R", 101), switch(1.00450, 0, 101, "S", 100),  # cut at a tick
    switch(1.50000, 0, 100, "S", 0, "swapper/0"), switch(2.09, 0, 0, "R", 100),
])


def test_the_law_reads_cuts_ticks_and_waits_from_a_trace():
    law = B.law(SCRIPT, [LOG, [["compare_set", 0.5, 0.5001, 101]]])
    assert (law["retries"], law["cut"], law["cut_share"]) == (2, 1, 0.5)    # the sleep is no burst
    bins = {tuple(b["ran_ms"]): b for b in law["by_run_time"]}
    assert bins[(3.0, 3.5)]["ticks"] == 1 and bins[(3.0, 3.5)]["cut_at_tick"] == 1.0
    assert bins[(2.5, 3.0)]["ticks"] == 1 and bins[(2.5, 3.0)]["cut_at_tick"] == 0.0
    assert law["after_a_cut_ran"] == {"tick, another client": 1}
    woke = law["woken_waits_ms"]                                            # 0.05 ms, once
    assert woke["n"] == 1 and woke["under_0.5ms"] == 1.0
    assert law["cut_waits_ms"]["p50"] == pytest.approx(0.5)


def test_the_model_side_runs_on_a_storm_s_measured_cpu():
    run = {"n": 8, "compare_set_total": 16, "get": 8, "client_cpu_s": 0.3, "cold_cpu_s": 0.2}
    side = B.model_side(8, run)
    assert side["cas_total"] >= 8 and 0.0 <= side["cut_share"] <= 1.0
    assert side["woken_waits_ms"]["n"] > 0
