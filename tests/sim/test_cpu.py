"""How one-machine runs share their cores: processor sharing and the fair scheduler."""
import numpy as np
import pytest
import simpy
from hypothesis import given, settings, strategies as st

from rdzv_sim.models.cpu import SharedCpu
from rdzv_sim.models.cpu import FairCpu


def finish_times(cores, jobs):
    """jobs: (start, cpu seconds) -> when each finishes."""
    env = simpy.Environment()
    cpu, out = SharedCpu(env, cores), {}

    def job(i, start, work):
        yield env.timeout(start)
        yield cpu.run(work)
        out[i] = env.now
    for i, (s, w) in enumerate(jobs):
        env.process(job(i, s, w))
    env.run()
    return [out[i] for i in range(len(jobs))]


def test_rates_change_when_jobs_come_and_go():
    assert finish_times(1, [(0, 1), (0, 1)]) == pytest.approx([2, 2])
    # alone for 0.5 s, then shared: 0.5 s left at half speed
    assert finish_times(1, [(0, 1), (0.5, 1)]) == pytest.approx([1.5, 2.0])
    assert finish_times(2, [(0, 1), (0, 1)]) == pytest.approx([1, 1])       # a core each
    assert finish_times(2, [(0, 1)] * 4) == pytest.approx([2] * 4)


def test_a_killed_job_leaves_the_cpu():
    env = simpy.Environment()
    cpu = SharedCpu(env, 1)
    a, b = cpu.run(1.0), cpu.run(1.0)
    env.run(until=0.5)
    cpu.cancel(b)                                   # 0.25 s done each; a alone from now
    env.run(until=a)
    assert env.now == pytest.approx(1.25)


# --- the fair scheduler: per-core queues, slices, bursts -----------------------------------
def fair_times(cores, jobs, preempt=0.0, rate=0.0):
    """jobs: (start, cpu seconds, process name) -> when each finishes, on a FairCpu (a 1.4 ms
    slice, 4 ms ticks; no random preemption unless asked)."""
    env = simpy.Environment()
    cpu, out = FairCpu(env, cores, np.random.default_rng(0), preempt_rate=rate,
                       wakeup_preempt=preempt), {}

    def job(i, start, work, name):
        yield env.timeout(start)
        yield cpu.run(work, name)
        out[i] = env.now
    for i, (s, w, name) in enumerate(jobs):
        env.process(job(i, s, w, name))
    env.run()
    return [out[i] for i in range(len(jobs))]


def test_short_jobs_run_one_after_another_not_side_by_side():
    # processor sharing finishes both at 2 ms; a core runs one burst, then the other
    assert fair_times(1, [(0, 1e-3, "a"), (0, 1e-3, "b")]) == pytest.approx([1e-3, 2e-3])
    assert finish_times(1, [(0, 1e-3), (0, 1e-3)]) == pytest.approx([2e-3, 2e-3])


def test_long_jobs_take_turns_a_slice_at_a_time():
    # a: 0-4, b: 4-8, a: 8-12, b: 12-16, a: 16-18, b: 18-20 (ms): each cut at a tick
    assert fair_times(1, [(0, 10e-3, "a"), (0, 10e-3, "b")]) == pytest.approx([18e-3, 20e-3])


def test_a_slice_is_cut_at_the_first_tick_after_it_is_used():
    # started at 2.5 ms, the 1.4 ms slice is used at 3.9: cut at the 4 ms tick, w runs 4-5;
    # started at 3 ms, it is used at 4.4: the 4 ms tick passes, cut at 8, w runs 8-9
    early = fair_times(1, [(2.5e-3, 10e-3, "hog"), (2.6e-3, 1e-3, "w")])
    late = fair_times(1, [(3e-3, 10e-3, "hog"), (3.1e-3, 1e-3, "w")])
    assert early[1] == pytest.approx(5e-3) and late[1] == pytest.approx(9e-3)
    alone = fair_times(1, [(3e-3, 10e-3, "hog")])              # nobody waits: never cut
    assert alone == pytest.approx([13e-3])


def test_past_its_slice_a_process_is_cut_by_wakeups_at_the_preempt_rate():
    jobs = [(0, 10e-3, "hog"), (0.1e-3, 1e-3, "w")]
    assert fair_times(1, jobs, rate=1e9)[1] == pytest.approx(2.4e-3, abs=1e-6)   # at 1.4 ms
    assert fair_times(1, jobs, rate=0.0)[1] == pytest.approx(5e-3)              # at the tick
    some = fair_times(1, jobs, rate=300.0)[1]
    assert 2.4e-3 < some < 5e-3 and some == fair_times(1, jobs, rate=300.0)[1]  # seeded


def test_a_burst_keeps_its_core_and_a_used_up_slice_gives_it_away():
    env = simpy.Environment()
    cpu, out = FairCpu(env, 1, np.random.default_rng(0), preempt_rate=0.0, wakeup_preempt=0.0), {}

    def burst(name, parts):
        for k, w in enumerate(parts):
            yield cpu.run(w, name)
            out[(name, k)] = env.now
    env.process(burst("a", [1e-3, 1e-3, 3e-3]))    # decode, encode: one burst; then over its slice
    env.process(burst("b", [1e-3]))
    env.run()
    assert out[("a", 0)] == pytest.approx(1e-3) and out[("a", 1)] == pytest.approx(2e-3)
    assert out[("b", 0)] == pytest.approx(5e-3)   # a's slice is cut at the 4 ms tick: b runs, then a
    assert out[("a", 2)] == pytest.approx(6e-3)


def test_an_idle_core_takes_work_from_the_other_queue():
    # three processes start on cores 0, 1, 0: the third waits on core 0 until core 1 is free
    assert fair_times(2, [(0, 3e-3, "a"), (0, 1e-3, "b"), (0, 1e-3, "c")]) == \
        pytest.approx([3e-3, 1e-3, 2e-3])


def test_a_waking_process_preempts_when_the_draw_says_so():
    jobs = [(0, 10e-3, "hog"), (1e-3, 1e-3, "w"), (2e-3, 1e-3, "w")]
    never, always = fair_times(1, jobs, preempt=0.0), fair_times(1, jobs, preempt=1.0)
    assert never[1] > 4e-3                         # waits for the hog's slice
    assert always[2] == pytest.approx(3e-3)        # w's second job woke it and ran at once
    assert fair_times(1, jobs, preempt=0.3) == fair_times(1, jobs, preempt=0.3)   # seeded


def test_a_killed_job_leaves_the_fair_cpu():
    env = simpy.Environment()
    cpu = FairCpu(env, 1, np.random.default_rng(0))
    a, b = cpu.run(10e-3, "a"), cpu.run(1e-3, "b")
    env.run(until=1e-3)
    cpu.cancel(a)                                  # a ran 1 ms; b runs now
    env.run(until=b)
    assert env.now == pytest.approx(2e-3)
    cpu.cancel(b)                                  # done already: nothing happens


# --- properties of the fair scheduler over random job sets ----------------------------------
_jobs = st.lists(st.tuples(st.floats(0, 0.02), st.floats(1e-5, 0.012), st.sampled_from("abcdef")),
                 min_size=1, max_size=25)


@settings(max_examples=80, deadline=None)
@given(jobs=_jobs, cores=st.integers(1, 3), preempt=st.sampled_from([0.0, 0.1, 1.0]),
       rate=st.sampled_from([0.0, 120.0, 1e4]))
def test_every_job_gets_its_cpu_and_no_core_idles_while_work_waits(jobs, cores, preempt, rate):
    env = simpy.Environment()
    cpu = FairCpu(env, cores, np.random.default_rng(1), preempt_rate=rate, wakeup_preempt=preempt)
    done, busy = {}, []

    def job(i, start, work, name):
        yield env.timeout(start)
        yield cpu.run(work, name)
        done[i] = env.now

    def watch():                       # sample: idle cores while jobs wait is a scheduler bug
        while True:
            yield env.timeout(1e-4)
            waiting = sum(len(c.queue) for c in cpu.cores)
            idle = sum(c.job is None and c.held is None for c in cpu.cores)
            busy.append((waiting, idle))
    for i, (s, w, name) in enumerate(jobs):
        env.process(job(i, s, w, name))
    env.process(watch())
    env.run(until=1.0)
    assert sorted(done) == list(range(len(jobs)))              # nothing lost, nothing twice
    for i, (s, w, _) in enumerate(jobs):
        assert done[i] >= s + w - 1e-9                           # no job gets more than a core
    assert not any(waiting and idle for waiting, idle in busy)
    if all(s == 0 for s, _, _ in jobs) and cores == 1:           # one core, all at once:
        assert max(done.values()) == pytest.approx(sum(w for _, w, _ in jobs))   # never idle
    assert not cpu.jobs and not any(c.queue or c.job for c in cpu.cores)
