"""Run a scenario for real: one OS process per node on its own loopback address (127.0.0.2,
127.0.0.3, ...), a TCPStore server in a process of its own, and the scenario's faults done
to those processes (crash = SIGKILL, pause = SIGSTOP/SIGCONT, restart, slow join, store crash,
store pause, worker failure, rack failure = every node of the rack). A partition goes through
the TCP fault proxy (`proxy.py`): the cut nodes' store traffic is held, and SIGUSR2 freezes
their collectives for as long (their peers' all-reduce times out, as across a real cut).
The result has the simulator's tables, so every report and check works on it.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import tempfile
import time
from pathlib import Path

from rdzv_sim.result import RunResult, build
from rdzv_sim.scenario.load import load
from rdzv_sim.trace import RunStats

from rdzv_sim.protocols.registry import get, plugin_modules
from rdzv_sim.scenario.faults import met_at
from rdzv_sim.scenario.timeline import late_starts, timeline

from . import node as node_mod
from .ports import free_port
from .process_tree import signal_now
from .proxy import FaultProxy
from .runtime import missing_ops
from .standby import Standby
from .world import RealWorld
from rdzv_sim.events import Event


class RealRun:
    def __init__(self, scenario, workdir: str | Path | None = None, host: str = "127.0.0.1",
                 store_port: int | None = None, torch_static: bool = False):
        self.sc = load(scenario)
        if torch_static and get(self.sc.protocol.name).caps.torch_baseline is None:
            raise ValueError("torch_static is the baseline of protocol 'static'; this scenario "
                             f"runs {self.sc.protocol.name!r}")
        # torch's StaticTCPRendezvous: its store listens on node 0's address, on this port
        self.static_port = free_port("127.0.0.2") if torch_static else None
        refuse(self.sc)
        RealWorld.refuse(self.sc)
        if self.sc.random_faults:
            raise ValueError("the real launcher does not do random faults: list them under faults:")
        if self.sc.store.kind == "replicated":
            replicated_problem(self.sc)
        self.world = RealWorld(self)
        self.host = host
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="rdzv-real-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ctx = mp.get_context("spawn")
        self.procs: dict[str, mp.Process] = {}
        self.standby = Standby(self.ctx, node_mod.main)   # nodes' processes, loaded before they start
        self.rows: list[tuple] = []
        self.store_proc = None
        self.port = store_port            # given: use that store (shared by several runs)
        self.proxy = None                 # the fault proxy, when a fault needs it
        self.etcd = None                  # the etcd cluster of a replicated store
        self.stopped_member = None        # the member a store_pause stopped
        self.until = None                 # an anchor that ends the run early (run_real's until)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def record(self, node, event, detail=None):
        self.rows.append((self.now(), node, event, None, None, None,
                          json.dumps(detail, sort_keys=True, separators=(",", ":")) if detail else ""))

    # --- processes ---------------------------------------------------------------------
    def start_store(self):
        parent, child = self.ctx.Pipe()
        self.store_proc = self.ctx.Process(target=node_mod.store_main, args=(child, self.host), daemon=True)
        self.store_proc.start()
        if not parent.poll(60):
            raise RuntimeError("the store server did not start within 60 s")
        self.port = parent.recv()

    def name(self, i: int) -> str:
        """The simulator's host names (zero-padded past 10 nodes): HRW ranks follow names."""
        return f"node{i:0{len(str(self.sc.cluster.nodes - 1))}d}"

    def spec(self, i: int) -> dict:
        name = self.name(i)
        spec = {"scenario": self.sc.model_dump(mode="json"), "name": name, "index": i,
                "addr": f"127.0.0.{i + 2}", "host": self.host,
                "port": self.proxy.add(name) if self.proxy else self.port,
                "seed": self.sc.seed * 1000 + i, "events_path": str(self.dir / f"{name}.jsonl"),
                "static_addr": "127.0.0.2", "static_port": self.static_port,
                "plugins": plugin_modules()}
        if self.etcd is not None:          # clients spread over the members, as deployments do
            eps = self.etcd.endpoints
            spec["etcd"] = eps[i % len(eps):] + eps[:i % len(eps)]
        return spec

    def warm(self, i: int) -> None:
        """Load node i's next process now, to start when the scenario says (standby.py)."""
        self.standby.warm(self.name(i), self.spec(i))

    def start_node(self, i: int, why: str):
        name = self.name(i)
        p = self.procs.get(name)
        if p is not None and p.is_alive():
            return
        self.warm(i)
        self.standby.ready(name)
        if self.etcd is not None:
            self.member_back(i)
        self.record(name, Event.NODE_START, {"why": why})
        self.procs[name] = self.standby.release(name, self.t0)

    def crash(self, i: int, cause: str = "crash"):
        name = self.name(i)
        p = self.procs.get(name)
        if p is None or not p.is_alive():
            return
        os.kill(p.pid, signal.SIGKILL)
        p.join(5)
        self.record(name, Event.FAULT_CRASH, {"cause": cause})
        self.warm(i)                       # its next life loads while it is down
        if self.etcd is not None:
            self.member_lost(i)
        elif self.sc.store.host == i:
            self.crash_store("store_host_crash")

    # --- a replicated store's members (on the nodes of store.hosts, if given) --------------
    def member_of(self, i: int) -> int | None:
        hosts = self.sc.store.hosts
        return hosts.index(i) if hosts is not None and i in hosts else None

    def member_lost(self, i: int) -> None:
        m = self.member_of(i)
        if m is not None and self.etcd.alive(self.etcd.names[m]):
            leader = self.etcd.leader(2.0, none_ok=True) == self.etcd.names[m]
            self.etcd.kill(self.etcd.names[m])
            self.record("store", Event.STORE_MEMBER_LOST, {"member": m, "leader": leader})

    def member_back(self, i: int) -> None:
        m = self.member_of(i)
        if m is not None and not self.etcd.alive(self.etcd.names[m]):
            self.etcd.restart(self.etcd.names[m])
            self.record("store", Event.STORE_MEMBER_BACK, {"member": m})

    def crash_store(self, cause: str):
        if self.etcd is not None:             # a store_crash: the leader's member dies
            leader = self.etcd.leader(none_ok=True) or self.etcd.names[0]
            if not self.etcd.alive(leader):
                return
            self.etcd.kill(leader)
            self.record("store", Event.FAULT_STORE_CRASH, {"member": self.etcd.names.index(leader), "leader": True})
            return
        if self.store_proc is not None and self.store_proc.is_alive():
            os.kill(self.store_proc.pid, signal.SIGKILL)
            self.store_proc.join(5)
            self.record("store", Event.FAULT_STORE_CRASH, {"cause": cause})

    def rack(self, r: int) -> list[int]:
        """The nodes of rack r, as the simulator's topology places them."""
        topo, n = self.sc.cluster.topology, self.sc.cluster.nodes
        racks = topo.racks if topo.kind == "racks" else 1
        return [i for i in range(n) if i * racks // n == r]

    def targets(self, fault) -> list[int]:
        """The nodes a partition or latency fault names: its `nodes`, or its `rack`'s."""
        return fault.nodes if fault.nodes is not None else self.rack(fault.rack)

    def partition(self, nodes: list[int], duration: float):
        for i in nodes:
            self.proxy.cut(self.name(i))
            self.signal_node(i, signal.SIGUSR2, Event.FAULT_PARTITION_NODE)
        self.record("network", Event.FAULT_PARTITION, {"hosts": [self.name(i) for i in nodes],
                                                   "duration": duration})

    def heal(self, nodes: list[int]):
        for i in nodes:
            self.proxy.heal(self.name(i))
            self.signal_node(i, signal.SIGUSR2, Event.PARTITION_NODE_HEALED)
        self.record("network", Event.PARTITION_HEALED, {"hosts": len(nodes)})

    def slow(self, nodes: list[int], delay: float, duration: float | None = None):
        """Delay the nodes' store traffic by `delay` each way (0: back to normal)."""
        for i in nodes:
            self.proxy.set_delay(self.name(i), delay)
        if delay:
            self.record("network", Event.FAULT_LATENCY, {"hosts": sorted(self.name(i) for i in nodes),
                                                     "delay": delay, "duration": duration})
        else:
            self.record("network", Event.LATENCY_HEALED, {"hosts": len(nodes)})

    # --- the run -----------------------------------------------------------------------
    def plan(self):
        """(time, action) pairs in order: the nodes' starts, then the scenario's fault
        timeline (rdzv_sim/scenario/timeline.py, the one the simulator walks). A fault timed
        from an event is left in `self.waiting` until the nodes' traces meet its anchor."""
        sc = self.sc
        late = late_starts(sc)
        first = sc.cluster.start_nodes if sc.cluster.start_nodes is not None else sc.cluster.nodes
        steps = [(0.0, lambda i=i: self.start_node(i, "start"))
                 for i in range(sc.cluster.nodes) if i not in late and i < first]
        self.waiting = []
        for actions in timeline(sc):
            anchor = sc.faults[actions[0].fault].anchor
            if anchor is not None:
                self.waiting.append((anchor, actions))
            else:
                steps += [(a.at, lambda a=a: self.apply(a)) for a in actions]
        return sorted(steps, key=lambda s: s[0])

    def lines(self, pattern: str) -> list[dict]:
        """The JSON lines of the run folder's files matching `pattern` (a line cut short by
        SIGKILL, or still being written, is skipped)."""
        out = []
        for f in sorted(self.dir.glob(pattern)):
            for line in f.read_text().splitlines():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return out

    def node_rows(self) -> list[tuple]:
        """The nodes' trace lines so far, as event rows."""
        return [(d["t"], d["node"], d["event"], d["round"], d["rank"], d["world_size"], d["detail"])
                for d in self.lines("node*.jsonl")]

    def trace_events(self) -> list[tuple]:
        """The nodes' events so far in time order, as `met_at` reads them."""
        return [(r[0], r[1], r[2], r[3], r[6]) for r in sorted(self.node_rows(), key=lambda r: r[0])]

    def done(self) -> bool:
        """The run's `until` anchor is met, and its `plus` seconds have passed."""
        if self.until is None:
            return False
        met = met_at(self.until, self.trace_events())
        return met is not None and self.now() >= met + self.until.plus

    def met(self) -> list:
        """Steps of the waiting faults whose anchors the nodes' traces have met, timed from it."""
        if not self.waiting:
            return []
        events = self.trace_events()
        steps, still = [], []
        for anchor, actions in self.waiting:
            met = met_at(anchor, events)
            if met is None:
                still.append((anchor, actions))
            else:
                steps += [(met + a.at, lambda a=a: self.apply(a)) for a in actions]
        self.waiting = still
        return steps

    def play(self, steps) -> None:
        """Do the planned steps at their times, and the waiting faults' once their anchors are met."""
        while steps or (self.waiting and self.now() < self.sc.duration):
            steps = sorted(steps + self.met(), key=lambda s: s[0])
            if steps and steps[0][0] <= self.now():
                steps.pop(0)[1]()
                continue
            delay = steps[0][0] - self.now() if steps else 0.05
            time.sleep(min(delay, 0.05) if self.waiting else delay)

    def apply(self, a) -> None:
        """Do one timeline action to the real processes (`real_backend/world.py`)."""
        self.world.apply(a, {})

    def signal_node(self, i, sig, event, detail=None):
        p = self.procs.get(self.name(i))
        if p is not None and p.is_alive():
            signal_now(p.pid, sig)
            self.record(self.name(i), event, detail)

    def signal_store(self, sig, event, detail=None):
        if self.etcd is not None:              # store_pause / resume: the leader's member
            if sig == signal.SIGSTOP:
                self.stopped_member = self.etcd.leader(none_ok=True) or self.etcd.names[0]
                self.etcd.pause(self.stopped_member)
                detail = {**(detail or {}), "member": self.etcd.names.index(self.stopped_member)}
            elif self.stopped_member is not None:
                self.etcd.resume(self.stopped_member)
            self.record("store", event, detail)
            return
        if self.store_proc is not None and self.store_proc.is_alive():
            signal_now(self.store_proc.pid, sig)
            self.record("store", event, detail)

    def fail_workers(self, i):
        self.signal_node(i, signal.SIGUSR1, Event.FAULT_WORKER_FAILURE)

    def run(self) -> RunResult:
        self.t0 = time.monotonic()
        if self.sc.store.kind == "replicated":
            from .etcd.cluster import EtcdCluster
            self.etcd = EtcdCluster(self.sc.store.replicas, workdir=str(self.dir / "etcd"),
                                    election_timeout_ms=max(10, int(self.sc.store.election_timeout * 1000)),
                                    heartbeat_ms=max(1, int(self.sc.store.heartbeat_interval * 1000))).start()
        elif self.port is None:
            self.start_store()
        if any(f.kind in ("partition", "latency", "flap", "loss") for f in self.sc.faults):
            self.proxy = FaultProxy(self.host, self.port, seed=self.sc.seed)
        t_start = time.perf_counter()
        try:
            steps = self.plan()
            for i in range(self.sc.cluster.nodes):     # every node's first process loads now
                self.warm(i)
            for i in range(self.sc.cluster.nodes):
                self.standby.ready(self.name(i))
            self.t0 = time.monotonic()                 # the run's clock starts with all loaded
            self.play(steps)
            remaining = self.sc.duration - self.now()
            end = time.monotonic() + max(0.0, remaining)
            while time.monotonic() < end and any(p.is_alive() for p in self.procs.values()) \
                    and not self.done():
                time.sleep(0.1)
        finally:
            self.standby.close()
            for p in self.procs.values():
                if p.is_alive():
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                    p.join(5)
            if self.store_proc is not None and self.store_proc.is_alive():
                os.kill(self.store_proc.pid, signal.SIGCONT)
                self.store_proc.kill()
                self.store_proc.join(5)
            if self.proxy is not None:
                self.proxy.close()
            if self.etcd is not None:
                self.etcd.stop()
        return self.tables(time.perf_counter() - t_start)

    def tables(self, wall: float) -> RunResult:
        rows = list(self.rows)
        rows += [(*r[:6], json.dumps(r[6], sort_keys=True, separators=(",", ":")) if r[6] else "")
                 for r in self.node_rows()]
        sc = self.sc
        stats = RunStats(duration=sc.duration, protocol=sc.protocol.name, nodes=sc.cluster.nodes, wall_s=wall)
        return build(sc, rows, stats)


def replicated_problem(sc) -> None:
    """What the real launcher cannot do with a replicated store (a local etcd cluster)."""
    from .etcd.cluster import available
    why = available()
    if why:
        raise ValueError(f"store.kind: replicated runs for real on etcd, and {why}")
    if get(sc.protocol.name).caps.torch_counterpart:
        raise ValueError(f"store.kind: replicated: protocol {sc.protocol.name!r} runs for real as "
                         "torch's own handler, which needs a TCPStore (torch's etcd backend is "
                         "torchrun's etcd-v2: benchmarks/store_failure.py)")
    bad = sorted({f.kind for f in sc.faults} & {"partition", "latency", "flap", "loss"})
    if bad:
        raise ValueError(f"the real launcher does not do {bad[0]} with a replicated store: its fault "
                         "proxy fronts one TCPStore")


def refuse(sc) -> None:
    """Say before anything starts that the real runtime cannot run this protocol: it yields
    operations the runtime does not have, and no torch handler stands in for it."""
    spec = get(sc.protocol.name)
    missing = missing_ops(spec)
    if missing and not spec.caps.torch_counterpart:
        raise ValueError(f"protocol {spec.name!r} needs {', '.join(missing)}, which the real "
                         "runtime does not give; run it in the simulator only")


def run_real(scenario, workdir=None, store_port: int | None = None,
             torch_static: bool = False, until=None) -> RunResult:
    """Run `scenario` with real processes and a real TCPStore; returns the trace tables.
    `c10d` runs torch's own handler; `torch_static=True` runs torch's static rendezvous
    instead of the project's `static` model. `until`: an anchor (a dict or a
    `rdzv_sim.scenario.faults.After`, e.g. `{"after": "round_complete", "round": 2, "plus": 2}`)
    that ends the run early once met; the scenario's duration stays the limit."""
    run = RealRun(scenario, workdir, store_port=store_port, torch_static=torch_static)
    run.until = anchor(until)
    return run.run()


def anchor(until):
    """`until` (None, a dict or an `After`) as an `After`, or None."""
    from rdzv_sim.scenario.faults import After
    return None if until is None or isinstance(until, After) else After(**until)
