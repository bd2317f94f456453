"""A rule-based state machine drives the simulator step by step: crash, restart, partition,
heal, advance time; the safety invariants hold after every step, and once the faults stop
the live nodes converge to one round within the settings' bound."""
import pandas as pd
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rdzv_sim.scenario.load import load
from rdzv_sim.sim.simulation import Simulation
from rdzv_sim.testing import check_safety, liveness_bound, replay_hint
from rdzv_sim.testing.liveness import converged
from rdzv_sim.trace import events_table, rounds_table

N = 5
BASE = {
    "name": "stateful-hrw", "seed": 0, "duration": 1e7,
    "cluster": {"nodes": N, "nproc_per_node": 2, "start_spread": 0.5},
    "store": {"host": None, "op_timeout": 10},
    "protocol": {"name": "hrw", "min_nodes": 2, "max_nodes": 4, "last_call_timeout": 2,
                 "join_timeout": 1e7, "confirm_timeout": 10},
    "agent": {"max_restarts": 10_000, "max_rendezvous_attempts": 10_000, "monitor_interval": 1,
              "collective_timeout": 20, "worker_start": 2},
    "shards": {"count": 64, "policies": ["hrw"]},
}


class ClusterMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.sc = load(BASE)
        self.sim = Simulation(self.sc)
        self.cuts: list[tuple[int, dict]] = []
        self.faults: list[dict] = []            # the steps, as a replayable fault schedule

    @property
    def now(self) -> float:
        return round(self.sim.env.now, 6)

    @rule(i=st.integers(0, N - 1))
    def crash(self, i):
        self.faults.append({"kind": "crash", "node": i, "at": self.now})
        self.sim.crash(self.sim.node_at(i), "crash")

    @rule(i=st.integers(0, N - 1))
    def restart(self, i):
        self.faults.append({"kind": "restart", "node": i, "at": self.now})
        self.sim.start(self.sim.node_at(i), "restart")

    @rule(nodes=st.lists(st.integers(0, N - 1), min_size=1, max_size=N - 1, unique=True))
    def partition(self, nodes):
        f = {"kind": "partition", "nodes": sorted(nodes), "at": self.now, "duration": 1e6}
        self.faults.append(f)
        self.cuts.append((self.sim.cut([self.sim.node_at(i).name for i in nodes], 1e6), f))

    @precondition(lambda self: self.cuts)
    @rule()
    def heal(self):
        group, f = self.cuts.pop()
        f["duration"] = max(self.now - f["at"], 1e-6)
        self.sim.heal(group)

    @rule(dt=st.sampled_from([0.05, 0.5, 3.0, 15.0, 60.0]))
    def advance(self, dt):
        self.sim.env.run(until=self.sim.env.now + dt)

    def tables(self):
        ev = events_table(self.sim.trace.rows, self.sc.name, 0)
        return {"events": ev, "rounds": rounds_table(ev)}

    def hint(self):
        return replay_hint(load(dict(BASE, faults=self.faults, duration=self.now + 1000)))

    @invariant()
    def safe(self):
        report = check_safety(self.tables(), self.sc)
        if report.unexpected:
            report.assert_ok(self.hint())

    def teardown(self):
        while self.cuts:
            self.heal()
        deadline = self.sim.env.now + liveness_bound(self.sc)
        self.sim.env.run(until=deadline + 1)
        report = converged(self.tables()["events"], deadline, self.sc.min_nodes, self.sc.max_nodes)
        if report.unexpected:
            report.assert_ok(self.hint())


# each example is 25 steps with a full safety check after every one: a sixth of the profile's
# examples keeps the CI suite within its budget (the thorough profile scales it up)
ClusterMachine.TestCase.settings = settings(max_examples=max(10, settings.default.max_examples // 6),
                                            stateful_step_count=25, deadline=None)
test_cluster_machine = ClusterMachine.TestCase
