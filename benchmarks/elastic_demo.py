"""Three real torchrun agents on one machine: kill one mid-training, bring a node back.

The elastic story, run for real and timed, for any rendezvous backend (`hrw`, torch's `c10d`). Each agent is `python -m torch.distributed.run` on its own loopback address
(`--local-addr 127.0.0.2`, ...); killing a node SIGKILLs its agent and its workers at once, as
a crashed host would. The store lives in a
process of its own, so any node may die. The workers run `real_backend.tools.train_demo`.

Timeline: 3 agents train at world size 3 -> node C is killed -> the survivors re-rendezvous
and resume from the checkpoint at world size 2 -> a new agent starts on C's address -> the job
grows back to 3 -> a stop file ends training; every live agent must exit 0.
It returns `recover_s` (kill -> first step at world 2) and `grow_s` (new agent started -> first
step at world 3), with the step log, for `benchmarks/torchrun_elastic.py` and the tests.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from real_backend.process_tree import kill_tree, tree

ADDRS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
# one --rdzv-conf for both backends (issue 6); c10d ignores the hrw-only keys it does not know
CONF = "join_timeout=60,last_call_timeout=2,close_timeout=10,is_host=false,read_timeout=10"


class DemoFailed(RuntimeError):
    """The demo did not reach a stage in time; the message carries the agents' last words."""


_tree, _kill_tree = tree, kill_tree          # (the names its users import)


def _steps(log: Path) -> list[dict]:
    if not log.exists():
        return []
    out = []
    for line in log.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass                                 # a line being written
    return out


class Demo:
    def __init__(self, backend: str, workdir: str | Path, *, step_time: float = 0.05,
                 monitor_interval: float = 0.5, timeout: float = 120.0, conf: str = CONF):
        self.backend, self.dir = backend, Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log, self.stop = self.dir / "steps.jsonl", self.dir / "STOP"
        self.step_time, self.monitor, self.timeout, self.conf = step_time, monitor_interval, timeout, conf
        self.max_restarts, self.pg_timeout, self.nnodes, self.steps = 5, 30.0, "2:3", 100_000
        self.nproc, self.cpp_log_level = 1, "ERROR"      # TCPStore warns on every wait that times out
        self.restarts_of: dict[str, int] = {}             # an agent's own --max-restarts
        self.agents: dict[str, subprocess.Popen] = {}
        self.started: dict[str, float] = {}
        self.store = None
        self.port = 0
        self.env: dict[str, str] = {}                      # more for every agent's environment

    # --- processes -----------------------------------------------------------------------
    def start_store(self) -> None:
        from real_backend.node import store_main
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.store = ctx.Process(target=store_main, args=(child, "127.0.0.1"), daemon=True)
        self.store.start()
        if not parent.poll(60):
            raise DemoFailed("the store process did not start within 60 s")
        self.port = parent.recv()

    def endpoint_port(self, name: str) -> int:
        """The store port agent `name` is given (the soak puts a fault proxy in between)."""
        return self.port

    def endpoint(self, name: str) -> str:
        """Agent `name`'s --rdzv-endpoint (an etcd-backed demo lists its cluster's members)."""
        return f"127.0.0.1:{self.endpoint_port(name)}"

    def start_agent(self, name: str, addr: str | None) -> float:
        """Agent `name` on loopback address `addr` (None: no --local-addr, the host's name)."""
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={self.nnodes}", f"--nproc-per-node={self.nproc}",
               f"--rdzv-backend={self.backend}", f"--rdzv-endpoint={self.endpoint(name)}",
               "--rdzv-id=elastic-demo", f"--rdzv-conf={self.conf}",
               *([f"--local-addr={addr}"] if addr else []),
               f"--max-restarts={self.restarts_of.get(name, self.max_restarts)}",
               f"--monitor-interval={self.monitor}",
               "-m", "real_backend.tools.train_demo", "--ckpt-dir", str(self.dir / "ckpt"), "--step-log", str(self.log),
               "--stop-file", str(self.stop), "--step-time", str(self.step_time), "--steps", str(self.steps),
               "--pg-timeout", str(self.pg_timeout)]
        env = dict(os.environ, DEMO_NODE=name, RDZV_SIM_TRACE=str(self.dir / f"trace-{name}.jsonl"),
                   # torch 2.13's c10d cannot grow back while it shares its store with the
                   # workers (stale keys under the same attempt prefix); hrw never shares
                   TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1", OMP_NUM_THREADS="1",
                   LOGLEVEL="WARNING", PYTHONUNBUFFERED="1",
                   TORCH_CPP_LOG_LEVEL=self.cpp_log_level, **self.env)
        out = open(self.dir / f"agent-{name}.log", "ab")
        t = self.started[name] = time.time()
        self.agents[name] = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                             start_new_session=True)
        return t

    def start_job(self, steps: int = 10) -> None:
        """The store and agents A, B and C, until rank 0 has trained `steps` steps at world 3 and
        says it saved a checkpoint (a step logs the last one saved before it)."""
        self.start_store()
        for name, addr in zip("ABC", ADDRS):
            self.start_agent(name, addr)
        self.until(f"{steps} steps and a checkpoint at world 3", trained(steps))

    def kill_workers(self, name: str) -> None:
        """SIGKILL agent `name`'s workers, not the agent: its own restart policy decides."""
        for pid in _tree(self.agents[name].pid)[1:]:
            os.kill(pid, signal.SIGKILL)

    def kill(self, name: str) -> float:
        t = time.time()
        _kill_tree(self.agents[name].pid)                     # the agent and its workers
        self.agents[name].wait()
        return t

    def kill_store(self) -> None:
        """The store's process dies (its host did)."""
        self.store.kill()
        self.store.join(5)

    def finish(self, names, timeout: float = 60.0) -> dict:
        """Touch the stop file and collect the named agents' exit codes (None: still running)."""
        self.stop.touch()
        rcs = {}
        for n in names:
            try:
                rcs[n] = self.agents[n].wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                rcs[n] = None
        return rcs

    def close(self) -> None:
        for p in self.agents.values():
            _kill_tree(p.pid)
            p.wait()
        if self.store is not None and self.store.is_alive():
            self.store.kill()
            self.store.join(5)

    # --- waiting on the step log ------------------------------------------------------------
    def until(self, what: str, pred) -> list[dict]:
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            steps = _steps(self.log)
            if pred(steps):
                return steps
            dead = [n for n, p in self.agents.items() if p.poll() not in (None, -9)]
            if dead and not self.stop.exists():
                break
            time.sleep(0.1)
        raise DemoFailed(f"{self.backend}: timed out waiting for {what}\n{self.tails()}")

    def tails(self, lines: int = 15) -> str:
        out = []
        for name in self.agents:
            text = (self.dir / f"agent-{name}.log").read_text(errors="replace").splitlines()
            out.append(f"--- agent {name} (rc={self.agents[name].poll()}) ---\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    # --- the story ---------------------------------------------------------------------------
    def run(self) -> dict:
        try:
            self.start_store()
            t_start = time.time()
            for name, addr in zip("ABC", ADDRS):
                self.start_agent(name, addr)
            self.until("10 steps and a checkpoint at world size 3", trained(10))
            t_first = min(x["t"] for x in _steps(self.log))
            t_kill = self.kill("C")
            s = self.until("5 steps at world size 2",
                           lambda s: sum(1 for x in s if x["world"] == 2 and x["t"] > t_kill and x["rank"] == 0) >= 5)
            t_w2 = min(x["t"] for x in s if x["world"] == 2 and x["t"] > t_kill)
            t_join = self.start_agent("D", ADDRS[2])
            s = self.until("5 steps at world size 3 again",
                           lambda s: sum(1 for x in s if x["world"] == 3 and x["t"] > t_join and x["rank"] == 0) >= 5)
            t_w3 = min(x["t"] for x in s if x["world"] == 3 and x["t"] > t_join)
            self.stop.touch()
            rcs = {}
            for name in "ABD":
                try:
                    rcs[name] = self.agents[name].wait(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    raise DemoFailed(f"{self.backend}: agent {name} did not exit after the stop\n"
                                     f"{self.tails()}") from None
            steps = _steps(self.log)
            return {"backend": self.backend, "startup_s": t_first - t_start, "recover_s": t_w2 - t_kill,
                    "grow_s": t_w3 - t_join, "exit_codes": rcs, "segments": segments(steps),
                    "steps": steps, "t_start": t_start, "t_kill": t_kill, "t_join": t_join,
                    "started": dict(self.started), "dir": str(self.dir)}
        finally:
            self.close()



class EtcdDemo(Demo):
    """The demo with its store a local 3-member etcd cluster (`--enable-v2` too, for torch's
    etcd-v2 backend): agent A's endpoint is the leader (A's host hosts it), the others' first
    endpoint another member; hrw agents are given every member (`--rdzv-conf store=etcd`),
    etcd-v2 ones the first (torch's backend takes one); `kill_store` kills the leader."""

    def __init__(self, backend: str, workdir, **kw):
        if backend == "hrw":
            kw["conf"] = kw.get("conf", CONF) + ",store=etcd"
        super().__init__(backend, workdir, **kw)

    def start_store(self) -> None:
        from real_backend.etcd.cluster import EtcdCluster
        self.etcd = EtcdCluster(3, enable_v2=True, workdir=str(self.dir / "etcd")).start()
        self.leader = self.etcd.leader()

    def endpoint(self, name: str) -> str:
        c = self.etcd
        if name == "A":
            order = [self.leader] + [n for n in c.names if n != self.leader]
        else:                              # the others' first member is another host's
            rest = [n for n in c.names if n != self.leader]
            k = (ord(name[0]) - ord("A")) % len(rest)
            order = [n for n in rest[k:] + rest[:k] if c.alive(n)] + [self.leader]
        eps = [c.endpoint(n) for n in order]
        return ",".join(eps) if self.backend == "hrw" else eps[0]

    def kill_store(self) -> None:
        self.etcd.kill(self.leader)

    def close(self) -> None:
        super().close()
        if getattr(self, "etcd", None) is not None:
            self.etcd.stop()

class FailoverDemo(Demo):
    """The store in agent A's process, as torchrun's c10d endpoint is (`is_host`), and
    `--rdzv-conf store_failover=true`: `kill_store` kills A, store and all; B and C elect a
    successor among themselves and train on."""

    def __init__(self, backend: str, workdir, **kw):
        kw["conf"] = kw.get("conf", CONF) + ",store_failover=true"
        super().__init__(backend, workdir, **kw)

    def start_store(self) -> None:
        from real_backend.ports import free_port
        self.port = free_port(ADDRS[0])           # A listens there once it starts

    def endpoint(self, name: str) -> str:
        return f"{ADDRS[0]}:{self.port}"

    def start_agent(self, name: str, addr: str | None) -> float:
        conf = self.conf
        if name == "A":
            self.conf = conf.replace("is_host=false", "is_host=true")
        try:
            t = super().start_agent(name, addr)
        finally:
            self.conf = conf
        if name == "A":                           # the others connect once it listens
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    socket.create_connection((ADDRS[0], self.port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
        return t

    def kill_store(self) -> None:
        self.kill("A")


def segments(steps: list[dict]) -> list[dict]:
    """Rank 0's run of steps per worker generation: world size, first step, resumed-from step."""
    out: list[dict] = []
    for x in sorted((x for x in steps if x["rank"] == 0), key=lambda x: x["t"]):
        key = (x["world"], x["resumed_from"], x["host"], x["restart"])
        if not out or out[-1]["key"] != key:
            out.append({"key": key, "world": x["world"], "resumed_from": x["resumed_from"],
                        "first": x["step"], "last": x["step"], "t0": x["t"]})
        out[-1]["last"] = x["step"]
    for s in out:
        del s["key"]
    return out


def trained(steps: int):
    """Rank 0 has trained `steps` steps at world 3 and saved a checkpoint (a step logs the last
    one saved before it): a kill after this resumes from it, however slow the machine."""
    return lambda s: (sum(x["world"] == 3 and x["rank"] == 0 for x in s) >= steps
                      and any(x["world"] == 3 and x["rank"] == 0 and (x["ckpt"] or 0) > 0 for x in s))


def run_demo(backend: str, workdir, **kw) -> dict:
    return Demo(backend, workdir, **kw).run()


if __name__ == "__main__":
    import tempfile
    r = run_demo(sys.argv[1] if len(sys.argv) > 1 else "hrw", tempfile.mkdtemp(prefix="elastic-"))
    r.pop("steps")
    print(json.dumps(r, indent=1))
