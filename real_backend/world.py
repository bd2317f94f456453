"""The real launcher's world: each fault action done to real processes, the store's process
and the fault proxy (`rdzv_sim.scenario.world`); what it cannot do is refused by the fault's
name before anything runs."""
from __future__ import annotations

import signal

from rdzv_sim.events import Event
from rdzv_sim.scenario.faults import Act
from rdzv_sim.scenario.world import World

LIGHTHOUSE = ("torchft's Lighthouse runs for real under the torchft runner (`rdzv-sim validate` of a "
              "quorum scenario, real_backend/torchft_run.py), not under this launcher")
STRAGGLER = ("the launcher's workers run no training steps to slow down (the training model "
             "charges a straggler in simulation)")


class RealWorld(World):
    runtime = "real launcher"
    cannot = {Act.CLOCK_SKEW: "torch's c10d reads the host clock, which cannot be skewed here, and "
                              "hrw/static never read it",
              Act.AGENT_FAILURE: "the launcher's agents have no second way out; torchrun's real agents "
                                 "leave by an error in benchmarks/sigterm.py (reports/sigterm.md)",
              Act.STRAGGLE: STRAGGLER, Act.UNSTRAGGLE: STRAGGLER,
              Act.LIGHTHOUSE_DOWN: LIGHTHOUSE, Act.LIGHTHOUSE_UP: LIGHTHOUSE}

    def __init__(self, run):
        self.run = run
        super().__init__()

    def table(self):
        return {Act.CRASH: self.crash, Act.RESTART: self.restart, Act.START: self.start,
                Act.WORKER_FAILURE: self.worker_failure, Act.PAUSE: self.pause, Act.RESUME: self.resume,
                Act.CUT: self.cut, Act.HEAL: self.heal, Act.SLOW: self.slow, Act.UNSLOW: self.unslow,
                Act.LOSE: self.lose, Act.UNLOSE: self.unlose, Act.STORE_CRASH: self.store_crash,
                Act.STORE_PAUSE: self.store_pause, Act.STORE_RESUME: self.store_resume,
                Act.RACK_CRASH: self.rack_crash, Act.RACK_RESTART: self.rack_restart,
                Act.TERMINATE: self.terminate, Act.RECLAIM: self.reclaim}

    # --- hosts and agents ------------------------------------------------------------
    def crash(self, a, state):
        self.run.crash(a.node)

    def restart(self, a, state):
        self.run.start_node(a.node, "restart")

    def start(self, a, state):
        self.run.start_node(a.node, "slow_join")

    def worker_failure(self, a, state):
        self.run.fail_workers(a.node)

    def pause(self, a, state):
        self.run.signal_node(a.node, signal.SIGSTOP, Event.FAULT_PAUSE, {"duration": a.value})

    def resume(self, a, state):
        self.run.signal_node(a.node, signal.SIGCONT, Event.NODE_RESUMED)

    def terminate(self, a, state):
        self.run.signal_node(a.node, signal.SIGTERM, Event.FAULT_PREEMPTION,
                      {"notice": self.run.sc.faults[a.fault].notice})

    def reclaim(self, a, state):             # the host goes away, whether its agent left or not
        run = self.run
        p = run.procs.get(run.name(a.node))
        if p is not None and p.is_alive():
            run.crash(a.node, "preempted")
        else:
            run.record(run.name(a.node), Event.FAULT_CRASH, {"cause": "preempted"})

    def rack_crash(self, a, state):
        for i in self.run.rack(a.rack):
            self.run.crash(i, "rack_failure")

    def rack_restart(self, a, state):
        for i in self.run.rack(a.rack):
            self.run.start_node(i, "restart")

    # --- the network (the fault proxy) -----------------------------------------------
    def cut(self, a, state):
        self.run.partition(self.run.targets(a), a.value)

    def heal(self, a, state):
        self.run.heal(self.run.targets(a))

    def slow(self, a, state):
        self.run.slow(self.run.targets(a), a.value, self.run.sc.faults[a.fault].duration)

    def unslow(self, a, state):
        self.run.slow(self.run.targets(a), 0.0)

    def lose(self, a, state):
        run, f = self.run, self.run.sc.faults[a.fault]
        nodes = run.targets(a)
        for i in nodes:
            run.proxy.set_loss(run.name(i), f.rate, f.rto)
        run.record("network", Event.FAULT_LOSS, {"hosts": sorted(run.name(i) for i in nodes),
                                                 "rate": f.rate, "rto": f.rto, "duration": f.duration})

    def unlose(self, a, state):
        run, f = self.run, self.run.sc.faults[a.fault]
        nodes = run.targets(a)
        for i in nodes:
            run.proxy.set_loss(run.name(i), 0.0, f.rto)
        held = {run.name(i): run.proxy.held(run.name(i)) for i in nodes}   # the proxy's own record
        run.record("network", Event.LOSS_HEALED, {"hosts": len(nodes), "held": held})

    # --- the store -------------------------------------------------------------------
    def store_crash(self, a, state):
        self.run.crash_store("store_crash")

    def store_pause(self, a, state):
        self.run.signal_store(signal.SIGSTOP, Event.FAULT_STORE_PAUSE, {"duration": a.value})

    def store_resume(self, a, state):
        self.run.signal_store(signal.SIGCONT, Event.STORE_RESUMED)
