"""Cores time-sliced among processes as Linux's fair scheduler does (one-machine runs).

Processor sharing (`SharedCpu`) makes every runnable job progress at once, so clients that
start together collide in lockstep; a kernel runs one process at a time per core instead. The
model keeps: a queue per core with load balancing; the least-CPU process first; a burst of
computing kept on its core; a protected slice, after which the next tick cuts it if anything
waits, and wake-ups cut it between ticks at `preempt_rate`; a share `wakeup_preempt` of
wake-ups that take a core at once. Where each piece and its default come from, and how well
it follows torch's storm: docs/cpu-model.md.

One timer per core, rescheduled when what the core runs changes (a stale timer is recognised
by its generation). A process is named by its caller (a node): its jobs share one virtual
runtime. Random draws come from the generator passed in, so runs are reproducible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import simpy

# defaults for Linux 6.x with EEVDF, 2 CPUs, HZ = 250 (docs/cpu-model.md)
SLICE = 1.4e-3              # protected running time: 0.7 ms x (1 + log2 CPUs)
TICK = 4e-3                 # when the kernel checks whether a slice is used up (0: at once)
PREEMPT_RATE = 120.0        # per second past the slice: cuts by other tasks waking
WAKEUP_PREEMPT = 0.10       # the share of wake-ups that take a core at once


@dataclass(eq=False)
class _Task:
    v: float = 0.0                   # virtual runtime: CPU seconds had, as placed
    new: bool = True
    core: "_Core | None" = None      # where it last ran


@dataclass(eq=False)
class _Job:
    task: _Task
    left: float
    done: simpy.Event
    seq: int
    home: "_Core | None" = None      # the queue it waits in


@dataclass(eq=False)
class _Core:
    queue: list = field(default_factory=list)   # runnable jobs waiting for this core
    job: _Job | None = None
    start: float = 0.0
    gen: int = 0
    slice_end: float = 0.0           # when the running process is cut (if others wait)
    held: _Task | None = None        # just finished a job of this task: its next one runs here


class FairCpu:
    def __init__(self, env: simpy.Environment, cores: int, rng, slice: float = SLICE,
                 tick: float = TICK, preempt_rate: float = PREEMPT_RATE,
                 wakeup_preempt: float = WAKEUP_PREEMPT):
        self.env, self.rng = env, rng
        self.slice, self.tick, self.rate, self.preempt = slice, tick, preempt_rate, wakeup_preempt
        self.cores = [_Core() for _ in range(cores)]
        self.tasks: dict[str, _Task] = {}
        self.jobs: dict[simpy.Event, _Job] = {}
        self.min_v = 0.0
        self.seq = 0

    # --- what a process asks ------------------------------------------------------------
    def run(self, seconds: float, name: str = "") -> simpy.Event:
        """An event that fires once `seconds` of CPU have been given to this job."""
        task = self.tasks.get(name)
        if task is None:
            task = self.tasks[name] = _Task(core=self.cores[len(self.tasks) % len(self.cores)])
        self._update_min()
        woke = not task.new
        task.v = max(task.v, self.min_v) if woke else self.min_v
        task.new = False
        self.seq += 1
        job = _Job(task, seconds, self.env.event(), self.seq)
        self.jobs[job.done] = job
        core = next((c for c in self.cores if c.held is task), None)     # the same burst
        if core is not None:
            core.held = None
            if core.slice_end > self.env.now or not self._waiting():
                self._start(core, job, fresh=False)
                return job.done
            self._enqueue(core, job)                     # its slice was used up: it waits
            self._dispatch(core)
            return job.done
        core = next((c for c in self.cores if c.job is None and c.held is None), None)
        if core is None and woke and self.rng.random() < self.preempt:
            core = max((c for c in self.cores if c.job is not None), key=self._v_now, default=None)
            if core is not None:                                         # it gives way
                self._stop(core)
        if core is None:
            self._enqueue(task.core, job)
        else:
            core.held = None
            self._start(core, job)
        return job.done

    def cancel(self, ev: simpy.Event) -> None:
        """The job's process was killed: it leaves the CPU."""
        job = self.jobs.pop(ev, None)
        if job is None:
            return
        for core in self.cores:
            if core.job is job:
                self._stop(core, requeue=False)
                self._dispatch(core)
                return
        job.home.queue.remove(job)

    # --- the scheduler ------------------------------------------------------------------
    def _v_now(self, core: _Core) -> float:
        """The running process's virtual runtime, counting what it has run so far (busy cores)."""
        return core.job.task.v + (self.env.now - core.start)

    def _update_min(self) -> None:
        vs = [self._v_now(c) for c in self.cores if c.job is not None]
        vs += [j.task.v for c in self.cores for j in c.queue]
        if vs:
            self.min_v = max(self.min_v, min(vs))

    def _enqueue(self, core: _Core, job: _Job) -> None:
        job.home = core
        core.queue.append(job)

    def _waiting(self) -> bool:
        return any(c.queue for c in self.cores)

    def _start(self, core: _Core, job: _Job, fresh: bool = True) -> None:
        job.task.core = core
        core.job, core.start = job, self.env.now
        if fresh or core.slice_end <= self.env.now:
            core.slice_end = self._cut_time()
        core.gen += 1
        gen = core.gen
        self.env.timeout(min(job.left, core.slice_end - self.env.now)).callbacks.append(
            lambda _e: self._tick(core) if gen == core.gen else None)

    def _cut_time(self) -> float:
        """When a slice that starts now ends: at the first tick after it is used (with no
        tick, as it is used), or earlier, by a wake-up once it is used."""
        used = self.env.now + self.slice
        end = math.ceil(used / self.tick - 1e-9) * self.tick if self.tick else used
        if self.rate:
            end = min(end, used + self.rng.exponential(1.0 / self.rate))
        return end

    def _stop(self, core: _Core, requeue: bool = True) -> None:
        """Charge the running job for what it ran; put it back in its queue (preempted)."""
        job, ran = core.job, self.env.now - core.start
        job.left -= ran
        job.task.v += ran
        core.job = None
        core.gen += 1
        if requeue:
            self._enqueue(core, job)

    def _dispatch(self, core: _Core) -> None:
        """The least virtual runtime of this core's queue runs; an idle core takes work from
        the longest queue."""
        src = core.queue or max((c.queue for c in self.cores), key=len)
        if src:
            self._update_min()
            job = min(src, key=lambda j: (j.task.v, j.seq))
            src.remove(job)
            self._start(core, job)

    def _tick(self, core: _Core) -> None:
        job = core.job
        self._stop(core, requeue=False)
        if job.left > 1e-12:
            if self._waiting():
                self._enqueue(core, job)      # its slice is over: the least runtime runs
                self._dispatch(core)
            else:
                self._start(core, job)        # nobody waits: a new slice
            return
        del self.jobs[job.done]
        job.done.succeed()
        # the process computes on (decode, decide, encode are one burst on a real core): the
        # core waits for a job it asks for at this same instant, then serves its queue
        core.held = job.task
        self.env.timeout(0).callbacks.append(lambda _e: self._release(core, job.task))

    def _release(self, core: _Core, task: _Task) -> None:
        if core.held is task:
            core.held = None
            if core.job is None:
                self._dispatch(core)
