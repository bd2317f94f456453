"""Processor sharing of the cores one-machine runs share."""
import pytest
import simpy

from rdzv_sim.sim.cpu import SharedCpu


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
