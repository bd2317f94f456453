"""The simulator's world: each fault action done to the simulated nodes, network and store
(`rdzv_sim.scenario.world`)."""
from __future__ import annotations

from dataclasses import replace

from ..events import Event
from ..reasons import Reason
from ..scenario.faults import Act
from ..scenario.world import World


class SimWorld(World):
    runtime = "simulator"
    cannot: dict = {}                        # it does every action

    def __init__(self, sim):
        self.sim = sim
        super().__init__()

    def table(self):
        return {Act.CRASH: self.crash, Act.RESTART: self.restart, Act.START: self.start,
                Act.WORKER_FAILURE: self.worker_failure, Act.AGENT_FAILURE: self.agent_failure,
                Act.PAUSE: self.pause, Act.RESUME: self.resume, Act.CUT: self.cut, Act.HEAL: self.heal,
                Act.SLOW: self.slow, Act.UNSLOW: self.unslow, Act.LOSE: self.lose, Act.UNLOSE: self.unlose,
                Act.STORE_CRASH: self.store_crash, Act.STORE_PAUSE: self.store_pause,
                Act.STORE_RESUME: self.store_resume, Act.LIGHTHOUSE_DOWN: self.lighthouse_down,
                Act.LIGHTHOUSE_UP: self.lighthouse_up, Act.RACK_CRASH: self.rack_crash,
                Act.RACK_RESTART: self.rack_restart, Act.TERMINATE: self.terminate,
                Act.RECLAIM: self.reclaim, Act.STRAGGLE: self.straggle, Act.UNSTRAGGLE: self.unstraggle,
                Act.CLOCK_SKEW: self.clock_skew}

    def _record(self, node, event, rnd=None, detail=None):
        self.sim.trace.record(self.sim.env.now, node, event, rnd, detail=detail)

    def _hosts(self, a) -> list[str]:
        """The hosts a partition or latency fault names: its `nodes`, or its `rack`'s."""
        if a.nodes is not None:
            return [self.sim.node_at(i).name for i in a.nodes]
        return self.sim.net.hosts_in_rack(f"rack{a.rack}")

    # --- hosts and agents ------------------------------------------------------------
    def crash(self, a, state):
        unusable = bool(a.value)
        self.sim.crash(self.sim.node_at(a.node), "device_unusable" if unusable else "crash", unusable=unusable)

    def restart(self, a, state, why="restart"):
        node = self.sim.node_at(a.node)
        if a.value:                          # back under its name, at another address
            node.info = replace(node.info, addr=f"{node.name}.{node.incarnation + 1}")
        self.sim.start(node, why)

    def start(self, a, state):
        self.restart(a, state, "slow_join")

    def worker_failure(self, a, state):
        node = self.sim.node_at(a.node)
        self._record(node.name, Event.FAULT_WORKER_FAILURE)
        self.sim.fail_workers(node)

    def agent_failure(self, a, state):
        node = self.sim.node_at(a.node)
        self._record(node.name, Event.FAULT_AGENT_FAILURE, node.running_round)
        if node.alive and node.running_round is not None:
            node.signal(Reason.AGENT_FAILED)     # the agent stops its workers, shuts down, exits
        elif node.alive:
            self.sim.stop(node)             # not in a round: it exits at once

    def pause(self, a, state):
        self.sim.pause(self.sim.node_at(a.node), a.value)

    def resume(self, a, state):
        self.sim.resume(self.sim.node_at(a.node))

    def terminate(self, a, state):
        node = self.sim.node_at(a.node)
        self._record(node.name, Event.FAULT_PREEMPTION, detail={"notice": self.sim.sc.faults[a.fault].notice})
        if node.alive and node.running_round is not None:
            node.signal(Reason.TERMINATED)        # the agent stops its workers, leaves, exits
        else:
            self.sim.stop(node)              # not in a round: SIGTERM ends the agent at once

    def reclaim(self, a, state):             # the host goes, whether its agent left or not
        node = self.sim.node_at(a.node)
        if node.alive:
            self.sim.crash(node, "preempted")
        else:
            self._record(node.name, Event.FAULT_CRASH, detail={"cause": "preempted"})

    def straggle(self, a, state):
        node = self.sim.node_at(a.node)
        node.slowdown = a.value
        self._record(node.name, Event.FAULT_STRAGGLER,
                     detail={"slowdown": a.value, "duration": self.sim.sc.faults[a.fault].duration})
        self.sim.scheduler.straggling(node)

    def unstraggle(self, a, state):
        node = self.sim.node_at(a.node)
        node.slowdown = 1.0
        self._record(node.name, Event.STRAGGLER_HEALED)

    def clock_skew(self, a, state):
        node = self.sim.node_at(a.node)
        node.clock_skew += a.value
        self.sim.runtime.least_skew = min(self.sim.runtime.least_skew, node.clock_skew)
        self._record(node.name, Event.FAULT_CLOCK_SKEW, detail={"offset": a.value})

    def rack_crash(self, a, state):
        hosts = state["hosts"] = self.sim.net.hosts_in_rack(f"rack{a.rack}")
        self._record(f"rack{a.rack}", Event.FAULT_RACK_FAILURE, detail={"hosts": len(hosts)})
        for h in hosts:
            self.sim.crash(self.sim.nodes[h], "rack_failure")

    def rack_restart(self, a, state):
        for h in state["hosts"]:
            self.sim.start(self.sim.nodes[h], "restart")

    # --- the network -----------------------------------------------------------------
    def cut(self, a, state):
        state["group"] = self.sim.cut(self._hosts(a), a.value)

    def heal(self, a, state):
        self.sim.heal(state["group"])

    def slow(self, a, state):
        hosts = state["hosts"] = self._hosts(a)
        self._record("network", Event.FAULT_LATENCY, detail={
            "hosts": sorted(hosts), "delay": a.value, "duration": self.sim.sc.faults[a.fault].duration})
        for h in hosts:
            self.sim.net.slow(h, a.value)

    def unslow(self, a, state):
        for h in state["hosts"]:
            self.sim.net.slow(h, -a.value)
        self._record("network", Event.LATENCY_HEALED, detail={"hosts": len(state["hosts"])})

    def lose(self, a, state):
        hosts = state["hosts"] = self._hosts(a)
        f = self.sim.sc.faults[a.fault]
        self._record("network", Event.FAULT_LOSS,
                     detail={"hosts": sorted(hosts), "rate": f.rate, "rto": f.rto, "duration": f.duration})
        for h in hosts:
            self.sim.net.set_loss(h, f.rate, f.rto)

    def unlose(self, a, state):
        net = self.sim.net
        for h in state["hosts"]:
            net.set_loss(h, 0.0)
        held = {h: net.held.pop(h, 0) for h in sorted(state["hosts"])}
        self._record("network", Event.LOSS_HEALED, detail={"hosts": len(state["hosts"]), "held": held})

    # --- the store and the Lighthouse ------------------------------------------------
    def store_crash(self, a, state):
        self.sim.crash_store("store_crash")

    def store_pause(self, a, state):
        self._record("store", Event.FAULT_STORE_PAUSE, detail={"duration": a.value})
        self.sim.store.sigstop()

    def store_resume(self, a, state):
        self.sim.store.sigcont()
        self._record("store", Event.STORE_RESUMED)

    def lighthouse_down(self, a, state):     # the replay of the quorum protocol reads these
        self._record("lighthouse", Event.FAULT_LIGHTHOUSE_CRASH, detail={"duration": a.value})

    def lighthouse_up(self, a, state):
        self._record("lighthouse", Event.LIGHTHOUSE_RESTARTED)
