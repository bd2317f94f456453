"""The cluster around a simulated job (`rdzv_sim.cluster`'s rules), driven on the job's clock
at either fidelity through the job's own interface (`start`, `crash`, `trains`).

Hosts are the working pool (the job's nodes and hot spares first: they start; the rest idle
until chosen) and the spare pool after it. Each host fails at its rate (a bad one's higher),
drawn as one Poisson stream at the peak rate over every host and thinned to each host's own
(a host that is down, or, on the training clock, not training, keeps none of its draws): a
failure costs a few draws, never a process a host. A failed host is diagnosed (or not, or the
wrong one is pulled), repaired stage by stage, retired or returned; a returned host starts as
a warm standby while the job has fewer than its nodes and hot spares up. When a failure leaves
the job fewer hosts up than its nodes, the scheduler chooses hosts for it (`selection`), from
the idle working pool and, past it, by preempting the spare pool's hosts one at a time."""
from __future__ import annotations

from enum import Enum

import numpy as np

from ..cluster import rules
from ..cluster.rules import BAD_HOST as SYSTEMATIC, HOST_FAILURE as FAILED, PULLED, Diagnosed, Repaired
from ..events import Event


class State(str, Enum):
    UP = "up"                  # started for the job (its agent runs, or it is being started)
    IDLE = "idle"              # in the working pool, not chosen
    SPARE = "spare"            # in the spare pool (other, preemptible work)
    REPAIR = "repair"          # in the repair pipeline
    RETIRED = "retired"


OWN = frozenset({"selected", "returned"})          # the starts the cluster makes itself


class Cluster:
    causes = frozenset({FAILED, SYSTEMATIC, PULLED})   # the crashes it makes

    def __init__(self, job, rng: np.random.Generator):
        self.job, self.cfg, self.rng = job, job.sc.lifecycle, rng
        sc, cfg = job.sc, self.cfg
        n = sc.hosts
        pool = n - cfg.spare_pool.hosts
        self.nodes, self.spares = sc.cluster.nodes, sc.spare_hosts
        self.state = [State.UP if i < sc.started_hosts else State.IDLE if i < pool else State.SPARE
                      for i in range(n)]
        self.index = {h: i for i, h in enumerate(job.hosts)}
        self.bad = np.zeros(n, dtype=bool)
        k = int(n * cfg.bad_hosts.fraction)               # AIReSim: int(servers x fraction)
        if k:
            self.bad[rng.choice(n, size=k, replace=False)] = True
        self.blamed = np.zeros(n, dtype=np.int64)         # failures pinned on each host
        self.credited = np.zeros(n, dtype=np.int64)       # scored retirement's whole periods
        self.up_since = np.zeros(n)
        self.fail_times: dict[int, list[float]] = {}
        self.up = sc.started_hosts                        # hosts in State.UP
        self.selecting = False
        self.pulling = False

    # --- on the clock ---------------------------------------------------------------------
    def start(self) -> None:
        self.job.env.process(self._failures())
        if self.cfg.bad_hosts.regenerate_every is not None:
            self.job.env.process(self._regenerate())

    def _failures(self):
        """Candidates at the peak rate over every host; each kept with its host's own share."""
        env, rng, job, cfg = self.job.env, self.rng, self.job, self.cfg
        n = len(self.state)
        gap = 1.0 / (rules.peak_rate(cfg) * n)
        training = cfg.failures.clock == "training"
        while True:
            yield env.timeout(float(rng.exponential(gap)))
            i = int(rng.integers(n))
            u = float(rng.random())
            if self.state[i] is not State.UP:
                continue
            node = job.nodes[job.hosts[i]]
            if not node.alive or (training and not job.trains(node)):
                continue
            bad = bool(self.bad[i])
            if not rules.fails(cfg, bad, u):
                continue
            cause = SYSTEMATIC if rules.systematic(cfg, bad, float(rng.random())) else FAILED
            job.crash(node, cause, cfg.failures.detection)

    def _regenerate(self):
        env, cfg = self.job.env, self.cfg
        while True:
            yield env.timeout(cfg.bad_hosts.regenerate_every)
            good = np.flatnonzero(~self.bad & np.array([s is not State.RETIRED for s in self.state]))
            k = min(len(good), rules.regenerated(len(good), cfg.bad_hosts.fraction))
            if k:
                self.bad[self.rng.choice(good, size=k, replace=False)] = True

    # --- what the scheduler tells it --------------------------------------------------------
    def may_start(self, node, why: str) -> bool:
        """Only a host the cluster holds for the job starts (a host in repair, idle, in the
        spare pool or retired does not, whoever asks: a fault's repair, a requeue)."""
        i = self.index[node.name]
        if why in OWN:
            return True
        return self.state[i] is State.UP

    def failed(self, node) -> None:
        """A host went down (any cause): diagnose, repair, and see the job seated."""
        i, job = self.index[node.name], self.job
        if self.state[i] is not State.UP:
            return
        self._down(i)
        if self.pulling:                                   # the wrong host, pulled by diagnosis
            self._blame(i)
            self._to_repair(i)
            return
        d = rules.diagnose(self.cfg.diagnosis, float(self.rng.random()), float(self.rng.random()))
        j = self._innocent(i) if d is Diagnosed.WRONG else None
        if d is Diagnosed.MISSED:
            self._record(node.name, Event.HOST_UNDIAGNOSED)
            self._later(0.0, lambda: self._returned(i))
        elif j is not None:
            self._record(job.hosts[j], Event.HOST_MISDIAGNOSED, {"failed": node.name})
            self._later(0.0, lambda: self._pull(j))        # once this crash is done with
            self._later(0.0, lambda: self._returned(i))
        else:
            self._blame(i)
            self._to_repair(i)
        self._later(0.0, self._seat)                       # after a host that goes straight back

    # --- the rules at work -----------------------------------------------------------------
    def _down(self, i: int) -> None:
        r = self.cfg.retirement
        self.credited[i] += rules.periods(r, self.job.env.now - self.up_since[i])
        self.state[i] = State.REPAIR
        self.up -= 1

    def _blame(self, i: int) -> None:
        self.blamed[i] += 1
        self.fail_times.setdefault(i, []).append(self.job.env.now)

    def _innocent(self, faulty: int) -> int | None:
        """A healthy member diagnosis may blame: a training host other than the faulty one,
        by draws (None: none found)."""
        job = self.job
        for _ in range(64):
            i = int(self.rng.integers(len(self.state)))
            node = job.nodes[job.hosts[i]]
            if i != faulty and self.state[i] is State.UP and node.alive and job.trains(node):
                return i
        return None

    def _pull(self, i: int) -> None:
        """The blamed healthy member goes down for repair (a failure of its world)."""
        node = self.job.nodes[self.job.hosts[i]]
        if self.state[i] is not State.UP or not node.alive:
            return
        self.pulling = True
        try:
            self.job.crash(node, PULLED, self.cfg.failures.detection)
        finally:
            self.pulling = False

    def _to_repair(self, i: int):
        self.job.env.process(self._repair(i))

    def _repair(self, i: int):
        env, rng, cfg = self.job.env, self.rng, self.cfg
        t0, stages = env.now, cfg.repair.stages
        outcome = Repaired.FAULTY
        for k, st in enumerate(stages):
            yield env.timeout(rules.stage_time(st, float(rng.random())))
            outcome = rules.stage(st, k == len(stages) - 1, float(rng.random()), float(rng.random()))
            if outcome is not Repaired.ESCALATED:
                break
        self.bad[i] = rules.bad_after(cfg, bool(self.bad[i]), outcome)
        name = self.job.hosts[i]
        self._record(name, Event.HOST_REPAIRED, {"stages": k + 1, "fixed": outcome is Repaired.FIXED,
                                                 "took": round(env.now - t0, 3)})
        r = cfg.retirement
        if rules.retire(r, self.fail_times.get(i, ()), env.now, self._score(i)):
            self.state[i] = State.RETIRED
            self._record(name, Event.HOST_RETIRED, {"failures": int(self.blamed[i])})
            self._seat()
            return
        self._returned(i)

    def _score(self, i: int) -> float:
        return rules.score(self.cfg.retirement, int(self.blamed[i]), int(self.credited[i]))

    def _returned(self, i: int) -> None:
        """A host back in the working pool: a warm standby if the job is short of its nodes
        and hot spares and no selection is choosing for it, else idle."""
        self.state[i] = State.IDLE
        if not self.selecting and self.up < self.nodes + self.spares:
            self._bring(i)

    def _bring(self, i: int) -> None:
        self.state[i] = State.UP
        self.up += 1
        self.up_since[i] = self.job.env.now
        self.job.start(self.job.nodes[self.job.hosts[i]], "returned" if not self.selecting else "selected")

    def _seat(self) -> None:
        """A host selection when the job has fewer hosts up than its nodes."""
        need = rules.to_select(self.up, self.nodes, self.spares)
        if need and not self.selecting and any(s in (State.IDLE, State.SPARE) for s in self.state):
            self.selecting = True
            self.job.env.process(self._select())

    def _select(self):
        env, cfg = self.job.env, self.cfg
        need = rules.to_select(self.up, self.nodes, self.spares)
        idle = [i for i, s in enumerate(self.state) if s is State.IDLE]
        preempted = 0
        spare = [i for i, s in enumerate(self.state) if s is State.SPARE]
        while len(idle) < need and spare:                   # AIReSim: one preemption at a time
            yield env.timeout(cfg.spare_pool.preemption)
            i = spare.pop(0)
            self.state[i] = State.IDLE
            idle.append(i)
            preempted += 1
            self._record(self.job.hosts[i], Event.HOST_PREEMPTED)
        yield env.timeout(cfg.selection_time)
        idle = [i for i, s in enumerate(self.state) if s is State.IDLE]    # (repairs came back meanwhile)
        need = rules.to_select(self.up, self.nodes, self.spares) or max(0, self.nodes + self.spares - self.up)
        ties = self.rng.random(len(idle)).tolist()
        chosen = rules.order(cfg.selection, idle, self.blamed[idle].tolist(),
                             [self._score(i) for i in idle], ties)[:need]
        self._record("job", Event.HOSTS_SELECTED, {"count": len(chosen), "preempted": preempted})
        for i in chosen:
            self._bring(i)
        self.selecting = False
        self._seat()

    # --- small helpers -----------------------------------------------------------------------
    def _later(self, delay: float, fn) -> None:
        self.job.env.timeout(delay).callbacks.append(lambda _e: fn())

    def _record(self, node: str, event: Event, detail: dict | None = None) -> None:
        self.job.trace.record(self.job.env.now, node, event, detail=detail)
