"""Run a scenario through real torchrun agents: `rdzv-sim validate --torchrun`.

Each node is `python -m torch.distributed.run --rdzv-backend=rdzv-sim --rdzv-conf protocol=NAME,...`
on its own loopback address, training `real_backend.tools.train_demo` (gloo) until the scenario's
duration (or the run's `until`), against a TCPStore in a process of its own. The protocol's
settings go to the handler as `--rdzv-conf`, so the agents run what the scenario says; every
handler writes its events (trace_file) and the launcher adds its own (node_start, fault_crash).
The faults are the ones torchrun's agents meet in production: a node's crash (its agent and
workers SIGKILLed) and its restart, and a node that starts late (slow_join), each at a time or
after an event of the agents' traces. The result has the simulator's tables.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

from rdzv_sim.protocols.registry import get, plugin_modules
from rdzv_sim.scenario.load import load

from .launcher import RealRun
from .process_tree import kill_tree
from .torchrun_conf import not_served
from rdzv_sim.events import Event

KINDS = {"crash", "restart", "slow_join"}


def _conf_value(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


class TorchrunRun(RealRun):
    """RealRun's plan and faults, with torchrun agents for nodes."""

    def __init__(self, scenario, workdir=None):
        sc = load(scenario)                 # refused before anything is written
        why = not_served(get(sc.protocol.name))
        if why:
            raise ValueError(f"validate --torchrun: {why}")
        bad = sorted({f.kind for f in sc.faults} - KINDS)
        if bad:
            raise ValueError(f"validate --torchrun does not do {bad[0]} faults (it does "
                             f"{', '.join(sorted(KINDS))}); run it without --torchrun")
        if sc.store.kind != "tcpstore" or sc.store.host is not None:
            raise ValueError("validate --torchrun: the store is a TCPStore of its own "
                             "(store.kind: tcpstore, store.host: null)")
        if sc.cluster.nproc_per_node != 1:
            raise ValueError("validate --torchrun: one worker per node (cluster.nproc_per_node: 1)")
        super().__init__(sc, workdir)
        self.agents: dict[str, subprocess.Popen] = {}

    def conf(self, i: int) -> str:
        p = self.sc.protocol
        own = {k: v for k, v in p.model_dump().items()
               if k not in ("name", "run_id", "min_nodes", "max_nodes") and v is not None}
        conf = {"protocol": p.name, **own, "node_name": self.name(i), "is_host": False,
                "read_timeout": self.sc.store.op_timeout,
                "trace_file": str(self.dir / f"{self.name(i)}.trace.jsonl")}
        return ",".join(f"{k}={_conf_value(v)}" for k, v in conf.items())

    def start_node(self, i: int, why: str):
        name = self.name(i)
        p = self.agents.get(name)
        if p is not None and p.poll() is None:
            return
        sc = self.sc
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={sc.min_nodes}:{sc.max_nodes}",
               "--nproc-per-node=1", "--rdzv-backend=rdzv-sim", f"--rdzv-endpoint={self.host}:{self.port}",
               f"--rdzv-id={sc.protocol.run_id}", f"--rdzv-conf={self.conf(i)}",
               f"--local-addr=127.0.0.{i + 2}", f"--max-restarts={sc.agent.max_restarts}",
               f"--monitor-interval={sc.agent.monitor_interval}",
               "-m", "real_backend.tools.train_demo", "--ckpt-dir", str(self.dir / "ckpt"),
               "--step-log", str(self.dir / "steps.jsonl"), "--stop-file", str(self.dir / "STOP"),
               "--steps", "10000000", "--step-time", "0.05",
               "--pg-timeout", str(sc.agent.collective_timeout)]
        env = dict(os.environ, OMP_NUM_THREADS="1", LOGLEVEL="WARNING", TORCH_CPP_LOG_LEVEL="ERROR",
                   RDZV_SIM_PROTOCOLS=",".join(plugin_modules()), DEMO_NODE=name,
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        out = open(self.dir / f"agent-{name}.log", "ab")
        self.record(name, Event.NODE_START, {"why": why})
        self.agents[name] = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                             start_new_session=True)

    def crash(self, i: int, cause: str = "crash"):
        name = self.name(i)
        p = self.agents.get(name)
        if p is None or p.poll() is not None:
            return
        kill_tree(p.pid)                          # the agent and its workers, as a host dies
        p.wait(10)
        self.record(name, Event.FAULT_CRASH, {"cause": cause})

    def node_rows(self) -> list[tuple]:
        """The handlers' trace lines, on the launcher's clock (their wall time)."""
        return [(d["wall"] - self.t0_wall, d["node"], d["event"], d["round"], d["rank"], d["world_size"],
                 d["detail"]) for d in self.lines("*.trace.jsonl")]

    def run(self):
        self.start_store()
        self.t0, self.t0_wall = time.monotonic(), time.time()
        t_start = time.perf_counter()
        try:
            self.play(self.plan())
            while self.now() < self.sc.duration and not self.done() \
                    and any(p.poll() is None for p in self.agents.values()):
                time.sleep(0.1)
        finally:
            for p in self.agents.values():
                if p.poll() is None:
                    kill_tree(p.pid)
                    p.wait(10)
            if self.store_proc is not None and self.store_proc.is_alive():
                self.store_proc.kill()
                self.store_proc.join(5)
        return self.tables(time.perf_counter() - t_start)

