"""A local etcd cluster for tests, benchmarks and `rdzv-sim validate`: N members on loopback
ports, data in a temporary folder, stopped and removed after. Faults are done to the member
processes: kill (SIGKILL), pause (SIGSTOP/SIGCONT), restart with its data.

    with EtcdCluster(3) as c:
        c.endpoints            # ["127.0.0.1:23791", ...] for the store client
        c.kill(c.leader())

Needs the `etcd` binary (Debian: `apt-get install etcd-server`, 3.4); `available()` says why not.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from ..ports import free_ports


class EtcdUnavailable(RuntimeError):
    """No etcd binary here, or it would not form a cluster."""


def binary() -> str | None:
    return os.environ.get("RDZV_SIM_ETCD") or shutil.which("etcd")


def available() -> str | None:
    """None when an etcd cluster can be started here, else why not."""
    if binary() is None:
        return "no etcd binary (Debian: apt-get install etcd-server; or set RDZV_SIM_ETCD)"
    try:
        import etcd3gw  # noqa: F401
    except ImportError:
        return "no etcd client (pip install etcd3gw, or the project's [real] extra)"
    return None


class EtcdCluster:
    def __init__(self, members: int = 3, *, election_timeout_ms: int = 1000,
                 heartbeat_ms: int = 100, enable_v2: bool = False, workdir: str | None = None):
        if available():
            raise EtcdUnavailable(available())
        if members < 1:
            raise ValueError("an etcd cluster needs at least one member")
        self.n, self.election_ms, self.heartbeat_ms, self.enable_v2 = members, election_timeout_ms, heartbeat_ms, enable_v2
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="rdzv-etcd-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 * members)
        self.client_ports, self.peer_ports = ports[:members], ports[members:]
        self.names = [f"m{i}" for i in range(members)]
        self.procs: dict[str, subprocess.Popen] = {}

    # --- addresses ---------------------------------------------------------------------
    @property
    def endpoints(self) -> list[str]:
        return [f"127.0.0.1:{p}" for p in self.client_ports]

    def endpoint(self, name: str) -> str:
        return self.endpoints[self.names.index(name)]

    def _cmd(self, i: int, state: str) -> list[str]:
        name = self.names[i]
        peers = ",".join(f"{n}=http://127.0.0.1:{p}" for n, p in zip(self.names, self.peer_ports))
        return [binary(), "--name", name, "--data-dir", str(self.dir / name),
                "--listen-client-urls", f"http://127.0.0.1:{self.client_ports[i]}",
                "--advertise-client-urls", f"http://127.0.0.1:{self.client_ports[i]}",
                "--listen-peer-urls", f"http://127.0.0.1:{self.peer_ports[i]}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer_ports[i]}",
                "--initial-cluster", peers, "--initial-cluster-state", state,
                "--initial-cluster-token", f"rdzv-{os.getpid()}-{self.client_ports[0]}",
                "--election-timeout", str(self.election_ms), "--heartbeat-interval", str(self.heartbeat_ms),
                f"--enable-v2={'true' if self.enable_v2 else 'false'}", "--log-level", "warn"]

    # --- life --------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> "EtcdCluster":
        for i in range(self.n):
            self._spawn(i, "new")
        self.wait_healthy(timeout)
        return self

    def _spawn(self, i: int, state: str) -> None:
        name = self.names[i]
        log = open(self.dir / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(self._cmd(i, state), stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def wait_healthy(self, timeout: float = 30.0, members=None) -> None:
        """Until every named (default: every running) member answers and a leader exists."""
        deadline = time.monotonic() + timeout
        names = members or [n for n, p in self.procs.items() if p.poll() is None]
        while time.monotonic() < deadline:
            status = [self.status(n) for n in names]
            if all(s is not None and s.get("leader") for s in status):
                return
            dead = [n for n, p in self.procs.items() if p.poll() is not None and n in names]
            if dead:
                raise EtcdUnavailable(f"etcd member {dead[0]} exited: {self.log_tail(dead[0])}")
            time.sleep(0.1)
        raise EtcdUnavailable(f"the etcd cluster was not healthy within {timeout:g} s: "
                              f"{self.log_tail(names[0])}")

    def status(self, name: str) -> dict | None:
        """A member's /v3/maintenance/status (its id and the leader's), or None if it is down."""
        try:
            req = urllib.request.Request(f"http://{self.endpoint(name)}/v3/maintenance/status",
                                         data=b"{}", method="POST")
            with urllib.request.urlopen(req, timeout=1.0) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None

    def leader(self, timeout: float = 10.0, none_ok: bool = False) -> str | None:
        """The name of the current leader, as the live members see it; with `none_ok`, None
        when there is none by then (no majority left) instead of EtcdUnavailable."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name in self.names:
                s = self.status(name) if self.alive(name) else None
                if s and s.get("leader") and s["leader"] == s.get("header", {}).get("member_id"):
                    return name
            time.sleep(0.05)
        if none_ok:
            return None
        raise EtcdUnavailable(f"no etcd leader within {timeout:g} s")

    def alive(self, name: str) -> bool:
        p = self.procs.get(name)
        return p is not None and p.poll() is None

    def kill(self, name: str) -> None:
        p = self.procs[name]
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()

    def pause(self, name: str) -> None:
        """SIGSTOP the member and return once every thread of it has stopped."""
        from ..process_tree import wait_stopped
        pid = self.procs[name].pid
        os.killpg(pid, signal.SIGSTOP)
        wait_stopped(pid)

    def resume(self, name: str) -> None:
        os.killpg(self.procs[name].pid, signal.SIGCONT)

    def restart(self, name: str) -> None:
        """Start a killed member again with its data (it rejoins the cluster)."""
        if self.alive(name):
            return
        self._spawn(self.names.index(name), "existing")

    def log_tail(self, name: str, lines: int = 5) -> str:
        path = self.dir / f"{name}.log"
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGCONT)
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "EtcdCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
